"""The catalog's tables and saved results as temporary views of a Spark session.

A query reads tables and saved results by name: each needs a view in the Spark session
that runs it.  Views belong to the Spark session, which several ``LineageSession`` objects
(catalogs) may share, so what each view reads is tracked per Spark session (keyed by the
session object itself, forgotten with it) by absolute path: a view is made again only when
its files change.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar
from weakref import WeakKeyDictionary

from dltrace.catalog import Catalog
from dltrace.errors import CatalogError, SourceChanged
from dltrace.results import DL, ROW, SHARED_SET, ResultStore, SavedResult
from dltrace.rewriter.saved_result import LINEAGE_COLUMN, ROW_COLUMN, shared_view
from dltrace.table_data import backquoted, check_unchanged, table_rows


@dataclass
class _ViewsOfSpark:
    """What the views of one Spark session read."""

    paths: dict[str, str] = field(default_factory=dict)  # view name -> the Parquet it reads
    rows_only: set[str] = field(default_factory=set)  # saved results whose view lacks their resolved lineage


class SparkViews:
    """The views of one catalog in one Spark session, made on demand (``ensure``), with the
    errors of the tables and results that could not get one kept until a query reads them."""

    _of_spark: ClassVar[WeakKeyDictionary] = WeakKeyDictionary()  # Spark session -> _ViewsOfSpark

    def __init__(self, spark, catalog: Catalog) -> None:
        self.spark = spark
        self.catalog = catalog
        self.store = ResultStore(catalog)
        # why a table or result read could not get its view, raised by a query that reads it
        self.stale: dict[str, SourceChanged | CatalogError] = {}
        self._state: _ViewsOfSpark = self._of_spark.setdefault(spark, _ViewsOfSpark())

    @classmethod
    def forget(cls, spark) -> None:
        """Treat every view of ``spark`` as not made yet (its temporary views dropped by hand)."""
        state = cls._of_spark.get(spark)
        if state is not None:  # cleared in place: every SparkViews over ``spark`` shares it
            state.paths.clear()
            state.rows_only.clear()

    def path(self, name: str) -> str | None:
        """The Parquet the view ``name`` reads, None before it has one."""
        return self._state.paths.get(name)

    def rows_only(self, name: str) -> bool:
        """Whether saved result ``name``'s view has its rows without their resolved lineage."""
        return name in self._state.rows_only

    def ensure(self, names: set[str] | None = None, lineage: bool = True) -> None:
        """Views named as the catalog's tables, over their Parquet with ``_dl_id``, and as its
        saved results, over their rows with the saved DL as ``_dl_lineage``: all of them, or
        those among ``names`` (what a query reads: a pipeline step saved a moment ago gets its
        view when a later step reads it, not at every query in between).

        Without ``lineage`` (the query does not read ``_dl_lineage``: a step naming the rows it
        reads), the view of a result whose DLs name upstream rows has its rows alone: resolving
        them to base ids is a plan of joins that Spark would prune anyway, and building it
        costs more than the rest of a small step's planning.
        """
        self.stale = {}
        if names is not None:  # a result's shared sets are read through a view of their own
            names = names | {n.removeprefix(shared_view("")) for n in names if n.startswith(shared_view(""))}
        for name in self.catalog.tables:
            if names is None or name in names:
                self._ensure_table(name)
        for result in self.store.list():
            if names is None or result.name in names:
                self._ensure_result(result, rows_only=bool(result.references) and not lineage)

    def check_fresh(self, names) -> None:
        """Stop if one of ``names`` could not get its view (an in-place table's files changed,
        an upstream save a result names is gone)."""
        stale = sorted(set(names) & set(self.stale))
        if stale:
            raise self.stale[stale[0]]

    def base_rows(self, ids: list[int]) -> dict[str, list[dict]]:
        """The base rows behind ``ids``: ``{table: [row as dict, ...]}`` (key columns, or all)."""
        from pyspark.sql import functions as F

        by_table: dict[str, list[int]] = {}
        for dl_id in ids:
            by_table.setdefault(self.catalog.table_of_id(dl_id), []).append(int(dl_id))
        self.ensure()
        self.check_fresh(by_table)
        rows = {}
        for table, table_ids in by_table.items():
            entry = self.catalog.entry(table)
            columns = ["_dl_id", *(entry.key or list(entry.schema))]
            frame = self.spark.table(table).where(F.col("_dl_id").isin(table_ids)).select(*columns).orderBy("_dl_id")
            rows[table] = [row.asDict() for row in frame.collect()]
        return rows

    def _ensure_table(self, name: str) -> None:
        """The table's view; the files of an in-place table are checked first (a stat each)."""
        path = str(self.catalog.data_path(name))
        if self.catalog.tables[name].files:
            try:
                check_unchanged(self.catalog, name)
            except SourceChanged as error:
                self.stale[name] = error
                return
        if self._state.paths.get(name) != path:
            # the recorded schema spares Spark a job per table to infer it from footers
            table_rows(self.spark, self.catalog, name).createOrReplaceTempView(name)
            self._state.paths[name] = path

    def _ensure_result(self, result: SavedResult, rows_only: bool) -> None:
        """The result's view: its rows, with their whole DL unless ``rows_only``."""
        name, path = result.name, str(self.store.path(result.data))
        if self._state.paths.get(name) == path and (rows_only or name not in self._state.rows_only):
            return
        try:
            if rows_only:  # the upstream saves it names, down the chain, must still be there
                self.store.check_referenced(result)
                rows = self.store.rows(self.spark, result)
            else:
                rows = self.store.lineage_without_shared(self.spark, result)
        except CatalogError as error:  # e.g. the upstream save it names is gone
            self.stale[name] = error  # raised by a query that reads it, not by every query
            return
        columns = [*map(backquoted, result.query_columns), f"{ROW} AS {ROW_COLUMN}"]
        if not rows_only:
            # typed without NULL elements, as the rewriter's own sets: Spark sorts such arrays
            # natively instead of with a boxed comparator
            columns.append(f"array_compact({DL}) AS {LINEAGE_COLUMN}")
        rows.selectExpr(*columns).createOrReplaceTempView(name)
        if result.shared_sets:  # the sets every row shares; those held apart are in _dl_lineage
            sets = self.store.shared_sets(self.spark, result)
            sets.where(sets[SHARED_SET] < result.shared_sets).createOrReplaceTempView(shared_view(name))
        self._state.paths[name] = path
        if rows_only:
            self._state.rows_only.add(name)
        else:
            self._state.rows_only.discard(name)
