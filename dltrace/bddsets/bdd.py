"""Lineage sets as reduced ordered BDDs in CUDD (``dd.cudd``; ``dd.autoref`` fallback).

The paper's "bdd" implementation. A set is the characteristic function of its
keys (``id ^ 2**63``, see :mod:`dltrace.bddsets.base`) over the variables
``b63 .. b0``, declared in that order so that ``b63`` is at the root; dynamic
reordering is switched off so the order never changes. All 64 bits are
variables, so negative ids (hash-based granule ids) work too; for the usual
positive ids ``b63`` is constant 1 and costs a single node.

One manager per process, created on first use: CUDD functions cannot be pickled
and only combine within one manager, so sets leave the process as bytes
(:meth:`BddSet.to_bytes`). A :class:`BddSet` keeps whichever of its two forms it
has — the CUDD function, used for union and intersection, and the canonical
numpy node table (:mod:`dltrace.bddsets.nodetable`), used for building,
encoding, membership and listing ids — and derives the other on demand.

>>> a = BddSet.from_ids(range((1 << 48) + 10, (1 << 48) + 20))
>>> b = BddSet.from_ids([(1 << 48) + 5])
>>> len(a | b), a.intersects(b), (1 << 48) + 5 in (a | b)
(11, False, True)
>>> BddSet.from_bytes((a | b).to_bytes()) == a | b
True
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from .base import LineageSet, as_id_array, ids_to_keys, keys_to_ids
from .encoding import KIND_BDD, decode_batch, encode_table, kind_of, union_runs
from .nodetable import KEY_BITS, NodeTable, build_from_runs, canonicalize, contains_keys, count_root, runs_of_roots
from .runs import keys_from_runs, runs_from_keys

# Cudd_CountMinterm works in doubles: exact while the count stays below 2**53.
_EXACT_FLOAT_COUNT = float(1 << 53)


class _Manager:
    """The process-wide BDD manager and its 64 bit variables."""

    def __init__(self) -> None:
        try:
            from dd import cudd as backend
        except ImportError:  # no CUDD wheel for this platform
            from dd import autoref as backend  # type: ignore[no-redef]
        self.backend = backend.__name__.rsplit(".", 1)[-1]
        self.bdd = backend.BDD()
        self.bdd.configure(reordering=False)
        names = [f"b{bit}" for bit in range(KEY_BITS - 1, -1, -1)]
        self.bdd.declare(*names)
        self.bit_variables = [self.bdd.var(f"b{bit}") for bit in range(KEY_BITS)]


_MANAGER: _Manager | None = None


def _manager() -> _Manager:
    global _MANAGER
    if _MANAGER is None:
        _MANAGER = _Manager()
    return _MANAGER


def bdd_backend() -> str:
    """Which dd backend this process uses: "cudd" or "autoref"."""
    return _manager().backend


def _function_from_table(table: NodeTable) -> Any:
    """Load a node table into the manager, children first.

    Uses ``ite(bit, high, low)`` rather than ``find_or_add``: dd.cudd's
    find_or_add does not normalize complemented "then" children, which breaks
    CUDD's canonical form (and was seen to crash at exit). ite is also faster.
    """
    manager = _manager()
    nodes = [manager.bdd.false, manager.bdd.true]
    variables = manager.bit_variables
    ite = manager.bdd.ite
    for bit, low, high in zip(table.bits.tolist(), table.lows.tolist(), table.highs.tolist()):
        nodes.append(ite(variables[bit], nodes[high], nodes[low]))
    return nodes[int(table.roots[0])]


def _table_from_function(function: Any) -> NodeTable:
    """Export a function as a canonical node table, resolving complement edges.

    dd reports a complemented node's children as those of the regular node, so
    a negated node's children are negated on the way down. Iterative DFS: each
    stack frame reads a node's children once (every read wraps a CUDD pointer).
    """
    bdd = _manager().bdd
    code_of = {int(bdd.false): 0, int(bdd.true): 1}
    bits: list[int] = []
    lows: list[int] = []
    highs: list[int] = []

    def frame(node: Any) -> tuple[int, int, Any, Any, int, int]:
        low, high = node.low, node.high
        if node.negated:
            low, high = ~low, ~high
        return int(node), node.level, low, high, int(low), int(high)

    stack = [] if int(function) in code_of else [frame(function)]
    while stack:
        key, level, low, high, low_key, high_key = stack[-1]
        if high_key not in code_of:
            stack.append(frame(high))
        elif low_key not in code_of:
            stack.append(frame(low))
        else:
            stack.pop()
            code_of[key] = len(bits) + 2
            bits.append(KEY_BITS - 1 - level)
            lows.append(code_of[low_key])
            highs.append(code_of[high_key])
    table = NodeTable(
        np.array(bits, dtype=np.int64),
        np.array(lows, dtype=np.int64),
        np.array(highs, dtype=np.int64),
        np.array([code_of[int(function)]], dtype=np.int64),
    )
    return canonicalize(table)


class BddSet(LineageSet):
    """A lineage set as an roBDD over the 64 key bits (see module doc)."""

    kind = "bdd"
    __slots__ = ("_function", "_table")

    def __init__(self, *, table: NodeTable | None = None, function: Any = None) -> None:
        """Wrap a canonical single-root node table and/or a function of this process's manager."""
        if table is None and function is None:
            raise ValueError("BddSet needs a node table or a BDD function")
        self._table = table
        self._function = function

    @classmethod
    def from_ids(cls, ids: Any) -> BddSet:
        keys = ids_to_keys(as_id_array(ids))
        return cls(table=build_from_runs(*runs_from_keys(keys)))

    @classmethod
    def from_bytes(cls, data: bytes) -> BddSet:
        batch = decode_batch([data])
        if kind_of(data) == KIND_BDD:
            return cls(table=batch.forest)  # decoding checked it is canonical
        return cls(table=build_from_runs(*union_runs(batch)))

    @property
    def function(self) -> Any:
        """The CUDD (or dd.autoref) function of this set."""
        if self._function is None:
            self._function = _function_from_table(self.table)
        return self._function

    @property
    def table(self) -> NodeTable:
        """The canonical node table of this set."""
        if self._table is None:
            self._table = _table_from_function(self._function)
        return self._table

    @property
    def node_count(self) -> int:
        """Internal nodes of the roBDD: its real size, unlike the id count."""
        return self.table.size

    def to_bytes(self) -> bytes:
        return encode_table(self.table)

    def to_numpy(self) -> np.ndarray:
        return keys_to_ids(keys_from_runs(*runs_of_roots(self.table)))

    def union(self, other: LineageSet) -> BddSet:
        return BddSet(function=self.function | BddSet._coerce(other).function)

    @classmethod
    def union_all(cls, sets: Iterable[LineageSet]) -> BddSet:
        """Balanced OR tree in the manager: operands stay small, so apply stays cheap."""
        layer = [cls._coerce(s).function for s in sets]
        if not layer:
            return cls.from_ids([])
        while len(layer) > 1:
            paired = [a | b for a, b in zip(layer[0::2], layer[1::2])]
            if len(layer) % 2:
                paired.append(layer[-1])
            layer = paired
        return cls(function=layer[0])

    def contains_many(self, ids: Any) -> np.ndarray:
        keys = ids_to_keys(np.asarray(ids, dtype=np.int64))
        return contains_keys(self.table, int(self.table.roots[0]), keys)

    def intersects(self, other: LineageSet) -> bool:
        manager = _manager()
        return (self.function & BddSet._coerce(other).function) != manager.bdd.false

    def count(self) -> int:
        if self._table is None:
            models = _manager().bdd.count(self._function, nvars=KEY_BITS)
            if models < _EXACT_FLOAT_COUNT:
                return int(models)
        return count_root(self.table, int(self.table.roots[0]))

    def _same_kind_equal(self, other: LineageSet) -> bool:
        assert isinstance(other, BddSet)
        if self._function is not None and other._function is not None:
            return bool(self._function == other._function)
        return self.table.same_as(other.table)
