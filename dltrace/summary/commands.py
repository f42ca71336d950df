"""``explain --summary`` and ``lineage-sql``: the command-line side of dltrace/summary."""

from __future__ import annotations

import argparse
import sys
from dataclasses import asdict

from dltrace.errors import BadInput
from dltrace.formatting import output_limit, row_dicts, write_csv, write_json, write_table
from dltrace.summary.summaries import DEFAULT_PATTERNS, LINEAGE_SAMPLE, Summary, check_options

LINEAGE_SQL = "lineage-sql"


def add_summary_flags(explain: argparse.ArgumentParser) -> None:
    """The ``explain`` flags that ask for patterns instead of the rows."""
    explain.add_argument(
        "--summary", action="store_true", help="describe the base rows by patterns instead of listing them"
    )
    explain.add_argument("--patterns", type=int, default=DEFAULT_PATTERNS, metavar="K",
                         help=f"with --summary: at most K patterns per base table (default {DEFAULT_PATTERNS})")
    explain.add_argument("--sample", type=int, default=LINEAGE_SAMPLE, metavar="N",
                         help=f"with --summary: learn from at most N lineage rows per table (default {LINEAGE_SAMPLE})")


def add_lineage_sql_parser(commands, common: argparse.ArgumentParser) -> None:
    lineage = commands.add_parser(
        LINEAGE_SQL, parents=[common],
        help="saved results' lineage as SQL views: a spark-sql script, or --run a query over them")
    lineage.add_argument("--result", action="append", required=True,
                         help="a saved result (repeatable): views lineage_NAME and lineage_NAME_TABLE")
    lineage.add_argument("query", nargs="?", help="SQL text or @file.sql over the views (appended to the script)")
    lineage.add_argument("--run", action="store_true", help="run the query on Spark and print its rows")
    lineage.add_argument("--format", choices=("table", "json", "csv"), default="table")
    lineage.add_argument("--limit", type=int, help="with --run: at most N rows (table format: 50 by default)")


def run_summary(session, args: argparse.Namespace) -> int:
    check_options(args.patterns, args.sample)
    summary = session.summarize(args.result, args.row, args.patterns, args.sample)
    if args.format == "json":
        write_json(({"result": summary.result, "row": summary.row, **asdict(t)} for t in summary.tables), sys.stdout)
        return 0
    sys.stdout.write(summary_text(summary))
    return 0


def summary_text(summary: Summary) -> str:
    """The summary for people: per table, its patterns with recall and precision."""
    total = sum(t.lineage_rows for t in summary.tables)
    lines = [f"result {summary.result}, row {summary.row}: {total} base rows in {len(summary.tables)} table(s)"]
    for t in summary.tables:
        how = ("all of them, exact figures" if t.exact else
               f"a uniform sample of {t.sample}, estimates with 95% intervals")
        against = "the whole table" if t.table_sample == t.table_rows else f"{t.table_sample} sampled table rows"
        lines += ["", f"{t.table}: {t.lineage_rows} of its {t.table_rows} rows; patterns learned on {how}, "
                      f"against {against}"]
        for number, p in enumerate(t.patterns, 1):
            lines.append(f"  {number}. {p.predicate}")
            lines.append(f"     recall {_share(p.recall, p.recall_interval, t.exact)} ({p.lineage_rows} rows), "
                         f"precision {_share(p.precision, p.precision_interval, t.exact)} "
                         f"(of {p.table_rows} table rows matching)")
        lines.append(f"  together: {len(t.patterns)} pattern(s) cover "
                     f"{_share(t.covered, t.covered_interval, t.exact)} of {t.table}'s lineage rows")
    return "\n".join(lines) + "\n"


def _share(value: float, bounds: tuple[float, float], exact: bool) -> str:
    """``97.1%``, or ``97.1% [96.5-97.6]`` for an estimate.

    >>> _share(0.5, (0.5, 0.5), True), _share(0.97123, (0.9651, 0.9762), False)
    ('50.0%', '97.1% [96.5-97.6]')
    """
    text = f"{100 * value:.1f}%"
    return text if exact else f"{text} [{100 * bounds[0]:.1f}-{100 * bounds[1]:.1f}]"


def run_lineage_sql(session, args: argparse.Namespace, query_text) -> int:
    """Print the views as a ``spark-sql`` script, or with ``--run`` run the query over them."""
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
