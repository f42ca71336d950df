"""roBDDs as numpy node tables: build from runs, walk, count, canonicalize.

A lineage set is the characteristic function of its keys over the 64 key bits
(bit 63 most significant and nearest the root). A :class:`NodeTable` stores a
plain reduced ordered BDD, without complement edges, as parallel arrays. Node
*codes* are 0 (FALSE), 1 (TRUE), and ``2 + i`` for row ``i``; row ``i`` tests
bit ``bits[i]`` and continues at ``lows[i]`` when the bit is 0 and ``highs[i]``
when it is 1. Every child tests a lower bit than its parent (skipped bits are
"don't care"), and children always come before their parents.

The *canonical* table of a set numbers nodes by (bit, low code, high code)
ascending, with only nodes reachable from the root, which is then the last row.
Two sets are equal exactly when their canonical tables are, which is what makes
the byte encoding canonical and lets the CUDD, pyeda and numpy builders be
checked against each other byte for byte.

Everything here is vectorized per BDD level (at most 64 numpy passes), so the
cost follows the number of runs or nodes, never the number of ids.

>>> table = build_from_runs(np.array([4], dtype=np.uint64), np.array([11], dtype=np.uint64))
>>> count_root(table, int(table.roots[0]))
8
>>> contains_keys(table, int(table.roots[0]), np.array([3, 4, 11, 12], dtype=np.uint64)).tolist()
[False, True, True, False]
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .runs import MAX_MATERIALIZED_IDS, merge_runs

FALSE, TRUE = 0, 1
KEY_BITS = 64
_ONE = np.uint64(1)
# all-ones masks of 0..64 low bits: the span of a block with that many free bits
_LOW_MASKS = np.array([(1 << k) - 1 for k in range(KEY_BITS + 1)], dtype=np.uint64)


@dataclass(frozen=True, eq=False)
class NodeTable:
    """A forest of plain ordered BDD nodes with one root per set (see module doc)."""

    bits: np.ndarray  # int64, bit tested by the node with code 2 + row
    lows: np.ndarray  # int64 child codes for bit value 0
    highs: np.ndarray  # int64 child codes for bit value 1
    roots: np.ndarray  # int64 codes, one per set

    @property
    def size(self) -> int:
        """Number of internal nodes (terminals are not stored)."""
        return int(self.bits.size)

    def extended(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """bits/lows/highs indexed by code: terminals get bit -1 and themselves as children."""
        head = np.array([FALSE, TRUE], dtype=np.int64)
        return (
            np.concatenate((np.array([-1, -1], dtype=np.int64), self.bits)),
            np.concatenate((head, self.lows)),
            np.concatenate((head, self.highs)),
        )

    def same_as(self, other: NodeTable) -> bool:
        """Structural equality; for canonical single-root tables, set equality."""
        return all(
            np.array_equal(a, b)
            for a, b in zip(
                (self.bits, self.lows, self.highs, self.roots),
                (other.bits, other.lows, other.highs, other.roots),
            )
        )


def _unique_pairs_dense(
    code_limit: int, lows: np.ndarray, highs: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """np.unique on (low, high) pairs without sorting, when few child codes occur.

    Low BDD levels repeat a handful of patterns hundreds of thousands of times;
    ranking the child codes that occur and marking pairs in a small dense table
    is linear, and keeps the sorted (low, high) order. Returns None when the
    table would be too big.
    """
    seen = np.zeros(code_limit, dtype=bool)
    seen[lows] = True
    seen[highs] = True
    rank = np.cumsum(seen) - 1
    distinct = int(rank[-1]) + 1
    if distinct * distinct > 8 * lows.size + (1 << 16):
        return None
    pairs = rank[lows] * distinct + rank[highs]
    present = np.zeros(distinct * distinct, dtype=bool)
    present[pairs] = True
    unique_pairs = np.flatnonzero(present)
    inverse = (np.cumsum(present) - 1)[pairs]
    code_of_rank = np.flatnonzero(seen)
    return code_of_rank[unique_pairs // distinct], code_of_rank[unique_pairs % distinct], inverse


def _unique_pairs_sorted(
    code_limit: int, lows: np.ndarray, highs: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """np.unique(..., return_inverse=True) on (low, high) pairs, spelled out (faster)."""
    pair_keys = lows * np.int64(code_limit) + highs
    order = np.argsort(pair_keys)
    ordered = pair_keys[order]
    first = np.empty(ordered.size, dtype=bool)
    first[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=first[1:])
    inverse = np.empty(ordered.size, dtype=np.int64)
    inverse[order] = np.cumsum(first) - 1
    unique_keys = ordered[first]
    return unique_keys // code_limit, unique_keys % code_limit, inverse


def terminal_table(code: int) -> NodeTable:
    """The table of the empty set (FALSE) or of every key (TRUE)."""
    empty = np.empty(0, dtype=np.int64)
    return NodeTable(empty, empty, empty, np.array([code], dtype=np.int64))


class _Interner:
    """Hash-consing of new nodes, one BDD level at a time, in canonical order."""

    def __init__(self) -> None:
        self.next_code = 2
        self.bits: list[np.ndarray] = []
        self.lows: list[np.ndarray] = []
        self.highs: list[np.ndarray] = []

    def intern(self, bit: int, lows: np.ndarray, highs: np.ndarray) -> np.ndarray:
        """Codes of nodes (bit, low, high); equal pairs share one node (merging rule).

        Callers apply the elimination rule (low == high) themselves. New nodes
        are numbered in (low, high) order, which is the canonical order within
        a level because levels are interned bottom-up.
        """
        dense = _unique_pairs_dense(self.next_code, lows, highs) if self.next_code <= 8 * lows.size else None
        if dense is None:
            new_lows, new_highs, inverse = _unique_pairs_sorted(self.next_code, lows, highs)
        else:
            new_lows, new_highs, inverse = dense
        self.bits.append(np.full(new_lows.size, bit, dtype=np.int64))
        self.lows.append(new_lows)
        self.highs.append(new_highs)
        codes = self.next_code + inverse.reshape(-1)
        self.next_code += int(new_lows.size)
        return codes

    def table(self, roots: np.ndarray) -> NodeTable:
        if not self.bits:
            empty = np.empty(0, dtype=np.int64)
            return NodeTable(empty, empty, empty, roots)
        return NodeTable(np.concatenate(self.bits), np.concatenate(self.lows), np.concatenate(self.highs), roots)


@dataclass(frozen=True, eq=False)
class CanonicalTables:
    """The canonical tables of many sets, concatenated row-wise.

    Set i owns rows ``offsets[i]:offsets[i + 1]`` of ``bits``/``lows``/``highs``;
    its node codes count from 2 at its own first row (so its children refer to
    its own rows), and ``roots[i]`` is its root code (FALSE, TRUE, or its last row).
    """

    bits: np.ndarray
    lows: np.ndarray
    highs: np.ndarray
    offsets: np.ndarray
    roots: np.ndarray

    def table(self, index: int) -> NodeTable:
        """Set ``index``'s canonical table."""
        rows = slice(self.offsets[index], self.offsets[index + 1])
        return NodeTable(self.bits[rows], self.lows[rows], self.highs[rows], self.roots[index : index + 1])


def build_tables(lo: np.ndarray, hi: np.ndarray, owner: np.ndarray, sets: int) -> CanonicalTables:
    """Canonical roBDDs of ``sets`` sets from their runs, all sets in the same numpy passes.

    ``lo``/``hi``/``owner`` are each set's disjoint maximal runs, sorted by
    (owner, lo); sets without runs are empty. Bottom-up over the 64 bits. At
    each level only blocks that contain a run endpoint can be partial; every
    other block is entirely inside a run (TRUE) or outside all runs (FALSE). So
    each level handles at most 2 * runs blocks per set (one per set near the
    root), and a block without endpoints is classified from its sibling: it is
    TRUE when the run open at the sibling's facing edge continues into it.

    A level's new nodes are sorted by (set, low, high): equal ones merge, and
    each gets the next codes of its set in canonical order, so every set comes
    out canonical without a global node table or a renumbering pass.
    """
    blocks, block_owner, starts_inside, ends_inside = _endpoint_blocks(lo, hi, owner)
    values = np.full(blocks.size, TRUE, dtype=np.int64)
    filled = np.zeros(sets, dtype=np.int64)  # nodes of each set so far
    levels: list[tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
    for bit in range(KEY_BITS):
        parents = blocks >> _ONE
        is_high = (blocks & _ONE).astype(bool)
        new_group = np.ones(blocks.size, dtype=bool)
        new_group[1:] = (parents[1:] != parents[:-1]) | (block_owner[1:] != block_owner[:-1])
        last_in_group = np.ones(blocks.size, dtype=bool)
        last_in_group[:-1] = new_group[1:]
        group = np.cumsum(new_group) - 1
        parent_starts_inside = starts_inside[new_group]
        parent_ends_inside = ends_inside[last_in_group]
        block_owner = block_owner[new_group]
        low_child = parent_starts_inside.astype(np.int64)  # if absent: TRUE iff covered
        high_child = parent_ends_inside.astype(np.int64)
        low_child[group[~is_high]] = values[~is_high]
        high_child[group[is_high]] = values[is_high]
        values = low_child.copy()
        distinct = np.flatnonzero(low_child != high_child)
        if distinct.size:
            owners, lows, highs, inverse = _unique_nodes(
                block_owner[distinct], low_child[distinct], high_child[distinct], filled
            )
            starts = np.flatnonzero(np.concatenate(([True], owners[1:] != owners[:-1])))
            rank = np.arange(owners.size) - np.repeat(starts, np.diff(np.append(starts, owners.size)))
            codes = filled[owners] + 2 + rank
            values[distinct] = codes[inverse]
            filled += np.bincount(owners, minlength=sets)
            levels.append((bit, owners, codes, lows, highs))
        blocks = parents[new_group]
        starts_inside, ends_inside = parent_starts_inside, parent_ends_inside
    roots = np.zeros(sets, dtype=np.int64)  # FALSE: sets without runs
    roots[block_owner] = values  # one block per set is left: the whole key space
    return _tables(levels, filled, roots)


def _endpoint_blocks(lo: np.ndarray, hi: np.ndarray, owner: np.ndarray) -> tuple[np.ndarray, ...]:
    """Level 0: the distinct run endpoints of each set as single-key blocks (all in the set),
    their owners, and whether each block's first key continues a run begun before it (its
    first endpoint is a run end: ``starts_inside``) and its last key's run goes on (``ends_inside``)."""
    endpoints = np.empty(2 * lo.size, dtype=np.uint64)
    endpoints[0::2] = lo
    endpoints[1::2] = hi
    endpoint_owner = np.repeat(owner.astype(np.int64), 2)
    is_first = np.ones(endpoints.size, dtype=bool)
    is_first[1:] = (endpoints[1:] != endpoints[:-1]) | (endpoint_owner[1:] != endpoint_owner[:-1])
    is_last = np.ones(endpoints.size, dtype=bool)
    is_last[:-1] = is_first[1:]
    position = np.arange(endpoints.size)
    return endpoints[is_first], endpoint_owner[is_first], position[is_first] % 2 == 1, position[is_last] % 2 == 0


def _tables(levels: list, filled: np.ndarray, roots: np.ndarray) -> CanonicalTables:
    """The sets' node tables from each level's new nodes (``filled``: nodes per set)."""
    offsets = np.concatenate(([0], np.cumsum(filled)))
    bits, lows, highs = (np.empty(int(offsets[-1]), dtype=np.int64) for _ in range(3))
    for bit, owners, codes, level_lows, level_highs in levels:
        rows = offsets[owners] + codes - 2
        bits[rows], lows[rows], highs[rows] = bit, level_lows, level_highs
    return CanonicalTables(bits, lows, highs, offsets, roots)


def _unique_nodes(
    owners: np.ndarray, lows: np.ndarray, highs: np.ndarray, filled: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Distinct (set, low, high) triples, sorted, and the index of each input among them.

    Packed into one int64 sort key when it fits (child codes of a set are
    below 2 + its node count), else sorted with np.lexsort.
    """
    bound = int(filled.max()) + 2
    if (int(owners[-1]) + 1) * bound * bound < 1 << 62:
        keys = (owners * bound + lows) * bound + highs
        order = np.argsort(keys)
        ordered = keys[order]
        first = np.empty(order.size, dtype=bool)
        first[0] = True
        np.not_equal(ordered[1:], ordered[:-1], out=first[1:])
    else:
        order = np.lexsort((highs, lows, owners))
        first = np.ones(order.size, dtype=bool)
        first[1:] = np.any(np.diff(np.stack((owners[order], lows[order], highs[order])), axis=1) != 0, axis=0)
    inverse = np.empty(order.size, dtype=np.int64)
    inverse[order] = np.cumsum(first) - 1
    kept = order[first]
    return owners[kept], lows[kept], highs[kept], inverse


def build_from_runs(lo: np.ndarray, hi: np.ndarray) -> NodeTable:
    """Canonical roBDD of the keys covered by disjoint sorted maximal runs (one set of :func:`build_tables`)."""
    return build_tables(lo, hi, np.zeros(lo.size, dtype=np.int64), 1).table(0)


def canonicalize(table: NodeTable) -> NodeTable:
    """Canonical form of a single-root table (any topological numbering).

    Drops unreachable nodes, merges duplicates, eliminates redundant tests and
    renumbers in canonical order. Used for tables exported from CUDD or pyeda.
    """
    root = int(table.roots[0])
    if root < 2:
        return terminal_table(root)
    bits, lows, highs = table.extended()
    reachable = np.zeros(bits.size, dtype=bool)
    reachable[root] = True
    descending = np.argsort(-bits[2:], kind="stable") + 2
    level_edges = np.flatnonzero(np.diff(bits[descending])) + 1
    for level in np.split(descending, level_edges):
        live = level[reachable[level]]
        reachable[lows[live]] = True
        reachable[highs[live]] = True
    new_code = np.full(bits.size, -1, dtype=np.int64)
    new_code[:2] = (FALSE, TRUE)
    interner = _Interner()
    for level in reversed(np.split(descending, level_edges)):
        level = level[reachable[level]]
        if not level.size:
            continue
        low, high = new_code[lows[level]], new_code[highs[level]]
        codes = low.copy()
        distinct = np.flatnonzero(low != high)
        if distinct.size:
            codes[distinct] = interner.intern(int(bits[level[0]]), low[distinct], high[distinct])
        new_code[level] = codes
    return interner.table(np.array([new_code[root]], dtype=np.int64))


def contains_keys(table: NodeTable, roots: int | np.ndarray, keys: np.ndarray) -> np.ndarray:
    """Membership of each key in the set of its root (one root, or one per key).

    All probes walk the BDD together, one bit per numpy pass.
    """
    bits, lows, highs = table.extended()
    current = np.broadcast_to(np.asarray(roots, dtype=np.int64), keys.shape).copy()
    active = np.flatnonzero(current >= 2)
    while active.size:
        codes = current[active]
        bit_values = (keys[active] >> bits[codes].astype(np.uint64)) & _ONE
        current[active] = np.where(bit_values.astype(bool), highs[codes], lows[codes])
        active = active[current[active] >= 2]
    return current == TRUE


def count_root(table: NodeTable, root: int) -> int:
    """Exact number of keys in the set rooted at `root` (model count over 64 bits).

    Counts below a node at bit b are < 2**(b+1), and a root that is not TRUE
    leaves at least one key out, so uint64 never overflows.
    """
    if root < 2:
        return root << KEY_BITS
    bits, lows, highs = table.extended()
    counts = np.zeros(bits.size, dtype=np.uint64)
    counts[TRUE] = 1
    ascending = np.argsort(bits[2:], kind="stable") + 2
    for level in np.split(ascending, np.flatnonzero(np.diff(bits[ascending])) + 1):
        above = bits[level] - 1
        low, high = lows[level], highs[level]
        counts[level] = (counts[low] << (above - bits[low]).astype(np.uint64)) + (
            counts[high] << (above - bits[high]).astype(np.uint64)
        )
    return int(counts[root]) << int(KEY_BITS - 1 - bits[root])


def paths_of_roots(table: NodeTable) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each root's set as disjoint blocks of keys, by walking paths to TRUE.

    Returns ``lo``, ``hi`` and the index of the root of each block (in no
    particular order). A frontier item is a block ``[prefix, prefix + 2**free)``
    restricted to a node. TRUE blocks are emitted whole, so a run of 10^7 ids
    costs one path per aligned sub-block, not one step per id. Bits skipped
    between a node and its parent are enumerated explicitly (that is where
    periodic sets blow up), with a guard so a hostile encoding cannot exhaust memory.
    """
    bits, lows, highs = table.extended()
    codes = table.roots.astype(np.int64)
    owners = np.arange(codes.size)
    prefixes = np.zeros(codes.size, dtype=np.uint64)
    free = np.full(codes.size, KEY_BITS, dtype=np.int64)
    found: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    while codes.size:
        full = codes == TRUE
        if full.any():
            found.append((prefixes[full], prefixes[full] | _LOW_MASKS[free[full]], owners[full]))
        inner = codes >= 2
        codes, prefixes, free, owners = codes[inner], prefixes[inner], free[inner], owners[inner]
        if not codes.size:
            break
        node_bits = bits[codes]
        skipped = free - 1 - node_bits
        if skipped.any():
            codes, prefixes, node_bits, owners = _expand_skipped_bits(codes, prefixes, node_bits, owners, skipped)
        shifted_one = _ONE << node_bits.astype(np.uint64)
        codes = np.concatenate((lows[codes], highs[codes]))
        prefixes = np.concatenate((prefixes, prefixes | shifted_one))
        free = np.concatenate((node_bits, node_bits))
        owners = np.concatenate((owners, owners))
    if not found:
        return np.empty(0, dtype=np.uint64), np.empty(0, dtype=np.uint64), np.empty(0, dtype=np.int64)
    lo, hi, owner = zip(*found)
    return np.concatenate(lo), np.concatenate(hi), np.concatenate(owner)


def runs_of_roots(table: NodeTable) -> tuple[np.ndarray, np.ndarray]:
    """Maximal runs of the union of all root sets."""
    lo, hi, _ = paths_of_roots(table)
    return merge_runs(lo, hi)


def _expand_skipped_bits(
    codes: np.ndarray, prefixes: np.ndarray, node_bits: np.ndarray, owners: np.ndarray, skipped: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """One frontier item per assignment of the don't-care bits above each node."""
    if int(skipped.max()) > 40:
        raise ValueError("lineage set has too many separate runs to enumerate (periodic set)")
    copies = np.left_shift(np.int64(1), skipped)
    total = int(copies.sum())
    if total > MAX_MATERIALIZED_IDS:
        raise ValueError(f"lineage set has too many separate runs ({total}) to enumerate")
    first = np.cumsum(copies) - copies
    assignment = (np.arange(total, dtype=np.int64) - np.repeat(first, copies)).astype(np.uint64)
    shift = np.repeat(node_bits + 1, copies).astype(np.uint64)
    return (
        np.repeat(codes, copies),
        np.repeat(prefixes, copies) | (assignment << shift),
        np.repeat(node_bits, copies),
        np.repeat(owners, copies),
    )
