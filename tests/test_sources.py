"""Where the data already lives (issue 42): Delta tables registered from their log
(dltrace/delta.py) and tables of the Spark session's catalog (dltrace/spark_tables.py), with
real Delta tables written by ``deltalake`` and real tables saved by Spark."""

from __future__ import annotations

import json
import struct

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable, write_deltalake

from dltrace import LineageSession
from dltrace.cli import main
from dltrace.errors import BadInput, SourceChanged
from dltrace.ids import make_id
from dltrace.table_data import check_unchanged
from tests.oracle import DuckOracle, check_completeness

REVENUE = ("SELECT c_mktsegment, o_orderpriority, sum(o_totalprice) AS total FROM orders, customer "
           "WHERE o_custkey = c_custkey AND o_orderdate < DATE '1994-01-01' "
           "GROUP BY c_mktsegment, o_orderpriority ORDER BY c_mktsegment, o_orderpriority")
BIG = "SELECT o_orderkey, o_totalprice FROM orders WHERE o_totalprice > 400000 ORDER BY o_orderkey"


def source(tpch: LineageSession, table: str) -> pa.Table:
    """A TPC-H SF 0.01 table as the tpch fixture registered it (its source Parquet)."""
    return pq.read_table(tpch.catalog.entry(table).source)


def delta_orders(tpch: LineageSession, path, **options) -> pa.Table:
    """Orders written as a Delta table in two appends (versions 0 and 1): two live files."""
    orders = source(tpch, "orders")
    half = orders.num_rows // 2
    write_deltalake(path, orders.slice(0, half), **options)
    write_deltalake(path, orders.slice(half), mode="append")
    return orders


def new_session(tpch: LineageSession, tmp_path) -> LineageSession:
    session = LineageSession(tmp_path / "catalog", spark=tpch.spark)
    session.register("customer", tpch.catalog.entry("customer").source)  # in place
    return session


def count(session: LineageSession, table: str) -> int:
    return session.sql(f"select count(*) AS n from {table}").first()["n"]


def live_rows(path) -> int:
    return DeltaTable(str(path)).count()


def test_a_delta_table_is_its_live_files_in_the_logs_order(tpch, tmp_path):
    orders = delta_orders(tpch, tmp_path / "orders")
    session = new_session(tpch, tmp_path)
    entry = session.register("orders", tmp_path / "orders")
    table = DeltaTable(str(tmp_path / "orders"))
    assert entry.format == "delta" and entry.delta == {"version": 1, "pinned": False}
    assert [f["path"] for f in entry.files] == table.file_uris()
    assert [f["first_row"] for f in entry.files] == [0, orders.num_rows // 2]
    assert entry.rows == count(session, "orders") == orders.num_rows
    assert not (session.catalog.directory / entry.path).exists()  # nothing copied
    # ids are positions in those files, in that order
    second = pq.read_table(entry.files[1]["path"])
    row = session.run(f"SELECT _dl_id FROM orders WHERE o_orderkey = {second['o_orderkey'][0].as_py()}").first()
    assert row._dl_id == make_id(entry.code, orders.num_rows // 2)
    oracle = DuckOracle(session)  # DuckDB reads the same live files
    for query in (REVENUE, BIG):
        rows = session.sql(query).collect()
        assert rows and check_completeness(oracle, query, rows, tree=False, most=6)
    # the same version again: nothing to do
    assert session.register("orders", tmp_path / "orders") == session.catalog.entry("orders")


def test_a_delete_makes_what_read_the_table_stale_and_a_new_registration_counts_live_rows(tpch, tmp_path):
    orders = delta_orders(tpch, tmp_path / "orders")
    session = new_session(tpch, tmp_path)
    session.register("orders", tmp_path / "orders")
    session.save(session.sql(REVENUE), "revenue")
    assert session.stale_results() == {}
    DeltaTable(str(tmp_path / "orders")).delete("o_orderkey < 1000")
    live = live_rows(tmp_path / "orders")
    assert 0 < live < orders.num_rows
    why = session.stale_results()["revenue"]
    assert "log is at version 2 now" in why and "dltrace register orders" in why
    with pytest.raises(SourceChanged, match="registered at version 1"):
        count(session, "orders")
    entry = session.register("orders", tmp_path / "orders")
    assert entry.delta["version"] == 2 and entry.version == 2
    # the removed file is still in the directory: only the log's live files count
    assert len(list((tmp_path / "orders").glob("*.parquet"))) > len(entry.files)
    assert count(session, "orders") == entry.rows == live
    oracle = DuckOracle(session)
    rows = session.sql(REVENUE).collect()
    assert check_completeness(oracle, REVENUE, rows, tree=False, most=6)
    assert "table orders changed (v1 -> v2)" in session.stale_results()["revenue"]


def test_overwrite_and_a_pinned_version(tpch, tmp_path, capsys):
    orders = delta_orders(tpch, tmp_path / "orders")
    write_deltalake(tmp_path / "orders", orders.slice(0, 1000), mode="overwrite")
    session = new_session(tpch, tmp_path)
    catalog = str(session.catalog.directory)
    assert main(["register", "--catalog", catalog, "orders", str(tmp_path / "orders")]) == 0
    assert "Delta table at version 2: 1 live files" in capsys.readouterr().out
    assert count(LineageSession(catalog, spark=tpch.spark), "orders") == 1000
    assert main(["register", "--catalog", catalog, "first", str(tmp_path / "orders"), "--version", "0"]) == 0
    assert count(LineageSession(catalog, spark=tpch.spark), "first") == orders.num_rows // 2
    write_deltalake(tmp_path / "orders", orders.slice(1000, 10), mode="append")
    # pinned: a newer version is not a change
    check_unchanged(LineageSession(catalog, spark=tpch.spark).catalog, "first")
    with pytest.raises(SourceChanged, match="log is at version 3 now"):
        check_unchanged(LineageSession(catalog, spark=tpch.spark).catalog, "orders")
    assert main(["register", "--catalog", catalog, "late", str(tmp_path / "orders"), "--version", "9"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no such version (its newest is 3)" in err
    assert main(["register", "--catalog", catalog, "plain", tpch.catalog.entry("nation").source,
                 "--version", "1"]) == 2
    assert "--version applies to Delta tables" in capsys.readouterr().err


def inline_deletion_vector(rows: list[int]) -> tuple[str, int]:
    """``(text, size)``: a Delta inline deletion vector deleting ``rows`` (< 65536), a
    RoaringBitmapArray of one portable-format bitmap with one array container, Z85-encoded
    (the Delta protocol, "Deletion Vector Format"), and its size in bytes."""
    values = sorted(rows)
    bitmap = struct.pack("<IIHHI", 12346, 1, 0, len(values) - 1, 16) + struct.pack(f"<{len(values)}H", *values)
    data = struct.pack("<iqi", 1681511377, 1, 0) + bitmap
    size = len(data)
    data += b"\0" * (-size % 4)  # Z85 encodes 4 bytes at a time
    alphabet = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"
    words = (int.from_bytes(data[i:i + 4], "big") for i in range(0, len(data), 4))
    return "".join(alphabet[word // 85 ** k % 85] for word in words for k in range(4, -1, -1)), size


def test_deletion_vectors(tpch, tmp_path, capsys):
    """delta-rs deletes by rewriting files even where deletion vectors are enabled (traced
    exactly); a file with a deletion vector (one written into the log as Spark with Delta
    would) is refused in one line."""
    orders = source(tpch, "orders").slice(0, 2000)
    path = tmp_path / "orders"
    write_deltalake(path, orders, configuration={"delta.enableDeletionVectors": "true"})
    DeltaTable(str(path)).delete("o_orderkey < 100")
    session = new_session(tpch, tmp_path)
    session.register("orders", path)
    assert count(session, "orders") == live_rows(path)
    # a commit that marks rows 0-2 of the live file deleted, with an inline deletion vector
    add = next(json.loads(line)["add"] for line in (path / "_delta_log" / f"{1:020}.json").read_text().splitlines()
               if "add" in json.loads(line))
    encoded, size = inline_deletion_vector([0, 1, 2])
    add.update(dataChange=True, deletionVector={"storageType": "i", "pathOrInlineDv": encoded,
                                                "sizeInBytes": size, "cardinality": 3})
    remove = {"path": add["path"], "dataChange": True, "deletionTimestamp": 0, "extendedFileMetadata": False}
    (path / "_delta_log" / f"{2:020}.json").write_text(json.dumps({"remove": remove}) + "\n"
                                                       + json.dumps({"add": add}) + "\n")
    table = DeltaTable(str(path))
    assert table.version() == 2 and pa.table(table.deletion_vectors()).num_rows == 1  # delta-rs reads it
    with pytest.raises(BadInput, match="has deletion vectors"):
        session.register("orders", path)
    assert main(["register", "--catalog", str(session.catalog.directory), "dv", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "deletion vectors" in err and "deleted rows" in err


def test_without_deltalake_one_line_says_what_to_install(tpch, tmp_path, monkeypatch, capsys):
    delta_orders(tpch, tmp_path / "orders")
    monkeypatch.setitem(__import__("sys").modules, "deltalake", None)  # as if not installed
    session = new_session(tpch, tmp_path)
    assert main(["register", "--catalog", str(session.catalog.directory), "orders", str(tmp_path / "orders")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "pip install 'dltrace[delta]'" in err


def test_duckdb_reads_the_live_files(tpch, tmp_path):
    """The recorded files are the ones DuckDB's own Delta-free reading of the log gives."""
    delta_orders(tpch, tmp_path / "orders")
    DeltaTable(str(tmp_path / "orders")).delete("o_orderkey < 1000")
    session = new_session(tpch, tmp_path)
    entry = session.register("orders", tmp_path / "orders")
    files = ", ".join(f"'{f['path']}'" for f in entry.files)
    assert duckdb.sql(f"SELECT count(*) FROM read_parquet([{files}])").fetchone()[0] == live_rows(tmp_path / "orders")


@pytest.fixture
def sales(tpch, tmp_path):
    """A database of the test session's own Spark catalog, its warehouse under ``tmp_path``:
    orders saved as Parquet, customer as ORC, both managed tables (``saveAsTable``)."""
    spark = tpch.spark
    spark.sql(f"CREATE DATABASE dl_sales LOCATION '{tmp_path / 'warehouse'}'")
    try:
        spark.read.parquet(tpch.catalog.entry("orders").source).write.saveAsTable("dl_sales.orders")
        spark.read.parquet(tpch.catalog.entry("customer").source).write.format("orc").saveAsTable("dl_sales.customer")
        yield spark
    finally:
        spark.sql("DROP DATABASE dl_sales CASCADE")


def test_spark_catalog_tables_are_sources(tpch, sales, tmp_path, capsys):
    session = LineageSession(tmp_path / "catalog", spark=sales)
    catalog = str(session.catalog.directory)
    orders = session.register("orders", table="dl_sales.orders")
    assert orders.spark_table == "dl_sales.orders" and orders.files  # Parquet: in place
    assert orders.source.startswith(str(tmp_path / "warehouse")) and orders.rows == 15000
    assert main(["register", "--catalog", catalog, "customer", "--table", "dl_sales.customer"]) == 0
    session = LineageSession(catalog, spark=sales)
    customer = session.catalog.entry("customer")
    assert customer.files is None and customer.spark_table == "dl_sales.customer"  # ORC: copied
    assert count(session, "orders") == 15000 and count(session, "customer") == 1500
    oracle = DuckOracle(session)
    rows = session.sql(REVENUE).collect()
    assert rows and check_completeness(oracle, REVENUE, rows, tree=False, most=6)
    # rows appended by Spark: a changed source, registered again by the table's name
    sales.read.parquet(tpch.catalog.entry("orders").source).limit(10).write.mode("append").saveAsTable("dl_sales.orders")
    with pytest.raises(SourceChanged, match="dltrace register orders --table dl_sales.orders"):
        check_unchanged(session.catalog, "orders")
    assert session.register("orders", table="dl_sales.orders").rows == 15010
    capsys.readouterr()
    for wrong in (["--table", "dl_sales.nothing"], [], [str(tmp_path), "--table", "dl_sales.orders"]):
        assert main(["register", "--catalog", catalog, "t", *wrong]) == 2
        assert capsys.readouterr().err.count("\n") == 1


def test_a_table_without_files_is_copied(tpch, tmp_path):
    spark = tpch.spark
    spark.createDataFrame([(1, "a"), (2, "b"), (3, "c")], "k int, v string").createOrReplaceTempView("dl_small")
    session = LineageSession(tmp_path / "catalog", spark=spark)
    entry = session.register("small", table="dl_small")
    assert entry.files is None and entry.rows == 3 and entry.source == "table:dl_small"
    ids = [r._dl_id for r in session.run("SELECT _dl_id FROM small ORDER BY _dl_id").collect()]
    assert ids == [make_id(entry.code, i) for i in range(3)]


def test_a_saved_result_published_as_a_spark_view(tpch, tmp_path, capsys):
    spark = tpch.spark
    session = new_session(tpch, tmp_path)
    catalog = str(session.catalog.directory)
    spark.sql(f"CREATE DATABASE dl_pub LOCATION '{tmp_path / 'warehouse'}'")
    try:
        query = "SELECT c_mktsegment, count(*) AS n FROM customer GROUP BY c_mktsegment ORDER BY c_mktsegment"
        assert main(["sql", query, "--catalog", catalog, "--save", "segments", "--publish", "dl_pub.segments"]) == 0
        assert "published result segments as Spark view dl_pub.segments" in capsys.readouterr().err
        saved = [(r.c_mktsegment, r.n, sorted(r.DL)) for r in LineageSession(catalog, spark=spark).result("segments")
                 .collect()]
        seen = [(r.c_mktsegment, r.n, r.DL) for r in spark.sql("SELECT * FROM dl_pub.segments").collect()]
        assert seen == saved and len(seen) == 5 and sum(len(dl) for _, _, dl in seen) == 1500
        # saved again: the view reads the new save
        session = LineageSession(catalog, spark=spark)
        session.save(session.sql(query.replace("GROUP BY", "WHERE c_acctbal > 0 GROUP BY")), "segments")
        assert sum(r.n for r in spark.sql("SELECT n FROM dl_pub.segments").collect()) < 1500
        # dropped: the view is gone
        session.drop_result("segments")
        assert not spark.catalog.tableExists("dl_pub.segments")
        for wrong in (["--publish", "dl_pub.x"], ["--save", "s", "--publish", "not a name"]):
            assert main(["sql", query, "--catalog", catalog, *wrong]) == 2
            assert capsys.readouterr().err.count("\n") == 1
    finally:
        spark.sql("DROP DATABASE dl_pub CASCADE")
