"""Shared lineage held once (docs/impact.md, "Shared lineage is held once"): the sets every row of a result shares
(an uncorrelated subquery's lineage under control semantics) are computed once, stored once
in ``shared.parquet`` and searched once, and every reader still sees each row's whole DL.

Oracles: the query's own spelled-out ``DL`` (what ``sql`` returns), re-evaluation for
impact, and DuckDB reading the Parquet files alone with the query of docs/formats.md.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from dltrace import LineageSession, rewriter
from dltrace.formatting import lineage_ids
from dltrace.ids import make_id
from dltrace.results import DL, FORMAT_WITHOUT_NAMED_SETS, ROW, SHARED_REFS
from tests.conftest import ROOT, stored_before_positions, tpch_copy
from tpch.duck import connect
from tpch.queries import load

# TPC-H queries whose rows share lineage under control semantics (uncorrelated subqueries)
SHARING = ["q11", "q15", "q16", "q18", "q20", "q22"]


@pytest.fixture(scope="module")
def shared(tpch, tmp_path_factory) -> LineageSession:
    return tpch_copy(tpch, tmp_path_factory, "shared")


def whole_dls(rows) -> Counter:
    """(values, sorted DL) pairs as a bag, ``_row`` ignored."""
    return Counter((tuple(str(v) for k, v in r.asDict().items() if k not in (DL, ROW)), tuple(lineage_ids(r[DL])))
                   for r in rows)


def test_the_rewriter_holds_shared_sets_apart_exactly_where_rows_share_them(tpch):
    schemas = tpch.catalog.schemas()
    codes = {name: entry.code for name, entry in tpch.catalog.tables.items()}
    sharing = set()
    for number in range(1, 23):
        for semantics in ("control", "data"):
            expression = rewriter.rewrite(rewriter.parse(load(f"q{number}")), schemas, codes, "set", semantics)
            if expression.meta.get(rewriter.SHARED):
                sharing.add((f"q{number}", semantics))
    assert sharing == {(q, "control") for q in SHARING}


@pytest.mark.parametrize("query, representation", [(q, "set") for q in SHARING] + [("q11", "bdd"), ("q22", "bdd")])
def test_saved_shared_sets_give_back_every_rows_whole_dl(shared, query, representation):
    frame = shared.sql(load(query), representation=representation)
    name = f"sh_{query}_{representation}"
    saved = shared.save(frame, name)
    assert saved.shared_sets == 1 and saved.shared and saved.format == FORMAT_WITHOUT_NAMED_SETS
    rows = shared.store.rows(shared.spark, saved).collect()
    assert all(r[SHARED_REFS] == [0] for r in rows)
    spelled = shared.result(name).collect()
    assert SHARED_REFS not in shared.result(name).columns
    assert whole_dls(spelled) == whole_dls(frame.collect())
    # stored once: the rows' own ids are fewer than the spelled-out ones by about rows x shared ids
    own = sum(len(r[DL]) for r in rows)
    whole = sum(len(r[DL]) for r in spelled)
    assert own + len(rows) * saved.shared_ids >= whole > own or saved.shared_ids == 0


def test_explain_and_summaries_read_the_shared_sets(shared):
    frame = shared.sql(load("q11"))
    shared.save(frame, "sh_explain")
    first = shared.result("sh_explain").where(f"{ROW} = 0").first()
    explained = shared.explain("sh_explain", 0)
    ids = sorted(i for rows in explained.values() for i in (r._dl_id for r in rows.collect()))
    assert ids == lineage_ids(first[DL])
    relation = shared.lineage_views("sh_explain")[0]
    from_relation = sorted(
        r.base_id for r in shared.spark.sql(f"select base_id from {relation} where _row = 0").collect()
    )
    assert from_relation == ids


def bad_row_in(session: LineageSession, dl_id: int) -> str:
    """A source naming exactly the row with ``dl_id`` (by its table's key)."""
    (table, rows), = session.decode([dl_id]).items()
    key = session.catalog.entry(table).key
    return f"{table} WHERE " + " AND ".join(f"{c} = {json.dumps(rows[0][c])}".replace('"', "'") for c in key)


MANY_BAD = {"q11": "partsupp WHERE ps_partkey < 300", "q15": "lineitem WHERE l_orderkey < 3000"}


@pytest.mark.parametrize("query", ["q11", "q15"])
def test_impact_tests_a_shared_set_once_and_equals_reevaluation(shared, query):
    frame = shared.sql(load(query))
    saved = shared.save(frame, f"sh_impact_{query}")
    shared_ids = [r.id for r in shared.store.shared_sets(shared.spark, saved).collect()]
    own_ids = {i for r in shared.store.rows(shared.spark, saved).collect() for i in r[DL]}
    in_shared_only = next(i for i in shared_ids if i not in own_ids)
    whole = {r[ROW]: set(r[DL]) for r in shared.result(saved.name).collect()}
    # Q11's rows have no own ids: its HAVING subquery reads the very rows it groups, so the
    # shared set holds them all (uncorrelated_copies.mark_subsuming_copies)
    sources = [(bad_row_in(shared, i), {i}) for i in (in_shared_only, *sorted(own_ids)[:1])]
    table, predicate = MANY_BAD[query].split(" WHERE ")
    many = {r[0] for r in shared.run(f"select _dl_id from {table} where {predicate}").collect()}
    assert len(many) > 1000  # past the literal list: the joined search
    sources.append((MANY_BAD[query], many))
    for source, bad in sources:
        stored = {r[ROW]: list(r[DL]) for r in shared.impact(source, result=saved.name).collect()}
        assert stored == {row: sorted(ids & bad) for row, ids in whole.items() if ids & bad}, source
        reevaluated = shared.impact(source, result=saved.name, mode="reeval").collect()
        assert Counter(tuple(lineage_ids(r[DL])) for r in reevaluated) == Counter(tuple(v) for v in stored.values())


def test_a_pipeline_step_over_a_result_with_shared_sets_equals_the_inlined_query(shared):
    q11 = load("q11").strip().rstrip(";")
    step = "select ps_partkey % 10 as bucket, count(*) as n, sum(value) as total from sh_step group by 1"
    shared.run_script(f"create or replace table sh_step as {q11};\ncreate or replace table sh_after as {step}")
    after = shared.store.get("sh_after")
    # the step names the upstream rows; their shared set stays stored once, in the upstream
    assert after.references == {"sh_step": 16384} and after.shared_sets == 0
    inlined = shared.sql(f"with sh_step as ({q11}) {step}").collect()
    assert whole_dls(shared.result("sh_after").collect()) == whole_dls(inlined)
    # a global aggregate has one row: the shared set is spelled out there
    total = "select count(*) as n from sh_step"
    shared.run_script(f"create or replace table sh_total as {total}")
    assert shared.store.get("sh_total").shared_sets == 0
    inlined_total = shared.sql(f"with sh_step as ({q11}) {total}").collect()
    assert whole_dls(shared.result("sh_total").collect()) == whole_dls(inlined_total)


def duckdb_query() -> str:
    """The DuckDB query of docs/formats.md that decodes a saved result with plain SQL."""
    text = (ROOT / "docs" / "formats.md").read_text()
    return re.search(r"```sql\n(-- every row's whole DL.*?)```", text, re.S).group(1)


def test_the_documented_duckdb_query_decodes_saved_lineage_without_dltrace(shared):
    frame = shared.sql(load("q11"))
    saved = shared.save(frame, "sh_duckdb")
    directory = Path(shared.store.path(saved.data)).parent
    query = duckdb_query().replace("RESULT", str(directory))
    decoded = {row: sorted(ids) for row, ids in connect().execute(query).fetchall()}
    assert decoded == {r[ROW]: lineage_ids(r[DL]) for r in shared.result("sh_duckdb").collect()}


def test_a_global_aggregate_of_no_rows_has_no_lineage_not_even_a_subquerys(paper):
    """DLUNION over no rows is ∅: the subquery's lineage comes with the rows that passed it."""
    empty = paper.sql("SELECT count(*) AS n FROM sales WHERE num > 99999 AND price > (SELECT avg(price) FROM sales)")
    assert [(r.n, list(r.DL)) for r in empty.collect()] == [(0, [])]
    some = paper.sql("SELECT count(*) AS n FROM sales WHERE price > (SELECT avg(price) FROM sales)").first()
    every_sale = {r[0] for r in paper.run("SELECT _dl_id FROM sales").collect()}
    assert some.n > 0 and set(some.DL) == every_sale  # avg(price) read every sale


def test_results_saved_before_shared_sets_still_load(shared):
    """A format 2 ``result.json`` (no shared fields) loads, and impact, explain and reading
    the result work on it as before."""
    saved = shared.save(shared.sql("select n_regionkey, count(*) as n from nation group by n_regionkey"), "sh_format2")
    stored = shared.store.rows(shared.spark, saved).collect()
    with stored_before_positions(shared, "sh_format2", 2, without=("shared", "shared_sets", "shared_ids")):
        old = shared.store.get("sh_format2")
        assert old.format == 2 and old.shared is None and old.positions is None and old.rows == saved.rows
        assert whole_dls(shared.result("sh_format2").collect()) == whole_dls(stored)
        hits = shared.impact("nation WHERE n_nationkey = 0", result="sh_format2").collect()
        assert len(hits) == 1 and len(hits[0][DL]) == 1
        assert sum(rows.count() for rows in shared.explain("sh_format2", 0).values()) == 5  # five nations a region


def test_a_lineage_copy_of_no_rows_has_no_lineage_not_even_a_nested_subquerys(paper):
    """NOT IN over an empty subquery: DLUNION of its (no) rows is ∅, its own IN subquery included."""
    query = ("SELECT s_name FROM store WHERE s_id NOT IN "
             "(SELECT s_id FROM sales WHERE i_id IN (SELECT i_id FROM item WHERE category = 'no such'))")
    rows = paper.sql(query).collect()
    assert rows and all(len(r.DL) == 1 for r in rows)  # the store's own id only


# -- the stored form decodes to exactly the ids saved -------------------------------------

MAX_ID = (1 << 63) - 1  # dltrace ids are (table code << 48) | row number: 0 .. 2^63 - 1 (dltrace.ids)
EDGES = [0, 1, 2, (1 << 48) - 1, 1 << 48, MAX_ID - 1, MAX_ID]
any_id = st.integers(0, MAX_ID)
# sets as lineage has them: empty, one id, scattered ids, ids at both ends, dense runs
# (lineage clusters), several tables' runs in one set (deltas of 2^48 and more)
id_set = st.one_of(
    st.just([]),
    any_id.map(lambda i: [i]),
    st.lists(any_id, max_size=6),
    st.lists(st.sampled_from(EDGES), max_size=len(EDGES)),
    st.builds(lambda start, n: list(range(start, start + n)), st.integers(0, MAX_ID - 400), st.integers(1, 400)),
    st.lists(st.builds(lambda code, start, n: list(range(make_id(code, start), make_id(code, start) + n)),
                       st.integers(1, 32767), st.integers(0, (1 << 48) - 20), st.integers(1, 20)), max_size=4)
    .map(lambda runs: [i for run in runs for i in run]),
).map(lambda ids: sorted(set(ids)))


@pytest.fixture(scope="module")
def empty(spark, tmp_path_factory) -> LineageSession:
    """A catalog without tables: ``ResultStore.save`` takes any DataFrame with a DL."""
    return LineageSession(tmp_path_factory.mktemp("decoded") / "catalog", spark=spark)


def save_given(session: LineageSession, dls: list[list[int]], shared_sets: list[list[int]]):
    """Save rows ``k = 0..`` with ``dls`` as their own ids and ``shared_sets`` named by every
    row, as ``ResultStore.save`` gets them from a query; returns the SavedResult."""
    spark = session.spark
    frame = spark.createDataFrame([(k, dl) for k, dl in enumerate(dls)], "k int, DL array<bigint>")
    sets = [spark.createDataFrame([(ids,)], "ids array<bigint>") for ids in shared_sets]
    return session.store.save(frame, "sh_decoded", "select 1 as k", "control", "set", index=True, shared_sets=sets)


def duckdb_decoded(saved, store) -> dict[int, list[int]]:
    """Each row's whole DL as the DuckDB query of docs/formats.md reads it (the first part alone without
    shared sets); rows whose whole DL is empty have no row there."""
    query = duckdb_query().replace("RESULT", str(Path(store.path(saved.data)).parent))
    if not saved.shared:
        query = query.split("  UNION ALL")[0] + ") GROUP BY _row ORDER BY _row;"
    return {row: sorted(ids) for row, ids in connect().execute(query).fetchall()}


@settings(max_examples=3, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(dls=st.lists(id_set, max_size=25), shared_sets=st.lists(id_set, max_size=2))
@example(dls=[[], [0], [MAX_ID], [0, MAX_ID], EDGES, []], shared_sets=[])
@example(dls=[[]] * 100 + [[7]], shared_sets=[list(range(make_id(8, 0), make_id(8, 2000))), [0, MAX_ID]])
# not dltrace ids, but DL is array<bigint>: deltas across the whole 64-bit range must not overflow
@example(dls=[[-(1 << 63), -1, 0, MAX_ID], [MAX_ID], [-(1 << 63)]], shared_sets=[[-(1 << 63), MAX_ID]])
def test_saved_lineage_decodes_to_exactly_the_ids_given(empty, dls, shared_sets):
    """Own ids, shared sets and the forward index read back exactly, through dltrace and
    through DuckDB alone, whatever the ids (the saved Parquet delta-encodes them)."""
    saved = save_given(empty, dls, shared_sets)
    store, spark = empty.store, empty.spark
    whole_shared = set().union(*map(set, shared_sets))
    expected = {k: sorted(set(dl) | whole_shared) for k, dl in enumerate(dls)}
    assert (
        saved.rows == len(dls)
        and saved.shared_sets == len(shared_sets)
        and saved.shared_ids == sum(map(len, shared_sets))
    )
    by_row = {r[ROW]: r["k"] for r in store.rows(spark, saved).select(ROW, "k").collect()}
    assert sorted(by_row) == list(range(len(dls)))
    spelled = {by_row[r[ROW]]: list(r[DL]) for r in store.lineage_rows(spark, saved).collect()}
    assert spelled == expected
    if dls:  # one small read
        assert store.row_ids(saved, len(dls) - 1).tolist() == expected[by_row[len(dls) - 1]]
    assert duckdb_decoded(saved, store) == {row: expected[k] for row, k in by_row.items() if expected[k]}
    # the forward index holds every (own id, row) pair once
    pairs = sorted((r.id, r[ROW]) for r in store.index(spark, saved).collect())
    assert pairs == sorted((i, row) for row, k in by_row.items() for i in dls[k])


def test_sets_every_input_of_a_union_all_shares_are_held_apart_above_it(paper):
    """TPC-DS q14's shape: one branch per channel, each filtered by the same uncorrelated
    subqueries, then a ROLLUP over the union.  The sets are held apart (computed once), and
    each row's own ids plus the sets are its whole DL, as ``sql`` spells it out."""
    from tests.test_constructs import CONSTRUCTS

    frame = paper.sql(CONSTRUCTS["shared_set_union_rollup"])
    rows, sets = paper.shared_lineage(frame)
    assert len(sets) == 2
    shared_ids = set().union(*(set(s.first()[0]) for s in sets))
    whole = [(r[:-1], set(r.DL)) for r in frame.collect()]
    assert [(r[:-1], set(r.DL) | shared_ids) for r in rows.collect()] == whole
    assert all(not shared_ids <= set(r.DL) for r in rows.collect())  # the rows do not spell the sets out


def test_a_padded_row_of_an_outer_join_gets_none_of_the_other_sides_shared_set(paper):
    """The right side's rows share the lineage of an IN subquery; a store without such a sale
    is padded and its DL is its own id alone, as the semantics say (the set held apart once
    made every padded row carry it)."""
    from tests.test_constructs import CONSTRUCTS

    rows = paper.sql(CONSTRUCTS["left_join_shared_set"]).collect()
    store_ids = {r._dl_id for r in paper.run("SELECT _dl_id FROM store").collect()}
    padded = [r for r in rows if r.n is None]
    matched = [r for r in rows if r.n is not None]
    assert padded and matched, "the data should have stores with and without such sales"
    assert all(len(r.DL) == 1 and r.DL[0] in store_ids for r in padded)
    stationery = {r._dl_id for r in paper.run("SELECT _dl_id FROM item WHERE category = 'stationery'").collect()}
    assert all(stationery <= set(r.DL) for r in matched)
