"""Window lineage by frame (docs/semantics.md, "Windows"), row by row against DuckDB.

Under data semantics a window row's DL is its own ids and those of the rows its window
values read: an aggregate's frame, the row at a LAG/LEAD offset, the rows ordered at or
before it for a rank, the partition for NTILE/PERCENT_RANK/CUME_DIST.  The expected DLs are
computed by DuckDB from those definitions with self-joins over the same base rows and ids
(no window function is involved, so a frame Spark and dltrace get wrong the same way still
fails).  Under control semantics a row's DL is its partition.  The completeness oracle runs
on every form whose rows are contiguous with the row (docs/semantics.md says which are not).
"""

from __future__ import annotations

from collections import Counter

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dltrace import LineageSession
from dltrace.formatting import lineage_ids
from tests.oracle import DuckOracle, check_completeness

pytestmark = pytest.mark.spark

# partitions of 1 to 13 rows (and one with a NULL key), ties in t, NULLs in x, u unique
ROWS = [
    (i, None if i % 11 == 0 else ("a" if i < 14 else "b" if i < 25 else "c" if i < 26 else "d"),
     (i * 7) % 5, None if i % 6 == 0 else (i * 13) % 17, i * 3 % 37)
    for i in range(1, 38)
]

# (name, window value, the frame's base rows of row `a` as a DuckDB condition on row `b`,
#  whether the completeness oracle holds for it)
SAME_PARTITION = "b.k IS NOT DISTINCT FROM a.k"
ORDINAL = "(SELECT count(*) FROM base_trips c WHERE c.k IS NOT DISTINCT FROM {r}.k AND c.u <= {r}.u)"
POSITION_A, POSITION_B = ORDINAL.format(r="a"), ORDINAL.format(r="b")
FORMS = [
    ("running sum", "sum(x) over (partition by k order by t)", "b.t <= a.t", True),
    ("running count by rows", "count(*) over (partition by k order by u rows between unbounded preceding and "
     "current row)", "b.u <= a.u", True),
    ("sliding", "avg(x) over (partition by k order by u rows between 1 preceding and 1 following)",
     f"abs({POSITION_B} - {POSITION_A}) <= 1", True),
    ("before the row", "sum(x) over (partition by k order by u rows between 3 preceding and 1 preceding)",
     f"{POSITION_B} between {POSITION_A} - 3 and {POSITION_A} - 1", True),
    ("to the end", "max(x) over (partition by k order by u rows between current row and unbounded following)",
     "b.u >= a.u", True),
    ("range offsets", "count(x) over (partition by k order by t range between 2 preceding and 1 following)",
     "b.t between a.t - 2 and a.t + 1", True),
    ("lag", "lag(x) over (partition by k order by u)", f"{POSITION_B} = {POSITION_A} - 1", True),
    ("lead 2", "lead(x, 2, -1) over (partition by k order by u)", f"{POSITION_B} = {POSITION_A} + 2", False),
    ("rank", "rank() over (partition by k order by t)", "b.t <= a.t", True),
    ("dense_rank desc", "dense_rank() over (partition by k order by t desc)", "b.t >= a.t", True),
    ("row_number", "row_number() over (partition by k order by t, u)", "b.t < a.t or (b.t = a.t and b.u <= a.u)",
     True),
    ("ntile", "ntile(3) over (partition by k order by u)", "true", True),
    ("cume_dist", "cume_dist() over (partition by k order by t)", "true", True),
    ("first_value", "first_value(x) over (partition by k order by u)", "b.u <= a.u", True),
    ("partition total", "sum(x) over (partition by k)", "true", True),
    ("no partition", "sum(x) over (order by u rows between 2 preceding and current row)",
     "(SELECT count(*) FROM base_trips c WHERE c.u between b.u and a.u) between 1 and 3", True),
]


@pytest.fixture(scope="module")
def windows(spark, tmp_path_factory) -> LineageSession:
    directory = tmp_path_factory.mktemp("windows")
    table = pa.table({name: list(column) for name, column in zip(["id", "k", "t", "x", "u"], zip(*ROWS))},
                     schema=pa.schema([("id", pa.int64()), ("k", pa.string()), ("t", pa.int64()), ("x", pa.int64()),
                                       ("u", pa.int64())]))
    pq.write_table(table, directory / "trips.parquet")
    pq.write_table(pa.table({"zone": ["a", "b", "c"], "zone_name": ["north", "south", "east"]}),
                   directory / "zones.parquet")
    session = LineageSession(directory / "catalog", spark=spark)
    session.register("trips", directory / "trips.parquet", key=["id"])
    session.register("zones", directory / "zones.parquet", key=["zone"])
    return session


@pytest.fixture(scope="module")
def oracle(windows) -> DuckOracle:
    return DuckOracle(windows)


def expected(oracle: DuckOracle, frame: str, partitioned: bool = True) -> dict[int, set[int]]:
    """Each trip's own id and those of the rows of its partition ``frame`` selects, by DuckDB."""
    partition = SAME_PARTITION if partitioned else "true"
    rows = oracle.db.execute(
        f"SELECT a.id, list(b._dl_id) FROM base_trips a JOIN base_trips b ON {partition} AND ({frame}) "
        "GROUP BY a.id").fetchall()
    own = dict(oracle.db.execute("SELECT id, _dl_id FROM base_trips").fetchall())
    found = {trip: set(ids) for trip, ids in rows}
    return {trip: found.get(trip, set()) | {own_id} for trip, own_id in own.items()}


def traced(session: LineageSession, query: str, semantics: str, representation: str = "set") -> dict:
    rows = session.sql(query, semantics=semantics, representation=representation).collect()
    dls = {r.id: list(lineage_ids(r.DL)) for r in rows}
    assert all(len(set(ids)) == len(ids) for ids in dls.values()), "DL must not repeat an id"
    return {trip: set(ids) for trip, ids in dls.items()}


@pytest.mark.parametrize("name, value, frame, complete", FORMS, ids=[f[0] for f in FORMS])
def test_data_lineage_is_the_frame(windows, oracle, name, value, frame, complete):
    query = f"select id, {value} as w from trips"
    want = expected(oracle, frame, partitioned=name != "no partition")
    assert traced(windows, query, "data") == want
    assert traced(windows, query, "data", "bdd") == want
    rows = windows.sql(query, semantics="data").collect()
    assert sorted(r.w for r in rows if r.w is not None) == sorted(
        r.w for r in windows.sql(query, lineage=False).collect() if r.w is not None)
    if complete:
        check_completeness(oracle, query, rows, tree=False, most=40)


@pytest.mark.parametrize("name, value", [(f[0], f[1]) for f in FORMS if f[0] != "no partition"])
def test_control_lineage_is_the_partition(windows, oracle, name, value):
    query = f"select id, {value} as w from trips"
    assert traced(windows, query, "control") == expected(oracle, "true")


def test_several_windows_union_their_frames(windows, oracle):
    query = ("select id, lag(x) over (partition by k order by u) as p, "
             "sum(x) over (partition by k order by u rows between 1 following and 2 following) as n from trips")
    lag = expected(oracle, f"{POSITION_B} = {POSITION_A} - 1")
    ahead = expected(oracle, f"{POSITION_B} between {POSITION_A} + 1 and {POSITION_A} + 2")
    assert traced(windows, query, "data") == {trip: lag[trip] | ahead[trip] for trip in lag}


def test_a_window_over_a_join_reads_both_tables_rows(windows, oracle):
    query = ("select t.id, count(*) over (partition by t.k order by t.u) as n, z.zone_name "
             "from trips t join zones z on z.zone = t.k")
    rows = windows.sql(query, semantics="data").collect()
    zone_ids = dict(oracle.db.execute("SELECT zone, _dl_id FROM base_zones").fetchall())
    frames = expected(oracle, "b.u <= a.u")
    kinds = dict(oracle.db.execute("SELECT id, k FROM base_trips").fetchall())
    assert {r.id: set(r.DL) for r in rows} == {trip: ids | {zone_ids[kinds[trip]]} for trip, ids in frames.items()
                                               if kinds[trip] in zone_ids}
    check_completeness(oracle, query, rows, tree=False, most=40)


def test_a_window_over_groups_reads_the_groups_rows(windows, oracle):
    query = "select k, sum(sum(x)) over (order by k) as running from trips where k is not null group by k"
    rows = windows.sql(query, semantics="data").collect()
    ids_by_key = dict(oracle.db.execute("SELECT k, list(_dl_id) FROM base_trips WHERE k IS NOT NULL GROUP BY k")
                      .fetchall())
    assert {r.k: set(r.DL) for r in rows} == {
        key: {i for other, ids in ids_by_key.items() if other <= key for i in ids} for key in ids_by_key}
    check_completeness(oracle, query, rows, tree=False, most=10)


def test_the_latest_row_per_key_reads_the_rows_ordered_before_it(windows, oracle):
    """The keep-the-latest idiom: ``row_number() = 1`` under ``ORDER BY ... DESC`` reads the rows
    at or before it, its peers (ties of t) included."""
    query = ("select id, k from (select id, k, row_number() over (partition by k order by t desc) as rn from trips) "
             "where rn = 1")
    rows = windows.sql(query, semantics="data").collect()
    frames = expected(oracle, "b.t >= a.t")
    assert {r.id: set(r.DL) for r in rows} == {r.id: frames[r.id] for r in rows}


SAVED_FORMS = [f for f in FORMS if f[0] in ("running sum", "range offsets", "dense_rank desc", "to the end", "lag",
                                            "ntile")]


@pytest.mark.parametrize("semantics", ["data", "control"])
@pytest.mark.parametrize("name, value", [(f[0], f[1]) for f in SAVED_FORMS], ids=[f[0] for f in SAVED_FORMS])
def test_a_saved_window_holds_its_sets_apart_and_its_rows_the_same_lineage(windows, name, value, semantics):
    """A save stores a window's partitions and RANGE frames as sets held apart (each row names
    a few); every row's whole DL read back equals the DL the query computes."""
    query = f"select id, {value} as w from trips"
    result = f"w_{semantics}_{name.replace(' ', '_')}"
    saved = windows.save(windows.sql(query, semantics=semantics), result)
    assert {r.id: set(r.DL) for r in windows.result(result).collect()} == traced(windows, query, semantics)
    # ROWS frames and offsets are computed in the rows; partitions and RANGE frames held apart
    computed_in_rows = ("lag", "to the end")
    assert (saved.named_sets > 0) == (semantics == "control" or name not in computed_in_rows)


COMPOSED = {
    # the trial's daily mart: a running total per key, then a rank per day over it
    "running then rank": "with daily as (select k, t, count(*) as n from trips group by k, t), running as (select k, "
                         "t, sum(n) over (partition by k order by t) as total from daily) select k, t, total, rank() "
                         "over (partition by t order by total desc) as place from running",
    "latest per key": "select id, k from (select id, k, row_number() over (partition by k order by t desc) as rn "
                      "from trips) where rn = 1",
    "grouped above": "select k, max(w) as top from (select k, sum(x) over (partition by k order by t) as w "
                     "from trips) group by k",
    "joined": "select z.zone_name, t.id, rank() over (partition by z.zone order by t.t) as r from trips t "
              "join zones z on z.zone = t.k",
    "union all": "select id, rank() over (partition by k order by t) as r from trips where x > 5 union all "
                 "select id, count(*) over (partition by t) from trips where x <= 5",
    "ordered": "select id, sum(x) over (partition by k order by t) as w from trips order by w desc, id limit 9",
}


def whole_bag(rows) -> Counter:
    return Counter((tuple(str(v) for k, v in r.asDict().items() if k not in ("DL", "_row")), frozenset(r.DL))
                   for r in rows)


@pytest.mark.parametrize("semantics", ["data", "control"])
@pytest.mark.parametrize("name", COMPOSED)
def test_a_saved_composition_of_windows_reads_back_its_lineage(windows, name, semantics):
    """Sets held apart pass through joins, filters, groups, a second window and UNION ALL:
    the saved rows' whole DLs are the query's, and a step reading the result composes."""
    query = COMPOSED[name]
    result = f"c_{semantics}_{name.replace(' ', '_')}"
    saved = windows.save(windows.sql(query, semantics=semantics), result)
    assert saved.named_sets > 0
    assert whole_bag(windows.result(result).collect()) == whole_bag(windows.sql(query, semantics=semantics).collect())
    step = f"select count(*) as n from {result}"
    inlined = f"with {result} as ({query}) {step}"
    assert whole_bag(windows.sql(step, semantics=semantics).collect()) == whole_bag(
        windows.sql(inlined, semantics=semantics).collect())


def test_impact_of_a_row_reaches_every_frame_that_holds_it(windows, oracle):
    """Stored impact over sets held apart finds the rows whose whole DL holds the bad row,
    as re-evaluation does."""
    query = COMPOSED["running then rank"]
    windows.save(windows.sql(query, semantics="data"), "impact_mart")
    bad = 7
    rows = windows.result("impact_mart").collect()
    bad_id = oracle.db.execute(f"SELECT _dl_id FROM base_trips WHERE id = {bad}").fetchone()[0]
    expected = Counter(tuple(str(v) for k, v in r.asDict().items() if k not in ("DL", "_row")) for r in rows
                       if bad_id in r.DL)
    assert expected, "the bad row should reach some rows"
    for mode in ("stored", "reeval"):
        found = windows.impact(f"trips WHERE id = {bad}", result="impact_mart", mode=mode).collect()
        assert Counter(tuple(str(v) for k, v in r.asDict().items() if k not in ("DL", "_row")) for r in found) \
            == expected, mode


def test_sets_held_apart_are_read_without_dltrace_and_without_spark(windows):
    """The documented DuckDB query (docs/formats.md) and the pyarrow readers (explain, the
    explorer) give every saved row's whole DL, the sets it names resolved."""
    from pathlib import Path

    from tests.test_shared_lineage import duckdb_decoded

    windows.save(windows.sql(COMPOSED["running then rank"], semantics="data"), "files_mart")
    saved = windows.store.get("files_mart")
    expected = {r["_row"]: sorted(r.DL) for r in windows.result("files_mart").collect()}
    assert duckdb_decoded(saved, windows.store) == {row: ids for row, ids in expected.items() if ids}
    assert {row: list(windows.store.row_ids(saved, row)) for row in expected} == expected
    assert Path(windows.store.path(saved.shared)).exists() and saved.named_sets > 0
    stored = pq.read_table(windows.store.path(saved.shared))  # sorted by set, then id (docs/formats.md)
    keys = list(zip(stored.column("set_id").to_pylist(), stored.column("id").to_pylist()))
    assert keys == sorted(set(keys))


def test_a_dl_past_the_memory_bound_is_refused_in_one_line(windows, capsys, monkeypatch):
    """Issue 56: a row's whole DL is read at once (explain, summaries, the explorer's why);
    past DLTRACE_MEMORY_BOUND the command says so in one line, exit 2, before reading it."""
    from dltrace import result_pages
    from dltrace.memory_bound import BOUND_VARIABLE, OverMemoryBound
    from tests.test_cli import cli, one_line

    windows.save(windows.sql(COMPOSED["running then rank"], semantics="data"), "bounded_mart")
    saved = windows.store.get("bounded_mart")
    row = saved.rows - 1
    names = sorted(set(pq.read_table(windows.store.path(saved.data)).column("DL_shared")[row].as_py()))
    named_ids = sum(map(len, result_pages.shared_sets(windows.store, saved, names).values()))
    assert 0 < named_ids <= result_pages.shared_ids_to_read(windows.store, saved, names)
    monkeypatch.setenv(BOUND_VARIABLE, "100")  # bytes: about 4 ids
    with pytest.raises(OverMemoryBound, match=f"row {row} of bounded_mart holds about"):
        windows.store.row_ids(saved, row)
    code, out, err = cli(capsys, "explain", "--result", "bounded_mart", "--row", str(row),
                         "--catalog", str(windows.catalog.directory))
    assert code == 2 and out == "" and one_line(err) and "over dltrace's memory bound of 0 MiB" in err, err
    monkeypatch.setenv(BOUND_VARIABLE, "lots")
    code, _, err = cli(capsys, "explain", "--result", "bounded_mart", "--row", "0",
                       "--catalog", str(windows.catalog.directory))
    assert code == 2 and "DLTRACE_MEMORY_BOUND='lots' is not a size" in err


REVIEWED = {
    # a frame written with its start alone ends at the current row
    "start only": "select id, sum(x) over (partition by k order by t range unbounded preceding) as w from trips",
    # LAG ... RESPECT NULLS reads the row at its offset, as LAG does
    "respect nulls": "select id, lag(x) respect nulls over (partition by k order by u) as w from trips",
    # partitions whose rows have no ids (a literal row): their sets still exist
    "rows without ids": "select k, sum(v) over (partition by k) as w from (select k, x as v from trips union all "
                        "select 'zz' as k, 1 as v)",
    # every branch of a top UNION ALL reads the same subquery: its lineage stays in every row
    "union with a shared subquery": "select id, rank() over (partition by k order by t) as r from trips where x > "
                                    "(select avg(x) from trips) union all select id, 0 from trips where "
                                    "x > (select avg(x) from trips)",
    # what picks rows by chance below the window: the sets are not held apart (computed in the row)
    "latest row first": "select k, count(*) over (partition by k order by t) as n from (select k, t, row_number() "
                        "over (partition by k order by u) as rn from trips) where rn <= 2",
    # a window in a CTE of a nested WITH read by a subquery's lineage copy
    "nested cte": "select * from (with a as (select k, sum(x) over (partition by k) as w from trips) "
                  "select k, w from a where w > (select min(w) from a)) z",
}


@pytest.mark.parametrize("semantics", ["data", "control"])
@pytest.mark.parametrize("name", REVIEWED)
def test_reviewed_shapes_save_the_lineage_they_compute(windows, name, semantics):
    query = REVIEWED[name]
    result = f"r_{semantics}_{name.replace(' ', '_')}"
    windows.save(windows.sql(query, semantics=semantics), result)
    assert whole_bag(windows.result(result).collect()) == whole_bag(windows.sql(query, semantics=semantics).collect())


def test_a_window_over_a_saved_step_is_spelled_out_where_its_rows_are_named(windows):
    """A step's rows name the rows of the results it reads; a window over them is not held
    apart (the sets would hold names no reader resolves) and its lineage reaches base rows."""
    windows.save(windows.sql("select id, k, t, x from trips where x > 3"), "step_input")
    query = "select id, sum(x) over (partition by k order by t) as w from step_input"
    saved = windows.save(windows.sql(query, semantics="control"), "step_window")
    assert saved.named_sets == 0
    inlined = "with step_input as (select id, k, t, x from trips where x > 3) " + query
    assert whole_bag(windows.result("step_window").collect()) == whole_bag(windows.sql(inlined).collect())


def test_a_spark_sql_script_refuses_a_result_whose_rows_name_window_sets(windows):
    """A spark-sql script reads a saved result's own ids alone: one whose rows name their
    windows' sets is refused in one line (its lineage would be lost or every set spread)."""
    from dltrace.errors import BadInput

    windows.save(windows.sql("select id, rank() over (partition by k order by t) as r from trips"), "script_window")
    with pytest.raises(BadInput, match="names its windows' sets per row"):
        windows.script("select count(*) as n from script_window")


PARTITION_KEYS = {
    "arrays alike as text": "p",
    "columns": "a, b",
    "array": "array(a, b)",
    "struct": "named_struct('a', a, 'b', b)",
    "predicate": "a is null",
}


@pytest.mark.parametrize("key", PARTITION_KEYS)
def test_partitions_alike_in_print_or_hash_keep_sets_of_their_own(windows, key):
    """Arrays ['a, b'] and ['a', 'b'] print alike as text; a hash of the values skips NULLs, in
    arrays and structs too, so (NULL, 1) and (1, NULL) hash alike.  A shared name would give
    each partition's rows the other's lineage, or stop the save: names hash the values' JSON,
    which tells them apart.  A predicate key is one value like any other."""
    query = (f"select id, count(*) over (partition by {PARTITION_KEYS[key]} order by t) as n from (select id, t, "
             "case when id % 2 = 0 then 1 end as a, case when id % 2 = 1 then 1 end as b, "
             "case when id % 2 = 0 then array('a, b') else array('a', 'b') end as p from trips)")
    result = f"keyed_{key.replace(' ', '_')}"
    windows.save(windows.sql(query), result)
    assert whole_bag(windows.result(result).collect()) == whole_bag(windows.sql(query).collect())


def test_sets_of_one_name_stop_the_save(windows):
    """Two sets held apart whose 64-bit names collide would merge: the save stops instead."""
    from dltrace.errors import DltraceError
    from dltrace.named_sets import numbered_sets

    sets = windows.spark.createDataFrame([(7, [1]), (7, [2])], "__dlname bigint, __dlids array<bigint>")
    frame = windows.spark.createDataFrame([(1, [7])], "x int, DL_names array<bigint>")
    with pytest.raises(DltraceError, match="same 64-bit name"):
        numbered_sets(frame, sets, 0)


def test_rows_name_their_sets_by_number_after_every_shared_set(windows):
    """``DL_shared``: the shared sets every row names (0, 1), then each name's set number, in
    the row's order of names; a row without names (NULL) names the shared sets alone."""
    from dltrace.named_sets import numbered_sets

    sets = windows.spark.createDataFrame([(30, [1]), (-5, [2]), (12, [3])], "__dlname bigint, __dlids array<bigint>")
    frame = windows.spark.createDataFrame([(1, [12, -5]), (2, None), (3, [30])], "x int, DL_names array<bigint>")
    named, numbered, count = numbered_sets(frame, sets, 2)
    assert count == 3
    assert sorted(tuple(r) for r in named.select("x", "DL_shared").collect()) == [
        (1, [0, 1, 3, 2]), (2, [0, 1]), (3, [0, 1, 4])]
    assert sorted((r.set_id, r.id) for r in numbered.collect()) == [(2, [2]), (3, [3]), (4, [1])]


def test_partitions_whose_names_collide_stop_the_save(windows, monkeypatch):
    """Sets are grouped by their partitions' values, not by name alone: partitions of one
    name (a 64-bit hash collision, forced here) are two sets of that name, and the save stops
    instead of giving each partition's rows both partitions' ids."""
    from dltrace.errors import DltraceError
    from dltrace.rewriter import window_sets

    monkeypatch.setattr(window_sets, "_partition_name", lambda frame, number: window_sets._parsed("XXHASH64('w')"))
    query = "select id, max(u) over (partition by k) as top_u from trips"
    with pytest.raises(DltraceError, match="same 64-bit name"):
        windows.save(windows.sql(query), "colliding_partitions")
    assert not windows.store.exists("colliding_partitions")


LONG_FRAMES = {
    "running": "sum(x) over (partition by k order by t)",
    "range offsets": "count(*) over (partition by k order by t range between 7 preceding and 4 following)",
    "rank": "rank() over (partition by k order by t desc)",
    "to the end": "max(x) over (partition by k order by t range between current row and unbounded following)",
}


@pytest.mark.parametrize("name", LONG_FRAMES)
def test_frames_over_partitions_of_many_levels_read_back_the_frame(windows, tmp_path, name):
    """Partitions of 1,000 and 200 rows with ties (blocks of several levels, frames cut inside
    a block at both ends): each saved row's whole DL is the frame's ids, as the query spells
    it out."""
    if "long_trips" not in windows.catalog.tables:
        rows = pa.table({"id": list(range(1, 1201)), "k": ["a" if i <= 1000 else "b" for i in range(1, 1201)],
                         "t": [i % 97 for i in range(1, 1201)], "x": [i % 13 for i in range(1, 1201)]})
        pq.write_table(rows, tmp_path / "long_trips.parquet")
        windows.register("long_trips", tmp_path / "long_trips.parquet", key=["id"])
    query = f"select id, {LONG_FRAMES[name]} as w from long_trips"
    result = f"long_{name.replace(' ', '_')}"
    saved = windows.save(windows.sql(query, semantics="data"), result)
    assert saved.named_sets > 0
    assert {r.id: set(r.DL) for r in windows.result(result).collect()} == traced(windows, query, "data")
