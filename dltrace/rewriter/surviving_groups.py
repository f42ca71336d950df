"""Speed-up rule: a grouped lineage copy with HAVING collects ids only for the groups HAVING keeps.

Spark builds every group's id list before HAVING drops most groups (TPC-H Q18: 1.5M
orders' lists for 57 orders).  The copy's rows are restricted to group keys of the plain
query's result first: a surviving group keeps all its rows, so its aggregates, its HAVING
and its lineage are unchanged, and the others would be dropped anyway.  A NULL key is a
group too.  Only uncorrelated copies are grouped (a correlated one with GROUP BY is refused).

A copy that reads one table and groups it by its columns reads it as two branches: rows
whose keys are all present, matched to the surviving keys by ``=``, and rows with a NULL
key, kept whole (the copy's HAVING decides their group).  Matched by ``=``, Spark shuffles
the table by the key columns exactly as a query that joins the table on them does, and
runs that shuffle once for both (Q18: the outer query joins lineitem on ``l_orderkey``;
compared null-safely, the copy shuffled lineitem's 6M rows a second time).  Other copies
match keys null-safely in one ``EXISTS``.

>>> from dltrace.rewriter import rewrite_sql, without, PAPER_SCHEMA
>>> query = "SELECT s_name FROM store WHERE s_id IN (SELECT s_id FROM sales GROUP BY s_id HAVING SUM(num) > 3000)"
>>> print(rewrite_sql(query, PAPER_SCHEMA))
SELECT store.s_name AS s_name, CONCAT(ARRAY(store._dl_id), (SELECT SORT_ARRAY(FLATTEN(COLLECT_LIST(__dlq.__dl0))) AS __dl FROM (SELECT sales.s_id AS s_id, COLLECT_LIST(sales._dl_id) AS __dl0 FROM (SELECT sales.s_id, sales.num, sales._dl_id FROM sales AS sales WHERE NOT sales.s_id IS NULL AND EXISTS(SELECT 1 FROM (SELECT sales.s_id AS k0 FROM sales AS sales GROUP BY sales.s_id HAVING SUM(sales.num) > 3000) AS __dlgroups WHERE __dlgroups.k0 = sales.s_id) UNION ALL SELECT sales.s_id, sales.num, sales._dl_id FROM sales AS sales WHERE sales.s_id IS NULL) AS sales GROUP BY sales.s_id HAVING SUM(sales.num) > 3000) AS __dlq)) AS DL FROM store AS store WHERE store.s_id IN (SELECT sales.s_id AS s_id FROM sales AS sales GROUP BY sales.s_id HAVING SUM(sales.num) > 3000)
>>> print(rewrite_sql(query, PAPER_SCHEMA, rules=without("surviving_groups")))
SELECT store.s_name AS s_name, CONCAT(ARRAY(store._dl_id), (SELECT SORT_ARRAY(FLATTEN(COLLECT_LIST(__dlq.__dl0))) AS __dl FROM (SELECT sales.s_id AS s_id, COLLECT_LIST(sales._dl_id) AS __dl0 FROM sales AS sales GROUP BY sales.s_id HAVING SUM(sales.num) > 3000) AS __dlq)) AS DL FROM store AS store WHERE store.s_id IN (SELECT sales.s_id AS s_id FROM sales AS sales GROUP BY sales.s_id HAVING SUM(sales.num) > 3000)
"""  # noqa: E501

from __future__ import annotations

from sqlglot import exp

from dltrace.rewriter.context import RewriteContext
from dltrace.rewriter.subquery_copies import is_lineage_copy

GROUPS_ALIAS = "__dlgroups"


def surviving_groups(query: exp.Expression, context: RewriteContext) -> exp.Expression:
    """Restrict an uncorrelated grouped copy with HAVING to the groups that survive it."""
    if not is_lineage_copy(query) or not context.lineage.of(query).output or context.scope.is_correlated_subquery:
        return query
    if not isinstance(query, exp.Select) or not query.args.get("having") or query.args.get("limit"):
        return query
    group = query.args.get("group")
    if group is None or not group.expressions or any(query.find_all(exp.Window)):
        return query
    keys = query.copy()
    keys.set("expressions", [exp.alias_(g.copy(), f"k{i}") for i, g in enumerate(group.expressions)])
    keys.set("order", None)
    table = _only_table(query)
    if table is None:
        return query.where(_survivors(keys, group.expressions, exp.NullSafeEQ), copy=False)
    missing = [exp.Is(this=g.copy(), expression=exp.Null()) for g in group.expressions]
    present = [exp.Not(this=m.copy()) for m in missing]
    branches = [
        _rows_of(table, query, exp.and_(*present, _survivors(keys, group.expressions, exp.EQ)), context),
        _rows_of(table, query, exp.or_(*missing), context),
    ]
    union = exp.union(*branches, distinct=False)
    query.set("from_", exp.From(this=exp.Subquery(this=union, alias=exp.TableAlias(this=exp.to_identifier(
        table.alias_or_name)))))
    return query


def _survivors(keys: exp.Select, group: list[exp.Expression], match: type[exp.Binary]) -> exp.Exists:
    """``EXISTS`` a surviving group whose keys ``match`` the row's."""
    matches = [match(this=exp.column(f"k{i}", table=GROUPS_ALIAS), expression=g.copy()) for i, g in enumerate(group)]
    return exp.Exists(
        this=exp.select("1")
        .from_(exp.Subquery(this=keys, alias=exp.TableAlias(this=exp.to_identifier(GROUPS_ALIAS))))
        .where(exp.and_(*matches))
    )


def _only_table(query: exp.Select) -> exp.Table | None:
    """The table ``query`` reads alone, without joins or nested queries, when it groups by
    columns of that table (else None)."""
    source = query.args.get("from_")
    table = source.this if source is not None else None
    if not isinstance(table, exp.Table) or query.args.get("joins") or any(
        node is not query for node in query.find_all(exp.Select)
    ):
        return None
    alias = table.alias_or_name
    group = query.args["group"].expressions
    return table if all(isinstance(g, exp.Column) and g.table == alias for g in group) else None


def _rows_of(table: exp.Table, query: exp.Select, condition: exp.Expression, context: RewriteContext) -> exp.Select:
    """``table``'s rows meeting ``condition``, with the columns ``query`` reads of it in the
    table's order (the order Spark's scan gives them, so that its shuffle is the same plan
    as another query's), the row id and other lineage columns after them."""
    alias = table.alias_or_name
    read = {column.name for column in query.find_all(exp.Column) if column.table == alias}
    order = list(context.schemas.get(table.name.lower(), {}))
    names = [name for name in order if name in read] + sorted(read - set(order))
    return exp.select(*(exp.column(name, table=alias) for name in names)).from_(table.copy()).where(condition)
