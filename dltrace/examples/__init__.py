"""Runnable examples that the README walks through (generated data, no downloads)."""
