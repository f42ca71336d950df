"""Rule: scalar subqueries in the SELECT list, and subqueries in HAVING (control semantics).

A scalar subquery in the SELECT list computes an output value, so its DLUNION is part of
the row's lineage under both semantics; a HAVING subquery decides which groups survive,
so it counts under control semantics.  Both apply to the rows after grouping.

>>> from dltrace.rewriter import rewrite_sql, PAPER_SCHEMA
>>> print(rewrite_sql("SELECT s_id, SUM(num) AS n FROM sales GROUP BY s_id HAVING SUM(num) > (SELECT AVG(num) FROM sales)", PAPER_SCHEMA))
SELECT __dlout.s_id, __dlout.n, (SELECT SORT_ARRAY(COLLECT_LIST(sales._dl_id)) AS __dl FROM sales AS sales) AS DL FROM (SELECT sales.s_id AS s_id, SUM(sales.num) AS n FROM sales AS sales GROUP BY sales.s_id HAVING SUM(sales.num) > (SELECT AVG(sales.num) AS _col_0 FROM sales AS sales)) AS __dlout
"""  # noqa: E501

from __future__ import annotations

from sqlglot import exp

from dltrace.rewriter.aggregate import is_aggregate
from dltrace.rewriter.context import RewriteContext
from dltrace.rewriter.subquery_copies import take_copies


def subquery_value(select: exp.Expression, context: RewriteContext) -> exp.Expression:
    """Add the lineage of HAVING and SELECT-list subqueries to each output row's lineage.

    When one of them reads exactly the rows the query groups (Q11: marked by
    ``uncorrelated_copies.mark_subsuming_copies``), its lineage holds every group's own and
    replaces it, so no row unions a large set with a part of itself.
    """
    if not isinstance(select, exp.Select):
        return select
    copies = take_copies(select, ("having", "expressions"))
    covering = any(context.lineage.of(copy).subsumes for copy in copies)
    terms = [t for copy in copies for t in context.lineage.of(copy).output]
    if is_aggregate(select):
        # a correlated one refers to grouping columns: the same set on all rows of a group
        terms = [context.representation.aggregate(t) for t in terms]
    if terms:
        lineage = context.lineage.of(select)
        lineage.rows = (*(() if covering else lineage.rows), *terms)
    return select
