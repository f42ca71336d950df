"""Lineage sets as sorted unique int64 arrays: the paper's "set" implementation.

Best for small lineage (the paper: sets win below a few hundred ids, where a
merge of short arrays beats any BDD bookkeeping). All operations are numpy
vectorized; nothing loops over ids in Python.

>>> a = SortedIdSet.from_ids([5, 3, 3, 9])
>>> list(a | SortedIdSet.from_ids([4])), 4 in a, len(a)
([3, 4, 5, 9], False, 3)
>>> SortedIdSet.from_bytes(a.to_bytes()) == a
True
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from .base import LineageSet, as_id_array, ids_to_keys, keys_to_ids, sorted_unique
from .encoding import decode_batch, encode_sorted_keys, union_runs
from .runs import keys_from_runs, runs_from_keys


class SortedIdSet(LineageSet):
    """A sorted, duplicate-free int64 array of ids."""

    kind = "set"
    __slots__ = ("_ids",)

    def __init__(self, sorted_unique_ids: np.ndarray) -> None:
        """Wrap an array that is already sorted and unique (use :meth:`from_ids` otherwise)."""
        self._ids = sorted_unique_ids
        self._ids.flags.writeable = False

    @classmethod
    def from_ids(cls, ids: Any) -> SortedIdSet:
        return cls(np.array(as_id_array(ids), dtype=np.int64, copy=True))

    @classmethod
    def from_bytes(cls, data: bytes) -> SortedIdSet:
        batch = decode_batch([data])
        if batch.run_lo.size == 0 and batch.forest.roots.size == 0:
            return cls(keys_to_ids(batch.keys))  # delta mode holds the ids themselves
        return cls(keys_to_ids(keys_from_runs(*union_runs(batch))))

    def to_bytes(self) -> bytes:
        return encode_sorted_keys(*runs_from_keys(ids_to_keys(self._ids)))

    def to_numpy(self) -> np.ndarray:
        return self._ids

    def union(self, other: LineageSet) -> SortedIdSet:
        return SortedIdSet(sorted_unique(np.concatenate((self._ids, SortedIdSet._coerce(other)._ids))))

    @classmethod
    def union_all(cls, sets: Iterable[LineageSet]) -> SortedIdSet:
        """One concatenate + merge of sorted pieces: no pairwise tree needed for arrays."""
        arrays = [cls._coerce(s)._ids for s in sets]
        if not arrays:
            return cls.from_ids([])
        return cls(sorted_unique(np.concatenate(arrays)))

    def contains_many(self, ids: Any) -> np.ndarray:
        probes = np.asarray(ids, dtype=np.int64)
        index = np.minimum(np.searchsorted(self._ids, probes), max(self._ids.size - 1, 0))
        return (self._ids[index] == probes) if self._ids.size else np.zeros(probes.shape, dtype=bool)

    def intersects(self, other: LineageSet) -> bool:
        mine, theirs = self._ids, SortedIdSet._coerce(other)._ids
        if mine.size > theirs.size:
            mine, theirs = theirs, mine
        return bool(SortedIdSet(theirs).contains_many(mine).any())

    def count(self) -> int:
        return int(self._ids.size)
