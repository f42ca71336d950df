"""Rule: aggregation.  ``GROUP BY G HAVING C``: ``DL = DLUNION(V.DL)`` over the group's rows
(paper §3.3); a global aggregate is one group, with DL ∅ when it read no rows.

Each id term becomes a ``collect_set``, a native aggregate with map-side partial
aggregation, so it sits in the same SELECT as SUM, COUNT and the rest; a ``collect_list``
(no hash set) when the joins cannot repeat the term's rows (:mod:`.keys`).

>>> from dltrace.rewriter import rewrite_sql, PAPER_SCHEMA
>>> print(rewrite_sql("SELECT s_id, SUM(num) AS n FROM sales GROUP BY s_id", PAPER_SCHEMA))
SELECT sales.s_id AS s_id, SUM(sales.num) AS n, SORT_ARRAY(COLLECT_LIST(sales._dl_id)) AS DL FROM sales AS sales GROUP BY sales.s_id
"""  # noqa: E501

from __future__ import annotations

from dataclasses import replace
from typing import NamedTuple

from sqlglot import exp

from dltrace.catalog import ID_COLUMN
from dltrace.rewriter.base_table import is_catalog_table
from dltrace.rewriter.clauses import conjuncts, sources
from dltrace.rewriter.context import RewriteContext
from dltrace.rewriter.keys import pinned_sources
from dltrace.rewriter.representation import call
from dltrace.rewriter.terms import Kind, Term


def is_aggregate(select: exp.Select) -> bool:
    """True when ``select`` groups its rows: GROUP BY, or an aggregate function of its own
    (not one inside a window or a nested query)."""
    if select.args.get("group"):
        return True
    for part in [*select.expressions, select.args.get("having")]:
        if part is None:
            continue
        if any(agg.find_ancestor(exp.Window, exp.Select) is select for agg in part.find_all(exp.AggFunc)):
            return True
    return False


def aggregate(select: exp.Expression, context: RewriteContext) -> exp.Expression:
    """Replace the rows' lineage by its DLUNION over each group."""
    if not isinstance(select, exp.Select) or not is_aggregate(select):
        return select
    lineage = context.lineage.of(select)
    rows = lineage.rows
    size = expected_group_lineage(select, context)
    plain = not has_grouping_sets(select)
    by_key = grouped_by_key(select, context.table_keys or {}) if plain else frozenset()
    by_row_id = grouped_by_row_id(select, context) if plain else frozenset()
    global_aggregate = not select.args.get("group")
    terms, collected = [], False
    for term in rows:
        if term.kind is Kind.ID and term.source in by_key | by_row_id and context.ids_ordered_by_table:
            terms.append(one_row_per_group(term, unique=in_one_group(term, rows, select, context)))
            continue
        if term.shared and global_aggregate and isinstance(term.sql, exp.Subquery):
            terms.append(only_if_rows_read(term))
            continue
        aggregated = context.representation.aggregate(term, group_size=size)
        collected = collected or not term.shared
        if not plain:  # ROLLUP, CUBE, GROUPING SETS: a row is in several groups
            aggregated = replace(aggregated, unique=False)
        elif not aggregated.unique and in_one_group(term, rows, select, context):
            aggregated = replace(aggregated, unique=True)
        terms.append(aggregated)
    lineage.rows = tuple(terms)
    if plain and collected:
        group_by_keys(select, context.table_keys or {})
    return select


def group_by_keys(select: exp.Select, table_keys: dict[str, list[str]]) -> None:
    """``GROUP BY`` a table's key and columns its row pins (``c_custkey, c_nationkey,
    c_mktsegment``): group by the key alone and read the other columns with ``ANY_VALUE``.

    The groups are the same, and an aggregate that collects ids (an object aggregate, which
    falls back to sorting its input once a task holds 128 groups) sorts on one bigint by
    radix sort instead of comparing three columns, a string among them (step 1 of
    ``tpch.pipeline_bench`` spends less CPU: docs/performance.md, "Measurements behind design choices").
    Inner joins only (a padded row's NULL key would merge rows), and none of windows or
    subqueries, whose references to the columns this changes would need to follow.
    """
    group = select.args.get("group")
    joins = select.args.get("joins") or []
    if group is None or any(join.side or join.kind.upper() not in ("", "INNER", "CROSS") for join in joins):
        return
    if select.find(exp.Window) or any(node is not select for node in select.find_all(exp.Select)):
        return
    columns = [part for part in group.expressions if isinstance(part, exp.Column) and part.table]
    grouped = {(c.table, c.name.lower()) for c in columns}
    dropped: set[tuple[str, str]] = set()
    for source in sources(select):
        key = table_keys.get(source.name.lower()) if isinstance(source, exp.Table) else None
        key_columns = {(source.alias_or_name, k.lower()) for k in key or []}
        if not key_columns or not key_columns <= grouped - dropped:
            continue
        pinned = pinned_sources(select, table_keys, source.alias_or_name)
        dropped |= {column for column in grouped - key_columns if column[0] in pinned}
    if not dropped:
        return
    group.set("expressions", [p for p in group.expressions
                              if not (isinstance(p, exp.Column) and (p.table, p.name.lower()) in dropped)])
    for part in [*select.expressions, select.args.get("having"), select.args.get("order")]:
        for column in list(part.find_all(exp.Column)) if part is not None else []:
            if (column.table, column.name.lower()) in dropped and column.find_ancestor(
                exp.AggFunc, exp.Select
            ) is select:
                value = exp.AnyValue(this=column.copy())
                column.replace(exp.alias_(value, column.name) if column.parent is select else value)


def has_grouping_sets(select: exp.Select) -> bool:
    """True when ``select`` groups by ROLLUP, CUBE or GROUPING SETS, which put a row into
    several groups (the groups' DLs then share ids, and a key no longer pins a group to
    one row)."""
    group = select.args.get("group")
    return group is not None and any(True for _ in group.find_all(exp.Rollup, exp.Cube, exp.GroupingSets))


def in_one_group(term: Term, rows: tuple[Term, ...], select: exp.Select, context: RewriteContext) -> bool:
    """True when no id of ``term`` reaches two groups, though rows may repeat it inside one.

    So it is when distinct rows of the term's table carry disjoint ids (row ids of a base
    table; a saved result whose rows' DLs are disjoint), each of its rows determines every
    GROUP BY value (their columns belong to tables its row pins by key equalities: customer,
    orders and lineitem grouped by ``c_custkey``), and no other term covers its tables.  A
    saved step grouping lineitems by customer is then disjoint, and the step that reads it
    unions its DLs without deduplicating them.
    """
    group = select.args.get("group")
    if group is None or term.source is None or term.shared:
        return False
    if any(other is not term and other.tables & term.tables for other in rows):
        return False
    table = next((s for s in sources(select) if isinstance(s, exp.Table) and s.alias_or_name == term.source), None)
    if table is None:
        return False
    name = table.name.lower()
    saved = context.saved.get(name)
    if saved is not None:  # its rows' names, or their lineage when no id is in two rows'
        if not (saved.reference is not None or saved.disjoint):
            return False
    elif not (name in context.codes and context.ids_ordered_by_table):
        return False
    pinned = pinned_sources(select, context.table_keys or {}, term.source)
    parts = group.expressions
    return bool(parts) and all(
        not part.find(exp.Subquery)
        and (columns := list(part.find_all(exp.Column)))
        and all(column.table in pinned for column in columns)
        for part in parts
    )


def only_if_rows_read(term: Term) -> Term:
    """A set every row shares, under a global aggregate: its one output row holds the set
    only when it aggregated rows (DLUNION over no rows is ∅, subquery lineage included).
    One row: the set is spelled out there, no longer held apart."""
    has_rows = exp.GT(this=exp.Count(this=exp.Star()), expression=exp.Literal.number(0))
    return replace(term, sql=exp.If(this=has_rows, true=term.sql, false=exp.Null()), nullable=True, shared=False)


def one_row_per_group(term: Term, unique: bool) -> Term:
    """The id of a table grouped by its key or row id: every row of a group is the same row
    of that table, so the DLUNION is its one id (NULL on the padded side of an outer join),
    still an ``ID`` term; no set is built per group.  ``unique``: no two groups share it,
    which grouping by the key alone does not promise (``GROUP BY c_custkey, o_orderkey``
    puts a customer in a group per order)."""
    return replace(term, sql=call("first", term.sql, exp.true()), unique=unique)


def grouping_columns(group: exp.Group) -> set[tuple[str, str]]:
    """The columns every group of ``group`` holds one value of: its plain GROUP BY columns,
    not a column inside an expression (``GROUP BY n_nationkey % 7`` merges keys) nor one of
    ROLLUP, CUBE or GROUPING SETS (their subtotals merge them)."""
    return {(c.table, c.name.lower()) for c in group.expressions if isinstance(c, exp.Column)}


def grouped_by_key(select: exp.Select, table_keys: dict[str, list[str]]) -> frozenset[str]:
    """Aliases of tables read once in FROM whose declared key is among the GROUP BY
    columns: every row of a group holds the same row of each (whether two groups may hold
    it is ``in_one_group``'s question)."""
    group = select.args.get("group")
    if group is None:
        return frozenset()
    tables = [source for source in sources(select) if isinstance(source, exp.Table)]
    names = [t.name.lower() for t in tables]
    grouped = grouping_columns(group)
    return frozenset(
        table.alias_or_name
        for table, name in zip(tables, names)
        if names.count(name) == 1
        and (key := table_keys.get(name))
        and all((table.alias_or_name, k.lower()) in grouped for k in key)
    )


def grouped_by_row_id(select: exp.Select, context: RewriteContext) -> frozenset[str]:
    """Aliases of catalog tables whose row id ``_dl_id`` is a GROUP BY column (as
    ``exists_join`` groups): each group holds one row of each."""
    group = select.args.get("group")
    if group is None:
        return frozenset()
    grouped = grouping_columns(group)
    return frozenset(
        source.alias_or_name
        for source in sources(select)
        if is_catalog_table(source, context) and (source.alias_or_name, ID_COLUMN) in grouped
    )


# Spark aggregates a group's ids (collect_list, collect_set) with its object hash aggregate,
# which keeps 128 groups of a task in a hash map and sorts the rest of its input
# (spark.sql.objectHashAggregate.sortBased.fallbackThreshold).  When a query groups by a
# table's key into this many groups or more, Spark's sort aggregate does the same work for
# less (a pipeline step grouping by customer, TPC-H Q10).  With few groups the hash map never
# spills and sorting is the loss (TPC-H Q1), so a grouping whose count is only guessed
# (√input) never qualifies.  The measurements: docs/performance.md, "Measurements behind design choices".
MANY_GROUPS_FROM = 10_000


class GroupEstimate(NamedTuple):
    """An aggregate's input rows and groups, from catalog statistics; ``by_key``: the groups
    are a table's rows (a GROUP BY on its key), not a guess."""

    read: float
    groups: float
    by_key: bool


def has_many_groups(select: exp.Expression, context: RewriteContext) -> bool:
    """True when ``select`` groups by a table's key into ``MANY_GROUPS_FROM`` groups or more."""
    if not isinstance(select, exp.Select) or not is_aggregate(select):
        return False
    estimate = group_estimate(select, context)
    return estimate is not None and estimate.by_key and estimate.groups >= MANY_GROUPS_FROM


def expected_group_lineage(select: exp.Select, context: RewriteContext) -> float | None:
    """A rough number of ids per group (``group_estimate``: rows read over groups), None
    when unknown."""
    estimate = group_estimate(select, context)
    return estimate.read / estimate.groups if estimate else None


def group_estimate(select: exp.Select, context: RewriteContext) -> GroupEstimate | None:
    """A rough number of rows read and of groups, from catalog statistics (None when unknown).

    Each table read counts its rows after the WHERE conditions of the SELECT that reads it
    (``filter_selectivity``), and the input is taken as the largest; a global aggregate is
    one group, a GROUP BY on the key of a table has as many groups as that table has rows
    left, and any other grouping √input groups (unknown cardinality, between one group and
    one per row).
    """
    if not context.table_rows:
        return None
    tables = [t for source in sources(select) for t in source.find_all(exp.Table)]
    reading = {id(t.parent_select): t.parent_select for t in tables}  # this SELECT, derived tables'
    kept = {key: filter_selectivity(reader) for key, reader in reading.items()}
    filtered = [
        (t, context.table_rows.get(t.name.lower(), 0) * kept[id(t.parent_select)].get(t.alias_or_name, 1.0))
        for t in tables
    ]
    read = max((rows for _, rows in filtered), default=0)
    if not read:
        return None
    group = select.args.get("group")
    if not group:
        return GroupEstimate(float(read), 1.0, False)
    grouped = {c.name.lower() for c in group.find_all(exp.Column)}
    for table, rows in filtered:
        key = [k.lower() for k in (context.table_keys or {}).get(table.name.lower()) or []]
        if key and set(key) <= grouped:
            return GroupEstimate(float(read), float(max(rows, 1)), True)
    return GroupEstimate(float(read), read**0.5, False)


# Without column statistics, the fraction of rows a condition keeps, as System R assumed
# (Selinger et al. 1979): equality 1/10 (an IN list 1/10 a value, at most 1/2), a range bound
# 1/3, BETWEEN 1/4; LIKE as equality.
EQUALITY_SELECTIVITY, BOUND_SELECTIVITY, BETWEEN_SELECTIVITY = 1 / 10, 1 / 3, 1 / 4
RANGE_BOUNDS = (exp.GT, exp.GTE, exp.LT, exp.LTE)


def filter_selectivity(select: exp.Select | None) -> dict[str, float]:
    """Per table alias, the fraction of its rows kept by the WHERE conjuncts of ``select``
    that compare one of its columns with constants (an alias absent keeps all).

    ``auto`` chooses a representation by a group's size, and a global aggregate over a
    filtered fact table (TPC-H Q6: 1.1M of lineitem's 60M rows at SF 10) is far smaller
    than the table: taken whole, it crossed the roBDD threshold, which made it much slower
    than with native sets.  Conditions on a column and a subquery, on two
    tables' columns, and disjunctions are taken to keep every row.
    """
    kept: dict[str, float] = {}
    for condition in conjuncts(select.args.get("where") if select else None):
        columns = list(condition.find_all(exp.Column))
        if len({c.table for c in columns}) != 1 or condition.find(exp.Subquery, exp.Select):
            continue
        fraction = _kept_by(condition)
        if fraction is not None:
            kept[columns[0].table] = kept.get(columns[0].table, 1.0) * fraction
    return kept


def _kept_by(condition: exp.Expression) -> float | None:
    """The fraction of rows a comparison of one column with constants keeps, or None."""
    if isinstance(condition, exp.Between):
        column, bounds = condition.this, [condition.args["low"], condition.args["high"]]
        fraction = BETWEEN_SELECTIVITY
    elif isinstance(condition, exp.In):
        column, bounds = condition.this, condition.expressions
        fraction = min(len(bounds) * EQUALITY_SELECTIVITY, 0.5)
    elif isinstance(condition, (exp.EQ, exp.Like, *RANGE_BOUNDS)):
        column, bounds = condition.this, [condition.expression]
        if not isinstance(column, exp.Column) and not isinstance(condition, exp.Like):  # 1 = x, 1 < x
            column, bounds = condition.expression, [condition.this]
        fraction = BOUND_SELECTIVITY if isinstance(condition, RANGE_BOUNDS) else EQUALITY_SELECTIVITY
    else:
        return None
    constant = bool(bounds) and not any(b.find(exp.Column) for b in bounds)
    return fraction if isinstance(column, exp.Column) and constant else None
