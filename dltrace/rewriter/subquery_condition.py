"""Rule: subqueries in WHERE (IN, NOT IN, EXISTS, NOT EXISTS, scalar comparisons).

Control semantics (the default): a row's DL is unioned with the DLUNION of the subquery's
result rows (for a correlated subquery, its result for that row).  The lineage copy made by
``subquery_copies`` joins the rows' lineage before any grouping; an uncorrelated one is the
same set on every row, so grouping leaves it alone instead of collecting it per row.

>>> from dltrace.rewriter import rewrite_sql, without, PAPER_SCHEMA
>>> print(rewrite_sql("SELECT s_name FROM store d WHERE EXISTS (SELECT 1 FROM sales s WHERE s.s_id = d.s_id AND s.num > 2000)", PAPER_SCHEMA,
...                   rules=without("exists_join")))
SELECT d.s_name AS s_name, CONCAT(ARRAY(d._dl_id), SORT_ARRAY(COALESCE((SELECT COLLECT_LIST(s._dl_id) AS __dl FROM sales AS s WHERE s.s_id = d.s_id AND s.num > 2000), SLICE(ARRAY(CAST(0 AS BIGINT)), 1, 0)))) AS DL FROM store AS d WHERE EXISTS(SELECT 1 AS `1` FROM sales AS s WHERE s.s_id = d.s_id AND s.num > 2000)
"""  # noqa: E501

from __future__ import annotations

from sqlglot import exp

from dltrace.rewriter.context import RewriteContext
from dltrace.rewriter.subquery_copies import take_copies


def subquery_condition(select: exp.Expression, context: RewriteContext) -> exp.Expression:
    """Add the lineage of WHERE subqueries to each row's lineage."""
    if not isinstance(select, exp.Select):
        return select
    terms = [t for copy in take_copies(select, ("where",)) for t in context.lineage.of(copy).output]
    if terms:
        lineage = context.lineage.of(select)
        lineage.rows = (*lineage.rows, *terms)
    return select
