"""``dltrace impact --source "TABLE WHERE ..."``: the output rows bad source rows affected."""

from __future__ import annotations

import argparse
import sys
import warnings

from dltrace.commands.common import OUTPUTS, Parents, open_session, query_text, reporting_warnings
from dltrace.commands.output import first_rows
from dltrace.dataframe import runs
from dltrace.errors import BadInput
from dltrace.formatting import output_limit, table_footer, write_json, write_table
from dltrace.impact.search import MODES, ImpactWarning, collect_bad_ids, impact, matches_nothing
from dltrace.impact.source import SOURCE_FORM, parse_source
from dltrace.impact.what_if import CHANGES
from dltrace.result_format import time_text
from dltrace.result_pages import columns_of, count_of


def add_parser(commands, parents: Parents) -> None:
    impact = commands.add_parser("impact", parents=[parents.common], help="the output rows bad source rows affected")
    impact.add_argument("--source", required=True, help=f"the bad rows: {SOURCE_FORM}")
    target = impact.add_mutually_exclusive_group()
    target.add_argument("--result", help="a saved result (dltrace sql QUERY --save NAME); neither: every saved result")
    target.add_argument("--query", help="SQL text or @file.sql, run again with lineage for the bad rows only")
    impact.add_argument("--run", type=int, metavar="K",
                        help="with --result OUTPUT (a job's output written in runs): run K's rows only")
    impact.add_argument("--since", metavar="DATE",
                        help="with --result OUTPUT: the rows of runs written at DATE (YYYY-MM-DD[THH:MM]) or later")
    impact.add_argument("--mode", choices=MODES, help="stored (default with --result) or reeval (default with --query)")
    impact.add_argument("--semantics", choices=("control", "data"), default="control", help="for --query")
    impact.add_argument("--no-index", action="store_true", help="stored mode: scan the result, not its forward index")
    correction = impact.add_mutually_exclusive_group()
    correction.add_argument("--if-removed", action="store_true",
                            help="what-if: the rows of every result that change, vanish or appear without the bad rows")
    correction.add_argument("--if-changed", metavar="'COL = EXPR, ...'",
                            help="what-if: the same with the bad rows' columns set (the expressions read the row)")
    impact.add_argument("--format", choices=OUTPUTS, default="table")
    impact.add_argument("--limit", type=int, help="at most N rows (table format: 50 by default)")
    impact.set_defaults(handler=run)


@reporting_warnings
def run(args: argparse.Namespace) -> int:
    from pyspark.errors import PySparkException

    session = open_session(args)
    if args.if_removed or args.if_changed is not None:
        return what_if(session, args)
    query = query_text(args.query) if args.query is not None else None
    limit = output_limit(args)
    if args.result is None and query is None:
        if args.run is not None or args.since is not None:
            raise BadInput("--run and --since choose runs of one output: give --result OUTPUT")
        return impact_everywhere(session, args, limit)
    since = runs.moment(args.since, "--since") if args.since is not None else None
    answer = impact(session, args.source, result=args.result, query=query, mode=args.mode,
                    semantics=args.semantics, use_index=not args.no_index, from_files=True, run=args.run, since=since)
    reeval = (args.mode or ("stored" if args.result else "reeval")) == "reeval"
    source = parse_source(args.source, session.catalog)
    try:
        rows = first_rows(answer, limit)
    except PySparkException:
        if reeval:  # a predicate that fails only when it runs (a bad cast) is bad input
            collect_bad_ids(session, source)
        raise
    if not rows and reeval and matches_nothing(session, source):  # stored mode has said so already
        warnings.warn(ImpactWarning(f"no rows match the source '{source.text}': nothing is affected"), stacklevel=2)
    if args.format == "json":
        write_json(rows[:limit] if limit is not None else rows, sys.stdout)
        return 0
    write_table(rows[:limit], columns_of(answer), session.catalog, sys.stdout)
    print(table_footer(min(len(rows), limit), count_of(answer) if len(rows) > limit else None, "affected rows"))
    return 0


def impact_everywhere(session, args: argparse.Namespace, limit: int | None) -> int:
    """Every saved result whose lineage reaches the source's table: table output gives a
    line per result with its count, then its rows; JSON one object per affected row, with
    the result's name in ``"result"``."""
    found = impact(session, args.source, mode=args.mode, use_index=not args.no_index, from_files=True)
    of_run = runs.runs_by_result(session.catalog)
    affected = 0
    for name, answer in found.items():
        rows = first_rows(answer, limit)
        run = of_run.get(name)
        if args.format == "json":
            tag = {runs.RUN: run.number, runs.RUN_AT: time_text(run.written_at)} if run else {}
            write_json(({"result": name, **tag, **row} for row in rows[:limit]), sys.stdout)
            continue
        count = len(rows) if len(rows) <= limit else count_of(answer)
        affected += count
        more = f" (first {limit}: raise --limit)" if count > limit else ""
        print(f"{name}{f' ({run.label()})' if run else ''}: {count} affected rows{more}")
        if rows and limit:
            write_table(rows[:limit], columns_of(answer), session.catalog, sys.stdout)
            print()
    if args.format == "table":
        table = parse_source(args.source, session.catalog).table
        print(f"({affected} affected rows in {len(found)} saved results whose lineage reaches {table})")
    return 0


def what_if(session, args: argparse.Namespace) -> int:
    """``--if-removed`` / ``--if-changed``: per saved result a line of counts, then its changes
    (a table of ``change`` and the row, a changed row's values as ``before -> after``); JSON
    one object per change with ``result`` and ``change``, a changed row's ``before`` and ``after``."""
    if args.mode or args.query is not None or args.run is not None or args.since is not None or args.no_index:
        raise BadInput("--if-removed and --if-changed take no --mode, --query, --run, --since or --no-index: "
                       "they recompute the saved results (--result NAME, or every one reading the table)")
    limit = output_limit(args)
    answers = session.what_if(args.source, removed=args.if_removed, changes=args.if_changed, result=args.result)
    for name, answer in answers.items():
        rows = answer.rows()
        if args.format == "json":
            write_json(({"result": name, **row} for row in rows[:limit]), sys.stdout)
            continue
        counts = {change: sum(1 for row in rows if row["change"] == change) for change in CHANGES}
        key = f", paired by {', '.join(answer.key)}" if answer.key else ""
        print(f"{name}: {', '.join(f'{n} {change}' for change, n in counts.items())} "
              f"(recomputed {answer.recomputed}{key})")
        if rows and limit:
            write_table([shown(row) for row in rows[:limit]], ["change", *session.store.get(name).columns],
                        session.catalog, sys.stdout)
            print()
    return 0


def shown(row: dict) -> dict:
    """A change as a table row: a changed value as ``before -> after``."""
    if row["change"] != CHANGES[0]:
        return row
    after = row["after"]
    return {"change": row["change"], **{column: value if value == after[column] else f"{value} -> {after[column]}"
                                        for column, value in row["before"].items()}}
