"""Speed-up rule: a SELECT that only filters and projects the groups of a grouped derived table
is that derived table, its filter a HAVING.

A DataFrame program writes HAVING as a filter of an aggregate (TPC-H Q18:
``lineitem.groupBy(...).agg(sum(...).alias("q")).filter(col("q") > 300)``), which Spark
translates to ``SELECT ... FROM (SELECT k, SUM(x) AS q FROM t GROUP BY k) AS d WHERE d.q >
300``.  The rows are those of ``SELECT k FROM t GROUP BY k HAVING SUM(x) > 300``, and so is
their lineage (a group's rows, and under control semantics the filter's, which has no
subquery here), but only the HAVING form is one ``surviving_groups`` reads: its lineage copy
collects ids for the groups the filter keeps, not for every group (Q18 at SF 1: 1.5M orders'
lists for 57 orders).  The merge writes each column of the derived table the SELECT reads as
the expression that computes it.

It applies to a SELECT of only a list (no aggregate: that is one row over all the groups), a
FROM of one derived table and a WHERE without subqueries, whose list reads the derived
table's columns, over a derived table that groups by plain keys (no grouping sets),
deterministic, without DISTINCT, windows, ORDER BY, LIMIT or LATERAL VIEW.

>>> from dltrace.rewriter import rewrite_sql, only, PAPER_SCHEMA
>>> print(rewrite_sql("SELECT d.s_id FROM (SELECT s_id, SUM(num) AS n FROM sales GROUP BY s_id) d WHERE d.n > 3000",
...                   PAPER_SCHEMA, rules=only("qualify", "merge_filtered_groups")))
SELECT sales.s_id AS s_id FROM sales AS sales GROUP BY sales.s_id HAVING SUM(sales.num) > 3000
"""

from __future__ import annotations

from sqlglot import exp

from dltrace.rewriter.context import RewriteContext
from dltrace.rewriter.exists_join import nondeterministic

OUTER_PARTS = ("expressions", "from_", "where")
INNER_PARTS = ("expressions", "from_", "joins", "where", "group", "having")


def merge_filtered_groups(expression: exp.Expression, context: RewriteContext) -> exp.Expression:
    """Merge each SELECT that only filters a grouped derived table into it (see the module
    docstring); innermost first, until none is left."""
    merged = True
    while merged:
        merged = False
        for select in reversed(list(expression.find_all(exp.Select))):
            if _filters_groups(select):
                replacement = _merged(select)
                if select is expression:
                    return merge_filtered_groups(replacement, context)
                select.replace(replacement)
                merged = True
                break
    return expression


def _filters_groups(select: exp.Select) -> bool:
    if any(v for k, v in select.args.items() if k not in OUTER_PARTS and v) or not select.args.get("where"):
        return False
    source = select.args["from_"].this if select.args.get("from_") else None
    if not isinstance(source, exp.Subquery) or not isinstance(source.this, exp.Select):
        return False
    inner, name = source.this, source.alias_or_name
    group = inner.args.get("group")
    if any(v for k, v in inner.args.items() if k not in INNER_PARTS and v) or group is None or not group.expressions:
        return False
    if any(group.args.get(kind) for kind in ("rollup", "cube", "grouping_sets")) or nondeterministic(inner):
        return False
    if group.find(exp.Rollup, exp.Cube, exp.GroupingSets):
        return False
    if any(e.find(exp.Window) or e.is_star for e in inner.expressions):
        return False
    names = [e.alias_or_name.lower() for e in inner.expressions]
    if len(set(names)) != len(names):
        return False
    outer_parts = [*select.expressions, select.args["where"]]
    if any(part.find(exp.Select) for part in outer_parts) or any(e.is_star for e in select.expressions):
        return False
    if any(e.find(exp.AggFunc) for e in select.expressions):  # an aggregate of the groups: one row of them all
        return False
    return all(c.table == name and c.name.lower() in names for part in outer_parts for c in part.find_all(exp.Column))


def _merged(select: exp.Select) -> exp.Select:
    """The derived table's SELECT with the outer list as its list and the outer WHERE ANDed to
    its HAVING, each derived column written as the expression that computes it."""
    inner = select.args["from_"].this.this.copy()
    computed = {e.alias_or_name.lower(): e.unalias() for e in inner.expressions}

    def spelled(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Column):
            return computed[node.name.lower()].copy()
        return node

    inner.set("expressions", [exp.alias_(e.unalias().copy().transform(spelled), e.alias_or_name)
                              for e in select.expressions])
    condition = select.args["where"].this.copy().transform(spelled)
    having = inner.args.get("having")
    inner.set("having", exp.Having(this=exp.and_(having.this, condition) if having else condition))
    return inner
