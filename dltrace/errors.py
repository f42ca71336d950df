"""Errors users see: one line each, with the exit status the CLI returns (DESIGN §10)."""

from __future__ import annotations


class DltraceError(Exception):
    """A failure dltrace reports as one line; ``exit_code`` 1 means the run failed."""

    exit_code = 1


class BadInput(DltraceError):
    """The user's input is wrong (exit status 2): a query, a name, a path, an option."""

    exit_code = 2


class SqlSyntaxError(BadInput):
    """The SQL does not parse; the message gives line and column."""


class UnknownTable(BadInput):
    """A query names a table the catalog does not have."""


class UnknownColumn(BadInput):
    """A query names a column that no table in scope has, or that several have."""


class UnsupportedLineage(BadInput):
    """A construct the rewriter cannot give exact lineage for; never answered with wrong lineage."""


class CatalogError(DltraceError):
    """The catalog directory is unreadable, or written by a newer dltrace."""


class JavaMissing(DltraceError):
    """Spark needs Java 17 or newer and it is not there."""
