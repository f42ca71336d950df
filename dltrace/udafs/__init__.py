"""The Spark side of roBDD lineage: ``DLUNION`` and friends as Arrow UDFs over bytes.

A ``bdd`` lineage set is a ``binary`` cell holding an encoded set
(:mod:`dltrace.bddsets.encoding`): the compact choice per set, sorted ids (gaps or
runs as varints) or a roBDD where that is smaller (periodic sets).  CUDD functions
cannot cross process boundaries, so every function here takes and returns bytes, and
every one reads both kinds.  Grouping stays native: the rewriter feeds these functions
``collect_set``/``collect_list`` results, so Spark still aggregates map-side and a UDF
sees groups (or output rows), never input rows.  Each Arrow batch is handled whole
(:func:`dltrace.bddsets.bulk.union_by_row`): its sets are decoded straight from the
Arrow buffers and all its sets are encoded in the same numpy passes, so Python's work
follows the batch's ids, not its number of rows (per-row Python made a query of tens of
thousands of output rows take minutes; a roBDD per row, about 40 nodes per scattered id,
cost many times the sorted encoding's time and bytes: docs/performance.md, "Measurements behind design choices").

* ``dl_bdd_union(sets array<binary>, ids array<bigint>) -> binary``: the union of the sets
  and the ids (NULL sets and NULL ids count as ∅) — DLUNION, joins and the final DL;
* ``dl_ids(binary) -> array<bigint>``: the ids of a set, ascending (decoding for output).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from dltrace.bddsets.bulk import ids_by_row, union_by_row
from dltrace.bddsets.encoding import KIND_UNION, DecodedBatch, decode_buffer, join_parts

_registered: set[int] = set()
REPEAT_MIN_IDS = 1024
SHARED_MIN_BYTES = 1024


def _row_slices(lists: pa.Array) -> tuple[np.ndarray, np.ndarray, pa.Array]:
    """Each value's row, per-value validity and the values of a list column (NULL lists are empty)."""
    lists = lists.combine_chunks() if isinstance(lists, pa.ChunkedArray) else lists
    offsets = lists.offsets.to_numpy()
    values = lists.values.slice(offsets[0], offsets[-1] - offsets[0])
    rows = np.repeat(np.arange(len(lists)), np.diff(offsets))
    valid = (
        np.ones(len(values), dtype=bool) if values.null_count == 0 else values.is_valid().to_numpy(zero_copy_only=False)
    )
    if lists.null_count:  # Arrow allows a NULL list to span values: they do not count
        valid &= lists.is_valid().to_numpy(zero_copy_only=False)[rows]
    return rows, valid, values


def _binary_buffers(column: pa.Array) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A binary column's data buffer (uint8) and each cell's start and end in it."""
    column = column.cast(pa.large_binary())
    _, offsets_buffer, data_buffer = column.buffers()
    offsets = np.frombuffer(offsets_buffer, dtype=np.int64)[column.offset : column.offset + len(column) + 1]
    data = np.frombuffer(data_buffer, dtype=np.uint8) if data_buffer is not None else np.empty(0, dtype=np.uint8)
    return data, offsets[:-1], offsets[1:]


def _decode_column(column: pa.Array, valid: np.ndarray) -> DecodedBatch:
    """Decode the valid cells of a binary column straight from its Arrow buffers."""
    data, starts, ends = _binary_buffers(column)
    return decode_buffer(data, starts[valid], ends[valid])


def _binary_column(data: np.ndarray, offsets: np.ndarray) -> pa.Array:
    """An Arrow ``binary`` column from concatenated bytes and their offsets."""
    if offsets[-1] >= 1 << 31:
        raise ValueError(
            "lineage sets of one Arrow batch exceed 2 GiB; lower spark.sql.execution.arrow.maxRecordsPerBatch"
        )
    return pa.Array.from_buffers(
        pa.binary(), offsets.size - 1, [None, pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(data)]
    )


def _repeats_previous(sets: pa.ListArray, ids: pa.ListArray) -> np.ndarray:
    """Rows without sets whose ids are those of the row before, in the same order.

    A subquery's lineage copy is the same array on every row (Q11: 1048 rows of the
    same 32k ids); its set is then built once per batch, not once per row. Only rows
    of at least ``REPEAT_MIN_IDS`` ids are compared (slice against slice), so this loop
    runs at most once per that many ids; smaller rows cost less to build than to compare.
    """
    repeats = np.zeros(len(ids), dtype=bool)
    if len(ids) < 2 or ids.values.null_count or ids.null_count:
        return repeats
    offsets = ids.offsets.to_numpy()
    counts = np.diff(offsets)
    no_sets = np.diff(sets.offsets.to_numpy()) == 0
    candidates = np.flatnonzero(
        no_sets[1:] & no_sets[:-1] & (counts[1:] == counts[:-1]) & (counts[1:] >= REPEAT_MIN_IDS)
    ) + 1
    values = ids.values.to_numpy()
    for row in candidates.tolist():
        repeats[row] = np.array_equal(values[offsets[row] : offsets[row + 1]], values[offsets[row - 1] : offsets[row]])
    return repeats


def union_column(sets: pa.Array, ids: pa.Array) -> pa.Array:
    """Row by row, the encoding of ``sets ∪ ids``; all rows of the batch built together.

    Each row gets the compact encoding of its union, except a row holding a large set that
    other rows of the batch share: that set is kept as one part of a union (kind 3, see
    :func:`_shared_inputs`), beside the compact encoding of the rest."""
    sets = sets.combine_chunks() if isinstance(sets, pa.ChunkedArray) else sets
    ids = ids.combine_chunks() if isinstance(ids, pa.ChunkedArray) else ids
    kept = ~_repeats_previous(sets, ids)
    if kept.all():
        return _union(sets, ids)
    rows = pa.array(np.flatnonzero(kept))
    return _union(sets.take(rows), ids.take(rows)).take(pa.array(np.cumsum(kept) - 1))


def _shared_inputs(
    values: pa.Array, data: np.ndarray, starts: np.ndarray, ends: np.ndarray, value_row: np.ndarray,
    valid: np.ndarray, rows: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per row, the input set it shares with other rows of the batch (index of the input,
    or -1); per input, whether it is its row's shared set (or the same bytes again); and
    one input of each distinct shared set. ``data``/``starts``/``ends``: ``values``' buffers.

    An input qualifies when it is at least ``SHARED_MIN_BYTES`` long and byte for byte the
    same as an input of another row: an uncorrelated subquery's lineage, which every row
    of a query unions with its own (Q20: ~17,700 ids into each of 186 rows). Such a set is
    held as a part of each row's encoding (a union, kind 3) rather than merged per row.
    """
    held = np.full(rows, -1, dtype=np.int64)
    covered = np.zeros(starts.size, dtype=bool)
    large = np.flatnonzero(valid & (ends - starts >= SHARED_MIN_BYTES))
    large = large[data[starts[large] + 4] != KIND_UNION]  # (a union's parts are merged, not nested)
    if large.size < 2:
        return held, covered, large[:0]
    codes = values.take(pa.array(large)).dictionary_encode().indices.to_numpy(zero_copy_only=False).astype(np.int64)
    large_rows = value_row[large]
    row_counts = np.bincount(np.unique(codes * rows + large_rows) // rows, minlength=int(codes.max()) + 1)
    shared = np.flatnonzero(row_counts[codes] >= 2)  # in two rows or more
    held_rows, first = np.unique(large_rows[shared], return_index=True)
    held[held_rows] = large[shared[first]]
    held_code = np.full(rows, -1, dtype=np.int64)
    held_code[held_rows] = codes[shared[first]]
    covered[large] = codes == held_code[large_rows]
    _, distinct = np.unique(codes[shared], return_index=True)
    return held, covered, large[shared[distinct]]


def _union(sets: pa.ListArray, ids: pa.ListArray) -> pa.Array:
    rows = len(ids)
    set_row, set_valid, set_values = _row_slices(sets)
    id_row, id_valid, id_values = _row_slices(ids)
    id_row = id_row[id_valid]
    id_numbers = id_values.fill_null(0).to_numpy()[id_valid].astype(np.int64, copy=False)  # (NULLs would give floats)
    data, starts, ends = _binary_buffers(set_values)
    held, covered, distinct_held = _shared_inputs(set_values, data, starts, ends, set_row, set_valid, rows)
    rest = set_valid & ~covered
    rest_data, rest_offsets = union_by_row(
        rows, decode_buffer(data, starts[rest], ends[rest]), set_row[rest], id_numbers, id_row
    )
    holding = np.flatnonzero(held >= 0)
    if holding.size == 0:
        return _binary_column(rest_data, rest_offsets)
    decode_buffer(data, starts[distinct_held], ends[distinct_held])  # checks them: held sets are copied, not decoded
    has_rest = (held < 0) | (np.bincount(set_row[rest], minlength=rows) > 0) | (np.bincount(id_row, minlength=rows) > 0)
    # each row's parts: its held set (in data), then the union of the rest (in rest_data, after data)
    part_row = np.concatenate((holding, np.flatnonzero(has_rest)))
    part_starts = np.concatenate((starts[held[holding]], data.size + rest_offsets[:-1][has_rest]))
    part_ends = np.concatenate((ends[held[holding]], data.size + rest_offsets[1:][has_rest]))
    order = np.argsort(part_row, kind="stable")
    return _binary_column(
        *join_parts(np.concatenate((data, rest_data)), part_starts[order], part_ends[order], part_row[order], rows)
    )


def ids_column(sets: pa.Array) -> pa.Array:
    """Row by row, the sorted ids of a set (NULL stays NULL)."""
    sets = sets.combine_chunks() if isinstance(sets, pa.ChunkedArray) else sets
    valid = sets.is_valid().to_numpy(zero_copy_only=False)
    ids, offsets = ids_by_row(len(sets), _decode_column(sets, valid), np.flatnonzero(valid))
    return pa.ListArray.from_arrays(
        pa.array(offsets, type=pa.int32()), pa.array(ids, type=pa.int64()), mask=pa.array(~valid)
    )


def register(spark) -> None:
    """Make the functions callable from SQL in ``spark`` (once per session)."""
    if id(spark) in _registered:
        return
    from pyspark.sql.functions import arrow_udf

    spark.udf.register("dl_bdd_union", arrow_udf(union_column, "binary"))
    spark.udf.register("dl_ids", arrow_udf(ids_column, "array<bigint>"))
    _registered.add(id(spark))
