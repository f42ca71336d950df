"""The Spark Connect session users build DataFrames in, and tracing what they build.

dltrace's own queries run in its engine session, whose views of the catalog's tables carry
``_dl_id`` and whose views of saved results carry their lineage.  A DataFrame program must
see what its author sees under ``spark-submit``: tables with their own columns.  So
DataFrames are built in a second Spark Connect session on the same server (``spark``), whose
temporary views name the catalog's tables, saved results and views with their columns only.
Tracing a DataFrame translates its Connect plan to SQL (``plan.translate``) and runs that
through the engine like any query: one rewriter for SQL and DataFrames.
"""

from __future__ import annotations

import hashlib

from dltrace.dataframe.pivot_values import find_pivot_values_at_once, values_table
from dltrace.dataframe.plan import Catalog, translate
from dltrace.dataframe.temp_views import keep_temp_views, views_of
from dltrace.errors import BadInput
from dltrace.rewriter.dialect import SPARK

CONNECT_NEEDED = (
    "DataFrames are traced from their Spark Connect plan: build them in ls.frames (dltrace starts Spark in Connect "
    "mode when ls.frames comes first, or set SPARK_API_MODE=connect or SPARK_REMOTE)"
)


def is_connect_frame(frame) -> bool:
    try:
        from pyspark.sql.connect.dataframe import DataFrame
    except ImportError:  # Spark Connect's client (dltrace[connect]) is not installed
        return False
    return isinstance(frame, DataFrame)


class DataFrameFront:
    """``LineageSession``'s DataFrame front door: the users' Connect session and its views."""

    def __init__(self, lineage) -> None:  # the LineageSession it belongs to
        self.lineage = lineage
        self._spark = None
        self._defined: dict[str, str] = {}  # view name -> the SQL it was defined with
        self._udfs: dict[str, str] = {}  # pickled Python UDF digest -> its name in the engine
        self._reason_udfs: dict[str, object] = {}  # the catalog's reason-capable UDFs registered here

    @property
    def spark(self):
        """A Spark Connect session on the engine's server whose ``table(name)`` reads the
        catalog's tables, saved results and views (their columns, no lineage)."""
        if self._spark is None:
            from pyspark.sql.connect.session import SparkSession

            engine = self.lineage.spark
            if not is_connect_session(engine):
                engine = connect_to(engine)
                self.lineage.on_connect(engine)
            self._spark = clone(engine)
            keep_temp_views()  # a program's own temporary views are traced through their plans
            find_pivot_values_at_once()  # as classic Spark does, so a failure is at the pivot's line
            SparkSession._set_default_and_active_session(self._spark)
            self.define_views()
        return self._spark

    def refresh(self) -> None:
        """After a save or drop: the users' session sees the catalog as it is now."""
        if self._spark is not None:
            self.define_views()

    def define_views(self) -> None:
        """Temporary views in the users' session for every name of the catalog, (re)defined
        where what they read changed since, and the catalog's reason-capable UDFs, so that a
        program calls them by name as a query does."""
        from dltrace.reasons import register_in_spark

        wanted = self.view_sql()
        spark = self._spark
        for name, udf in self.lineage.udfs().items():
            if self._reason_udfs.get(name) is not udf:
                register_in_spark(spark, udf)
                self._reason_udfs[name] = udf
        for name in set(self._defined) - set(wanted):
            spark.sql(f"DROP VIEW IF EXISTS `{name}`")
            del self._defined[name]
        for name, sql in wanted.items():
            if self._defined.get(name) != sql:
                spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW `{name}` AS {sql}")
                self._defined[name] = sql

    def view_sql(self) -> dict[str, str]:
        from dltrace.table_data import backquoted, rows_sql

        lineage = self.lineage
        views = {}
        for name, entry in lineage.catalog.tables.items():
            columns = ", ".join(map(backquoted, entry.schema))
            try:
                views[name] = f"SELECT {columns} FROM ({rows_sql(lineage.catalog, name)})"
            except BadInput:
                continue  # changed in-place files: a query that reads it says so
            except Exception:  # noqa: BLE001 - e.g. the files are gone; the trace reports it
                continue
        for name, result in lineage.saved_results().items():
            columns = ", ".join(map(backquoted, result.query_columns))
            views[name] = f"SELECT {columns} FROM parquet.{backquoted(str(lineage.store.path(result.data)))}"
        for name, query in lineage.views().items():
            views[name] = lineage.plain(query)
        return views

    def catalog(self) -> Catalog:
        lineage = self.lineage
        return Catalog(lineage.schemas(), set(lineage.views()), self.schema_of, self.python_udf,
                       views_of(self._spark), self.rows_of)

    def schema_of(self, relation) -> list[tuple[str, str]]:
        from pyspark.errors import PySparkException
        from pyspark.sql.connect.proto import base_pb2

        from dltrace.errors import spark_error

        try:
            schema = self._spark.client.schema(base_pb2.Plan(root=relation))
        except PySparkException as error:
            raise spark_error(error) from None
        return [(field.name, field.dataType.simpleString()) for field in schema.fields]

    def rows_of(self, relation):
        """A Relation's rows as a pyarrow Table (the values a pivot without them pivots on)."""
        from pyspark.errors import PySparkException

        from dltrace.errors import spark_error

        try:
            return values_table(self._spark, relation)
        except PySparkException as error:
            raise spark_error(error) from None

    def python_udf(self, udf) -> str:
        """The name a Python UDF of a DataFrame has in the engine, registered there once."""
        from pyspark.serializers import CloudPickleSerializer

        command = udf.python_udf.command
        digest = hashlib.sha1(command).hexdigest()[:16]
        if digest not in self._udfs:
            function, return_type = CloudPickleSerializer().loads(command)
            name = f"dl_udf_{digest}"
            self.lineage.spark.client.register_udf(function, return_type, name, udf.python_udf.eval_type,
                                                   udf.deterministic)
            self._udfs[digest] = name
        return self._udfs[digest]

    def sql(self, frame) -> str:
        """The SQL query ``frame`` (a DataFrame of ``spark``) computes."""
        if not is_connect_frame(frame):
            if hasattr(frame, "_jdf"):
                raise BadInput(CONNECT_NEEDED)
            raise BadInput(f"trace takes a DataFrame built in ls.frames, not {type(frame).__name__}")
        spark = self.spark
        self.define_views()  # another process may have saved or dropped since
        relation = frame._plan.to_proto(spark.client).root
        return translate(relation, self.catalog()).sql(dialect=SPARK)


def is_connect_session(spark) -> bool:
    from pyspark.sql.connect.session import SparkSession

    return isinstance(spark, SparkSession)


def connect_to(classic):
    """A Spark Connect session on the JVM of ``classic`` (started before DataFrames were
    asked for, by ``ls.register`` say), which then serves Connect; this process switches to
    Connect's API, as ``SPARK_API_MODE=connect`` does.  A session that is neither is refused."""
    from dltrace.spark import connect_api, connect_session, serve_connect

    if not hasattr(classic, "_jvm"):
        raise BadInput(CONNECT_NEEDED)
    url = serve_connect(classic)
    connect_api()
    return connect_session(url)


def clone(engine):
    """A new session (its own temporary views) on the server ``engine`` is connected to."""
    from pyspark.sql.connect.session import SparkSession

    from dltrace.spark import closed_at_exit

    return closed_at_exit(SparkSession(connection=engine.client._builder))
