"""The lineage explorer's JSON API (dltrace/ui) without a browser: every endpoint, on the demo's
two-step pipeline over TPC-H SF 0.01, answers what the Python API answers (the same rows, DLs,
impacts and summaries); bad input is one line of JSON with a 4xx status; the catalog is
byte-identical after every endpoint ran; a save made between two requests shows in the second."""

from __future__ import annotations

import asyncio
import csv
import hashlib
import io
import json
import threading
import time
from collections import Counter
from dataclasses import asdict

import pytest

pytest.importorskip("starlette", reason="dltrace[ui] is not installed (pip install 'dltrace[ui]')")
pytest.importorskip("httpx", reason="Starlette's TestClient needs httpx (pip install httpx)")

from starlette.testclient import TestClient

from dltrace.demo import DEMO_BAD_ROW
from dltrace.ids import ROW_BITS
from dltrace.ui.app import create_app
from tests.conftest import demo_copy


@pytest.fixture(scope="module")
def demo(tpch, tmp_path_factory):
    """The demo catalog: TPC-H SF 0.01 and the saved steps custrev and natrev."""
    return demo_copy(tpch, tmp_path_factory, "ui-demo")


@pytest.fixture(scope="module")
def client(demo):
    app = create_app(demo.catalog.directory, spark=demo.spark)
    with TestClient(app, base_url="http://127.0.0.1") as client:
        yield client


def get(client, path: str, **params) -> dict:
    response = client.get(path, params=params)
    assert response.status_code == 200, response.text
    return response.json()


def counts(ids) -> dict[str, int]:
    return dict(Counter(int(i) >> ROW_BITS for i in ids))


def test_pipeline_has_tables_results_and_their_inputs(client, demo):
    graph = get(client, "/api/pipeline")
    nodes = {n["id"]: n for n in graph["nodes"]}
    assert {n for n, node in nodes.items() if node["kind"] == "table"} == set(demo.catalog.tables)
    saved = demo.saved_results()
    assert {n for n, node in nodes.items() if node["kind"] == "result"} == set(saved) == {"custrev", "natrev"}
    for name, result in saved.items():
        assert nodes[name]["rows"] == result.rows and nodes[name]["stamp"] == result.stamp
        assert nodes[name]["stale"] is None
    assert nodes["orders"]["rows"] == demo.catalog.tables["orders"].rows and nodes["orders"]["version"] == 1
    edges = {(e["from"], e["to"]) for e in graph["edges"]}
    assert {("customer", "custrev"), ("orders", "custrev"), ("custrev", "natrev"), ("nation", "natrev")} <= edges
    assert graph["stale"] == demo.stale_results() == {}


@pytest.mark.parametrize("name, offset, limit", [("custrev", 0, 1000), ("custrev", 1000, 100), ("natrev", 0, 100)])
def test_result_rows_and_their_dl_counts_are_the_python_apis(client, demo, name, offset, limit):
    page = get(client, f"/api/results/{name}", offset=offset, limit=limit)
    expected = [r.asDict() for r in demo.result(name).where(f"_row >= {offset} and _row < {offset + limit}").collect()]
    assert page["total"] == demo.saved_results()[name].rows and page["columns"] == demo.saved_results()[name].columns
    assert [r["_row"] for r in page["rows"]] == [r["_row"] for r in expected]
    codes = {entry.code: table for table, entry in demo.catalog.tables.items()}
    for got, want in zip(page["rows"], expected):
        assert got["dl"] == {codes[code]: n for code, n in sorted(counts(want["DL"]).items())}
        assert got["values"] == {c: (float(v) if hasattr(v, "as_tuple") else v)
                                 for c, v in want.items() if c not in ("_row", "DL")}


FILTERS = [("c_nationkey = 4 AND c_custkey < 200", "revenue", True),  # pyarrow evaluates it
           ("c_nationkey = 7", "", False), ("revenue > 3000000", "c_custkey", True),  # a decimal: Spark's
           ("c_nationkey IN (1, 2) OR _row < 3", "c_nationkey", False)]


@pytest.mark.parametrize("text, sort, descending", FILTERS)
def test_a_result_page_filtered_and_sorted_is_sparks_where_and_order_by(client, demo, text, sort, descending):
    expected = [r.asDict() for r in ordered(demo.result("custrev").where(text), sort, descending, "_row").collect()]
    first = get(client, "/api/results/custrev", filter=text, sort=sort, desc=int(descending), limit=5)
    second = get(client, "/api/results/custrev", filter=text, sort=sort, desc=int(descending), limit=5, offset=5)
    assert first["matched"] == second["matched"] == len(expected) > 5 and first["total"] == 1000
    assert [r["_row"] for r in first["rows"] + second["rows"]] == [r["_row"] for r in expected[:10]]
    assert [r["values"]["c_custkey"] for r in first["rows"]] == [r["c_custkey"] for r in expected[:5]]


def ordered(frame, sort: str, descending: bool, tie: str):
    """``frame`` as Spark's ``ORDER BY sort [DESC], tie`` orders it (NULLs first ascending)."""
    from pyspark.sql import functions as F

    if not sort:
        return frame.orderBy(tie)
    return frame.orderBy(F.col(sort).desc_nulls_last() if descending else F.col(sort).asc_nulls_first(), tie)


@pytest.mark.parametrize("table, text, sort, descending", [
    ("nation", "n_name = GERMANY", "", False), ("orders", "o_orderpriority = 1-URGENT", "o_totalprice", True),
    ("orders", "o_totalprice > 400000", "o_orderdate", False), ("customer", "", "c_acctbal", True)])
def test_a_table_page_filtered_and_sorted_is_sparks(client, demo, table, text, sort, descending):
    """``column = value`` needs no quotes; other predicates are SQL; a table's rows without a sort
    are in ``_dl_id`` order."""
    where = {"n_name = GERMANY": "n_name = 'GERMANY'", "o_orderpriority = 1-URGENT": "o_orderpriority = '1-URGENT'"}
    from dltrace.table_data import table_rows

    frame = table_rows(demo.spark, demo.catalog, table)
    if text:
        frame = frame.where(where.get(text, text))
    expected = [r.asDict() for r in ordered(frame, sort, descending, "_dl_id").limit(20).collect()]
    page = get(client, f"/api/tables/{table}", filter=text, sort=sort, desc=int(descending), limit=20)
    assert page["matched"] == frame.count() and page["total"] == demo.catalog.tables[table].rows
    assert page["columns"][0] == "_dl_id" and page["key"] == demo.catalog.tables[table].key
    assert [int(r["_dl_id"]) for r in page["rows"]] == [r["_dl_id"] for r in expected]


def test_filters_pyarrow_evaluates_start_no_spark(demo, monkeypatch):
    """A filter of comparisons with literals, a sort and a table's page are read by pyarrow alone."""
    import dltrace.spark
    from dltrace.session import LineageSession

    monkeypatch.setattr(LineageSession, "spark", property(lambda self: pytest.fail("Spark was asked for")))
    monkeypatch.setattr(dltrace.spark, "get_spark", lambda *a, **k: pytest.fail("Spark was started"))
    with TestClient(create_app(demo.catalog.directory), base_url="http://127.0.0.1") as fresh:
        assert get(fresh, "/api/results/custrev", filter="c_custkey = 4")["rows"][0]["values"]["c_custkey"] == 4
        assert get(fresh, "/api/results/natrev", sort="n_name", desc=1)["matched"] == 25
        assert get(fresh, "/api/tables/nation", filter="n_regionkey = 3", sort="n_name")["matched"] == 5


def test_why_gives_explains_rows_and_the_results_it_went_through(client, demo):
    answer = get(client, "/api/results/natrev/0/why", limit=50)
    explained = demo.explain("natrev", 0)
    assert answer["ids"] == explained.ids and answer["through"] == ["custrev"]
    for table, frame in explained.items():
        rows = [r.asDict() for r in frame.collect()]
        assert answer["tables"][table]["total"] == len(rows) == explained.ids[table]
        assert [r["_dl_id"] for r in answer["tables"][table]["rows"]] == [r["_dl_id"] for r in rows[:50]]
    paged = get(client, "/api/results/natrev/0/sources/orders", offset=50, limit=20)
    orders = [r["_dl_id"] for r in explained["orders"].collect()]
    assert [r["_dl_id"] for r in paged["rows"]] == orders[50:70] and paged["total"] == len(orders)


def test_summary_is_summarize(client, demo):
    answer = get(client, "/api/results/custrev/3/summary", patterns=2)
    assert answer == json.loads(json.dumps(asdict(demo.summarize("custrev", 3, 2))))


def test_reasons_are_none_without_reason_capable_udfs(client):
    assert get(client, "/api/results/natrev/0/reasons") == {"reasons": []}


def test_granules_are_the_rows_lineage_on_those_values(client, demo):
    """The row's granules under LINEAGE ON (o_orderpriority): the product's own, from the
    saved query run again with that clause, decoded."""
    answer = get(client, "/api/results/custrev/0/granules", on="o_orderpriority")
    shown = {g["values"]["o_orderpriority"] for g in answer["tables"]["orders"]}
    assert list(answer["tables"]) == ["orders"]
    key = demo.result("custrev").where("_row = 0").first()["c_custkey"]
    query = demo.saved_results()["custrev"].query
    row = demo.sql(query, lineage_on=["o_orderpriority"]).where(f"c_custkey = {key}").first()
    decoded = demo.decode_granules(list(row.DL), query, ["o_orderpriority"])
    assert shown == {d["o_orderpriority"] for d in decoded}
    assert sum(g["rows"] for g in answer["tables"]["orders"]) == demo.explain("custrev", 0).ids["orders"]


def affected(frame) -> list[tuple]:
    return sorted((r["_row"], tuple(sorted(r["DL"]))) for r in frame.collect())


def test_impact_is_the_python_apis_in_every_result_and_in_one(client, demo):
    answer = get(client, "/api/impact", source=DEMO_BAD_ROW)
    expected = demo.impact(DEMO_BAD_ROW)
    assert set(answer["results"]) == set(expected) == {"custrev", "natrev"}
    for name, frame in expected.items():
        got = answer["results"][name]
        assert got["count"] == frame.count() > 0
        assert sorted((a["_row"], tuple(a["DL"])) for a in got["rows"]) == affected(frame)
    one = get(client, "/api/impact", source=DEMO_BAD_ROW, result="natrev")
    assert list(one["results"]) == ["natrev"] and one["results"]["natrev"]["count"] == expected["natrev"].count()


def test_impact_that_matches_nothing_says_so(client):
    answer = get(client, "/api/impact", source="orders WHERE o_orderkey = -5")
    assert all(r["count"] == 0 for r in answer["results"].values())
    assert any("no rows match" in w for w in answer["warnings"])


def test_impact_exports_every_affected_row_as_csv_and_json(client, demo):
    expected = demo.impact(DEMO_BAD_ROW)
    total = sum(frame.count() for frame in expected.values())
    lines = client.get("/api/impact/export", params={"source": DEMO_BAD_ROW, "format": "json"})
    assert lines.status_code == 200 and "attachment" in lines.headers["content-disposition"]
    records = [json.loads(line) for line in lines.text.splitlines()]
    assert len(records) == total
    assert sorted((r["result"], r["_row"], tuple(r["DL"])) for r in records) == sorted(
        (name, row, dl) for name, frame in expected.items() for row, dl in affected(frame))
    table = list(csv.DictReader(io.StringIO(client.get("/api/impact/export", params={
        "source": DEMO_BAD_ROW, "format": "csv"}).text)))
    assert len(table) == total and {r["result"] for r in table} == {"custrev", "natrev"}
    assert table[0]["DL"] and "n_name" in table[0] and "c_custkey" in table[0]


def test_pages_why_and_impact_are_read_from_the_files_without_spark(demo, monkeypatch):
    """Pages, why, source rows and impacts the catalog's files answer use no Spark (a session's
    ``spark`` is never asked for, nothing starts Spark) and give the Python API's answers; an
    impact whose predicate only Spark evaluates is asked again with Spark and gives the Python
    API's answer too."""
    import dltrace.spark
    from dltrace.session import LineageSession

    expected = {name: affected(frame) for name, frame in demo.impact(DEMO_BAD_ROW).items()}
    explained = demo.explain("natrev", 0)
    shown = {table: [r["_dl_id"] for r in frame.collect()] for table, frame in explained.items()}
    subquery = "orders WHERE o_custkey IN (SELECT c_custkey FROM customer WHERE c_custkey < 4)"
    with_subquery = affected(demo.impact(subquery, result="custrev"))
    app = create_app(demo.catalog.directory, spark=demo.spark)
    asked = []
    spark = LineageSession.spark
    monkeypatch.setattr(LineageSession, "spark", property(lambda self: asked.append(1) or spark.fget(self)))
    monkeypatch.setattr(dltrace.spark, "get_spark", lambda *a, **k: pytest.fail("Spark was started"))
    with TestClient(app, base_url="http://127.0.0.1") as client:
        assert get(client, "/api/results/natrev", limit=5)["total"] == 25
        why = get(client, "/api/results/natrev/0/why", limit=50)
        assert why["ids"] == explained.ids
        for table, frame in explained.items():
            assert why["tables"][table]["columns"] == frame.columns
            assert [r["_dl_id"] for r in why["tables"][table]["rows"]] == shown[table][:50]
        paged = get(client, "/api/results/natrev/0/sources/orders", offset=50, limit=20)
        assert [r["_dl_id"] for r in paged["rows"]] == shown["orders"][50:70]
        found = get(client, "/api/impact", source=DEMO_BAD_ROW)["results"]
        assert {name: [(a["_row"], tuple(a["DL"])) for a in found[name]["rows"]] for name in found} == expected
        lines = client.get("/api/impact/export", params={"source": DEMO_BAD_ROW, "format": "json"}).text.splitlines()
        assert len(lines) == sum(map(len, expected.values()))
        assert asked == []
        found = get(client, "/api/impact", source=subquery, result="custrev")["results"]["custrev"]
        assert [(a["_row"], tuple(a["DL"])) for a in found["rows"]] == with_subquery
        assert found["count"] > 0 and asked


def test_impacts_side_by_side_each_keep_their_warnings(client):
    """Impacts read from the files run in several threads at once; each answer carries its own
    warning (Python's warning capture is process-wide: they are recorded one at a time)."""
    from concurrent.futures import ThreadPoolExecutor

    sources = [f"orders WHERE o_orderkey = {-k}" for k in range(1, 9)]
    with ThreadPoolExecutor(4) as pool:
        answers = list(pool.map(lambda source: get(client, "/api/impact", source=source), sources))
    for source, answer in zip(sources, answers):
        assert [w for w in answer["warnings"] if "no rows match" in w] == [
            f"no rows match {source}: nothing is affected"]


BAD = [
    ("/api/results/nosuch", {}, 404, "no saved result 'nosuch'"),
    ("/api/results/custrev", {"offset": "-1"}, 400, "offset must be 0 or more"),
    ("/api/results/custrev", {"limit": "lots"}, 400, "limit must be a whole number"),
    ("/api/results/custrev", {"limit": "100000"}, 400, "limit must be between"),
    ("/api/results/custrev/x/why", {}, 400, "the row must be a _row number"),
    ("/api/results/custrev/99999/why", {}, 400, "99999"),
    ("/api/results/custrev/-1/summary", {}, 400, "-1"),
    ("/api/results/custrev/0/summary", {"patterns": "0"}, 400, "patterns must be between"),
    ("/api/results/custrev/0/sources/lineitem", {}, 400, "no source rows in table 'lineitem'"),
    ("/api/results/custrev/0/granules", {"on": ""}, 400, "LINEAGE ON needs"),
    ("/api/results/custrev/0/granules", {"on": "nosuchcolumn"}, 400, "no source table"),
    ("/api/impact", {"source": ""}, 400, "give a source"),
    ("/api/impact", {"source": "orders WHERE o_orderkey = = 1"}, 400, "--source"),
    ("/api/impact", {"source": "nosuch WHERE x = 1"}, 400, "nosuch"),
    ("/api/impact", {"source": "orders WHERE nosuch = 1"}, 400, "no column nosuch"),
    ("/api/impact", {"source": DEMO_BAD_ROW, "result": "nosuch"}, 404, "no saved result"),
    ("/api/impact/export", {"source": DEMO_BAD_ROW, "format": "xml"}, 400, "csv or json"),
    ("/api/nosuch", {}, 404, "no such page"),
    ("/api/results/custrev", {"filter": "c_custkey = = 1"}, 400, "filter: the predicate does not parse"),
    ("/api/results/custrev", {"filter": "nosuch > 1"}, 400, "filter: custrev has no column nosuch"),
    ("/api/results/custrev", {"filter": "count(*) > 1"}, 400, "without aggregate"),
    ("/api/results/custrev", {"filter": "c_custkey IN (SELECT 1)"}, 400, "without subqueries"),
    ("/api/results/custrev", {"sort": "nosuch"}, 400, "sort: custrev has no column nosuch"),
    ("/api/tables/orders", {"filter": "o_orderkey = = 1"}, 400, "filter: the predicate does not parse"),
    ("/api/tables/nosuch", {}, 400, "table 'nosuch' is not registered"),
]


@pytest.mark.parametrize("path, params, status, says", BAD, ids=[f"{p}{q}" for p, q, _, _ in BAD])
def test_bad_input_is_one_line_of_json(client, path, params, status, says):
    response = client.get(path, params=params)
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert says in error and "\n" not in error and "Traceback" not in error and len(error) < 600


def test_nothing_but_get_is_served(client):
    for method in ("post", "put", "delete"):
        response = getattr(client, method)("/api/results/custrev")
        assert response.status_code == 405 and "not allowed" in response.json()["error"]


def catalog_files(directory) -> dict[str, str]:
    root = directory.path if hasattr(directory, "path") else str(directory)
    from pathlib import Path

    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(Path(root).rglob("*")) if p.is_file()}


def test_the_explorer_never_writes_to_the_catalog(client, demo):
    before = catalog_files(demo.catalog.directory)
    assert len(before) > 10
    for path, params in [("/", {}), ("/app.js", {}), ("/api/pipeline", {}), ("/api/results/natrev", {"limit": 25}),
                         ("/api/results/custrev", {"filter": "revenue > 10", "sort": "c_nationkey"}),
                         ("/api/tables/orders", {"filter": "o_orderkey < 5", "sort": "o_totalprice"}),
                         ("/api/results/natrev/1/why", {}), ("/api/results/natrev/1/sources/customer", {"offset": 5}),
                         ("/api/results/natrev/1/summary", {}), ("/api/results/natrev/1/reasons", {}),
                         ("/api/results/natrev/1/granules", {"on": "c_mktsegment"}),
                         ("/api/impact", {"source": "customer WHERE c_custkey < 20"}),
                         ("/api/impact/export", {"source": "customer WHERE c_custkey < 20", "format": "csv"})]:
        assert client.get(path, params=params).status_code == 200, path
    for path, params, _, _ in BAD:
        client.get(path, params=params)
    assert catalog_files(demo.catalog.directory) == before


def test_a_token_is_asked_of_every_request(demo):
    app = create_app(demo.catalog.directory, spark=demo.spark, token="s3cret")
    with TestClient(app, base_url="http://10.0.0.5") as client:
        for path in ("/", "/app.js", "/api/pipeline"):
            refused = client.get(path)
            assert refused.status_code == 401 and "token" in refused.json()["error"]
        assert client.get("/api/pipeline", headers={"X-Dltrace-Token": "wrong"}).status_code == 401
        assert client.get("/api/pipeline", headers={"X-Dltrace-Token": "s3cret"}).status_code == 200
        page = client.get("/", params={"token": "s3cret"})
        assert page.status_code == 200 and "dltrace_token" in page.headers["set-cookie"]
        assert client.get("/api/pipeline").status_code == 200  # the page's cookie


def test_without_a_token_only_loopback_names_are_answered(demo):
    """A page elsewhere cannot reach the explorer through its own DNS name (rebinding)."""
    app = create_app(demo.catalog.directory, spark=demo.spark)
    with TestClient(app, base_url="http://127.0.0.1:8765") as client:
        assert client.get("/api/pipeline").status_code == 200
        assert client.get("/api/pipeline", headers={"host": "evil.example:8765"}).status_code == 400


def test_a_request_whose_client_left_has_its_spark_jobs_interrupted(client, demo):
    """``answer`` polls the client; once it is gone, the Spark tag of its work is interrupted and
    the worker thread is free again long before the job would have ended."""
    from dltrace.ui import app as ui_app

    ended = threading.Event()

    def endless(session):
        try:
            return session.spark.range(0, 10 ** 12, numPartitions=2).selectExpr("sum(id % 7)").collect()
        finally:
            ended.set()

    class Gone:
        def __init__(self):
            self.app = client.app
            self.asked = 0

        async def is_disconnected(self):
            self.asked += 1
            return self.asked > 10  # two seconds in (the job may not run yet: it is interrupted until it ends)

    started = time.monotonic()
    response = asyncio.run(ui_app.answer(Gone(), endless))
    assert response.status_code == 499
    assert ended.wait(60), "the interrupted Spark job did not end"
    assert time.monotonic() - started < 60
    assert get(client, "/api/results/natrev", limit=1)["total"] == 25  # the lock is free again


def test_a_result_saved_while_the_page_is_open_shows_in_the_next_answer_and_its_stale_readers(client, demo):
    before = {n["id"] for n in get(client, "/api/pipeline")["nodes"]}
    assert "toporders" not in before
    demo.save(demo.sql("select o_orderkey, o_totalprice from orders order by o_totalprice desc limit 3"), "toporders")
    try:
        nodes = {n["id"]: n for n in get(client, "/api/pipeline")["nodes"]}
        assert nodes["toporders"]["rows"] == 3
        page = get(client, "/api/results/toporders")
        assert [r["dl"] for r in page["rows"]] == [{"orders": 1}] * 3
        demo.create_table("topkeys", "select o_orderkey from toporders")
        demo.save(demo.sql("select o_orderkey from orders order by o_totalprice desc limit 2"), "toporders")
        assert get(client, "/api/results/toporders")["total"] == 2  # a new save, not the page kept of the old
        graph = get(client, "/api/pipeline")
        stale = demo.stale_results()
        assert graph["stale"] == stale and set(stale) == {"topkeys"} and "toporders" in stale["topkeys"]
        assert {n["id"]: n.get("stale") for n in graph["nodes"]}["topkeys"] == stale["topkeys"]
        assert {"from": "toporders", "to": "topkeys"} in graph["edges"]
        assert get(client, "/api/results/topkeys")["stale"] == stale["topkeys"]
    finally:
        for name in ("topkeys", "toporders"):
            if demo.store.exists(name):
                demo.drop_result(name)
    assert client.get("/api/results/toporders").status_code == 404


def test_why_reads_a_pages_source_rows_only_and_impacts_keep_their_bad_ids(client, demo, monkeypatch):
    """A DL of 75,000 ids: its page counts them per table, its why reads 20 source rows of each
    table, not all; an impact asked result after result finds the bad ids once."""
    from dltrace.impact import files, search

    demo.save(demo.sql("select count(*) as n from lineitem join orders on l_orderkey = o_orderkey"), "alllines")
    try:
        tables = demo.catalog.tables
        page = get(client, "/api/results/alllines")
        assert page["rows"][0]["dl"] == {t: tables[t].rows for t in sorted(("lineitem", "orders"),
                                                                           key=lambda t: tables[t].code)}
        read, found = [], []
        base_rows = files.base_rows
        monkeypatch.setattr(files, "base_rows", lambda *a: read.append(len(a[3])) or base_rows(*a))
        why = get(client, "/api/results/alllines/0/why", limit=20)
        assert why["ids"]["lineitem"] == tables["lineitem"].rows and len(why["tables"]["lineitem"]["rows"]) == 20
        assert read and max(read) <= 20
        bad_ids = search.bad_ids
        monkeypatch.setattr(search, "bad_ids", lambda *a, **k: found.append(1) or bad_ids(*a, **k))
        source = "orders WHERE o_orderkey = 7"
        one = {name: get(client, "/api/impact", source=source, result=name)["results"][name]
               for name in ("custrev", "natrev", "alllines")}
        assert found == [1]
        expected = demo.impact(source)
        assert {name: r["count"] for name, r in one.items()} == {name: f.count() for name, f in expected.items()}
    finally:
        demo.drop_result("alllines")


def test_kept_row_orders_stay_within_their_bytes(monkeypatch):
    """Row orders and bad ids are numpy arrays of 8 bytes a row: the oldest go past CACHED_BYTES."""
    import numpy as np

    from dltrace.ui import app as ui_app

    monkeypatch.setattr(ui_app, "CACHED_BYTES", 1000)
    explorer = ui_app.Explorer("/nonexistent")
    for k in range(5):
        explorer.cached_page(("order", k), lambda: np.zeros(50, dtype=np.int64))  # 400 bytes each
    assert list(explorer.pages) == [("order", 3), ("order", 4)]
