"""Speed-up rule: a lineage copy correlated through one ``inner <> outer`` becomes the
difference of two copies correlated by equalities only.

Spark decorrelates a non-equality correlation with a domain join: the distinct outer values
crossed with the whole inner input (TPC-H Q21: every lineitem row times each supplier key,
billions of pairs).  For a non-NULL outer value ``o``, the rows with ``r.c <> o`` are those
with ``r.c IS NOT NULL`` minus those with ``r.c = o``; for a NULL one there are none.  Both
sides decorrelate into an aggregate joined back by key.

>>> from dltrace.rewriter import rewrite_sql, without, PAPER_SCHEMA
>>> print(rewrite_sql("SELECT t_id FROM sales s1 WHERE EXISTS "
...                   "(SELECT 1 FROM sales s2 WHERE s2.s_id = s1.s_id AND s2.i_id <> s1.i_id)", PAPER_SCHEMA,
...                   rules=without("exists_join")))
SELECT s1.t_id AS t_id, SORT_ARRAY(ARRAY_DISTINCT(CONCAT(ARRAY(s1._dl_id), COALESCE(CASE WHEN s1.i_id IS NULL THEN SLICE(ARRAY(CAST(0 AS BIGINT)), 1, 0) ELSE ARRAY_EXCEPT((SELECT COLLECT_LIST(s2._dl_id) AS __dl FROM sales AS s2 WHERE s2.s_id = s1.s_id AND NOT s2.i_id IS NULL), (SELECT COLLECT_LIST(s2._dl_id) AS __dl FROM sales AS s2 WHERE s2.s_id = s1.s_id AND s2.i_id = s1.i_id)) END, SLICE(ARRAY(CAST(0 AS BIGINT)), 1, 0))))) AS DL FROM sales AS s1 WHERE EXISTS(SELECT 1 AS `1` FROM sales AS s2 WHERE s2.s_id = s1.s_id AND s2.i_id <> s1.i_id)
"""  # noqa: E501

from __future__ import annotations

from sqlglot import exp

from dltrace.rewriter.clauses import conjuncts, correlation
from dltrace.rewriter.context import RewriteContext
from dltrace.rewriter.representation import SET, call, empty_id_array
from dltrace.rewriter.subquery_copies import is_lineage_copy
from dltrace.rewriter.terms import Term


def inequality_split(query: exp.Expression, context: RewriteContext) -> exp.Expression:
    """Replace the lineage of a copy (already the DLUNION of its rows) correlated through one
    ``<>`` and otherwise by equalities only by the difference of two copies."""
    scope = context.scope
    lineage = context.lineage.of(query)
    if not is_lineage_copy(query) or not lineage.output or not scope.is_correlated_subquery:
        return query
    where = query.args.get("where")
    if where is None:
        return query
    parts = conjuncts(where)
    pairs = {id(c): correlation(c, scope) for c in parts}
    inequalities = [c for c in parts if isinstance(c, exp.NEQ) and pairs[id(c)]]
    if len(inequalities) != 1:
        return query
    outer_columns = {id(c) for c in scope.external_columns}
    for conjunct in parts:
        equality = isinstance(conjunct, exp.EQ) and pairs[id(conjunct)]
        reads_outer = any(id(c) in outer_columns for c in conjunct.find_all(exp.Column))
        if reads_outer and conjunct is not inequalities[0] and not equality:
            return query
    inner, outer = pairs[id(inequalities[0])]

    def replacing_inequality(condition: exp.Expression) -> exp.Select:
        variant = query.copy()
        variant.set(
            "where", exp.Where(this=exp.and_(*(condition if c is inequalities[0] else c.copy() for c in parts)))
        )
        return variant

    non_null = replacing_inequality(exp.Not(this=exp.Is(this=inner.copy(), expression=exp.Null())))
    equal = replacing_inequality(exp.EQ(this=inner.copy(), expression=outer.copy()))
    difference = call("array_except", exp.Subquery(this=non_null), exp.Subquery(this=equal))
    split = exp.Case(
        ifs=[exp.If(this=exp.Is(this=outer.copy(), expression=exp.Null()), true=empty_id_array())], default=difference
    )
    lineage.output = (Term(split, SET.set_kind, lineage.output[0].tables, nullable=True),)
    return query
