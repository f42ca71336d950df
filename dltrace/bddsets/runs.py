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

The ``owned`` variants do the same for many sets at once (one per owner, e.g.
per output row of a Spark batch) in a fixed number of numpy passes:

>>> lo, hi, owner = owned_runs_from_keys(np.array([5, 4, 9, 1], dtype=np.uint64), np.array([0, 0, 0, 2]))
>>> lo.tolist(), hi.tolist(), owner.tolist()
([4, 9, 1], [5, 9, 1], [0, 0, 2])
"""

from __future__ import annotations

import numpy as np

MAX_MATERIALIZED_IDS = 1 << 27  # 1 GiB of ids: more is a corrupt or foreign encoding, not lineage

_ONE = np.uint64(1)
_LOW_BITS = np.uint64(48)
_LOW_MASK = np.uint64((1 << 48) - 1)


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


def sort_owned_keys(keys: np.ndarray, owner: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Keys and owners (non-negative ints) sorted by (owner, key).

    Packs both into one uint64 when they fit, so a single np.sort does it (faster
    than np.lexsort's several passes): the owner above the key's low 48 bits and the rank
    of its top 16 bits (the table code of a row id; a batch has few distinct ones).
    The sort is numpy's stable one: ids come from Spark in sorted pieces (a
    ``collect_list`` gathers each partition's ids in scan order, a subquery's copy
    is sorted), which it merges in near-linear time where the default quicksort
    starts over (and it is no slower on shuffled ids).
    """
    if keys.size == 0:
        return keys.astype(np.uint64), owner.astype(np.int64)
    same_owner = owner[1:] == owner[:-1]
    if np.all((owner[1:] > owner[:-1]) | (same_owner & (keys[1:] >= keys[:-1]))):
        return keys, owner.astype(np.int64)  # sorted already (e.g. a subquery's sorted copy on every row)
    if not same_owner.size or same_owner.all():  # one set (a global aggregate's batch): no packing needed
        return np.sort(keys, kind="stable"), owner.astype(np.int64)
    top = (keys >> _LOW_BITS).astype(np.int64)
    present = np.zeros(1 << 16, dtype=bool)
    present[top] = True
    top_codes = np.flatnonzero(present).astype(np.uint64)
    top_bits = int(top_codes.size - 1).bit_length()
    owner_bits = int(owner.max()).bit_length()
    if owner_bits + top_bits + 48 > 64:
        order = np.lexsort((keys, owner))
        return keys[order], owner[order].astype(np.int64)
    rank = (np.cumsum(present) - 1).astype(np.uint64)
    packed = (owner.astype(np.uint64) << np.uint64(48 + top_bits)) | (rank[top] << _LOW_BITS) | (keys & _LOW_MASK)
    packed.sort(kind="stable")
    top_rank = ((packed >> _LOW_BITS) & np.uint64((1 << top_bits) - 1)).astype(np.int64)
    return (top_codes[top_rank] << _LOW_BITS) | (packed & _LOW_MASK), (packed >> np.uint64(48 + top_bits)).astype(
        np.int64
    )


def owned_runs_from_keys(keys: np.ndarray, owner: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Maximal runs of each owner's keys (any order, duplicates allowed), sorted by (owner, lo)."""
    return owned_runs(*distinct_owned_keys(keys, owner))


def distinct_owned_keys(keys: np.ndarray, owner: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each owner's keys (any order, duplicates allowed) sorted by (owner, key), duplicates dropped."""
    keys, owner = sort_owned_keys(keys, owner)
    if keys.size == 0:
        return keys, owner
    distinct = np.ones(keys.size, dtype=bool)
    distinct[1:] = (owner[1:] != owner[:-1]) | (keys[1:] != keys[:-1])
    return (keys, owner) if distinct.all() else (keys[distinct], owner[distinct])


def owned_runs(keys: np.ndarray, owner: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Maximal runs of keys sorted by (owner, key) without duplicates, with their owners."""
    if keys.size == 0:
        return keys, keys.copy(), owner
    new_run = np.ones(keys.size, dtype=bool)
    new_run[1:] = (owner[1:] != owner[:-1]) | (keys[1:] - keys[:-1] != _ONE)
    first = np.flatnonzero(new_run)
    last = np.append(first[1:] - 1, keys.size - 1)
    return keys[first], keys[last], owner[first]


def merge_owned_runs(lo: np.ndarray, hi: np.ndarray, owner: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Union of each owner's runs (any order, overlapping or adjacent): maximal runs by (owner, lo).

    Sweeps start (+1) and end (-1) events sorted by (owner, key, starts first):
    each owner's events sum to 0, so one cumulative sum over all owners gives
    every key's coverage, and a merged run spans from a 0 -> 1 step to a 1 -> 0 step.
    """
    if lo.size == 0:
        return lo.astype(np.uint64), hi.astype(np.uint64), owner.astype(np.int64)
    points = np.concatenate((lo, hi))
    is_end = np.repeat(np.array([False, True]), lo.size)
    owners = np.concatenate((owner, owner))
    order = np.lexsort((is_end, points, owners))
    points, is_end, owners = points[order], is_end[order], owners[order]
    step = np.where(is_end, -1, 1)
    coverage = np.cumsum(step)
    opens = ~is_end & (coverage == 1)
    closes = is_end & (coverage == 0)
    lo, hi, owner = points[opens], points[closes], owners[opens]
    # runs that touch (hi + 1 == next lo) are one run; inside an owner hi < next lo
    joined = (owner[1:] == owner[:-1]) & (lo[1:] - hi[:-1] == _ONE)
    first = np.flatnonzero(np.concatenate(([True], ~joined)))
    last = np.append(first[1:] - 1, lo.size - 1)
    return lo[first], hi[last], owner[first].astype(np.int64)


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

