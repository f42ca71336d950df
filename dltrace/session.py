"""``LineageSession``: the Python API (docs/architecture.md) over a catalog and one Spark session."""

from __future__ import annotations

import os
import weakref
from collections.abc import Iterator
from contextlib import contextmanager

from dltrace import granularity, rewriter, steps
from dltrace.broadcasts import keep_broadcasts
from dltrace.catalog import Catalog, TableEntry
from dltrace.dataframe import DataFrameFront
from dltrace.deprecated import renamed_keyword
from dltrace.engine import rewrite_over_catalog
from dltrace.errors import BadInput, DltraceError, SparkInternalError, lineage_query_rejected, spark_error
from dltrace.plain import names_read, plain_sql, with_spark_aliases, with_spark_names
from dltrace.publish import publish, republish, unpublish
from dltrace.reasons import SessionUdfs
from dltrace.registration import register
from dltrace.results import ROW, ResultStore, SavedResult
from dltrace.rewriter.base_table import tagged_row_ids
from dltrace.rewriter.dialect import SPARK
from dltrace.rewriter.saved_result import LINEAGE_COLUMN
from dltrace.scripts import spark_sql_script
from dltrace.spark import SORTED_AGGREGATES, get_spark, session_conf
from dltrace.spark_views import SparkViews
from dltrace.steps import MadeBy
from dltrace.views import ViewStore, check_name_free, create_view, expand

DEFAULT_CATALOG = ".dltrace"


def catalog_dir(catalog: str | os.PathLike | None) -> str | os.PathLike:
    """``catalog``, else ``$DLTRACE_CATALOG``, else ``./.dltrace``: a local path or a filesystem
    URI (``dltrace.storage``)."""
    return catalog or os.environ.get("DLTRACE_CATALOG") or DEFAULT_CATALOG


class LineageSession:
    """Registers tables, rewrites queries and runs them with lineage on Spark: a facade over
    the modules that own each part (docs/architecture.md, "Map of the package")."""

    def __init__(self, catalog: str | os.PathLike | None = None, spark=None, master: str | None = None) -> None:
        self.catalog = Catalog(catalog_dir(catalog))
        self._spark = spark
        self._master = master
        # what each DataFrame ``sql`` returned was computed from, so that ``save(df, name)``
        # can record its query (weak: forgotten with the DataFrame)
        self._queries: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        # the rows of ``result(name)`` with their shared sets held apart, for ``shared_lineage``
        self._held_apart: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self.temporary_views: dict[str, str] = {}  # CREATE TEMP VIEW: name -> query, for this session
        self._udfs = SessionUdfs(self.catalog.directory)  # reason-capable UDFs (dltrace/reasons.py)
        self._spark_views: SparkViews | None = None  # made with Spark, which starts on first use
        self._dataframes = DataFrameFront(self)  # DataFrame programs: dltrace/dataframe

    @property
    def spark(self):
        if self._spark is None:
            self._spark = get_spark(self._master)
        return self._spark

    # DataFrame programs (README, "PySpark DataFrame pipelines"): dltrace/dataframe.

    @property
    def frames(self):
        """The Spark Connect session to build DataFrames in: ``frames.table(name)`` reads a
        registered table, saved result or view (its columns, no lineage).  When it comes
        before any other use of Spark, dltrace starts Spark in Connect mode for it."""
        if self._spark is None:
            self._spark = get_spark(self._master, connect=True)
        return self._dataframes.spark

    def on_connect(self, engine) -> None:
        """Spark started classic; DataFrames need Connect: ``engine`` is the same JVM's client."""
        self._spark, self._spark_views = engine, None
        self._udfs.register_all(engine)

    @renamed_keyword("repr", "representation")
    def trace(self, frame, semantics: str = "control", representation: str = "set",
              lineage_on: granularity.LineageOnArgument = None):
        """``frame`` (a DataFrame built in ``frames``) with lineage: its rows plus ``DL``, as
        ``sql`` gives them for the same query written in SQL (its plan is translated to that
        query).  ``save`` takes the result, as it takes one of ``sql``."""
        return self.sql(self._dataframes.sql(frame), semantics, representation, lineage_on=lineage_on)

    def dataframe_sql(self, frame) -> str:
        """The SQL query a DataFrame of ``frames`` computes, as dltrace traces it."""
        return self._dataframes.sql(frame)

    @property
    def spark_views(self) -> SparkViews:
        """The catalog's tables and saved results as views of this session's Spark."""
        if self._spark_views is None:
            self._spark_views = SparkViews(self.spark, self.catalog)
        return self._spark_views

    def register(
        self,
        name: str,
        path: str | os.PathLike | None = None,
        key: list[str] | None = None,
        order_by: list[str] | None = None,
        format: str | None = None,
        header: bool | None = None,
        copy: bool = False,
        version: int | None = None,
        table: str | None = None,
        as_read=None,  # registration.Reader: a job's spark.read of the source (dltrace run)
    ) -> TableEntry:
        """Register a source (Parquet, CSV, JSON, ORC, a Delta table's directory) as a table with
        lineage ids (docs/registration.md); ``header``: whether a CSV's first row names the
        columns.  Parquet without ``order_by`` and Delta (its log's ``version``) are registered
        in place unless ``copy``.  ``table`` instead of ``path``: a table of Spark's catalog."""
        self.check_name_free(name, "a table")
        if (path is None) == (table is None):
            raise BadInput("register takes a path or table=\"[db.]table\" (a table of the Spark catalog), one of them")
        if table is not None:
            from dltrace.spark_tables import register_table

            entry = register_table(self.spark, self.catalog, name, table, key=key, order_by=order_by, copy=copy)
        else:
            entry = register(self.spark, self.catalog, name, path, key=key, order_by=order_by, fmt=format,
                             header=header, copy=copy, delta_version=version, as_read=as_read)
        self._dataframes.refresh()  # ls.frames reads it by name at once
        return entry

    # Reason-capable UDFs (docs/reasons.md): dltrace/reasons.py.

    def register_udf(self, name: str, function, reasons=None, returns: str = "string") -> None:
        """Register a vectorized Python UDF (pandas Series in, Series out) that queries call
        by ``name``, with its reasoning mode (the same inputs in, a DataFrame with columns
        ``value`` and ``reason`` out) for ``explain_reasons``.  Given as ``"module:attribute"``
        texts, both are kept in the catalog and every later session has them."""
        self._udfs.register(self.spark, name, function, reasons, returns)

    def udfs(self) -> dict:
        """The reason-capable UDFs this session has: the catalog's, and those registered here."""
        return self._udfs.all(self.spark)

    def explain_reasons(self, result: str, row: int) -> list:
        """The reasoning lineage of row ``row`` of saved ``result``: per call of a reason-capable
        UDF in its query, the invocations on the rows of the row's lineage, re-run in reasoning
        mode (``reasons.Reasons``: inputs, value, reason, and how many were re-run)."""
        from dltrace.reasons import explain_reasons

        return explain_reasons(self, result, row, self.udfs())

    # One namespace: registered tables, saved results and views (docs/pipelines.md).

    @property
    def store(self) -> ResultStore:
        return ResultStore(self.catalog)

    def saved_results(self) -> dict[str, SavedResult]:
        return {result.name: result for result in self.store.list()}

    def views(self) -> dict[str, str]:  # the catalog's views, this session's temporary views over them
        return {**{name: view.query for name, view in ViewStore(self.catalog).all().items()}, **self.temporary_views}

    def check_name_free(self, name: str, wanted: str) -> None:
        """Tables, saved results and views share one namespace: ``name`` must not be one of
        another kind than ``wanted`` ("a table", "a saved result", "a view")."""
        check_name_free(name, wanted, self.catalog.tables, self.store.exists, self.views())

    def expand(self, query: str, inline_results: bool = False) -> str:
        """``query`` with the views it reads as CTEs; with ``inline_results`` the saved results
        too (their recorded queries), down to the base tables."""
        saved = {name: result.query for name, result in self.saved_results().items()} if inline_results else {}
        return expand(query, {**saved, **self.views()})

    @renamed_keyword("repr", "representation")
    def rewrite(
        self,
        query: str,
        semantics: str = "control",
        representation: str = "set",
        tag_instances: bool = False,
        lineage_on: granularity.LineageOnArgument = None,
    ) -> str:
        """The lineage query as Spark SQL (it reads the catalog's tables by name).

        ``tag_instances`` is a testing aid: ids carry the number of the table occurrence
        they came through in their top bits (the paper's tree definition, §3.1).
        ``lineage_on`` (or a ``LINEAGE ON (...)`` clause ending ``query``) gives granule
        ids instead of row ids; empty, it turns lineage off (dltrace/granularity).
        """
        query, lineage_on = granularity.split_lineage_on(query, lineage_on)
        if lineage_on == ():
            return self.plain(query)
        if lineage_on is not None:
            return granularity.granular_sql(self, self.traceable_on_values(query), lineage_on, semantics,
                                            representation)
        id_source = tagged_row_ids if tag_instances else None
        expression = self.lineage_expression(query, semantics, representation, id_source)
        return with_spark_aliases(self, self.expand(query), expression).sql(dialect=SPARK)

    def traceable_on_values(self, query: str) -> str:
        """``query`` for ``LINEAGE ON``: granules are values of base rows, so the saved results
        it reads are inlined (their queries as CTEs), which gives their rows again as long
        as their inputs have not changed; a stale one is refused."""
        read = names_read(self.expand(query)) - set(self.catalog.tables)
        stale = {name: why for name, why in self.store.staleness().items() if name in read and why}
        if stale:
            name, why = sorted(stale.items())[0]
            raise BadInput(f"LINEAGE ON traces saved result {name} through its query, but it is stale ({why}): "
                           f"save it again first")
        return self.expand(query, inline_results=True)

    def lineage_expression(
        self,
        query: str,
        semantics: str = "control",
        representation: str = "set",
        id_source: rewriter.IdSource | None = None,
        ids_ordered_by_table: bool = True,
        references: bool = False,
        windows_apart: bool = False,
    ):
        """The one path to the rewriter (ids from ``id_source``, default ``_dl_id``): views
        inlined, then ``engine.rewrite_over_catalog`` (``references``, ``windows_apart``: the
        results' rows named, windows' sets held apart, as a save stores them)."""
        expanded_text = self.expand(query)
        saved = self.results_read(expanded_text)
        return rewrite_over_catalog(rewriter.parse(expanded_text), self.catalog.tables, self.schemas(saved), saved,
                                    semantics, representation, id_source, ids_ordered_by_table,
                                    references=references, windows_apart=windows_apart)

    def results_read(self, expanded_query: str) -> dict[str, SavedResult]:
        """The saved results a query (views inlined) reads."""
        read = names_read(expanded_query)
        return {n: r for n, r in self.saved_results().items() if n in read}

    def schemas(self, saved: dict[str, SavedResult] | None = None) -> dict[str, dict[str, str]]:
        """The columns of every table and saved result a query can read."""
        saved = self.saved_results() if saved is None else saved
        schemas = self.catalog.schemas()  # keeps its location, which errors name
        schemas.update({name: result.query_columns for name, result in saved.items()})
        return schemas

    def plain(self, query: str) -> str:
        """The query without lineage, as written (``*`` never shows ``_dl_id``): dltrace/plain.py."""
        return plain_sql(self.expand(query), self.schemas())

    @renamed_keyword("repr", "representation")
    def sql(
        self,
        query: str,
        semantics: str = "control",
        representation: str = "set",
        lineage: bool = True,
        tag_instances: bool = False,
        lineage_on: granularity.LineageOnArgument = None,
    ):
        """Run ``query`` on Spark; the DataFrame has the query's columns plus ``DL`` (granule
        ids with ``lineage_on``, decoded by ``decode_granules``; no ``DL`` when L is empty)."""
        query, lineage_on = granularity.split_lineage_on(query, lineage_on)
        query = self.expand(query)  # views inlined once: the rewrite, Spark's names and save read it
        if lineage and lineage_on is None:
            return self.row_lineage(query, semantics, representation, tagged_row_ids if tag_instances else None)
        if not lineage:
            text = self.plain(query)
        else:
            text = self.rewrite(query, semantics, representation, tag_instances, lineage_on)
        frame = self._run_lineage(text, query) if lineage else self.run(text, lineage_query=False)
        if lineage:
            frame = with_spark_names(self, query, frame)
            self._queries[frame] = MadeBy(query, semantics, representation, lineage_on, False, None, False)
        return frame

    def row_lineage(self, query: str, semantics: str, representation: str, id_source: rewriter.IdSource | None = None,
                     references: bool = False, windows_apart: bool = False):  # for save: as it stores it
        expression = self.lineage_expression(query, semantics, representation, id_source, True, references,
                                             windows_apart)
        frame = keep_broadcasts(self._run_lineage(expression.sql(dialect=SPARK), query), expression, self.catalog,
                                self.run)
        frame = with_spark_names(self, query, frame)
        meta = expression.meta
        self._queries[frame] = MadeBy(query, semantics, representation, None, meta.get(rewriter.DISJOINT_ROWS, False),
                                      meta.get(rewriter.SHARED), meta.get(rewriter.MANY_GROUPS, False), references)
        return frame

    def made_by(self, frame) -> MadeBy | None:
        """What ``frame`` was computed from, when ``sql`` or ``trace`` returned it."""
        return self._queries.get(frame)

    @contextmanager
    def executing(self, frame) -> Iterator[None]:
        """Spark settings for dltrace's own actions on ``frame`` (a save, the CLI's output): a
        query grouping into many groups (``rewriter.MANY_GROUPS``) is planned with Spark's sort
        aggregate (its object hash aggregate keeps 128 groups per task, then sorts anyway)."""
        made_by = self._queries.get(frame)
        with session_conf(self.spark, SORTED_AGGREGATES if made_by and made_by.many_groups else {}):
            yield

    def shared_lineage(self, frame):
        """``frame`` (a result of ``sql`` or ``result``) with the lineage its rows share held
        apart: ``(rows, sets)``, ``rows`` with each row's own ids in ``DL`` and ``sets`` one-row
        DataFrames (a sorted id array each) every row's DL also holds, computed once (TPC-H
        Q11's rows each hold its HAVING subquery's ~32,000 ids); ``[]`` when none is shared."""
        if frame in self._held_apart:
            return self._held_apart[frame]
        made_by = self._queries.get(frame)
        if made_by is None or made_by.shared is None:
            return frame, []
        rows = with_spark_names(self, made_by.query, self.run(made_by.shared.rows.sql(dialect=SPARK)))
        return rows, [self.run(query.sql(dialect=SPARK)) for query in made_by.shared.sets]

    def run(self, spark_sql: str, reads: set[str] | None = None, lineage_query: bool = True):
        """Run Spark SQL over the catalog's tables, errors as one line (``Engine.run``)."""
        from pyspark.errors import PySparkException

        from dltrace import udafs

        if reads is None:
            reads = names_read(spark_sql) or None  # nothing found (or SQL sqlglot cannot read): every view
        self.spark_views.ensure(reads, lineage=LINEAGE_COLUMN in spark_sql.lower())
        self.spark_views.check_fresh(reads or ())
        udafs.register(self.spark)
        self.udfs()  # the catalog's reason-capable UDFs, callable by name
        try:
            return self.spark.sql(spark_sql)
        except PySparkException as error:
            raise spark_error(error, lineage_query) from None

    def _run_lineage(self, lineage_sql: str, query: str):
        """``run`` of a lineage query: Spark refusing it (or failing inside its planner) where
        it runs ``query`` itself is a dltrace bug (exit 1, the lineage query kept to report)."""
        try:
            return self.run(lineage_sql)
        except (BadInput, SparkInternalError) as error:
            try:
                self.run(self.plain(query), lineage_query=False)
            except DltraceError as plain_error:
                raise (error if isinstance(error, BadInput) else plain_error) from None  # the query itself fails
            raise lineage_query_rejected(error, lineage_sql) from None

    @renamed_keyword("repr", "representation")
    def script(
        self,
        query: str,
        semantics: str = "control",
        representation: str = "set",
        lineage_on: granularity.LineageOnArgument = None,
    ) -> str:
        """A self-contained script for ``spark-sql -f``: views over the Parquet, then the query."""
        if representation != "set":
            raise BadInput("spark-sql scripts use --repr set (the roBDD functions live in Python)")
        query, lineage_on = granularity.split_lineage_on(query, lineage_on)
        return spark_sql_script(self.catalog, self.rewrite(query, semantics, representation, lineage_on=lineage_on))

    def decode_granules(
        self, ids: list[int], query: str, lineage_on: granularity.LineageOnArgument = None
    ) -> list[dict]:
        """The L values of each granule id of ``query``'s ``LINEAGE ON`` result, in order:
        ``[{"YEAR(l_shipdate)": 1995, "l_shipmode": "MAIL"}, ...]`` (dictionaries cached)."""
        return granularity.GranuleDecoder(self, query, lineage_on).decode(ids)

    def decode(self, ids: list[int]) -> dict[str, list[dict]]:
        """The base rows behind ``ids``: ``{table: [row as dict, ...]}`` (key columns, or all)."""
        return self.spark_views.base_rows(ids)

    # Saved results, impact and explain (docs/architecture.md, docs/formats.md): dltrace/results.py, dltrace/impact/.

    @renamed_keyword("repr", "representation")
    def save(
        self,
        frame,
        name: str,
        query: str | None = None,
        semantics: str | None = None,
        representation: str | None = None,
        index: bool | None = None,
    ):
        """Keep ``frame`` (a result of ``sql``) with its lineage as result ``name``: Parquet with
        a ``_row`` number per output row, plus a forward index (id -> rows): always (``index``
        True), never (False), or when the result is large enough for it to pay (None).
        ``query`` is needed only for a DataFrame ``sql`` did not return; a DataFrame built in
        ``frames`` is traced first (dltrace/steps.py)."""
        saved = steps.save(self, frame, name, query, semantics, representation, index)
        self._dataframes.refresh()  # the users' DataFrame session reads it by name now
        republish(self.spark, self.catalog, self.store, name)  # its Spark view, if published, reads this save
        return saved

    def publish(self, name: str, view: str):
        """Saved result ``name`` as view ``view`` (``[db.]name``) of the Spark session's catalog:
        its query columns and ``DL``, for Spark users without dltrace (dltrace/publish.py)."""
        return publish(self.spark, self.catalog, self.store, name, view)

    # Pipelines (dltrace/pipeline.py): steps saved as results, views, scripts.

    @renamed_keyword("repr", "representation")
    def create_table(
        self,
        name: str,
        query: str,
        semantics: str = "control",
        representation: str = "set",
        replace: bool = False,
        index: bool | None = None,
    ) -> SavedResult:
        """``CREATE [OR REPLACE] TABLE name AS query``: run ``query`` with lineage and save it as
        result ``name`` (a pipeline step; the old result is replaced only when the new one is
        complete)."""
        self.check_name_free(name, "a saved result")
        if not replace and self.store.exists(name):
            raise BadInput(f"result {name.lower()} exists: CREATE OR REPLACE TABLE replaces it")
        bare, lineage_on = granularity.split_lineage_on(query, None)
        if lineage_on is None and self.results_read(expanded := self.expand(bare)):
            # a step over saved results: Spark plans only the form it stores (their rows named)
            frame = self.row_lineage(expanded, semantics, representation, references=True)
        else:
            frame = self.sql(query, semantics, representation)
        return self.save(frame, name, index=index)

    def create_view(self, name: str, query: str, temporary: bool = False, replace: bool = False) -> None:
        """``CREATE [OR REPLACE] [TEMP] VIEW name AS query``: later queries read ``query`` in its
        place; a temporary view lasts as long as this session, another is kept in the catalog."""
        create_view(self, name, query, temporary, replace)
        self._dataframes.refresh()  # ls.frames reads it by name at once

    @renamed_keyword("repr", "representation")
    def run_script(self, text: str, semantics: str = "control", representation: str = "set", on_outcome=None) -> list:
        """Run a pipeline script (``;``-separated CREATE TABLE AS / CREATE VIEW / queries) in
        order; returns what each statement did (``pipeline.Outcome``), ``on_outcome`` sees
        each as it completes."""
        from dltrace.pipeline import run_script

        return run_script(self, text, semantics, representation, on_outcome)

    def results(self):
        """The saved results (metadata: query, inputs, catalog version, rows, ...)."""
        return self.store.list()

    def stale_results(self) -> dict[str, str]:
        """``{result: why}`` for every saved result computed from inputs that changed since."""
        return {name: why for name, why in self.store.staleness().items() if why}

    def result(self, name: str):
        """The rows of saved result ``name``: ``_row``, the query's columns, ``DL`` (each row's
        whole DL, shared sets spelled out)."""
        saved = self.store.get(name)
        frame = self.store.lineage_rows(self.spark, saved).orderBy(ROW)
        if saved.shared:
            self._held_apart[frame] = steps.held_apart(self.store, self.spark, saved)
        return frame

    def drop_result(self, name: str) -> None:
        self.store.drop(name)
        unpublish(lambda: self.spark, self.catalog, name)
        self._dataframes.refresh()

    def impact(self, source: str, result: str | None = None, query: str | None = None, mode: str | None = None,
               semantics: str = "control", use_index: bool = True):
        """The output rows affected by the bad rows ``source`` names ("TABLE WHERE PREDICATE", "TABLE@vK
        WHERE ..." for data version K), in saved ``result`` or in ``query``'s output; ``DL`` narrowed to
        the bad ids.  ``mode``: stored (default with a result) or reeval.  With neither ``result`` nor
        ``query``: ``{result name: affected rows}`` over every saved result (stored lineage)."""
        from dltrace.impact import impact

        return impact(self, source, result, query, mode, semantics, use_index)

    def what_if(self, source: str, removed: bool = False, changes: str | dict[str, str] | None = None,
                result: str | None = None) -> dict:
        """``{saved result: WhatIf}``: how each result changes if the rows ``source`` names were removed or
        had ``changes`` ("col = expr, ..."): rows changed, vanished, appeared (dltrace/impact/what_if.py)."""
        from dltrace.impact.what_if import what_if
        return what_if(self, source, removed, changes, result)

    def explain(self, result: str, row: int) -> dict:
        """``{table: DataFrame}``: the base rows in the DL of ``row`` of saved ``result`` (``ids``: how many each)."""
        from dltrace.impact import explain

        return explain(self, result, row)

    # Explaining large lineage (dltrace/summary): patterns, and lineage as a relation for SQL.

    def summarize(self, result: str, row: int, k: int = 3, sample: int = 4000):
        """At most ``k`` patterns per base table (SQL conditions over its columns) describing
        the base rows of row ``row`` of saved ``result``, with recall and precision; learned
        on at most ``sample`` lineage rows per table (``summary.Summary``)."""
        from dltrace.summary import summarize

        return summarize(self, result, row, k, sample)

    def lineage_views(self, results: str | list[str]) -> list[str]:
        """Define views ``lineage_NAME`` (``_row, base_table, base_id``) and
        ``lineage_NAME_TABLE`` (``_row`` and the base rows) for saved ``results``, for
        queries through ``run`` or ``spark.sql``; returns their names."""
        from dltrace.summary import define_views

        self.spark_views.ensure()
        return define_views(self, [results] if isinstance(results, str) else list(results))

    def lineage_script(self, results: str | list[str], query: str | None = None) -> str:
        """The same views as a ``spark-sql`` script over the catalog's Parquet, then ``query``."""
        from dltrace.summary import script

        return script(self, [results] if isinstance(results, str) else list(results), query)
