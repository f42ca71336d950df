"""Every benchmark command runs end to end at the smallest scale, in this process (the test
session's Spark), so that an experiment cannot silently stop running (the Walmart bench once
stopped with an IndexError on a query without id columns).  Figures are not checked here:
only that each command finishes with exit status 0 and writes what it reports."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
pytestmark = [pytest.mark.spark, pytest.mark.slow, pytest.mark.heavy]

COMMANDS = {
    "walmart bench": ("walmart.__main__", ["bench", "--scale", "0.01", "--repeat", "1", "--out", "{out}"]),
    "walmart table9": ("walmart.__main__", ["table9", "--scale", "0.01", "--queries", "q1"]),
    "reasons_bench": ("tpch.reasons_bench", ["--rows", "1000", "--repeat", "1"]),
}


@pytest.mark.parametrize("name", COMMANDS)
def test_benchmark_command_runs(spark, name, tmp_path, monkeypatch):
    """``python -m ...`` as written in its module's usage line, at the smallest scale."""
    module, argv = COMMANDS[name]
    monkeypatch.chdir(ROOT)  # data/ is the generated data's cache, shared with the tests' TPC-H
    out = tmp_path / "out"
    code = importlib.import_module(module).main([a.replace("{out}", str(out)) for a in argv])
    assert code in (0, None)
    if "{out}" in argv:
        assert out.exists() and any(out.iterdir())
