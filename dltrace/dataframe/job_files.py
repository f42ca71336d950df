"""The files and tables a job reads and writes under ``dltrace run`` (dltrace/dataframe/jobs.py).

**Reads are sources.**  The first ``spark.read`` of a path registers it as ``dltrace register``
does (Parquet and Delta in place, CSV, JSON and ORC copied), with the reader's own options
and schema, so that the rows and their order are the ones the job's read gives.  The table is
named after the file or directory (``flights.parquet`` is ``flights``; a name another source
holds gets ``_2``, ``_3``, ...), and the job gets ``spark.table(name)``: the same rows.  A
later run over unchanged files finds the registration, ids unchanged; changed files are a new
version of the table, as ``dltrace register`` makes one.

**Writes go where the job writes them.**  A write to a path (``df.write.parquet(path)``,
``.format(f).save(path)``, with mode, options and ``partitionBy``) is a saved step named after
the path's last component, whose rows Spark's own writer then writes to the path with the
job's settings; ``saveAsTable`` also writes the table into Spark's catalog.  A consumer that
never heard of dltrace reads what plain Spark would have written.  Each write is kept in
``written/<result>.json``, so that a later read of the path (by this job or another) is the
step's saved result and lineage composes through files as through tables, when the files
read back with the result's columns and types (Parquet, ORC, Delta; a CSV's text does not,
and its read is a source of its own).
"""

from __future__ import annotations

import itertools
import re
import shutil
import time
from dataclasses import dataclass, field

from dltrace.errors import BadInput, UnsupportedLineage
from dltrace.json_store import JsonStore
from dltrace.registration import Reader, source_fingerprint
from dltrace.storage import Location, location
from dltrace.table_data import backquoted, spark_uri_key
from dltrace.views import owners_of

DIRECTORY = "written"
FILE_FORMATS = ("parquet", "csv", "json", "orc", "delta")
SELF_DESCRIBING = ("parquet", "orc", "delta")  # files that read back with their columns' types


@dataclass
class Written:
    """Where a job wrote a saved result's rows, and how."""

    name: str  # the saved result
    path: str  # a path (Location text) or, for saveAsTable, the table's name in Spark's catalog
    format: str
    mode: str
    partition_by: list[str] = field(default_factory=list)
    options: dict[str, str] = field(default_factory=dict)
    written_at: float = 0.0
    location: str | None = None  # saveAsTable: the managed table's directory Spark wrote
    files: str | None = None  # a path write: the fingerprint of the files written (changed: not ours now)


class WrittenStore(JsonStore[Written]):
    record = Written
    kind = "record of a job's write"

    def __init__(self, catalog) -> None:
        super().__init__(catalog.directory / DIRECTORY)

    def at(self, path: str) -> Written | None:
        """The record of the write to ``path`` (or of the table so named)."""
        return next((record for record in self.all().values() if record.path == path), None)


def table_name(where: Location) -> str:
    """A source's table name: its file or directory name without suffixes, as a SQL name.

    >>> from dltrace.storage import location
    >>> table_name(location("/d/flights.parquet")), table_name(location("/d/2024-orders.csv.gz"))
    ('flights', 't_2024_orders')
    """
    name = re.sub(r"[^a-z0-9_]", "_", where.name.split(".")[0].lower()) or "source"
    return name if re.match(r"[a-z_]", name) else f"t_{name}"


def free_name(lineage, wanted: str, ours) -> str:
    """``wanted``, or ``wanted_2``, ``wanted_3``, ...: the first that no table, saved result or
    view holds, or that ``ours(name)`` says already stands for the same thing."""
    views = lineage.views()
    for number in itertools.count(1):
        name = wanted if number == 1 else f"{wanted}_{number}"
        if not owners_of(name, lineage.catalog.tables, lineage.store.exists, views) or ours(name):
            return name
    raise AssertionError("unreachable")


def file_format(fmt: str | None, where: Location) -> str:
    """The format a read or write names (Spark's default: Parquet), refused when dltrace cannot
    register or trace it."""
    fmt = (fmt or "parquet").lower()
    if fmt not in FILE_FORMATS:
        raise UnsupportedLineage(f"{fmt} files ({where}): dltrace reads and writes {', '.join(FILE_FORMATS)}")
    return fmt


def source_table(lineage, fmt: str, where: Location, as_read: Reader) -> tuple[str, str]:
    """Register ``where`` as read (or find it registered): its table's name, and what was done."""
    source = str(where)
    name = free_name(lineage, table_name(where),
                     lambda n: n in lineage.catalog.tables and lineage.catalog.tables[n].source == source)
    before = lineage.catalog.tables.get(name)
    copy = fmt == "parquet" and bool(as_read.schema)  # a schema of the job's own: its rows copied as read
    if fmt == "delta":
        options = {key.lower(): value for key, value in as_read.options.items()}
        if "timestampasof" in options:
            raise UnsupportedLineage(f"spark.read of Delta table {where} as of a timestamp: read it with "
                                     f"versionAsOf, which dltrace registers")
        version = int(options["versionasof"]) if "versionasof" in options else None
        entry = lineage.register(name, source, version=version)
    else:
        entry = lineage.register(name, source, format=fmt, copy=copy, as_read=as_read)
    if before is not None and before.version == entry.version:
        return name, f"table {name} (registered, unchanged)"
    how = "in place" if entry.files else "copied"
    again = f", version {entry.version}" if before is not None else ""
    return name, f"registered as table {name} ({entry.rows} rows, {how}{again})"


def job_location(path: str, what: str) -> Location:
    """A job's path as a ``Location``: ``file:/p`` (Spark's own spelling) is the local ``/p``."""
    return location(spark_uri_key(path) if path.startswith("file:") else path, what)


def files_now(where: Location, fmt: str) -> str:
    """A digest of the files at ``where`` (names, sizes, modification times)."""
    return source_fingerprint(where, fmt, {})


def written_result(lineage, spark, fmt: str, where: Location, as_read: Reader):
    """The saved result a step wrote at ``where``, as the job's read of it gives it (its
    columns in the files' order), or None when the files are not the result's rows as written
    (another format, a schema of the reader's, files changed since, other columns or types)."""
    record = WrittenStore(lineage.catalog).at(str(where))
    if record is None or fmt not in SELF_DESCRIBING or record.format != fmt or as_read.schema \
            or not lineage.store.exists(record.name) or not written_here(record, where):
        return None
    result = lineage.store.get(record.name)
    read = spark.read.format(fmt).options(**as_read.options).load(str(where))
    files = [(f.name, f.dataType.simpleString()) for f in read.schema.fields]
    kept = {name.lower(): result.schema.get(name) for name in result.query_columns}
    if sorted((name.lower(), kind) for name, kind in files) != sorted(kept.items()):
        return None
    return spark.table(record.name).select(*[backquoted(name) for name, _ in files])


def output_name(lineage, wanted: str, path: str) -> str:
    """The saved result's name for a write to ``path``: the name it had when written there
    before, else ``wanted`` made free."""
    record = WrittenStore(lineage.catalog).at(path)
    if record is not None and lineage.store.exists(record.name):
        return record.name
    return free_name(lineage, wanted, lambda name: False)


def write_action(mode: str | None, exists: bool, what: str) -> bool:
    """Whether a write in ``mode`` goes ahead (False: ``ignore`` over what exists); refused
    before any work when it cannot: an append (a saved result is one whole), or ``error``
    over what exists (as Spark refuses it)."""
    mode = (mode or "errorifexists").lower()
    if mode == "append":
        raise UnsupportedLineage(f"{what} in mode 'append': a result with lineage is saved whole; "
                                 f"write it with mode 'overwrite'")
    if mode in ("error", "errorifexists", "default") and exists:
        raise BadInput(f"{what}: it already exists (mode 'errorifexists', as Spark refuses it): "
                       f"use .mode('overwrite')")
    if mode not in ("error", "errorifexists", "default", "ignore", "overwrite"):
        raise BadInput(f"{what}: unknown save mode '{mode}'")
    return not (mode == "ignore" and exists)


def saved_rows(lineage, spark, name: str):
    """Saved result ``name``'s query columns in its own row order, as a DataFrame of ``spark``."""
    return spark.sql(lineage.store.ordered_sql(lineage.store.get(name)))


def record_write(lineage, name: str, path: str, fmt: str, mode: str | None, partition_by: list[str],
                 options: dict[str, str], table_location: str | None = None, files: str | None = None) -> None:
    WrittenStore(lineage.catalog).write(Written(name, path, fmt, (mode or "errorifexists").lower(),
                                                list(partition_by), dict(options), time.time(), table_location,
                                                files))


def written_here(record: Written | None, where: Location) -> bool:
    """Whether the files at ``where`` are still the rows of ``record``'s result dltrace wrote there."""
    return record is not None and record.path == str(where) and record.files == files_now(where, record.format)


def check_result_of(lineage, result: str, table: str) -> None:
    """Refuse a ``saveAsTable`` whose result name is the result of a write to a path."""
    record = WrittenStore(lineage.catalog).all().get(result)
    if record is not None and record.path != table:
        raise BadInput(f"saveAsTable({table!r}): result {result} holds the rows the job wrote to {record.path}: "
                       f"name the table otherwise")


def check_whole_write(spark, options: dict[str, str], path: str) -> None:
    """Refuse an overwrite of part of a path (dynamic partition overwrite, Delta's
    ``replaceWhere``): the saved result would not be what the path then holds."""
    lowered = {key.lower(): value for key, value in options.items()}
    dynamic = (lowered.get("partitionoverwritemode") or spark.conf.get(
        "spark.sql.sources.partitionOverwriteMode", "static")).lower() == "dynamic"
    if dynamic or "replacewhere" in lowered:
        raise UnsupportedLineage(f"writing {path}: an overwrite of some partitions (dynamic partitionOverwriteMode, "
                                 f"replaceWhere) leaves rows of another run beside this one's; overwrite it whole")


def check_not_a_source(lineage, where: Location, path: str) -> None:
    """Refuse a write into the files of a table registered in place (as Spark refuses to
    overwrite a path it reads): its ids would name other rows."""
    for name, entry in lineage.catalog.tables.items():
        source = entry.source.rstrip("/")
        target = str(where).rstrip("/")
        if entry.files and (source == target or source.startswith(target + "/") or target.startswith(source + "/")):
            raise BadInput(f"writing {path}: it holds the files of table {name}, registered in place: write "
                           f"elsewhere")


def settings_changed(job_session, engine) -> dict[str, str]:
    """The Spark SQL settings the job's session has and dltrace's engine does not (a time
    zone, ANSI mode, ...): the step is computed with them."""
    theirs, ours = job_session.conf.getAll, engine.conf.getAll
    return {key: value for key, value in theirs.items()
            if key.startswith("spark.sql.") and ours.get(key) != value and job_session.conf.isModifiable(key)}


def in_spark_catalog(spark, name: str) -> str:
    """Table ``name`` of a ``saveAsTable`` as Spark's catalog names it (``catalog.db.name``):
    the bare name is the temporary view dltrace defines for the saved result."""
    if "." in name:
        return name
    return f"{spark.catalog.currentCatalog()}.{spark.catalog.currentDatabase()}.{name}"


def table_location(spark, table: str) -> str | None:
    """The directory of Spark's table ``table``, as ``DESCRIBE TABLE EXTENDED`` says."""
    rows = spark.sql(f"DESCRIBE TABLE EXTENDED {table}").collect()
    return next((row[1] for row in rows if row[0] == "Location"), None)


def clear_own_table_location(lineage, spark, name: str, table: str) -> None:
    """Before ``saveAsTable(name)`` writes Spark's ``table``: when Spark's catalog does not know
    it but its directory is there because an earlier run of dltrace wrote it (Spark's
    in-memory catalog forgets tables, then refuses the name), remove that directory."""
    record = WrittenStore(lineage.catalog).at(name.lower())
    if record is None or not record.location or spark.catalog.tableExists(table):
        return
    where = location(spark_uri_key(record.location), "table")
    if where.local and where.is_dir():
        shutil.rmtree(where.path)
