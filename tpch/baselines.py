"""The baselines forward lineage is measured against, generated as Spark SQL over the catalog.

**Reverse queries** (Cui & Widom's backward tracing, as the paper describes it in §2.2 and
measures it in §5.3). Lineage is computed after the fact from the stored result:

* SPJ ``SELECT A FROM T1..Tn WHERE C``: the view V is the result; the base rows of a
  result tuple t are ``σ[C ∧ A = t.A](T1 × .. × Tn)`` (the paper's Q2), and for all result
  tuples the base tables are joined with V on the output attributes.
* One level of aggregation, ``... GROUP BY G HAVING H``: the output need not hold the
  group-by attributes (Walmart Q5 outputs only a sum), so the *intermediate view*, the
  grouped result with G, is materialized first (the paper's Q5) and joined back to
  ``σ[C](T1 × .. × Tn)`` on G (its Q6). A global aggregate has one group: its lineage is
  ``σ[C](T1 × .. × Tn)``. ``SELECT DISTINCT`` groups by the output attributes.

As in the paper, materializing the view is part of the cost (it is written as Parquet, as
``CREATE TABLE`` would), so a reverse run = the query's result + the tracing query. The
tracing query returns the ``_dl_id`` of every table occurrence per contributing row
combination (the ids, not whole rows: the same information forward lineage gives).
FROM subqueries that only select and join are merged into the outer query first (TPC-H
Q7-Q9); anything else nested is refused, as the paper's generator refused it.

**Perm** (Glavic & Alonso's provenance rewriting, the logical baseline SMOKE compared with
as LOGIC-RID): one query whose result is the original result joined with its unaggregated
contributing rows, one row per contributing combination, with the ``_dl_id`` of every table
occurrence. For SPJ that is the query with the ids added; for an aggregate it is the
aggregate joined back with its input on G. It shares the reverse generator's shapes.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import sqlglot
from sqlglot import exp
from sqlglot.optimizer.merge_subqueries import merge_subqueries

from dltrace.errors import DltraceError
from dltrace.rewriter import parse
from dltrace.rewriter.qualify import qualify_against_catalog
from tpch.harness import CannotRun

INNER_JOINS = ("", "INNER", "CROSS")


@dataclass(frozen=True)
class Shape:
    """A query the generators can handle: one SELECT over base tables joined by inner joins,
    with at most one level of aggregation."""

    select: exp.Select  # qualified, FROM subqueries merged, without ORDER BY
    outputs: list[tuple[str, exp.Expression]]  # (result column name, expression)
    kind: str  # "spj", "distinct" or "aggregate"
    group_keys: list[exp.Expression]  # of an aggregate; none for a global aggregate
    occurrences: list[str]  # the alias of every table occurrence, one id column each

    @property
    def view_keys(self) -> list[tuple[str, exp.Expression]]:
        """The view's columns that tie a result tuple to base rows, with the base expression.

        SPJ and DISTINCT: the output attributes (``__c*``); GROUP BY: the group-by
        attributes (``__g*``), which the intermediate view carries; a global aggregate: none.
        """
        if self.kind == "aggregate":
            return [(f"__g{i}", key) for i, key in enumerate(self.group_keys)]
        return [(f"__c{i}", expression) for i, (_, expression) in enumerate(self.outputs)]


def shape_of(session, query: str) -> Shape:
    """The query's shape, or CannotRun naming what the generators do not reverse."""
    try:
        qualified = qualify_against_catalog(parse(query), session.catalog.schemas())
    except DltraceError as error:
        raise CannotRun(str(error)) from None
    merged = merge_subqueries(qualified)
    if not isinstance(merged, exp.Select):
        raise CannotRun(f"set operation ({merged.key.upper()}): not an SPJ or single aggregate query")
    refuse_nested(merged)
    joins = merged.args.get("joins") or []
    for join in joins:
        if join.side or join.kind not in INNER_JOINS:
            raise CannotRun(f"{' '.join(filter(None, (join.side, join.kind)))} JOIN: reverse queries need inner joins")
        if join.args.get("using"):
            raise CannotRun("JOIN ... USING: write the join condition with ON")
    if merged.args.get("limit"):
        raise CannotRun("LIMIT: which rows are in the result depends on the order")
    if merged.find(exp.Window):
        raise CannotRun("window function: no single-level reverse query")
    select = merged.copy()
    select.set("order", None)
    outputs = [(projection.alias_or_name, projection.unalias()) for projection in select.expressions]
    group = select.args.get("group")
    if group and (group.args.get("rollup") or group.args.get("cube") or group.args.get("grouping_sets")):
        raise CannotRun("ROLLUP, CUBE or GROUPING SETS")
    aggregated = group is not None or select.args.get("having") is not None or any(
        projection.find(exp.AggFunc) for _, projection in outputs)
    if select.args.get("distinct") and aggregated:
        raise CannotRun("SELECT DISTINCT over an aggregate: two levels of grouping")
    kind = "distinct" if select.args.get("distinct") else "aggregate" if aggregated else "spj"
    group_keys = list(group.expressions) if group else []
    sources = [merged.args["from_"].this, *(join.this for join in joins)]
    return Shape(select, outputs, kind, group_keys, [source.alias_or_name for source in sources])


def refuse_nested(select: exp.Select) -> None:
    """CannotRun for a subquery left after merging, naming where it is."""
    if select.args.get("with_"):
        raise CannotRun("a WITH query that aggregates cannot be merged: two levels of aggregation")
    nested = next((node for node in select.find_all(exp.Select) if node is not select), None)
    if nested is None:
        return
    while nested.parent is not select:
        nested = nested.parent
    if nested.arg_key in ("from_", "joins"):
        raise CannotRun("a FROM subquery that aggregates: two levels of aggregation")
    place = {"where": "in WHERE", "having": "in HAVING"}.get(nested.arg_key, "in the SELECT list")
    raise CannotRun(f"a nested subquery {place}: reverse queries cover SPJ and one level of aggregation")


def sql(expression: exp.Expression) -> str:
    return expression.sql(dialect="spark")


def sources_sql(shape: Shape) -> str:
    """The FROM clause with its joins (ON conditions included)."""
    return " ".join([sql(shape.select.args["from_"]), *(sql(j) for j in shape.select.args.get("joins") or [])])


def where_sql(shape: Shape, *conditions: str) -> str:
    """WHERE with the query's own condition and ``conditions``, or nothing."""
    where = shape.select.args.get("where")
    parts = ([f"({sql(where.this)})"] if where else []) + list(conditions)
    return f" WHERE {' AND '.join(parts)}" if parts else ""


def ids_sql(shape: Shape, qualifier: str | None = None) -> str:
    """``_dl_id`` of every table occurrence, as ``prov_<alias>`` (Perm's provenance attributes)."""
    return ", ".join(f"{qualifier or alias}.{'prov_' + alias if qualifier else '_dl_id'} AS prov_{alias}"
                     for alias in shape.occurrences)


def materialization_sql(shape: Shape) -> str:
    """The view a reverse query reads: the result (SPJ) or the intermediate grouped view."""
    outputs = [f"{sql(expression)} AS __c{i}" for i, (_, expression) in enumerate(shape.outputs)]
    if shape.kind != "aggregate":
        columns = outputs
    else:
        columns = [f"{sql(key)} AS {name}" for name, key in shape.view_keys] + outputs
    select = shape.select.copy()
    select.set("expressions", [exp.maybe_parse(c, dialect="spark") for c in columns])
    return sql(select)


def reverse_all_sql(shape: Shape, view: str) -> str:
    """The base-row ids of every result tuple: the base tables joined with the view."""
    matches = [f"__view.{name} <=> {sql(expression)}" for name, expression in shape.view_keys]
    return (f"SELECT __view.*, {ids_sql(shape)} {sources_sql(shape)} "
            f"INNER JOIN {view} AS __view{where_sql(shape, *matches)}")


def reverse_one_sql(shape: Shape, tuple_text: dict[str, str | None], types: dict[str, str]) -> str:
    """The base-row ids of one result tuple, its view-key values given as Spark casts them to
    strings (they round-trip exactly through ``CAST(text AS type)``)."""
    conditions = []
    for name, expression in shape.view_keys:
        text = tuple_text[name]
        if text is None:
            conditions.append(f"{sql(expression)} IS NULL")
        else:
            quoted = text.replace("\\", "\\\\").replace("'", "\\'")
            conditions.append(f"{sql(expression)} = CAST('{quoted}' AS {types[name]})")
    return f"SELECT {ids_sql(shape)} {sources_sql(shape)}{where_sql(shape, *conditions)}"


def perm_sql(shape: Shape) -> str:
    """Perm's rewrite: the result with its contributing rows' ids, one row per combination."""
    if shape.kind == "spj":
        outputs = ", ".join(f"{sql(expression)} AS `{name}`" for name, expression in shape.outputs)
        return f"SELECT {outputs}, {ids_sql(shape)} {sources_sql(shape)}{where_sql(shape)}"
    keys = ", ".join(f"{sql(key)} AS {name}" for name, key in shape.view_keys)
    provenance = f"SELECT {keys + ', ' if keys else ''}{ids_sql(shape)} {sources_sql(shape)}{where_sql(shape)}"
    matches = " AND ".join(f"__agg.{name} <=> __prov.{name}" for name, _ in shape.view_keys)
    join = f"JOIN ({provenance}) AS __prov ON {matches}" if matches else f"CROSS JOIN ({provenance}) AS __prov"
    outputs = ", ".join(f"__agg.__c{i} AS `{name}`" for i, (name, _) in enumerate(shape.outputs))
    return f"SELECT {outputs}, {ids_sql(shape, '__prov')} FROM ({materialization_sql(shape)}) AS __agg {join}"


def contributing_ids_duckdb(shape: Shape, table_prefix: str) -> str:
    """DuckDB SQL for each result row plus ``__ids``, the ids of *all* base rows that contribute
    to it (Definition 1): Perm's provenance query, with every occurrence's ``_dl_id`` added
    (SPJ) or collected per group (aggregate, DISTINCT).  Table ``t`` is read from DuckDB's
    ``<table_prefix>t``, which holds its rows with ``_dl_id``.  An oracle independent of the rewriter,
    on another engine, for queries without subqueries (where control and data lineage agree)."""
    select = shape.select.copy()
    for table in select.find_all(exp.Table):
        table.set("this", exp.to_identifier(table_prefix + table.name.lower()))
    ids = ", ".join(f"{alias}._dl_id" for alias in shape.occurrences)
    collected = f"[{ids}]" if shape.kind == "spj" else f"list_distinct(flatten(list([{ids}])))"
    if shape.kind == "distinct":
        select.set("distinct", None)
        select.set("group", exp.Group(expressions=[expression.copy() for _, expression in shape.outputs]))
    select.select(exp.alias_(sqlglot.parse_one(collected, read="duckdb"), "__ids"), copy=False)
    return select.sql(dialect="duckdb")


# -- running a reverse query on Spark ----------------------------------------------------


def materialize(session, shape: Shape, path: Path, view: str):
    """Write the view as Parquet (``CREATE TABLE``) and name it ``view``; returns it as read back."""
    session.run(materialization_sql(shape)).write.mode("overwrite").parquet(str(path))
    frame = session.spark.read.parquet(str(path))
    frame.createOrReplaceTempView(view)
    return frame


def first_tuple(shape: Shape, view_frame) -> tuple[dict[str, str | None], dict[str, str]] | None:
    """The first stored result tuple's view keys as text and their types, or None if empty."""
    names = [name for name, _ in shape.view_keys]
    row = view_frame.selectExpr(*(f"CAST({name} AS STRING) AS {name}" for name in names) or ["1 AS __any"]).first()
    if row is None:
        return None
    types = {field.name: field.dataType.simpleString() for field in view_frame.schema.fields if field.name in names}
    return {name: row[name] for name in names}, types


def reverse_one(session, shape: Shape, path: Path, view: str):
    """Backward lineage of one result tuple: materialize, pick the tuple, trace it (None: no tuple)."""
    picked = first_tuple(shape, materialize(session, shape, path, view))
    return None if picked is None else session.run(reverse_one_sql(shape, *picked))


def reverse_all(session, shape: Shape, path: Path, view: str):
    """Backward lineage of every result tuple: materialize, then one join with the view."""
    materialize(session, shape, path, view)
    return session.run(reverse_all_sql(shape, view))
