"""``dltrace explain --result NAME --row N``: the base rows behind a row of a saved result,
its UDFs' reasons (``--reasons``), or patterns describing them (``--summary``, dltrace/summary)."""

from __future__ import annotations

import argparse
import sys
from dataclasses import asdict

from dltrace.commands.common import OUTPUTS, Parents, open_session, reporting_warnings
from dltrace.commands.output import first_rows
from dltrace.dataframe import runs
from dltrace.formatting import output_limit, write_json, write_table
from dltrace.impact.backward import base_rows, explain, row_ids_by_table
from dltrace.result_pages import columns_of, from_files
from dltrace.summary.summaries import DEFAULT_PATTERNS, LINEAGE_SAMPLE, Summary, check_options

JSON_PAGE_IDS = 65_536  # base rows read at a time for --format json


def add_parser(commands, parents: Parents) -> None:
    explain = commands.add_parser("explain", parents=[parents.common],
                                  help="the base rows behind a row of a saved result")
    explain.add_argument("--result", required=True, help="a saved result")
    explain.add_argument("--row", type=int, required=True, help="its _row number")
    explain.add_argument("--run", type=int, metavar="K",
                         help="of an output a job wrote in runs: the row's run (impact's _run), --row its _row there")
    explain.add_argument("--format", choices=OUTPUTS, default="table")
    explain.add_argument("--limit", type=int, help="table format: at most N rows per table (50 by default)")
    explain.add_argument(
        "--reasons",
        action="store_true",
        help="also the reasons of the reason-capable UDFs that fed the row (re-run on its lineage only)",
    )
    add_summary_flags(explain)
    explain.set_defaults(handler=run)


@reporting_warnings
def run(args: argparse.Namespace) -> int:
    session = open_session(args)
    args.result = runs.result_of(session.catalog, args.result, args.run)
    return run_summary(session, args) if args.summary else explain_rows(session, args)


def explain_rows(session, args: argparse.Namespace) -> int:
    limit = output_limit(args)
    if args.format == "json":
        return explain_json(session, args, limit)
    through = session.store.upstream(args.result)
    # before any output: a failure prints nothing else; tables pyarrow reads as Spark would, without
    # Spark; only the rows printed are read (a DL of millions of ids: its first --limit rows)
    explained = explain(session, args.result, args.row, from_files=True, page=(0, limit))
    print(ids_by_table(args.result.lower(), args.row, explained.ids))
    if run := runs.runs_by_result(session.catalog).get(args.result.lower()):
        print(f"row {args.row} of {args.result.lower()} is from {run.label()}")
    if through:
        print(f"row {args.row} of {args.result.lower()} was computed through saved results: {', '.join(through)}")
    print()
    for table, frame in explained.items():
        more = f" (first {limit}: raise --limit)" if explained.ids[table] > limit else ""
        print(f"{table}: {_ids(explained.ids[table])}{more}")
        write_table(first_rows(frame, limit)[:limit], columns_of(frame), session.catalog, sys.stdout)
        print()
    if args.reasons:
        print_reasons(session, args, limit)
    return 0


def explain_json(session, args: argparse.Namespace, limit: int | None) -> int:
    """Every base row of the row's DL, one JSON object each, read ``JSON_PAGE_IDS`` ids at a
    time: a DL of any size is written in bounded memory."""
    saved, ids = row_ids_by_table(session, args.result, args.row)
    for table, table_ids in ids.items():
        for offset in range(0, len(table_ids), JSON_PAGE_IDS):
            page = base_rows(session, saved, table, table_ids[offset:offset + JSON_PAGE_IDS], from_files=True)
            rows = page.to_pylist() if from_files(page) else (row.asDict() for row in page.toLocalIterator())
            write_json(({"table": table, **row} for row in rows), sys.stdout)
    # stdout keeps one JSON object per base row
    counts = {table: len(table_ids) for table, table_ids in ids.items()}
    print(f"dltrace: {ids_by_table(args.result.lower(), args.row, counts)}", file=sys.stderr)
    if run := runs.runs_by_result(session.catalog).get(args.result.lower()):
        print(f"dltrace: row {args.row} of {args.result.lower()} is from {run.label()}", file=sys.stderr)
    if args.reasons:
        print_reasons(session, args, limit)
    return 0


def ids_by_table(result: str, row: int, ids: dict[str, int]) -> str:
    """How many of the row's DL ids each base table gave.

    >>> ids_by_table("q3", 0, {"customer": 1, "orders": 1, "lineitem": 7})
    'row 0 of q3: 9 ids in its DL: customer 1, orders 1, lineitem 7'
    >>> ids_by_table("q3", 1, {})
    'row 1 of q3: no ids in its DL (no base row made it)'
    """
    if not ids:
        return f"row {row} of {result}: no ids in its DL (no base row made it)"
    return f"row {row} of {result}: {_ids(sum(ids.values()))} in its DL: " + ", ".join(
        f"{table} {n}" for table, n in ids.items())


def _ids(n: int) -> str:
    return f"{n} id" if n == 1 else f"{n} ids"


def print_reasons(session, args: argparse.Namespace, limit: int | None) -> None:
    """``explain --reasons``: per reason-capable UDF call, its invocations on the row's lineage."""
    for found in session.explain_reasons(args.result, args.row):
        records = found.rows.to_dict("records")
        if args.format == "json":
            write_json(({"udf": found.udf, **record} for record in records), sys.stdout)
        else:
            more = f" (first {limit}: raise --limit)" if len(records) > limit else ""
            print(
                f"reasons of {found.call}: {found.invocations} invocations, on the rows of row {args.row}'s lineage, "
                f"re-run in reasoning mode{more}"
            )
            write_table(records[:limit], list(found.rows.columns), session.catalog, sys.stdout)
            print()
        if args.format != "table":
            print(f"dltrace: {found.invocations} invocations of {found.udf} re-run in reasoning mode", file=sys.stderr)


def add_summary_flags(explain: argparse.ArgumentParser) -> None:
    """The ``explain`` flags that ask for patterns instead of the rows."""
    explain.add_argument(
        "--summary", action="store_true", help="describe the base rows by patterns instead of listing them"
    )
    explain.add_argument("--patterns", type=int, default=DEFAULT_PATTERNS, metavar="K",
                         help=f"with --summary: at most K patterns per base table (default {DEFAULT_PATTERNS})")
    explain.add_argument("--sample", type=int, default=LINEAGE_SAMPLE, metavar="N",
                         help=f"with --summary: learn from at most N lineage rows per table (default {LINEAGE_SAMPLE})")


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


