"""``dltrace run job.py``: an unmodified PySpark script as a pipeline of saved steps.

The script runs in this process, on Spark Connect (``LineageSession.frames``): its
``SparkSession.builder.getOrCreate()`` returns the users' session, whose ``table(name)``
reads the catalog's tables and saved results.  Each ``df.write.saveAsTable(name)`` (modes
that create or replace, ``writeTo(name).create()/replace()/createOrReplace()``) becomes a
saved step with lineage (``LineageSession.save``) that later steps read by name; every
other sink (appends, ``insertInto``, path writes) is refused in one line, since a result
with lineage is one saved whole.  Everything else the script does (``show``, ``count``,
Python code) runs as it would under ``spark-submit``.
"""

from __future__ import annotations

import os
import runpy
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from dltrace.errors import BadInput, DltraceError, UnsupportedLineage

SINKS = ("save", "insertInto", "json", "parquet", "text", "csv", "xml", "orc", "jdbc")
V2_SINKS = ("append", "overwrite", "overwritePartitions")
REPLACING_MODES = {"overwrite": "replace", "error": "create", "errorifexists": "create", "default": "create",
                   "ignore": "ignore"}


@dataclass
class Step:
    """A ``saveAsTable`` the script made: its result's name, rows, seconds, and script line."""

    name: str
    rows: int
    seconds: float
    line: int
    skipped: bool = False


class JobError(DltraceError):
    """A script failed: carries the exit code of the error behind it."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def run_job(lineage, path: str, semantics: str = "control", representation: str = "set",
            on_step: Callable[[Step], None] | None = None, argv: list[str] | None = None) -> list[Step]:
    """Run PySpark script ``path``; its ``saveAsTable`` writes become saved steps."""
    if not os.path.isfile(path):
        raise BadInput(f"no such script: {path}")
    lineage.frames  # noqa: B018 - starts Spark Connect and defines the catalog's views first
    steps: list[Step] = []
    script = os.path.abspath(path)

    def save(frame, name: str, mode: str | None) -> None:
        started = time.perf_counter()
        line = script_line(script)
        action = REPLACING_MODES.get((mode or "error").lower())
        if action is None:
            raise UnsupportedLineage(f"saveAsTable({name!r}, mode={mode!r}): a result with lineage is saved whole; "
                                     f"use mode 'overwrite' (or the default) to save it as a step")
        exists = lineage.store.exists(name)
        if exists and action == "create":
            raise BadInput(f"saveAsTable({name!r}): result {name.lower()} exists: use .mode('overwrite') to "
                           f"replace it")
        if exists and action == "ignore":
            steps.append(Step(name.lower(), lineage.store.get(name).rows, 0.0, line, skipped=True))
        else:
            saved = lineage.save(frame, name, semantics=semantics, representation=representation)
            steps.append(Step(saved.name, saved.rows, time.perf_counter() - started, line))
        if on_step is not None:
            on_step(steps[-1])

    with writes_as_steps(save), script_argv([path, *(argv or [])]):
        try:
            runpy.run_path(script, run_name="__main__")
        except SystemExit as stop:
            if stop.code not in (None, 0):
                raise JobError(f"{path} exited with status {stop.code}", 1) from None
        except DltraceError as error:
            raise JobError(f"{path} line {script_line(script, error.__traceback__)}: {error}",
                           error.exit_code) from None
        except Exception as error:  # noqa: BLE001 - the script's own failure, as one line
            raise JobError(f"{path} line {script_line(script, error.__traceback__)}: {one_line(error)}", 1) from None
    return steps


def one_line(error: BaseException) -> str:
    from pyspark.errors import PySparkException

    if isinstance(error, PySparkException):
        from dltrace.errors import spark_error

        return str(spark_error(error))
    text = next((line.strip() for line in str(error).splitlines() if line.strip()), "")
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def script_line(script: str, trace=None) -> int:
    """The line of ``script`` the call stack (or traceback ``trace``) is at."""
    frames = traceback.extract_tb(trace) if trace is not None else traceback.extract_stack()
    lines = [frame.lineno for frame in frames if os.path.abspath(frame.filename) == script]
    return lines[-1] if lines else 0


@contextmanager
def script_argv(argv: list[str]) -> Iterator[None]:
    earlier = sys.argv
    sys.argv = argv
    try:
        yield
    finally:
        sys.argv = earlier


@contextmanager
def writes_as_steps(save: Callable) -> Iterator[None]:
    """Connect's writers, for the ``with`` block: ``saveAsTable`` and ``writeTo`` that create
    or replace call ``save(frame, name, mode)``; other sinks are refused."""
    from pyspark.sql.connect.dataframe import DataFrame
    from pyspark.sql.connect.readwriter import DataFrameWriter, DataFrameWriterV2

    def as_step(frame, name: str, mode: str | None) -> None:
        """``save`` with Connect's own writers back: dltrace writes the step's files with them."""
        for (cls, method), function in earlier.items():
            setattr(cls, method, function)
        try:
            save(frame, name, mode)
        finally:
            for (cls, method), function in patches.items():
                setattr(cls, method, function)

    def save_as_table(writer, name, format=None, mode=None, partitionBy=None, **options):
        if partitionBy:
            raise UnsupportedLineage(f"saveAsTable({name!r}, partitionBy=...): a saved step is not partitioned")
        as_step(DataFrame(writer._df, writer._spark), name, mode or writer._write.mode)

    def refuse(method: str) -> Callable:
        def refused(*args, **kwargs):
            raise UnsupportedLineage(f"DataFrameWriter.{method}: only saveAsTable(name) (created or replaced) saves "
                                     f"a step with lineage; appends and other sinks are refused")
        return refused

    def v2(mode: str) -> Callable:
        def write(writer) -> None:
            as_step(DataFrame(writer._df, writer._spark), writer._table_name, mode)
        return write

    patches = {(DataFrameWriter, "saveAsTable"): save_as_table,
               **{(DataFrameWriter, m): refuse(m) for m in SINKS},
               **{(DataFrameWriterV2, m): refuse(m) for m in V2_SINKS},
               (DataFrameWriterV2, "create"): v2("error"), (DataFrameWriterV2, "replace"): v2("overwrite"),
               (DataFrameWriterV2, "createOrReplace"): v2("overwrite")}
    earlier = {key: getattr(*key) for key in patches}
    for (cls, method), function in patches.items():
        setattr(cls, method, function)
    try:
        yield
    finally:
        for (cls, method), function in earlier.items():
            setattr(cls, method, function)
