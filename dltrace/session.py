"""``LineageSession``: the Python API (DESIGN §4) over a catalog and one Spark session."""

from __future__ import annotations

import os
import weakref
from pathlib import Path


from dltrace import granularity, rewriter
from dltrace.rewriter.base_table import tagged_row_ids
from dltrace.catalog import Catalog, TableEntry, register
from dltrace.errors import BadInput, DltraceError
from dltrace.plain import plain_sql, with_spark_names
from dltrace.results import read_parquet, tables_read
from dltrace.spark import get_spark

DEFAULT_CATALOG = ".dltrace"
_VIEW_PATHS: dict[tuple[int, str], str] = {}  # (Spark session, view name) -> the Parquet it reads


def catalog_dir(catalog: str | os.PathLike | None) -> Path:
    """``catalog``, else ``$DLTRACE_CATALOG``, else ``./.dltrace``."""
    return Path(catalog or os.environ.get("DLTRACE_CATALOG") or DEFAULT_CATALOG)


def spark_error(error: Exception) -> DltraceError:
    """A Spark exception as one line: analysis errors are the user's, others are failures."""
    from pyspark.errors import AnalysisException

    text = (getattr(error, "getMessage", None) or (lambda: str(error)))()
    first = next((line.strip() for line in str(text).splitlines() if line.strip()), type(error).__name__)
    cls = BadInput if isinstance(error, AnalysisException) else DltraceError
    return cls(f"Spark: {first}")


def check_savable(lineage_on: granularity.LineageOnArgument) -> None:
    """Saved results hold base-row ids, which impact and explain look up: granule ids
    (``LINEAGE ON``) name no rows, so such a result cannot be saved."""
    if lineage_on is not None:
        raise BadInput("save keeps base-row lineage for impact and explain: run the query without LINEAGE ON")


class LineageSession:
    """Registers tables, rewrites queries and runs them with lineage on Spark."""

    def __init__(self, catalog: str | os.PathLike | None = None, spark=None, master: str | None = None) -> None:
        self.catalog = Catalog(catalog_dir(catalog))
        self._spark = spark
        self._master = master
        # what each DataFrame ``sql`` returned was computed from, so that ``save(df, name)``
        # can record its query (weak: forgotten with the DataFrame)
        self._queries: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

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
    ) -> TableEntry:
        """Register a source (Parquet, CSV, JSON, ORC) as a table with lineage ids; ``header``:
        whether a CSV's first row names the columns (default: yes, unless it looks like data)."""
        return register(self.spark, self.catalog, name, path, key=key, order_by=order_by, fmt=format, header=header)

    def _ensure_views(self) -> None:
        """Temporary views named as the catalog's tables, over their Parquet with ``_dl_id``.

        Views belong to the Spark session, which several LineageSessions (catalogs) may share:
        what each view reads is tracked per Spark session, by absolute path.
        """
        for name, entry in self.catalog.tables.items():
            path = str(self.catalog.data_path(name))
            if _VIEW_PATHS.get((id(self.spark), name)) != path:
                # the recorded schema spares Spark a job per table to infer it from footers
                read_parquet(self.spark, path, entry.version_schema(None)).createOrReplaceTempView(name)
                _VIEW_PATHS[(id(self.spark), name)] = path

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
        if lineage_on is not None:
            return granularity.granular_sql(self, query, lineage_on, semantics, repr)
        return self.lineage_sql(query, semantics, repr, tagged_row_ids if tag_instances else None)

    def lineage_sql(
        self,
        query: str,
        semantics: str = "control",
        repr: str = "set",
        id_source: rewriter.IdSource | None = None,
        ids_ordered_by_table: bool = True,
    ) -> str:
        """The rewriter over this catalog, with ids from ``id_source`` (default: ``_dl_id``)."""
        codes = {name: entry.code for name, entry in self.catalog.tables.items()}
        tables = self.catalog.tables
        expression = rewriter.rewrite(
            rewriter.parse(query), self.catalog.schemas(), codes, repr, semantics, id_source, ids_ordered_by_table,
            table_rows={n: e.rows for n, e in tables.items()}, table_keys={n: e.key or [] for n, e in tables.items()},
        )
        return expression.sql(dialect="spark")

    def plain(self, query: str) -> str:
        """The query without lineage, as written (``*`` never shows ``_dl_id``): dltrace/plain.py."""
        return plain_sql(query, self.catalog.schemas())

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
        text = self.rewrite(query, semantics, repr, tag_instances, lineage_on) if lineage else self.plain(query)
        frame = self.run(text)
        if lineage:
            frame = with_spark_names(self, query, frame)
            self._queries[frame] = (query, semantics, repr, lineage_on)
        return frame

    def run(self, spark_sql: str):
        """Run Spark SQL over the catalog's tables, errors as one line."""
        from pyspark.errors import PySparkException

        from dltrace import udafs

        self._ensure_views()
        udafs.register(self.spark)
        try:
            return self.spark.sql(spark_sql)
        except PySparkException as error:
            raise spark_error(error) from None

    def script(self, query: str, semantics: str = "control", repr: str = "set", lineage_on: granularity.LineageOnArgument = None) -> str:
        """A self-contained script for ``spark-sql -f``: views over the Parquet, then the query."""
        if repr != "set":
            raise BadInput("spark-sql scripts use --repr set (the roBDD functions live in Python)")
        query, lineage_on = granularity.split_lineage_on(query, lineage_on)
        text = self.rewrite(query, semantics, repr, lineage_on=lineage_on)
        lines = ["-- dltrace: the catalog's tables as views (their Parquet carries _dl_id), then the query"]
        for name in tables_read(query, self.catalog):
            path = str(self.catalog.data_path(name)).replace("`", "``")
            lines.append(f"CREATE OR REPLACE TEMPORARY VIEW {name} AS SELECT * FROM parquet.`{path}`;")
        lines.append(text + ";")
        return "\n".join(lines) + "\n"

    def decode_granules(self, ids: list[int], query: str, lineage_on: granularity.LineageOnArgument = None) -> list[dict]:
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
        rows = {}
        for table, table_ids in by_table.items():
            entry = self.catalog.entry(table)
            columns = ["_dl_id", *(entry.key or list(entry.schema))]
            frame = self.spark.table(table).where(F.col("_dl_id").isin(table_ids)).select(*columns).orderBy("_dl_id")
            rows[table] = [row.asDict() for row in frame.collect()]
        return rows

    # Saved results, impact and explain (DESIGN §7): dltrace/results.py, dltrace/impact/.

    def save(self, frame, name: str, query: str | None = None, semantics: str | None = None,
             repr: str | None = None, index: bool | None = None):
        """Keep ``frame`` (a result of ``sql``) with its lineage as result ``name``: Parquet with
        a ``_row`` number per output row, plus a forward index (id -> rows): always (``index``
        True), never (False), or when the result is large enough for it to pay (None).
        ``query`` is needed only for a DataFrame ``sql`` did not return."""
        from dltrace.results import ResultStore

        made_by = self._queries.get(frame)
        if query is None and made_by is None:
            raise BadInput("save: this DataFrame was not returned by sql() with row lineage: pass query=")
        check_savable(made_by[3] if made_by else None)
        if query is not None:
            check_savable(granularity.split_lineage_on(query, None)[1])
        query = query if query is not None else made_by[0]
        semantics = semantics or (made_by[1] if made_by else "control")
        repr = repr or (made_by[2] if made_by else "set")
        return ResultStore(self.catalog).save(frame, name, query, semantics, repr, index)

    def results(self):
        """The saved results (metadata: query, catalog version, rows, ...)."""
        from dltrace.results import ResultStore

        return ResultStore(self.catalog).list()

    def result(self, name: str):
        """The rows of saved result ``name``: ``_row``, the query's columns, ``DL``."""
        from dltrace.results import ROW, ResultStore

        store = ResultStore(self.catalog)
        return store.rows(self.spark, store.get(name)).orderBy(ROW)

    def drop_result(self, name: str) -> None:
        from dltrace.results import ResultStore

        ResultStore(self.catalog).drop(name)

    def impact(self, source: str, result: str | None = None, query: str | None = None, mode: str | None = None,
               semantics: str = "control", use_index: bool = True):
        """The output rows affected by the bad rows ``source`` names ("TABLE WHERE PREDICATE",
        "TABLE@vK WHERE ..." for data version K), in saved ``result`` or in ``query``'s output;
        ``DL`` narrowed to the bad ids.  ``mode``: stored (default with a result) or reeval."""
        from dltrace.impact import impact

        return impact(self, source, result, query, mode, semantics, use_index)

    def explain(self, result: str, row: int) -> dict:
        """``{table: DataFrame}``: the base rows in the DL of row ``row`` of saved ``result``."""
        from dltrace.impact import explain

        return explain(self, result, row)
