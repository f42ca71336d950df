"""The ``dltrace`` command line (docs/architecture.md, "Public interface"): the commands are
modules of ``dltrace/commands``, each adding its own parser and handler.  Errors: one line on
stderr, exit 2 for bad input, 1 for failures."""

from __future__ import annotations

import argparse
import sys

from dltrace import progress, server
from dltrace.commands import COMMANDS
from dltrace.commands.common import parents
from dltrace.errors import BadInput, DltraceError, spark_error, unexpected_error


class OneLineParser(argparse.ArgumentParser):
    """Usage errors as one line on stderr with exit status 2, like every other bad input."""

    def error(self, message: str):
        self.exit(2, f"dltrace: error: {BadInput(message)} (see `{self.prog} --help`)\n")


def parser() -> argparse.ArgumentParser:
    top = OneLineParser(prog="dltrace", description="Forward data lineage for Spark SQL.")
    commands = top.add_subparsers(dest="command", required=True, metavar="COMMAND")
    shared = parents()
    for command in COMMANDS:
        command.add_parser(commands, shared)
    return top


def quiet_pyspark_error_logs() -> None:
    """PySpark logs every Spark error it raises as a JSON stack trace on stderr; the CLI
    reports the error itself, in one line.  Py4J logs tracebacks through the root logger
    when Ctrl-C interrupts a call to the JVM: the CLI says "interrupted" instead."""
    import logging

    from pyspark.logger import PySparkLogger

    for name in ("SQLQueryContextLogger", "DataFrameQueryContextLogger"):
        PySparkLogger.getLogger(name).disabled = True
    if not logging.getLogger().handlers:
        logging.getLogger().addHandler(logging.NullHandler())


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    quiet_pyspark_error_logs()
    try:
        return run(args)
    except DltraceError as error:
        print(f"dltrace: error: {error}", file=sys.stderr)
        return error.exit_code
    except KeyboardInterrupt:
        print("dltrace: interrupted", file=sys.stderr)
        return 130
    except Exception as error:  # a Spark/Java failure must not end in a stack trace
        from pyspark.errors import PySparkException

        from dltrace.spark import DEFAULT_CONF, jvm_log_path

        if isinstance(error, PySparkException) and "OutOfMemoryError" not in str(error):
            wrapped = spark_error(error)
        else:
            wrapped = unexpected_error(error, str(jvm_log_path()), DEFAULT_CONF["spark.driver.memory"])
        print(f"dltrace: error: {wrapped}", file=sys.stderr)
        return wrapped.exit_code


def run(args: argparse.Namespace) -> int:
    """The handler the command's module set (``dltrace/commands``), on the warm server when
    one runs (dltrace/server.py), with Spark's progress on stderr when it is a terminal
    (dltrace/progress.py)."""
    warm = getattr(args, "uses_spark", True) and server.use_if_running(getattr(args, "master", None),
                                                                       say_used=getattr(args, "says_spark", False))
    try:
        with progress.shown(getattr(args, "quiet", False), getattr(args, "verbose", False)):
            return args.handler(args)
    except Exception as error:
        if warm and not server.alive(warm["pid"]):  # the Spark it ran on went away
            raise server.Stopped(warm, error) from None
        raise
    finally:
        if warm:
            server.touch_used()


if __name__ == "__main__":
    sys.exit(main())
