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
from collections import Counter
from pathlib import Path

import pytest

from dltrace import LineageSession
from dltrace.spark import get_spark

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
    if NO_JVM:
        forbid_jvm()


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


@pytest.fixture(scope="session")
def spark():
    return get_spark("local[2]", {"spark.sql.shuffle.partitions": "4", "spark.driver.memory": "3g"})


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


FUZZ_CASES = pytest.StashKey[Counter]()


@pytest.fixture(scope="session")
def fuzz_cases(request) -> Counter:
    """Cases the fuzz tests ran, by front door; printed at the end of the run."""
    return request.config.stash.setdefault(FUZZ_CASES, Counter())


def pytest_terminal_summary(terminalreporter, config) -> None:
    cases = config.stash.get(FUZZ_CASES, None)
    if cases:
        parts = ", ".join(f"{door} {n}" for door, n in sorted(cases.items()))
        terminalreporter.write_line(f"fuzz: {sum(cases.values())} cases ({parts})")
