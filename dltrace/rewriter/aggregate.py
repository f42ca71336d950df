"""Rule: aggregation.  ``GROUP BY G HAVING C``: ``DL = DLUNION(V.DL)`` over the group's rows
(paper §3.3); a global aggregate is one group, with DL ∅ when it read no rows.

Each id term becomes a ``collect_set``, a native aggregate with map-side partial
aggregation, so it sits in the same SELECT as SUM, COUNT and the rest.

>>> from dltrace.rewriter import rewrite_sql, PAPER_SCHEMA
>>> print(rewrite_sql("SELECT s_id, SUM(num) AS n FROM sales GROUP BY s_id", PAPER_SCHEMA))
SELECT sales.s_id AS s_id, SUM(sales.num) AS n, SORT_ARRAY(COLLECT_SET(sales._dl_id)) AS DL FROM sales AS sales GROUP BY sales.s_id
"""

from __future__ import annotations

from sqlglot import exp
from sqlglot.optimizer.scope import Scope

from dltrace.rewriter.context import ROWS, RewriteContext, get_lineage, set_lineage


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


def aggregate(select: exp.Select, scope: Scope, context: RewriteContext) -> exp.Select:
    """Replace the rows' lineage by its DLUNION over each group."""
    if is_aggregate(select):
        rows = get_lineage(select, ROWS)
        set_lineage(select, ROWS, [context.representation.aggregate(term) for term in rows])
    return select
