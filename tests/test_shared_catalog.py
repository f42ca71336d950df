"""A catalog many writers share (docs/formats.md, "Sharing a catalog"): commits never lose
another writer's work and never give a table code twice, a writer killed at any fault point
leaves nothing half written, a filesystem without rename detects two writers at once, and
another host's temporaries are not swept as a dead writer's."""

from __future__ import annotations

import json
import multiprocessing
import os
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.fs as pafs
import pytest

from dltrace import LineageSession, commits
from dltrace.catalog import Catalog
from dltrace.datasets import TABLES, generate
from dltrace.errors import BadInput
from dltrace.faults import ENVIRONMENT, point
from dltrace.recovery import FOREIGN_AGE, HOST, sweep
from dltrace.storage import Location, location
from tests.oracle import DuckOracle, check_completeness
from tests.shared_writer import result_query, write

ROOT = Path(__file__).resolve().parent.parent


def reserve_codes(directory: str, count: int) -> list[int]:
    catalog = Catalog(directory)
    return [catalog.reserve_code() for _ in range(count)]


def test_concurrent_commits_lose_nothing_and_give_no_code_twice(tmp_path) -> None:
    """Eight processes committing 15 times each at once: 120 versions, 120 distinct codes."""
    with multiprocessing.get_context("spawn").Pool(8) as pool:
        got = pool.starmap(reserve_codes, [(str(tmp_path), 15)] * 8)
    codes = [code for codes in got for code in codes]
    catalog = Catalog(tmp_path)
    assert len(set(codes)) == 120 and sorted(catalog.retired_codes) == sorted(codes) and catalog.version == 120
    assert json.loads((tmp_path / "catalog.json").read_text())["version"] == 120
    assert len(list((tmp_path / "log").iterdir())) == commits.KEEP + 1  # older entries pruned


def test_an_old_catalog_loads_and_its_next_version_goes_to_the_log(tmp_path) -> None:
    entry = {"code": 3, "path": "tables/t-v1.parquet", "source": "/x", "key": None, "order_by": None, "rows": 2,
             "schema": {"a": "int"}}
    (tmp_path / "catalog.json").write_text(json.dumps({"format": 1, "version": 7, "tables": {"t": entry}}))
    catalog = Catalog(tmp_path)
    assert catalog.version == 7 and catalog.entry("t").code == 3 and catalog.next_code() == 1
    catalog.remove("t")
    assert [p.name for p in (tmp_path / "log").iterdir()] == [commits.entry_name(8)]
    written = json.loads((tmp_path / "catalog.json").read_text())
    assert written["format"] == 2 and written["version"] == 8 and written["retired_codes"] == [3]


def test_a_writer_killed_between_commit_and_catalog_json_is_committed(tmp_path) -> None:
    """``catalog.after-commit``: the log holds the version, catalog.json the one before; readers
    take the log's."""
    Catalog(tmp_path).reserve_code()
    killed = subprocess.run([sys.executable, "-c", f"from dltrace.catalog import Catalog; "
                             f"Catalog({str(tmp_path)!r}).reserve_code()"],
                            env={**os.environ, ENVIRONMENT: "catalog.after-commit"}, cwd=ROOT)
    assert killed.returncode == -9
    assert json.loads((tmp_path / "catalog.json").read_text())["version"] == 1
    catalog = Catalog(tmp_path)
    assert catalog.version == 2 and catalog.retired_codes == [1, 2]
    assert catalog.reserve_code() == 3 and json.loads((tmp_path / "catalog.json").read_text())["version"] == 3


def test_an_unknown_fault_point_is_bad_input(monkeypatch) -> None:
    monkeypatch.setenv(ENVIRONMENT, "save.after-nothing")
    with pytest.raises(BadInput, match="no such fault point"):
        point("save.after-rows")


@pytest.fixture
def no_rename(tmp_path) -> Location:
    """A catalog on a filesystem without an atomic rename, as dltrace treats an object store:
    a local directory seen through pyarrow's SubTreeFileSystem (which Spark writes as the
    plain local path)."""
    store = Location(pafs.SubTreeFileSystem(str(tmp_path), pafs.LocalFileSystem()), "catalog", f"{tmp_path}/")
    assert not store.atomic_rename
    return store


def test_without_rename_two_writers_at_once_are_detected(no_rename, monkeypatch) -> None:
    """One writer at a time is the rule there.  A version another writer committed is taken
    (read it, try the next); a writer whose proposal finds another's beside it withdraws it
    and fails; a reader that finds two proposals of one version fails too."""
    Catalog(no_rename).reserve_code()
    log = no_rename / commits.DIRECTORY
    other = json.dumps({"format": 2, "version": 2, "tables": {}})
    for version in (2, 3):
        (log / commits.entry_name(version)).mkdir()
    (log / commits.entry_name(2) / "commit-wotherhost_1.json").write_text(other)
    assert not commits.publish(log, 2, "{}")
    # the other writer's proposal of version 3 lands between this one's look and its write
    looked, looks = commits.commit_files, []

    def looking(log: Location, version: int) -> list[Location]:
        looks.append(version)
        return [] if len(looks) == 1 else looked(log, version)

    monkeypatch.setattr(commits, "commit_files", looking)
    (log / commits.entry_name(3) / "commit-wotherhost_1.json").write_text(other)
    with pytest.raises(commits.ConcurrentWriters, match="at the same time.*one writer at a time is required"):
        commits.publish(log, 3, "{}")
    monkeypatch.undo()
    assert [f.name for f in commits.commit_files(log, 3)] == ["commit-wotherhost_1.json"]  # withdrawn
    (log / commits.entry_name(3) / "commit-wthird_2.json").write_text(other)
    with pytest.raises(commits.ConcurrentWriters, match="committed by 2 writers at once"):
        Catalog(no_rename)


def test_another_hosts_temporaries_are_swept_only_when_old(tmp_path) -> None:
    catalog = location(tmp_path)
    dead_here = catalog / "tables" / f".tmp-t-w{HOST}_{2**22 + 1}-1"
    elsewhere = catalog / "tables" / f".tmp-t-wotherhost_{os.getpid()}-1"
    old_elsewhere = catalog / "tables" / ".tmp-u-wotherhost_1-1"
    for path in (dead_here, elsewhere, old_elsewhere):
        (path / "part.parquet").parent.mkdir()
        (path / "part.parquet").write_text("x")
    past = time.time() - FOREIGN_AGE - 60
    os.utime(os.fspath(old_elsewhere), (past, past))
    sweep(catalog)
    assert [p.name for p in catalog.glob("tables/.tmp-*")] == [elsewhere.name]


# ---------------------------------------------------------------------------------------------
# eight writers, each in its own process and JVM, registering and saving into one catalog


def run_writers(catalog: Path, faults: dict[str, str]) -> dict[str, tuple[int, str]]:
    """Start a writer per TPC-H table at once; per table, its exit status and stderr."""
    generate(0.01, ROOT / "data")  # once, before the writers read it
    env = {**os.environ, "SPARK_DRIVER_MEMORY": "1g"}
    logs = {table: catalog.parent / f"{table}.err" for table in TABLES}
    writers = {
        table: subprocess.Popen([sys.executable, "-m", "tests.shared_writer", str(catalog), table, f"r_{table}"],
                                cwd=ROOT, env={**env, **({ENVIRONMENT: faults[table]} if table in faults else {})},
                                stdout=subprocess.DEVNULL, stderr=logs[table].open("w"), start_new_session=True)
        for table in TABLES
    }
    ended = {}
    for table, process in writers.items():
        ended[table] = (process.wait(900), logs[table].read_text())
        try:
            os.killpg(process.pid, 9)  # a killed writer's JVM
        except ProcessLookupError:
            pass
    return ended


def check_catalog(catalog: Path | Location, tables: list[str], spark) -> LineageSession:
    """``tables`` registered with distinct codes and complete data, each one's result saved,
    complete and passing the completeness oracle; nothing else, no leftovers once swept."""
    session = LineageSession(catalog, spark=spark)
    assert sorted(session.catalog.tables) == sorted(tables)
    entries = [session.catalog.entry(t) for t in tables]
    assert len({e.code for e in entries}) == len(tables)
    assert sorted(r.name for r in session.results()) == sorted(f"r_{t}" for t in tables)
    oracle = DuckOracle(LineageSession(str(catalog), spark=spark))  # DuckDB reads local paths: no_rename's too
    for table in tables:
        assert session.sql(f"SELECT count(*) FROM {table}").first()[0] == session.catalog.entry(table).rows
        rows = session.result(f"r_{table}").drop("_row").collect()
        assert len(rows) == session.sql(result_query(table), lineage=False).count() > 1
        assert check_completeness(oracle, result_query(table), rows, tree=True, most=25) == len(rows)
    return session


@pytest.mark.heavy  # eight JVMs on the test machine's two cores: minutes
@pytest.mark.slow
@pytest.mark.spark
def test_eight_writers_at_once(spark, tmp_path) -> None:
    ended = run_writers(tmp_path / "catalog", {})
    assert {t: code for t, (code, _) in ended.items()} == dict.fromkeys(TABLES, 0), ended
    check_catalog(tmp_path / "catalog", list(TABLES), spark)


FAULTS = {  # a writer per fault point; the others are not killed
    "region": "register.after-data",
    "nation": "register.after-rename",
    "supplier": "catalog.after-commit",  # the code's reservation: its table is never committed
    "customer": "save.after-rows",
    "part": "save.after-metadata",
}


@pytest.mark.heavy
@pytest.mark.slow
@pytest.mark.spark
def test_eight_writers_at_once_some_killed_at_each_fault_point(spark, tmp_path) -> None:
    catalog = tmp_path / "catalog"
    ended = run_writers(catalog, FAULTS)
    assert {t: code for t, (code, _) in ended.items()} == {t: -9 if t in FAULTS else 0 for t in TABLES}, ended
    assert main_tables(catalog) == 0  # sweeps what the killed writers left
    state = Catalog(catalog)
    # killed before its registration's commit: no table; after it: the table, and the save's
    # result only when result.json was replaced
    registered = [t for t in TABLES if t not in ("region", "nation", "supplier")]
    assert sorted(state.tables) == sorted(registered)
    saved = sorted(p.parent.name for p in (catalog / "results").glob("*/result.json"))
    assert saved == sorted(f"r_{t}" for t in registered if t != "customer")
    assert not list(catalog.glob("tables/.tmp-*")) and not list(catalog.glob("log/.tmp-*"))
    on_disk = sorted(p.name for p in (catalog / "tables").iterdir())
    assert on_disk == sorted(Path(state.entry(t).path).name for t in registered)  # no unreferenced data
    for home in (catalog / "results").iterdir():
        stamps = [p.name for p in home.iterdir() if p.is_dir()]
        assert len(stamps) == 1 and (home / "result.json").exists(), home
    for table in ("customer", "region", "nation", "supplier"):  # the killed ones, run again, land
        write(str(catalog), table, f"r_{table}", spark)
    check_catalog(catalog, list(TABLES), spark)


def main_tables(catalog: Path) -> int:
    from dltrace.cli import main

    return main(["tables", "--catalog", str(catalog)])


@pytest.mark.spark
def test_eight_writers_one_at_a_time_without_rename(spark, no_rename) -> None:
    """On a filesystem without rename the documented rule is one writer at a time: so kept,
    every registration and save lands."""
    for table in TABLES:
        write(no_rename, table, f"r_{table}", spark)
    check_catalog(no_rename, list(TABLES), spark)
    assert [p.name for p in no_rename.glob("tables/*")] == sorted(f"{t}-v1.parquet" for t in TABLES)
