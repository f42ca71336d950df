"""Delta Lake tables as sources: a directory holding ``_delta_log`` is registered in place from
the live files of one version of its log, read with ``deltalake`` (delta-rs, the optional
extra ``dltrace[delta]``; imported only when a Delta table is met).

The files come in the log's order (``DeltaTable.file_uris``), so ids are positions in the
live files of that version; the catalog entry records the version (``delta``) and, unless
``--version`` pinned it, a newer version of the log is a changed source (like a changed
in-place file).  Refused in one line: a partitioned table (its partition columns live in the
log, not the files), column mapping (the files' column names are not the table's) and files
that carry deletion vectors (a file's rows include rows the log deleted).
"""

from __future__ import annotations

import re

from dltrace.errors import BadInput
from dltrace.storage import Location, location

INSTALL = "pip install 'dltrace[delta]'"
COMMIT = re.compile(r"^\d{20}\.json$")


def is_delta(source: Location) -> bool:
    """Whether ``source`` is a Delta table's directory (it holds ``_delta_log``)."""
    try:
        return source.is_dir() and (source / "_delta_log").is_dir()
    except OSError:
        return False


def _open(path: str, version: int | None = None):
    try:
        from deltalake import DeltaTable
    except ImportError:
        raise BadInput(f"{path} is a Delta table (it has a _delta_log), and reading one needs deltalake: "
                       f"{INSTALL}") from None
    try:
        return DeltaTable(path, version=version)
    except Exception as error:  # noqa: BLE001 - delta-rs raises its own errors and OSError
        message = str(error).splitlines()[0] if str(error) else type(error).__name__
        at = f" at version {version}" if version is not None else ""
        raise BadInput(f"cannot read the Delta table {path}{at}: {message}") from None


def live_files(path: str, version: int | None = None) -> tuple[int, list[Location]]:
    """``(version, files)``: the live data files of ``version`` (None: the newest) in the
    log's order; refused when they cannot be read as plain Parquet (module docstring)."""
    if version is not None and not 0 <= version <= (newest := newest_version(path)):
        raise BadInput(f"--version {version}: the Delta table {path} has no such version (its newest is {newest})")
    table = _open(path, version)
    metadata = table.metadata()
    if metadata.partition_columns:
        raise BadInput(f"{path} is a Delta table partitioned by {', '.join(metadata.partition_columns)}: "
                       "dltrace reads Delta files in place and cannot take partition values from the log yet")
    mode = metadata.configuration.get("delta.columnMapping.mode", "none")
    if mode != "none":
        raise BadInput(f"{path} is a Delta table with column mapping ({mode}): its files' column names are not "
                       "the table's, so dltrace cannot read them in place")
    import pyarrow as pa

    vectors = pa.table(table.deletion_vectors())
    if vectors.num_rows:
        first = vectors.column("filepath")[0].as_py()
        raise BadInput(f"{path}: version {table.version()} has deletion vectors ({first} and "
                       f"{vectors.num_rows - 1} other files hold rows the log deleted): dltrace reads files "
                       "whole, so it would trace deleted rows; rewrite them first (e.g. OPTIMIZE ... "
                       "or REORG TABLE ... APPLY (PURGE) in Spark with Delta)")
    return table.version(), [location(uri, "source") for uri in table.file_uris()]


def newest_version(path: str) -> int:
    """The version of the newest commit in a Delta table's log: its highest-numbered
    ``_delta_log/<20 digits>.json`` (log clean-up removes old commits, never the newest), a
    listing of one directory, neither deltalake nor the table's state needed."""
    commits = [int(p.name[:20]) for p in (location(path, "source") / "_delta_log").iterdir()
               if COMMIT.match(p.name)]
    return max(commits, default=-1)


def changed(name: str, source: str, recorded: dict) -> str | None:
    """Why a Delta table registered at ``recorded["version"]`` (not pinned) changed since:
    a newer version of its log; None when it did not (or the version was pinned)."""
    if recorded.get("pinned"):
        return None
    newest = newest_version(source)
    if newest == recorded["version"]:
        return None
    return (f"table {name} is Delta table {source} registered at version {recorded['version']}, and its log is at "
            f"version {newest} now: register it again (`dltrace register {name} {source}`)")
