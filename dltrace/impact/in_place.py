"""Rows of a table registered in place, read by pyarrow by their position in its files.

An in-place row's id is its table's code, then its file's first row number (recorded at
registration) plus its position in the file (``table_data.id_sql``, what Spark computes from
``_metadata.row_index``).  So pyarrow finds the ids of the rows a predicate keeps by reading
the predicate's columns with their positions, and the rows of given ids by reading the row
groups that hold them: no JVM, one row group in memory at a time.  Files that are not local,
or whose columns are not named as the catalog's schema names them, are left to Spark (None).
"""

from __future__ import annotations

import os

import numpy as np

from dltrace.catalog import ID_COLUMN
from dltrace.ids import ROW_BITS

POSITION = "__dl_position"
BATCH_ROWS = 65_536


def _readable(files: list[dict], columns: list[str]):
    """The ``pyarrow.parquet.ParquetFile`` of each file, or None when one is not a local file
    or lacks one of ``columns``."""
    import pyarrow.parquet as pq

    if not all(os.path.isfile(record["path"]) for record in files):
        return None
    opened = [pq.ParquetFile(record["path"]) for record in files]
    if not all(set(columns) <= set(parquet.schema_arrow.names) for parquet in opened):
        return None
    return opened


def ids_where(code: int, files: list[dict], condition, columns: list[str]) -> np.ndarray | None:
    """The sorted ids of the rows of ``files`` that meet ``condition`` (a pyarrow dataset
    expression over ``columns``), or None when pyarrow cannot read them."""
    import pyarrow as pa

    opened = _readable(files, columns)
    if opened is None:
        return None
    found = [np.array([], dtype=np.int64)]
    for record, parquet in zip(files, opened):
        offset = record["first_row"]
        for batch in parquet.iter_batches(batch_size=BATCH_ROWS, columns=columns, use_threads=False):
            positions = pa.array(np.arange(offset, offset + batch.num_rows, dtype=np.int64))
            kept = pa.Table.from_batches([batch]).append_column(POSITION, positions).filter(condition)
            found.append(kept.column(POSITION).to_numpy())
            offset += batch.num_rows
    return np.unique(np.concatenate(found)) + (code << ROW_BITS)


def rows_by_id(code: int, files: list[dict], ids: np.ndarray, columns: list[str]):
    """``_dl_id`` then ``columns`` of the rows whose ids are ``ids`` (of this table), sorted
    by id, as a pyarrow Table; None when pyarrow cannot read them."""
    import pyarrow as pa

    opened = _readable(files, columns)
    if opened is None:
        return None
    wanted = np.unique(np.asarray(ids, dtype=np.int64)) - (code << ROW_BITS)
    parts = []
    for record, parquet in zip(files, opened):
        first = record["first_row"]
        local = wanted[(wanted >= first) & (wanted < first + record["rows"])] - first
        ends = np.cumsum([parquet.metadata.row_group(i).num_rows for i in range(parquet.num_row_groups)])
        groups = np.searchsorted(ends, local, side="right")  # the row group of each position
        for group in np.unique(groups):
            start = ends[group - 1] if group else 0
            rows = parquet.read_row_group(int(group), columns=columns, use_threads=False)
            taken = rows.take(pa.array(local[groups == group] - start))
            ids_taken = pa.array(local[groups == group] + first + (code << ROW_BITS), pa.int64())
            parts.append(taken.add_column(0, ID_COLUMN, ids_taken))
    if not parts:
        empty = opened[0].schema_arrow.empty_table().select(columns)
        return empty.add_column(0, ID_COLUMN, pa.array([], pa.int64()))
    return pa.concat_tables(parts, promote_options="permissive")  # files in row order: sorted by id
