"""The lineage-set interface every representation implements, and the id <-> key map.

Ids are signed int64 (base-row ids are positive, but granule ids from
``xxhash64`` may be negative, so the whole int64 range is supported). Internally
every representation works on 64-bit unsigned *keys*: the id's bit pattern with
the sign bit flipped, ``key = id ^ 2**63``. Unsigned key order equals signed id
order, so "ascending ids", "runs of consecutive ids" and "bit 63 is the most
significant BDD variable" all mean the same thing for negative and positive ids.

>>> ids_to_keys(np.array([-1, 0, 1 << 48])).tolist()
[9223372036854775807, 9223372036854775808, 9223653511831486464]
>>> keys_to_ids(ids_to_keys(np.array([-5, 7]))).tolist()
[-5, 7]
"""

from __future__ import annotations

import abc
from collections.abc import Iterable, Iterator
from typing import Any, ClassVar, TypeVar

import numpy as np

SIGN_BIT = np.uint64(1 << 63)

LineageSetT = TypeVar("LineageSetT", bound="LineageSet")


class LineageDecodeError(ValueError):
    """Bytes that are not a valid dltrace lineage-set encoding (corrupt or foreign)."""


def ids_to_keys(ids: np.ndarray) -> np.ndarray:
    """Map int64 ids to order-preserving uint64 keys (flip the sign bit)."""
    return ids.astype(np.int64, copy=False).view(np.uint64) ^ SIGN_BIT


def keys_to_ids(keys: np.ndarray) -> np.ndarray:
    """Inverse of :func:`ids_to_keys`."""
    return (keys.astype(np.uint64, copy=False) ^ SIGN_BIT).view(np.int64)


def as_id_array(ids: Any) -> np.ndarray:
    """Return `ids` as a sorted, duplicate-free int64 array.

    Accepts any 1-D array-like of integers. Floats are refused because they
    silently lose precision above 2**53, which would corrupt ids. Already
    sorted unique input (the common case: ids come out of a sorted set or a
    BDD walk) skips the sort.
    """
    if isinstance(ids, np.ndarray):
        array = ids
    else:
        array = np.asarray(list(ids) if not hasattr(ids, "__len__") else ids)
    if array.size == 0:
        return np.empty(0, dtype=np.int64)
    if array.ndim != 1:
        raise ValueError(f"lineage ids must be a 1-D sequence, got shape {array.shape}")
    if array.dtype == object:
        try:
            array = np.array(array.tolist(), dtype=np.int64)
        except (OverflowError, TypeError, ValueError) as error:
            raise ValueError(f"lineage ids must be int64 integers: {error}") from None
    if array.dtype.kind == "u":
        if array.max() > np.iinfo(np.int64).max:
            raise ValueError("lineage ids must fit in int64 (an id is >= 2**63)")
    elif array.dtype.kind != "i":
        raise ValueError(f"lineage ids must be integers, got dtype {array.dtype}")
    array = array.astype(np.int64, copy=False)
    if array.size > 1 and not bool(np.all(array[1:] > array[:-1])):
        array = sorted_unique(array)
    return array


def sorted_unique(values: np.ndarray) -> np.ndarray:
    """Sorted distinct values, fast when `values` is a few sorted pieces glued together.

    A stable sort finds and merges presorted runs in linear time, where np.unique
    sorts from scratch (seconds against milliseconds on two concatenated sorted
    arrays of 10**6 ids). Unions of sorted sets are exactly that input.
    """
    ordered = np.sort(values, kind="stable")
    if ordered.size < 2:
        return ordered
    keep = np.empty(ordered.size, dtype=bool)
    keep[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=keep[1:])
    return ordered[keep]


class LineageSet(abc.ABC):
    """An immutable set of int64 lineage ids.

    All representations answer the same questions so that the Spark layer (and
    tests) can swap them; equality is by content, across representations.
    """

    kind: ClassVar[str]

    @classmethod
    @abc.abstractmethod
    def from_ids(cls: type[LineageSetT], ids: Any) -> LineageSetT:
        """Build from any 1-D array-like of int64 ids (any order, duplicates allowed)."""

    @classmethod
    @abc.abstractmethod
    def from_bytes(cls: type[LineageSetT], data: bytes) -> LineageSetT:
        """Decode any dltrace encoding (of any kind) into this representation."""

    @abc.abstractmethod
    def to_bytes(self) -> bytes:
        """The compact versioned encoding (see :mod:`dltrace.bddsets.encoding`)."""

    @abc.abstractmethod
    def to_numpy(self) -> np.ndarray:
        """All ids, ascending, as an int64 array."""

    @abc.abstractmethod
    def union(self: LineageSetT, other: LineageSet) -> LineageSetT:
        """Set union; `other` may be any representation."""

    @abc.abstractmethod
    def contains_many(self, ids: Any) -> np.ndarray:
        """Vectorized membership: a bool array, one entry per probe id."""

    @abc.abstractmethod
    def intersects(self, other: LineageSet) -> bool:
        """True when the two sets share an id (the impact-query primitive)."""

    @abc.abstractmethod
    def count(self) -> int:
        """Exact number of ids, as a Python int (may exceed ``sys.maxsize``)."""

    @classmethod
    def union_all(cls: type[LineageSetT], sets: Iterable[LineageSet]) -> LineageSetT:
        """Union of many sets by a balanced pairwise tree (keeps operands small)."""
        layer = [cls._coerce(s) for s in sets]
        if not layer:
            return cls.from_ids([])
        while len(layer) > 1:
            paired = [a.union(b) for a, b in zip(layer[0::2], layer[1::2])]
            if len(layer) % 2:
                paired.append(layer[-1])
            layer = paired
        return layer[0]

    @classmethod
    def _coerce(cls: type[LineageSetT], other: LineageSet) -> LineageSetT:
        """`other` in this representation (identity when it already is)."""
        if isinstance(other, cls):
            return other
        if not isinstance(other, LineageSet):
            raise TypeError(f"expected a LineageSet, got {type(other).__name__}")
        return cls.from_bytes(other.to_bytes())

    def to_ids(self) -> np.ndarray:
        """Alias of :meth:`to_numpy`: the conversion path between representations."""
        return self.to_numpy()

    def __or__(self: LineageSetT, other: LineageSet) -> LineageSetT:
        return self.union(other)

    def contains(self, lineage_id: int) -> bool:
        """Whether `lineage_id` is in the set."""
        return bool(self.contains_many(np.array([lineage_id], dtype=np.int64))[0])

    def __contains__(self, lineage_id: object) -> bool:
        if not isinstance(lineage_id, (int, np.integer)) or isinstance(lineage_id, bool):
            return False
        if not -(1 << 63) <= int(lineage_id) < (1 << 63):
            return False
        return self.contains(int(lineage_id))

    def isdisjoint(self, other: LineageSet) -> bool:
        """True when no id is in both sets."""
        return not self.intersects(other)

    def __len__(self) -> int:
        return self.count()

    def __bool__(self) -> bool:
        return self.count() > 0

    def __iter__(self) -> Iterator[int]:
        return iter(self.to_numpy().tolist())

    @property
    def nbytes(self) -> int:
        """Size of the byte encoding, the cost of shipping the set through Spark."""
        return len(self.to_bytes())

    def _same_kind_equal(self, other: LineageSet) -> bool:
        """Equality between two sets of the same class; overridden where cheaper."""
        return bool(np.array_equal(self.to_numpy(), other.to_numpy()))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, LineageSet):
            return NotImplemented
        if type(self) is type(other):
            return self._same_kind_equal(other)
        return bool(np.array_equal(self.to_numpy(), other.to_numpy()))

    __hash__ = None  # type: ignore[assignment]  # equal across classes, so no cheap hash

    def __reduce__(self) -> tuple[Any, tuple[bytes]]:
        """Pickle as the byte encoding: CUDD functions cannot cross processes otherwise."""
        return type(self).from_bytes, (self.to_bytes(),)

    def __repr__(self) -> str:
        ids = self.to_numpy() if self.count() <= 8 else None
        shown = ids.tolist() if ids is not None else f"{self.count()} ids"
        return f"{type(self).__name__}({shown})"
