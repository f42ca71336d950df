"""``dltrace run job.py``: a team's PySpark script, unchanged, with lineage for every output.

The script runs in this process on Spark Connect, in the session whose tables are the
catalog's (``LineageSession.frames``): its ``SparkSession.builder.getOrCreate()`` returns it,
so ``count()``, ``show()``, ``collect()``, ``cache()``, temporary views and ``spark.sql``
work before and after any save, with Spark's own results.  Connect's readers and writers
are wrapped for the run (``io_as_steps``): a read of files registers them as a source and a
write (``saveAsTable``, ``writeTo``, a path) is a saved step whose rows are then written where
the job writes them (dltrace/dataframe/job_files.py); a write that adds to a table (an
append, ``insertInto``, ``overwritePartitions``) is a run of its own (table_runs.py).  What
cannot be traced (an unknown format, an overwrite by a condition) is refused before any Spark
work of that step, naming the script line.  A ``Decimal`` literal is typed as ``spark-submit``
(classic Spark) types it, not as Connect's client does (``decimal(2,1)`` for ``Decimal("7.0")``, not ``decimal(10,1)``).
"""

from __future__ import annotations

import decimal
import os
import runpy
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from dltrace import profile
from dltrace.dataframe import api_coverage, job_files, table_runs
from dltrace.dataframe.built_at import BuiltAt
from dltrace.dataframe.expressions import decimal_digits
from dltrace.dataframe.read_back import read_back
from dltrace.errors import BadInput, DltraceError, UnsupportedLineage
from dltrace.registration import Reader
from dltrace.spark import optimized_schema, session_conf

REPLACING_MODES = {"overwrite": "replace", "error": "create", "errorifexists": "create", "default": "create",
                   "ignore": "ignore"}
MAX_DECIMAL_PRECISION = 38


@dataclass
class Step:
    """A write the script made: its result's name, rows, seconds, script line, and path."""

    name: str
    rows: int
    seconds: float
    line: int
    skipped: bool = False
    path: str | None = None  # a write to a path: where the rows went


class JobError(DltraceError):
    """A script failed: carries the exit code of the error behind it."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.exit_code = exit_code


class JobRun:
    """One run of a script: its reads as sources and its writes as saved steps."""

    def __init__(self, lineage, script: str, semantics: str, representation: str, resume: bool,
                 say: Callable[[str], None]) -> None:
        self.lineage, self.script, self.resume, self.say = lineage, script, resume, say
        self.semantics, self.representation = semantics, representation
        self.steps: list[Step] = []
        self.originals: dict = {}  # Connect's own reader and writer methods, for dltrace's writes

    def line(self) -> int:
        return script_line(self.script)

    def read(self, reader, paths) -> object:
        """``spark.read...load(paths)``, a line of ``--profile``'s (``read_sources``)."""
        with profile.entry("read", ", ".join([paths] if isinstance(paths, str) else list(paths or [])) or "?",
                           self.line()):
            return self.read_sources(reader, paths)

    def read_sources(self, reader, paths) -> object:
        """The saved results steps wrote at ``paths`` (``read_back``), else the files as
        registered tables (one per path), read with ``spark.table``."""
        paths = [paths] if isinstance(paths, str) else list(paths or [])
        if not paths and "path" in reader._options:
            paths = [reader._options.pop("path")]
        if not paths:
            raise UnsupportedLineage(f"spark.read of {reader._format or 'a source'} without a path: dltrace "
                                     f"registers files")
        paths = list(dict.fromkeys(paths))  # a path given twice is read once, as Spark lists it
        wheres = [job_files.job_location(path, "source") for path in paths]
        fmt = job_files.file_format(reader._format, wheres[0])
        as_read = Reader(dict(reader._options), reader._schema or "")
        spark, shown = reader._client, ", ".join(paths)
        for path, where in zip(paths, wheres):
            job_files.check_found(spark, fmt, path, where, as_read)
        back = read_back(self.lineage, spark, fmt, [str(where) for where in wheres], as_read)
        if back is not None:
            self.say(f"line {self.line()}: read {shown}: {back.note}")
            if back.frame is not None:
                return back.frame
        tables = []
        for path, where in zip(paths, wheres):
            name, what = job_files.source_table(self.lineage, fmt, where, as_read)
            self.say(f"line {self.line()}: read {path}: {what}")
            tables.append(name)
        if len(tables) == 1:
            return spark.table(tables[0])
        return job_files.one_read(self.lineage, spark, fmt, paths, as_read, tables)

    def save_table(self, frame, name: str, mode: str | None, fmt: str | None, partition_by: list[str]) -> None:
        """``saveAsTable(name)``: a saved step (named after the table), then Spark's table of its rows."""
        action = REPLACING_MODES.get((mode or "error").lower())
        if action is None:
            raise BadInput(f"saveAsTable({name!r}): unknown save mode '{mode}'")
        spark, result = frame._session, name.split(".")[-1].lower()
        table = job_files.in_spark_catalog(spark, name)  # not the temporary view of the result
        job_files.check_result_of(self.lineage, result, name.lower())
        if (resumed := self.resumed(frame, result)) is not None and spark.catalog.tableExists(table):
            self.done(resumed)
            return
        exists = self.lineage.store.exists(result) or spark.catalog.tableExists(table)
        if exists and action == "create":
            raise BadInput(f"saveAsTable({name!r}): the table exists (as Spark refuses it): use .mode('overwrite')")
        if exists and action == "ignore":
            self.say(f"line {self.line()}: table {name} exists (mode 'ignore'): nothing written")
            return
        record = job_files.WrittenStore(self.lineage.catalog).at(name.lower())
        table_runs.drop_runs_view(self.lineage, result)  # appended runs before: this write replaces them
        step = self.saved(frame, result)
        job_files.clear_own_table_location(self.lineage, spark, name, table)
        writer = job_files.saved_rows(self.lineage, spark, step.name, optimized_schema(frame)).write.mode("overwrite")
        if fmt:
            writer = writer.format(fmt)
        if partition_by:
            writer = writer.partitionBy(*partition_by)
        with profile.phase("write"):
            self.originals["saveAsTable"](writer, table)
        directory = job_files.table_location(spark, table)
        files = job_files.files_now(job_files.job_location(directory, "table"), fmt or "parquet") if directory else None
        job_files.record_write(self.lineage, step.name, name.lower(), fmt or "parquet", mode, partition_by, {},
                               directory, files)
        if record is not None and record.runs:
            job_files.drop_runs(self.lineage, [run for run in record.run_list() if run.result != step.name])
        self.done(step)

    def add_to_table(self, frame, write: table_runs.TableWrite) -> None:
        table_runs.add_to_table(self, frame, write)

    def save_path(self, writer, path: str | None) -> None:
        """A write to ``path``: a saved step named after it, then its rows written there."""
        settings = writer._write
        path = path or settings.options.pop("path", None)
        if path is None:
            raise UnsupportedLineage(f"DataFrameWriter.save without a path ({settings.source or 'parquet'}): "
                                     f"dltrace saves steps written to paths and tables")
        where = job_files.job_location(path, "output")
        fmt = job_files.file_format(settings.source, where)
        if settings.bucket_cols or settings.sort_cols or settings.num_buckets > 0 or settings.clustering_cols:
            raise UnsupportedLineage(f"bucketBy/sortBy/clusterBy on a write to {path}: Spark takes them only with "
                                     f"tables")
        job_files.check_replace_where(settings.options, path)
        job_files.check_not_a_source(self.lineage, where, path)
        name = job_files.output_name(self.lineage, job_files.table_name(where), str(where))
        frame = connect_frame(writer._df, writer._spark)
        written = job_files.WrittenStore(self.lineage.catalog).at(str(where))
        mode, partition_by = (settings.mode or "errorifexists").lower(), list(settings.partitioning_cols or [])
        dynamic = job_files.dynamic_overwrite(writer._spark, settings.options, mode, partition_by)
        adds = mode == "append" or dynamic  # the rows of earlier runs stay beside this run's
        # resumed: a whole write saved before, or an adding one that was this path's last run
        last = written.run_list()[-1].result if adds and written is not None else name
        whole = adds or written is None or not written.runs  # a whole write over runs is never skipped
        if whole and (resumed := self.resumed(frame, last)) is not None and job_files.written_here(written):
            self.done(resumed)
            return
        if not job_files.write_action(mode, where.exists(), f"writing {path}"):
            self.say(f"line {self.line()}: {path} exists (mode 'ignore'): nothing written")
            return
        earlier = written.run_list() if adds and where.exists() and job_files.written_here(written) else []
        foreign = adds and where.exists() and not earlier  # files beside this run's that are not dltrace's
        if foreign:
            self.say(f"line {self.line()}: {path} holds files dltrace did not write (or that changed since): "
                     f"a later read of it is a source of its own, lineage stops there")
        number = written.next_run() if earlier else 1
        run = job_files.run_name(self.lineage, name, number) if earlier else name
        new = run != name or not self.lineage.store.exists(run)  # no earlier save of this name to keep
        step = self.saved(frame, run)
        rows = job_files.saved_rows(self.lineage, writer._spark, run, optimized_schema(frame))
        out = rows.write.format(fmt).mode("append" if mode == "append" else "overwrite").options(**settings.options)
        if partition_by:
            out = out.partitionBy(*partition_by)
        with job_files.dropped_unless_written(self.lineage, run, new), profile.phase("write"):
            self.originals["save"](out, str(where))
        this = job_files.Run(run, time.time(), number,
                             job_files.partitions_of(rows, partition_by) if partition_by else None, dynamic)
        runs, gone = job_files.kept_runs([*earlier, this]) if adds else ([], [])
        job_files.record_write(self.lineage, name, str(where), fmt, settings.mode, partition_by,
                               dict(settings.options), files=None if foreign else job_files.files_now(where, fmt),
                               runs=runs)
        if written is not None and (not adds or foreign):  # the earlier runs' rows are not what the files hold
            gone = [r for r in written.run_list() if r.result not in (name, run)]
        job_files.drop_runs(self.lineage, gone)
        step.path = path
        self.done(step)

    def resumed(self, frame, name: str) -> Step | None:
        """With ``--resume``: the step, skipped, when result ``name`` was saved from the same
        query, semantics and representation over unchanged inputs."""
        lineage = self.lineage
        if not self.resume or not lineage.store.exists(name) or any(step.name == name for step in self.steps):
            return None  # a result this run saved (a second append of the same rows) is written again
        result = lineage.store.get(name)
        if (result.semantics, result.representation) == (self.semantics, self.representation) \
                and not lineage.store.staleness().get(name) \
                and result.query == lineage.expand(lineage.dataframe_sql(frame)):
            return Step(name, result.rows, 0.0, self.line(), skipped=True)
        return None

    def saved(self, frame, name: str) -> Step:
        """``frame`` saved as result ``name``, with the job's own Spark SQL settings (time zone,
        ANSI mode, ...) in force in dltrace's session while it runs."""
        line, started = self.line(), time.perf_counter()
        lineage = self.lineage
        self.say(f"line {line}: saving result {name} ...")
        if (profiled := profile.current()) is not None:
            profiled.begin("step", name, line)
            with profiled.phase("plain", apart=True):  # what the step costs plainly, for the profile only
                self.originals["save"](frame.write.format("noop").mode("overwrite"))
            started += profiled.entries[-1].plain_seconds or 0.0
        with session_conf(lineage.spark, job_files.settings_changed(frame._session, lineage.spark)):
            saved = lineage.save(frame, name, semantics=self.semantics, representation=self.representation)
        return Step(saved.name, saved.rows, time.perf_counter() - started, line)

    def written(self) -> str:
        """What a failure's line adds: the outputs this run wrote before it (``--resume`` skips them)."""
        saved = [step.path or step.name for step in self.steps if not step.skipped]
        if not saved:
            return " (no output of this run was written)"
        return f" (this run wrote {', '.join(saved)} before it; `dltrace run --resume` completes the run)"

    def done(self, step: Step) -> None:
        self.steps.append(step)
        if (profiled := profile.current()) is not None and (entry := profiled.end(step.rows)) is not None:
            entry.lineage_ids, entry.lineage_bytes = profile.stored_lineage(self.lineage, step.name)
        did = "saved before, skipped" if step.skipped else f"{step.rows} rows in {step.seconds:.1f} s"
        where = f", written to {step.path}" if step.path else ""
        self.say(f"line {step.line}: saved result {step.name}: {did}{where}")


def run_job(lineage, path: str, semantics: str = "control", representation: str = "set",
            say: Callable[[str], None] | None = None, argv: list[str] | None = None,
            resume: bool = False) -> list[Step]:
    """Run PySpark script ``path`` with ``argv``; its reads are sources, its writes saved steps.
    ``say`` takes a line of progress (each read, each step as it starts and ends)."""
    if not os.path.isfile(path):
        raise BadInput(f"no such script: {path}")
    script = os.path.abspath(path)
    job = JobRun(lineage, script, semantics, representation, resume, say or (lambda text: None))
    built = BuiltAt(script)
    with the_session(lineage.frames), io_as_steps(job), classic_decimal_literals(), classic_empty_fill(), \
            built.recording(), script_argv([path, *(argv or [])]):
        try:
            runpy.run_path(script, run_name="__main__")
        except SystemExit as stop:
            if stop.code not in (None, 0):
                raise JobError(f"{path} exited with status {stop.code}",
                               stop.code if isinstance(stop.code, int) else 1) from None
        except Exception as error:  # noqa: BLE001 - the script's own failure, as one line
            raise JobError(f"{path} line {failure_line(script, error, built)}{job.written()}",
                           error.exit_code if isinstance(error, UnsupportedLineage) else 1) from None
    return job.steps


def failure_line(script: str, error: Exception, built: BuiltAt) -> str:
    """``N: what failed`` for a script's failure: an analysis error at the line that built the
    DataFrame Spark rejects, in Spark's words (``BuiltAt``), as classic Spark raises it
    there; else at the line the script was at.  dltrace's own refusal exits 2, any other
    failure 1, as Python's does under spark-submit."""
    from pyspark.errors import AnalysisException

    unresolved = isinstance(error, AnalysisException) or (isinstance(error, BadInput)
                                                          and not isinstance(error, UnsupportedLineage))
    if unresolved:
        if (rejected := built.first_rejected()) is not None:
            line, spark_said = rejected
            return f"{line}: {one_line(spark_said)}"
    said = error if isinstance(error, DltraceError) else one_line(error)
    return f"{script_line(script, error.__traceback__)}: {said}"


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
def the_session(frames) -> Iterator[None]:
    """``frames`` (the session whose tables are the catalog's) as the one a script's
    ``SparkSession.builder.getOrCreate()`` returns: Connect's default and active session."""
    from pyspark.sql.connect.session import SparkSession

    default, active = SparkSession._default_session, getattr(SparkSession._active_session, "session", None)
    SparkSession._default_session = SparkSession._active_session.session = frames
    try:
        yield
    finally:
        SparkSession._default_session, SparkSession._active_session.session = default, active


@contextmanager
def script_argv(argv: list[str]) -> Iterator[None]:
    """``sys.argv`` as the script's, and its directory first on ``sys.path`` (its own modules
    import), as ``python job.py`` has them."""
    earlier, path = sys.argv, list(sys.path)
    sys.argv = argv
    sys.path.insert(0, os.path.dirname(os.path.abspath(argv[0])))
    try:
        yield
    finally:
        sys.argv, sys.path[:] = earlier, path


def connect_frame(plan, session):
    from pyspark.sql.connect.dataframe import DataFrame as ConnectFrame

    return ConnectFrame(plan, session)


@contextmanager
def classic_decimal_literals() -> Iterator[None]:
    """``F.lit(Decimal(...))`` typed by its digits, as classic Spark types it."""
    from pyspark.sql.connect.expressions import LiteralExpression
    from pyspark.sql.types import DecimalType

    earlier = LiteralExpression.__dict__["_infer_type"]

    def infer_type(cls, value):
        if isinstance(value, decimal.Decimal) and value.is_finite():
            precision, scale = decimal_digits(value)
            if precision <= MAX_DECIMAL_PRECISION:
                return DecimalType(precision, scale)
        return earlier.__func__(cls, value)

    LiteralExpression._infer_type = classmethod(infer_type)
    try:
        yield
    finally:
        LiteralExpression._infer_type = earlier


@contextmanager
def classic_empty_fill() -> Iterator[None]:
    """``df.na.fill({})`` (``fillna`` of an empty dict) is ``df``, as classic Spark has it;
    Connect's client raises CANNOT_BE_EMPTY."""
    from pyspark.sql.connect.dataframe import DataFrame

    earlier = DataFrame.fillna

    def fillna(frame, value, subset=None):
        return frame if isinstance(value, dict) and not value else earlier(frame, value, subset)

    DataFrame.fillna = fillna
    try:
        yield
    finally:
        DataFrame.fillna = earlier


@contextmanager
def io_as_steps(job: JobRun) -> Iterator[None]:
    """Connect's readers and writers, for the ``with`` block: file reads are sources, writes
    saved steps (``JobRun``); other sinks are refused.  dltrace's own reads and writes inside
    a step use Connect's methods as they were."""
    from pyspark.sql.connect.readwriter import DataFrameReader, DataFrameWriter

    def own(call: Callable) -> Callable:
        def with_originals(*args, **kwargs):
            restore(earlier)
            try:
                return call(*args, **kwargs)
            finally:
                restore(patches)
        return with_originals

    def load(reader, path=None, format=None, schema=None, **options):
        earlier[DataFrameReader, "load"](reader, path, format, schema, **options)  # sets the reader up, reads nothing
        return own(job.read)(reader, path)

    def save(writer, path=None, format=None, mode=None, partitionBy=None, **options):
        writer.mode(mode).options(**options)
        if partitionBy is not None:
            writer.partitionBy(partitionBy)
        if format is not None:
            writer.format(format)
        own(job.save_path)(writer, path)

    earlier: dict = {}  # Connect's own methods, filled before any patched one runs
    patches = {(DataFrameReader, "load"): load, (DataFrameWriter, "save"): save, **table_writes(job, own, earlier),
               **api_coverage.refusing_sinks()}  # mergeInto, writeStream
    earlier.update({key: getattr(*key) for key in patches})
    job.originals = {"save": earlier[DataFrameWriter, "save"], "saveAsTable": earlier[DataFrameWriter, "saveAsTable"]}
    restore(patches)
    try:
        yield
    finally:
        restore(earlier)


def table_writes(job: JobRun, own: Callable, earlier: dict) -> dict:
    """The patches of Connect's writes to tables: ``saveAsTable``, ``insertInto`` and ``writeTo``'s."""
    from pyspark.sql.connect.readwriter import DataFrameWriter, DataFrameWriterV2

    def save_as_table(writer, name, format=None, mode=None, partitionBy=None, **options):
        settings = writer._write
        if options or settings.options or settings.bucket_cols or settings.sort_cols or settings.clustering_cols:
            table_runs.refuse_table_settings(f"saveAsTable({name!r})")
        partition_by = [partitionBy] if isinstance(partitionBy, str) else list(partitionBy or
                                                                               settings.partitioning_cols)
        frame, mode, fmt = connect_frame(writer._df, writer._spark), mode or settings.mode, format or settings.source
        if (mode or "").lower() == "append":
            own(job.add_to_table)(frame, table_runs.appended(name, fmt, partition_by,
                                                             earlier[DataFrameWriter, "saveAsTable"]))
        else:
            own(job.save_table)(frame, name, mode, fmt, partition_by)

    def insert_into(writer, tableName, overwrite=None):
        own(job.add_to_table)(connect_frame(writer._df, writer._spark),
                              table_runs.inserted(writer, tableName, overwrite, earlier[DataFrameWriter, "insertInto"]))

    def v2(mode: str) -> Callable:
        def write(writer) -> None:
            settings = writer._write
            if settings.partitioning_columns or settings.options or settings.table_properties \
                    or settings.clustering_columns:
                table_runs.refuse_table_settings(f"writeTo({writer._table_name!r})")
            own(job.save_table)(connect_frame(writer._df, writer._spark), writer._table_name, mode,
                                writer._write.provider, [])
        return write

    def v2_adding(method: str) -> Callable:
        def write(writer) -> None:
            own(job.add_to_table)(connect_frame(writer._df, writer._spark),
                                  table_runs.added_by_v2(writer, method, earlier[DataFrameWriterV2, method]))
        return write

    def v2_overwrite(writer, condition) -> None:
        table_runs.refuse_condition(f"writeTo({writer._table_name!r}).overwrite(condition)")

    return {(DataFrameWriter, "saveAsTable"): save_as_table, (DataFrameWriter, "insertInto"): insert_into,
            (DataFrameWriterV2, "append"): v2_adding("append"),
            (DataFrameWriterV2, "overwritePartitions"): v2_adding("overwritePartitions"),
            (DataFrameWriterV2, "overwrite"): v2_overwrite,
            (DataFrameWriterV2, "create"): v2("error"), (DataFrameWriterV2, "replace"): v2("overwrite"),
            (DataFrameWriterV2, "createOrReplace"): v2("overwrite")}


def restore(methods: dict) -> None:
    for (cls, method), function in methods.items():
        setattr(cls, method, function)
