"""Leftovers of writes that were killed (SIGKILL, power loss): removed by the next command.

Every write in a catalog goes to a temporary name that carries the writer's process id and
is renamed into place (or recorded in metadata) only when complete, so a killed write leaves
the previous state intact plus some garbage.  ``sweep`` deletes the garbage of writers that
are no longer running; a live writer's files are never touched, so two processes may share
a catalog.  Temporary names (``<pid>`` is the writer's process id)::

    tables/.tmp-<name>-<pid>-<ns>/            a registration's data before the rename
    indexes/.tmp-<index>-<pid>-<ns>/          a key index before the rename
    .catalog-<pid>-*.json                     catalog.json before the rename
    results/<name>/<stamp>-p<pid>/            a save's data before result.json names it
    results/<name>/.result-<pid>-*.json       result.json before the rename
    tables/.dropped-<name>-<pid>-<ns>/        what a table drop renamed away (the drop is done)
    results/.dropped-<name>-<ns>/             what a result drop renamed away
    samples/.tmp-<name>-<pid>-<ns>/           a table sample before the rename
    views/.<name>-<pid>-*.tmp, udfs/...       a view's or UDF's JSON before the rename

On an object store, which has no rename (``dltrace.storage``), directories are written at
their final names and metadata in one upload: nothing temporary is left there but the data of
a save that no ``result.json`` names, which is swept the same way.
"""

from __future__ import annotations

import json
import os
import posixpath
import re
import time
from collections.abc import Callable

from dltrace.storage import Location

PID = re.compile(r"-p?(\d+)-")  # the writer's pid in a temporary name
STAMP_PID = re.compile(r"-p(\d+)$")


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
    tmp = target.parent / f".tmp-{target.name}-{os.getpid()}-{time.time_ns()}"
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
    """``target`` holds ``record`` as JSON, written under a temporary name (``.<name>-<pid>-*``,
    swept if the writer dies) and renamed over the old file: a reader sees one or the other."""
    target.write_atomically(json.dumps(record, indent=2), f".{target.stem}-{os.getpid()}-{time.time_ns()}.tmp")


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


def _dead_writer(name: str, pattern: re.Pattern = PID) -> bool:
    match = pattern.search(name)
    return match is None or not pid_alive(int(match.group(1)))


def sweep(directory: Location) -> None:
    """Delete what killed writers left in catalog ``directory``."""
    if not directory.is_dir():
        return
    for pattern in (".catalog-*.json", "tables/.tmp-*", "indexes/.tmp-*", "tables/.dropped-*", "results/.dropped-*",
                    "views/.*.tmp", "udfs/.*.tmp", "samples/.tmp-*"):
        for path in directory.glob(pattern):
            if _dead_writer(path.name):
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
        if _dead_writer(tmp.name):
            tmp.remove()
    metadata = home / "result.json"
    try:
        referenced = posixpath.basename(posixpath.dirname(json.loads(metadata.read_text())["data"]))
    except FileNotFoundError:
        referenced = None
    except (OSError, ValueError, KeyError, TypeError):
        return  # a damaged result.json: reported when it is read, its data left alone
    for child in home.iterdir():
        if child.is_dir() and child.name not in kept | {referenced} and _dead_writer(child.name, STAMP_PID):
            child.remove()
    if referenced is None and not home.iterdir():
        home.remove()
