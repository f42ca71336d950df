"""The ``impact``, ``explain`` and ``results`` commands and ``sql --save`` (docs/architecture.md, "Public interface").

Warnings about an answer that is still given (a source matching no rows, a result older
than its data) go to stderr as one line each, ``dltrace: warning: ...``; the exit status
stays 0.
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
import warnings
from dataclasses import asdict

from dltrace.errors import BadInput
from dltrace.formatting import output_limit, row_dicts, table_footer, write_json, write_table
from dltrace.impact.search import MODES, ImpactWarning, collect_bad_ids, matches_nothing
from dltrace.impact.source import SOURCE_FORM, parse_source
from dltrace.results import ResultStore
from dltrace.summary.commands import (
    LINEAGE_SQL,
    add_lineage_sql_parser,
    add_summary_flags,
    run_lineage_sql,
    run_summary,
)

COMMANDS = ("impact", "explain", "results", LINEAGE_SQL)
OUTPUTS = ("table", "json")


def add_parsers(commands, common: argparse.ArgumentParser) -> None:
    """The subcommands, added to the ``dltrace`` parser."""
    impact = commands.add_parser("impact", parents=[common], help="the output rows bad source rows affected")
    impact.add_argument("--source", required=True, help=f"the bad rows: {SOURCE_FORM}")
    target = impact.add_mutually_exclusive_group()
    target.add_argument("--result", help="a saved result (dltrace sql QUERY --save NAME); neither: every saved result")
    target.add_argument("--query", help="SQL text or @file.sql, run again with lineage for the bad rows only")
    impact.add_argument("--mode", choices=MODES, help="stored (default with --result) or reeval (default with --query)")
    impact.add_argument("--semantics", choices=("control", "data"), default="control", help="for --query")
    impact.add_argument("--no-index", action="store_true", help="stored mode: scan the result, not its forward index")
    impact.add_argument("--format", choices=OUTPUTS, default="table")
    impact.add_argument("--limit", type=int, help="at most N rows (table format: 50 by default)")

    explain = commands.add_parser("explain", parents=[common], help="the base rows behind a row of a saved result")
    explain.add_argument("--result", required=True, help="a saved result")
    explain.add_argument("--row", type=int, required=True, help="its _row number")
    explain.add_argument("--format", choices=OUTPUTS, default="table")
    explain.add_argument("--limit", type=int, help="table format: at most N rows per table (50 by default)")
    explain.add_argument(
        "--reasons",
        action="store_true",
        help="also the reasons of the reason-capable UDFs that fed the row (re-run on its lineage only)",
    )
    add_summary_flags(explain)

    results = commands.add_parser("results", parents=[common], help="list saved results, drop one, or index one")
    results.add_argument(
        "action",
        nargs="?",
        choices=("list", "drop", "index"),
        default="list",
        help="index: build a result's forward index (id -> rows) for repeated impact questions",
    )
    results.add_argument("name", nargs="?", help="the result to drop or index")
    results.add_argument("--format", choices=OUTPUTS, default="table")
    add_lineage_sql_parser(commands, common)


def run_command(session, args: argparse.Namespace, query_text) -> int:
    """Run ``impact``, ``explain`` or ``results``; ``query_text`` reads ``QUERY`` or ``@file``."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ImpactWarning)
        if args.command == "impact":
            status = _impact(session, args, query_text)
        elif args.command == "explain":
            status = run_summary(session, args) if args.summary else _explain(session, args)
        elif args.command == LINEAGE_SQL:
            status = run_lineage_sql(session, args, query_text)
        else:
            status = _results(session, args)
    for warning in caught:
        if issubclass(warning.category, ImpactWarning):
            print(f"dltrace: warning: {warning.message}", file=sys.stderr)
    return status


def save_for_sql(session, frame, name: str, query: str, semantics: str, representation: str):
    """``sql --save NAME``: save, say so on stderr, and return the saved rows (with ``_row``,
    which ``explain --row`` takes) so that printing them does not run the query again."""
    saved = session.save(frame, name, query=query, semantics=semantics, repr=representation)
    index = "with" if saved.index else "without"
    print(
        f"dltrace: saved result {saved.name}: {saved.rows} rows at catalog version {saved.catalog_version}, "
        f"{index} forward index",
        file=sys.stderr,
    )
    return session.result(saved.name)


def _impact(session, args: argparse.Namespace, query_text) -> int:
    from pyspark.errors import PySparkException

    query = query_text(args.query) if args.query is not None else None
    limit = output_limit(args)
    if args.result is None and query is None:
        return _impact_everywhere(session, args, limit)
    frame = session.impact(
        args.source,
        result=args.result,
        query=query,
        mode=args.mode,
        semantics=args.semantics,
        use_index=not args.no_index,
    )
    reeval = (args.mode or ("stored" if args.result else "reeval")) == "reeval"
    source = parse_source(args.source, session.catalog)
    try:
        rows = list(row_dicts((frame.limit(limit + 1) if limit is not None else frame).collect()))
    except PySparkException:
        if reeval:  # a predicate that fails only when it runs (a bad cast) is bad input
            collect_bad_ids(session, source)
        raise
    if not rows and reeval and matches_nothing(session, source):  # stored mode has said so already
        warnings.warn(ImpactWarning(f"no rows match the source '{source.text}': nothing is affected"), stacklevel=2)
    if args.format == "json":
        write_json(rows[:limit] if limit is not None else rows, sys.stdout)
        return 0
    write_table(rows[:limit], frame.columns, session.catalog, sys.stdout)
    print(table_footer(min(len(rows), limit), frame.count() if len(rows) > limit else None, "affected rows"))
    return 0


def _impact_everywhere(session, args: argparse.Namespace, limit: int | None) -> int:
    """Every saved result whose lineage reaches the source's table: table output gives a
    line per result with its count, then its rows; JSON one object per affected row, with
    the result's name in ``"result"``."""
    found = session.impact(args.source, mode=args.mode, use_index=not args.no_index)
    affected = 0
    for name, frame in found.items():
        rows = list(row_dicts((frame.limit(limit + 1) if limit is not None else frame).collect()))
        if args.format == "json":
            write_json(({"result": name, **row} for row in rows[:limit]), sys.stdout)
            continue
        count = len(rows) if len(rows) <= limit else frame.count()
        affected += count
        more = f" (first {limit}: raise --limit)" if count > limit else ""
        print(f"{name}: {count} affected rows{more}")
        if rows and limit:
            write_table(rows[:limit], frame.columns, session.catalog, sys.stdout)
            print()
    if args.format == "table":
        table = parse_source(args.source, session.catalog).table
        print(f"({affected} affected rows in {len(found)} saved results whose lineage reaches {table})")
    return 0


def _explain(session, args: argparse.Namespace) -> int:
    limit = output_limit(args)
    through = session.store.upstream(args.result)
    explained = session.explain(args.result, args.row)  # before any output: a failure prints nothing else
    if through and args.format == "table":
        print(f"row {args.row} of {args.result.lower()} was computed through saved results: {', '.join(through)}\n")
    for table, frame in explained.items():
        if args.format == "json":
            write_json(({"table": table, **row.asDict()} for row in frame.toLocalIterator()), sys.stdout)
            continue
        rows = [row.asDict() for row in frame.limit(limit + 1).collect()]
        more = f" (first {limit}: raise --limit)" if len(rows) > limit else ""
        print(f"{table}:{more}")
        write_table(rows[:limit], frame.columns, session.catalog, sys.stdout)
        print()
    if args.reasons:
        _print_reasons(session, args, limit)
    return 0


def _print_reasons(session, args: argparse.Namespace, limit: int | None) -> None:
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


def _results(session, args: argparse.Namespace) -> int:
    if args.action in ("drop", "index") and not args.name:
        raise BadInput(f"results {args.action} needs the NAME of a saved result")
    if args.action == "drop":
        session.drop_result(args.name)
        print(f"dropped result {args.name.lower()}")
        return 0
    if args.action == "index":
        saved = ResultStore(session.catalog).build_index(args.name, session.spark)
        print(f"result {saved.name} has a forward index: {saved.index}")
        return 0
    if args.name:
        raise BadInput(f"results list takes no name (got {args.name!r}): did you mean `results drop {args.name}`?")
    saved = session.results()
    if args.format == "json":
        stale = session.store.staleness()
        write_json(({**asdict(result), "stale": stale.get(result.name)} for result in saved), sys.stdout)
        return 0
    stale = session.store.staleness()
    columns = ["name", "rows", "semantics", "index", "created", "inputs", "status", "query"]
    records = [
        {
            "name": r.name,
            "rows": r.rows,
            "semantics": r.semantics,
            "index": "yes" if r.index else "no",
            "created": dt.datetime.fromtimestamp(r.created_at).isoformat(timespec="seconds"),
            "inputs": " ".join([*(f"{t}@v{v}" for t, v in r.tables.items()), *(f"result:{n}" for n in r.results)]),
            "status": f"STALE: {stale[r.name]}" if stale.get(r.name) else "current",
            "query": " ".join(r.query.split()),
        }
        for r in saved
    ]
    write_table(records, columns, session.catalog, sys.stdout)
    print(f"({len(records)} saved results)")
    return 0
