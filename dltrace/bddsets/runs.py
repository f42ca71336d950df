"""Runs of consecutive keys: the working form of clustered lineage sets.

Ids are assigned chronologically, so lineage sets are mostly long runs of
consecutive ids. A run ``[lo, hi]`` (inclusive, uint64 keys) costs the same
whether it holds 1 or 10^7 ids, so unions, encodings and BDD construction all
go through runs and only expand to single keys when the caller asks for ids.
Inclusive bounds avoid overflow at key 2**64 - 1.

>>> lo, hi = runs_from_keys(np.array([3, 4, 5, 9], dtype=np.uint64))
>>> lo.tolist(), hi.tolist()
([3, 9], [5, 9])
>>> lo, hi = merge_runs(np.array([8, 1], dtype=np.uint64), np.array([9, 7], dtype=np.uint64))
>>> lo.tolist(), hi.tolist()
([1], [9])
"""

from __future__ import annotations

import numpy as np

MAX_MATERIALIZED_IDS = 1 << 27  # 1 GiB of ids: more is a corrupt or foreign encoding, not lineage

_ONE = np.uint64(1)


def runs_from_keys(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Maximal runs of a sorted, duplicate-free uint64 key array."""
    if keys.size == 0:
        return keys[:0].copy(), keys[:0].copy()
    breaks = np.flatnonzero(keys[1:] - keys[:-1] != _ONE)
    first = np.empty(breaks.size + 1, dtype=np.int64)
    first[0] = 0
    first[1:] = breaks + 1
    last = np.empty_like(first)
    last[:-1] = breaks
    last[-1] = keys.size - 1
    return keys[first], keys[last]


def merge_runs(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Union of runs in any order, overlapping or adjacent: maximal sorted runs."""
    if lo.size == 0:
        return lo.astype(np.uint64), hi.astype(np.uint64)
    order = np.argsort(lo, kind="stable")  # merges presorted pieces in linear time
    lo, hi = lo[order], hi[order]
    reach = np.maximum.accumulate(hi)
    # A new run starts where lo is beyond reach + 1 (written without reach + 1,
    # which would wrap around at 2**64 - 1).
    starts_new = (lo[1:] > reach[:-1]) & (lo[1:] - reach[:-1] > _ONE)
    first = np.concatenate(([0], np.flatnonzero(starts_new) + 1))
    return lo[first], np.maximum.reduceat(hi, first)


def run_total(lo: np.ndarray, hi: np.ndarray) -> int:
    """Exact number of keys covered by disjoint runs, as a Python int."""
    if lo.size == 0:
        return 0
    spans = hi - lo  # each < 2**64; their sum may not be
    approximate = float(spans.astype(np.float64).sum())
    if approximate < 2.0**62:
        return int(spans.sum()) + int(lo.size)
    return sum(int(span) for span in spans.tolist()) + int(lo.size)


def keys_from_runs(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Expand disjoint sorted runs into every key they cover, ascending."""
    total = run_total(lo, hi)
    if total > MAX_MATERIALIZED_IDS:
        raise ValueError(f"lineage set of {total} ids is too large to list id by id")
    if total == 0:
        return np.empty(0, dtype=np.uint64)
    lengths = (hi - lo + _ONE).astype(np.int64)
    first_index = np.cumsum(lengths) - lengths
    base = np.repeat(lo - first_index.astype(np.uint64), lengths)
    return base + np.arange(total, dtype=np.uint64)

