"""Speed-up rule: a lineage copy over all the rows of a grouped CTE collects its ids from the
rows the CTE groups.

The lineage of a group is the DLUNION of its rows' lineage, so the DLUNION over every group of
a CTE without HAVING is the DLUNION over every row it groups.  A copy that reads all of such
a CTE (TPC-H Q15's ``(SELECT MAX(total_revenue) FROM revenue0)``: every supplier's revenue)
then reads those rows instead: Spark collects their ids once, instead of collecting them per
group and flattening the groups' lists (TPC-H Q15 is faster with the rule: docs/performance.md, "Measurements behind design choices").
Its SELECT list becomes ``COUNT(*)``: a copy keeps only its rows' lineage.

>>> from dltrace.rewriter import rewrite_sql, only, PAPER_SCHEMA
>>> print(rewrite_sql("WITH t AS (SELECT s_id, SUM(num) AS n FROM sales WHERE price > 10 GROUP BY s_id) "
...                   "SELECT s_id FROM t WHERE n = (SELECT MAX(n) FROM t)", PAPER_SCHEMA,
...                   rules=only("qualify", "subquery_copies", "ungrouped_copies")))
WITH t AS (SELECT sales.s_id AS s_id, SUM(sales.num) AS n FROM sales AS sales WHERE sales.price > 10 GROUP BY sales.s_id) SELECT t.s_id AS s_id, (SELECT COUNT(*) AS __dlrows FROM (SELECT 1 AS __dlrow FROM sales AS sales WHERE sales.price > 10) AS t) AS __dlq0 FROM t AS t WHERE t.n = (SELECT MAX(t.n) AS _col_0 FROM t AS t)
"""  # noqa: E501

from __future__ import annotations

from sqlglot import exp

from dltrace.rewriter.context import RewriteContext
from dltrace.rewriter.subquery_copies import is_lineage_copy

# what a copy or a CTE may hold besides a SELECT list and FROM for the rule to apply
COPY_PARTS = ("expressions", "from_")
CTE_PARTS = ("expressions", "from_", "joins", "where", "group")


def ungrouped_copies(expression: exp.Expression, context: RewriteContext) -> exp.Expression:
    """Point each copy that reads all of a grouped CTE at the rows the CTE groups."""
    with_ = expression.args.get("with_")
    if with_ is None:
        return expression
    bodies = {cte.alias_or_name.lower(): cte.this for cte in with_.expressions}
    for copy in list(expression.find_all(exp.Select)):
        if not is_lineage_copy(copy) or any(v for k, v in copy.args.items() if k not in COPY_PARTS):
            continue
        if copy.args.get("from_") is None:
            continue  # a copy of a SELECT without FROM reads no rows
        source = copy.args["from_"].this
        body = bodies.get(source.name.lower()) if isinstance(source, exp.Table) and not source.args.get("db") else None
        if body is None or not _groups_all_its_rows(body):
            continue
        alias = source.alias_or_name
        if any(column.table != alias for column in copy.find_all(exp.Column)):
            continue  # correlated: it reads an enclosing query's columns
        rows = exp.select(exp.alias_(exp.Literal.number(1), "__dlrow"))
        rows.set("from_", body.args["from_"].copy())
        rows.set("joins", [join.copy() for join in body.args.get("joins") or []] or None)
        if body.args.get("where"):
            rows.set("where", body.args["where"].copy())
        copy.set("from_", exp.From(this=exp.Subquery(this=rows, alias=exp.TableAlias(this=exp.to_identifier(alias)))))
        copy.set("expressions", [exp.alias_(exp.Count(this=exp.Star()), "__dlrows")])
    return expression


def _groups_all_its_rows(body: exp.Expression) -> bool:
    """A SELECT with a plain GROUP BY and nothing that drops or adds rows or lineage after its
    FROM and WHERE: no HAVING, DISTINCT, LIMIT, window, subquery or grouping sets."""
    if not isinstance(body, exp.Select) or not body.args.get("group"):
        return False
    if any(v for k, v in body.args.items() if k not in CTE_PARTS):
        return False
    if body.find(exp.Window, exp.Rollup, exp.Cube, exp.GroupingSets):
        return False
    return not any(select is not body for select in body.find_all(exp.Select))
