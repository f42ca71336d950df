"""A what-if computed in proportion to what changes, where a step allows it (docs/semantics.md).

A correction is a *delta* of each input it changes: the rows it takes out (as they were) and
the rows it puts in (as they are after).  For the source table those are the bad rows and the
corrected ones; for a saved result, the rows its own answer says vanish or change (before)
and appear or change (after).  A step reading one changed input once, through inner joins
and filters only, with at most an outermost GROUP BY of output columns, depends on that
input row by row: its output rows that differ are those computed from a row taken out or put
in.  So, as incremental view maintenance does:

* grouped by a key: the keys the delta's rows fall into (the step's FROM and WHERE over the
  delta alone) are the only groups that can change; both sides are computed for those groups
  only (a semi join Spark pushes through the aggregate and the joins to the scans).  Where
  the step reads catalog tables only, a group's rows are those its saved DL names: a tuple
  of the group made of unchanged rows was there before, so its rows are in the DL, and a
  tuple with a corrected row is one of the delta's own (whose joined rows' ids the same query
  returns).  Both sides are then computed from those rows, read by id (``GROUPS_BY_ID``);
* without a key (joins and filters): the rows computed from the delta alone, before and
  after, are the rows that vanish and appear, compared as bags.

Anything else (a window, LIMIT, DISTINCT, an outer, semi or anti join, a subquery, a derived
table, a second changed input or the changed one read twice) is recomputed whole.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlglot import exp

from dltrace.catalog import ID_COLUMN
from dltrace.engine import Engine
from dltrace.ids import ROW_BITS
from dltrace.result_format import SavedResult
from dltrace.rewriter.dialect import SPARK
from dltrace.rewriter.qualify import parse
from dltrace.rewriter.saved_result import LINEAGE_COLUMN
from dltrace.table_data import backquoted, table_rows

WHOLE, GROUPS, ROWS = "whole", "the groups the correction reaches", "the rows the correction reaches"
GROUPS_BY_ID = "the groups the correction reaches, from the rows their lineage names"


@dataclass(frozen=True)
class Delta:
    """How an input changes: the rows taken out of it (as they were) and put in (as after)."""

    removed: Any  # DataFrame
    added: Any


@dataclass(frozen=True)
class Sides:
    """A step's rows before and after, as far as they are compared (``how``: WHOLE, GROUPS or
    ROWS), and its whole rows after, for the steps that read it and are recomputed whole."""

    before: Any
    after: Any
    whole_after: Any  # None for a step paired by key (what_if.applied makes it from the answer)
    how: str


def changed_input(query: str, changed: set[str], key: list[str]) -> str | None:
    """The one name of ``changed`` that ``query`` reads, when its rows can be restricted to a
    correction's delta of it (the module's rules); else None.  ``key``: its pairing key."""
    select = parse(query)
    if not isinstance(select, exp.Select) or any(select.args.get(k) for k in (
            "with_", "limit", "offset", "distinct", "laterals", "qualify", "pivots")):
        return None
    if any(q is not select for q in select.find_all(exp.Query)) or select.find(exp.Window, exp.Lateral, exp.Unnest):
        return None
    joins = select.args.get("joins") or []
    if any(j.side or j.kind.upper() not in ("", "INNER", "CROSS") or j.args.get("using") or j.method for j in joins):
        return None
    tables = [select.args["from_"].this, *(j.this for j in joins)]
    if not all(isinstance(t, exp.Table) and not t.args.get("db") for t in tables):
        return None
    grouped = select.args.get("group") is not None
    if grouped != bool(key) or (not grouped and select.find(exp.AggFunc)) or select.find(exp.Rand, exp.Randn):
        return None
    read = [t.name.lower() for t in tables if t.name.lower() in changed]
    return read[0] if len(read) == 1 else None


def restricted_sides(session: Engine, saved: SavedResult, plain: str, read: str, key: list[str],
                     replaced: dict[str, str], delta: Delta, view: str) -> Sides:
    """The step's sides computed from ``delta`` of the input ``read`` (``saved``: the step's
    result; ``plain``: its plain query; ``replaced``: every changed name's whole view after;
    ``view``: a prefix for the views this makes)."""
    from pyspark.sql import functions as F

    delta.removed.createOrReplaceTempView(f"{view}_out")
    delta.added.createOrReplaceTempView(f"{view}_in")
    if not key:
        out = recomputed(session, plain, {read: f"{view}_out"})
        put = recomputed(session, plain, {read: f"{view}_in"})
        before_whole = session.run(plain, lineage_query=False)
        return Sides(out, put, before_whole.exceptAll(out).unionByName(put), ROWS)
    F.broadcast(delta.removed.unionByName(delta.added)).createOrReplaceTempView(f"{view}_delta")
    others = _other_tables(plain, read) if _lineage_names_its_rows(session, saved, plain) else None
    reached = recomputed(session, _reached_query(plain, key, others or []), {read: f"{view}_delta"}).localCheckpoint()
    keys = F.broadcast(reached.select(*[f"__k{i}" for i in range(len(key))]).distinct())

    def of_keys(frame):
        return frame.join(keys, [frame[backquoted(k)].eqNullSafe(keys[f"__k{i}"]) for i, k in enumerate(key)],
                          "left_semi")

    found = None if others is None else _rows_in_lineage(session, saved, key, keys, reached, [read, *others.values()])
    if found is None:  # not read by id, or too many to: the reached groups of the whole step
        return Sides(of_keys(session.run(plain, lineage_query=False)), of_keys(recomputed(session, plain, replaced)),
                     None, GROUPS)
    rows, few = found
    rows_after = dict(rows, **{read: _corrected_in_place(rows[read], delta)})
    sides = []
    for side, frames in (("before", rows), ("after", rows_after)):
        for table, frame in frames.items():  # few rows broadcast: Spark knows no size of them, and would sort them
            (F.broadcast(frame) if table in few else frame).createOrReplaceTempView(f"{view}_{side}_{table}")
        sides.append(of_keys(recomputed(session, plain, {t: f"{view}_{side}_{t}" for t in frames})))
    return Sides(*sides, None, GROUPS_BY_ID)


def _corrected_in_place(rows, delta: Delta):
    """``rows`` (of the changed table, with ids) as corrected: a corrected row where it was,
    a removed one left out, the delta's rows not among them after them.  In place, so that a
    group whose values the correction leaves alone sums its doubles in the same order."""
    from pyspark.sql import functions as F

    added = delta.added.select(*[F.col(backquoted(c)).alias(f"__a{i}") for i, c in enumerate(rows.columns)])
    added_id = f"__a{rows.columns.index(ID_COLUMN)}"
    joined = rows.join(F.broadcast(added), rows[ID_COLUMN] == added[added_id], "left")
    kept = joined.join(F.broadcast(delta.removed.select(F.col(ID_COLUMN).alias("__out"))),
                       joined[ID_COLUMN] == F.col("__out"), "left").where(
        F.col("__out").isNull() | F.col(added_id).isNotNull())
    corrected = kept.select(*[F.when(F.col(added_id).isNotNull(), F.col(f"__a{i}")).otherwise(rows[backquoted(c)])
                              .alias(c) for i, c in enumerate(rows.columns)])
    return corrected.unionByName(delta.added.join(rows.select(ID_COLUMN), ID_COLUMN, "left_anti"))


def _lineage_names_its_rows(session: Engine, saved: SavedResult, plain: str) -> bool:
    """True when ``saved``'s DLs name every row each of its groups was computed from, so that
    a group's inputs can be read by id: it reads catalog tables only, at their current
    versions, keeps its sets whole (no shared or named sets), has no HAVING and does not read
    the time."""
    select = parse(plain)
    if select.args.get("having") or select.find(exp.CurrentDate, exp.CurrentTimestamp, exp.CurrentTime):
        return False  # a group HAVING left out has no saved DL; rows the time lets in since are in none
    tables = {t.name.lower() for t in select.find_all(exp.Table)}
    catalog = session.catalog
    return (tables <= set(catalog.tables) and not saved.results and not saved.references
            and not saved.shared_sets and not saved.named_sets
            and all(saved.tables.get(t) == catalog.entry(t).version for t in tables))


def _other_tables(plain: str, read: str) -> dict[str, str]:
    """``{alias: table}`` of the tables ``plain`` reads besides ``read``."""
    return {alias: table for alias, table, _ in _inputs(parse(plain)) if table != read}


def _inputs(select: exp.Select) -> list[tuple[str, str, exp.Select | None]]:
    """``(alias, table, the SELECT plain_sql wraps it in or None)`` of each input of
    ``select``'s FROM and joins (``plain_sql`` reads a table as ``(SELECT its columns FROM t) AS t``)."""
    inputs = []
    for item in [select.args["from_"].this, *(j.this for j in select.args.get("joins") or [])]:
        inner = item.this if isinstance(item, exp.Subquery) else None
        table = inner.args["from_"].this if isinstance(inner, exp.Select) else item
        inputs.append((item.alias_or_name, table.name.lower(), inner))
    return inputs


def _reached_query(plain: str, key: list[str], others: dict[str, str]) -> str:
    """``plain``'s FROM and WHERE (its rows before grouping): their grouping keys, as
    ``__k0, __k1, ...``, and the ids of the rows of ``others`` (``__id0, ...``) they join."""
    select = parse(plain)
    for alias, _, inner in _inputs(select):
        if alias in others and inner is not None:  # the derived table plain_sql wrote passes the id on
            inner.select(exp.column(ID_COLUMN), copy=False)
    outputs = {e.alias_or_name: e.unalias() for e in select.expressions}
    ids = [exp.alias_(exp.column(ID_COLUMN, table=alias, quoted=True), f"__id{i}") for i, alias in enumerate(others)]
    reached = exp.select(*[exp.alias_(outputs[k].copy(), f"__k{i}") for i, k in enumerate(key)], *ids)
    reached.set("from_", select.args["from_"].copy())
    for part in ("joins", "where"):
        if select.args.get(part):
            reached.set(part, select.args[part].copy() if part == "where" else [j.copy() for j in select.args[part]])
    return reached.sql(dialect=SPARK)


def _rows_in_lineage(session: Engine, saved: SavedResult, key: list[str], keys, reached,
                     tables: list[str]) -> tuple[dict, set[str]] | None:
    """``{table: its rows}`` (DataFrames) that a group of ``keys`` was computed from (its saved
    DL) or that a row of the delta joins (``reached``), read by id; and the tables of few of them.
    None when they are too many to read by id."""
    import numpy as np
    from pyspark.sql import functions as F

    from dltrace.impact.backward import rows_with_ids
    from dltrace.impact.search import BROADCAST_IDS, LITERAL_IDS, int_column

    columns = ", ".join(backquoted(k) for k in key)
    rows = session.run(f"SELECT {columns}, {LINEAGE_COLUMN} FROM {backquoted(saved.name)}", reads={saved.name})
    rows = rows.join(keys, [rows[backquoted(k)].eqNullSafe(keys[f"__k{i}"]) for i, k in enumerate(key)], "left_semi")
    found = rows.select(F.explode(LINEAGE_COLUMN).alias(ID_COLUMN))
    for column in (c for c in reached.columns if c.startswith("__id")):
        found = found.unionByName(reached.select(F.col(column).alias(ID_COLUMN)).where(F.col(ID_COLUMN).isNotNull()))
    ids = np.unique(int_column(found.limit(BROADCAST_IDS + 1)))
    if len(ids) > BROADCAST_IDS:
        return None
    rows, few = {}, set()
    for table in dict.fromkeys(tables):
        of_table = ids[(ids >> ROW_BITS) == session.catalog.entry(table).code]
        frame = rows_with_ids(session.spark, table_rows(session.spark, session.catalog, table), of_table)
        rows[table] = frame.localCheckpoint()  # read once: both sides read them
        if len(of_table) <= LITERAL_IDS:
            few.add(table)
    return rows, few


def recomputed(session: Engine, plain: str, replaced: dict[str, str]) -> Any:
    """A saved result's ``plain`` query (``plain_sql``) reading the views of ``replaced`` for
    those names (not for its CTEs)."""
    expression = parse(plain)
    ctes = {cte.alias_or_name.lower() for cte in expression.find_all(exp.CTE)}
    for table in expression.find_all(exp.Table):
        name = table.name.lower()
        if name in replaced and name not in ctes and not table.args.get("db"):
            table.set("this", exp.to_identifier(replaced[name]))
    return session.run(expression.sql(dialect=SPARK), lineage_query=False)
