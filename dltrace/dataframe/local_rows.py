"""Rows a DataFrame program writes itself: ``spark.createDataFrame`` of local data and
``spark.range``, as the ``VALUES`` list and ``range(...)`` of the same query in SQL.

They are rows of the program, not of a source, so they carry no ids (the rewriter's
``literal_rows``): a row joined to them keeps the lineage of its other sources.  The local
data travels in the plan as Arrow; each value becomes a SQL literal cast to its column's
type, so the query computes with the values and types the program gave Spark.
"""

from __future__ import annotations

import base64
import datetime as dt

from sqlglot import exp

from dltrace.dataframe.scope import Column, Frame, unique_name
from dltrace.errors import UnsupportedLineage


def local_rows(local, schema: list[tuple[str, str]], message, name: str) -> Frame:
    """``SELECT ... FROM VALUES (...), ... AS name(...)`` of a ``LocalRelation``'s rows;
    ``schema``: Spark's names and types of its columns; ``name``: an alias of the program's
    own (two lists of rows under one alias made sqlglot's merge of derived tables fail)."""
    import pyarrow as pa

    used: set[str] = set()
    columns = [Column(name, unique_name(name, used)) for name, _ in schema]
    table = pa.ipc.open_stream(local.data).read_all() if local.HasField("data") else None
    if table is None or table.num_rows == 0:  # no VALUES list is empty: one typed row, filtered out
        types = [exp.DataType.build(kind, dialect="spark") for _, kind in schema]
        query = exp.select(*[exp.alias_(exp.cast(exp.Null(), t), c.sql) for t, c in zip(types, columns)])
        return Frame(query.where(exp.false()), columns, message, types=[kind for _, kind in schema])
    types = [spark_type(field.type) for field in table.schema]
    rows = [exp.Tuple(expressions=[exp.cast(value_sql(value, field.type), kind)
                                   for value, field, kind in zip(row, table.schema, types)])
            for row in zip(*(table.column(i).to_pylist() for i in range(table.num_columns)))]
    alias = exp.TableAlias(this=exp.to_identifier(name),
                           columns=[exp.to_identifier(c.sql) for c in columns])
    query = exp.select(*[exp.column(c.sql, table=name) for c in columns]).from_(
        exp.Values(expressions=rows, alias=alias))
    return Frame(query, columns, message, types=[kind for _, kind in schema])


def range_rows(range_, message) -> Frame:
    """``SELECT id FROM range(start, end, step)``: ``spark.range``'s one column, ``id``."""
    start = range_.start if range_.HasField("start") else 0
    arguments = [exp.Literal.number(n) for n in (start, range_.end, range_.step)]
    table = exp.Table(this=exp.Anonymous(this="range", expressions=arguments),
                      alias=exp.TableAlias(this=exp.to_identifier("_range"), columns=[exp.to_identifier("id")]))
    return Frame(exp.select(exp.column("id", table="_range")).from_(table), [Column("id", "id")], message,
                 types=["bigint"])


def spark_type(arrow_type) -> exp.DataType:
    """The Spark SQL type of an Arrow type as PySpark sends local data."""
    import pyarrow as pa
    import pyarrow.types as t

    simple = [(t.is_boolean, "BOOLEAN"), (t.is_int8, "TINYINT"), (t.is_int16, "SMALLINT"), (t.is_int32, "INT"),
              (t.is_int64, "BIGINT"), (t.is_float32, "FLOAT"), (t.is_float64, "DOUBLE"), (t.is_string, "STRING"),
              (t.is_large_string, "STRING"), (t.is_binary, "BINARY"), (t.is_large_binary, "BINARY"),
              (t.is_date32, "DATE"), (t.is_null, "VOID")]
    for test, name in simple:
        if test(arrow_type):
            return exp.DataType.build(name, dialect="spark")
    if t.is_decimal(arrow_type):
        return exp.DataType.build(f"DECIMAL({arrow_type.precision}, {arrow_type.scale})", dialect="spark")
    if t.is_timestamp(arrow_type):
        return exp.DataType.build("TIMESTAMP" if arrow_type.tz else "TIMESTAMP_NTZ", dialect="spark")
    if t.is_list(arrow_type) or t.is_large_list(arrow_type):
        return exp.DataType(this=exp.DataType.Type.ARRAY, expressions=[spark_type(arrow_type.value_type)],
                            nested=True)
    if t.is_map(arrow_type):
        return exp.DataType(this=exp.DataType.Type.MAP, nested=True,
                            expressions=[spark_type(arrow_type.key_type), spark_type(arrow_type.item_type)])
    if t.is_struct(arrow_type):
        fields = [exp.ColumnDef(this=exp.to_identifier(f.name, quoted=True), kind=spark_type(f.type))
                  for f in (arrow_type.field(i) for i in range(arrow_type.num_fields))]
        return exp.DataType(this=exp.DataType.Type.STRUCT, expressions=fields, nested=True)
    raise UnsupportedLineage(f"DataFrame: createDataFrame of a column of Arrow type {arrow_type} "
                             f"({pa.__name__}) is not supported by dltrace")


def value_sql(value, arrow_type) -> exp.Expression:
    """One local value as SQL (its type comes from the cast around it)."""
    import pyarrow.types as t

    if value is None:
        return exp.Null()
    if isinstance(value, bool):
        return exp.true() if value else exp.false()
    if isinstance(value, int):
        return exp.Literal.number(value)
    if isinstance(value, (float, str)) or t.is_decimal(arrow_type):
        return exp.Literal.string(value if isinstance(value, str) else repr(value) if isinstance(value, float)
                                  else str(value))
    if isinstance(value, bytes):
        return exp.Anonymous(this="unbase64", expressions=[exp.Literal.string(base64.b64encode(value).decode())])
    if isinstance(value, dt.datetime):
        if value.tzinfo is not None:  # an instant: exactly its microseconds since the epoch
            micros = (value - dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)) // dt.timedelta(microseconds=1)
            return exp.Anonymous(this="timestamp_micros", expressions=[exp.Literal.number(micros)])
        return exp.Literal.string(value.isoformat(sep=" "))
    if isinstance(value, dt.date):
        return exp.Anonymous(this="date_from_unix_date", expressions=[
            exp.Literal.number((value - dt.date(1970, 1, 1)).days)])
    return nested_sql(value, arrow_type)


def nested_sql(value, arrow_type) -> exp.Expression:
    """An array, map or struct value, element by element."""
    import pyarrow.types as t

    if t.is_map(arrow_type):
        pairs = [part for key, item in value for part in (value_sql(key, arrow_type.key_type),
                                                          value_sql(item, arrow_type.item_type))]
        return exp.Anonymous(this="map", expressions=pairs)
    if t.is_struct(arrow_type):
        fields = [arrow_type.field(i) for i in range(arrow_type.num_fields)]
        return exp.Anonymous(this="named_struct", expressions=[
            part for f in fields for part in (exp.Literal.string(f.name), value_sql(value.get(f.name), f.type))])
    return exp.Anonymous(this="array", expressions=[value_sql(v, arrow_type.value_type) for v in value])
