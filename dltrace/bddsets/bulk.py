"""Byte-level entry points for the Spark UDF layer (:mod:`dltrace.udafs`).

Inside a pandas UDF, lineage sets arrive and leave as ``binary`` cells. These
functions go straight from byte strings to byte strings through numpy (runs and
node tables), without building Python set objects or CUDD functions:
a batch of encodings is decoded in one vectorized pass, unions are merges of
runs, and roBDDs are rebuilt level by level. ``None`` stands for SQL NULL and
is treated as the empty set (the padded side of an outer join contributes ∅).

``kind`` is ``"set"`` (sorted ids), ``"bdd"`` (roBDD) or ``"compact"`` (per set,
whichever of the two is smaller: what the Spark UDFs write, see
:func:`~dltrace.bddsets.encoding.compact_encodings`); inputs of either kind may be
mixed, the output has the requested kind.

>>> a = bytes_from_ids([10, 11, 12], "bdd")
>>> b = bytes_from_ids([12, 40], "set")
>>> ids_from_bytes(union_bytes([a, None, b], "bdd")).tolist()
[10, 11, 12, 40]
>>> contains_any_bytes(a, np.array([40, 11])), count_bytes(b)
(True, 2)
>>> contains_any_batch([a, b, None], np.array([40])).tolist()
[False, True, False]

Spark batches go through :func:`union_by_row` and :func:`ids_by_row`, which
handle all rows of a batch in the same numpy passes, so their Python work
follows the batch's ids and nodes, not its number of rows:

>>> data, offsets = union_by_row(3, decode_batch([a, b]), np.array([0, 2]), np.array([7, 7, 8]), np.array([0, 1, 1]))
>>> [ids_from_bytes(data[offsets[i]:offsets[i + 1]].tobytes()).tolist() for i in range(3)]
[[7, 10, 11, 12], [7, 8], [12, 40]]
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from .base import LineageSet, as_id_array, ids_to_keys, keys_to_ids
from .bdd import BddSet
from .encoding import (
    COMPACT,
    KIND_BDD,
    DecodedBatch,
    compact_encodings,
    decode_batch,
    encode_sorted_keys,
    encode_table,
    kind_code,
    kind_of,
    singleton_sorted_bytes,
    singleton_table_bytes,
    union_runs,
)
from .nodetable import build_from_runs, contains_keys, count_root
from .runs import distinct_owned_keys, keys_from_runs, merge_owned_runs, owned_runs, run_total, runs_from_keys
from .sorted_set import SortedIdSet

# Probe walks handle at most this many (set, probe) pairs at a time.
_WALK_CHUNK = 1 << 20


def decode(data: bytes) -> LineageSet:
    """The set an encoding holds, as the representation its kind byte names."""
    return (BddSet if kind_of(data) == KIND_BDD else SortedIdSet).from_bytes(data)


def _encode_runs(lo: np.ndarray, hi: np.ndarray, kind: str) -> bytes:
    if kind == COMPACT:
        data, _ = compact_encodings(lo, hi, np.zeros(lo.size, dtype=np.int64), 1)
        return data.tobytes()
    if kind_code(kind) == KIND_BDD:
        return encode_table(build_from_runs(lo, hi))
    return encode_sorted_keys(lo, hi)


def bytes_from_ids(ids: Any, kind: str = "bdd") -> bytes:
    """Encode a set of ids (any order, duplicates allowed)."""
    return _encode_runs(*runs_from_keys(ids_to_keys(as_id_array(ids))), kind)


def singleton_bytes(ids: Any, kind: str = "bdd") -> list[bytes]:
    """One encoding per id, ``{id}``, for a whole column at once (base-row lineage)."""
    keys = ids_to_keys(np.asarray(ids, dtype=np.int64).reshape(-1))
    if kind != COMPACT and kind_code(kind) == KIND_BDD:
        return singleton_table_bytes(keys)
    return singleton_sorted_bytes(keys)  # compact too: one id is never periodic


def _only_keys(batch: DecodedBatch) -> bool:
    return batch.run_lo.size == 0 and batch.forest.roots.size == 0


def ids_from_bytes(data: bytes) -> np.ndarray:
    """All ids of an encoding, ascending, as int64."""
    batch = decode_batch([data])
    if _only_keys(batch):
        return keys_to_ids(batch.keys)
    return keys_to_ids(keys_from_runs(*union_runs(batch)))


def union_bytes(encodings: Iterable[bytes | None], kind: str = "bdd") -> bytes:
    """Union of many encodings (the DLUNION aggregate), encoded as `kind`.

    Cost follows the total number of runs (and roBDD paths) of the inputs, not
    their ids, so clustered lineage of millions of ids unions cheaply.
    """
    if kind != COMPACT:
        kind_code(kind)  # reject an unknown kind before decoding anything
    present = [data for data in encodings if data is not None]
    return _encode_runs(*union_runs(decode_batch(present)), kind)


def union_by_row(
    rows: int, sets: DecodedBatch, set_row: np.ndarray, ids: np.ndarray, id_row: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Per row, the compact encoding of the union of its sets and ids, for all rows at once.

    ``set_row`` gives the row of each decoded input of ``sets``, ``id_row`` the
    row of each of ``ids`` (int64, any order, duplicates allowed); rows with
    neither are empty. Returns the encodings concatenated (uint8) and their
    offsets: each is the same encoding ``union_bytes(..., "compact")`` gives.
    """
    keys, key_owner = distinct_owned_keys(ids_to_keys(ids), id_row)
    lo, hi, owner = owned_runs(keys, key_owner)
    if not set_row.size:
        return compact_encodings(lo, hi, owner, rows, keys, key_owner)
    set_lo, set_hi, set_input = sets.blocks()
    lo, hi, owner = merge_owned_runs(
        np.concatenate((lo, set_lo)), np.concatenate((hi, set_hi)), np.concatenate((owner, set_row[set_input]))
    )
    return compact_encodings(lo, hi, owner, rows)


def ids_by_row(rows: int, sets: DecodedBatch, set_row: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row, the ascending ids of the union of its sets: int64 ids concatenated, and offsets."""
    lo, hi, owner = sets.blocks()
    lo, hi, owner = merge_owned_runs(lo, hi, set_row[owner])
    ids = keys_to_ids(keys_from_runs(lo, hi))  # refuses more ids than memory allows
    counts = np.bincount(owner, weights=(hi - lo).astype(np.float64) + 1, minlength=rows).astype(np.int64)
    return ids, np.concatenate(([0], np.cumsum(counts)))


def count_bytes(data: bytes) -> int:
    """Number of ids in an encoding, without listing them."""
    batch = decode_batch([data])
    if batch.forest.roots.size:
        return count_root(batch.forest, int(batch.forest.roots[0]))
    return int(batch.keys.size) + run_total(batch.run_lo, batch.run_hi)


def contains_any_bytes(data: bytes, probe_ids: Any) -> bool:
    """Whether the set shares an id with `probe_ids` (impact of bad source rows)."""
    return bool(contains_any_batch([data], probe_ids)[0])


def contains_any_batch(encodings: Sequence[bytes | None], probe_ids: Any) -> np.ndarray:
    """For each encoding (e.g. a column of result rows), whether it holds any probe id.

    One decode for the whole batch; roBDDs are walked by all (row, probe) pairs
    together, so the cost is rows x probes x at most 64 steps.
    """
    encodings = list(encodings)  # positional access, also for a pandas Series
    present = np.array([data is not None for data in encodings], dtype=bool)
    positions = np.flatnonzero(present)
    hits = np.zeros(len(encodings), dtype=bool)
    probes = ids_to_keys(as_id_array(probe_ids))
    if probes.size == 0 or positions.size == 0:
        return hits
    batch = decode_batch([encodings[i] for i in positions])
    if batch.keys.size:
        index = np.minimum(np.searchsorted(probes, batch.keys), probes.size - 1)
        hits[positions[batch.key_owner[probes[index] == batch.keys]]] = True
    if batch.run_lo.size:
        inside = np.searchsorted(probes, batch.run_hi, side="right") - np.searchsorted(probes, batch.run_lo)
        hits[positions[batch.run_owner[inside > 0]]] = True
    roots = batch.forest.roots
    rows_per_chunk = max(1, _WALK_CHUNK // probes.size)
    for first in range(0, roots.size, rows_per_chunk):
        chunk = roots[first : first + rows_per_chunk]
        found = contains_keys(batch.forest, np.repeat(chunk, probes.size), np.tile(probes, chunk.size))
        owners = batch.forest_owner[first : first + chunk.size]
        hits[positions[owners[found.reshape(chunk.size, probes.size).any(axis=1)]]] = True
    return hits
