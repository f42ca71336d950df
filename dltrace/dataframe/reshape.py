"""DataFrame reshaping: ``unpivot`` (``melt``) and ``groupBy().pivot().agg()`` as the SQL the
rewriter traces.  ``unpivot`` is a LATERAL VIEW of ``inline`` over one struct per unpivoted
column: each output row comes from one input row, its lineage that row's (``Dataset.unpivot``
keeps NULL values, SQL's UNPIVOT leaves them out unless INCLUDE NULLS, so no row is
filtered).  ``pivot`` is a PIVOT (the rewriter's ``pivot``: a grouped aggregate whose data
lineage is the group's rows of pivoted values), its values and aggregates named ``_pJ`` and
``_aI`` in the SQL and given Spark's names as columns.
"""

from __future__ import annotations

from sqlglot import exp

from dltrace.dataframe.expressions import literal
from dltrace.dataframe.local_rows import spark_type, value_sql
from dltrace.dataframe.pivot_values import MAX_VALUES, distinct_values
from dltrace.dataframe.scope import Column, Frame, Scope
from dltrace.errors import UnsupportedLineage

PIVOTED = "_pivoted"  # the PIVOT's alias


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


def pivot_values(translator, aggregate) -> list[exp.Expression]:
    """The values a pivot without them pivots on, found as Spark finds them (``pivot_values``,
    at the pivot call); the query traced is the PIVOT of those values, the one Spark then runs."""
    table = translator.catalog.rows_of(distinct_values(aggregate.input, aggregate.pivot.col))
    if table.num_rows > MAX_VALUES:
        raise UnsupportedLineage(f"DataFrame: pivot of a column with more than {MAX_VALUES} values: Spark refuses it")
    kind = table.schema.field(0).type
    return [exp.cast(value_sql(value, kind), spark_type(kind)) for value in table.column(0).to_pylist()]


def grouping_alone(translator, scope, keys: list, message) -> Frame:
    """A pivot without values over no rows, as Spark plans it: the groups (none), in the
    grouping columns alone."""
    if not keys:
        raise UnsupportedLineage("DataFrame: groupBy().pivot(...) of no rows without values: Spark gives one row "
                                 "of no columns, which dltrace cannot save; give the pivot's values")
    inner = translator.select(scope, keys)
    source = translator.alias()
    columns = [exp.column(column.sql, table=source) for column in inner.columns]
    query = exp.select(*columns).from_(exp.Subquery(this=inner.query, alias=exp.TableAlias(
        this=exp.to_identifier(source)))).group_by(*[column.copy() for column in columns])
    return Frame(query, [Column(k.name, c.sql) for (_, k), c in zip(keys, inner.columns)], message)


def pivot_rows(translator, aggregate, message) -> Frame:
    """``groupBy(keys).pivot(col, values).agg(...)`` as the SQL PIVOT the rewriter traces:
    ``SELECT ... FROM (SELECT keys, col, the aggregates' columns FROM input) PIVOT (...)``,
    the inner SELECT holding exactly what Spark groups by, pivots and aggregates."""
    child = translator.relation(aggregate.input)
    scope = Scope(translator, [child])
    keys = [item for e in aggregate.grouping_expressions for item in scope.select_item(e)]
    values = [expression for e in aggregate.aggregate_expressions for expression, _ in scope.select_item(e)]
    pivoted = [literal(v) for v in aggregate.pivot.values] or pivot_values(translator, aggregate)
    if not pivoted:  # no rows to find values in: Spark's pivot is then the grouping alone
        return grouping_alone(translator, scope, keys, message)
    read = list({c.sql(): c for e in values for c in e.find_all(exp.Column) if c.table == scope.aliases[0]}.values())
    inner = translator.select(scope, keys + [(scope.expression(aggregate.pivot.col), Column(None, ""))]
                              + [(c, Column(None, "")) for c in read])
    source = translator.alias()
    moved = {c.sql(): exp.column(column.sql, table=source) for c, column in zip(read, inner.columns[len(keys) + 1:])}
    aggregates = [exp.alias_(e.transform(lambda n: moved.get(n.sql(), n).copy() if isinstance(n, exp.Column) else n),
                             f"_a{i}") for i, e in enumerate(values)]
    cells = [f"_p{j}" if len(values) == 1 else f"_p{j}__a{i}" for j in range(len(pivoted)) for i in range(len(values))]
    node = exp.Pivot(expressions=aggregates, alias=exp.TableAlias(this=exp.to_identifier(PIVOTED)), fields=[
        exp.In(this=exp.column(inner.columns[len(keys)].sql),
               expressions=[exp.PivotAlias(this=v, alias=exp.to_identifier(f"_p{j}")) for j, v in enumerate(pivoted)])])
    names = [name for name, _ in translator.catalog.schema_of(message)]
    columns = [Column(k.name, c.sql) for (_, k), c in zip(keys, inner.columns)] + [
        Column(name, sql) for name, sql in zip(names[len(keys):], cells)]
    query = exp.select(*[exp.column(c.sql, table=PIVOTED) for c in columns]).from_(
        exp.Subquery(this=inner.query, alias=exp.TableAlias(this=exp.to_identifier(source)), pivots=[node]))
    return Frame(query, columns, message)
