"""``LineageSession``: the Python API (docs/architecture.md) over a catalog and one Spark session."""

from __future__ import annotations

import os
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from typing import NamedTuple

from dltrace import granularity, rewriter
from dltrace.broadcasts import keep_broadcasts
from dltrace.catalog import NAME_PATTERN, Catalog, TableEntry, register
from dltrace.engine import reference_codes, rewrite_over_catalog
from dltrace.errors import BadInput, CatalogError, DltraceError, SourceChanged, lineage_query_rejected, spark_error
from dltrace.plain import plain_sql, with_spark_aliases, with_spark_names
from dltrace.results import DL, ROW, ResultStore, SavedResult, names_read
from dltrace.rewriter.base_table import tagged_row_ids
from dltrace.rewriter.saved_result import LINEAGE_COLUMN, ROW_COLUMN, shared_view
from dltrace.spark import SORTED_AGGREGATES, get_spark, session_conf
from dltrace.table_data import backquoted, check_unchanged, rows_sql, table_rows
from dltrace.views import ViewStore, inline

DEFAULT_CATALOG = ".dltrace"
_VIEW_PATHS: dict[tuple[int, str], str] = {}  # (Spark session, view name) -> the Parquet it reads
# (Spark session, saved result) whose view has its rows but not their resolved lineage (_ensure_views)
_ROWS_ONLY_VIEWS: set[tuple[int, str]] = set()


def catalog_dir(catalog: str | os.PathLike | None) -> str | os.PathLike:
    """``catalog``, else ``$DLTRACE_CATALOG``, else ``./.dltrace``: a local path or a filesystem
    URI (``dltrace.storage``)."""
    return catalog or os.environ.get("DLTRACE_CATALOG") or DEFAULT_CATALOG


def check_savable(lineage_on: granularity.LineageOnArgument) -> None:
    """Saved results hold base-row ids, which impact and explain look up: granule ids
    (``LINEAGE ON``) name no rows, so such a result cannot be saved."""
    if lineage_on is not None:
        raise BadInput("save keeps base-row lineage for impact and explain: run the query without LINEAGE ON")


class MadeBy(NamedTuple):
    """What a DataFrame ``sql`` returned was computed from, for ``save`` and ``shared_lineage``."""

    query: str
    semantics: str
    repr: str
    lineage_on: granularity.LineageOnArgument
    disjoint: bool  # no id in two rows' DLs: a saved result remembers it for queries reading it
    shared: rewriter.SharedLineage | None  # the lineage with the sets all rows share held apart
    many_groups: bool  # its outermost SELECT groups by a key into many groups: ``executing`` sorts them
    references: bool = False  # planned as a saved step stores it: the rows it reads from saved results named


class LineageSession:
    """Registers tables, rewrites queries and runs them with lineage on Spark."""

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
        self._udfs: dict = {}  # reason-capable UDFs registered in this session's Spark (reasons.ReasonUdf)

    @property
    def spark(self):
        if self._spark is None:
            self._spark = get_spark(self._master)
        return self._spark

    def register(
        self,
        name: str,
        path: str | os.PathLike,
        key: list[str] | None = None,
        order_by: list[str] | None = None,
        format: str | None = None,
        header: bool | None = None,
        copy: bool = False,
    ) -> TableEntry:
        """Register a source (Parquet, CSV, JSON, ORC) as a table with lineage ids; ``header``:
        whether a CSV's first row names the columns (default: yes, unless it looks like data).
        Parquet without ``order_by`` is registered in place (not copied) unless ``copy``."""
        self.check_name_free(name, "a table")
        return register(self.spark, self.catalog, name, path, key=key, order_by=order_by, fmt=format, header=header,
                        copy=copy)

    # Reason-capable UDFs (README, "Reasons of ML and Python UDFs"): dltrace/reasons.py.

    def register_udf(self, name: str, function, reasons=None, returns: str = "string") -> None:
        """Register a vectorized Python UDF (pandas Series in, Series out) that queries call
        by ``name``, with its reasoning mode (the same inputs in, a DataFrame with columns
        ``value`` and ``reason`` out) for ``explain_reasons``.  Given as ``"module:attribute"``
        texts, both are kept in the catalog and every later session has them."""
        from dltrace import reasons as reasoning

        udf = reasoning.make_udf(name, function, reasons, returns)
        reasoning.register_in_spark(self.spark, udf)
        if udf.spec is not None:
            reasoning.UdfStore(self.catalog.directory).save(udf.spec)
        self._udfs[udf.name] = udf

    def udfs(self) -> dict:
        """The reason-capable UDFs this session has: the catalog's, and those registered here."""
        from dltrace import reasons as reasoning

        for name, spec in reasoning.UdfStore(self.catalog.directory).all().items():
            if name not in self._udfs or self._udfs[name].spec != spec:
                udf = reasoning.make_udf(name, spec.function, spec.reasons, spec.returns)
                reasoning.register_in_spark(self.spark, udf)
                self._udfs[name] = udf
        return dict(self._udfs)

    def explain_reasons(self, result: str, row: int) -> list:
        """The reasoning lineage of row ``row`` of saved ``result``: per call of a reason-capable
        UDF in its query, the invocations on the rows of the row's lineage, re-run in reasoning
        mode (``reasons.Reasons``: inputs, value, reason, and how many were re-run)."""
        from dltrace.reasons import explain_reasons

        return explain_reasons(self, result, row, self.udfs())

    # One namespace: registered tables, saved results and views (README, "Pipelines").

    @property
    def store(self) -> ResultStore:
        return ResultStore(self.catalog)

    def saved_results(self) -> dict[str, SavedResult]:
        return {result.name: result for result in self.store.list()}

    def views(self) -> dict[str, str]:
        """``{name: query}``: the catalog's views, with this session's temporary views over them."""
        return {**{name: view.query for name, view in ViewStore(self.catalog).all().items()}, **self.temporary_views}

    def check_name_free(self, name: str, wanted: str) -> None:
        """Tables, saved results and views share one namespace: ``name`` must not be one of
        another kind than ``wanted`` ("a table", "a saved result", "a view")."""
        lowered = name.lower()
        owners = {
            "a table": lowered in self.catalog.tables,
            "a saved result": self.store.exists(lowered),
            "a view": lowered in self.views(),
        }
        for owner, taken in owners.items():
            if taken and owner != wanted:
                raise BadInput(f"'{lowered}' is already {owner}: tables, saved results and views share one namespace, "
                               f"choose another name")

    def expand(self, query: str, inline_results: bool = False) -> str:
        """``query`` with the views it reads as CTEs; with ``inline_results`` the saved results
        too (their recorded queries), down to the base tables."""
        views, saved = self.views(), self.saved_results() if inline_results else {}

        def definition(name: str) -> str | None:
            return views.get(name) or (saved[name].query if name in saved else None)

        expression = rewriter.parse(query)
        expanded = inline(expression, definition)
        return query if expanded is expression else expanded.sql(dialect="spark")

    def _ensure_views(self, names: set[str] | None = None, lineage: bool = True) -> None:
        """Temporary views named as the catalog's tables, over their Parquet with ``_dl_id``,
        and as its saved results, over their rows with the saved DL as ``_dl_lineage``: all of
        them, or those among ``names`` (what a query reads: a pipeline step saved a moment ago
        gets its view when a later step reads it, not at every query in between).

        Views belong to the Spark session, which several LineageSessions (catalogs) may share:
        what each view reads is tracked per Spark session, by absolute path.

        The files of in-place tables are checked (a stat each): a changed one's error is kept
        in ``_stale`` and raised by a query that reads the table (``run``).

        Without ``lineage`` (the query does not read ``_dl_lineage``: a step naming the rows it
        reads), the view of a result whose DLs name upstream rows has its rows alone: resolving
        them to base ids is a plan of joins that Spark would prune anyway, and building it
        costs more than the rest of a small step's planning.
        """
        self._stale: dict[str, SourceChanged | CatalogError] = {}
        if names is not None:  # a result's shared sets are read through a view of their own
            names = names | {n.removeprefix(shared_view("")) for n in names if n.startswith(shared_view(""))}
        for name, entry in self.catalog.tables.items():
            if names is not None and name not in names:
                continue
            path = str(self.catalog.data_path(name))
            if entry.files:
                try:
                    check_unchanged(self.catalog, name)
                except SourceChanged as error:
                    self._stale[name] = error
                    continue
            if _VIEW_PATHS.get((id(self.spark), name)) != path:
                # the recorded schema spares Spark a job per table to infer it from footers
                table_rows(self.spark, self.catalog, name).createOrReplaceTempView(name)
                _VIEW_PATHS[(id(self.spark), name)] = path

        for name, result in self.saved_results().items():
            if names is not None and name not in names:
                continue
            path, key = str(self.store.path(result.data)), (id(self.spark), name)
            rows_only = bool(result.references) and not lineage
            if _VIEW_PATHS.get(key) == path and (rows_only or key not in _ROWS_ONLY_VIEWS):
                continue
            try:
                if rows_only:  # the upstream saves it names, down the chain, must still be there
                    self.store.check_referenced(result)
                    rows = self.store.rows(self.spark, result)
                else:
                    rows = self.store.lineage_without_shared(self.spark, result)
            except CatalogError as error:  # e.g. the upstream save it names is gone
                self._stale[name] = error  # raised by a query that reads it, not by every query
                continue
            columns = [*map(backquoted, result.query_columns), f"{ROW} AS {ROW_COLUMN}"]
            if not rows_only:
                # typed without NULL elements, as the rewriter's own sets: Spark sorts such arrays
                # natively instead of with a boxed comparator
                columns.append(f"array_compact({DL}) AS {LINEAGE_COLUMN}")
            rows.selectExpr(*columns).createOrReplaceTempView(name)
            if result.shared:
                self.store.shared_sets(self.spark, result).createOrReplaceTempView(shared_view(name))
            _VIEW_PATHS[key] = path
            if rows_only:
                _ROWS_ONLY_VIEWS.add(key)
            else:
                _ROWS_ONLY_VIEWS.discard(key)

    def rewrite(
        self,
        query: str,
        semantics: str = "control",
        repr: str = "set",
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
            return granularity.granular_sql(self, self.traceable_on_values(query), lineage_on, semantics, repr)
        expression = self.lineage_expression(query, semantics, repr, tagged_row_ids if tag_instances else None)
        return with_spark_aliases(self, self.expand(query), expression).sql(dialect="spark")

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
        repr: str = "set",
        id_source: rewriter.IdSource | None = None,
        ids_ordered_by_table: bool = True,
        references: bool = False,
    ):
        """The one path to the rewriter (ids from ``id_source``, default ``_dl_id``): views
        inlined, then ``engine.rewrite_over_catalog`` over the catalog's tables (codes and
        statistics) and the saved results the query reads (``references``: their rows named,
        as a saved step stores them)."""
        expanded_text = self.expand(query)
        saved = self.results_read(expanded_text)
        return rewrite_over_catalog(rewriter.parse(expanded_text), self.catalog.tables, self.schemas(saved), saved,
                                    semantics, repr, id_source, ids_ordered_by_table, references=references)

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

    def sql(
        self,
        query: str,
        semantics: str = "control",
        repr: str = "set",
        lineage: bool = True,
        tag_instances: bool = False,
        lineage_on: granularity.LineageOnArgument = None,
    ):
        """Run ``query`` on Spark; the DataFrame has the query's columns plus ``DL`` (granule
        ids with ``lineage_on``, decoded by ``decode_granules``; no ``DL`` when L is empty)."""
        query, lineage_on = granularity.split_lineage_on(query, lineage_on)
        query = self.expand(query)  # views inlined once: the rewrite, Spark's names and save read it
        if lineage and lineage_on is None:
            return self._row_lineage(query, semantics, repr, tagged_row_ids if tag_instances else None)
        text = self.rewrite(query, semantics, repr, tag_instances, lineage_on) if lineage else self.plain(query)
        frame = self._run_lineage(text, query) if lineage else self.run(text)
        if lineage:
            frame = with_spark_names(self, query, frame)
            self._queries[frame] = MadeBy(query, semantics, repr, lineage_on, False, None, False)
        return frame

    def _row_lineage(self, query: str, semantics: str, repr: str, id_source: rewriter.IdSource | None = None,
                     references: bool = False):
        """``query`` (views inlined) with row lineage, remembered for ``save`` and
        ``shared_lineage`` (``references``: as a saved step stores it)."""
        expression = self.lineage_expression(query, semantics, repr, id_source, references=references)
        frame = keep_broadcasts(self._run_lineage(expression.sql(dialect="spark"), query), expression, self.catalog,
                                self.run)
        frame = with_spark_names(self, query, frame)
        meta = expression.meta
        self._queries[frame] = MadeBy(query, semantics, repr, None, meta.get(rewriter.DISJOINT_ROWS, False),
                                      meta.get(rewriter.SHARED), meta.get(rewriter.MANY_GROUPS, False), references)
        return frame

    @contextmanager
    def executing(self, frame) -> Iterator[None]:
        """Spark settings for dltrace's own actions on ``frame`` (a result of ``sql``): a save,
        the CLI's output.  A query that groups by a table's key into many groups
        (``rewriter.MANY_GROUPS``) is planned with Spark's sort aggregate: Spark's object hash
        aggregate, which collects ids, keeps 128 groups per task in a hash map and then sorts
        the rest anyway.  Spark reads the setting when it plans, so a DataFrame run by the
        caller's own action keeps Spark's default."""
        made_by = self._queries.get(frame)
        with session_conf(self.spark, SORTED_AGGREGATES if made_by and made_by.many_groups else {}):
            yield

    def shared_lineage(self, frame):
        """``frame`` (a result of ``sql`` or ``result``) with the lineage its rows share held
        apart: ``(rows, sets)``, ``rows`` with each row's own ids in ``DL`` and ``sets`` a list
        of one-row DataFrames (a sorted id array each) that every row's DL also holds.
        Computing a shared set once instead of in every row is what keeps queries like TPC-H
        Q11 (each of its rows holds the ~32,000 ids of its HAVING subquery) cheap.  ``sets``
        is empty when the rows share nothing (``rows`` is ``frame``)."""
        if frame in self._held_apart:
            return self._held_apart[frame]
        made_by = self._queries.get(frame)
        if made_by is None or made_by.shared is None:
            return frame, []
        rows = with_spark_names(self, made_by.query, self.run(made_by.shared.rows.sql(dialect="spark")))
        return rows, [self.run(query.sql(dialect="spark")) for query in made_by.shared.sets]

    def run(self, spark_sql: str, reads: set[str] | None = None):
        """Run Spark SQL over the catalog's tables, errors as one line; ``reads``: the tables
        and results it reads, when the caller knows them (spares parsing a long text)."""
        from pyspark.errors import PySparkException

        from dltrace import udafs

        if reads is None:
            reads = names_read(spark_sql) or None  # nothing found (or SQL sqlglot cannot read): every view
        self._ensure_views(reads, lineage=LINEAGE_COLUMN in spark_sql.lower())
        self._check_fresh(reads or ())
        udafs.register(self.spark)
        self.udfs()  # the catalog's reason-capable UDFs, callable by name
        try:
            return self.spark.sql(spark_sql)
        except PySparkException as error:
            raise spark_error(error) from None

    def _run_lineage(self, lineage_sql: str, query: str):
        """``run`` of a lineage query: Spark refusing it where it accepts ``query`` itself is a
        dltrace bug (exit 1, the lineage query kept to report), not bad input."""
        try:
            return self.run(lineage_sql)
        except BadInput as error:
            try:
                self.run(self.plain(query))
            except DltraceError:
                raise error from None  # the query itself is wrong
            raise lineage_query_rejected(error, lineage_sql) from None

    def _check_fresh(self, names) -> None:
        """Stop if one of the tables ``names`` is in place and its files changed."""
        stale = sorted(set(names) & set(self._stale))
        if stale:
            raise self._stale[stale[0]]

    def script(
        self,
        query: str,
        semantics: str = "control",
        repr: str = "set",
        lineage_on: granularity.LineageOnArgument = None,
    ) -> str:
        """A self-contained script for ``spark-sql -f``: views over the Parquet, then the query."""
        if repr != "set":
            raise BadInput("spark-sql scripts use --repr set (the roBDD functions live in Python)")
        query, lineage_on = granularity.split_lineage_on(query, lineage_on)
        text = self.rewrite(query, semantics, repr, lineage_on=lineage_on)
        lines = [
            "-- dltrace: the catalog's tables and saved results as views (tables' rows with _dl_id, stored or"
            " computed for in-place files, results' rows their saved DL), then the query"
        ]
        read = names_read(text)
        for name in sorted(read & set(self.catalog.tables)):
            lines.append(f"CREATE OR REPLACE TEMPORARY VIEW {name} AS {rows_sql(self.catalog, name)};")
        for name, result in self.saved_results().items():
            if name in read and result.references:
                raise BadInput(f"saved result {name} names the rows of results it was computed from, which a "
                               f"spark-sql script cannot resolve: inline its query as a CTE")
            if name in read:
                path = backquoted(str(self.store.path(result.data)))
                columns = ", ".join(map(backquoted, result.query_columns))
                lines.append(
                    f"CREATE OR REPLACE TEMPORARY VIEW {name} AS "
                    f"SELECT {columns}, array_compact({DL}) AS {LINEAGE_COLUMN} FROM parquet.{path};"
                )
                if result.shared:
                    shared = backquoted(str(self.store.path(result.shared)))
                    lines.append(
                        f"CREATE OR REPLACE TEMPORARY VIEW {shared_view(name)} AS SELECT * FROM parquet.{shared};"
                    )
        lines.append(text + ";")
        return "\n".join(lines) + "\n"

    def decode_granules(
        self, ids: list[int], query: str, lineage_on: granularity.LineageOnArgument = None
    ) -> list[dict]:
        """The L values of each granule id of ``query``'s ``LINEAGE ON`` result, in order:
        ``[{"YEAR(l_shipdate)": 1995, "l_shipmode": "MAIL"}, ...]`` (dictionaries cached)."""
        return granularity.GranuleDecoder(self, query, lineage_on).decode(ids)

    def decode(self, ids: list[int]) -> dict[str, list[dict]]:
        """The base rows behind ``ids``: ``{table: [row as dict, ...]}`` (key columns, or all)."""
        from pyspark.sql import functions as F

        by_table: dict[str, list[int]] = {}
        for dl_id in ids:
            by_table.setdefault(self.catalog.table_of_id(dl_id), []).append(int(dl_id))
        self._ensure_views()
        self._check_fresh(by_table)
        rows = {}
        for table, table_ids in by_table.items():
            entry = self.catalog.entry(table)
            columns = ["_dl_id", *(entry.key or list(entry.schema))]
            frame = self.spark.table(table).where(F.col("_dl_id").isin(table_ids)).select(*columns).orderBy("_dl_id")
            rows[table] = [row.asDict() for row in frame.collect()]
        return rows

    # Saved results, impact and explain (docs/architecture.md, docs/formats.md): dltrace/results.py, dltrace/impact/.

    def save(
        self,
        frame,
        name: str,
        query: str | None = None,
        semantics: str | None = None,
        repr: str | None = None,
        index: bool | None = None,
    ):
        """Keep ``frame`` (a result of ``sql``) with its lineage as result ``name``: Parquet with
        a ``_row`` number per output row, plus a forward index (id -> rows): always (``index``
        True), never (False), or when the result is large enough for it to pay (None).
        ``query`` is needed only for a DataFrame ``sql`` did not return."""
        if isinstance(frame, str) or not isinstance(name, str):
            raise BadInput("save(frame, name) takes the DataFrame sql() returned, then the result's name: "
                           "ls.save(ls.sql(query), 'name')")
        made_by = self._queries.get(frame)
        if query is None and made_by is None:
            raise BadInput("save: this DataFrame was not returned by sql() with row lineage: pass query=")
        check_savable(made_by.lineage_on if made_by else None)
        if query is not None:
            check_savable(granularity.split_lineage_on(query, None)[1])
        query = self.expand(query) if query is not None else made_by.query
        semantics = semantics or (made_by.semantics if made_by else "control")
        repr = repr or (made_by.repr if made_by else "set")
        self.check_name_free(name, "a saved result")
        if name.lower() in names_read(query) and self.store.exists(name):
            raise BadInput(f"result {name.lower()} cannot be computed from itself: save it under another name")
        disjoint = bool(made_by and made_by.disjoint)
        shared_disjoint = bool(made_by and made_by.shared and made_by.shared.disjoint)
        references, named_rows_disjoint = {}, True
        if made_by is not None and made_by.lineage_on is None and (read := self.results_read(query)):
            # a step: the rows it read from saved results are named, not spelled out again.
            # The disjoint flags describe the whole DLs, as the query planned with saved lineage
            # spelled out sees them (made_by, or its rewrite alone when ``frame`` was planned as
            # the step stores it); and rows naming distinct upstream rows have disjoint whole
            # DLs only if those rows do, shared sets included
            if made_by.references:
                whole = self.lineage_expression(query, semantics, repr).meta
                disjoint = whole.get(rewriter.DISJOINT_ROWS, False)
                shared_disjoint = bool(whole.get(rewriter.SHARED) and whole[rewriter.SHARED].disjoint)
            else:
                frame = self._row_lineage(query, semantics, repr, references=True)
            # the saves the step's DLs name are those its plan read (the views' files): one saved
            # again since the plan (another process) would be recorded in place of the one named
            moved = sorted(n for n, r in read.items()
                           if _VIEW_PATHS.get((id(self.spark), n)) != str(self.store.path(r.data)))
            if moved:
                raise BadInput(f"result {moved[0]} was saved again while {name.lower()} was computed from it: "
                               f"run the step again")
            references = reference_codes(read)
            named_rows_disjoint = all(r.disjoint and not r.shared_sets for r in read.values())
        rows, sets = self.shared_lineage(frame)  # shared sets are stored once, not in every row
        if sets:
            disjoint = shared_disjoint
        disjoint = disjoint and named_rows_disjoint
        with self.executing(frame):
            return self.store.save(rows, name, query, semantics, repr, index, disjoint_rows=disjoint,
                                   shared_sets=sets, references=references, named=read if references else None)

    # Pipelines (dltrace/pipeline.py): steps saved as results, views, scripts.

    def create_table(
        self,
        name: str,
        query: str,
        semantics: str = "control",
        repr: str = "set",
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
            frame = self._row_lineage(expanded, semantics, repr, references=True)
        else:
            frame = self.sql(query, semantics, repr)
        return self.save(frame, name, index=index)

    def create_view(self, name: str, query: str, temporary: bool = False, replace: bool = False) -> None:
        """``CREATE [OR REPLACE] [TEMP] VIEW name AS query``: later queries read ``query`` in its
        place; a temporary view lasts as long as this session, another is kept in the catalog."""
        if not NAME_PATTERN.match(name):
            raise BadInput(f"'{name}' is not a valid view name: use letters, digits and _")
        self.check_name_free(name, "a view")
        lowered = name.lower()
        stored = ViewStore(self.catalog)
        exists = lowered in self.temporary_views if temporary else lowered in stored.all()
        if exists and not replace:
            raise BadInput(f"view {lowered} exists: CREATE OR REPLACE VIEW replaces it")
        views = {**self.views(), lowered: query}
        inline(rewriter.parse(query), views.get)  # a view that reads itself fails here
        self.plain(query)  # unknown tables and columns fail now, at the CREATE
        if temporary:
            self.temporary_views[lowered] = query
        else:
            stored.save(lowered, query)

    def run_script(self, text: str, semantics: str = "control", repr: str = "set", on_outcome=None) -> list:
        """Run a pipeline script (``;``-separated CREATE TABLE AS / CREATE VIEW / queries) in
        order; returns what each statement did (``pipeline.Outcome``), ``on_outcome`` sees
        each as it completes."""
        from dltrace.pipeline import run_script

        return run_script(self, text, semantics, repr, on_outcome)

    def results(self):
        """The saved results (metadata: query, inputs, catalog version, rows, ...)."""
        return self.store.list()

    def stale_results(self) -> dict[str, str]:
        """``{result: why}`` for every saved result computed from inputs that changed since."""
        return {name: why for name, why in self.store.staleness().items() if why}

    def result(self, name: str):
        """The rows of saved result ``name``: ``_row``, the query's columns, ``DL`` (each row's
        whole DL, shared sets spelled out)."""
        from pyspark.sql import functions as F

        from dltrace.results import SHARED_ID, SHARED_REFS, SHARED_SET

        saved = self.store.get(name)
        frame = self.store.lineage_rows(self.spark, saved).orderBy(ROW)
        if saved.shared:
            sets = self.store.shared_sets(self.spark, saved)
            self._held_apart[frame] = (
                self.store.lineage_without_shared(self.spark, saved).drop(SHARED_REFS).orderBy(ROW),
                [
                    sets.where(F.col(SHARED_SET) == number).agg(F.sort_array(F.collect_list(SHARED_ID)).alias(DL))
                    for number in range(saved.shared_sets)
                ],
            )
        return frame

    def drop_result(self, name: str) -> None:
        self.store.drop(name)

    def impact(
        self,
        source: str,
        result: str | None = None,
        query: str | None = None,
        mode: str | None = None,
        semantics: str = "control",
        use_index: bool = True,
    ):
        """The output rows affected by the bad rows ``source`` names ("TABLE WHERE PREDICATE",
        "TABLE@vK WHERE ..." for data version K), in saved ``result`` or in ``query``'s output;
        ``DL`` narrowed to the bad ids.  ``mode``: stored (default with a result) or reeval.
        With neither ``result`` nor ``query``: ``{result name: affected rows}`` over every
        saved result (stored lineage)."""
        from dltrace.impact import impact

        return impact(self, source, result, query, mode, semantics, use_index)

    def explain(self, result: str, row: int) -> dict:
        """``{table: DataFrame}``: the base rows in the DL of row ``row`` of saved ``result``."""
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

        self._ensure_views()
        return define_views(self, [results] if isinstance(results, str) else list(results))

    def lineage_script(self, results: str | list[str], query: str | None = None) -> str:
        """The same views as a ``spark-sql`` script over the catalog's Parquet, then ``query``."""
        from dltrace.summary import script

        return script(self, [results] if isinstance(results, str) else list(results), query)
