"""Tables of the Spark session's catalog as sources (``dltrace register NAME --table [db.]t``):
a table whose files are Parquet, CSV, JSON or ORC is registered from its location like a path
(Parquet in place, dltrace/registration.py), a Delta table from its log (dltrace/delta.py),
any other table (a view, a Hive SerDe table, a temporary table) copied from ``spark.table``.
The entry keeps the table's name (``spark_table``) besides its location (``source``).
"""

from __future__ import annotations

import hashlib
import json
import time

from dltrace.catalog import NAME_PATTERN, Catalog, TableEntry
from dltrace.errors import BadInput
from dltrace.registration import FORMATS, Registration, _checked_frame, _copied, _next_version, register
from dltrace.table_data import spark_uri_key


def describe(spark, table: str) -> dict[str, str]:
    """``DESCRIBE TABLE EXTENDED``'s details of ``table`` (``Location``, ``Provider``, ``Type``,
    and ``# Partition Information`` when partitioned); one line when there is no such table."""
    from pyspark.errors import AnalysisException, ParseException

    try:
        rows = spark.sql(f"DESCRIBE TABLE EXTENDED {table}").collect()
    except (AnalysisException, ParseException) as error:
        first = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise BadInput(f"--table {table}: not a table of the Spark session's catalog ({first})") from None
    return {row[0].strip(): (row[1] or "").strip() for row in rows if row[0]}


def register_table(spark, catalog: Catalog, name: str, table: str, key: list[str] | None = None,
                   order_by: list[str] | None = None, copy: bool = False) -> TableEntry:
    """Register ``table`` of the Spark catalog as ``name`` (module docstring)."""
    if not NAME_PATTERN.match(name):
        raise BadInput(f"'{name}' is not a valid table name: use letters, digits and _")
    details = describe(spark, table)
    provider = details.get("Provider", "").lower()
    where = details.get("Location") and spark_uri_key(details["Location"])  # file:/p is the path /p
    if where and provider in (*FORMATS, "delta"):
        fmt = None if provider == "delta" else provider
        return register(spark, catalog, name, where, key=key, order_by=order_by, fmt=fmt, copy=copy,
                        spark_table=table)
    return _copied_table(spark, catalog, name.lower(), table, key, order_by)


def _copied_table(spark, catalog: Catalog, name: str, table: str, key: list[str] | None,
                  order_by: list[str] | None) -> TableEntry:
    """A table whose files dltrace does not read itself, copied with ids from ``spark.table``."""
    key = [k.strip() for k in key] if key else None
    order_by = [c.strip() for c in order_by] if order_by else None
    frame = _checked_frame(spark.table(table), f"table {table}", key, order_by)
    previous = catalog.tables.get(name)
    # no files to digest: each registration is a new copy (unchanged rows keep ids with --key)
    fingerprint = hashlib.sha256(json.dumps(["table", table, key, order_by, time.time()]).encode()).hexdigest()[:32]
    new = Registration(name, previous, _next_version(catalog, name, previous), f"table:{table}", "table", key,
                       order_by, fingerprint, {f.name: f.dataType.simpleString() for f in frame.schema.fields}, table)
    return _copied(spark, catalog, new, frame)
