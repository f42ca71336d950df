"""Deleting the data of saves nothing names any more: a result saved again or dropped leaves
its earlier saves, kept only while a result references them (``recovery.referenced_saves``).
A save another live process is still writing is never deleted: only this process's own
and dead writers' (``recovery.dead_writer``); the sweep removes the rest once their writers
are gone."""

from __future__ import annotations

from collections.abc import Callable

from dltrace.recovery import STAMP_PID, dead_writer, writer
from dltrace.result_format import METADATA, SavedResult
from dltrace.storage import Location


def remove_unreferenced(home: Location, keep: str | None, referenced: set[tuple[str, str]] | None) -> None:
    """Delete the data of a result's earlier saves (in its directory ``home``, and of saves
    that failed half way) but ``keep`` and those a result references (``referenced``)."""
    if referenced is None:
        return  # a result's metadata is unreadable: what it names is unknown, nothing goes
    kept = {stamp for result, stamp in referenced if result == home.name}
    for child in home.iterdir():
        if (child.is_dir() and child.name != keep and child.name not in kept
                and (child.name.endswith(f"-p{writer()}") or dead_writer(child, STAMP_PID))):
            child.remove()


def remove_unreferenced_upstream(results: Location, replaced: SavedResult, kept: set[tuple[str, str]] | None,
                                 read: Callable[[Location], SavedResult]) -> None:
    """After ``replaced`` was saved again or dropped: the earlier saves it alone kept for its
    references (and those they kept) are deleted (``read``: a ``result.json``'s metadata)."""
    if kept is None:
        return
    pending = [(n, replaced.results[n]) for n in replaced.references if n in replaced.results]
    while pending:
        name, stamp = pending.pop()
        data = results / name / stamp
        current = results / name / METADATA
        if (name, stamp) in kept or (current.exists() and read(current).stamp == stamp) or not data.exists():
            continue
        metadata = data / METADATA
        if metadata.exists():
            earlier = read(metadata)
            pending.extend((n, earlier.results[n]) for n in earlier.references if n in earlier.results)
        data.remove()
