"""Rule: scalar subqueries in the SELECT list, and subqueries in HAVING (control semantics).

A scalar subquery in the SELECT list computes an output value, so its DLUNION is part of
the row's lineage under both semantics; a HAVING subquery decides which groups survive,
so it counts under control semantics.  Both apply to the rows after grouping.

>>> from dltrace.rewriter import rewrite_sql, PAPER_SCHEMA
>>> print(rewrite_sql("SELECT s_id, SUM(num) AS n FROM sales GROUP BY s_id HAVING SUM(num) > (SELECT AVG(num) FROM sales)", PAPER_SCHEMA))
SELECT __dlout.s_id, __dlout.n, SORT_ARRAY((SELECT SORT_ARRAY(COLLECT_LIST(sales._dl_id)) AS __dl FROM sales AS sales)) AS DL FROM (SELECT sales.s_id AS s_id, SUM(sales.num) AS n FROM sales AS sales GROUP BY sales.s_id HAVING SUM(sales.num) > (SELECT AVG(sales.num) AS _col_0 FROM sales AS sales)) AS __dlout
"""  # noqa: E501

from __future__ import annotations

from sqlglot import exp

from dltrace.rewriter.aggregate import is_aggregate
from dltrace.rewriter.context import RewriteContext
from dltrace.rewriter.subquery_copies import lineage_term, placeholders, reads_same_rows


def subquery_value(select: exp.Expression, context: RewriteContext) -> exp.Expression:
    """Add the lineage of HAVING and SELECT-list subqueries to each output row's lineage.

    When one of them reads exactly the rows the query groups (Q11), its lineage holds every
    group's own and replaces it, so no row unions a large set with a part of itself.  With
    occurrence-tagged ids (the tree definition) the two differ and both are kept.
    """
    if not isinstance(select, exp.Select):
        return select
    copies = placeholders(select, ("having", "expressions"))
    covering = context.id_source is None and any(reads_same_rows(p.this.this, select) for p in copies)
    terms = [t for p in copies if (t := lineage_term(p, context))]
    if is_aggregate(select):
        # a correlated one refers to grouping columns: the same set on all rows of a group
        terms = [context.representation.aggregate(t) for t in terms]
    if terms:
        lineage = context.lineage.of(select)
        lineage.rows = (*(() if covering else lineage.rows), *terms)
    return select
