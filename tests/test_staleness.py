"""Honest staleness of results over tables registered in place (dltrace/staleness.py): a
changed file shows at once, named, before anyone registers again; after a new registration
the old results say their rows are gone and must be computed again; no command prints part
of an answer before it fails."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from dltrace import LineageSession
from dltrace.cli import main
from dltrace.errors import SourceChanged
from tests.test_in_place import split_nation

pytestmark = pytest.mark.spark


@pytest.fixture
def saved(spark, tmp_path) -> tuple[LineageSession, Path]:
    """Nation registered in place from three files (a, b, c), result ``names`` saved from it
    and ``counted`` from ``names``."""
    split_nation(tmp_path / "nation")
    session = LineageSession(tmp_path / "catalog", spark=spark)
    session.register("nation", tmp_path / "nation")
    session.save(session.sql("SELECT n_regionkey, n_name FROM nation WHERE n_nationkey < 20"), "names")
    session.save(session.sql("SELECT n_regionkey, count(*) AS n FROM names GROUP BY n_regionkey"), "counted")
    assert session.stale_results() == {}
    return session, tmp_path / "catalog"


@pytest.fixture
def changed(saved) -> tuple[LineageSession, Path]:
    """``saved``, then file b.parquet rewritten (a new modification time)."""
    file = saved[1].parent / "nation" / "b.parquet"
    stat = file.stat()
    os.utime(file, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    return saved


def cli(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_a_changed_file_shows_its_results_stale_naming_it(changed, capsys) -> None:
    session, catalog = changed
    stale = session.stale_results()
    assert set(stale) == {"names", "counted"}
    assert "its file" in stale["names"] and "b.parquet changed since" in stale["names"]
    assert stale["counted"].startswith("through result names: ") and "b.parquet" in stale["counted"]
    code, out, _ = cli(capsys, "results", "--catalog", str(catalog), "--format", "json")
    listed = {record["name"]: record["stale"] for record in map(json.loads, out.splitlines())} if code == 0 else {}
    assert code == 0 and "b.parquet changed since" in listed["names"], out


def test_a_file_gone_shows_too(saved) -> None:
    session, catalog = saved
    (catalog.parent / "nation" / "c.parquet").unlink()
    assert "c.parquet is gone" in session.stale_results()["names"]


def test_after_a_new_registration_old_results_must_be_computed_again(changed, capsys) -> None:
    session, catalog = changed
    assert session.register("nation", catalog.parent / "nation").version == 2
    assert set(session.stale_results()) == {"names", "counted"}
    assert "table nation changed (v1 -> v2)" in session.stale_results()["names"]
    with pytest.raises(SourceChanged, match=r"data version v1 are gone, so what was computed from them must be "
                                            r"computed again") as raised:
        session.explain("names", 0)
    assert "register it again" not in str(raised.value)
    # explain through a saved result prints a header line first: not before failing
    code, out, err = cli(capsys, "explain", "--result", "counted", "--row", "0", "--catalog", str(catalog))
    assert (code, out) == (1, "") and len(err.strip().splitlines()) == 1 and "computed again" in err, (out, err)
    code, out, err = cli(capsys, "impact", "--source", "nation@v1 WHERE n_nationkey = 1", "--catalog", str(catalog))
    assert (code, out) == (1, "") and "computed again" in err and "register it again" not in err, (out, err)
