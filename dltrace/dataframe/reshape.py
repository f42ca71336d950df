"""DataFrame reshaping: ``unpivot`` (``melt``) as the SQL UNPIVOT the rewriter traces, a
LATERAL VIEW of ``inline`` over one struct per unpivoted column.  Each output row comes from
one input row, its lineage that row's.  ``Dataset.unpivot`` keeps NULL values (SQL's
UNPIVOT leaves them out unless INCLUDE NULLS), so no row is filtered.
"""

from __future__ import annotations

from sqlglot import exp

from dltrace.dataframe.scope import Column, Frame, Scope
from dltrace.errors import UnsupportedLineage


def unpivot_rows(translator, unpivot) -> Frame:
    """``SELECT ids, name, value FROM input LATERAL VIEW inline(array(named_struct(...)))``
    (``translator``: a ``plan.PlanTranslator``)."""
    child = translator.relation(unpivot.input)
    translator.name_all(child)
    scope = Scope(translator, [child])
    ids = [item for e in unpivot.ids for item in scope.select_item(e)]
    if unpivot.HasField("values"):
        values = [item for e in unpivot.values.values for item in scope.select_item(e)]
    else:  # every column but the ids
        kept = [ref for ref, _ in ids]
        values = [(ref, column) for ref, column in scope.all() if ref not in kept]
    if any(column.name is None for _, column in values):
        raise UnsupportedLineage("DataFrame: unpivot of an unnamed expression is not supported by dltrace: "
                                 "name it with .alias()")
    structs = [exp.Anonymous(this="named_struct", expressions=[
        exp.Literal.string("n"), exp.Literal.string(column.name), exp.Literal.string("v"), ref])
        for ref, column in values]
    alias = translator.alias()
    lateral = exp.Lateral(this=exp.Inline(this=exp.Array(expressions=structs)), view=True,
                          alias=exp.TableAlias(this=exp.to_identifier(alias),
                                               columns=[exp.to_identifier("_n"), exp.to_identifier("_v")]))
    made = [(exp.column("_n", table=alias), Column(unpivot.variable_column_name, "")),
            (exp.column("_v", table=alias), Column(unpivot.value_column_name, ""))]
    frame = translator.select(scope, ids + made)
    frame.query.set("laterals", [lateral])
    return frame
