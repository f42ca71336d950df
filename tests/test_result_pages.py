"""Result pages read by pyarrow alone (dltrace/result_pages.py) give what Spark gives: the
same rows, values and whole DLs, over shared sets, references to upstream results, several
partitions and results saved before row positions.  So does stored impact read from the same
files (dltrace/impact/files.py, the command line's): the same affected rows and narrowed DLs,
with and without forward indexes, the same bad ids for the predicates it evaluates (NULLs as
SQL has them) and None for the others, and the same base rows for explain."""

from __future__ import annotations

import os
import subprocess
import sys
from contextlib import nullcontext
from dataclasses import replace

import numpy as np
import pytest

from dltrace import result_pages
from dltrace.commands.output import first_rows
from dltrace.impact import files
from dltrace.impact.backward import explain
from dltrace.impact.search import collect_bad_ids, impact
from dltrace.impact.source import parse_source
from dltrace.result_pages import from_files
from dltrace.results import DL, ROW
from dltrace.spark import session_conf
from dltrace.table_data import table_rows
from tests.conftest import stored_before_positions, tpch_copy
from tpch.queries import load


@pytest.fixture(scope="module")
def pages(tpch, tmp_path_factory):
    session = tpch_copy(tpch, tmp_path_factory, "pages")
    session.save(session.sql(load("q11")), "pg_shared")  # shared sets (the HAVING threshold's lineage)
    several = {"spark.sql.adaptive.coalescePartitions.enabled": "false",  # the 4 shuffle partitions
               "spark.sql.files.maxRecordsPerFile": "200"}  # and files that continue each other
    with session_conf(session.spark, several):
        session.save(session.sql("select o_custkey, count(*) as n, sum(o_totalprice) as total from orders "
                                 "group by o_custkey"), "pg_grouped")
    session.save(session.sql("select n, count(*) as customers from pg_grouped group by n"), "pg_downstream")
    session.save(session.sql("select s.ps_partkey, g.n from pg_shared s join pg_grouped g on g.n = s.ps_partkey % 7"),
                 "pg_both")  # references to two results, one of them with shared sets
    return session


def by_spark(session, name: str) -> dict[int, tuple[dict, list[int]]]:
    saved = session.store.get(name)
    rows = session.store.lineage_rows(session.spark, saved).collect()
    return {r[ROW]: ({c: r[c] for c in saved.columns}, sorted(r[DL])) for r in rows}


def by_arrow(session, name: str, numbers) -> dict[int, tuple[dict, list[int]]]:
    saved = session.store.get(name)
    table = result_pages.rows_at(session.store, saved, np.asarray(numbers, dtype=np.int64))
    records = table.select([ROW, *saved.columns]).to_pylist()
    lineages = result_pages.whole_lineages(session.store, saved, table)
    assert [r[ROW] for r in records] == sorted(numbers)
    return {r.pop(ROW): (r, ids.tolist()) for r, ids in zip(records, lineages)}


@pytest.mark.parametrize("name", ["pg_shared", "pg_grouped", "pg_downstream", "pg_both"])
def test_every_row_and_its_whole_dl_as_spark_reads_them(pages, name):
    saved = pages.store.get(name)
    assert result_pages.readable_without_spark(saved)
    expected = by_spark(pages, name)
    assert by_arrow(pages, name, range(saved.rows)) == expected
    middle = list(range(3, min(saved.rows, 40)))
    assert by_arrow(pages, name, middle) == {n: expected[n] for n in middle}


def test_the_saves_cover_what_the_reader_resolves(pages):
    shared, grouped, both = (pages.store.get(n) for n in ("pg_shared", "pg_grouped", "pg_both"))
    assert shared.shared and not shared.references
    assert len(grouped.positions) > 1  # rows in several partitions: _row is not _pos
    assert set(both.references) == {"pg_shared", "pg_grouped"}


def test_a_result_saved_before_row_positions(pages):
    expected = by_spark(pages, "pg_grouped")
    with stored_before_positions(pages, "pg_grouped"):
        old = pages.store.get("pg_grouped")
        assert old.positions is None
        assert by_arrow(pages, "pg_grouped", range(old.rows)) == expected


def test_columns_spark_shows_otherwise_are_left_to_spark(pages):
    saved = pages.store.get("pg_grouped")
    assert not result_pages.readable_without_spark(replace(saved, schema={**saved.schema, "at": "timestamp"}))
    assert not result_pages.readable_without_spark(replace(saved, schema={**saved.schema, "m": "map<string,int>"}))


@pytest.mark.parametrize("source", ["orders WHERE o_custkey < 30", "supplier WHERE s_nationkey = 7",
                                    "nation WHERE n_name = 'GERMANY'", "orders WHERE o_orderkey < 0"])
def test_stored_impact_from_the_files_as_from_spark(pages, source):
    with pytest.warns(UserWarning) if "< 0" in source else nullcontext():
        by_files = impact(pages, source, from_files=True)
    assert by_files and all(from_files(answer) for answer in by_files.values())
    for indexed in (False, True):
        if indexed:  # the forward index (id -> _row) found by each result's own ids and row names
            for name in ("pg_grouped", "pg_both", "pg_shared"):
                if not pages.store.get(name).index:
                    pages.store.build_index(name, pages.spark)
        for use_index in (True, False):
            with pytest.warns(UserWarning) if "< 0" in source else nullcontext():
                spark = impact(pages, source, use_index=use_index)
                files = impact(pages, source, use_index=use_index, from_files=True)
            expected = {name: first_rows(frame, None) for name, frame in spark.items()}
            assert {name: first_rows(table, None) for name, table in files.items()} == expected
    if "< 0" not in source:
        assert any(expected.values()), "the source reaches some saved rows"


EVALUATED = ["orders WHERE o_orderkey = 1", "orders WHERE o_custkey IN (1, 2, 3) AND NOT o_orderkey BETWEEN 10 AND 100",
             "customer WHERE c_custkey < 30 OR 7 = c_nationkey", "nation WHERE n_name = 'GERMANY'",
             "nation WHERE NOT n_name IN ('GERMANY', 'FRANCE')", "orders WHERE _dl_id <= 281474976710660",
             "orders WHERE o_orderkey >= -5 AND o_shippriority <> 1",
             # NULLs: NOT IN, NOT of OR, NOT BETWEEN over NULL are NULL (the row is not bad)
             "nulls WHERE NOT k IN (1, 5)", "nulls WHERE NOT (k = 1 OR s = 'b')", "nulls WHERE k IS NULL",
             "nulls WHERE NOT k BETWEEN 0 AND 1", "nulls WHERE k <> 1 OR s IS NOT NULL", "nulls WHERE s != 'a'"]
LEFT_TO_SPARK = ["orders WHERE o_orderdate = DATE '1995-01-01'", "orders WHERE o_orderkey = 1.5",
                 "orders WHERE o_orderkey = '1'", "customer WHERE c_custkey IN (SELECT o_custkey FROM orders)",
                 "orders WHERE o_orderkey + 1 = 2", "nation WHERE n_name < 'B'",
                 "orders WHERE o_shippriority = 3000000000",
                 "nulls WHERE k IN (1, NULL)", "orders WHERE o_totalprice > 100"]


@pytest.fixture(scope="module")
def with_nulls(pages, tmp_path_factory):
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path_factory.mktemp("nulls") / "nulls.parquet"
    pq.write_table(pa.table({"k": pa.array([1, 2, None, None, 7], pa.int64()),
                             "s": pa.array(["a", None, "b", None, "c"])}), path)
    pages.register("nulls", path, order_by=["k", "s"])
    return pages


@pytest.mark.parametrize("source", EVALUATED)
def test_bad_ids_from_the_files_as_from_spark(with_nulls, source):
    bad = parse_source(source, with_nulls.catalog)
    found = files.bad_ids(with_nulls.catalog, bad)
    assert found is not None, "evaluated by pyarrow"
    assert found.tolist() == collect_bad_ids(with_nulls, bad).tolist()


@pytest.mark.parametrize("source", LEFT_TO_SPARK)
def test_other_predicates_are_left_to_spark(with_nulls, source):
    assert files.bad_ids(with_nulls.catalog, parse_source(source, with_nulls.catalog)) is None


@pytest.mark.parametrize("name", ["pg_shared", "pg_grouped", "pg_both"])
def test_explain_from_the_files_as_from_spark(pages, name):
    by_files, by_spark = explain(pages, name, 0, from_files=True), explain(pages, name, 0)
    assert by_files.ids == by_spark.ids and list(by_files) == list(by_spark)
    assert all(from_files(table) for table in by_files.values())
    for table, frame in by_spark.items():
        assert first_rows(by_files[table], None) == first_rows(frame, None)
        assert by_files[table].column_names == frame.columns


@pytest.fixture(scope="module")
def in_place(pages, tmp_path_factory):
    """A table registered in place from three files of several row groups each (with NULLs)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    directory = tmp_path_factory.mktemp("in-place") / "events"
    directory.mkdir()
    for part in range(3):
        keys = [None if k % 11 == 0 else k for k in range(part * 40, part * 40 + 40)]
        pq.write_table(pa.table({"k": pa.array(keys, pa.int64()), "s": [f"s{k % 5}" for k in range(40)],
                                 "x": [float(k) / 3 for k in range(40)]}),
                       directory / f"part-{part}.parquet", row_group_size=7)
    pages.register("events", directory)
    assert pages.catalog.entry("events").files, "registered in place"
    return pages


@pytest.mark.parametrize("source", ["events WHERE k < 10", "events WHERE s = 's3' AND NOT k IN (3, 53)",
                                    "events WHERE k IS NULL OR k BETWEEN 70 AND 90", "events WHERE k = 1000"])
def test_bad_ids_of_a_table_in_place_by_position_as_from_spark(in_place, source):
    bad = parse_source(source, in_place.catalog)
    found = files.bad_ids(in_place.catalog, bad)
    assert found is not None, "evaluated by pyarrow over the files in place"
    assert found.tolist() == collect_bad_ids(in_place, bad).tolist()


def test_base_rows_of_a_table_in_place_by_position_as_from_spark(in_place):
    ids = collect_bad_ids(in_place, parse_source("events WHERE k % 9 = 1 OR k IS NULL", in_place.catalog))
    assert len(ids) > 10
    picked = np.asarray([*ids[::3], *ids[-2:]], dtype=np.int64)
    table = files.base_rows(in_place.catalog, "events", None, picked)
    rows = table_rows(in_place.spark, in_place.catalog, "events")
    spark = rows.where(rows["_dl_id"].isin([int(i) for i in picked])).orderBy("_dl_id")
    assert table.column_names == ["_dl_id", "k", "s", "x"]
    assert table.to_pylist() == [r.asDict() for r in spark.collect()]
    assert files.base_rows(in_place.catalog, "events", None, np.array([], np.int64)).num_rows == 0


def test_impact_and_explain_over_a_table_in_place_start_no_jvm(in_place):
    """As over copied tables: the command line answers from the files, with no Java to start."""
    in_place.save(in_place.sql("select s, count(*) as n, max(x) as top from events group by s"), "ev_by_s")
    env = {**os.environ, "JAVA_HOME": "/nonexistent/no-jvm-for-this-test", "SPARK_REMOTE": "",
           "DLTRACE_SERVER": "off"}
    catalog = str(in_place.catalog.directory)
    for args in (["impact", "--source", "events WHERE k = 3"], ["impact", "--source", "events WHERE k = 3",
                                                                   "--result", "ev_by_s"],
                 ["explain", "--result", "ev_by_s", "--row", "0"]):
        done = subprocess.run([sys.executable, "-m", "dltrace", *args, "--catalog", catalog], capture_output=True,
                              text=True, env=env, timeout=300)
        assert done.returncode == 0 and done.stderr == "", done.stderr
        assert "s3" in done.stdout or "explain" in args[0], done.stdout
