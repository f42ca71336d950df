"""Every benchmark command runs end to end at the smallest scale, in this process (the test
session's Spark; ``warm_cli_bench`` runs its commands as new processes and a ``dltrace server``
of its own, as a user would), so that an experiment cannot silently stop running (the Walmart bench once
stopped with an IndexError on a query without id columns).  Figures are not checked here:
only that each command finishes with exit status 0 and writes what it reports.  Every
subcommand of ``python -m tpch``, ``python -m walmart`` and ``python -m tpcds`` must be among them (checked
without a JVM)."""

from __future__ import annotations

import argparse
import importlib
from pathlib import Path

import pytest

from tests.conftest import demo_copy

ROOT = Path(__file__).resolve().parent.parent
# TPC-H SF 0.01 and Walmart scale 0.01: the smallest each experiment is run at (data/ caches them)
COMMANDS = {
    "tpch table7": ("tpch.__main__", ["table7", "--sf", "0.01", "--check"]),
    "tpch bench": ("tpch.__main__", ["bench", "--sf", "0.01", "--repeat", "1", "--out", "{out}"]),
    "tpch table8": ("tpch.__main__", ["table8", "--sf", "0.01", "--repeat", "1", "--out", "{out}"]),
    "tpch space": ("tpch.__main__", ["space", "--sf", "0.01", "--repeat", "1", "--baseline", "--candidates",
                                     "--out", "{out}"]),
    "walmart bench": ("walmart.__main__", ["bench", "--scale", "0.01", "--repeat", "1", "--out", "{out}"]),
    "walmart table9": ("walmart.__main__", ["table9", "--scale", "0.01", "--queries", "q1"]),
    "reasons_bench": ("tpch.reasons_bench", ["--rows", "1000", "--repeat", "1"]),
    "memory_bench": ("tpch.memory_bench", ["--rows", "20000", "--groups", "4", "--out", "{out}"]),
    "daily_bench": ("tpch.daily_bench", ["--days", "2", "--events", "500", "--out", "{out}"]),
    "tpcds bench": ("tpcds.__main__", ["bench", "--sf", "0.01", "--repeat", "1", "--out", "{out}"]),
    # on a copy of the demo's catalog ({catalog}: TPC-H SF 0.01 and the saved steps custrev and natrev)
    "ui_bench": ("tpch.ui_bench", ["--catalog", "{catalog}", "--repeat", "1", "--no-browser"]),
    "warm_cli_bench": ("tpch.warm_cli_bench", ["--catalog", "{catalog}", "--repeat", "1", "--out", "{out}"]),
}
PROGRAMS = {"tpch": "tpch.__main__", "walmart": "walmart.__main__", "tpcds": "tpcds.__main__"}


def subcommands(module: str) -> list[str]:
    """The subcommands of the parser of ``python -m`` ``module``."""
    top = importlib.import_module(module).parser()
    (choices,) = [action.choices for action in top._actions if isinstance(action, argparse._SubParsersAction)]
    return list(choices)


@pytest.mark.parametrize("program", PROGRAMS)
def test_every_subcommand_is_run_here(program):
    missing = [c for c in subcommands(PROGRAMS[program]) if f"{program} {c}" not in COMMANDS]
    assert not missing, f"python -m {program}: add {missing} to COMMANDS"


@pytest.fixture()
def shuffle_partitions(spark):
    """The benchmarks set their own shuffle partitions on the session; the tests after them keep theirs."""
    before = spark.conf.get("spark.sql.shuffle.partitions")
    yield
    spark.conf.set("spark.sql.shuffle.partitions", before)


@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.heavy
@pytest.mark.parametrize("name", COMMANDS)
def test_benchmark_command_runs(spark, shuffle_partitions, name, tmp_path, tmp_path_factory, request, monkeypatch):
    """``python -m ...`` as written in its module's usage line, at the smallest scale."""
    module, argv = COMMANDS[name]
    monkeypatch.chdir(ROOT)  # data/ is the generated data's cache, shared with the tests' TPC-H
    out = tmp_path / "out"
    if "{catalog}" in argv:
        catalog = demo_copy(request.getfixturevalue("tpch"), tmp_path_factory, name).catalog.directory
        argv = [a.replace("{catalog}", str(catalog)) for a in argv]
    code = importlib.import_module(module).main([a.replace("{out}", str(out)) for a in argv])
    assert code in (0, None)
    if "{out}" in argv:
        assert out.exists() and any(out.iterdir())
