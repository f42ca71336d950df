"""Rule: ``SELECT DISTINCT`` is ``GROUP BY`` all selected columns, so duplicates merged into
one output row give it the DLUNION of their lineages.

>>> from dltrace.rewriter import rewrite_sql, PAPER_SCHEMA
>>> print(rewrite_sql("SELECT DISTINCT s_name FROM store", PAPER_SCHEMA))
SELECT store.s_name AS s_name, SORT_ARRAY(COLLECT_LIST(store._dl_id)) AS DL FROM store AS store GROUP BY store.s_name
"""

from __future__ import annotations

from sqlglot import exp

from dltrace.rewriter.aggregate import is_aggregate
from dltrace.rewriter.context import RewriteContext, unsupported


def distinct(expression: exp.Expression, context: RewriteContext) -> exp.Expression:
    """Turn every ``SELECT DISTINCT`` of the tree into the equivalent GROUP BY."""
    for select in list(expression.find_all(exp.Select)):
        marker = select.args.get("distinct")
        if not marker:
            continue
        if marker.args.get("on"):
            raise unsupported(select, "DISTINCT ON")
        if is_aggregate(select):
            regrouped = _wrap_grouped(select)
            expression = regrouped if select is expression else expression
        else:
            select.set("distinct", None)
            select.set("group", exp.Group(expressions=[e.unalias().copy() for e in select.expressions]))
    return expression


def _wrap_grouped(select: exp.Select) -> exp.Select:
    """``SELECT DISTINCT aggregates ... GROUP BY``: group the grouped result once more (the
    new SELECT takes ``select``'s place in its tree; the caller takes it as the root)."""
    if select.args.get("order") or select.args.get("limit"):
        raise unsupported(select, "SELECT DISTINCT with aggregates and ORDER BY/LIMIT")
    inner = select.copy()
    inner.set("distinct", None)
    names = inner.named_selects
    outer = (
        exp.select(*[exp.column(name, table="_distinct") for name in names])
        .from_(inner.subquery("_distinct"))
        .group_by(*[exp.column(name, table="_distinct") for name in names])
    )
    select.replace(outer)
    return outer
