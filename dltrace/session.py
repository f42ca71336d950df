"""``LineageSession``: the Python API (DESIGN §4) over a catalog and one Spark session."""

from __future__ import annotations

import os
from pathlib import Path

from sqlglot import exp

from dltrace import rewriter
from dltrace.rewriter.base_table import tagged_row_ids
from dltrace.catalog import Catalog, TableEntry, register
from dltrace.errors import BadInput, DltraceError
from dltrace.spark import get_spark

DEFAULT_CATALOG = ".dltrace"


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


class LineageSession:
    """Registers tables, rewrites queries and runs them with lineage on Spark."""

    def __init__(self, catalog: str | os.PathLike | None = None, spark=None, master: str | None = None) -> None:
        self.catalog = Catalog(catalog_dir(catalog))
        self._spark = spark
        self._master = master
        self._views: dict[str, str] = {}

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
    ) -> TableEntry:
        """Register a source (Parquet, CSV, JSON, ORC) as a table with lineage ids."""
        return register(self.spark, self.catalog, name, path, key=key, order_by=order_by, fmt=format)

    def _ensure_views(self) -> None:
        """Temporary views named as the catalog's tables, over their Parquet with ``_dl_id``."""
        for name, entry in self.catalog.tables.items():
            if self._views.get(name) != entry.path:
                self.spark.read.parquet(str(self.catalog.data_path(name))).createOrReplaceTempView(name)
                self._views[name] = entry.path

    def rewrite(self, query: str, semantics: str = "control", repr: str = "set", tag_instances: bool = False) -> str:
        """The lineage query as Spark SQL (it reads the catalog's tables by name).

        ``tag_instances`` is a testing aid: ids carry the number of the table occurrence
        they came through in their top bits (the paper's tree definition, §3.1).
        """
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
        expression = rewriter.rewrite(
            rewriter.parse(query), self.catalog.schemas(), codes, repr, semantics, id_source, ids_ordered_by_table
        )
        return expression.sql(dialect="spark")

    def plain(self, query: str) -> str:
        """The query without lineage, qualified like the lineage query (``*`` never shows ``_dl_id``)."""
        return rewriter.qualify_against_catalog(rewriter.parse(query), self.catalog.schemas()).sql(dialect="spark")

    def sql(self, query: str, semantics: str = "control", repr: str = "set", lineage: bool = True, tag_instances: bool = False):
        """Run ``query`` on Spark; the DataFrame has the query's columns plus ``DL``."""
        text = self.rewrite(query, semantics, repr, tag_instances) if lineage else self.plain(query)
        return self.run(text)

    def run(self, spark_sql: str):
        """Run Spark SQL over the catalog's tables, errors as one line."""
        from pyspark.errors import PySparkException

        self._ensure_views()
        try:
            return self.spark.sql(spark_sql)
        except PySparkException as error:
            raise spark_error(error) from None

    def script(self, query: str, semantics: str = "control", repr: str = "set") -> str:
        """A self-contained script for ``spark-sql -f``: views over the Parquet, then the query."""
        if repr != "set":
            raise BadInput("spark-sql scripts use --repr set (the roBDD functions live in Python)")
        text = self.rewrite(query, semantics, repr)
        used = {t.name.lower() for t in rewriter.parse(query).find_all(exp.Table)}
        lines = ["-- dltrace: the catalog's tables as views (their Parquet carries _dl_id), then the query"]
        for name in sorted(used & set(self.catalog.tables)):
            path = str(self.catalog.data_path(name)).replace("`", "``")
            lines.append(f"CREATE OR REPLACE TEMPORARY VIEW {name} AS SELECT * FROM parquet.`{path}`;")
        lines.append(text + ";")
        return "\n".join(lines) + "\n"

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
