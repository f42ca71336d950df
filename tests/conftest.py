"""One local Spark session for the whole run, the paper's example tables and TPC-H SF 0.01."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from dltrace import LineageSession
from dltrace.spark import get_spark

ROOT = Path(__file__).resolve().parent.parent
PAPER = Path(__file__).resolve().parent / "data" / "paper"


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
    from tpch.register import register_tpch

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
