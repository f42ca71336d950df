"""The bad source rows of an impact question: ``TABLE WHERE PREDICATE``.

``TABLE@vK WHERE PREDICATE`` evaluates the predicate on data version K of the table, as it
was before later revisions (registration keeps every version's Parquet), which is how one
asks about the old version of a corrected row.  The predicate may use ``_dl_id``, so an old
row can also be named by its id: ``orders@v1 WHERE _dl_id = 281474976710698``.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

from dltrace.catalog import ID_COLUMN, Catalog
from dltrace.errors import BadInput, UnknownColumn
from dltrace.rewriter.qualify import parse_error_description

SOURCE_PATTERN = re.compile(
    r"^\s*([A-Za-z_][A-Za-z0-9_]*)(?:@v(\d+))?\s+where\s+(.+?)\s*;?\s*$", re.IGNORECASE | re.DOTALL
)
SOURCE_FORM = "'TABLE WHERE PREDICATE' (or 'TABLE@vK WHERE PREDICATE' for data version K)"


@dataclass(frozen=True)
class Source:
    """Which rows are bad: those of ``table`` (at data ``version``, None: current) matching
    ``predicate``, an expression over the table's columns and ``_dl_id``."""

    table: str
    version: int | None
    predicate: exp.Expression

    @property
    def text(self) -> str:
        at = f"@v{self.version}" if self.version is not None else ""
        return f"{self.table}{at} WHERE {self.predicate.sql(dialect='spark')}"

    @property
    def columns(self) -> set[str]:
        """The table's columns the predicate reads (lower case)."""
        return {column.name.lower() for column in _own_columns(self.predicate)}

    @property
    def has_subquery(self) -> bool:
        return self.predicate.find(exp.Query) is not None


def parse_source(text: str, catalog: Catalog) -> Source:
    """``text`` as a ``Source``; a wrong form, table, version or column is ``BadInput``."""
    match = SOURCE_PATTERN.match(text or "")
    if not match:
        raise BadInput(f"--source must be {SOURCE_FORM}, got {text!r}")
    table, version, predicate_text = match.group(1).lower(), match.group(2), match.group(3)
    entry = catalog.entry(table)
    if version is not None:
        catalog.data_path(table, int(version))  # raises if there is no such version
    predicate = checked_predicate(predicate_text, table, [*entry.schema, ID_COLUMN], "--source")
    return Source(table, int(version) if version is not None else None, predicate)


def checked_predicate(text: str, table: str, columns: list[str], label: str) -> exp.Expression:
    """``text`` as a condition on single rows of ``table`` over its ``columns`` (subqueries
    may read other tables); a parse error, an aggregate or another column is ``BadInput``,
    said in one line that starts with ``label``."""
    predicate = _parse_predicate(text, table, label)
    if any(node.find_ancestor(exp.Query) is None for node in predicate.find_all(exp.AggFunc, exp.Window)):
        raise BadInput(f"{label}: the predicate must be a condition on single rows of {table}, "
                       f"without aggregate or window functions: {predicate.sql(dialect='spark')}")
    known = {c.lower() for c in columns}
    for column in _own_columns(predicate):
        if column.table and column.table.lower() != table:
            raise BadInput(
                f"{label}: the predicate can only use columns of {table}, not {column.sql(dialect='spark')}"
            )
        if column.name.lower() not in known:
            close = difflib.get_close_matches(column.name.lower(), sorted(known), n=1)
            hint = f"did you mean {close[0]}? It has {', '.join(columns)}" if close else f"it has {', '.join(columns)}"
            raise UnknownColumn(f"{label}: {table} has no column {column.name} ({hint})")
    return predicate


def _parse_predicate(text: str, table: str, label: str) -> exp.Expression:
    prefix = f"SELECT 1 FROM {table} WHERE "
    try:
        statements = sqlglot.parse(prefix + text, read="spark")
    except ParseError as error:
        first = error.errors[0] if error.errors else {}
        near = first.get("highlight")
        description = parse_error_description(error)
        column = (
            max(int(first.get("col", len(prefix))) - len(prefix), 1) if first.get("line", 1) == 1 else first.get("col")
        )
        raise BadInput(
            f"{label}: the predicate does not parse at column {column}"
            f"{f' near {near!r}' if near else ''}: {description}"
        ) from None
    except TokenError as error:
        raise BadInput(f"{label}: the predicate does not parse: {error}") from None
    select = statements[0] if len(statements) == 1 and isinstance(statements[0], exp.Select) else None
    clauses = {key for key, value in select.args.items() if value} if select is not None else set()
    if select is None or not clauses <= {"expressions", "from", "from_", "where"}:
        raise BadInput(f"{label}: after WHERE give one predicate over {table}'s columns, got {text!r}")
    return select.args["where"].this.copy()


def _own_columns(predicate: exp.Expression) -> list[exp.Column]:
    """The predicate's columns outside subqueries (those name the source table's columns)."""
    return [c for c in predicate.find_all(exp.Column) if c.find_ancestor(exp.Query) is None]
