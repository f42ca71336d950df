"""Writes that add rows to a Spark table under ``dltrace run``: ``saveAsTable`` in mode
``append``, ``insertInto`` (and its ``overwrite``), ``writeTo(t).append()`` and
``writeTo(t).overwritePartitions()``.

Each run's rows are a saved result of their own, ``t_run<k>``, in the table's columns and
types (matched by name, or by position for ``insertInto``, as Spark matches them), and Spark's
own method then writes those rows into the table, so the table holds what plain Spark leaves
there.  The name ``t`` is a view of the catalog: the union of the runs whose rows the table
still holds, less the partitions a later dynamic overwrite replaced, so that a later
``spark.table("t")`` of this job or another composes down to the base rows.  A table first
written whole (result ``t``) becomes run 1 of its runs at its first append.

Spark's in-memory catalog forgets tables when its process ends; a table dltrace wrote, whose
files are unchanged since, is defined again over its directory before the next run adds to it.
A table with rows dltrace did not write is refused: the lineage of those rows is not known.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from sqlglot import exp

from dltrace import profile
from dltrace.dataframe import job_files
from dltrace.dataframe.job_files import Run, WrittenStore
from dltrace.errors import BadInput, UnsupportedLineage
from dltrace.spark import optimized_schema
from dltrace.spark_tables import describe
from dltrace.table_data import backquoted, spark_uri_key
from dltrace.views import ViewStore

V1_SOURCES = ("parquet", "csv", "json", "orc", "text")


@dataclass
class TableWrite:
    """One call that adds to a table: how Spark matches its columns and what it replaces."""

    call: str  # the call as the job wrote it, for messages: ``insertInto('t')``
    name: str  # the table as the job names it
    by_position: bool  # insertInto matches columns by position, the others by name
    overwrite: bool  # insertInto(overwrite=True), overwritePartitions()
    dynamic: bool  # the overwrite replaces only the partitions written
    creates: bool  # saveAsTable in mode append creates a table that is not there
    write: Callable  # Spark's own method: (rows, table) -> None
    fmt: str | None = None  # saveAsTable's format, for a table it creates
    partition_by: tuple[str, ...] = ()  # saveAsTable's partitioning, for a table it creates
    v2: bool = False  # writeTo(t): Spark writes only tables of a V2 source (not Parquet, CSV, JSON, ORC)


def appended(name: str, fmt: str | None, partition_by: list[str], save_as_table: Callable) -> TableWrite:
    """``saveAsTable(name)`` in mode append; ``save_as_table`` is Spark's own method."""
    def append(rows, table) -> None:
        out = rows.write.mode("append")
        out = out.partitionBy(*partition_by) if partition_by else out
        save_as_table(out.format(fmt) if fmt else out, table)
    return TableWrite(f"saveAsTable({name!r}, mode='append')", name, by_position=False, overwrite=False,
                      dynamic=False, creates=True, write=append, fmt=fmt, partition_by=tuple(partition_by))


def inserted(writer, name: str, overwrite: bool | None, insert_into: Callable) -> TableWrite:
    """``writer.insertInto(name, overwrite)``; ``insert_into`` is Spark's own method."""
    settings = writer._write
    replace = overwrite if overwrite is not None else (settings.mode or "").lower() == "overwrite"
    options = dict(settings.options)

    def insert(rows, table) -> None:
        insert_into(rows.write.options(**options), table, replace)
    dynamic = job_files.dynamic_overwrite(writer._spark, options, "overwrite", ["any partition column"])
    return TableWrite(f"insertInto({name!r})", name, by_position=True, overwrite=replace, dynamic=dynamic,
                      creates=False, write=insert)


def added_by_v2(writer, method: str, original: Callable) -> TableWrite:
    """``writeTo(t).append()`` or ``.overwritePartitions()``; ``original`` is Spark's own method."""
    settings = writer._write
    if settings.options or settings.table_properties:
        refuse_table_settings(f"writeTo({writer._table_name!r}).{method}()")

    def write(rows, table) -> None:
        original(rows.writeTo(table))
    replaces = method == "overwritePartitions"
    return TableWrite(f"writeTo({writer._table_name!r}).{method}()", writer._table_name, by_position=False,
                      overwrite=replaces, dynamic=replaces, creates=False, write=write, v2=True)


def refuse_table_settings(call: str) -> None:
    raise UnsupportedLineage(f"{call} with options, partitioning (writeTo), bucketBy, sortBy, clusterBy or table "
                             f"properties: dltrace writes tables with Spark's defaults")


def add_to_table(job, frame, write: TableWrite) -> None:
    """``frame``'s rows added to the table as one more run (module docstring)."""
    lineage, spark = job.lineage, frame._session
    base, key = write.name.split(".")[-1].lower(), write.name.lower()
    table = job_files.in_spark_catalog(spark, write.name)
    job_files.check_result_of(lineage, base, key)
    record = WrittenStore(lineage.catalog).at(key)
    ours = record is not None and job_files.written_here(record) \
        and all(lineage.store.exists(run.result) for run in record.run_list())
    exists = spark.catalog.tableExists(table)
    if not exists and ours and record.location:
        define_again(lineage, spark, table, record)
        exists = True
    if not exists and not write.creates:
        raise BadInput(f"{write.call}: there is no table {write.name} (as Spark refuses it): create it first")
    provider = table_provider(spark, table) if exists else ""
    if write.v2 and provider in V1_SOURCES:
        raise BadInput(f"{write.call}: Spark cannot write into v1 table {table} (a {provider} table): use "
                       f"insertInto or saveAsTable in mode 'append'")
    if exists and not ours and not spark.read.table(table).isEmpty():
        raise UnsupportedLineage(f"{write.call}: table {write.name} holds rows dltrace did not write (or its files "
                                 f"changed since): their lineage is not known; write the table whole first "
                                 f"(saveAsTable in mode 'overwrite')")
    earlier = record.run_list() if exists and ours else []
    fmt = provider if provider in job_files.FILE_FORMATS else record.format if record else write.fmt or "parquet"
    partition_by = partition_columns(spark, table) if exists else list(write.partition_by)
    # the table's columns and order: a new table's as Spark creates it, partition columns last
    source = conformed(frame, table_columns(spark, table), write) if exists else partitions_last(frame, partition_by)
    # with --resume: skipped when it was the table's last run
    if earlier and (resumed := job.resumed(source, earlier[-1].result)) is not None:
        job.done(resumed)
        return
    if earlier and not record.runs:  # the table was written whole: its rows become run 1, the name a view
        earlier = [whole_as_run(job, spark, record, table_columns(spark, table), partition_by)]
        keep_runs(lineage, spark, table, write, fmt, partition_by, earlier)
    number = max((run.number for run in earlier), default=0) + 1
    run = job_files.run_name(lineage, base, number)
    step = job.saved(source, run)
    rows = job_files.saved_rows(lineage, spark, run, optimized_schema(source))
    with job_files.dropped_unless_written(lineage, run, new=True), profile.phase("write"):
        write.write(rows, table)
    replaces_all = write.overwrite and not (write.dynamic and partition_by)
    this = Run(run, time.time(), number, job_files.partitions_of(rows, partition_by) if partition_by else None,
               write.overwrite and not replaces_all)
    runs, gone = ([this], earlier) if replaces_all else job_files.kept_runs([*earlier, this])
    keep_runs(lineage, spark, table, write, fmt, partition_by, runs)
    job_files.drop_runs(lineage, gone)  # after the view no longer reads them
    job.done(step)


def keep_runs(lineage, spark, table: str, write: TableWrite, fmt: str, partition_by: list[str],
              runs: list[Run]) -> None:
    """The record of the table's runs (its directory and files as they are now) and the view
    of its name over them."""
    base = write.name.split(".")[-1].lower()
    directory = job_files.table_location(spark, table)
    files = job_files.files_now(job_files.job_location(directory, "table"), fmt) if directory else None
    job_files.record_write(lineage, base, write.name.lower(), fmt, "append", partition_by, {}, directory, files, runs)
    lineage.create_view(base, runs_view(lineage, runs, partition_by), replace=True)


def partitions_last(frame, partition_by: list[str]):
    """``frame`` with its partition columns last, the order of the table Spark creates."""
    if not partition_by:
        return frame
    partitioned = {name.lower() for name in partition_by}
    names = [name for name in frame.columns if name.lower() not in partitioned]
    by_name = {name.lower(): name for name in frame.columns}
    ordered = [*names, *(by_name.get(name.lower(), name) for name in partition_by)]
    return frame if ordered == list(frame.columns) else frame.select(*map(backquoted, ordered))


def define_again(lineage, spark, table: str, record) -> None:
    """Spark's table over the directory dltrace wrote it to, with its columns as the newest
    run saved them (not inferred from the files) and its partitions."""
    columns = lineage.store.get(record.run_list()[-1].result).query_columns
    partitioned = f" PARTITIONED BY ({', '.join(map(backquoted, record.partition_by))})" if record.partition_by else ""
    directory = exp.Literal.string(spark_uri_key(record.location)).sql("spark")
    spark.sql(f"CREATE TABLE {table} ({', '.join(f'{backquoted(c)} {t}' for c, t in columns.items())}) USING "
              f"{record.format}{partitioned} LOCATION {directory}")
    if record.partition_by:
        spark.sql(f"ALTER TABLE {table} RECOVER PARTITIONS")


def table_provider(spark, table: str) -> str:
    return describe(spark, table).get("Provider", "").lower()


def table_columns(spark, table: str) -> list[tuple[str, str]]:
    return [(field.name, field.dataType.simpleString()) for field in spark.read.table(table).schema.fields]


def partition_columns(spark, table: str) -> list[str]:
    return [column.name for column in spark.catalog.listColumns(table) if column.isPartition]


def conformed(frame, columns: list[tuple[str, str]], write: TableWrite):
    """``frame``'s columns as the table's, in its order and types, matched as Spark matches
    them; refused as Spark refuses a mismatch, before any work."""
    from pyspark.sql import functions as F

    types = {field.name: field.dataType.simpleString() for field in frame.schema.fields}
    names = list(types)
    if write.by_position:
        if len(names) != len(columns):
            raise BadInput(f"{write.call}: the table has {len(columns)} columns, the rows {len(names)} (as Spark "
                           f"refuses it)")
        sources = names
    else:
        lowered = {name.lower(): name for name in names}
        wanted = {name.lower() for name, _ in columns}
        if set(lowered) != wanted:
            raise BadInput(f"{write.call}: the rows' columns {', '.join(names)} are not the table's "
                           f"{', '.join(name for name, _ in columns)} (as Spark refuses it)")
        sources = [lowered[name.lower()] for name, _ in columns]
    selected = []
    for source, (name, kind) in zip(sources, columns):
        column = F.col(backquoted(source))
        selected.append((column if types[source] == kind else column.cast(kind)).alias(name))
    return frame.select(*selected)


def whole_as_run(job, spark, record, columns: list[tuple[str, str]], partition_by: list[str]) -> Run:
    """The saved result of a table written whole kept as run 1 (``t_run1``, its lineage the
    same rows', in the table's column order: partition columns last), and the result ``t``
    dropped: the name is the runs' view from now on."""
    lineage = job.lineage
    run = job_files.run_name(lineage, record.name, 1)
    job.saved(spark.table(record.name).select(*[backquoted(name) for name, _ in columns]), run)
    lineage.drop_result(record.name)
    rows = job_files.saved_rows(lineage, spark, run)
    return Run(run, record.written_at, 1, job_files.partitions_of(rows, partition_by) if partition_by else None)


def runs_view(lineage, runs: list[Run], partition_by: list[str]) -> str:
    """The rows the table holds: each run's rows but those of partitions a later run replaced,
    every run's columns by name in the newest run's order (the table's)."""
    selects = []
    columns = ", ".join(map(backquoted, lineage.store.get(runs[-1].result).query_columns))  # by name, one order
    for number, run in enumerate(runs):
        replaced = sorted({partition for later in runs[number + 1:] if later.replaces
                           for partition in later.partitions or []})
        where = f" WHERE {job_files.outside(partition_by, replaced)}" if replaced else ""
        selects.append(f"SELECT {columns} FROM {run.result}{where}")
    return " UNION ALL ".join(selects)


def drop_runs_view(lineage, name: str) -> None:
    """Before a table with runs is written whole: its runs' view goes (the result takes the name)."""
    if name in ViewStore(lineage.catalog).all():
        ViewStore(lineage.catalog).drop(name)


def refuse_condition(call: str) -> None:
    raise UnsupportedLineage(f"{call}: dltrace keeps earlier runs' rows by the partitions a run writes "
                             f"(overwritePartitions), not by a condition")
