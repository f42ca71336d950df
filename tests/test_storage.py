"""The catalog's filesystem layer (dltrace/storage.py): local paths and ``file://`` URIs name the
same absolute place, metadata is replaced atomically, and a filesystem without rename (an
object store, here pyarrow's in-memory mock filesystem) gets its writes in place."""

from __future__ import annotations

import json
import os

import pytest
from pyarrow.fs import _MockFileSystem

from dltrace.catalog import Catalog
from dltrace.errors import BadInput
from dltrace.recovery import build_once, sweep, write_json_atomically
from dltrace.storage import Location, glob, location


def test_a_relative_catalog_is_absolute_before_anything_reaches_spark(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    catalog = Catalog()
    assert str(catalog.directory) == os.path.realpath(tmp_path / ".dltrace")
    assert catalog.directory.prefix == ""  # Spark gets the plain path, as before


def test_a_file_uri_names_the_same_catalog(tmp_path) -> None:
    plain = Catalog(tmp_path / "cat")
    plain.commit(lambda catalog: catalog.retired_codes.append(3))
    uri = Catalog(f"file://{tmp_path}/cat")
    assert str(uri.directory) == f"file://{os.path.realpath(tmp_path)}/cat"
    assert (uri.version, uri.retired_codes) == (1, [3])
    assert os.fspath(uri.directory) == os.fspath(plain.directory)


def test_metadata_is_replaced_through_a_temporary_file(tmp_path) -> None:
    target = location(tmp_path) / "views" / "v.json"
    write_json_atomically(target, {"a": 1})
    write_json_atomically(target, {"a": 2})
    assert json.loads(target.read_text()) == {"a": 2}
    assert [p.name for p in target.parent.iterdir()] == ["v.json"]  # no temporary file left


def test_glob_follows_glob_glob(tmp_path) -> None:
    for name in ("a.parquet", "b.parquet", ".hidden.parquet", "c.csv"):
        (tmp_path / name).write_text("x")
    assert [p.name for p in glob(location(tmp_path / "*.parquet"))] == ["a.parquet", "b.parquet"]
    assert [p.name for p in location(tmp_path).glob(".*.parquet")] == [".hidden.parquet"]
    assert location(tmp_path / "nowhere").glob("*") == []


def test_killed_writers_leftovers_are_swept(tmp_path) -> None:
    catalog = location(tmp_path)
    dead = 2**22 + 1  # above the usual pid_max: no such process
    (catalog / "tables" / f".tmp-t-{dead}-1").mkdir()
    (catalog / "tables" / f".tmp-t-{dead}-1" / "part.parquet").write_text("x")
    (catalog / f".catalog-{dead}-1.json").write_text("{}")
    (catalog / "results" / "r" / f"20250101T000000-000000001-p{dead}").mkdir()
    sweep(catalog)
    assert catalog.glob("tables/.tmp-*") == [] and catalog.glob(".catalog-*") == []
    assert not (catalog / "results" / "r").exists()


def test_an_unknown_scheme_is_bad_input() -> None:
    with pytest.raises(BadInput, match="no filesystem for nosuch://"):
        Catalog("nosuch://host/catalog")


@pytest.fixture
def object_store() -> Location:
    """A filesystem without rename, as pyarrow sees an object store."""
    store = Location(_MockFileSystem(), "bucket/catalog", "mock://")
    assert not store.atomic_rename
    return store


def test_without_rename_metadata_is_one_write(object_store) -> None:
    target = object_store / "catalog.json"
    target.write_atomically("{}", ".catalog-1-1.json")
    assert target.read_text() == "{}" and [p.name for p in object_store.iterdir()] == ["catalog.json"]


def test_without_rename_a_derived_directory_is_complete_with_its_marker(object_store) -> None:
    target = object_store / "indexes" / "t-v1-key-x.parquet"
    written = []

    def write(where: Location) -> None:
        written.append(str(where))
        where.mkdir()  # as Spark's writer does
        (where / "part-0.parquet").write_text("x")

    build_once(target, write)
    assert written == [str(target)]  # in place, no temporary name
    assert not target.complete()  # a writer killed before its _SUCCESS: built again
    build_once(target, write)
    assert len(written) == 2
    (target / "_SUCCESS").write_text("")
    build_once(target, write)
    assert target.complete() and len(written) == 2


def test_a_reader_waits_out_a_replacing_rename(object_store) -> None:
    """HDFS replaces a file by a delete then a rename: a reader that finds no file while a
    writer's temporary file is beside it tries again (here a mock filesystem without rename
    plays the store; the window is made by hand)."""
    import threading

    target = object_store / "catalog.json"
    object_store.mkdir()
    (object_store / ".catalog-1-1.json").write_text("{}")
    (object_store / "staged.json").write_text("{\"version\": 2}")
    # published whole (a copy, under the mock's lock), as a rename publishes it on HDFS
    threading.Timer(0.2, object_store.fs.copy_file, [(object_store / "staged.json").path, target.path]).start()
    assert json.loads(target.read_text()) == {"version": 2}
    target.unlink()
    (object_store / ".catalog-1-1.json").unlink()
    with pytest.raises(FileNotFoundError):
        target.read_text()  # no writer: missing at once
