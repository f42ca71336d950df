"""Lineage sets as pyeda BDDs: an independent second roBDD implementation for tests.

Built differently on purpose: ids become maximal runs, runs become aligned
power-of-two blocks, each block is a cube (a conjunction of literals over its
fixed high bits, made directly as a chain of pyeda nodes because pyeda's ``&``
re-walks the whole cube per literal), and the cubes are OR-ed with pyeda's
``|`` by a balanced tree. Counting, listing and membership walk pyeda's nodes in plain
Python. Only the byte format is shared, so when this and :class:`BddSet` give
identical bytes for the same ids, both builders are very likely right.

pyeda is pure Python and slow: fine for tests and small benchmarks only.
It is imported on first use.

>>> s = PyedaBddSet.from_ids([7, 8, 9])
>>> list(s), len(s), 8 in s
([7, 8, 9], 3, True)
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from dltrace.bddsets.base import LineageSet, as_id_array
from dltrace.bddsets.encoding import KIND_BDD, decode_batch, encode_table, kind_of, union_runs
from dltrace.bddsets.nodetable import KEY_BITS, NodeTable, canonicalize
from dltrace.bddsets.runs import keys_from_runs

_SIGN = 1 << 63  # key = id + 2**63, the same map as ids_to_keys, in Python ints
_KEY_SPACE = 1 << KEY_BITS


class _Variables:
    """pyeda variables for key bits 63..0; pyeda orders BDD variables by creation."""

    def __init__(self) -> None:
        from pyeda.boolalg import bdd

        self.module = bdd
        self.by_bit = {bit: bdd.bddvar("dltrace_key_bit", bit) for bit in range(KEY_BITS - 1, -1, -1)}
        self.bit_of_root = {var.uniqid: bit for bit, var in self.by_bit.items()}
        ordered = [self.by_bit[bit].uniqid for bit in range(KEY_BITS - 1, -1, -1)]
        if ordered != sorted(ordered):
            raise RuntimeError("pyeda variables dltrace_key_bit[*] were created in another order")


_VARIABLES: _Variables | None = None


def _variables() -> _Variables:
    global _VARIABLES
    if _VARIABLES is None:
        _VARIABLES = _Variables()
    return _VARIABLES


def _aligned_blocks(lo: int, hi: int) -> Iterator[tuple[int, int]]:
    """Split the key run [lo, hi] into maximal aligned blocks (start, free low bits)."""
    while lo <= hi:
        size = lo & -lo if lo else _KEY_SPACE
        while size > hi - lo + 1:
            size >>= 1
        yield lo, size.bit_length() - 1
        lo += size


def _balanced(operands: list[Any], combine: Any, empty: Any) -> Any:
    while len(operands) > 1:
        paired = [combine(a, b) for a, b in zip(operands[0::2], operands[1::2])]
        if len(operands) % 2:
            paired.append(operands[-1])
        operands = paired
    return operands[0] if operands else empty


class PyedaBddSet(LineageSet):
    """A lineage set as a pyeda ``BinaryDecisionDiagram`` over key bits 63..0."""

    kind = "pyeda"
    __slots__ = ("_bdd",)

    def __init__(self, function: Any) -> None:
        self._bdd = function

    @classmethod
    def from_ids(cls, ids: Any) -> PyedaBddSet:
        variables = _variables()
        keys = [lineage_id + _SIGN for lineage_id in as_id_array(ids).tolist()]  # sorted
        runs: list[list[int]] = []
        for key in keys:
            if runs and runs[-1][1] + 1 == key:
                runs[-1][1] = key
            else:
                runs.append([key, key])
        module = variables.module
        cubes = []
        for lo, hi in runs:
            for start, free in _aligned_blocks(lo, hi):
                node = module.BDDNODEONE
                for bit in range(free, KEY_BITS):
                    low, high = (module.BDDNODEZERO, node) if (start >> bit) & 1 else (node, module.BDDNODEZERO)
                    node = module._bddnode(variables.by_bit[bit].uniqid, low, high)
                cubes.append(module._bdd(node))
        return cls(_balanced(cubes, lambda a, b: a | b, module.BDDZERO))

    @classmethod
    def from_bytes(cls, data: bytes) -> PyedaBddSet:
        batch = decode_batch([data])
        if kind_of(data) != KIND_BDD:
            return cls.from_ids(np.asarray(_keys_as_ids(keys_from_runs(*union_runs(batch)))))
        variables = _variables()
        nodes = [variables.module.BDDZERO, variables.module.BDDONE]
        ite = variables.module.ite
        table = batch.forest
        for bit, low, high in zip(table.bits.tolist(), table.lows.tolist(), table.highs.tolist()):
            nodes.append(ite(variables.by_bit[bit], nodes[high], nodes[low]))
        return cls(nodes[int(table.roots[0])])

    def _node_table(self) -> NodeTable:
        """Canonical node table of this BDD, for the shared byte format."""
        variables = _variables()
        zero, one = variables.module.BDDNODEZERO, variables.module.BDDNODEONE
        code_of: dict[Any, int] = {zero: 0, one: 1}
        bits: list[int] = []
        lows: list[int] = []
        highs: list[int] = []
        for node in self._bdd.dfs_postorder():
            if node in code_of:
                continue
            code_of[node] = len(bits) + 2
            bits.append(variables.bit_of_root[node.root])
            lows.append(code_of[node.lo])
            highs.append(code_of[node.hi])
        return canonicalize(
            NodeTable(
                np.array(bits, dtype=np.int64),
                np.array(lows, dtype=np.int64),
                np.array(highs, dtype=np.int64),
                np.array([code_of[self._bdd.node]], dtype=np.int64),
            )
        )

    def to_bytes(self) -> bytes:
        return encode_table(self._node_table())

    def _key_runs(self) -> list[tuple[int, int]]:
        """Maximal key runs, by a recursive walk that treats skipped bits as free."""
        variables = _variables()
        zero, one = variables.module.BDDNODEZERO, variables.module.BDDNODEONE
        runs: list[tuple[int, int]] = []

        def walk(node: Any, prefix: int, free: int) -> None:
            if node is zero:
                return
            if node is one:
                lo, hi = prefix, prefix + (1 << free) - 1
                if runs and runs[-1][1] + 1 == lo:
                    runs[-1] = (runs[-1][0], hi)
                else:
                    runs.append((lo, hi))
                return
            bit = variables.bit_of_root[node.root]
            for dont_care in range(1 << (free - 1 - bit)):
                base = prefix | (dont_care << (bit + 1))
                walk(node.lo, base, bit)
                walk(node.hi, base | (1 << bit), bit)

        walk(self._bdd.node, 0, KEY_BITS)
        return runs

    def to_numpy(self) -> np.ndarray:
        keys = [key for lo, hi in self._key_runs() for key in range(lo, hi + 1)]
        return np.array(_keys_as_ids(keys), dtype=np.int64)

    def union(self, other: LineageSet) -> PyedaBddSet:
        return PyedaBddSet(self._bdd | PyedaBddSet._coerce(other)._bdd)

    def contains_many(self, ids: Any) -> np.ndarray:
        variables = _variables()
        zero, one = variables.module.BDDNODEZERO, variables.module.BDDNODEONE
        found = []
        for lineage_id in np.asarray(ids, dtype=np.int64).tolist():
            key, node = lineage_id + _SIGN, self._bdd.node
            while node is not zero and node is not one:
                node = node.hi if (key >> variables.bit_of_root[node.root]) & 1 else node.lo
            found.append(node is one)
        return np.array(found, dtype=bool)

    def intersects(self, other: LineageSet) -> bool:
        return not (self._bdd & PyedaBddSet._coerce(other)._bdd).is_zero()

    def count(self) -> int:
        variables = _variables()
        zero, one = variables.module.BDDNODEZERO, variables.module.BDDNODEONE
        below: dict[Any, tuple[int, int]] = {zero: (0, -1), one: (1, -1)}  # node -> (count, bit)

        def models(node: Any) -> tuple[int, int]:
            if node not in below:
                bit = variables.bit_of_root[node.root]
                low_count, low_bit = models(node.lo)
                high_count, high_bit = models(node.hi)
                below[node] = (low_count << (bit - 1 - low_bit)) + (high_count << (bit - 1 - high_bit)), bit
            return below[node]

        root_count, root_bit = models(self._bdd.node)
        return root_count << (KEY_BITS - 1 - root_bit)

    def _same_kind_equal(self, other: LineageSet) -> bool:
        assert isinstance(other, PyedaBddSet)
        return self._bdd.node is other._bdd.node


def _keys_as_ids(keys: Any) -> list[int]:
    """Python-int inverse of the key map (kept separate from the numpy one on purpose)."""
    return [key - _SIGN for key in (int(k) for k in keys)]
