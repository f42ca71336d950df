"""``dltrace register NAME PATH``: a table with an id for each of its rows."""

from __future__ import annotations

import argparse
import sys

from dltrace.commands.common import Parents, columns_list, open_session
from dltrace.commands.tables import id_range
from dltrace.errors import BadInput


def add_parser(commands, parents: Parents) -> None:
    reg = commands.add_parser("register", parents=[parents.common], help="register a table: ids for its rows")
    reg.add_argument("name")
    reg.add_argument("path", nargs="?", help="a file, directory, glob or Delta table (a directory with _delta_log)")
    reg.add_argument("--table", metavar="[DB.]TABLE",
                     help="instead of PATH: a table of the Spark session's catalog (in place when Parquet)")
    reg.add_argument("--version", type=int, metavar="N",
                     help="a Delta table: the version of its log to register (default: the newest)")
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
    reg.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    if (args.path is None) == (args.table is None):
        raise BadInput("register takes a PATH or --table [DB.]TABLE (a table of the Spark catalog), one of them")
    session = open_session(args)
    if args.path is not None:
        say_if_written(session, args.path)
    entry = session.register(
        args.name,
        args.path,
        columns_list(args.key),
        columns_list(args.order_by),
        args.format,
        header=args.header,
        copy=args.copy,
        version=args.version,
        table=args.table,
    )
    print(f"registered {args.name}: {entry.rows} rows, code {entry.code}, {id_range(entry)}")
    if entry.delta:
        print(f"Delta table at version {entry.delta['version']}: {len(entry.files)} live files, read in place")
    if entry.changes:
        print(
            f"data version v{entry.version}: {entry.changes['unchanged']} rows unchanged (same ids), "
            f"{entry.changes['new']} new or changed (new ids), {entry.changes['removed']} gone"
        )
    return 0


def say_if_written(session, path: str) -> None:
    """One line on stderr when ``path`` holds files a job wrote under ``dltrace run``: as a
    registered source its rows' lineage stops there, where a job's read of it composes."""
    from dltrace.dataframe.job_files import job_location
    from dltrace.dataframe.read_back import overlapping

    written = overlapping(session, [str(job_location(path, "source"))])
    if written:
        steps = ", ".join(f"{record.path} (step {record.name})" for record in written)
        print(f"dltrace: warning: {path} holds what a job wrote under dltrace run, {steps}: registered as a "
              f"source, lineage stops at its rows (a job's spark.read of it composes down to the base rows)",
              file=sys.stderr)
