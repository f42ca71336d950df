"""Errors users see: one line each, with the exit status the CLI returns (docs/errors.md)."""

from __future__ import annotations

import re


class DltraceError(Exception):
    """A failure dltrace reports as one line; ``exit_code`` 1 means the run failed.

    Line breaks in the message (a quoted query, a Spark message; any that ``str.splitlines``
    knows) become spaces, so that every error is one line whatever it quotes.

    >>> str(BadInput("near 'select\\n  x'"))
    "near 'select x'"
    """

    exit_code = 1

    def __init__(self, message: object = "") -> None:
        super().__init__(" ".join(line.strip() for line in str(message).splitlines() if line.strip()))


class BadInput(DltraceError):
    """The user's input is wrong (exit status 2): a query, a name, a path, an option."""

    exit_code = 2


class SqlSyntaxError(BadInput):
    """The SQL does not parse; the message gives line and column."""


class UnknownTable(BadInput):
    """A query names a table the catalog does not have."""


class UnknownColumn(BadInput):
    """A query names a column that no table in scope has, or that several have."""


class UnsupportedLineage(BadInput):
    """A construct the rewriter cannot give exact lineage for; never answered with wrong lineage.
    ``construct`` names it alone (e.g. "INTERSECT ALL"), for counts of what was refused."""

    def __init__(self, message: str, construct: str | None = None) -> None:
        super().__init__(message)
        self.construct = construct or message.split(" is not supported")[0]


class SparkInternalError(DltraceError):
    """Spark failed inside its own analyzer, planner or optimizer (SQLSTATE class XX): a bug in
    dltrace's lineage query, or in Spark when the query without lineage fails too.
    ``spark_said``: Spark's own first line."""

    def __init__(self, message: str, spark_said: str | None = None) -> None:
        super().__init__(message)
        self.spark_said = spark_said or message


class CatalogError(DltraceError):
    """The catalog directory is unreadable, or written by a newer dltrace."""


class SourceChanged(CatalogError):
    """An in-place table's files changed since it was registered: register it again."""


class JavaMissing(DltraceError):
    """Spark needs Java 17 or newer and it is not there."""


# Spark's SQLSTATE class XX: an internal error of Spark's (its optimizer, its plan checks),
# never something the user's query got wrong
INTERNAL_STATE = "XX"
DLTRACE_BUG = "a bug in dltrace, please report it"


# what gRPC's _InactiveRpcError says when a Spark Connect call fails before Spark answers
GRPC_FAILURE = re.compile(r'status = StatusCode\.(\w+)\s+details = "([^"]*)"')
FAILURE_ITEM = re.compile(r"\d+\. \w+: (\[.*)")  # "1. SparkArrayIndexOutOfBoundsException: [INVALID_ARRAY_INDEX] ..."
CONNECT_TOKEN_HELP = " (the server takes clients that give its token, in SPARK_CONNECT_AUTHENTICATE_TOKEN)"


def spark_message(error: Exception) -> tuple[str, str | None]:
    """The first line of a Spark failure and its SQLSTATE: from PySpark's exception, or from
    the Java exception inside py4j's (a failure at planning or collect time)."""
    java = getattr(error, "java_exception", None)
    state = None
    if java is not None:
        try:
            text = str(java.getMessage())
            state = str(java.getSqlState()) if hasattr(java, "getSqlState") else None
        except Exception:  # noqa: BLE001 - the JVM may be gone; fall back to py4j's text
            text = str(error)
    else:
        text = (getattr(error, "getMessage", None) or (lambda: str(error)))()
        state = getattr(error, "getSqlState", lambda: None)()
    rpc = GRPC_FAILURE.search(str(text))
    if rpc:  # a Spark Connect call gRPC ended: its status and details, not the wrapper's repr
        status, details = rpc.groups()
        hint = CONNECT_TOKEN_HELP if status == "UNAUTHENTICATED" else ""
        return f"the Connect server refused the call: {status}: {details}{hint}", None
    lines = [line.strip() for line in str(text).splitlines() if line.strip()]
    lines = [line for line in lines if not line.startswith("An error occurred while calling")] or lines
    if lines and "[STAGE_MATERIALIZATION_MULTIPLE_FAILURES]" in lines[0]:
        # stages of one query failed at once (adaptive execution): the first failure, as plain
        # Spark raises it when a plan of one stage fails alone; not the wrapper's internal state
        failures = [FAILURE_ITEM.match(line) for line in lines[1:]]
        lines = [match.group(1) for match in failures if match][:1] or lines
        state = None
    first = lines[0].removeprefix(": ") if lines else type(error).__name__
    if state is None and "SQLSTATE: " in first:
        state = first.rsplit("SQLSTATE: ", 1)[1].split()[0]
    return first, state


def spark_error(error: Exception, lineage_query: bool = True) -> DltraceError:
    """A Spark exception as one line with Spark's error class: analysis errors are the user's
    (exit 2), Spark's internal errors a dltrace bug when Spark was given dltrace's lineage
    query, else (``lineage_query`` False: the query as written) a bug in Spark; others failures."""
    from pyspark.errors import AnalysisException

    first, state = spark_message(error)
    if "spark.driver.maxResultSize" in str(error):
        return DltraceError(f"the rows asked for are more than Spark brings to the driver at once: {RESULT_SIZE_HELP}")
    if state and state.startswith(INTERNAL_STATE) and not lineage_query:
        return SparkInternalError(f"Spark failed inside its planner on the query as written, without lineage (a bug in "
                                  f"Spark, not in dltrace: write the query another way): Spark: {first}", first)
    if state and state.startswith(INTERNAL_STATE):
        return SparkInternalError(f"Spark failed inside its planner ({DLTRACE_BUG}, with the query; `dltrace "
                                  f"rewrite` prints the lineage query Spark was given): Spark: {first}", first)
    cls = BadInput if isinstance(error, AnalysisException) else DltraceError
    return cls(f"Spark: {first}")


def lineage_query_rejected(error: Exception, lineage_sql: str) -> DltraceError:
    """Spark refused dltrace's lineage query of a query it accepts: a dltrace bug (exit 1),
    with the lineage query written to a file to report."""
    import tempfile

    if isinstance(error, SparkInternalError):
        first = error.spark_said
    else:
        first, _ = spark_message(error) if not isinstance(error, DltraceError) else (str(error), None)
    with tempfile.NamedTemporaryFile("w", prefix="dltrace-lineage-query-", suffix=".sql", delete=False) as file:
        file.write(lineage_sql + "\n")
    return DltraceError(f"Spark rejected dltrace's lineage query of a query it runs ({DLTRACE_BUG} with the query "
                        f"in {file.name}): {first.removeprefix('Spark: ')}")


def jvm_alive() -> bool:
    """Whether this process's Spark JVM still answers (py4j's gateway is there and replies)."""
    try:
        from pyspark import SparkContext

        context = SparkContext._active_spark_context
        if context is None or context._jvm is None:
            return False
        context._jvm.java.lang.System.currentTimeMillis()
        return True
    except Exception:  # noqa: BLE001 - any failure to reach it means it is gone
        return False


RESULT_SIZE_HELP = (
    "save the result (--save; shared sets are kept once), ask for fewer rows (--limit), use the table format "
    "(shared sets read once), or raise the limit (SPARK_DRIVER_MAX_RESULT_SIZE=4g; Spark's "
    "spark.driver.maxResultSize)"
)
MEMORY_HELP = (
    "the lineage is too large for Spark's memory: save the result (--save) instead of printing it, "
    "ask for fewer rows, or give Spark more memory (SPARK_DRIVER_MEMORY=16g; now {memory})"
)


def unexpected_error(error: BaseException, spark_log: str | None = None, memory: str = "8g") -> DltraceError:
    """Any other exception as one line: Spark out of memory, Spark's JVM gone, or a bug.

    Out of memory shows as ``java.lang.OutOfMemoryError`` in the error, or, when Spark's
    JVM died of it (a task that runs out of memory stops the whole local JVM), only in the
    JVM's log (``spark_log``), read only when the JVM is checked gone (``jvm_alive``).  A
    Java exception (py4j's ``Py4JJavaError``) is a Spark failure, reported as one.  A bug
    in dltrace gets its traceback written to a file
    named in the line, so the front door never shows a stack trace.
    """
    import traceback

    text = f"{type(error).__name__}: {error}"
    if hasattr(error, "java_exception") and "OutOfMemoryError" not in text:
        return spark_error(error)  # a Java exception: the JVM answered, so it is alive
    jvm_gone = (type(error).__module__.startswith("py4j") or isinstance(error, ConnectionError)) and not jvm_alive()
    logged = ""
    if jvm_gone and spark_log:
        try:
            with open(spark_log, errors="replace") as log:
                logged = log.read()[-200_000:]
        except OSError:
            pass
    if "OutOfMemoryError" in text or "OutOfMemoryError" in logged:
        return DltraceError(f"Spark ran out of memory: {MEMORY_HELP.format(memory=memory)}")
    if jvm_gone:
        where = f" (its log: {spark_log})" if spark_log else ""
        return DltraceError(f"Spark's JVM stopped unexpectedly{where}: {text.splitlines()[0][:300]}")
    import tempfile

    with tempfile.NamedTemporaryFile("w", prefix="dltrace-traceback-", suffix=".txt", delete=False) as file:
        file.write("".join(traceback.format_exception(error)))
    return DltraceError(f"internal error (a bug in dltrace, please report it): {text.splitlines()[0][:300]}; "
                        f"traceback in {file.name}")
