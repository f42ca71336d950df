"""Registration without copying (issue 15 item 1): Parquet registered in place, ids computed
from each file's first row and ``_metadata.row_index`` (dltrace/table_data.py)."""

from __future__ import annotations

import os
from pathlib import Path

import duckdb
import pyarrow.parquet as pq
import pytest

from dltrace import LineageSession
from dltrace.cli import main
from dltrace.commands.tables import drop_table
from dltrace.datasets import REGISTRATION, TABLES, generate, table_paths
from dltrace.errors import SourceChanged
from dltrace.ids import make_id
from dltrace.table_data import duckdb_rows_sql
from tests.oracle import DuckOracle, check_completeness, check_exact_lineage, lineage_bag
from tpch.queries import load

ROOT = Path(__file__).resolve().parent.parent
QUERIES = ["q1", "q3", "q10", "q18", "s1"]


def register_all(session: LineageSession, copy: bool) -> LineageSession:
    paths = table_paths(generate(0.01, ROOT / "data"))
    for table in TABLES:
        session.register(table, paths[table], key=list(REGISTRATION[table].key), copy=copy)
    return session


@pytest.fixture(scope="module")
def in_place(spark, tmp_path_factory) -> LineageSession:
    return register_all(LineageSession(tmp_path_factory.mktemp("in-place") / "catalog", spark=spark), copy=False)


@pytest.fixture(scope="module")
def copied(spark, tmp_path_factory) -> LineageSession:
    return register_all(LineageSession(tmp_path_factory.mktemp("copied") / "catalog", spark=spark), copy=True)


def test_nothing_is_copied_and_the_files_are_recorded(in_place, copied):
    for table in TABLES:
        entry = in_place.catalog.entry(table)
        assert entry.files and not (in_place.catalog.directory / entry.path).exists()
        assert [f["path"] for f in entry.files] == [str(table_paths(generate(0.01, ROOT / "data"))[table].resolve())]
        assert entry.rows == entry.files[0]["rows"] == pq.ParquetFile(entry.files[0]["path"]).metadata.num_rows
        assert copied.catalog.entry(table).files is None
    assert not (in_place.catalog.directory / "tables").exists() or not any(
        (in_place.catalog.directory / "tables").iterdir()
    )


@pytest.mark.parametrize("table", ["nation", "orders", "lineitem"])
def test_ids_are_dense_and_equal_to_the_copied_ids(in_place, copied, table):
    key = ", ".join(REGISTRATION[table].key)
    mine = in_place.run(f"SELECT {key}, _dl_id FROM {table}").collect()
    theirs = copied.run(f"SELECT {key}, _dl_id FROM {table}").collect()
    assert sorted(mine) == sorted(theirs)
    code, rows = in_place.catalog.entry(table).code, in_place.catalog.entry(table).rows
    assert sorted(r._dl_id for r in mine) == list(range(make_id(code, 0), make_id(code, rows)))


@pytest.mark.parametrize("name", QUERIES)
def test_lineage_equals_the_copied_tables_lineage(in_place, copied, name):
    query = load(name)
    assert lineage_bag(in_place.sql(query).collect()) == lineage_bag(copied.sql(query).collect())


@pytest.fixture(scope="module")
def oracle(in_place) -> DuckOracle:
    return DuckOracle(in_place)


@pytest.mark.parametrize("name", ["q3", "q10", "q18"])
def test_completeness_oracle_on_in_place_tables(in_place, oracle, name):
    query = load(name)
    tree = in_place.sql(query, tag_instances=True).collect()
    assert tree
    check_completeness(oracle, query, tree, tree=True, most=4, instances=True)


def test_exactness_oracle_on_in_place_tables(in_place, oracle):
    check_exact_lineage(oracle, in_place, load("s1"), in_place.sql(load("s1")).collect())


def test_duckdb_joins_ids_back_to_rows(in_place, copied):
    catalog = in_place.catalog
    mine = duckdb.sql(f"SELECT o_orderkey, _dl_id FROM ({duckdb_rows_sql(catalog, 'orders')})").fetchall()
    theirs = copied.run("SELECT o_orderkey, _dl_id FROM orders").collect()
    assert sorted(mine) == sorted(map(tuple, theirs))


def test_save_impact_explain_and_scripts_on_in_place_tables(in_place, copied):
    query = load("q3")
    for session in (in_place, copied):
        session.save(session.sql(query), "q3")
    first = in_place.result("q3").orderBy("_row").first()
    assert first.DL == copied.result("q3").orderBy("_row").first().DL
    explained = in_place.explain("q3", first._row)
    assert sorted(r._dl_id for t in explained.values() for r in t.collect()) == sorted(first.DL)
    orderkey = explained["orders"].first().o_orderkey
    source = f"orders WHERE o_orderkey = {orderkey}"
    hit = in_place.impact(source, result="q3").collect()
    assert [r._row for r in hit] == [r._row for r in copied.impact(source, result="q3").collect()]
    assert first._row in {r._row for r in hit}
    assert in_place.impact(source, query=query).count() == len(hit)
    # the relation views and the spark-sql script read the same rows with the same ids
    in_place.lineage_views("q3")
    assert in_place.run(f"SELECT count(*) FROM lineage_q3_orders WHERE _row = {first._row}").first()[0] == 1
    script = in_place.script(query)
    assert "_metadata.row_index" in script
    body = "\n".join(line for line in script.splitlines() if not line.startswith("--"))
    *views, final = [statement for statement in body.split(";\n") if statement.strip()]
    for view in views:
        in_place.spark.sql(view)
    assert lineage_bag(in_place.spark.sql(final.strip().rstrip(";")).collect()) == lineage_bag(
        in_place.result("q3").drop("_row").collect()
    )


def split_nation(directory: Path, pieces: int = 3) -> list[Path]:
    """Nation in ``pieces`` Parquet files in ``directory``, sorted by name: a, b, c."""
    table = pq.read_table(table_paths(generate(0.01, ROOT / "data"))["nation"])
    directory.mkdir(parents=True, exist_ok=True)
    files, step = [], -(-table.num_rows // pieces)
    for i in range(pieces):
        files.append(directory / f"{'abc'[i]}.parquet")
        pq.write_table(table.slice(i * step, step), files[-1])
    (directory / "_SUCCESS").write_text("")
    return files


def test_a_directory_and_a_glob_get_dense_ids_across_files(spark, tmp_path):
    files = split_nation(tmp_path / "nation")
    session = LineageSession(tmp_path / "catalog", spark=spark)
    for name, path in (("by_dir", tmp_path / "nation"), ("by_glob", tmp_path / "nation" / "*.parquet")):
        entry = session.register(name, path)
        assert [f["path"] for f in entry.files] == [str(f) for f in files]
        assert [f["first_row"] for f in entry.files] == [0, 9, 18] and entry.rows == 25
        rows = session.run(f"SELECT n_nationkey, _dl_id FROM {name}").collect()
        # the files in path order, each in its own row order: nation's keys are 0..24 in order
        assert sorted((r._dl_id, r.n_nationkey) for r in rows) == [(make_id(entry.code, k), k) for k in range(25)]
        db_rows = duckdb.sql(f"SELECT n_nationkey, _dl_id FROM ({duckdb_rows_sql(session.catalog, name)})").fetchall()
        assert sorted(db_rows) == sorted(map(tuple, rows))
    assert session.sql("SELECT count(*) FROM by_dir JOIN by_glob USING (n_nationkey)").first()[0] == 25


def test_a_changed_file_stops_queries_over_its_table_in_one_line(spark, tmp_path, capsys):
    files = split_nation(tmp_path / "nation")
    catalog = tmp_path / "catalog"
    session = LineageSession(catalog, spark=spark)
    first = session.register("nation", tmp_path / "nation")
    session.register("region", table_paths(generate(0.01, ROOT / "data"))["region"])
    assert session.sql("SELECT count(*) FROM nation").first()[0] == 25
    stat = files[1].stat()
    os.utime(files[1], ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    with pytest.raises(SourceChanged, match=r"its file .*/b\.parquet changed since: register it again"):
        session.sql("SELECT count(*) FROM nation").collect()
    assert session.sql("SELECT count(*) FROM region").first()[0] == 5  # other tables still answer
    code = main(["sql", "SELECT count(*) FROM nation", "--catalog", str(catalog)])
    err = capsys.readouterr().err
    assert code == 1 and len(err.strip().splitlines()) == 1 and "b.parquet changed since" in err
    # registering again: a new data version; the unchanged files keep their ids, the changed
    # file's rows get new ones after every id given (issue 64: a folder that grows)
    changed = next(record for record in first.files if record["path"].endswith("b.parquet"))
    kept = [make_id(first.code, r) for record in first.files if record is not changed
            for r in range(record["first_row"], record["first_row"] + record["rows"])]
    second = session.register("nation", tmp_path / "nation")
    assert second.version == 2 and second.changes == {"unchanged": 25 - changed["rows"], "new": changed["rows"],
                                                      "removed": changed["rows"]}
    ids = sorted(r._dl_id for r in session.run("SELECT _dl_id FROM nation").collect())
    assert ids == sorted(kept + list(range(make_id(first.code, 25), make_id(first.code, 25 + changed["rows"]))))
    # a file added, and a file gone
    pq.write_table(pq.read_table(files[0]), tmp_path / "nation" / "d.parquet")
    with pytest.raises(SourceChanged, match=r"d\.parquet was added"):
        session.sql("SELECT count(*) FROM nation").collect()
    (tmp_path / "nation" / "d.parquet").unlink()
    files[2].unlink()
    with pytest.raises(SourceChanged, match=r"c\.parquet is gone"):
        session.sql("SELECT count(*) FROM nation").collect()


def test_order_by_and_copy_still_copy(spark, tmp_path):
    session = LineageSession(tmp_path / "catalog", spark=spark)
    path = table_paths(generate(0.01, ROOT / "data"))["nation"]
    ordered = session.register("ordered", path, order_by=["n_name"])
    assert ordered.files is None and (session.catalog.directory / ordered.path).exists()
    first = session.run("SELECT n_name FROM ordered ORDER BY _dl_id").first()
    assert first.n_name == "ALGERIA"
    assert session.register("kept", path, copy=True).files is None
    assert session.register("kept", path, copy=True).version == 1  # unchanged: nothing to do
    assert session.register("light", path).version == session.register("light", path).version == 1
    drop_table(session.catalog, "light")  # the source files are the user's: never deleted
    assert path.exists() and "light" not in session.catalog.tables
