"""The ``dltrace`` command line (docs/architecture.md, "Public interface").  Errors: one line on stderr, exit 2 for bad
input, 1 for failures."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from dltrace.errors import BadInput, DltraceError, spark_error, unexpected_error
from dltrace.formatting import (
    DL,
    DL_VALUES,
    check_distinct_columns,
    output_limit,
    row_dicts,
    table_footer,
    write_csv,
    write_json,
    write_table,
)
from dltrace.granularity import GranuleDecoder, split_lineage_on
from dltrace.impact.commands import COMMANDS, add_parsers, run_command, save_for_sql
from dltrace.pipeline import Outcome, Statement, check_result_name, run_statement, split_statements
from dltrace.rewriter.representation import REPRESENTATIONS
from dltrace.tables import add_parser as add_tables_parser
from dltrace.tables import id_range, run_tables

FORMATS = ("table", "json", "csv")


def query_text(argument: str) -> str:
    """``QUERY`` or ``@file.sql``."""
    if argument.startswith("@"):
        path = Path(argument[1:])
        try:
            return path.read_text()
        except OSError as error:
            raise BadInput(f"cannot read query file {path}: {error.strerror}") from None
    return argument


def columns_list(text: str | None) -> list[str] | None:
    return [c.strip() for c in text.split(",") if c.strip()] if text else None


class OneLineParser(argparse.ArgumentParser):
    """Usage errors as one line on stderr with exit status 2, like every other bad input."""

    def error(self, message: str):
        self.exit(2, f"dltrace: error: {BadInput(message)} (see `{self.prog} --help`)\n")


def parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--catalog", help="catalog directory (default: $DLTRACE_CATALOG or ./.dltrace)")
    common.add_argument(
        "--master", help="Spark master (default: $SPARK_MASTER or local[*]; SPARK_REMOTE for Spark Connect)"
    )
    lineage = argparse.ArgumentParser(add_help=False)
    lineage.add_argument("--semantics", choices=("control", "data"), default="control")
    lineage.add_argument("--repr", choices=tuple(REPRESENTATIONS), default="set",
                         help="lineage sets: set (array<bigint>, native SQL), bdd (roBDD bytes via Arrow UDFs)")
    lineage.add_argument(
        "--lineage-on", metavar='"EXPR, EXPR"',
        help='lineage on combinations of these values instead of base rows ("": lineage off)'
    )

    top = OneLineParser(prog="dltrace", description="Forward data lineage for Spark SQL.")
    commands = top.add_subparsers(dest="command", required=True, metavar="COMMAND")

    reg = commands.add_parser("register", parents=[common], help="register a table: ids for its rows")
    reg.add_argument("name")
    reg.add_argument("path")
    reg.add_argument("--key", help="key columns, comma separated (needed for revisions)")
    reg.add_argument("--order-by", help="id order, comma separated (chronological clusters lineage)")
    reg.add_argument(
        "--format", choices=("parquet", "csv", "json", "orc"), help="source format (default: from the path)"
    )
    reg.add_argument(
        "--copy",
        action="store_true",
        help="Parquet without --order-by: copy the rows with their ids instead of reading them in place",
    )
    reg.add_argument(
        "--header",
        action=argparse.BooleanOptionalAction,
        help="CSV: the first row holds the column names (default: yes, unless it looks like data)",
    )

    sql = commands.add_parser("sql", parents=[common, lineage], help="run a query with lineage")
    sql.add_argument("query", help="SQL text or @file.sql")
    sql.add_argument("--format", choices=FORMATS, default="table")
    sql.add_argument("--limit", type=int, help="at most N rows (table format: 50 by default)")
    sql.add_argument("--save", metavar="NAME", help="keep the result with its lineage for impact and explain")

    rew = commands.add_parser(
        "rewrite", parents=[common, lineage], help="print the lineage query as a spark-sql script"
    )
    rew.add_argument("query", help="SQL text or @file.sql")

    script = commands.add_parser(
        "run",
        parents=[common, lineage],
        help="run a pipeline script: CREATE TABLE name AS query (saved steps), CREATE VIEW, queries",
    )
    script.add_argument("file", help="a file of ;-separated statements (- for standard input)")
    script.add_argument("--format", choices=FORMATS, default="table", help="how its queries' rows are printed")
    script.add_argument("--limit", type=int, help="at most N rows per query (table format: 50 by default)")

    views = commands.add_parser("views", parents=[common], help="list the catalog's views, or drop one")
    views.add_argument("action", nargs="?", choices=("list", "drop"), default="list")
    views.add_argument("name", nargs="?", help="the view to drop")

    demo = commands.add_parser("demo", parents=[common], help="end to end on generated TPC-H data")
    demo.add_argument("--sf", type=float, default=0.01, help="TPC-H scale factor (default 0.01)")
    demo.add_argument("--data", default="data", help="where generated data is cached (default ./data)")
    add_parsers(commands, common)
    add_tables_parser(commands, common)
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
    from dltrace.session import LineageSession, check_savable

    if args.command == "demo":
        from dltrace.demo import demo

        return demo(args.catalog, Path(args.data), args.sf, args.master)
    session = LineageSession(args.catalog, master=args.master)
    if args.command == "tables":
        return run_tables(session.catalog, args)
    if args.command == "register":
        entry = session.register(
            args.name,
            args.path,
            columns_list(args.key),
            columns_list(args.order_by),
            args.format,
            header=args.header,
            copy=args.copy,
        )
        print(f"registered {args.name}: {entry.rows} rows, code {entry.code}, {id_range(entry)}")
        if entry.changes:
            print(
                f"data version v{entry.version}: {entry.changes['unchanged']} rows unchanged (same ids), "
                f"{entry.changes['new']} new or changed (new ids), {entry.changes['removed']} gone"
            )
        return 0
    if args.command in COMMANDS:
        return run_command(session, args, query_text)
    if args.command == "run":
        return run_pipeline(session, args)
    if args.command == "views":
        return views_command(session, args)
    query, lineage_on = split_lineage_on(query_text(args.query), args.lineage_on)
    if args.command == "rewrite":
        sys.stdout.write(session.script(query, args.semantics, args.repr, lineage_on))
        return 0
    # bad options fail before Spark starts
    if args.save:
        check_savable(lineage_on)
        check_result_name(args.save)
    limit = output_limit(args)
    if lineage_on is None and is_create(query):
        if args.save:
            raise BadInput("--save names the result of a query; CREATE TABLE name AS ... saves it as name already")
        report_outcome(
            session, run_statement(session, Statement(query.strip(), 1, 1), args.semantics, args.repr), args, total=0
        )
        return 0
    frame = session.sql(query, args.semantics, args.repr, lineage_on=lineage_on)
    if args.save:
        frame = save_for_sql(session, frame, args.save, query, args.semantics, args.repr)
    print_rows(session, frame, args, limit, GranuleDecoder(session, query, lineage_on) if lineage_on else None)
    return 0


def print_rows(session, frame, args: argparse.Namespace, limit: int | None, granules: GranuleDecoder | None) -> None:
    """A query's rows with lineage on stdout, as ``--format`` says."""
    with session.executing(frame):
        write_rows(session, frame, args, limit, granules)


def write_rows(session, frame, args: argparse.Namespace, limit: int | None, granules: GranuleDecoder | None) -> None:
    """``print_rows``' work, every Spark action of it inside ``session.executing``."""
    columns = frame.columns
    check_distinct_columns(columns)
    if args.format == "table":
        rows = table_rows(session, frame, limit + 1)
        write_table(rows[:limit], columns, session.catalog, sys.stdout, granules.describe if granules else None)
        print(table_footer(min(len(rows), limit), frame.count() if len(rows) > limit else None))
        return
    rows = row_dicts((frame.limit(limit) if limit is not None else frame).toLocalIterator())
    if granules:
        rows, columns = granules.with_values(rows), [*columns, DL_VALUES]
    if args.format == "json":
        write_json(rows, sys.stdout)
    else:
        write_csv(rows, columns, sys.stdout)


def table_rows(session, frame, limit: int) -> list[dict]:
    """The first ``limit`` rows for the table format.  Sets the rows share are read once,
    not once per row, and joined to each row's own ids here (TPC-H Q11: each row's DL is a
    shared set of ~32,000 ids at SF 1)."""
    import numpy as np

    own, sets = session.shared_lineage(frame)
    rows = list(row_dicts(own.limit(limit).collect()))
    if sets:
        shared = np.unique(
            np.concatenate([s.toArrow().column(0)[0].values.to_numpy(zero_copy_only=False) for s in sets])
        )
        for row in rows:
            row[DL] = np.union1d(np.asarray(row[DL], dtype=np.int64), shared)
    return rows


def is_create(query: str) -> bool:
    """True for a ``CREATE ...`` statement (``sql`` runs one as a one-statement script)."""
    words = query.lstrip().split(None, 1)
    return bool(words) and words[0].upper() == "CREATE"


def run_pipeline(session, args: argparse.Namespace) -> int:
    """``dltrace run FILE``: each statement in order, progress on stderr, queries' rows on stdout."""
    path = args.file
    text = sys.stdin.read() if path == "-" else query_text("@" + path)
    output_limit(args)  # a bad --limit fails before anything runs
    total = len(split_statements(text))
    session.run_script(text, args.semantics, args.repr, on_outcome=lambda o: report_outcome(session, o, args, total))
    return 0


def report_outcome(session, outcome: Outcome, args: argparse.Namespace, total: int) -> None:
    """One progress line per statement on stderr (name, rows, seconds); a query's rows on stdout."""
    where = f"[{outcome.statement.number}/{total}] line {outcome.statement.line}: " if total else ""
    if outcome.kind == "table":
        did = "exists, skipped" if outcome.skipped else f"{outcome.rows} rows in {outcome.seconds:.1f} s"
        print(f"dltrace: {where}saved result {outcome.name}: {did}", file=sys.stderr, flush=True)
    elif outcome.kind == "view":
        print(f"dltrace: {where}defined view {outcome.name}", file=sys.stderr, flush=True)
    else:
        print(f"dltrace: {where}query: {outcome.statement.head}", file=sys.stderr, flush=True)
        decoder = GranuleDecoder(session, outcome.statement.text, None) if outcome.lineage_on else None
        print_rows(session, outcome.frame, args, output_limit(args), decoder)
        sys.stdout.flush()


def views_command(session, args: argparse.Namespace) -> int:
    from dltrace.views import ViewStore

    store = ViewStore(session.catalog)
    if args.action == "drop":
        if not args.name:
            raise BadInput("views drop needs the NAME of a view")
        store.drop(args.name)
        print(f"dropped view {args.name.lower()}")
        return 0
    records = [{"name": v.name, "query": " ".join(v.query.split())} for v in store.all().values()]
    write_table(records, ["name", "query"], session.catalog, sys.stdout)
    print(f"({len(records)} views)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
