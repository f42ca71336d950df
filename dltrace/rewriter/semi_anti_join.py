"""Rule: ``LEFT SEMI JOIN`` and ``LEFT ANTI JOIN`` are EXISTS and NOT EXISTS (docs/semantics.md).

They are rewritten into the equivalent subqueries, whose lineage rules apply: under data
semantics the right side contributes nothing, under control semantics a row gains the
lineage of the right rows it matched.  Spark plans the subqueries as the same joins.

A NOT EXISTS adds no lineage under either semantics, so once the lineage is written the
rule ``anti_join_restored`` gives Spark back the ANTI JOIN the query was written with:
Spark 4's analyzer fails on some NOT EXISTS forms of a join (one whose table is read again
under a HAVING elsewhere in the query: ``MISSING_ATTRIBUTES``) that it takes as joins.

>>> from dltrace.rewriter import rewrite_sql, PAPER_SCHEMA
>>> print(rewrite_sql("SELECT d.s_name FROM store d LEFT SEMI JOIN sales s ON s.s_id = d.s_id AND s.num > 2000", PAPER_SCHEMA, semantics="data"))
SELECT d.s_name AS s_name, ARRAY(d._dl_id) AS DL FROM store AS d WHERE EXISTS(SELECT 1 FROM sales AS s WHERE s.s_id = d.s_id AND s.num > 2000)
"""  # noqa: E501

from __future__ import annotations

from sqlglot import exp

from dltrace.rewriter.context import RewriteContext, unsupported

FROM_ANTI_JOIN = "dltrace_anti_join"  # meta of a NOT EXISTS made from a LEFT ANTI JOIN


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
            if kind == "ANTI":
                exists = exp.Not(this=exists)
                exists.meta[FROM_ANTI_JOIN] = True
            select.where(exists, copy=False)
    return expression


def anti_join_restored(expression: exp.Expression, context: RewriteContext) -> exp.Expression:
    """Write each NOT EXISTS made from an ANTI JOIN, still a conjunct of its SELECT's WHERE,
    back as the last join of that SELECT: a filter of each row either way, as WHERE is
    applied after every join (the rewrite's lineage joins included).

    >>> from dltrace.rewriter import rewrite_sql, PAPER_SCHEMA
    >>> print(rewrite_sql("SELECT d.s_name FROM store d LEFT ANTI JOIN sales s ON s.s_id = d.s_id", PAPER_SCHEMA))
    SELECT d.s_name AS s_name, ARRAY(d._dl_id) AS DL FROM store AS d LEFT ANTI JOIN sales AS s ON s.s_id = d.s_id
    """
    for condition in list(expression.find_all(exp.Not)):
        inner = condition.this.this
        if not condition.meta.get(FROM_ANTI_JOIN) or not isinstance(inner, exp.Select):
            continue
        conjunct = condition
        while isinstance(conjunct.parent, exp.Paren):
            conjunct = conjunct.parent
        where = conjunct.parent
        while isinstance(where, (exp.And, exp.Paren)):
            where = where.parent
        plain = inner.args.get("where") and not inner.args.get("joins") and not any(
            inner.args.get(part) for part in ("group", "having", "qualify", "order", "limit", "with_"))
        if not isinstance(where, exp.Where) or not isinstance(where.parent, exp.Select) or not plain:
            continue
        select = where.parent
        on, right = inner.args["where"].this.pop(), inner.args["from_"].this.pop()
        if conjunct.parent is where:
            where.pop()
        else:
            pair = conjunct.parent
            pair.replace(pair.right if conjunct is pair.left else pair.left)
        select.append("joins", exp.Join(this=right, on=on, side="LEFT", kind="ANTI"))
    return expression
