"""The batch UDFs (all sets of an Arrow batch encoded together) against per-row unions and Python sets.

``dl_bdd_union`` and ``dl_ids`` encode and decode all rows of a batch together. Each row's
bytes must still be exactly the compact encoding that the per-row path
(:func:`union_bytes`, :func:`bytes_from_ids`) gives, and hold exactly the set union of
the row's inputs: the tests compare all three, on batches with empty rows, NULLs, rows
sharing sets, ids at both ends of the id range, huge runs and periodic sets (roBDDs).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dltrace import udafs
from dltrace.bddsets import bytes_from_ids, ids_from_bytes, union_bytes
from dltrace.bddsets.base import ids_to_keys
from dltrace.bddsets.encoding import KIND_UNION, encode_sorted_keys, encode_sorted_sets
from dltrace.bddsets.runs import merge_owned_runs, owned_runs_from_keys, runs_from_keys
from dltrace.udafs import SHARED_MIN_BYTES, ids_column, union_column

INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1
# both ends of the positive (row id) range, table-code boundaries, and granule ids (negative)
ANCHORS = (0, 1, (1 << 48) - 5, 1 << 48, (7 << 48) + 4_321, (32767 << 48) - 5, INT64_MAX - 30, INT64_MIN, -40)
BATCHES = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)

SETS = pa.list_(pa.binary())
IDS = pa.list_(pa.int64())


@st.composite
def id_lists(draw: st.DrawFn) -> list[int]:
    """Ids in a few short runs (some strided: BDD nodes then skip bits) near the anchors."""
    ids: set[int] = set()
    for anchor, offset, length, stride in draw(
        st.lists(
            st.tuples(st.sampled_from(ANCHORS), st.integers(0, 40), st.integers(1, 20), st.sampled_from([1, 1, 2, 3])),
            max_size=4,
        )
    ):
        ids.update(i for i in range(anchor + offset, anchor + offset + length * stride, stride) if i <= INT64_MAX)
    return sorted(ids)


@st.composite
def batches(draw: st.DrawFn) -> tuple[list[list[bytes | None] | None], list[list[int | None] | None]]:
    """Rows of (encoded sets, ids), the sets drawn from a small pool so that rows share them."""
    pool = draw(st.lists(st.tuples(id_lists(), st.sampled_from(["bdd", "set"])), min_size=1, max_size=4))
    encoded = [bytes_from_ids(ids, kind) for ids, kind in pool]
    set_cells = st.none() | st.sampled_from(range(len(encoded))).map(lambda i: encoded[i])
    id_cells = st.none() | st.sampled_from(ANCHORS) | st.integers(0, 60).map(lambda n: (3 << 48) + n)
    rows = draw(
        st.lists(
            st.tuples(st.none() | st.lists(set_cells, max_size=3), st.none() | st.lists(id_cells, max_size=6)),
            max_size=12,
        )
    )
    return [sets for sets, _ in rows], [ids for _, ids in rows]


def expected_ids(sets: list[bytes | None] | None, ids: list[int | None] | None) -> list[int]:
    """The row's union computed with Python sets (NULLs are empty)."""
    union = {i for i in ids or [] if i is not None}
    for data in sets or []:
        if data is not None:
            union.update(ids_from_bytes(data).tolist())
    return sorted(union)


def per_row_union(sets: list[bytes | None] | None, ids: list[int | None] | None) -> bytes:
    """The row's compact encoding by the per-row path."""
    return union_bytes([*(sets or []), bytes_from_ids([i for i in ids or [] if i is not None], "bdd")], "compact")


@pytest.mark.slow
@BATCHES
@given(batches())
def test_batch_union_equals_per_row_union_and_set_union(batch: tuple[list, list]) -> None:
    sets, ids = batch
    out = union_column(pa.array(sets, SETS), pa.array(ids, IDS))
    assert out.type == pa.binary() and len(out) == len(ids) and out.null_count == 0
    for row, data in enumerate(out.to_pylist()):
        assert data == per_row_union(sets[row], ids[row])
        assert data == bytes_from_ids(expected_ids(sets[row], ids[row]), "compact")
        assert ids_from_bytes(data).tolist() == expected_ids(sets[row], ids[row])


@BATCHES
@given(batches())
def test_batch_ids_equal_per_row_ids(batch: tuple[list, list]) -> None:
    sets, ids = batch
    cells = [None if row is None else bytes_from_ids(expected_ids(row, None), kind) for row, kind in
             zip(sets, ["bdd", "set"] * len(sets))]
    out = ids_column(pa.array(cells, pa.binary()))
    assert out.type == IDS
    assert out.to_pylist() == [None if c is None else ids_from_bytes(c).tolist() for c in cells]


def test_sliced_and_chunked_columns() -> None:
    """Arrow hands UDFs slices (non-zero offsets) and chunked arrays; both read the right rows."""
    sets = pa.array([[bytes_from_ids([1, 2])], None, [bytes_from_ids([5], "set"), None], []], SETS)
    ids = pa.array([[9], [3, None, 3], None, [INT64_MAX, 0]], IDS)
    whole = union_column(sets, ids).to_pylist()
    assert [ids_from_bytes(b).tolist() for b in whole] == [[1, 2, 9], [3], [5], [0, INT64_MAX]]
    assert union_column(sets.slice(1, 2), ids.slice(1, 2)).to_pylist() == whole[1:3]
    chunked = union_column(
        pa.chunked_array([sets.slice(0, 2), sets.slice(2)]), pa.chunked_array([ids.slice(0, 2), ids.slice(2)])
    )
    assert chunked.to_pylist() == whole
    column = pa.array([None, *whole], pa.binary())
    assert ids_column(column.slice(1, 3)).to_pylist() == [[1, 2, 9], [3], [5]]
    assert ids_column(pa.chunked_array([column.slice(0, 2), column.slice(2)])).to_pylist() == [
        None,
        [1, 2, 9],
        [3],
        [5],
        [0, INT64_MAX],
    ]


def test_empty_batch_and_empty_rows() -> None:
    assert len(union_column(pa.array([], SETS), pa.array([], IDS))) == 0
    assert len(ids_column(pa.array([], pa.binary()))) == 0
    out = union_column(pa.array([None, [], [None]], SETS), pa.array([[], None, [None]], IDS)).to_pylist()
    assert out == [bytes_from_ids([], "compact")] * 3


def test_a_corrupt_set_is_refused_not_skipped() -> None:
    """An empty or foreign byte string is not a set: the UDF fails instead of dropping lineage."""
    for cell in (b"", b"DLS\x09\x02"):
        with pytest.raises(ValueError):
            union_column(pa.array([[bytes_from_ids([1])], [cell]], SETS), pa.array([[], []], IDS))


def test_huge_runs_and_every_id() -> None:
    """Sets of 2**48 ids (a whole table) and of every id union by runs, never id by id."""
    table_lo, table_hi = ids_to_keys(np.array([5 << 48, (6 << 48) - 1]))
    whole_table = encode_sorted_keys(np.array([table_lo]), np.array([table_hi]))
    everything = encode_sorted_keys(np.array([0], dtype=np.uint64), np.array([(1 << 64) - 1], dtype=np.uint64))
    sets = [[whole_table], [whole_table, bytes_from_ids([(6 << 48), 3])], [everything], [whole_table, everything]]
    ids = [[(5 << 48) + 17], [(5 << 48) - 1], [], [INT64_MIN, INT64_MAX]]
    out = union_column(pa.array(sets, SETS), pa.array(ids, IDS)).to_pylist()
    assert out == [per_row_union(s, i) for s, i in zip(sets, ids)]
    assert out[0] == union_bytes([whole_table], "compact") and out[2] == out[3] == union_bytes([everything], "compact")
    assert out[2] == everything  # one run: header, mode, count, first id, length


def test_many_rows_share_one_large_set() -> None:
    """10^4 rows each union a 10^5-id set with their own id: every row canonical and right."""
    shared = bytes_from_ids(np.arange(1 << 48, (1 << 48) + 100_000))
    rows = 10_000
    own = (2 << 48) + np.arange(rows) * 3
    out = union_column(pa.array([[shared]] * rows, SETS), pa.array([[int(i)] for i in own], IDS)).to_pylist()
    for row in (0, 1, 4_999, rows - 1):
        assert out[row] == union_bytes([shared, bytes_from_ids([int(own[row])])], "compact")
    assert len(set(out)) == rows



@BATCHES
@given(batches())
def test_rows_sharing_sets_hold_exactly_their_unions(batch: tuple[list, list]) -> None:
    """With any set counting as large, rows of the drawn batches share sets (kind 3 parts):
    each row, and each row fed to another union, still holds exactly its union."""
    sets, ids = batch
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(udafs, "SHARED_MIN_BYTES", 5)
        out = union_column(pa.array(sets, SETS), pa.array(ids, IDS))
        again = union_column(pa.array([[cell] for cell in out.to_pylist()], SETS), pa.array([[1]] * len(out), IDS))
    expected = [expected_ids(s, i) for s, i in zip(sets, ids)]
    assert [ids_from_bytes(data).tolist() for data in out.to_pylist()] == expected
    assert ids_column(out).to_pylist() == expected
    assert [ids_from_bytes(data).tolist() for data in again.to_pylist()] == [sorted({1, *row}) for row in expected]


def test_rows_sharing_a_large_set_hold_it_once_each() -> None:
    """A large set that several rows of a batch share (an uncorrelated subquery's lineage)
    is copied into each row as a part (kind 3), not merged: every row still holds exactly
    the union, a row with nothing else holds the set's own bytes, and a held row unioned
    again (a DL fed to another union) is merged like any set."""
    shared = bytes_from_ids((4 << 48) + np.arange(0, 40_000, 7), "set")
    other = bytes_from_ids((6 << 48) + np.arange(0, 30_000, 5), "set")
    assert len(shared) >= SHARED_MIN_BYTES and len(other) >= SHARED_MIN_BYTES
    small = bytes_from_ids([3, 4], "bdd")
    sets = [[shared], [small, shared], [shared, shared], [shared], None, [other], [shared, other], [shared], [None]]
    ids = [[1, INT64_MAX], None, [2], [], [5], [9], None, [(4 << 48) + 7], [None]]
    out = union_column(pa.array(sets, SETS), pa.array(ids, IDS)).to_pylist()
    assert [ids_from_bytes(data).tolist() for data in out] == [expected_ids(s, i) for s, i in zip(sets, ids)]
    assert [data[4] == KIND_UNION for data in out] == [True, True, True, False, False, True, True, True, False]
    assert out[3] == shared and out[4] == per_row_union(None, [5])  # alone: the shared set's bytes as they are
    assert ids_column(pa.array(out, pa.binary())).to_pylist() == [expected_ids(s, i) for s, i in zip(sets, ids)]
    again = union_column(pa.array([[out[0], out[6]], [out[1]]], SETS), pa.array([[8], []], IDS)).to_pylist()
    expected = {8, *expected_ids(sets[0], ids[0]), *expected_ids(sets[6], None)}
    assert ids_from_bytes(again[0]).tolist() == sorted(expected)
    assert again[1] == per_row_union(sets[1], None)

@settings(max_examples=100, deadline=None, derandomize=True)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 40), st.integers(0, 6)), max_size=20))
def test_owned_runs_are_each_owners_maximal_runs(runs: list[tuple[int, int, int]]) -> None:
    owner = np.array([r[0] for r in runs], dtype=np.int64)
    lo = np.array([r[1] for r in runs], dtype=np.uint64)
    hi = lo + np.array([r[2] for r in runs], dtype=np.uint64)
    merged = merge_owned_runs(lo, hi, owner)
    keys = np.concatenate([np.arange(a, b + 1, dtype=np.uint64) for a, b in zip(lo, hi)] or [np.empty(0, np.uint64)])
    key_owner = np.repeat(owner, (hi - lo + 1).astype(np.int64))
    from_keys = owned_runs_from_keys(keys, key_owner)
    expected: list[tuple[int, int, int]] = []
    for who in sorted(set(owner.tolist())):
        members = sorted(
            {k for a, b, o in zip(lo.tolist(), hi.tolist(), owner.tolist()) if o == who for k in range(a, b + 1)}
        )
        for k in members:
            if expected and expected[-1][0] == who and expected[-1][2] == k - 1:
                expected[-1] = (who, expected[-1][1], k)
            else:
                expected.append((who, k, k))
    for got in (merged, from_keys):
        assert list(zip(got[2].tolist(), got[0].tolist(), got[1].tolist())) == expected


def test_rows_repeating_the_row_before_are_built_once_and_right() -> None:
    """A subquery's lineage copy is the same id array on every row: the UDF builds it once,
    and rows that only look alike (same length, other ids or order, or with sets) stay apart."""
    copy = [(2 << 48) + i for i in range(0, 6000, 3)]  # over REPEAT_MIN_IDS, and periodic
    other = [*copy[:-1], copy[-1] + 1]
    sets = [[], [], None, [], [bytes_from_ids([5])], [], [], []]
    ids = [copy, copy, copy, other, copy, copy, copy[::-1], [7]]
    out = union_column(pa.array(sets, SETS), pa.array(ids, IDS)).to_pylist()
    assert out == [per_row_union(s, i) for s, i in zip(sets, ids)]
    assert out[0] == out[1] == out[2] == out[5] == out[6] != out[3]


@settings(max_examples=100, deadline=None, derandomize=True)
@given(st.lists(st.none() | id_lists(), max_size=8))
def test_batch_sorted_encodings_equal_per_set_encodings(rows: list[list[int] | None]) -> None:
    """encode_sorted_sets gives each set of a batch the bytes encode_sorted_keys gives it alone:
    empty sets, single ids, both ends of the id range, and (None here) the full range."""
    runs = [
        (np.array([0], dtype=np.uint64), np.array([(1 << 64) - 1], dtype=np.uint64))
        if row is None
        else runs_from_keys(ids_to_keys(np.array(row, dtype=np.int64)))
        for row in rows
    ]
    lo = np.concatenate([r[0] for r in runs] or [np.empty(0, np.uint64)])
    hi = np.concatenate([r[1] for r in runs] or [np.empty(0, np.uint64)])
    owner = np.repeat(np.arange(len(rows)), [r[0].size for r in runs])
    data, offsets = encode_sorted_sets(lo, hi, owner, len(rows))
    for row, (row_lo, row_hi) in enumerate(runs):
        encoded = data[offsets[row] : offsets[row + 1]].tobytes()
        assert encoded == encode_sorted_keys(row_lo, row_hi)
        if rows[row] is not None:
            assert ids_from_bytes(encoded).tolist() == rows[row]
