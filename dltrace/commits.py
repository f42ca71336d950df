"""The catalog's commit log: one entry per catalog version, created only if absent, so that
writers in any number of processes and hosts never overwrite each other (docs/formats.md,
"Sharing a catalog").

Layout inside the catalog directory::

    log/<version, 20 digits>/commit-<writer>.json    the whole catalog at that version

A writer that read version N proposes N + 1.  Where the filesystem renames atomically
(local disks, HDFS) the entry is written as a temporary directory and renamed to
``log/<N+1>``: a rename onto an existing entry fails (a local disk: the directory is not
empty) or moves the temporary directory inside it (HDFS), and either way the writer finds
that ``log/<N+1>`` does not hold its own file, so it lost: it reads the newer version and
tries again.  Object stores have no rename and pyarrow offers no conditional write, so
there one writer at a time is required: a writer puts its file in ``log/<N+1>/`` (a name
no other writer uses) and lists the entry, and when another writer's file is there too it
withdraws its own and fails (``ConcurrentWriters``); a reader that finds two files in the
newest entry fails the same way rather than pick one.
"""

from __future__ import annotations

import re

from dltrace.errors import CatalogError
from dltrace.recovery import temporary_name, writer
from dltrace.storage import Location

DIRECTORY = "log"
ENTRY = re.compile(r"^commit-(.+)\.json$")
KEEP = 20  # versions kept below the newest: a reader that listed the log before a prune still finds its entry


class ConcurrentWriters(CatalogError):
    """Two writers committed the same catalog version on a filesystem without an atomic create."""


def entry_name(version: int) -> str:
    return f"{version:020d}"


def commit_files(log: Location, version: int) -> list[Location]:
    """The commit files of ``version``: one, or none while nothing committed it."""
    return [f for f in (log / entry_name(version)).iterdir() if ENTRY.match(f.name)]


def publish(log: Location, version: int, text: str) -> bool:
    """Create ``version``'s entry holding ``text`` unless it exists: whether this writer created it."""
    target = log / entry_name(version)
    mine = target / f"commit-{writer()}.json"
    if not target.atomic_rename:
        return _publish_without_rename(log, version, mine, text)
    tmp = log / temporary_name(f".tmp-{version}")
    (tmp / mine.name).parent.mkdir()
    try:
        (tmp / mine.name).write_text(text)
        tmp.rename(target)
    except OSError:
        if not target.exists():
            raise
        return False  # a local disk: renaming onto a committed entry (not empty) fails
    finally:
        tmp.remove()
    if mine.exists():
        return True
    (target / tmp.name).remove()  # HDFS moved it into the committed entry
    return False


def _publish_without_rename(log: Location, version: int, mine: Location, text: str) -> bool:
    if commit_files(log, version):
        return False
    mine.parent.mkdir()
    mine.write_text(text)
    if [f for f in commit_files(log, version) if f.name != mine.name]:
        mine.unlink()
        raise ConcurrentWriters(
            f"{log.parent}: another writer committed catalog version {version} at the same time; on a filesystem "
            f"without an atomic rename (an object store) one writer at a time is required (docs/formats.md, "
            f"\"Sharing a catalog\"): run the command again once the other has finished"
        )
    return True


def latest(log: Location) -> tuple[int, Location] | None:
    """The newest committed version and its file; None when the log is empty or absent."""
    versions = sorted((int(p.name) for p in log.iterdir() if p.name.isdigit()), reverse=True)
    for version in versions:
        files = commit_files(log, version)
        if len(files) > 1:
            raise ConcurrentWriters(
                f"{log.parent}: catalog version {version} was committed by {len(files)} writers at once "
                f"({', '.join(f.name for f in files)}): on a filesystem without an atomic rename one writer at a time "
                f"is required (docs/formats.md, \"Sharing a catalog\"); remove the entry of the writer whose "
                f"command failed"
            )
        if files:
            return version, files[0]
    return None


def prune(log: Location, newest: int) -> None:
    """Delete the entries more than ``KEEP`` versions below ``newest`` (catalog.json and the
    newer entries hold everything they held)."""
    for path in log.iterdir():
        if path.name.isdigit() and int(path.name) < newest - KEEP:
            path.remove()
