"""Backward explain (docs/architecture.md, "Impact and explain"): the base rows behind one row of a saved result.

The row's DL already names them; explain only fetches them, from the data version each
table had when the result was saved (a revision keeps old versions, and the DL holds their
ids).  Through a pipeline the DL may hold ids of several versions of a table (a step read
an older result and a newer table); each id is unique across versions, so the rows are
fetched from each of them once.  A table's ids, when few, are a literal list that Parquet's min/max statistics turn
into skipped row groups (table files are in id order); when many (a DL of 200,000 ids),
they are joined inside Spark instead of shipped as literals.  A row's DL includes the
shared sets it names (``dltrace/results.py``).
"""

from __future__ import annotations

import numpy as np

from dltrace.catalog import ID_COLUMN, quoted
from dltrace.engine import Engine
from dltrace.ids import ROW_BITS
from dltrace.impact import files
from dltrace.impact.search import LITERAL_IDS
from dltrace.results import ResultStore
from dltrace.table_data import table_rows


class Explained(dict):
    """``{table: DataFrame}``, the base rows by table, and ``ids``: ``{table: how many of the
    row's DL ids come from it}``, known without running the frames."""

    def __init__(self, frames: dict[str, object], ids: dict[str, int]):
        super().__init__(frames)
        self.ids = ids


def explain(session: Engine, result: str, row: int, from_files: bool = False,
            page: tuple[int, int] | None = None) -> Explained:
    """``{table: DataFrame of its base rows in DL(row)}``: ``_dl_id`` then the table's columns
    (``Explained``: also how many ids each table gave).  With ``from_files``, a table whose
    rows pyarrow reads as Spark would gives a pyarrow Table instead (``files.base_rows``; the
    command line), and Spark is not started for it.  With ``page`` ``(offset, limit)``, only
    the rows of each table's ids ``offset`` to ``offset + limit`` (in id order) are fetched:
    the explorer's pages of a DL of millions of ids read a page's rows, not millions."""
    saved, ids_by_table = row_ids_by_table(session, result, row)
    explained = Explained({}, {table: len(ids) for table, ids in ids_by_table.items()})
    for table, ids in ids_by_table.items():
        if page is not None:
            ids = ids[page[0]:page[0] + page[1]]
        explained[table] = base_rows(session, saved, table, ids, from_files)
    return explained


def row_ids_by_table(session: Engine, result: str, row: int) -> tuple:
    """``(saved result, {table: sorted ids of DL(row) from it})``, tables in code order."""
    store = ResultStore(session.catalog)
    saved = store.get(result)
    ids = store.row_ids(saved, row)  # its own ids and those of the shared sets it names
    codes = ids >> ROW_BITS
    return saved, {session.catalog.table_of_code(int(code)): ids[codes == code] for code in np.unique(codes)}


def base_rows(session: Engine, saved, table: str, ids: np.ndarray, from_files: bool):
    """The rows of ``table`` whose ids are ``ids`` (sorted), from the versions ``saved`` read:
    a pyarrow Table where pyarrow reads them as Spark would (``from_files``), else a Spark
    DataFrame in id order."""
    read = files.base_rows(session.catalog, table, saved.lineage_tables.get(table), ids) if from_files else None
    if read is not None:
        return read
    spark = session.spark
    data = None
    for version in saved.lineage_tables.get(table) or [None]:
        frame = table_rows(spark, session.catalog, table, version)
        data = frame if data is None else data.unionByName(frame, allowMissingColumns=True).dropDuplicates([ID_COLUMN])
    columns = [c for c in data.columns if c != ID_COLUMN]
    return rows_with_ids(spark, data, ids).select(ID_COLUMN, *map(quoted, columns)).orderBy(ID_COLUMN)


def rows_with_ids(spark, data, ids: np.ndarray):
    """The rows of ``data`` (a table's rows with ``_dl_id``) whose ids are among ``ids``: when
    few, a literal list, which Parquet's statistics turn into skipped row groups and pages
    (table files are in id order); when many, a broadcast semi join."""
    import pyarrow as pa
    from pyspark.sql import functions as F

    if len(ids) <= LITERAL_IDS:
        return data.where(f"{ID_COLUMN} IN ({', '.join(map(str, ids.tolist()))})" if len(ids) else "FALSE")
    wanted = spark.createDataFrame(pa.table({ID_COLUMN: ids}))  # already here: no second read of the row
    return data.join(F.broadcast(wanted), ID_COLUMN, "left_semi")
