"""OpenLineage events (dltrace/openlineage.py) through the real client: a file transport
configured by an ``openlineage.yml`` and an HTTP receiver on 127.0.0.1, every event validated
against OpenLineage's JSON schemas (tests/data/openlineage: the client itself does not ship
them) and dltrace's own facet's (dltrace/schemas)."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator
from referencing import Registry, Resource

from dltrace import LineageSession, openlineage
from dltrace.errors import DltraceError
from tests.conftest import tpch_copy

SCHEMAS = [*sorted((Path(__file__).parent / "data" / "openlineage").glob("*.json")),
           Path(openlineage.__file__).parent / "schemas" / "RowLineageDatasetFacet.json"]
REGISTRY = Registry().with_resources(
    (schema["$id"], Resource.from_contents(schema)) for schema in (json.loads(p.read_text()) for p in SCHEMAS))


def validate(value: dict, schema_url: str) -> None:
    """``value`` against the schema ``schema_url`` names (a document and a JSON pointer)."""
    Draft202012Validator({"$ref": schema_url}, registry=REGISTRY).validate(value)


def validate_event(event: dict) -> None:
    """The event against the spec's RunEvent, and each facet against the schema it names."""
    validate(event, event["schemaURL"])
    facets = [*event["run"].get("facets", {}).values(), *event["job"].get("facets", {}).values()]
    for dataset in event.get("inputs", []) + event.get("outputs", []):
        facets += [*dataset.get("facets", {}).values(), *dataset.get("outputFacets", {}).values()]
    for facet in facets:
        validate(facet, facet["_schemaURL"])


@pytest.fixture()
def configured(tmp_path, monkeypatch) -> Path:
    """OpenLineage configured by an ``openlineage.yml`` (OPENLINEAGE_CONFIG) for a file
    transport: the events file, one JSON event per line."""
    events = tmp_path / "events.jsonl"
    config = tmp_path / "openlineage.yml"
    config.write_text(f"transport:\n  type: file\n  log_file_path: {events}\n  append: true\n")
    monkeypatch.setenv("OPENLINEAGE_CONFIG", str(config))
    openlineage.client.cache_clear()
    yield events
    openlineage.client.cache_clear()


def read_events(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []


def test_off_unless_configured(tmp_path, monkeypatch) -> None:
    for variable in ("OPENLINEAGE_CONFIG", "OPENLINEAGE_URL"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    openlineage.client.cache_clear()
    try:
        assert openlineage.client() is None
        monkeypatch.setenv("OPENLINEAGE_URL", "http://127.0.0.1:9")
        openlineage.client.cache_clear()
        assert openlineage.client() is not None
        monkeypatch.setenv("OPENLINEAGE_DISABLED", "true")
        openlineage.client.cache_clear()
        assert openlineage.client() is None
    finally:
        openlineage.client.cache_clear()


def test_column_lineage_direct_and_indirect() -> None:
    """Which input columns each output column derives from, and those of filters, joins and groups."""
    schemas = {"customer": {"c_custkey": "bigint", "c_name": "string", "c_nationkey": "bigint"},
               "orders": {"o_orderkey": "bigint", "o_custkey": "bigint", "o_totalprice": "double"}}
    ids = {"customer": ("file", "/d/customer.csv"), "orders": ("file", "/d/orders.parquet")}
    query = ("select c_name, upper(c_name) as shout, sum(o_totalprice) as revenue from customer "
             "join orders on c_custkey = o_custkey where o_totalprice > 10 group by c_name")
    facet = openlineage.column_lineage(query, schemas, ids, ["c_name", "shout", "revenue"])
    direct = {column: [(f.name, f.field, f.transformations[0].subtype) for f in fields.inputFields]
              for column, fields in facet.fields.items()}
    assert direct == {"c_name": [("/d/customer.csv", "c_name", "IDENTITY")],
                      "shout": [("/d/customer.csv", "c_name", "TRANSFORMATION")],
                      "revenue": [("/d/orders.parquet", "o_totalprice", "AGGREGATION")]}
    indirect = {(f.field, f.transformations[0].subtype) for f in facet.dataset}
    assert indirect == {("c_custkey", "JOIN"), ("o_custkey", "JOIN"), ("o_totalprice", "FILTER"),
                        ("c_name", "GROUP_BY")}
    assert all(f.transformations[0].type == "INDIRECT" for f in facet.dataset)


@pytest.fixture(scope="module")
def lineage_catalog(tpch, tmp_path_factory) -> LineageSession:
    return tpch_copy(tpch, tmp_path_factory, "openlineage")


def test_save_and_script_events(lineage_catalog, configured) -> None:
    """A save: START and COMPLETE naming the tables read by their files and the saved result
    with its facets; a script: its run the parent of its steps'; a failed save: FAIL with
    the error; every event valid against the schemas."""
    ls = lineage_catalog
    query = ("select c_nationkey, count(*) as customers, sum(o_totalprice) as revenue from customer "
             "join orders on c_custkey = o_custkey where o_orderstatus = 'F' group by c_nationkey")
    saved = ls.save(ls.sql(query), "nation_revenue")
    ls.run_script("CREATE OR REPLACE TABLE big AS SELECT c_nationkey, revenue FROM nation_revenue "
                  "WHERE revenue > 1000000;\nSELECT count(*) FROM big")
    with pytest.raises(DltraceError):
        ls.save(ls.sql("select c_custkey, c_name from customer where c_custkey = 1"), "bad/name")
    with pytest.raises(Exception):  # noqa: B017 - Spark's own error class: the run fails while it saves
        ls.save(ls.sql("select c_custkey, assert_true(c_custkey < 0) as checked from customer"), "fails")

    events = read_events(configured)
    for event in events:
        validate_event(event)
    runs = [(e["job"]["name"], e["eventType"]) for e in events]
    script = next(name for name, kind in runs if name.startswith("script-"))
    assert runs == [("nation_revenue", "START"), ("nation_revenue", "COMPLETE"),
                    (script, "START"), (f"{script}.big", "START"), (f"{script}.big", "COMPLETE"),
                    (script, "COMPLETE"), ("fails", "START"), ("fails", "FAIL")]

    start, complete = events[0], events[1]
    assert start["run"]["runId"] == complete["run"]["runId"]
    assert {(d["namespace"], d["name"]) for d in complete["inputs"]} == {
        openlineage.dataset_id(ls.catalog.tables[t].source) for t in ("customer", "orders")}
    (output,) = complete["outputs"]
    assert (output["namespace"], output["name"]) == ("file", str(ls.catalog.directory / "results" / "nation_revenue"))
    facets = output["facets"]
    assert [f["name"] for f in facets["schema"]["fields"]] == ["c_nationkey", "customers", "revenue"]
    assert output["outputFacets"]["outputStatistics"]["rowCount"] == saved.rows
    assert facets["version"]["datasetVersion"] == saved.stamp
    lineage = facets["columnLineage"]["fields"]
    assert [(f["field"], f["transformations"][0]["subtype"]) for f in lineage["revenue"]["inputFields"]] == [
        ("o_totalprice", "AGGREGATION")]
    assert ("o_orderstatus", "FILTER") in {(f["field"], f["transformations"][0]["subtype"])
                                          for f in facets["columnLineage"]["dataset"]}
    row_lineage = facets[openlineage.ROW_LINEAGE_FACET]
    assert row_lineage["result"] == "nation_revenue" and row_lineage["rows"] == saved.rows
    assert row_lineage["lineageTables"] == ["customer", "orders"]
    assert "ids" not in json.dumps(row_lineage).replace("sharedIds", "")  # sizes, never the ids

    step = events[4]  # the script's step reads the saved result by its dataset
    assert [(d["namespace"], d["name"]) for d in step["inputs"]] == [(output["namespace"], output["name"])]
    assert step["run"]["facets"]["parent"]["job"]["name"] == script
    assert step["run"]["facets"]["parent"]["run"]["runId"] == events[2]["run"]["runId"]
    assert events[-1]["run"]["facets"]["errorMessage"]["message"]


class Receiver(BaseHTTPRequestHandler):
    received: list[tuple[str, dict]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        Receiver.received.append((self.path, json.loads(body)))
        self.send_response(201)
        self.end_headers()

    def log_message(self, *args) -> None:
        pass


def test_events_reach_an_http_receiver(lineage_catalog, monkeypatch) -> None:
    """``OPENLINEAGE_URL``: the events are POSTed to ``/api/v1/lineage``, as Marquez takes them."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.delenv("OPENLINEAGE_CONFIG", raising=False)
    monkeypatch.setenv("OPENLINEAGE_URL", f"http://127.0.0.1:{server.server_address[1]}")
    openlineage.client.cache_clear()
    try:
        ls = lineage_catalog
        ls.save(ls.sql("select n_name from nation where n_regionkey = 1"), "american_nations")
        openlineage.client().close(timeout=30)
    finally:
        server.shutdown()
        openlineage.client.cache_clear()
    assert [(path, e["job"]["name"], e["eventType"]) for path, e in Receiver.received] == [
        ("/api/v1/lineage", "american_nations", "START"), ("/api/v1/lineage", "american_nations", "COMPLETE")]
    for _, event in Receiver.received:
        validate_event(event)


def test_a_script_run_from_the_command_line_is_named_for_its_file(lineage_catalog, configured, tmp_path) -> None:
    from dltrace.cli import main

    script = tmp_path / "regions.sql"
    script.write_text("CREATE OR REPLACE TABLE regions AS SELECT r_name FROM region;\n")
    assert main(["run", str(script), "--catalog", str(lineage_catalog.catalog.directory)]) == 0
    runs = [(e["job"]["name"], e["eventType"]) for e in read_events(configured)]
    assert runs == [("regions.sql", "START"), ("regions.sql.regions", "START"), ("regions.sql.regions", "COMPLETE"),
                    ("regions.sql", "COMPLETE")]


def test_events_never_fail_the_work(tmp_path, monkeypatch, capsys) -> None:
    """A configuration the client refuses, or a server that does not answer: one warning line
    each, and the run's own work goes on (here a save's run without Spark work)."""
    from tests.conftest import free_port

    ls = LineageSession(tmp_path / "catalog")  # no Spark: nothing in the run uses it
    monkeypatch.delenv("OPENLINEAGE_CONFIG", raising=False)
    monkeypatch.setenv("OPENLINEAGE__TRANSPORT__TYPE", "nosuch")
    openlineage.client.cache_clear()
    try:
        with openlineage.save_run(ls, "r", "select 1 as one") as saved:
            saved.append("done")
        assert saved == ["done"]
        assert capsys.readouterr().err.count("OpenLineage is configured wrongly") == 1
        monkeypatch.delenv("OPENLINEAGE__TRANSPORT__TYPE")
        monkeypatch.setenv("OPENLINEAGE_URL", f"http://127.0.0.1:{free_port()}")  # nothing listens there
        monkeypatch.setenv("OPENLINEAGE__TRANSPORT__RETRY__TOTAL", "0")
        openlineage.client.cache_clear()
        for _ in range(2):
            with openlineage.save_run(ls, "r", "select 1 as one"):
                pass
        err = capsys.readouterr().err
        assert err.count("dltrace: warning: an OpenLineage event was not sent, none more will be") == 1, err
    finally:
        openlineage.client.cache_clear()
