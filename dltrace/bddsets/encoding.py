"""The versioned byte encoding of lineage sets, decoded in bulk with numpy.

Every encoding starts with a 5-byte header::

    b"DLS"  version (1)  kind (1: sorted id set, 2: roBDD, 3: union of parts)

All integers below are unsigned LEB128 varints. Ids are handled as keys
(``key = id ^ 2**63``, see :mod:`dltrace.bddsets.base`); ``zz`` is zigzag.

**Sorted id set** (kind 1), then a mode byte and a varint stream::

    mode 0 (deltas): n, zz(first id), then n - 1 values (key[i] - key[i-1] - 1)
    mode 1 (runs):   r, zz(first run start id), length[0] - 1,
                     then per further run: (start[i] - end[i-1] - 2), length[i] - 1

The encoder writes whichever mode is smaller (runs win on clustered sets);
the empty set is mode 0 with n = 0. Runs are maximal (gaps >= 2).

**roBDD** (kind 2): the canonical node table of
:mod:`dltrace.bddsets.nodetable` (bits 63..0, bit 63 at the root, no complement
edges), as ``n`` (varint), stream B (varints), stream A (n raw bytes)::

    B: root (0 = empty, 1 = every id, 2 = the last node), then for each
       "general" node, in node order, its low and high child references
    A: one byte per node: bit << 2 | shape, where shape is
       0 general (children in B), 1 low = previous node and high = FALSE,
       2 low = FALSE and high = previous node (3 is invalid)

A child reference is 0 (FALSE), 1 (TRUE) or ``d + 1`` for the node ``d``
positions earlier. Shapes 1 and 2 make the long single-path chains (the
table-code prefix above clustered ids, single ids) cost one byte per node.

**Union of parts** (kind 3): ``k`` (varint, 2 to ``MAX_UNION_PARTS``), the byte length
of each part (``k`` varints), then the parts, each a whole encoding of kind 1 or 2 (never
a union). The set is the union of the parts' sets. It is how a row holds a large set that other
rows share (an uncorrelated subquery's lineage under control semantics: Q20's ~17,700
ids in each of its 186 rows): the shared set's bytes are copied beside the row's own
part (:func:`join_parts`) instead of merged into a new set per row, the paper's roBDD
rows sharing nodes. Decoding merges the parts, so readers see one set.

**Compact** is not a fourth kind but a choice between the two, per set: what the Spark
UDFs write (:func:`compact_encodings`). A few scattered ids cost 5-10 bytes sorted against
about 40 roBDD nodes per id, and a clustered set a few bytes per run, so sets stay sorted
unless they are periodic and their roBDD is the smaller encoding.

Decoding checks everything (magic, version, kind, lengths, varint form, value
ranges, ordering, canonical node order, reachability) and raises
:class:`LineageDecodeError` with a one-line message on any violation, so a
corrupt or foreign byte string never turns into a wrong set. Decoding works on
a batch of byte strings at once (one numpy pass for the whole batch), which is
what makes unions of millions of tiny sets affordable in a Spark UDF.

>>> from dltrace.bddsets.base import ids_to_keys
>>> from dltrace.bddsets.runs import runs_from_keys
>>> keys = ids_to_keys(np.arange(1 << 48, (1 << 48) + 1000))  # one run of 1000 ids
>>> data = encode_sorted_keys(*runs_from_keys(keys))
>>> data[:5], len(data)
(b'DLS\\x01\\x01', 17)
>>> batch = decode_batch([data])
>>> bool(batch.run_lo[0] == keys[0]), bool(batch.run_hi[0] == keys[-1])
(True, True)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from .base import SIGN_BIT, LineageDecodeError
from .codec import decode_varints, encode_varints, read_varints_at, unzigzag, varint_sizes, zigzag
from .nodetable import FALSE, TRUE, CanonicalTables, NodeTable, build_tables, paths_of_roots
from .runs import keys_from_runs, merge_owned_runs, merge_runs, run_total

MAGIC = b"DLS"
VERSION = 1
KIND_SORTED = 1
KIND_BDD = 2
KIND_UNION = 3
KINDS = (KIND_SORTED, KIND_BDD, KIND_UNION)
MAX_UNION_PARTS = 64
KIND_CODES = {"set": KIND_SORTED, "bdd": KIND_BDD}
COMPACT = "compact"  # not a kind: whichever of the two is smaller (compact_encodings)
PERIODIC_RUNS = 64
PERIODIC_SHAPES = 16
HEADER_SIZE = 5
MODE_DELTAS = 0
MODE_RUNS = 1
SHAPE_GENERAL, SHAPE_LOW_CHAIN, SHAPE_HIGH_CHAIN = 0, 1, 2
ROOT_IS_LAST_NODE = 2

_ONE = np.uint64(1)
_TWO = np.uint64(2)
_MAX_KEY = np.uint64(0xFFFF_FFFF_FFFF_FFFF)


def header(kind: int) -> bytes:
    """The 5-byte prefix of every encoding of `kind`."""
    return MAGIC + bytes((VERSION, kind))


def kind_code(kind: str) -> int:
    """Kind byte for a representation name ("set" or "bdd")."""
    try:
        return KIND_CODES[kind]
    except KeyError:
        raise ValueError(f"unknown lineage-set kind {kind!r}; use 'set', 'bdd' or 'compact'") from None


def _key_to_zigzag_id(keys: np.ndarray) -> np.ndarray:
    return zigzag((keys ^ SIGN_BIT).view(np.int64))


def _zigzag_id_to_key(values: np.ndarray) -> np.ndarray:
    return unzigzag(values).view(np.uint64) ^ SIGN_BIT


# --------------------------------------------------------------------- encode


def encode_sorted_keys(lo: np.ndarray, hi: np.ndarray) -> bytes:
    """Sorted-set encoding of maximal sorted runs, in whichever mode is smaller."""
    if lo.size == 0:
        return header(KIND_SORTED) + bytes((MODE_DELTAS, 0))
    first = _key_to_zigzag_id(lo[:1])
    spans = hi - lo
    gaps = lo[1:] - hi[:-1]  # >= 2 between maximal runs
    total = run_total(lo, hi)
    # Both modes store zz(first id); compare the rest. In delta mode every id
    # inside a run costs one byte (a stored 0).
    run_size = _varint_size(lo.size) + int(varint_sizes(spans).sum()) + int(varint_sizes(gaps - _TWO).sum())
    delta_size = _varint_size(total) + (total - lo.size) + int(varint_sizes(gaps - _ONE).sum())
    if delta_size < run_size:
        keys = keys_from_runs(lo, hi)
        body = np.concatenate((np.array([keys.size], dtype=np.uint64), first, keys[1:] - keys[:-1] - _ONE))
        return header(KIND_SORTED) + bytes((MODE_DELTAS,)) + encode_varints(body)
    body = np.empty(2 * lo.size + 1, dtype=np.uint64)
    body[0] = lo.size
    body[1] = first[0]
    body[2::2] = spans
    body[3::2] = gaps - _TWO
    return header(KIND_SORTED) + bytes((MODE_RUNS,)) + encode_varints(body)


def _varint_size(value: int) -> int:
    """Varint size of a Python int (which may exceed 64 bits: then never chosen)."""
    return max(1, (value.bit_length() + 6) // 7)


def encode_sorted_sets(
    lo: np.ndarray,
    hi: np.ndarray,
    owner: np.ndarray,
    sets: int,
    keys: np.ndarray | None = None,
    key_owner: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Sorted-set encodings of many sets at once: the bytes concatenated (uint8) and their int64 offsets.

    ``lo``/``hi``/``owner`` are each set's maximal runs sorted by (owner, lo); sets
    without runs are empty. Each set gets exactly the bytes :func:`encode_sorted_keys`
    gives it (same mode choice), in numpy passes over the batch's runs and delta-mode
    ids: a batch of many small sets costs what its ids cost, not per-set Python.
    ``keys``/``key_owner``, when the caller has them, are the same sets' keys sorted by
    (owner, key): delta mode then takes them instead of expanding the runs again.
    """
    owner = owner.astype(np.int64, copy=False)
    run_count, run_first, first_run, spans, gaps, counts, deltas = _choose_modes(lo, hi, owner, sets)
    # values per set: deltas [n, zz(first id), key[i] - key[i-1] - 1 ...]; runs [r, zz(first
    # start), length[0] - 1, then (start[i] - end[i-1] - 2, length[i] - 1) per further run]
    value_count = np.where(deltas, counts + 1, 2 * run_count + 1)
    value_first = np.cumsum(value_count) - value_count
    values = np.empty(int(value_count.sum()), dtype=np.uint64)
    values[value_first] = np.where(deltas, counts, run_count).astype(np.uint64)
    in_deltas = deltas[owner]
    all_deltas = bool(in_deltas.all())
    if keys is None or key_owner is None:
        keys = keys_from_runs(lo[in_deltas], hi[in_deltas])
        key_owner = np.repeat(owner[in_deltas], (spans[in_deltas] + _ONE).astype(np.int64))
    elif not all_deltas:
        in_delta_sets = deltas[key_owner]
        keys, key_owner = keys[in_delta_sets], key_owner[in_delta_sets]
    if keys.size:
        key_first = np.cumsum(counts * deltas) - counts * deltas
        slots = np.arange(1, keys.size + 1) + (value_first - key_first)[key_owner]
        is_first = np.ones(keys.size, dtype=bool)
        is_first[1:] = key_owner[1:] != key_owner[:-1]
        steps = np.empty(keys.size, dtype=np.uint64)
        steps[1:] = keys[1:] - keys[:-1] - _ONE
        steps[is_first] = _key_to_zigzag_id(keys[is_first])
        values[slots] = steps
    if not all_deltas:
        in_runs = ~in_deltas
        run_owner = owner[in_runs]
        slots = value_first[run_owner] + 1 + 2 * (np.flatnonzero(in_runs) - run_first[run_owner])
        values[slots] = np.where(first_run[in_runs], _key_to_zigzag_id(lo[in_runs]), gaps[in_runs] - _TWO)
        values[slots + 1] = spans[in_runs]
    return _sorted_encodings(values, value_first, deltas, sets)


class _SetRuns(NamedTuple):
    """A batch of sets' runs, and the encoding mode each set takes."""

    run_count: np.ndarray  # runs per set
    run_first: np.ndarray  # each set's first run
    first_run: np.ndarray  # per run: the first of its set
    spans: np.ndarray  # per run: hi - lo
    gaps: np.ndarray  # per run: lo - the previous run's hi (meaningless at a set's first run)
    counts: np.ndarray  # ids in each set, or -1 when beyond delta mode
    deltas: np.ndarray  # per set: delta mode (else runs mode)


def _choose_modes(lo: np.ndarray, hi: np.ndarray, owner: np.ndarray, sets: int) -> _SetRuns:
    """Each set's mode: deltas when they take fewer bytes than its runs (or it is empty),
    as :func:`encode_sorted_keys` chooses, from sizes computed for the whole batch at once."""
    owner = owner.astype(np.int64, copy=False)
    run_count = np.bincount(owner, minlength=sets)
    run_first = np.cumsum(run_count) - run_count
    has_runs = run_count > 0
    nonempty_first = run_first[has_runs]
    first_run = np.zeros(lo.size, dtype=bool)
    first_run[nonempty_first] = True
    spans = hi - lo
    gaps = np.zeros(lo.size, dtype=np.uint64)
    gaps[1:] = lo[1:] - hi[:-1]  # >= 2 inside a set; meaningless at a set's first run
    def per_set(values: np.ndarray) -> np.ndarray:
        sums = np.zeros(sets, dtype=values.dtype)
        if lo.size:
            sums[has_runs] = np.add.reduceat(values, nonempty_first)
        return sums

    def gap_sizes(step: np.uint64) -> np.ndarray:
        return per_set(np.where(first_run, 0, varint_sizes(gaps - step)))

    counts = np.zeros(sets, dtype=np.int64)  # ids in each set, or -1 when beyond delta mode
    if lo.size:
        span_sums = per_set(spans)[has_runs]  # exact unless a set nears 2**64 ids
        near_full = per_set(spans.astype(np.float64))[has_runs] >= 2.0**61
        counts[has_runs] = np.where(near_full, -1, span_sums.astype(np.int64) + run_count[has_runs])
    run_size = varint_sizes(run_count.astype(np.uint64)) + per_set(varint_sizes(spans)) + gap_sizes(_TWO)
    delta_size = varint_sizes(np.maximum(counts, 0).astype(np.uint64)) + (counts - run_count) + gap_sizes(_ONE)
    deltas = ~has_runs | ((counts >= 0) & (delta_size < run_size))
    return _SetRuns(run_count, run_first, first_run, spans, gaps, counts, deltas)


def _sorted_encodings(values: np.ndarray, value_first: np.ndarray, deltas: np.ndarray,
                      sets: int) -> tuple[np.ndarray, np.ndarray]:
    """Each set's header, mode byte and values as varints: the bytes concatenated and their offsets."""
    value_sizes = varint_sizes(values)
    value_bytes = np.add.reduceat(value_sizes, value_first) if sets else np.zeros(0, dtype=np.int64)
    lengths = HEADER_SIZE + 1 + value_bytes
    offsets = np.concatenate(([0], np.cumsum(lengths))).astype(np.int64)
    out = np.empty(int(offsets[-1]), dtype=np.uint8)
    starts = offsets[:-1]
    prefix = np.frombuffer(header(KIND_SORTED), dtype=np.uint8)
    out[(starts[:, None] + np.arange(HEADER_SIZE)).reshape(-1)] = np.tile(prefix, sets)
    out[starts + HEADER_SIZE] = np.where(deltas, MODE_DELTAS, MODE_RUNS)
    out[_ranges(starts + HEADER_SIZE + 1, offsets[1:])] = np.frombuffer(
        encode_varints(values, value_sizes), dtype=np.uint8
    )
    return out, offsets


def encode_table(table: NodeTable) -> bytes:
    """roBDD encoding of a canonical single-root node table."""
    data, _ = encode_tables(
        CanonicalTables(table.bits, table.lows, table.highs, np.array([0, table.size]), table.roots)
    )
    return data.tobytes()


def encode_tables(tables: CanonicalTables) -> tuple[np.ndarray, np.ndarray]:
    """roBDD encodings of many canonical tables: the bytes, concatenated (uint8), and their int64 offsets."""
    bits, lows, highs, roots = tables.bits, tables.lows, tables.highs, tables.roots
    sizes = np.diff(tables.offsets)
    count = sizes.size
    if count == 0:
        return np.empty(0, dtype=np.uint8), np.zeros(1, dtype=np.int64)
    owner = np.repeat(np.arange(count), sizes)
    codes = np.arange(owner.size, dtype=np.int64) - np.repeat(tables.offsets[:-1], sizes) + 2
    has_previous = codes > 2
    low_chain = has_previous & (lows == codes - 1) & (highs == FALSE)
    high_chain = has_previous & (lows == FALSE) & (highs == codes - 1)
    shapes = np.where(low_chain, SHAPE_LOW_CHAIN, np.where(high_chain, SHAPE_HIGH_CHAIN, SHAPE_GENERAL))
    stream_a = ((bits << 2) | shapes).astype(np.uint8)
    general = np.flatnonzero(shapes == SHAPE_GENERAL)
    # varints per table: node count, root reference, then low and high of each general node
    general_count = np.bincount(owner[general], minlength=count)
    value_count = 2 + 2 * general_count
    value_first = np.cumsum(value_count) - value_count
    values = np.empty(int(value_count.sum()), dtype=np.uint64)
    values[value_first] = sizes
    values[value_first + 1] = np.where(sizes > 0, ROOT_IS_LAST_NODE, roots)
    general_first = np.cumsum(general_count) - general_count
    slot = value_first[owner[general]] + 2 + 2 * (np.arange(general.size) - general_first[owner[general]])
    parent = codes[general]
    for offset, children in ((0, lows[general]), (1, highs[general])):
        values[slot + offset] = np.where(children < 2, children, parent - children + 1)
    value_bytes = np.add.reduceat(varint_sizes(values), value_first)
    lengths = HEADER_SIZE + value_bytes + sizes
    offsets = np.concatenate(([0], np.cumsum(lengths)))
    out = np.empty(int(offsets[-1]), dtype=np.uint8)
    starts = offsets[:-1]
    out[(starts[:, None] + np.arange(HEADER_SIZE)).reshape(-1)] = np.tile(
        np.frombuffer(header(KIND_BDD), dtype=np.uint8), count
    )
    out[_ranges(starts + HEADER_SIZE, starts + HEADER_SIZE + value_bytes)] = np.frombuffer(
        encode_varints(values), dtype=np.uint8
    )
    out[_ranges(offsets[1:] - sizes, offsets[1:])] = stream_a
    return out, offsets


def periodic_sets(lo: np.ndarray, hi: np.ndarray, owner: np.ndarray, sets: int) -> np.ndarray:
    """Which sets may have a roBDD smaller than their sorted encoding: many runs of few shapes.

    Measured on the 22 TPC-H queries at SF 1, the sorted encoding (id gaps or runs as
    varints) is smaller than the roBDD for every output row but one, a periodic set (Q13's
    customers: every id but each third, 406 bytes as a roBDD, 50,021 sorted): a roBDD shares
    the repeated subpatterns that a list spells out. So only sets whose first
    ``PERIODIC_RUNS`` runs take at most ``PERIODIC_SHAPES`` distinct (length, gap) shapes are
    built as roBDDs at all, which keeps the 64-level build off every other set.
    """
    run_count = np.bincount(owner, minlength=sets)
    run_first = np.cumsum(run_count) - run_count
    checked = np.flatnonzero(run_count >= PERIODIC_RUNS)
    if checked.size == 0:
        return np.zeros(sets, dtype=bool)
    index = run_first[checked][:, None] + np.arange(PERIODIC_RUNS)
    lengths = (hi - lo)[index[:, :-1]]
    gaps = lo[index[:, 1:]] - hi[index[:, :-1]]  # shape: a run's length and the gap after it
    order = np.lexsort((gaps, lengths), axis=-1)
    lengths, gaps = np.take_along_axis(lengths, order, -1), np.take_along_axis(gaps, order, -1)
    changes = (lengths[:, 1:] != lengths[:, :-1]) | (gaps[:, 1:] != gaps[:, :-1])
    distinct = 1 + np.count_nonzero(changes, axis=1)
    periodic = np.zeros(sets, dtype=bool)
    periodic[checked] = distinct <= PERIODIC_SHAPES
    return periodic


def compact_encodings(
    lo: np.ndarray,
    hi: np.ndarray,
    owner: np.ndarray,
    sets: int,
    keys: np.ndarray | None = None,
    key_owner: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Each set's compact encoding: sorted ids, or the roBDD where that is smaller.

    Like a roaring bitmap choosing its containers: small and scattered sets (a few ids per
    output row, 5 to 10 bytes each) and clustered ones (a run costs two varints) stay
    sorted, and a periodic set becomes a roBDD when its encoding is smaller (ties stay
    sorted). The choice depends on the set alone, so equal sets get equal bytes.
    ``lo``/``hi``/``owner`` are each set's maximal runs sorted by (owner, lo); returns the
    bytes concatenated (uint8) and their offsets; ``keys``/``key_owner`` as for
    :func:`encode_sorted_sets`.
    """
    data, offsets = encode_sorted_sets(lo, hi, owner, sets, keys, key_owner)
    candidates = np.flatnonzero(periodic_sets(lo, hi, owner, sets))
    if candidates.size == 0:
        return data, offsets
    renumber = np.full(sets, -1, dtype=np.int64)
    renumber[candidates] = np.arange(candidates.size)
    kept = renumber[owner] >= 0
    bdd_data, bdd_offsets = encode_tables(build_tables(lo[kept], hi[kept], renumber[owner[kept]], candidates.size))
    smaller = np.diff(bdd_offsets) < np.diff(offsets)[candidates]
    if not smaller.any():
        return data, offsets
    starts, ends = offsets[:-1].copy(), offsets[1:].copy()
    starts[candidates[smaller]] = data.size + bdd_offsets[:-1][smaller]
    ends[candidates[smaller]] = data.size + bdd_offsets[1:][smaller]
    pieces = np.concatenate((data, bdd_data))[_ranges(starts, ends)]
    return pieces, np.concatenate(([0], np.cumsum(ends - starts)))


def join_parts(
    data: np.ndarray, starts: np.ndarray, ends: np.ndarray, owner: np.ndarray, sets: int
) -> tuple[np.ndarray, np.ndarray]:
    """Per set, one encoding of the union of its parts: a lone part as it is, several as a union (kind 3).

    ``data[starts[i]:ends[i]]`` is part ``i``, a whole encoding of kind 1 or 2 owned by set
    ``owner[i]`` (ascending; every set owns at least one part). No part is decoded: the
    bytes are copied, so a large set shared by many rows costs each row a copy, not a merge.
    Returns the encodings concatenated (uint8) and their int64 offsets.
    """
    starts, ends = starts.astype(np.int64, copy=False), ends.astype(np.int64, copy=False)
    owner = owner.astype(np.int64, copy=False)
    counts = np.bincount(owner, minlength=sets)
    if np.any(counts == 0) or counts.max(initial=1) > MAX_UNION_PARTS:
        raise ValueError(f"every set needs 1 to {MAX_UNION_PARTS} parts")
    wrapped = np.flatnonzero(counts >= 2)
    # the prefix of a wrapped set: its header, then varints k and each part's length
    value_count = counts[wrapped] + 1
    value_first = np.cumsum(value_count) - value_count
    values = np.empty(int(value_count.sum()), dtype=np.uint64)
    values[value_first] = counts[wrapped]
    slot_of_set = np.full(sets, -1, dtype=np.int64)
    slot_of_set[wrapped] = value_first
    part_first = np.cumsum(counts) - counts
    in_wrapped = np.flatnonzero(slot_of_set[owner] >= 0)
    part_rank = in_wrapped - part_first[owner[in_wrapped]]
    values[slot_of_set[owner[in_wrapped]] + 1 + part_rank] = (ends - starts)[in_wrapped]
    sizes = varint_sizes(values)
    prefix_lengths = HEADER_SIZE + (np.add.reduceat(sizes, value_first) if wrapped.size else sizes[:0])
    prefix_offsets = np.concatenate(([0], np.cumsum(prefix_lengths))).astype(np.int64)
    prefixes = np.empty(int(prefix_offsets[-1]), dtype=np.uint8)
    prefix_starts = prefix_offsets[:-1]
    prefixes[(prefix_starts[:, None] + np.arange(HEADER_SIZE)).reshape(-1)] = np.tile(
        np.frombuffer(header(KIND_UNION), dtype=np.uint8), wrapped.size
    )
    prefixes[_ranges(prefix_starts + HEADER_SIZE, prefix_offsets[1:])] = np.frombuffer(
        encode_varints(values, sizes), dtype=np.uint8
    )
    # pieces in output order: per set, its prefix (if wrapped), then its parts
    source = np.concatenate((prefixes, data))
    piece_set = np.concatenate((wrapped, owner))
    piece_rank = np.concatenate((np.full(wrapped.size, -1), np.arange(owner.size)))
    piece_starts = np.concatenate((prefix_starts, starts + prefixes.size))
    piece_ends = np.concatenate((prefix_offsets[1:], ends + prefixes.size))
    order = np.lexsort((piece_rank, piece_set))
    lengths = np.zeros(sets, dtype=np.int64)
    np.add.at(lengths, piece_set, piece_ends - piece_starts)
    offsets = np.concatenate(([0], np.cumsum(lengths)))
    piece_starts, piece_ends = piece_starts[order], piece_ends[order]
    return source[_ranges(piece_starts, piece_ends)], offsets


def _chain_byte_table() -> np.ndarray:
    """Stream-A bytes of a single-key BDD, per key byte: [byte index, value] -> 8 node bytes."""
    bit = np.arange(64).reshape(8, 1, 8)
    value_bits = (np.arange(256).reshape(1, 256, 1) >> (bit % 8)) & 1
    shapes = np.where(value_bits == 1, SHAPE_HIGH_CHAIN, SHAPE_LOW_CHAIN)
    shapes[0, :, 0] = SHAPE_GENERAL  # the bit-0 node has terminal children
    return ((bit << 2) | shapes).astype(np.uint8)


_CHAIN_BYTES = _chain_byte_table()


def singleton_table_bytes(keys: np.ndarray) -> list[bytes]:
    """roBDD encodings of many one-id sets at once (a 64-node chain each).

    Same bytes as encoding each set's canonical table, built by table lookup
    per key byte instead of per node.
    """
    count = keys.size
    rows = np.empty((count, HEADER_SIZE + 4 + 64), dtype=np.uint8)
    rows[:, :HEADER_SIZE] = np.frombuffer(header(KIND_BDD), dtype=np.uint8)
    rows[:, HEADER_SIZE] = 64  # node count, a 1-byte varint
    rows[:, HEADER_SIZE + 1] = ROOT_IS_LAST_NODE
    lowest = (keys & _ONE).astype(np.uint8)
    rows[:, HEADER_SIZE + 2] = 1 - lowest  # bit-0 node: low child TRUE iff bit 0 is 0
    rows[:, HEADER_SIZE + 3] = lowest
    key_bytes = keys.astype("<u8").view(np.uint8).reshape(count, 8)  # least significant first
    rows[:, HEADER_SIZE + 4 :] = _CHAIN_BYTES[np.arange(8), key_bytes].reshape(count, 64)
    flat = rows.tobytes()
    width = rows.shape[1]
    return [flat[i * width : (i + 1) * width] for i in range(count)]


def singleton_sorted_bytes(keys: np.ndarray) -> list[bytes]:
    """Sorted-set encodings of many one-id sets at once."""
    values = _key_to_zigzag_id(keys)
    sizes = varint_sizes(values)
    flat = encode_varints(values)
    prefix = header(KIND_SORTED) + bytes((MODE_DELTAS, 1))
    ends = np.cumsum(sizes).tolist()
    starts = [0] + ends[:-1]
    return [prefix + flat[a:b] for a, b in zip(starts, ends)]


# --------------------------------------------------------------------- decode


@dataclass(frozen=True)
class DecodedBatch:
    """What a batch of encodings holds, in the cheapest decoded form per input.

    keys: sorted-set inputs in delta mode, each input's keys ascending, inputs
    concatenated; run_lo/run_hi: sorted-set inputs in run mode; forest: roBDD
    inputs, one root each. The ``*_owner`` arrays give the input index of each
    key, run and root.
    """

    keys: np.ndarray
    key_owner: np.ndarray
    run_lo: np.ndarray
    run_hi: np.ndarray
    run_owner: np.ndarray
    forest: NodeTable
    forest_owner: np.ndarray

    def blocks(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every input's keys as disjoint blocks ``[lo, hi]`` with the input index of each.

        Blocks come in no particular order and need not be maximal runs.
        """
        forest_lo, forest_hi, root = paths_of_roots(self.forest)
        return (
            np.concatenate((self.keys, self.run_lo, forest_lo)),
            np.concatenate((self.keys, self.run_hi, forest_hi)),
            np.concatenate((self.key_owner, self.run_owner, self.forest_owner[root])),
        )


def decode_batch(encodings: Sequence[bytes]) -> DecodedBatch:
    """Decode many encodings (of either kind) in a fixed number of numpy passes."""
    lengths = np.fromiter(map(len, encodings), dtype=np.int64, count=len(encodings))
    ends = np.cumsum(lengths)
    return decode_buffer(np.frombuffer(b"".join(encodings), dtype=np.uint8), ends - lengths, ends)


def decode_buffer(buffer: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> DecodedBatch:
    """Decode the encodings at ``buffer[starts[i]:ends[i]]`` (e.g. an Arrow binary column's data)."""
    starts, ends = starts.astype(np.int64, copy=False), ends.astype(np.int64, copy=False)
    lengths = ends - starts
    if np.any(lengths < HEADER_SIZE):
        raise LineageDecodeError("truncated lineage encoding: shorter than its 5-byte header")
    for offset, expected in enumerate(MAGIC):
        if np.any(buffer[starts + offset] != expected):
            raise LineageDecodeError("not a dltrace lineage encoding (bad magic bytes)")
    versions = buffer[starts + 3]
    if np.any(versions != VERSION):
        bad = int(versions[versions != VERSION][0])
        raise LineageDecodeError(f"unsupported lineage encoding version {bad} (this dltrace reads {VERSION})")
    kinds = buffer[starts + 4]
    known = np.isin(kinds, KINDS)
    if not known.all():
        raise LineageDecodeError(f"unknown lineage encoding kind {int(kinds[~known][0])}")
    inputs = np.arange(lengths.size)
    if np.any(kinds == KIND_UNION):
        return _decode_with_unions(buffer, starts, ends, kinds == KIND_UNION)
    sorted_inputs = inputs[kinds == KIND_SORTED]
    bdd_inputs = inputs[kinds == KIND_BDD]
    keys, key_owner, run_lo, run_hi, run_owner = _decode_sorted(buffer, starts, ends, sorted_inputs)
    forest = _decode_bdds(buffer, starts[bdd_inputs], ends[bdd_inputs])
    return DecodedBatch(keys, key_owner, run_lo, run_hi, run_owner, forest, bdd_inputs)


def _union_parts(
    buffer: np.ndarray, starts: np.ndarray, ends: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The parts of union encodings (kind 3): their starts, ends and the union each belongs to."""
    counts, position = read_varints_at(buffer, starts + HEADER_SIZE, ends)
    if np.any(counts < _TWO) or np.any(counts > np.uint64(MAX_UNION_PARTS)):
        raise LineageDecodeError(f"union encoding must hold 2 to {MAX_UNION_PARTS} parts")
    counts = counts.astype(np.int64)
    lengths = np.zeros((starts.size, int(counts.max())), dtype=np.int64)
    for rank in range(lengths.shape[1]):
        active = np.flatnonzero(counts > rank)
        values, position[active] = read_varints_at(buffer, position[active], ends[active])
        if np.any(values < np.uint64(HEADER_SIZE)) or np.any(values > (ends - starts)[active].astype(np.uint64)):
            raise LineageDecodeError("union encoding has a part of impossible length")
        lengths[active, rank] = values.astype(np.int64)
    if np.any(position + lengths.sum(axis=1) != ends):
        raise LineageDecodeError("union encoding's part lengths do not add up to its size")
    present = np.arange(lengths.shape[1])[None, :] < counts[:, None]
    part_lengths = lengths[present]  # row-major: each union's parts in order
    part_union = np.repeat(np.arange(starts.size), counts)
    part_ends = np.repeat(position, counts) + (np.cumsum(lengths, axis=1)[present])
    part_starts = part_ends - part_lengths
    if np.any(buffer[part_starts + 4] == KIND_UNION):
        raise LineageDecodeError("union encoding holds another union (parts are of kind 1 or 2)")
    return part_starts, part_ends, part_union


def _decode_with_unions(buffer: np.ndarray, starts: np.ndarray, ends: np.ndarray, is_union: np.ndarray) -> DecodedBatch:
    """Decode a batch holding unions (kind 3): their parts are decoded with the other inputs,
    then each union's parts are merged into disjoint runs, so a union reads as one set."""
    unions = np.flatnonzero(is_union)
    others = np.flatnonzero(~is_union)
    part_starts, part_ends, part_union = _union_parts(buffer, starts[unions], ends[unions])
    inner = decode_buffer(
        buffer, np.concatenate((starts[others], part_starts)), np.concatenate((ends[others], part_ends))
    )
    input_of = np.concatenate((others, unions[part_union]))  # inner input -> input of this batch
    key_owner, run_owner = input_of[inner.key_owner], input_of[inner.run_owner]
    root_owner = input_of[inner.forest_owner]
    in_key, in_run, in_root = is_union[key_owner], is_union[run_owner], is_union[root_owner]
    forest = inner.forest
    path_lo, path_hi, root = paths_of_roots(NodeTable(forest.bits, forest.lows, forest.highs, forest.roots[in_root]))
    lo, hi, owner = merge_owned_runs(
        np.concatenate((inner.keys[in_key], inner.run_lo[in_run], path_lo)),
        np.concatenate((inner.keys[in_key], inner.run_hi[in_run], path_hi)),
        np.concatenate((key_owner[in_key], run_owner[in_run], root_owner[in_root][root])),
    )
    out_run, out_root = ~in_run, ~in_root
    return DecodedBatch(
        inner.keys[~in_key],
        key_owner[~in_key],
        np.concatenate((inner.run_lo[out_run], lo)),
        np.concatenate((inner.run_hi[out_run], hi)),
        np.concatenate((run_owner[out_run], owner)),
        NodeTable(forest.bits, forest.lows, forest.highs, forest.roots[out_root]),
        root_owner[out_root],
    )

def union_runs(batch: DecodedBatch) -> tuple[np.ndarray, np.ndarray]:
    """Maximal runs of the union of every set in the batch."""
    lo, hi, _ = batch.blocks()
    return merge_runs(lo, hi)


def kind_of(encoding: bytes) -> int:
    """The kind byte of one encoding, after checking its header."""
    if len(encoding) < HEADER_SIZE:
        raise LineageDecodeError("truncated lineage encoding: shorter than its 5-byte header")
    if encoding[:3] != MAGIC:
        raise LineageDecodeError("not a dltrace lineage encoding (bad magic bytes)")
    if encoding[3] != VERSION:
        raise LineageDecodeError(
            f"unsupported lineage encoding version {encoding[3]} (this dltrace reads {VERSION})"
        )
    if encoding[4] not in KINDS:
        raise LineageDecodeError(f"unknown lineage encoding kind {encoding[4]}")
    return encoding[4]


def _ranges(starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """All positions of the half-open ranges [starts[i], ends[i]), concatenated."""
    sizes = ends - starts
    total = int(sizes.sum())
    offsets = np.cumsum(sizes) - sizes
    return np.arange(total, dtype=np.int64) + np.repeat(starts - offsets, sizes)


def _varint_segments(
    buffer: np.ndarray, starts: np.ndarray, ends: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Decode the varints of each range; return values, owning range, per-range first index.

    A varint may not straddle two ranges: each non-empty range must end on a
    terminal byte, otherwise that input was truncated.
    """
    nonempty = ends > starts
    if np.any(buffer[ends[nonempty] - 1] >= 0x80):
        raise LineageDecodeError("truncated lineage encoding (ends inside a varint)")
    values, last_bytes = decode_varints(buffer[_ranges(starts, ends)])
    owner = np.searchsorted(np.cumsum(ends - starts), last_bytes, side="right")
    per_range = np.bincount(owner, minlength=starts.size)
    return values, owner, np.cumsum(per_range) - per_range


def _segmented_cumsum(increments: np.ndarray, segment_first: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """Cumulative sums restarting at each segment, in wrapping uint64 arithmetic."""
    totals = np.cumsum(increments, dtype=np.uint64)
    before = totals[segment_first] - increments[segment_first]
    return totals - np.repeat(before, sizes)


def _decode_sorted(
    buffer: np.ndarray, starts: np.ndarray, ends: np.ndarray, selected: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    no_keys = np.empty(0, dtype=np.uint64)
    no_owner = np.empty(0, dtype=np.int64)
    if selected.size == 0:
        return no_keys, no_owner, no_keys, no_keys.copy(), no_owner
    starts, ends = starts[selected], ends[selected]
    if np.any(ends - starts < HEADER_SIZE + 2):
        raise LineageDecodeError("truncated sorted-set encoding (no mode byte or count)")
    modes = buffer[starts + HEADER_SIZE]
    if np.any(modes > MODE_RUNS):
        raise LineageDecodeError(f"unknown sorted-set encoding mode {int(modes.max())}")
    values, owner, first = _varint_segments(buffer, starts + HEADER_SIZE + 1, ends)
    counts = values[first]
    received = np.bincount(owner, minlength=starts.size).astype(np.uint64)
    expected = np.where(modes == MODE_RUNS, 2 * counts, counts) + _ONE
    if np.any(counts > np.uint64(1 << 60)) or np.any(received != expected):
        raise LineageDecodeError(
            "sorted-set encoding holds the wrong number of values (truncated or trailing bytes)"
        )
    body = np.ones(values.size, dtype=bool)
    body[first] = False  # drop the count fields
    body_values, body_owner = values[body], owner[body]
    body_sizes = (received - _ONE).astype(np.int64)
    body_first = np.cumsum(body_sizes) - body_sizes
    in_mode = modes[body_owner]
    position = np.arange(body_values.size) - np.repeat(body_first, body_sizes)
    increments = body_values.copy()
    is_first = position == 0
    increments[is_first] = _zigzag_id_to_key(body_values[is_first])
    delta = (in_mode == MODE_DELTAS) & ~is_first
    increments[delta] += _ONE  # wraps to 0 for 2**64 - 1, caught by the order check
    gap = (in_mode == MODE_RUNS) & ~is_first & (position % 2 == 0)
    if np.any(body_values[gap] > _MAX_KEY - _TWO):
        raise LineageDecodeError("sorted-set encoding has a run gap beyond the id range")
    increments[gap] += _TWO
    nonempty = body_sizes > 0
    points = _segmented_cumsum(increments, body_first[nonempty], body_sizes[nonempty])
    # Each step adds less than 2**64, so a wrap shows up as a step that goes down.
    step_up = points[1:] > points[:-1]
    step_level = points[1:] >= points[:-1]
    within = ~is_first[1:]
    length_step = within & (in_mode[1:] == MODE_RUNS) & (position[1:] % 2 == 1)
    if np.any(within & ~length_step & ~step_up) or np.any(length_step & ~step_level):
        raise LineageDecodeError("sorted-set encoding overflows the 64-bit id range")
    deltas_mask = in_mode == MODE_DELTAS
    runs_mask = ~deltas_mask
    run_points = points[runs_mask]
    run_owner = selected[body_owner[runs_mask][0::2]]
    return (
        points[deltas_mask],
        selected[body_owner[deltas_mask]],
        run_points[0::2],
        run_points[1::2],
        run_owner,
    )


def _decode_bdds(buffer: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> NodeTable:
    if starts.size == 0:
        empty = np.empty(0, dtype=np.int64)
        return NodeTable(empty, empty, empty, empty)
    if np.any(ends - starts < HEADER_SIZE + 2):
        raise LineageDecodeError("truncated roBDD encoding (no node count or root)")
    node_counts, after_count = read_varints_at(buffer, starts + HEADER_SIZE, ends)
    room = ends - after_count - 1  # stream B holds at least the root reference
    if np.any(room < 0) or np.any(node_counts > room.astype(np.uint64)):
        raise LineageDecodeError("truncated roBDD encoding (fewer bytes than its node count)")
    sizes = node_counts.astype(np.int64)
    a_starts = ends - sizes
    shape_bytes = buffer[_ranges(a_starts, ends)]
    bits = (shape_bytes >> 2).astype(np.int64)
    shapes = shape_bytes & 3
    if np.any(shapes == 3):
        raise LineageDecodeError("roBDD encoding has an invalid node shape")
    values, owner, first = _varint_segments(buffer, after_count, a_starts)
    general_per_input = np.bincount(
        np.repeat(np.arange(sizes.size), sizes)[shapes == SHAPE_GENERAL], minlength=sizes.size
    )
    received = np.bincount(owner, minlength=sizes.size)
    if np.any(received != 2 * general_per_input + 1):
        raise LineageDecodeError("roBDD encoding has the wrong number of child references")
    root_fields = values[first]
    has_nodes = sizes > 0
    if np.any(root_fields[has_nodes] != ROOT_IS_LAST_NODE) or np.any(root_fields[~has_nodes] > TRUE):
        raise LineageDecodeError("roBDD encoding has an invalid root reference")
    node_offset = np.cumsum(sizes) - sizes
    codes = np.arange(2, int(sizes.sum()) + 2, dtype=np.int64)
    first_code = np.repeat(node_offset + 2, sizes)
    lows = np.where(shapes == SHAPE_LOW_CHAIN, codes - 1, FALSE)
    highs = np.where(shapes == SHAPE_HIGH_CHAIN, codes - 1, FALSE)
    if np.any((shapes != SHAPE_GENERAL) & (codes == first_code)):
        raise LineageDecodeError("roBDD encoding: a chain node has no previous node")
    is_reference = np.ones(values.size, dtype=bool)
    is_reference[first] = False
    references = values[is_reference]
    general = np.flatnonzero(shapes == SHAPE_GENERAL)
    lows[general] = _resolve(references[0::2], codes[general], first_code[general])
    highs[general] = _resolve(references[1::2], codes[general], first_code[general])
    roots = np.where(has_nodes, node_offset + sizes + 1, root_fields.astype(np.int64))
    _check_structure(bits, lows, highs, codes, first_code, roots[has_nodes])
    return NodeTable(bits, lows, highs, roots)


def _resolve(references: np.ndarray, codes: np.ndarray, first_code: np.ndarray) -> np.ndarray:
    """Child codes from references (0, 1, or distance + 1), refusing out-of-range ones."""
    terminal = references < _TWO
    reach = (codes - first_code + 1).astype(np.uint64)  # largest valid distance + 1
    if np.any(~terminal & (references > reach)):
        raise LineageDecodeError("roBDD encoding has a child reference out of range")
    distance = np.where(terminal, _ONE, references - _ONE).astype(np.int64)
    return np.where(terminal, references.astype(np.int64), codes - distance)


def _check_structure(
    bits: np.ndarray,
    lows: np.ndarray,
    highs: np.ndarray,
    codes: np.ndarray,
    first_code: np.ndarray,
    roots: np.ndarray,
) -> None:
    """Reject anything but a canonical reduced ordered BDD (see nodetable)."""
    if codes.size == 0:
        return
    extended_bits = np.concatenate((np.array([-1, -1], dtype=np.int64), bits))
    if np.any(extended_bits[lows] >= bits) or np.any(extended_bits[highs] >= bits):
        raise LineageDecodeError("roBDD encoding is not ordered (a child tests a higher bit)")
    if np.any(lows == highs):
        raise LineageDecodeError("roBDD encoding is not reduced (a node with equal children)")
    same_input = codes[1:] != first_code[1:]
    ascending = (bits[1:] > bits[:-1]) | (
        (bits[1:] == bits[:-1])
        & ((lows[1:] > lows[:-1]) | ((lows[1:] == lows[:-1]) & (highs[1:] > highs[:-1])))
    )
    if np.any(same_input & ~ascending):
        raise LineageDecodeError("roBDD encoding is not in canonical node order")
    referenced = np.zeros(codes.size + 2, dtype=bool)
    referenced[lows] = True
    referenced[highs] = True
    referenced[roots] = True
    if not referenced[2:].all():
        raise LineageDecodeError("roBDD encoding has unreachable nodes")
