"""``dltrace lineage-sql --result NAME``: saved results' lineage as SQL views (dltrace/summary)."""

from __future__ import annotations

import argparse
import sys

from dltrace.commands.common import Parents, open_session, query_text, reporting_warnings
from dltrace.errors import BadInput
from dltrace.formatting import output_limit, row_dicts, write_csv, write_json, write_table


def add_parser(commands, parents: Parents) -> None:
    lineage = commands.add_parser(
        "lineage-sql", parents=[parents.common],
        help="saved results' lineage as SQL views: a spark-sql script, or --run a query over them")
    lineage.add_argument("--result", action="append", required=True,
                         help="a saved result (repeatable): views lineage_NAME and lineage_NAME_TABLE")
    lineage.add_argument("query", nargs="?", help="SQL text or @file.sql over the views (appended to the script)")
    lineage.add_argument("--run", action="store_true", help="run the query on Spark and print its rows")
    lineage.add_argument("--format", choices=("table", "json", "csv"), default="table")
    lineage.add_argument("--limit", type=int, help="with --run: at most N rows (table format: 50 by default)")
    lineage.set_defaults(handler=run)


@reporting_warnings
def run(args: argparse.Namespace) -> int:
    """Print the views as a ``spark-sql`` script, or with ``--run`` run the query over them."""
    session = open_session(args)
    query = query_text(args.query) if args.query else None
    if not args.run:
        sys.stdout.write(session.lineage_script(args.result, query))
        return 0
    if not query:
        raise BadInput("lineage-sql --run needs a QUERY over the lineage views")
    limit = output_limit(args)
    session.lineage_views(args.result)
    frame = session.run(query)
    if args.format == "table":
        rows = list(row_dicts(frame.limit(limit + 1).collect()))
        write_table(rows[:limit], frame.columns, session.catalog, sys.stdout)
        more = " (more rows: raise --limit)" if len(rows) > limit else ""
        print(f"({min(len(rows), limit)} rows{more})")
        return 0
    rows = row_dicts((frame.limit(limit) if limit is not None else frame).toLocalIterator())
    if args.format == "json":
        write_json(rows, sys.stdout)
    else:
        write_csv(rows, frame.columns, sys.stdout)
    return 0
