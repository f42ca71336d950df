"""Leftovers of writes that were killed (SIGKILL, power loss): removed by the next command.

Every write in a catalog goes to a temporary name that carries the writer (``<writer>``:
``w<host>_<pid>``, the host name's letters and digits and the process id) and is renamed
into place (or recorded in metadata) only when complete, so a killed write leaves the
previous state intact plus some garbage.  ``sweep`` deletes the garbage of writers that are
no longer running: on this host, a process that is gone; on another host, whose processes
cannot be asked, a temporary older than ``FOREIGN_AGE`` (a day).  A live writer's files are
never touched, so processes on any number of hosts may share a catalog.  Temporary names
(names written before writers carried their host have ``<pid>`` alone, taken as this host's)::

    tables/.tmp-<name>-<writer>-<ns>/         a registration's data before the rename
    tables/<name>-v<k>.parquet/_writer        data renamed into place: removed while no catalog
                                              version names it and its writer is gone
    indexes/.tmp-<index>-<writer>-<ns>/       a key index before the rename
    log/.tmp-<version>-<writer>-<ns>/         a catalog commit before its exclusive rename
    .catalog-<writer>-*.json                  catalog.json before the rename
    results/<name>/<stamp>-p<writer>/         a save's data before result.json names it
    results/<name>/.result-<writer>-*.json    result.json before the rename
    tables/.dropped-<name>-<writer>-<ns>/     what a table drop renamed away (the drop is done)
    results/.dropped-<name>-<ns>/             what a result drop renamed away
    samples/.tmp-<name>-<writer>-<ns>/        a table sample before the rename
    views/.<name>-<writer>-*.tmp, udfs/...    a view's or UDF's JSON before the rename

On an object store, which has no rename (``dltrace.storage``), directories are written at
their final names and metadata in one upload: nothing temporary is left there but the data of
a save that no ``result.json`` names, which is swept the same way.
"""

from __future__ import annotations

import json
import os
import posixpath
import re
import socket
import time
from collections.abc import Callable

from dltrace.storage import Location

HOST = re.sub(r"[^A-Za-z0-9]", "", socket.gethostname())[:40] or "host"
WRITER = re.compile(r"-p?w([A-Za-z0-9]+)_(\d+)(?=[-.]|$)")  # the writer in a temporary name
PID = re.compile(r"-p?(\d+)-")  # a writer's pid alone: names written before writers carried their host
STAMP_PID = re.compile(r"-p(\d+)$")
WRITER_FILE = "_writer"  # names the writer inside data renamed into place before its commit
FOREIGN_AGE = 24 * 3600  # seconds after which another host's temporary counts as a dead writer's


def writer() -> str:
    """This process as temporary names carry it: ``w<host>_<pid>``."""
    return f"w{HOST}_{os.getpid()}"


def temporary_name(prefix: str, suffix: str = "") -> str:
    """``<prefix>-<writer>-<ns><suffix>``: a name no other writer (process, host) will choose."""
    return f"{prefix}-{writer()}-{time.time_ns()}{suffix}"


def build_once(target: Location, write: Callable[[Location], None]) -> Location:
    """``target``, a directory derived from catalog data (a key index, a table sample):
    ``write(tmp)`` writes it under a temporary name (``.tmp-<name>-<pid>-<ns>``, swept if
    the writer dies) that is renamed into place; a concurrent build that finished first wins.
    Without an atomic rename (object stores) it is written at ``target``, complete once
    Spark's ``_SUCCESS`` marker is there."""
    if target.complete():
        return target
    if not target.atomic_rename:
        write(target)
        return target
    tmp = target.parent / temporary_name(f".tmp-{target.name}")
    tmp.parent.mkdir()
    try:
        write(tmp)
        tmp.rename(target)
    except OSError:
        if not target.exists():  # not a concurrent build that finished first
            raise
    finally:
        tmp.remove()
    return target


def write_json_atomically(target: Location, record: dict) -> None:
    """``target`` holds ``record`` as JSON, written under a temporary name (``.<name>-<writer>-*``,
    swept if the writer dies) and renamed over the old file: a reader sees one or the other."""
    target.write_atomically(json.dumps(record, indent=2), temporary_name(f".{target.stem}", ".tmp"))


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` runs (a reused pid only postpones a cleanup)."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def dead_writer(path: Location, legacy: re.Pattern = PID, name: str | None = None) -> bool:
    """Whether the writer named in temporary ``path``'s name (or ``name``) is gone: a process
    of this host that no longer runs, or, on another host, a temporary older than
    ``FOREIGN_AGE``; a name without a writer (``legacy``: the pid alone) is this host's."""
    name = name or path.name
    match = WRITER.search(name)
    if match is None:
        match = legacy.search(name)
        return match is None or not pid_alive(int(match.group(1)))
    if match.group(1) != HOST:
        return time.time() - path.info().mtime.timestamp() > FOREIGN_AGE
    return not pid_alive(int(match.group(2)))


def sweep_tables(directory: Location, referenced: set[str]) -> None:
    """Delete the table data a registration renamed into place and did not commit (it was
    killed between the two): no catalog version names it (``referenced``: paths relative to
    the catalog) and the writer in its ``_writer`` file is gone."""
    for data in directory.glob("tables/*.parquet"):
        marker = data / WRITER_FILE
        if data.relative_to(directory) not in referenced and marker.exists():
            try:
                tag = marker.read_text().strip()
            except FileNotFoundError:
                continue  # removed meanwhile
            if dead_writer(marker, name=f"-{tag}"):
                data.remove()


def sweep(directory: Location) -> None:
    """Delete what killed writers left in catalog ``directory``."""
    if not directory.is_dir():
        return
    for pattern in (".catalog-*.json", "tables/.tmp-*", "indexes/.tmp-*", "tables/.dropped-*", "results/.dropped-*",
                    "views/.*.tmp", "udfs/.*.tmp", "samples/.tmp-*", "log/.tmp-*"):
        for path in directory.glob(pattern):
            if dead_writer(path):
                path.remove()
    kept = referenced_saves(directory / "results")
    if kept is None:
        return  # a result's metadata is unreadable: reported when read; no save is swept
    for home in directory.glob("results/*"):
        if home.is_dir():
            _sweep_result(home, {stamp for name, stamp in kept if name == home.name})


def referenced_saves(results: Location) -> set[tuple[str, str]] | None:
    """``(result, stamp)`` of every earlier save whose rows a current result names in its
    lineage (``references``), directly or through other such saves: their data must stay
    (dltrace/results.py, "References").  Each save keeps a copy of its metadata beside its
    data (``<stamp>/result.json``), which says what that save references.  None when a
    metadata file cannot be read: then what it names is unknown, and no earlier save may go."""
    pending: list[tuple[str, str]] = []
    for metadata in results.glob("*/result.json"):
        named = _references(metadata)
        if named is None:
            return None
        pending.extend(named)
    kept: set[tuple[str, str]] = set()
    while pending:
        save = pending.pop()
        if save not in kept:
            kept.add(save)
            named = _references(results / save[0] / save[1] / "result.json")
            if named is None:
                return None
            pending.extend(named)
    return kept


def _references(metadata: Location) -> list[tuple[str, str]] | None:
    """The saves a result's metadata names, [] without the file (a save made before
    references), None when it cannot be read."""
    try:
        data = json.loads(metadata.read_text())
        stamps = data.get("results", {})
        return [(name, stamps[name]) for name in data.get("references", {}) if name in stamps]
    except FileNotFoundError:
        return []
    except (OSError, ValueError, TypeError, AttributeError):
        return None


def _sweep_result(home: Location, kept: set[str]) -> None:
    """A saved result's directory: data no ``result.json`` names (nor a later save references),
    written by dead processes."""
    for tmp in home.glob(".result-*.json"):
        if dead_writer(tmp):
            tmp.remove()
    metadata = home / "result.json"
    try:
        referenced = posixpath.basename(posixpath.dirname(json.loads(metadata.read_text())["data"]))
    except FileNotFoundError:
        referenced = None
    except (OSError, ValueError, KeyError, TypeError):
        return  # a damaged result.json: reported when it is read, its data left alone
    for child in home.iterdir():
        if child.is_dir() and child.name not in kept | {referenced} and dead_writer(child, STAMP_PID):
            child.remove()
    if referenced is None and not home.iterdir():
        home.remove()
