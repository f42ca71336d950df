"""Crash safety (docs/formats.md, "Atomic writes and recovery"): ``register`` and ``sql
--save`` killed with SIGKILL before, during and after their data write leave the catalog
and the saved results exactly as they were or exactly as the command would have left them,
never half; the next command removes what the killed one left behind.  Ctrl-C ends in one line and the same guarantees.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from dltrace import LineageSession
from dltrace.cli import main

ROOT = Path(__file__).resolve().parent.parent
ORDERS = ROOT / "data" / "tpch-sf0.01" / "orders.parquet"
SAVE_QUERY = "select l_orderkey, l_linenumber, l_quantity from lineitem where l_quantity > 10"
OLD_SAVE_QUERY = "select l_orderkey from lineitem where l_quantity > 49"


def parquet_rows(path: Path) -> int:
    return sum(pq.read_metadata(file).num_rows for file in path.glob("*.parquet"))


def written_files(directory: Path) -> list[Path]:
    return [p for p in directory.rglob("part-*")] if directory.exists() else []


@pytest.fixture()
def catalogs(tpch, tmp_path):
    """Copies of the TPC-H catalog, each with a saved result ``lines`` (to be replaced)."""
    def make(name: str) -> Path:
        target = tmp_path / name
        shutil.copytree(tpch.catalog.directory, target, ignore=shutil.ignore_patterns("indexes", "results"))
        session = LineageSession(target, spark=tpch.spark)
        session.save(session.sql(OLD_SAVE_QUERY), "lines")
        return target
    return make


def start(args: list[str], catalog: Path) -> subprocess.Popen:
    """``dltrace ARGS`` in its own process group (the JVM it starts included)."""
    return subprocess.Popen([sys.executable, "-m", "dltrace", *args, "--catalog", str(catalog), "--master", "local[1]"],
                            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True,
                            text=True)


def kill_when(processes: list[subprocess.Popen], reached: list, signums: list[int], timeout: float = 600) -> list[bool]:
    """Send each process's group its signal as soon as its ``reached()``; per process,
    whether it was signalled (False: it ended first).  The processes run concurrently."""
    signalled = [False] * len(processes)
    deadline = time.monotonic() + timeout
    while any(p.poll() is None and not s for p, s in zip(processes, signalled)) and time.monotonic() < deadline:
        for i, process in enumerate(processes):
            if not signalled[i] and process.poll() is None and reached[i]():
                os.killpg(process.pid, signums[i])
                signalled[i] = True
        time.sleep(0.002)
    for process in processes:
        if process.poll() is None and time.monotonic() >= deadline:
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(120)
    return signalled


def state(catalog: Path) -> dict:
    """The catalog's tables and the saved results, as their metadata say."""
    tables = json.loads((catalog / "catalog.json").read_text())["tables"]
    results = {home.name: json.loads((home / "result.json").read_text()) for home in (catalog / "results").glob("*")
               if (home / "result.json").exists()}
    return {"tables": tables, "results": results}


def check_complete(catalog: Path) -> dict:
    """Everything the metadata names is there, with the rows it claims."""
    now = state(catalog)
    for entry in now["tables"].values():
        assert parquet_rows(catalog / entry["path"]) == entry["rows"]
    for result in now["results"].values():
        assert parquet_rows(catalog / result["data"]) == result["rows"]
    return now


def leftovers(catalog: Path) -> list[Path]:
    """What no metadata names: temporary files and directories, unreferenced result data."""
    homes = [catalog, catalog / "tables", catalog / "indexes", catalog / "results", *(catalog / "results").glob("*/")]
    found = [p for home in homes for p in home.glob(".*")]  # (Spark's .crc files live deeper)
    referenced = {Path(r["data"]).parent.name for r in state(catalog)["results"].values()}
    found += [p for p in (catalog / "results").glob("*/*") if p.is_dir() and p.name not in referenced]
    return found


def sweep_by_next_command(catalog: Path) -> None:
    assert main(["tables", "--catalog", str(catalog)]) == 0
    assert leftovers(catalog) == []


# (name, what is watched, when to kill): before the first data file, while they are
# written, after the write is complete (_SUCCESS) and before the metadata names it
POINTS = [
    ("before", lambda d: d is not None and not written_files(d)),
    ("during", lambda d: d is not None and bool(written_files(d)) and not (d / "_SUCCESS").exists()),
    ("after", lambda d: d is not None and (d / "_SUCCESS").exists()),
]


def register_target(catalog: Path) -> Path | None:
    return next((catalog / "tables").glob(".tmp-orders2-*"), None)


def save_target(catalog: Path) -> Path | None:
    stamps = [p for p in (catalog / "results" / "lines").glob("*-p*") if p.is_dir()]
    new = [p for p in stamps if p.name != Path(state(catalog)["results"]["lines"]["data"]).parent.name]
    return new[0] / "rows.parquet" if new else None


REGISTER = ["register", "orders2", str(ORDERS), "--order-by", "o_orderdate"]


def test_register_killed_or_interrupted(capsys, catalogs):
    """Registrations at once, each killed at its own point, and one interrupted with Ctrl-C
    (SIGINT to the process group, as a terminal sends it): "dltrace: interrupted", exit 130."""
    homes = [catalogs(point) for point, _ in POINTS] + [catalogs("ctrl-c")]
    before = [check_complete(home) for home in homes]
    processes = [start(REGISTER, home) for home in homes]
    reached = [lambda h=home, r=reached: r(register_target(h)) for home, (_, reached) in zip(homes, POINTS)]
    reached.append(lambda: register_target(homes[-1]) is not None)
    killed = kill_when(processes, reached, [signal.SIGKILL] * len(POINTS) + [signal.SIGINT])
    assert killed == [True] * len(homes), "a registration ended before it could be killed"
    assert processes[-1].returncode == 130 and processes[-1].stderr.read().strip() == "dltrace: interrupted"
    assert check_complete(homes[-1]) == before[-1]
    for home, old in zip(homes, before):
        after = check_complete(home)
        assert after == old or (set(after["tables"]) == {*old["tables"], "orders2"}
                                and after["tables"]["orders2"]["rows"] == 15000), after
        sweep_by_next_command(home)
    assert main([*REGISTER, "--catalog", str(homes[0])]) == 0  # and the command works again
    assert check_complete(homes[0])["tables"]["orders2"]["rows"] == 15000
    capsys.readouterr()


def test_save_killed(capsys, catalogs):
    """Three saves replacing a result at once, each killed at its own point."""
    homes = [catalogs(point) for point, _ in POINTS]
    before = [check_complete(home) for home in homes]
    processes = [start(["sql", SAVE_QUERY, "--save", "lines", "--limit", "1"], home) for home in homes]
    reached = [lambda h=home, r=reached: r(save_target(h)) for home, (_, reached) in zip(homes, POINTS)]
    assert kill_when(processes, reached, [signal.SIGKILL] * len(POINTS)) == [True] * len(POINTS), \
        "a save ended before it could be killed"
    for home, old_state in zip(homes, before):
        after = check_complete(home)
        assert after["tables"] == old_state["tables"]
        old, new = old_state["results"]["lines"], after["results"]["lines"]
        assert new == old or (new["query"] == SAVE_QUERY and new["rows"] > old["rows"]), new
        sweep_by_next_command(home)
    capsys.readouterr()
