"""Errors users see: one line each, with the exit status the CLI returns (docs/errors.md)."""

from __future__ import annotations


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
    """A construct the rewriter cannot give exact lineage for; never answered with wrong lineage."""


class CatalogError(DltraceError):
    """The catalog directory is unreadable, or written by a newer dltrace."""


class SourceChanged(CatalogError):
    """An in-place table's files changed since it was registered: register it again."""


class JavaMissing(DltraceError):
    """Spark needs Java 17 or newer and it is not there."""


def spark_error(error: Exception) -> DltraceError:
    """A Spark exception as one line: analysis errors are the user's, others are failures."""
    from pyspark.errors import AnalysisException

    text = (getattr(error, "getMessage", None) or (lambda: str(error)))()
    first = next((line.strip() for line in str(text).splitlines() if line.strip()), type(error).__name__)
    cls = BadInput if isinstance(error, AnalysisException) else DltraceError
    return cls(f"Spark: {first}")


MEMORY_HELP = (
    "the lineage is too large for Spark's memory: save the result (--save) instead of printing it, "
    "ask for fewer rows, or give Spark more memory (SPARK_DRIVER_MEMORY=16g; now {memory})"
)


def unexpected_error(error: BaseException, spark_log: str | None = None, memory: str = "8g") -> DltraceError:
    """Any other exception as one line: Spark out of memory, Spark's JVM gone, or a bug.

    Out of memory shows as ``java.lang.OutOfMemoryError`` in the error, or, when Spark's
    JVM died of it (a task that runs out of memory stops the whole local JVM), only in the
    JVM's log (``spark_log``).  A bug in dltrace gets its traceback written to a file
    named in the line, so the front door never shows a stack trace.
    """
    import traceback

    text = f"{type(error).__name__}: {error}"
    jvm_gone = type(error).__module__.startswith("py4j") or isinstance(error, ConnectionError)
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
