"""Speed-up rule: a grouped lineage copy with HAVING collects ids only for the groups HAVING keeps.

Spark builds every group's id list before HAVING drops most groups (TPC-H Q18: 1.5M
orders' lists for 57 orders).  The copy's rows are restricted to group keys of the plain
query's result first: a surviving group keeps all its rows, so its aggregates, its HAVING
and its lineage are unchanged, and the others would be dropped anyway.  Keys are compared
null-safely (a NULL group is a group).  Only uncorrelated copies are grouped (a correlated
one with GROUP BY is refused).

>>> from dltrace.rewriter import rewrite_sql, without, PAPER_SCHEMA
>>> query = "SELECT s_name FROM store WHERE s_id IN (SELECT s_id FROM sales GROUP BY s_id HAVING SUM(num) > 3000)"
>>> print(rewrite_sql(query, PAPER_SCHEMA))
SELECT store.s_name AS s_name, CONCAT(ARRAY(store._dl_id), (SELECT SORT_ARRAY(FLATTEN(COLLECT_LIST(__dlq.__dl0))) AS __dl FROM (SELECT sales.s_id AS s_id, COLLECT_LIST(sales._dl_id) AS __dl0 FROM sales AS sales WHERE EXISTS(SELECT 1 FROM (SELECT sales.s_id AS k0 FROM sales AS sales GROUP BY sales.s_id HAVING SUM(sales.num) > 3000) AS __dlgroups WHERE __dlgroups.k0 IS NOT DISTINCT FROM sales.s_id) GROUP BY sales.s_id HAVING SUM(sales.num) > 3000) AS __dlq)) AS DL FROM store AS store WHERE store.s_id IN (SELECT sales.s_id AS s_id FROM sales AS sales GROUP BY sales.s_id HAVING SUM(sales.num) > 3000)
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
    matches = [
        exp.NullSafeEQ(this=exp.column(f"k{i}", table=GROUPS_ALIAS), expression=g.copy())
        for i, g in enumerate(group.expressions)
    ]
    survivors = (
        exp.select("1")
        .from_(exp.Subquery(this=keys, alias=exp.TableAlias(this=exp.to_identifier(GROUPS_ALIAS))))
        .where(exp.and_(*matches))
    )
    return query.where(exp.Exists(this=survivors), copy=False)
