"""One local Spark session for the whole run, the paper's example tables and TPC-H SF 0.01.

Two tiers.  ``make test`` runs everything.  ``make test-fast`` (``DLTRACE_NO_JVM=1 pytest
-m "not spark and not slow"``) runs what needs no JVM, in seconds: the rule fixtures, the
golden SQL, the doctests and the other unit tests, less the ``slow`` property tests, with a
fifth of the fuzz cases.  A test is marked ``spark`` when it uses the ``spark`` fixture
(directly or through ``paper``, ``tpch``, ...), when its module says so (``pytestmark =
pytest.mark.spark``, for a test that starts Spark another way, e.g. in a subprocess), and a
doctest when its module is in ``SPARK_DOCTESTS``.  Under ``DLTRACE_NO_JVM=1`` a test that
starts a JVM fails, so a missing mark shows at once.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from dltrace import LineageSession
from dltrace.spark import get_spark
from tests.differential import generated_summary

ROOT = Path(__file__).resolve().parent.parent
PAPER = Path(__file__).resolve().parent / "data" / "paper"
NO_JVM = os.environ.get("DLTRACE_NO_JVM") == "1"
# modules whose doctests start Spark
SPARK_DOCTESTS: frozenset[str] = frozenset()


def pytest_configure(config) -> None:
    config.addinivalue_line("markers", "spark: needs a Spark session (a JVM); make test-fast leaves it out")
    config.addinivalue_line(
        "markers", "slow: a property test of many examples (over 10 s); make test-fast leaves it out"
    )
    config.addinivalue_line(
        "markers", "heavy: many JVMs or processes, or a benchmark end to end (minutes each); make test leaves "
                   "it out, make test-heavy runs it"
    )
    if NO_JVM:
        forbid_jvm()
    # a warm server the developer runs is not the tests' Spark: the CLI started here (and in
    # subprocesses) starts its own unless a test of the server (tests/test_server.py) says so
    os.environ["DLTRACE_SERVER"] = "off"


def forbid_jvm() -> None:
    """Make starting a JVM fail: in this process (PySpark's gateway) and in the processes it
    starts (a ``dltrace`` subprocess finds no Java)."""
    import pyspark.context

    def refuse(*args, **kwargs):
        raise RuntimeError(
            "DLTRACE_NO_JVM=1 (make test-fast): this test starts a JVM; mark it spark (tests/conftest.py)"
        )

    pyspark.context.launch_gateway = refuse
    os.environ["JAVA_HOME"] = "/nonexistent/DLTRACE_NO_JVM"


def pytest_collection_modifyitems(config, items) -> None:
    for item in items:
        spark_doctest = isinstance(item, pytest.DoctestItem) and item.dtest.globs.get("__name__") in SPARK_DOCTESTS
        if "spark" in getattr(item, "fixturenames", ()) or spark_doctest:
            item.add_marker(pytest.mark.spark)


SPARK_CHOICE = ("SPARK_REMOTE", "SPARK_MASTER", "SPARK_API_MODE", "SPARK_CONNECT_AUTHENTICATE_TOKEN")


@pytest.fixture(autouse=True)
def spark_choice_unchanged() -> Iterator[None]:
    """A test that leaves ``SPARK_REMOTE`` (or another choice of Spark) set fails itself, not
    the tests after it, whose sessions and subprocesses would go to a server that is gone."""
    before = {name: os.environ.get(name) for name in SPARK_CHOICE}
    yield
    after = {name: os.environ.get(name) for name in SPARK_CHOICE}
    assert after == before, f"the test left the choice of Spark changed: {before} -> {after}"


@pytest.fixture(scope="session")
def spark(tmp_path_factory):
    """The run's one embedded Spark; the tables jobs write with ``saveAsTable`` go to a
    temporary warehouse, not the working directory."""
    warehouse = str(tmp_path_factory.mktemp("spark-warehouse"))
    return get_spark("local[2]", {"spark.sql.shuffle.partitions": "4", "spark.driver.memory": "3g",
                                  "spark.sql.warehouse.dir": warehouse})


@pytest.fixture(scope="session")
def paper(spark, tmp_path_factory) -> LineageSession:
    """The store/item/sales tables of the paper's section 2 (Tables 1-3), ids in key order."""
    session = LineageSession(tmp_path_factory.mktemp("paper-catalog"), spark=spark)
    session.register("store", PAPER / "store.csv", key=["s_id"], order_by=["s_id"])
    session.register("item", PAPER / "item.csv", key=["i_id"], order_by=["i_id"])
    session.register("sales", PAPER / "sales.csv", key=["t_id"], order_by=["t_id"])
    return session


@pytest.fixture(scope="session")
def tpch(spark, tmp_path_factory) -> LineageSession:
    """TPC-H SF 0.01 (generated once into ./data and cached), registered chronologically."""
    from dltrace.datasets import register_tpch

    session = LineageSession(tmp_path_factory.mktemp("tpch-catalog"), spark=spark)
    register_tpch(session, 0.01, ROOT / "data")
    return session


def tpch_copy(tpch: LineageSession, tmp_path_factory, name: str) -> LineageSession:
    """TPC-H SF 0.01 in a catalog of its own (a copy of the tables), so that results saved
    there do not show up in other tests' results."""
    import shutil

    directory = tmp_path_factory.mktemp(name) / "catalog"
    shutil.copytree(tpch.catalog.directory, directory, ignore=shutil.ignore_patterns("results", "indexes"))
    return LineageSession(directory, spark=tpch.spark)


def demo_copy(tpch, tmp_path_factory, name: str):
    """A copy of the ``tpch`` catalog with the demo's saved steps custrev and natrev."""
    from dltrace.demo import DEMO_PIPELINE

    session = tpch_copy(tpch, tmp_path_factory, name)
    session.run_script(DEMO_PIPELINE)
    return session


@contextmanager
def stored_before_positions(session: LineageSession, name: str, metadata_format: int = 4,
                            without: tuple[str, ...] = ()) -> Iterator[None]:
    """Saved result ``name`` as dltrace stored it before format 5, for the ``with`` block:
    ``_row`` in its rows' file, no ``_pos`` and no ``positions`` (nor the fields ``without``)."""
    import json

    store = session.store
    saved = store.get(name)
    metadata = store.directory / name / "result.json"
    text = metadata.read_text()
    old_data = saved.data.replace("rows.parquet", "rows_stored_row.parquet")
    store.rows(session.spark, saved).orderBy("_row").coalesce(1).write.parquet(str(store.path(old_data)))
    record = {k: v for k, v in json.loads(text).items() if k not in ("positions", *without)}
    record.update(format=metadata_format, data=old_data,
                  schema={"_row": "bigint", **{c: t for c, t in record["schema"].items() if c != "_pos"}})
    metadata.write_text(json.dumps(record))
    try:
        yield
    finally:
        metadata.write_text(text)
        store.path(old_data).remove()


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def stop_process_group(process: subprocess.Popen) -> None:
    """Stop a process started with ``start_new_session`` and whatever it started, by its id:
    SIGTERM, then SIGKILL if it is still there after 30 s."""
    for sig, wait in ((signal.SIGTERM, 30), (signal.SIGKILL, 10)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(wait)
            return
        except subprocess.TimeoutExpired:
            continue


@pytest.fixture(scope="module")
def connect_server(tmp_path_factory) -> Iterator[str]:
    """A real Spark Connect server on 127.0.0.1 (its jar ships in pyspark's ``jars/``): its
    ``sc://`` URL.  Started as ``start-connect-server.sh`` starts one, through ``spark-submit``,
    but in a process group of its own in the foreground, so that it is stopped by its process id
    when the module using it is done (not at the end of the run: a JVM idling for the rest of
    the suite holds memory the other tests' JVM may need); its working directory is not the
    tests' (a relative catalog path resolved there would be another directory)."""
    home = tmp_path_factory.mktemp("connect-server")
    port = free_port()
    command = [
        str(Path(sys.executable).parent / "spark-submit"),
        "--class", "org.apache.spark.sql.connect.service.SparkConnectServer",
        "--master", "local[2]", "--driver-memory", "1g",
        "--conf", "spark.connect.grpc.binding.address=127.0.0.1",
        "--conf", f"spark.connect.grpc.binding.port={port}",
        "--conf", "spark.sql.shuffle.partitions=4", "--conf", "spark.ui.enabled=false",
    ]
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}  # its Python workers (roBDD UDFs) import dltrace
    env.pop("SPARK_REMOTE", None)
    with open(home / "server.log", "wb") as log:
        server = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, cwd=home, env=env,
                                  start_new_session=True)
    try:
        deadline = time.monotonic() + 300
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=5).close()
                break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    tail = (home / "server.log").read_text(errors="replace")[-2000:]
                    raise RuntimeError(f"the Spark Connect server did not start: {tail}") from None
                time.sleep(1)
        yield f"sc://127.0.0.1:{port}"
    finally:
        stop_process_group(server)


FUZZ_CASES = pytest.StashKey[Counter]()


@pytest.fixture(scope="session")
def fuzz_cases(request) -> Counter:
    """Cases the fuzz tests ran, by front door; printed at the end of the run."""
    return request.config.stash.setdefault(FUZZ_CASES, Counter())


GENERATED = pytest.StashKey[Counter]()


@pytest.fixture(scope="session")
def generated_outcomes(request) -> Counter:
    """Generated queries (tests/test_generated_queries.py) by outcome; printed at the end of the run."""
    return request.config.stash.setdefault(GENERATED, Counter())


def pytest_terminal_summary(terminalreporter, config) -> None:
    # seconds per test file (setup, call, teardown): where the suite's time goes, to keep
    # make test within its budget
    seconds = Counter()
    for reports in terminalreporter.stats.values():
        for report in reports:
            if isinstance(getattr(report, "duration", None), float) and getattr(report, "nodeid", ""):
                seconds[report.nodeid.split("::")[0]] += report.duration
    if sum(seconds.values()) > 60:
        top = ", ".join(f"{path.removeprefix('tests/')} {s:.0f}" for path, s in seconds.most_common(12))
        terminalreporter.write_line(f"seconds by test file ({sum(seconds.values()):.0f} in all): {top}")
    cases = config.stash.get(FUZZ_CASES, None)
    if cases:
        parts = ", ".join(f"{door} {n}" for door, n in sorted(cases.items()))
        terminalreporter.write_line(f"fuzz: {sum(cases.values())} cases ({parts})")
    outcomes = config.stash.get(GENERATED, None)
    if outcomes:
        terminalreporter.write_line(generated_summary(outcomes))


# Jobs run in this process on this run's JVM through Spark Connect (tests/test_jobs.py,
# tests/test_daily_jobs.py).

@pytest.fixture(scope="module")
def engine(spark):
    from dltrace.spark import connect_session, serve_connect

    return connect_session(serve_connect(spark))


@pytest.fixture
def job(engine, tmp_path, monkeypatch):
    """A LineageSession on an empty catalog, this process on Connect's API, and a runner of
    scripts given as text: ``job(text, *argv)`` returns ``(steps, lines said)``."""
    import textwrap

    from dltrace.dataframe import jobs
    from dltrace.examples import shop_data
    from dltrace.spark import CONNECT_API

    for key, value in CONNECT_API.items():
        monkeypatch.setenv(key, value)
    monkeypatch.chdir(tmp_path)
    session = LineageSession(tmp_path / "catalog", spark=engine)
    said: list[str] = []

    def run(text: str, *argv: str, resume: bool = False, semantics: str = "control"):
        script = tmp_path / "job.py"
        script.write_text(textwrap.dedent(text))
        said.clear()
        steps = jobs.run_job(session, str(script), semantics, say=said.append, argv=list(argv), resume=resume)
        return steps, list(said)

    def run_file(path, *argv: str, semantics: str = "control"):
        return jobs.run_job(session, str(path), semantics, argv=list(argv))

    run.run_file = run_file
    run.session = session
    run.data = shop_data.write(tmp_path / "data", orders=200)
    return run
