"""Crash safety (docs/formats.md, "Atomic writes and recovery"): ``register`` and ``sql
--save`` killed with SIGKILL at each of their fault points (``dltrace.faults``: the writer
kills itself exactly there, whatever the machine's load) leave the catalog and the saved
results exactly as they were or exactly as the command would have left them, never half;
the next command removes what the killed one left behind.  Ctrl-C ends in one line and the
same guarantees.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from dltrace import LineageSession
from dltrace.catalog import Catalog
from dltrace.cli import main
from dltrace.faults import ENVIRONMENT

ROOT = Path(__file__).resolve().parent.parent
ORDERS = ROOT / "data" / "tpch-sf0.01" / "orders.parquet"
SAVE_QUERY = "select l_orderkey, l_linenumber, l_quantity from lineitem where l_quantity > 10"
OLD_SAVE_QUERY = "select l_orderkey from lineitem where l_quantity > 49"


def parquet_rows(path: Path) -> int:
    return sum(pq.read_metadata(file).num_rows for file in path.glob("*.parquet"))


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


def start(args: list[str], catalog: Path, fault: str) -> subprocess.Popen:
    """``dltrace ARGS`` in its own process group (the JVM it starts included), dying at ``fault``."""
    return subprocess.Popen([sys.executable, "-m", "dltrace", *args, "--catalog", str(catalog), "--master", "local[1]"],
                            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True,
                            text=True, env={**os.environ, ENVIRONMENT: fault})


def ended(processes: list[subprocess.Popen]) -> list[int]:
    """The processes' exit statuses, once all ended; what is left of their groups (a killed
    writer's JVM) is killed."""
    codes = [process.wait(900) for process in processes]
    for process in processes:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return codes


def state(catalog: Path) -> dict:
    """The catalog's tables and the saved results, as their metadata say."""
    tables = Catalog(catalog).tables
    results = {home.name: json.loads((home / "result.json").read_text()) for home in (catalog / "results").glob("*")
               if (home / "result.json").exists()}
    return {"tables": {name: asdict(entry) for name, entry in tables.items()}, "results": results}


def check_complete(catalog: Path) -> dict:
    """Everything the metadata names is there, with the rows it claims."""
    now = state(catalog)
    for entry in now["tables"].values():
        assert parquet_rows(catalog / entry["path"]) == entry["rows"]
    for result in now["results"].values():
        assert parquet_rows(catalog / result["data"]) == result["rows"]
    return now


def leftovers(catalog: Path) -> list[Path]:
    """What no metadata names: temporary files and directories, unreferenced table and
    result data."""
    homes = [catalog, catalog / "tables", catalog / "indexes", catalog / "results", catalog / "log",
             *(catalog / "results").glob("*/")]
    found = [p for home in homes for p in home.glob(".*")]  # (Spark's .crc files live deeper)
    now = state(catalog)
    referenced = {Path(r["data"]).parent.name for r in now["results"].values()}
    found += [p for p in (catalog / "results").glob("*/*") if p.is_dir() and p.name not in referenced]
    tables = {Path(path).name for entry in now["tables"].values() for path in [entry["path"]] + [
        old["path"] for old in entry["previous"]]}
    found += [p for p in (catalog / "tables").glob("*") if p.name not in tables]
    return found


def sweep_by_next_command(catalog: Path, kept: list[Path] = ()) -> None:
    """The next command removes every leftover but ``kept``: data of a live writer's (this
    test's process) save, which is removed once its writer is gone."""
    assert main(["tables", "--catalog", str(catalog)]) == 0
    assert leftovers(catalog) == list(kept)


REGISTER = ["register", "orders2", str(ORDERS), "--order-by", "o_orderdate"]
# where a registration dies, and whether the table is registered then
REGISTER_POINTS = {"register.after-data": False, "register.after-rename": False,
                   "catalog.after-commit": False}  # its first commit reserves the code: no table yet


def test_register_killed_or_interrupted(capsys, catalogs):
    """Registrations at once, each killed at its own fault point, and one interrupted with
    Ctrl-C (SIGINT to the process group, as a terminal sends it): "dltrace: interrupted", exit 130."""
    points = [*REGISTER_POINTS, "register.after-data:interrupt"]
    homes = [catalogs(point.replace(":", "-")) for point in points]
    before = [check_complete(home) for home in homes]
    processes = [start(REGISTER, home, point) for home, point in zip(homes, points)]
    assert ended(processes) == [-signal.SIGKILL] * len(REGISTER_POINTS) + [130]
    assert processes[-1].stderr.read().strip() == "dltrace: interrupted"
    for home, old, point in zip(homes, before, points):
        after = check_complete(home)
        assert after["tables"] == old["tables"], point
        sweep_by_next_command(home)
    assert main([*REGISTER, "--catalog", str(homes[0])]) == 0  # and the command works again
    assert check_complete(homes[0])["tables"]["orders2"]["rows"] == 15000
    capsys.readouterr()


def test_save_killed(capsys, catalogs):
    """Saves replacing a result at once, each killed at its own fault point: before its
    result.json names the new rows, the old result; after, the new one."""
    points = {"save.after-rows": False, "save.after-metadata": True}
    homes = [catalogs(point) for point in points]
    before = [check_complete(home) for home in homes]
    processes = [start(["sql", SAVE_QUERY, "--save", "lines", "--limit", "1"], home, point)
                 for home, point in zip(homes, points)]
    assert ended(processes) == [-signal.SIGKILL] * len(points)
    for home, old_state, replaced in zip(homes, before, points.values()):
        after = check_complete(home)
        assert after["tables"] == old_state["tables"]
        old, new = old_state["results"]["lines"], after["results"]["lines"]
        assert new == old if not replaced else (new["query"] == SAVE_QUERY and new["rows"] > old["rows"]), new
        # the replaced save is this (live) process's: kept until it is gone
        sweep_by_next_command(home, [home / Path(old["data"]).parent] if replaced else [])
    capsys.readouterr()
