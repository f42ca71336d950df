"""Rule: ``LEFT SEMI JOIN`` and ``LEFT ANTI JOIN`` are EXISTS and NOT EXISTS (docs/semantics.md).

They are rewritten into the equivalent subqueries, whose lineage rules apply: under data
semantics the right side contributes nothing, under control semantics a row gains the
lineage of the right rows it matched.  Spark plans the subqueries as the same joins.

>>> from dltrace.rewriter import rewrite_sql, PAPER_SCHEMA
>>> print(rewrite_sql("SELECT d.s_name FROM store d LEFT SEMI JOIN sales s ON s.s_id = d.s_id AND s.num > 2000", PAPER_SCHEMA, semantics="data"))
SELECT d.s_name AS s_name, ARRAY(d._dl_id) AS DL FROM store AS d WHERE EXISTS(SELECT 1 FROM sales AS s WHERE s.s_id = d.s_id AND s.num > 2000)
"""  # noqa: E501

from __future__ import annotations

from sqlglot import exp

from dltrace.rewriter.context import RewriteContext, unsupported


def semi_anti_join(expression: exp.Expression, context: RewriteContext) -> exp.Expression:
    """Replace semi and anti joins by EXISTS / NOT EXISTS conditions, innermost first: a join's
    right side is copied into its EXISTS, so the joins inside it must be rewritten before."""
    for select in reversed(list(expression.find_all(exp.Select))):
        joins = list(select.args.get("joins") or [])
        for i, join in enumerate(joins):
            kind = join.kind.upper()
            if kind not in ("SEMI", "ANTI"):
                continue
            if any(later.side.upper() in ("RIGHT", "FULL") for later in joins[i + 1:]):
                # as a WHERE condition it would filter the outer join's padded rows too
                raise unsupported(join, f"{kind} JOIN before a RIGHT or FULL JOIN")
            condition = join.args.get("on")
            if condition is None:
                raise unsupported(join, f"{kind} JOIN without ON")
            exists = exp.Exists(this=exp.select("1").from_(join.this.copy()).where(condition.copy()))
            join.pop()
            select.where(exp.Not(this=exists) if kind == "ANTI" else exists, copy=False)
    return expression
