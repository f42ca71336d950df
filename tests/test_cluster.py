"""Beyond one machine (docs/cluster.md).

Through a real Spark Connect server and on a ``local-cluster[2,1,1024]`` master (two worker
JVMs) dltrace gives exactly what embedded Spark gives: rows and lineage of an SPJ query, an
aggregate, a correlated subquery and an roBDD aggregate, save, impact and explain; through
Connect also every representation, ``LINEAGE ON``, a pipeline and a revision
(tests/cluster_checks.py).  The command line works through Spark
Connect with the default catalog, ``./.dltrace`` in the client's working directory, which is
not the server's.  A Spark that cannot be reached, or a master URL Spark refuses, is one line
on stderr within 30 s, with exit status 1 (2 for the URL).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from dltrace import LineageSession
from dltrace.cli import main
from tests.cluster_checks import outcomes, rows
from tests.conftest import ROOT, free_port, tpch_copy

pytestmark = pytest.mark.spark
DATA = ROOT / "data" / "tpch-sf0.01"
SEGMENTS = ("select c_mktsegment, count(*) as n, sum(o_totalprice) as total from orders join customer "
            "on o_custkey = c_custkey where o_orderdate < date '1993-01-01' "
            "group by c_mktsegment order by c_mktsegment")
COMMANDS = [
    # copied (Spark writes the catalog's Parquet), then in place (Spark lists the files)
    ["register", "orders", str(DATA / "orders.parquet"), "--key", "o_orderkey", "--order-by", "o_orderdate,o_orderkey"],
    ["register", "customer", str(DATA / "customer.parquet")],
    ["sql", SEGMENTS, "--save", "segments", "--format", "json"],
    ["impact", "--source", "orders WHERE o_orderdate = date '1992-01-01'", "--result", "segments", "--format", "json"],
    ["explain", "--result", "segments", "--row", "1", "--format", "json"],
]


def environment(**settings: str) -> dict[str, str]:
    """This environment without a Spark or catalog chosen by the caller's, plus ``settings``."""
    chosen = ("SPARK_REMOTE", "SPARK_MASTER", "DLTRACE_CATALOG")
    return {**{k: v for k, v in os.environ.items() if k not in chosen}, **settings}


@pytest.fixture(scope="module")
def embedded(tpch, tmp_path_factory) -> dict:
    """The outcomes on the embedded session: what every other way of running must give."""
    found = outcomes(tpch_copy(tpch, tmp_path_factory, "cluster-embedded"), tmp_path_factory.mktemp("scratch"), True)
    assert all(found.values()) and all('"DL": []' not in row for row in found["aggregate/set"]), found
    return found


def outcomes_elsewhere(tpch, tmp_path_factory, env: dict[str, str], *options: str) -> dict:
    """The outcomes in a process of their own on another Spark, over a copy of the catalog."""
    catalog = tpch_copy(tpch, tmp_path_factory, "cluster-elsewhere").catalog.directory
    command = [sys.executable, "-m", "tests.cluster_checks", str(catalog), str(tmp_path_factory.mktemp("scratch")),
               *options]
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=ROOT, timeout=900)
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout)


def test_spark_connect_gives_the_embedded_lineage(connect_server, tpch, tmp_path_factory, embedded) -> None:
    found = outcomes_elsewhere(tpch, tmp_path_factory, environment(SPARK_REMOTE=connect_server), "--everything")
    assert found == embedded


@pytest.mark.heavy  # a cluster of two executor JVMs beside this one: make test-heavy
def test_local_cluster_gives_the_embedded_lineage(tpch, tmp_path_factory, embedded) -> None:
    found = outcomes_elsewhere(tpch, tmp_path_factory, environment(), "--master", "local-cluster[2,1,1024]")
    assert found == {key: embedded[key] for key in found} and len(found) >= 7


def test_cli_through_spark_connect_with_the_default_catalog(connect_server, spark, tmp_path, capsys,
                                                             monkeypatch) -> None:
    """The README's tour through Connect: register, sql --save, impact, explain with no
    --catalog, each command a new client process; the same output as embedded runs."""
    through, embedded = tmp_path / "connect", tmp_path / "embedded"
    through.mkdir()
    embedded.mkdir()
    monkeypatch.delenv("DLTRACE_CATALOG", raising=False)
    for args in COMMANDS:
        done = subprocess.run([sys.executable, "-m", "dltrace", *args], capture_output=True, text=True, cwd=through,
                              env=environment(SPARK_REMOTE=connect_server), timeout=300)
        assert done.returncode == 0, done.stderr
        monkeypatch.chdir(embedded)
        assert main(args) == 0
        expected = capsys.readouterr()
        assert sorted(done.stdout.splitlines()) == sorted(expected.out.splitlines()) and expected.out.strip()
        assert done.stderr == expected.err  # "saved result ...", nothing else
    assert (through / ".dltrace" / "results" / "segments" / "result.json").is_file()
    assert (through / ".dltrace" / "tables" / "orders-v1.parquet" / "_SUCCESS").is_file()


def test_a_catalog_named_by_a_file_uri(spark, tmp_path) -> None:
    """``file:///...`` (what a cluster whose default filesystem is HDFS needs for a local
    catalog) gives the catalog a plain path gives, a source registered in place by URI too."""
    found = {}
    for how, catalog, region in (("path", tmp_path / "plain", DATA / "region.parquet"),
                                 ("uri", f"file://{tmp_path}/uri", f"file://{DATA}/region.parquet")):
        session = LineageSession(catalog, spark=spark)
        session.register("nation", DATA / "nation.parquet", key=["n_nationkey"], order_by=["n_nationkey"])
        session.register("region", region)
        query = "select r_name, count(*) as n from nation join region on n_regionkey = r_regionkey group by r_name"
        session.save(session.sql(query), "per_region")
        found[how] = [rows(session.result("per_region")), rows(session.impact("nation WHERE n_nationkey = 3")[
            "per_region"]), rows(session.explain("per_region", 0)["region"])]
        assert str(session.catalog.directory).startswith("file:///" if how == "uri" else "/")
    assert found["uri"] == found["path"] and all(found["uri"])


def one_line_failure(args: list[str], env: dict[str, str], status: int, cwd: Path, script: list[str] | None = None
                     ) -> str:
    """Run the CLI (or ``script``); it must fail with ``status`` and one line on stderr, not
    retry for Connect's 10 minutes (the subprocess's timeout; no measured time, which a busy
    machine would make flaky: the line itself says which bounded check failed)."""
    done = subprocess.run([*(script or [sys.executable, "-m", "dltrace"]), *args], capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=300)
    lines = done.stderr.splitlines()
    assert done.returncode == status and len(lines) == 1 and lines[0].startswith("dltrace: error: "), done.stderr
    return lines[0]


def test_an_unreachable_connect_server_is_one_line(tmp_path) -> None:
    remote = f"sc://127.0.0.1:{free_port()}"
    line = one_line_failure(["sql", "select 1 as x"], environment(SPARK_REMOTE=remote), 1, tmp_path)
    assert remote in line and "check that the server runs" in line


def test_an_unreachable_master_is_one_line(tmp_path) -> None:
    master = f"spark://127.0.0.1:{free_port()}"
    line = one_line_failure(["sql", "select 1 as x", "--master", master], environment(), 1, tmp_path)
    assert master in line and "check that the master runs" in line


def test_a_malformed_master_gives_sparks_reason(tmp_path) -> None:
    line = one_line_failure(["sql", "select 1 as x", "--master", "bogus"], environment(), 2, tmp_path)
    assert "'bogus': Master must either be yarn or start with spark, k8s, or local" in line


def test_without_the_connect_client_one_line_names_the_extra(tmp_path) -> None:
    script = tmp_path / "no_grpc.py"
    script.write_text("import sys\nsys.modules['grpc'] = None  # as if grpcio were not installed\n"
                      "from dltrace.cli import main\nsys.exit(main(sys.argv[1:]))\n")
    env = environment(SPARK_REMOTE=f"sc://127.0.0.1:{free_port()}", PYTHONPATH=str(ROOT))
    line = one_line_failure(["sql", "select 1 as x"], env, 1, tmp_path, [sys.executable, str(script)])
    assert "pip install 'dltrace[connect]'" in line and "grpcio" in line
