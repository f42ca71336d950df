"""Explaining large lineage: pattern summaries of a saved row's base rows, and a
saved result's lineage as a relation for SQL.  Both read DL through ``stored.stored_ids``."""

from dltrace.summary.relation import define_views, script
from dltrace.summary.summaries import PatternSummary, Summary, TableSummary, summarize

__all__ = ["PatternSummary", "Summary", "TableSummary", "define_views", "script", "summarize"]
