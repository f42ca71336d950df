"""Rule: UNPIVOT.  Each output row comes from one input row (one per unpivoted column, NULL
values left out as Spark leaves them out unless ``INCLUDE NULLS``): its DL is that row's.

It is the generator Spark plans it as: a ``LATERAL VIEW`` of ``inline`` over one struct per
unpivoted column (its name, its values), which ``generator`` and ``join`` trace, and ``array``
widens the values to one type as UNPIVOT does.  Qualification has already made the UNPIVOT a
derived table ``(SELECT * FROM source UNPIVOT (...))``; its SELECT is rewritten in place.

>>> from dltrace.rewriter import rewrite_sql, PAPER_SCHEMA
>>> print(rewrite_sql("SELECT * FROM item UNPIVOT (v FOR k IN (i_name, category))", PAPER_SCHEMA))
SELECT item.i_id AS i_id, item.k AS k, item.v AS v, ARRAY(item.__dl0) AS DL FROM (SELECT item.i_id AS i_id, __dlu.k AS k, __dlu.v AS v, item._dl_id AS __dl0 FROM item AS item LATERAL VIEW INLINE(ARRAY(NAMED_STRUCT('k', 'i_name', 'v', item.i_name), NAMED_STRUCT('k', 'category', 'v', item.category))) __dlu AS k, v WHERE NOT __dlu.v IS NULL) AS item
"""  # noqa: E501

from __future__ import annotations

from sqlglot import exp

from dltrace.rewriter.clauses import replace_pivots, source_columns, without_pivots
from dltrace.rewriter.context import RewriteContext, unsupported

UNPIVOTED = "__dlu"  # the LATERAL VIEW's alias


def unpivot(expression: exp.Expression, context: RewriteContext) -> exp.Expression:
    """Write every ``source UNPIVOT (...) AS alias`` as ``(SELECT ... FROM source LATERAL VIEW
    inline(...)) AS alias``."""
    replace_pivots(expression, True, lambda source, node: _as_lateral_view(source, node, context))
    return expression


def _as_lateral_view(source: exp.Expression, pivot: exp.Pivot, context: RewriteContext) -> exp.Select:
    """The SELECT of the rows ``source UNPIVOT (pivot)`` has, over a LATERAL VIEW."""
    values = [v.name for e in pivot.expressions for v in (e.expressions if isinstance(e, exp.Tuple) else [e])]
    field = pivot.args["fields"][0]
    name, alias = field.this.name, source.alias_or_name
    groups = [(item.this if isinstance(item, exp.PivotAlias) else item, item) for item in field.expressions]
    columns = [list(g.expressions) if isinstance(g, exp.Tuple) else [g] for g, _ in groups]
    if any(len(cs) != len(values) or not all(isinstance(c, exp.Column) for c in cs) for cs in columns):
        raise unsupported(pivot, "UNPIVOT of other than columns")
    structs = [exp.Anonymous(this="named_struct", expressions=[
        exp.Literal.string(name), exp.Literal.string(_key(item, cs)),
        *[part for v, c in zip(values, cs) for part in (exp.Literal.string(v), exp.column(c.name, table=alias))]])
        for (_, item), cs in zip(groups, columns)]
    unpivoted = {c.name.lower() for cs in columns for c in cs}
    kept = [c for c in source_columns(source, context.schemas) if c.lower() not in unpivoted]
    lateral = exp.Lateral(this=exp.Inline(this=exp.Array(expressions=structs)), view=True,
                          alias=exp.TableAlias(this=exp.to_identifier(UNPIVOTED),
                                               columns=[exp.to_identifier(n) for n in (name, *values)]))
    plain = without_pivots(source)
    select = exp.select(*[exp.alias_(exp.column(c, table=alias), c) for c in kept],
                        *[exp.alias_(exp.column(n, table=UNPIVOTED), n) for n in (name, *values)]).from_(plain)
    select.append("laterals", lateral)
    if not pivot.args.get("include_nulls"):  # Spark leaves out the rows whose values are all NULL
        present = [exp.Not(this=exp.Is(this=exp.column(v, table=UNPIVOTED), expression=exp.Null())) for v in values]
        select.where(exp.or_(*present), copy=False)
    return select


def _key(item: exp.Expression, columns: list[exp.Column]) -> str:
    """The name column's value for one unpivoted column (or tuple): its alias, else Spark's
    name, the column names joined by ``_``."""
    if isinstance(item, exp.PivotAlias):
        return item.alias
    return "_".join(c.name for c in columns)
