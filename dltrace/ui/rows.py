"""Which rows of a saved result or a registered table a page shows, and in what order: the
explorer's filter box and its sortable columns (docs/ui.md, "Finding rows").

A filter is a Spark SQL predicate over the rows' columns, or ``column = value`` pieces joined
by AND, where a bare value is taken as a value of the column's type (``origin = JFK AND
month = 1``, ``day = 2013-01-09`` on a date column), so that finding a row takes no quoting.
It is checked as an impact's source predicate is (``impact.source.checked_predicate``: one
line for a parse error or an unknown column), then evaluated by pyarrow when
``impact.files.arrow_condition`` translates it exactly (comparisons with literals of the
column's kind, IN, BETWEEN, IS NULL, AND, OR, NOT), else by Spark.  A sort is by one column,
ascending or descending, NULLs where Spark puts them (first ascending, last descending), ties
in ``_row`` (or ``_dl_id``) order, as Spark's ``ORDER BY c, _row`` gives them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
from sqlglot import exp

from dltrace.errors import BadInput
from dltrace.impact.files import arrow_condition
from dltrace.impact.source import checked_predicate
from dltrace.table_data import backquoted, quote_string

VALUE_PIECE = re.compile(r"^\s*(`[^`]+`|[A-Za-z_]\w*)\s*=\s*(.+?)\s*$", re.DOTALL)
AND = re.compile(r"\s+and\s+", re.IGNORECASE)
NUMBER = re.compile(r"^-?\d+(\.\d+)?([eE][-+]?\d+)?$")


@dataclass(frozen=True)
class RowOrder:
    """A page's rows: those ``predicate`` keeps (None: all), ordered by ``sort`` (None: the
    rows' own order), ``descending`` or not.  ``key`` is what a page kept in memory is kept by."""

    predicate: exp.Expression | None
    sort: str | None
    descending: bool

    @property
    def key(self) -> tuple:
        return (self.predicate.sql(dialect="spark") if self.predicate is not None else None, self.sort,
                self.descending)

    @property
    def plain(self) -> bool:
        """Every row in its own order: a page is a run of row numbers."""
        return self.predicate is None and self.sort is None

    def columns(self) -> list[str]:
        """The columns the filter and the sort read (as the schema spells them)."""
        found = {c.name for c in self.predicate.find_all(exp.Column)} if self.predicate is not None else set()
        return sorted(found | ({self.sort} if self.sort else set()))

    def sql(self) -> str | None:
        return self.predicate.sql(dialect="spark") if self.predicate is not None else None


def row_order(name: str, schema: dict[str, str], text: str, sort: str, descending: bool) -> RowOrder:
    """The filter ``text`` and the ``sort`` column of a page of ``name`` (its columns' Spark
    types ``schema``), checked: bad ones are ``BadInput`` in one line."""
    names = {c.lower(): c for c in schema}
    predicate = None
    if text.strip():
        predicate = checked_predicate(as_sql(text, schema), name, list(schema), "filter")
        if predicate.find(exp.Query) is not None:
            raise BadInput(f"filter: a condition on the rows of {name} themselves, without subqueries")
        for column in predicate.find_all(exp.Column):  # spelled as the schema does: pyarrow's names are exact
            column.set("this", exp.to_identifier(names[column.name.lower()], quoted=True))
            column.set("table", None)
    column = None
    if sort.strip():
        column = names.get(sort.strip().strip("`").lower())
        if column is None:
            raise BadInput(f"sort: {name} has no column {sort.strip()} (it has {', '.join(schema)})")
    return RowOrder(predicate, column, descending)


def as_sql(text: str, schema: dict[str, str]) -> str:
    """``text`` as SQL: ``column = value`` pieces (joined by AND) with bare values written as
    literals of their column's type; anything else as it is.

    >>> as_sql("origin = JFK and month = 1", {"origin": "string", "month": "int"})
    "`origin` = 'JFK' AND `month` = 1"
    >>> as_sql("d = 2013-01-09", {"d": "date"}), as_sql("a = b", {"a": "string", "b": "string"})
    ("`d` = DATE '2013-01-09'", 'a = b')
    >>> as_sql("x > 3 and origin = JFK", {"origin": "string", "x": "int"})
    'x > 3 and origin = JFK'
    """
    kinds = {c.lower(): kind for c, kind in schema.items()}
    spelled = {c.lower(): c for c in schema}
    pieces = []
    for piece in AND.split(text.strip()):
        match = VALUE_PIECE.match(piece)
        column = match.group(1).strip("`").lower() if match else None
        if column not in kinds:
            return text
        value = match.group(2)
        literal = typed_literal(value, kinds[column]) if value.lower() not in kinds else None
        if literal is None:
            return text
        pieces.append(f"{backquoted(spelled[column])} = {literal}")
    return " AND ".join(pieces)


def typed_literal(value: str, kind: str) -> str | None:
    """A value as typed in the filter box, as an SQL literal of Spark type ``kind`` (None when
    it does not read as one: the piece is then SQL as written)."""
    if value[0] in "'\"" or value.upper() in ("NULL", "TRUE", "FALSE"):
        return value
    if kind == "string":
        return quote_string(value)
    if kind == "date" or kind.startswith("timestamp"):
        return f"{'DATE' if kind == 'date' else 'TIMESTAMP'} {quote_string(value)}"
    return value if NUMBER.match(value) else None


def arrow_order(table, order: RowOrder, name: str, schema: dict[str, str], tie: str) -> np.ndarray | None:
    """The ``tie`` column's values (``_row`` or ``_dl_id``) of the rows of ``table`` (a pyarrow
    Table of ``tie`` and ``order.columns()``) that ``order`` keeps, in its order; None when the
    filter is one only Spark evaluates."""
    import pyarrow.compute as pc

    if order.predicate is not None:
        condition = arrow_condition(order.predicate, name.lower(), schema)
        if condition is None:
            return None
        table = table.filter(condition)
    if order.sort is None:
        return np.sort(table.column(tie).to_numpy())
    direction = "descending" if order.descending else "ascending"
    # NULLs first ascending, last descending, as Spark: sorted by a NULL flag first (pyarrow 15
    # places NULLs by one option for every key, and 25 on warns of that option)
    flagged = table.append_column("__null", pc.is_null(table.column(order.sort)))
    keys = [("__null", "ascending" if order.descending else "descending"), (order.sort, direction), (tie, "ascending")]
    return table.column(tie).take(pc.sort_indices(flagged, sort_keys=keys)).to_numpy()


def spark_ordered(frame, order: RowOrder, tie: str):
    """``frame`` (a DataFrame with ``tie`` and the columns) filtered and sorted as ``order`` says."""
    from pyspark.sql import functions as F

    if order.predicate is not None:
        frame = frame.where(F.expr(order.sql()))
    if order.sort is None:
        return frame.orderBy(tie)
    column = F.col(backquoted(order.sort))
    return frame.orderBy(column.desc_nulls_last() if order.descending else column.asc_nulls_first(), tie)
