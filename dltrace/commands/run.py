"""``dltrace run FILE``: a pipeline script's statements in order (dltrace/pipeline.py)."""

from __future__ import annotations

import argparse
import os
import sys

from dltrace import openlineage
from dltrace.commands.common import FORMATS, Parents, open_session, query_text
from dltrace.commands.output import print_rows
from dltrace.errors import BadInput
from dltrace.formatting import output_limit
from dltrace.granularity import GranuleDecoder
from dltrace.pipeline import Outcome, OutcomeKind, split_statements
from dltrace.profile import Profile, profiling, write_json
from dltrace.progress import say


def add_parser(commands, parents: Parents) -> None:
    script = commands.add_parser(
        "run",
        parents=[parents.common, parents.lineage],
        help="run a pipeline: a SQL script (CREATE TABLE name AS query, CREATE VIEW, queries) or a PySpark job",
    )
    script.add_argument("file", help="a file of ;-separated statements (- for standard input), or a PySpark "
                                     "script (.py) whose saveAsTable writes become saved steps")
    script.add_argument("arguments", nargs="*",
                        help="a PySpark script's own arguments (its sys.argv[1:]), as spark-submit passes them; "
                             "those starting with - after --: dltrace run job.py -- --day 2026-11-29")
    script.add_argument("--resume", action="store_true",
                        help="a PySpark script: skip the steps saved before from the same query over unchanged inputs")
    script.add_argument("--format", choices=FORMATS, default="table", help="how its queries' rows are printed")
    script.add_argument("--limit", type=int, help="at most N rows per query (table format: 50 by default)")
    script.add_argument("--profile", action="store_true",
                        help="a PySpark script: print where its time went, per step and phase, on stderr at the end "
                             "(each step is also computed plainly once, to compare)")
    script.add_argument("--profile-json", metavar="FILE", help="--profile, and its figures written to FILE as JSON")
    script.set_defaults(handler=run, says_spark=True)  # whether it ran on the warm server


def run(args: argparse.Namespace) -> int:
    """Each statement in order, progress on stderr, queries' rows on stdout."""
    session = open_session(args)
    path = args.file
    if path.endswith(".py"):
        with openlineage.script_run(os.path.basename(path)):  # its saves are the steps of this run
            return run_job_file(session, args)
    if args.arguments or args.resume or args.profile or args.profile_json:
        given = " ".join(args.arguments) or ("--resume" if args.resume else "--profile")
        raise BadInput(f"{given}: a SQL script takes no arguments, and --resume and --profile apply to PySpark "
                       f"scripts")
    text = sys.stdin.read() if path == "-" else query_text("@" + path)
    output_limit(args)  # a bad --limit fails before anything runs
    total = len(split_statements(text))
    with openlineage.script_run(None if path == "-" else os.path.basename(path), text):
        session.run_script(text, args.semantics, args.repr,
                           on_outcome=lambda o: report_outcome(session, o, args, total))
    return 0


def run_job_file(session, args: argparse.Namespace) -> int:
    """A PySpark script whose ``saveAsTable`` writes are saved steps (dltrace/dataframe/jobs.py)."""
    from dltrace.dataframe.jobs import run_job

    profiled = Profile() if args.profile or args.profile_json else None
    try:
        with profiling(profiled):
            run_job(session, args.file, args.semantics, args.repr, say=lambda text: say(f"dltrace: {text}"),
                    argv=args.arguments, resume=args.resume)
    finally:  # a failed run's profile says where it got to
        if profiled is not None:
            profiled.finish()
            print(profiled.table(f"dltrace: profile of {args.file} ({args.semantics}, {args.repr})"),
                  file=sys.stderr, flush=True)
            if args.profile_json:
                write_json(profiled, args.profile_json)
    return 0


def report_outcome(session, outcome: Outcome, args: argparse.Namespace, total: int) -> None:
    """One progress line per statement on stderr (name, rows, seconds); a query's rows on stdout."""
    where = f"[{outcome.statement.number}/{total}] line {outcome.statement.line}: " if total else ""
    if outcome.kind is OutcomeKind.TABLE:
        did = "exists, skipped" if outcome.skipped else f"{outcome.rows} rows in {outcome.seconds:.1f} s"
        print(f"dltrace: {where}saved result {outcome.name}: {did}", file=sys.stderr, flush=True)
    elif outcome.kind is OutcomeKind.INSERT:
        what = f"added run {outcome.run} to" if outcome.run else "replaced the rows of"
        print(f"dltrace: {where}{what} step {outcome.name}: {outcome.rows} rows in {outcome.seconds:.1f} s",
              file=sys.stderr, flush=True)
    elif outcome.kind is OutcomeKind.VIEW:
        print(f"dltrace: {where}defined view {outcome.name}", file=sys.stderr, flush=True)
    else:
        print(f"dltrace: {where}query: {outcome.statement.head}", file=sys.stderr, flush=True)
        decoder = GranuleDecoder(session, outcome.statement.text, None) if outcome.lineage_on else None
        print_rows(session, outcome.frame, args, output_limit(args), decoder)
        sys.stdout.flush()
