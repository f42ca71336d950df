"""The Spark side of roBDD lineage: ``DLUNION`` and friends as Arrow UDFs over bytes.

A ``bdd`` lineage set is a ``binary`` cell holding a serialized roBDD
(:mod:`dltrace.bddsets`).  CUDD functions cannot cross process boundaries, so every
function here takes and returns bytes.  Grouping stays native: the rewriter feeds these
functions ``collect_set``/``collect_list`` results, so Spark still aggregates map-side
and the UDF runs once per group (or per output row), never per input row.

* ``dl_bdd_union(sets array<binary>, ids array<bigint>) -> binary``: the union of the sets
  and the ids (NULL sets and NULL ids count as ∅) — DLUNION, joins and the final DL;
* ``dl_ids(binary) -> array<bigint>``: the ids of a set, ascending (decoding for output);
* ``dl_count(binary) -> bigint`` and ``dl_contains_any(binary, array<bigint>) -> boolean``
  (impact questions over stored roBDD lineage).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from dltrace.bddsets import bytes_from_ids, contains_any_batch, count_bytes, ids_from_bytes, singleton_bytes, union_bytes

KIND = "bdd"
_registered: set[int] = set()


def _row_slices(lists: pa.Array) -> tuple[np.ndarray, np.ndarray, pa.Array]:
    """Offsets, per-value validity and values of a list column (NULL lists are empty)."""
    lists = lists.combine_chunks() if isinstance(lists, pa.ChunkedArray) else lists
    offsets = lists.offsets.to_numpy()
    start = offsets[0]
    values = lists.values.slice(start, offsets[-1] - start)
    valid = np.ones(len(values), dtype=bool) if values.null_count == 0 else values.is_valid().to_numpy(zero_copy_only=False)
    return offsets - start, valid, values


def union_column(sets: pa.Array, ids: pa.Array) -> pa.Array:
    """Row by row, the roBDD of ``sets ∪ ids``."""
    set_offsets, set_valid, set_values = _row_slices(sets)
    id_offsets, id_valid, id_values = _row_slices(ids)
    id_numbers = id_values.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
    set_bytes = set_values.to_pylist()
    out: list[bytes] = [b""] * len(ids)
    # base-row lineage, one valid id and no sets, is encoded for all such rows at once
    firsts = id_offsets[:-1]
    single = (np.diff(set_offsets) == 0) & (np.diff(id_offsets) == 1)
    single[single] = id_valid[firsts[single]]
    for row, encoded in zip(np.flatnonzero(single), singleton_bytes(id_numbers[firsts[single]], KIND)):
        out[row] = encoded
    for row in np.flatnonzero(~single):
        lo, hi = id_offsets[row], id_offsets[row + 1]
        row_ids = id_numbers[lo:hi][id_valid[lo:hi]]
        first, last = set_offsets[row], set_offsets[row + 1]
        parts = [b for b, ok in zip(set_bytes[first:last], set_valid[first:last]) if ok and b]
        if row_ids.size or not parts:
            parts.append(bytes_from_ids(row_ids, KIND))
        out[row] = parts[0] if len(parts) == 1 else union_bytes(parts, KIND)
    return pa.array(out, type=pa.binary())


def ids_column(sets: pa.Array) -> pa.Array:
    """Row by row, the sorted ids of a set (NULL stays NULL)."""
    return pa.array([None if b is None else ids_from_bytes(b) for b in sets.to_pylist()], type=pa.list_(pa.int64()))


def count_column(sets: pa.Array) -> pa.Array:
    return pa.array([None if b is None else count_bytes(b) for b in sets.to_pylist()], type=pa.int64())


def contains_any_column(sets: pa.Array, probes: pa.Array) -> pa.Array:
    """Row by row, whether the set holds any of the probe ids (the same probes on all rows)."""
    first = next((p for p in probes.to_pylist() if p is not None), [])
    return pa.array(contains_any_batch(sets.to_pylist(), np.asarray(first, dtype=np.int64)), type=pa.bool_())


def register(spark) -> None:
    """Make the functions callable from SQL in ``spark`` (once per session)."""
    if id(spark) in _registered:
        return
    from pyspark.sql.functions import arrow_udf

    spark.udf.register("dl_bdd_union", arrow_udf(union_column, "binary"))
    spark.udf.register("dl_ids", arrow_udf(ids_column, "array<bigint>"))
    spark.udf.register("dl_count", arrow_udf(count_column, "bigint"))
    spark.udf.register("dl_contains_any", arrow_udf(contains_any_column, "boolean"))
    _registered.add(id(spark))
