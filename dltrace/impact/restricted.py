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
  only (a semi join Spark pushes through the aggregate and the joins to the scans);
* without a key (joins and filters): the rows computed from the delta alone, before and
  after, are the rows that vanish and appear, compared as bags.

Anything else (a window, LIMIT, DISTINCT, an outer, semi or anti join, a subquery, a derived
table, a second changed input or the changed one read twice) is recomputed whole.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlglot import exp

from dltrace.engine import Engine
from dltrace.rewriter.dialect import SPARK
from dltrace.rewriter.qualify import parse

WHOLE, GROUPS, ROWS = "whole", "the groups the correction reaches", "the rows the correction reaches"


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
    whole_after: Any
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
    if any(j.side or j.kind.upper() not in ("", "INNER", "CROSS") or j.args.get("using") for j in joins):
        return None
    tables = [select.args["from_"].this, *(j.this for j in joins)]
    if not all(isinstance(t, exp.Table) and not t.args.get("db") for t in tables):
        return None
    grouped = select.args.get("group") is not None
    if grouped != bool(key) or (not grouped and select.find(exp.AggFunc)) or select.find(exp.Rand, exp.Randn):
        return None
    read = [t.name.lower() for t in tables if t.name.lower() in changed]
    return read[0] if len(read) == 1 else None


def restricted_sides(session: Engine, plain: str, read: str, key: list[str], replaced: dict[str, str],
                     delta: Delta, view: str) -> Sides:
    """The step's sides computed from ``delta`` of the input ``read`` (``plain``: its plain
    query; ``replaced``: every changed name's whole view after; ``view``: a prefix for the
    views this makes)."""
    from pyspark.sql import functions as F

    before_whole = session.run(plain, lineage_query=False)
    after_whole = recomputed(session, plain, replaced)
    delta.removed.createOrReplaceTempView(f"{view}_out")
    delta.added.createOrReplaceTempView(f"{view}_in")
    if not key:
        out = recomputed(session, plain, {read: f"{view}_out"})
        put = recomputed(session, plain, {read: f"{view}_in"})
        return Sides(out, put, before_whole.exceptAll(out).unionByName(put), ROWS)
    keys_query = _keys_query(plain, key)
    keys = recomputed(session, keys_query, {read: f"{view}_out"}).union(
        recomputed(session, keys_query, {read: f"{view}_in"})).distinct()
    keys = F.broadcast(keys.toDF(*[f"__k{i}" for i in range(len(key))]))

    def of_keys(frame, how: str):
        return frame.join(keys, [frame[k].eqNullSafe(keys[f"__k{i}"]) for i, k in enumerate(key)], how)

    after = of_keys(after_whole, "left_semi")
    return Sides(of_keys(before_whole, "left_semi"), after, of_keys(before_whole, "left_anti").unionByName(after),
                 GROUPS)


def _keys_query(plain: str, key: list[str]) -> str:
    """The distinct grouping keys of ``plain``'s rows before grouping (its FROM and WHERE), named
    as the key's output columns."""
    select = parse(plain)
    outputs = {e.alias_or_name: e.unalias() for e in select.expressions}
    keys = exp.select(*[exp.alias_(outputs[k].copy(), k, quoted=True) for k in key]).distinct()
    keys.set("from_", select.args["from_"].copy())
    for part in ("joins", "where"):
        if select.args.get(part):
            keys.set(part, select.args[part].copy() if part == "where" else [j.copy() for j in select.args[part]])
    return keys.sql(dialect=SPARK)


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
