"""A job's read of files dltrace wrote is the saved results' rows, so lineage composes.

A step's rows are written where the job writes them (``job_files.py``), and a later read may
take them in any form: the path itself, a parent folder of several written paths (``out/x``
over ``out/x/run=D1`` and ``out/x/run=D2``), one partition of a partitioned output, a glob,
several paths at once, the directory of a table ``saveAsTable`` wrote.  Spark's own listing
says which files the read takes (``inputFiles``) and its schema what it makes of them
(partition columns from ``k=v`` directories, typed as Spark infers them).  When every file
belongs to a write whose files are unchanged since, the read is the union of those writes'
saved results, each with the partition values of its directories, in the read's columns and
types: the rows the files hold, with their lineage.

A path that several runs wrote (appends, dynamic partition overwrites) holds each run's rows
but those of partitions a later run replaced: the read is the union of the runs' results,
each less those partitions.

Runs past retention (``dataframe/runs.py``) are composed too, their rows without lineage, and
the read's line says that lineage stops at them.

A read that covers written files but cannot be composed is never a silent new source:
written files beside other files, or directories that are not ``k=v``, are refused in one
line naming the path and the step; written files changed since, or a CSV or JSON output (its
text, not the result's types), are read as a source of their own, and the job is told in
one line that lineage stops there.
"""

from __future__ import annotations

import posixpath
from collections import Counter
from dataclasses import dataclass
from urllib.parse import unquote

from dltrace.dataframe.job_files import (
    SELF_DESCRIBING,
    Run,
    Written,
    WrittenStore,
    directory_text,
    outside,
    written_dir,
    written_here,
)
from dltrace.dataframe.runs import stops_at
from dltrace.errors import UnsupportedLineage
from dltrace.registration import Reader
from dltrace.storage import glob, is_glob, location
from dltrace.table_data import spark_uri_key

DEFAULT_PARTITION = "__HIVE_DEFAULT_PARTITION__"  # Spark's directory name for a NULL partition value


@dataclass
class ReadBack:
    """What a read of written files is: the composed frame, or why lineage stops (said)."""

    frame: object | None  # the steps' rows as the read gives them; None when the read is a source
    note: str  # the steps it reads, or why the read is a source of its own though it takes written files


@dataclass
class Part:
    """One written path a read takes: its record, the ``k=v`` directories from the read's root
    down to it, and the directories below it whose files the read takes (None: all)."""

    record: Written
    above: list[tuple[str, str]]
    directories: list[str] | None = None


def overlapping(lineage, paths: list[str]) -> list[Written]:
    """The writes whose files a read of ``paths`` may take: a path at, above or below a
    written directory (a glob by the part before its first wildcard)."""
    records = [record for record in WrittenStore(lineage.catalog).all().values() if written_dir(record)]
    found = []
    for record in records:
        directory = written_dir(record).rstrip("/")
        for path in paths:
            fixed = fixed_prefix(path)
            if directory == fixed or directory.startswith(fixed + "/") or fixed.startswith(directory + "/"):
                found.append(record)
                break
    return found


def fixed_prefix(path: str) -> str:
    """``path`` up to its first segment with a wildcard.

    >>> fixed_prefix("/out/x/*/part-*.parquet"), fixed_prefix("/out/x/")
    ('/out/x', '/out/x')
    """
    parts = path.rstrip("/").split("/")
    fixed = [part for part in parts[:next((i for i, p in enumerate(parts) if is_glob(p)), len(parts))]]
    return "/".join(fixed) or "/"


def read_back(lineage, spark, fmt: str, paths: list[str], as_read: Reader) -> ReadBack | None:
    """A read of ``paths`` (local paths as ``Location`` texts) as the saved results dltrace
    wrote there; None when the read takes no written file."""
    records = overlapping(lineage, paths)
    if not records:
        return None
    named = ", ".join(f"{r.path} (step {r.name})" for r in records)
    if fmt == "delta" and {"versionasof", "timestampasof"} & {key.lower() for key in as_read.options}:
        return ReadBack(None, f"an earlier version of {named} (time travel) is not the rows of its runs: read as "
                              f"a source, lineage stops there")
    if fmt not in SELF_DESCRIBING or as_read.schema or any(r.format != fmt for r in records):
        how = f"{fmt} with a schema of the reader's" if as_read.schema else fmt
        return ReadBack(None, f"the files of {named} read as {how} are not the step's rows as typed: read as a "
                              f"source, lineage stops there")
    read = spark.read.format(fmt).options(**as_read.options).load(paths if len(paths) > 1 else paths[0])
    files = [spark_uri_key(uri) for uri in read.inputFiles()]
    owner = {file: next((r for r in records if file.startswith(written_dir(r).rstrip("/") + "/")), None)
             for file in files}
    others = sorted(file for file, record in owner.items() if record is None)
    taken = [r for r in records if r in owner.values()]
    if not taken:
        return None
    what = f"spark.read of {', '.join(paths)}"
    if others:
        raise UnsupportedLineage(f"{what}: it takes the files {named} wrote beside {len(others)} other files "
                                 f"({others[0]}, ...): read the written paths and the others apart and union them")
    changed = [r for r in taken if not written_here(r)
               or not all(lineage.store.exists(run.result) for run in r.run_list())]
    if changed:
        if len(changed) == len(taken) == 1:
            return ReadBack(None, f"the files at {changed[0].path} changed since step {changed[0].name} wrote them: "
                                  f"read as a source, lineage stops there")
        raise UnsupportedLineage(f"{what}: the files at {changed[0].path} changed since step {changed[0].name} wrote "
                                 f"them, beside other written paths: read them apart")
    options = {key.lower(): value for key, value in as_read.options.items()}
    recursive = options.get("recursivefilelookup", "false").lower() == "true"
    roots = roots_of(paths, options.get("basepath"))
    parts = []
    for record in taken:
        part = part_of(record, roots, recursive, what)
        if fmt != "delta":  # a Delta read takes the log's live files, a table whole
            part.directories = taken_directories(record, {f for f, r in owner.items() if r is record}, what)
        parts.append(part)
    steps = sorted({record.name for record in taken})
    return ReadBack(composed(lineage, spark, read.schema, parts, what),
                    f"the saved result{'s' if len(steps) > 1 else ''} {', '.join(steps)} written there"
                    f"{past_retention(lineage, taken)}")


def past_retention(lineage, taken: list[Written]) -> str:
    """What the read's line adds when runs it takes are past retention: lineage stops at their rows."""
    pruned = [saved for record in taken for run in record.run_list()
              if (saved := lineage.store.get(run.result)).pruned_at is not None]
    if not pruned:
        return ""
    return f"; lineage stops at the rows of runs past retention (their lineage was pruned): {stops_at(pruned)}"


def taken_directories(record: Written, files: set[str], what: str) -> list[str] | None:
    """The directories below ``record``'s path whose files the read takes (``files``), each
    whole; None when it takes them all.  A read of some files of a directory (one part file,
    ``pathGlobFilter``, ``modifiedAfter``) is refused: which run's rows they hold is not kept."""
    directory = location(written_dir(record), "output")
    relatives = [posixpath.relpath(info.path, directory.path) for info in directory.files()]
    every = Counter(posixpath.dirname(relative) for relative in relatives  # what Spark lists: no _ or . names
                    if not any(name.startswith(("_", ".")) for name in relative.split("/")))
    took = Counter(posixpath.dirname(posixpath.relpath(file, directory.path)) for file in files)
    partly = sorted(d for d in took if took[d] != every.get(d))
    if partly:
        raise UnsupportedLineage(f"{what}: it takes some of the files step {record.name} wrote in "
                                 f"{posixpath.join(record.path, partly[0])}: read whole directories of it")
    return None if set(took) == set(every) else sorted(took)


def roots_of(paths: list[str], base: str | None) -> list[str]:
    """The directories Spark discovers partitions from: ``basePath``, else each path given
    (a glob's matches)."""
    if base is not None:
        return [str(location(spark_uri_key(base) if base.startswith("file:") else base, "basePath"))]
    roots = []
    for path in paths:
        matches = glob(location(path, "source")) if is_glob(path) else [location(path, "source")]
        roots += [str(match.parent if match.is_file() else match) for match in matches]
    return [root.rstrip("/") for root in roots]


def part_of(record: Written, roots: list[str], recursive: bool, what: str) -> Part:
    """Where ``record``'s directory stands to the read's root: the ``k=v`` directories between
    (none for a root inside it, whose columns above the root the read does not have)."""
    directory = written_dir(record).rstrip("/")
    for root in roots:
        if directory == root or directory.startswith(root + "/"):
            return Part(record, [] if recursive else partition_values(posixpath.relpath(directory, root), record,
                                                                      what))
        if root.startswith(directory + "/"):
            return Part(record, [])
    raise UnsupportedLineage(f"{what}: the files {record.path} (step {record.name}) wrote are read through a glob "
                             f"that none of its directories matches: read {record.path} itself")


def partition_values(relative: str, record: Written, what: str) -> list[tuple[str, str]]:
    """The ``(column, value text)`` of each ``k=v`` directory of ``relative`` (``.``: none)."""
    if relative in (".", ""):
        return []
    values = []
    for directory in relative.split("/"):
        column, equals, value = directory.partition("=")
        if not equals or not column:
            raise UnsupportedLineage(f"{what}: directory {directory} between the read's path and {record.path} "
                                     f"(step {record.name}) is not a partition (column=value): read {record.path}")
        values.append((unquote(column), unquote(value)))
    return values


def composed(lineage, spark, schema, parts: list[Part], what: str):
    """The union of the parts' runs' saved results, in the read's columns and types (``schema``)."""
    frames = []
    for part in parts:
        runs = part.record.run_list()
        frames += [run_rows(lineage, spark, schema, part, run, runs[number + 1:], what)
                   for number, run in enumerate(runs)]
    union = frames[0]
    for frame in frames[1:]:
        union = union.unionByName(frame)
    return union


def run_rows(lineage, spark, schema, part: Part, run: Run, later: list[Run], what: str):
    """The rows of ``run`` that the files still hold (not those of partitions a ``later`` run
    replaced) in the directories the read takes, as the read gives them: a partition column's
    value as Spark reads it back from its directory's name (text, typed as the read types it)."""
    from pyspark.sql import functions as F

    result = lineage.store.get(run.result)
    columns = {name.lower(): name for name in result.query_columns}
    partitioned = {column.lower() for column in part.record.partition_by}
    frame = spark.table(run.result)
    replaced = sorted({partition for newer in later if newer.replaces for partition in newer.partitions or []})
    if replaced:
        frame = frame.where(outside(part.record.partition_by, replaced))
    if part.directories is not None:
        frame = frame.where(in_directories(part, columns, what))
    above = {column.lower(): value for column, value in part.above}
    selected = []
    for field in schema.fields:
        kind, name = field.dataType.simpleString(), field.name.lower()
        if name in above:
            value = above[name]
            selected.append((F.lit(None) if value == DEFAULT_PARTITION else F.lit(value)).cast(kind).alias(field.name))
        elif name in columns and name in partitioned:
            selected.append(F.nullif(directory_text(columns[name]), F.lit("")).cast(kind).alias(field.name))
        elif name in columns:
            own = columns[name]
            if result.query_columns[own] != kind:
                raise UnsupportedLineage(f"{what}: the read types column {field.name} {kind}, the rows step "
                                         f"{run.result} wrote {result.query_columns[own]}: read {part.record.path} "
                                         f"with its own schema")
            selected.append(F.col(own).alias(field.name))
        else:  # a column of other files of the read: NULL in these, as Spark reads Parquet and ORC by name
            selected.append(F.lit(None).cast(kind).alias(field.name))
    return frame.select(*selected)


def in_directories(part: Part, columns: dict[str, str], what: str):
    """Whether a row's partition directories are one of those the read takes."""
    from pyspark.sql import functions as F

    condition = F.lit(False)
    for directory in part.directories or []:
        matches = F.lit(True)
        for column, value in partition_values(directory, part.record, what):
            if column.lower() not in columns:
                raise UnsupportedLineage(f"{what}: directory {column}={value} inside {part.record.path} names no "
                                         f"column of step {part.record.name}")
            text = directory_text(columns[column.lower()])
            matches = matches & ((text.isNull() | (text == "")) if value == DEFAULT_PARTITION else (text == value))
        condition = condition | matches
    return condition
