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
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field

from sqlglot import exp

from dltrace.errors import BadInput, UnsupportedLineage
from dltrace.json_store import JsonStore
from dltrace.registration import Reader, source_fingerprint
from dltrace.rewriter import parse
from dltrace.storage import Location, found, location
from dltrace.table_data import backquoted, spark_uri_key
from dltrace.views import owners_of

DIRECTORY = "written"
FILE_FORMATS = ("parquet", "csv", "json", "orc", "delta")
SELF_DESCRIBING = ("parquet", "orc", "delta")  # files that read back with their columns' types
# a literal of each atomic type, never NULL (``nullable_as``)
NEVER_NULL = {"tinyint": "0Y", "smallint": "0S", "int": "0", "bigint": "0L", "float": "CAST(0 AS FLOAT)",
              "double": "0D", "string": "''", "binary": "X''", "boolean": "false", "date": "DATE'1970-01-01'",
              "timestamp": "TIMESTAMP'1970-01-01 00:00:00'", "timestamp_ntz": "TIMESTAMP_NTZ'1970-01-01 00:00:00'"}


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
    # the runs whose rows the files hold, oldest first (empty: the one run ``name``): appends
    # and dynamic partition overwrites add to what earlier runs wrote (``Run``)
    runs: list[dict] = field(default_factory=list)

    def run_list(self) -> list[Run]:
        """Each run's saved result and what it replaced, oldest first."""
        return [Run(**run) for run in self.runs] or [Run(self.name, self.written_at)]

    def next_run(self) -> int:
        return max(run.number for run in self.run_list()) + 1


@dataclass
class Run:
    """One run's write to a path or table: the saved result of its rows, when, the partitions
    it wrote (each as ``partition_key``: ``to_json(array(values as text))``; None
    unpartitioned), and whether it replaced them (a dynamic partition overwrite: earlier runs'
    rows there are gone)."""

    result: str
    written_at: float
    number: int = 1  # the run's number among the writes to the path (its result is ``name_run<number>``)
    partitions: list[str] | None = None
    replaces: bool = False


def kept_runs(runs: list[Run]) -> tuple[list[Run], list[Run]]:
    """``runs`` split into those whose rows the files still hold (some of them) and those every
    partition of which a later run replaced."""
    kept, gone, replaced = [], [], set()
    for run in reversed(runs):
        if run is not runs[-1] and run.partitions is not None and set(run.partitions) <= replaced:
            gone.append(run)
        else:
            kept.append(run)
        if run.replaces:
            replaced |= set(run.partitions or [])
    return kept[::-1], gone[::-1]


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
    """``wanted``, or ``wanted_2``, ``wanted_3``, ...: the first that no table, saved result,
    view or record of a write (its runs' results too) holds, or that ``ours(name)`` says
    already stands for the same thing."""
    views, reserved = lineage.views(), reserved_names(lineage)
    for number in itertools.count(1):
        name = wanted if number == 1 else f"{wanted}_{number}"
        if ours(name) or not (name in reserved or owners_of(name, lineage.catalog.tables, lineage.store.exists,
                                                                 views)):
            return name
    raise AssertionError("unreachable")


def reserved_names(lineage) -> set[str]:
    """The names of the writes recorded and of their runs' saved results."""
    records = WrittenStore(lineage.catalog).all().values()
    return {record.name for record in records} | {run.result for record in records for run in record.run_list()}


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


def check_found(spark, fmt: str, path: str, where: Location, as_read: Reader) -> None:
    """A read of a path with no files fails as Spark's reader fails it, at the read, with
    Spark's own error (``PATH_NOT_FOUND``, an analysis error: exit 1 under spark-submit)."""
    if found(where):
        return
    reader = spark.read.format(fmt).options(**as_read.options)
    (reader.schema(as_read.schema) if as_read.schema else reader).load(path).schema  # noqa: B018 - Spark's check
    raise BadInput(f"{path}: no such file or directory")  # where Spark reads no files as no rows


def files_now(where: Location, fmt: str) -> str:
    """A digest of the files at ``where`` (names, sizes, modification times)."""
    return source_fingerprint(where, fmt, {})


def one_read(lineage, spark, fmt: str, paths: list[str], as_read: Reader, names: list[str]):
    """A read of several paths as the union of their registered tables (``names``, one per
    path), where Spark reads them with the columns each has; refused where it does not (a
    JSON field or a partition column only some paths have)."""
    together = spark.read.format(fmt).options(**as_read.options)
    together = (together.schema(as_read.schema) if as_read.schema else together).load(paths).schema
    columns = [(f.name, f.dataType.simpleString()) for f in together.fields]
    for path, name in zip(paths, names):
        if list(lineage.catalog.tables[name].schema.items()) != columns:
            raise UnsupportedLineage(f"spark.read of {len(paths)} paths: Spark reads them as "
                                     f"{together.simpleString()}, which {path} alone is not: read each path and "
                                     f"union them (unionByName)")
    union = spark.table(names[0])
    for name in names[1:]:
        union = union.union(spark.table(name))
    return union


def output_name(lineage, wanted: str, path: str) -> str:
    """The saved result's name for a write to ``path``: the name it had when written there
    before, else ``wanted`` made free."""
    record = WrittenStore(lineage.catalog).at(path)
    if record is not None and (lineage.store.exists(record.name) or record.runs):
        return record.name
    return free_name(lineage, wanted, lambda name: False)


def write_action(mode: str | None, exists: bool, what: str) -> bool:
    """Whether a write in ``mode`` goes ahead (False: ``ignore`` over what exists); refused
    before any work when it cannot: ``error`` over what exists (as Spark refuses it)."""
    mode = (mode or "errorifexists").lower()
    if mode in ("error", "errorifexists", "default") and exists:
        raise BadInput(f"{what}: it already exists (mode 'errorifexists', as Spark refuses it): "
                       f"use .mode('overwrite') or .mode('append')")
    if mode not in ("error", "errorifexists", "default", "ignore", "overwrite", "append"):
        raise BadInput(f"{what}: unknown save mode '{mode}'")
    return not (mode == "ignore" and exists)


def dynamic_overwrite(spark, options: dict[str, str], mode: str | None, partition_by: list[str]) -> bool:
    """Whether a write replaces only the partitions it writes (mode overwrite, partitioned, and
    ``partitionOverwriteMode`` dynamic in its options or the session), as Spark decides it."""
    lowered = {key.lower(): value for key, value in options.items()}
    setting = lowered.get("partitionoverwritemode") or spark.conf.get("spark.sql.sources.partitionOverwriteMode",
                                                                       "static")
    return (mode or "").lower() == "overwrite" and bool(partition_by) and setting.lower() == "dynamic"


def run_name(lineage, name: str, number: int) -> str:
    """The saved result of run ``number`` of the writes to a path: ``name_run<number>``, free."""
    return free_name(lineage, f"{name}_run{number}", lambda taken: False)


def partitions_of(rows, partition_by: list[str]) -> list[str]:
    """The partitions ``rows`` fill, each as its ``partition_key``."""
    return sorted(row[0] for row in rows.select(partition_key(partition_by)).distinct().collect())


def directory_text(column: str):
    """A partition column's value as the text of its directory name (Spark writes ``CAST(c AS
    STRING)``, NULL and '' as ``__HIVE_DEFAULT_PARTITION__``)."""
    from pyspark.sql import functions as F

    return F.col(column).cast("string")


def partition_key(partition_by: list[str]):
    """A partition as one text, by its directories' names: ``to_json`` of their values as text."""
    from pyspark.sql import functions as F

    return F.expr(partition_key_sql(partition_by))


def partition_key_sql(partition_by: list[str]) -> str:
    """``partition_key`` as SQL text (a view over a table's runs filters by it)."""
    texts = ", ".join(f"nullif(CAST({backquoted(column)} AS STRING), '')" for column in partition_by)
    return f"to_json(array({texts}))"


def outside(partition_by: list[str], partitions: list[str]) -> str:
    """SQL that a row is in none of ``partitions`` (each a ``partition_key``): a runs' view
    filters by it, and so do an answer and a read over the runs' DataFrames."""
    listed = ", ".join(exp.Literal.string(partition).sql("spark") for partition in partitions)
    return f"{partition_key_sql(partition_by)} NOT IN ({listed})"


@contextmanager
def dropped_unless_written(lineage, run: str, new: bool) -> Iterator[None]:
    """Spark writes the rows of ``run``, saved just before: when that write fails (Spark
    refuses some writes only then: a format or partitioning unlike the table's), a ``new``
    run's saved result goes again, so that no saved result claims rows the files do not hold."""
    try:
        yield
    except BaseException:
        if new and lineage.store.exists(run):
            lineage.drop_result(run)
        raise


def drop_runs(lineage, runs: list[Run]) -> None:
    """The saved results of ``runs``, whose rows the files no longer hold."""
    for run in runs:
        if lineage.store.exists(run.result):
            lineage.drop_result(run.result)


def saved_rows(lineage, spark, name: str, schema=None):
    """Saved result ``name``'s query columns, as a DataFrame of ``spark``: in its own row order
    when its query orders them (a sort of every row costs a write of a large step as much as
    computing it), else as stored.  With the job's ``schema``, its columns that are never NULL
    there are NOT NULL here too."""
    result = lineage.store.get(name)
    rows = spark.sql(lineage.store.ordered_sql(result, ordered=orders_rows(result.query)))
    return rows if schema is None else nullable_as(rows, schema)


def orders_rows(query: str) -> bool:
    """Whether ``query``'s outermost SELECT (or set operation) has an ORDER BY."""
    return parse(query).args.get("order") is not None


def nullable_as(rows, schema):
    """``rows`` (read back from a save: every column and element nullable) with the
    nullability of the job's ``schema``, so that Spark writes the files as plain Spark writes
    the job's own DataFrame (``required`` where never NULL)."""
    columns, changed = [], False
    for written in schema.fields:
        sql = with_nullability(backquoted(written.name), written.dataType, written.nullable, 0)
        columns.append(f"{sql or backquoted(written.name)} AS {backquoted(written.name)}")
        changed = changed or sql is not None
    return rows.selectExpr(*columns) if changed else rows


def with_nullability(sql: str, kind, nullable: bool, depth: int) -> str | None:
    """SQL of value ``sql`` whose type says of NULLs what ``kind`` and ``nullable`` say (a
    ``coalesce`` with a literal where never NULL: it never applies; elements and fields
    alike); None when ``sql`` already does (nullable all through) or cannot (a map).

    >>> from pyspark.sql.types import ArrayType, IntegerType
    >>> with_nullability("`q`", ArrayType(IntegerType(), False), False, 0)
    'coalesce(transform(`q`, x0 -> coalesce(x0, 0)), array())'
    """
    from pyspark.sql.types import ArrayType, StructType

    inner = None
    if isinstance(kind, ArrayType):
        element = with_nullability(f"x{depth}", kind.elementType, kind.containsNull, depth + 1)
        inner = f"transform({sql}, x{depth} -> {element})" if element else None
    elif isinstance(kind, StructType):
        fields = [with_nullability(f"{sql}.{backquoted(field.name)}", field.dataType, field.nullable, depth)
                  for field in kind.fields]
        if any(fields) or not nullable:
            pairs = ", ".join(f"{exp.Literal.string(field.name).sql('spark')}, "
                              f"{value or f'{sql}.{backquoted(field.name)}'}"
                              for field, value in zip(kind.fields, fields))
            inner = f"named_struct({pairs})"
            return f"IF({sql} IS NULL, NULL, {inner})" if nullable else inner  # named_struct is never NULL
    if nullable:
        return inner
    simple = kind.simpleString()
    never = "array()" if isinstance(kind, ArrayType) else NEVER_NULL.get(simple) or (
        f"{0:.{kind.scale}f}BD" if simple.startswith("decimal") else None)
    return f"coalesce({inner or sql}, {never})" if never else inner


def record_write(lineage, name: str, path: str, fmt: str, mode: str | None, partition_by: list[str],
                 options: dict[str, str], table_location: str | None = None, files: str | None = None,
                 runs: list[Run] | None = None) -> None:
    """Keep where ``name`` was written; ``runs``: the runs the files now hold, when earlier
    runs' rows stay beside this one's."""
    WrittenStore(lineage.catalog).write(Written(name, path, fmt, (mode or "errorifexists").lower(),
                                                list(partition_by), dict(options), time.time(), table_location,
                                                files, [asdict(run) for run in runs or []]))


def written_dir(record: Written) -> str | None:
    """The directory whose files a write left: its path, or the table's directory Spark wrote."""
    if record.location:
        return spark_uri_key(record.location)
    return record.path if "/" in record.path else None  # a path is absolute; a table's name has no "/"


def written_here(record: Written | None) -> bool:
    """Whether the files where ``record`` wrote are still the rows of its result dltrace wrote there."""
    directory = written_dir(record) if record is not None else None
    return directory is not None and record.files == files_now(location(directory, "output"), record.format)


def check_result_of(lineage, result: str, table: str) -> None:
    """Refuse a ``saveAsTable`` whose result name is the result of a write to a path."""
    record = next((r for r in WrittenStore(lineage.catalog).all().values()
                   if result in {r.name, *(run.result for run in r.run_list())}), None)
    if record is not None and record.path != table:
        raise BadInput(f"saveAsTable({table!r}): result {result} holds the rows the job wrote to {record.path}: "
                       f"name the table otherwise")


def check_replace_where(options: dict[str, str], path: str) -> None:
    """Refuse Delta's ``replaceWhere``: rows of earlier runs that its condition keeps would need
    the condition evaluated over them."""
    if "replacewhere" in {key.lower() for key in options}:
        raise UnsupportedLineage(f"writing {path} with replaceWhere: dltrace keeps earlier runs' rows by the "
                                 f"partitions a run writes (dynamic partitionOverwriteMode), not by a condition")


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
    from dltrace.spark_tables import describe

    return describe(spark, table).get("Location") or None


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
