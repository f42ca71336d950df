"""``dltrace results [list|drop NAME|index NAME|prune NAME]``: the saved results, removing one,
indexing one, dropping the lineage of an output's old runs (retention, ``dataframe/runs.py``)."""

from __future__ import annotations

import argparse
import sys
from dataclasses import asdict

from dltrace.commands.common import OUTPUTS, Parents, open_session, reporting_warnings
from dltrace.dataframe import runs
from dltrace.errors import BadInput
from dltrace.formatting import write_json, write_table
from dltrace.result_format import SavedResult, time_text
from dltrace.results import ResultStore


def add_parser(commands, parents: Parents) -> None:
    results = commands.add_parser("results", parents=[parents.common],
                                  help="list saved results, drop one, index one, or prune an output's old runs")
    results.add_argument(
        "action",
        nargs="?",
        choices=("list", "drop", "index", "prune"),
        default="list",
        help="index: build a result's forward index (id -> rows) for repeated impact questions; prune: drop the "
             "lineage of an output's old runs (its files and tables stay as they are)",
    )
    results.add_argument("name", nargs="?", help="the result to drop or index, the output to prune")
    results.add_argument("--keep-runs", type=int, metavar="N", help="prune: keep the lineage of the N newest runs")
    results.add_argument("--before", metavar="DATE",
                         help="prune: drop the lineage of runs written before DATE (YYYY-MM-DD[THH:MM], local time)")
    results.add_argument("--format", choices=OUTPUTS, default="table")
    results.set_defaults(handler=run)


@reporting_warnings
def run(args: argparse.Namespace) -> int:
    session = open_session(args)
    if args.action in ("drop", "index", "prune") and not args.name:
        raise BadInput(f"results {args.action} needs the NAME of a saved result"
                       f"{' (an output written in runs)' if args.action == 'prune' else ''}")
    if args.action != "prune" and (args.keep_runs is not None or args.before is not None):
        raise BadInput("--keep-runs and --before are options of `results prune NAME`")
    if args.action == "prune":
        return prune(session, args)
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
    of_run = runs.runs_by_result(session.catalog)
    if args.format == "json":
        stale = session.store.staleness()
        write_json(({**asdict(result), "stale": stale.get(result.name),
                     **({"run": asdict(of_run[result.name])} if result.name in of_run else {})} for result in saved),
                   sys.stdout)
        return 0
    stale = session.store.staleness()
    columns = ["name", "rows", *(["run"] if of_run else []), "semantics", "index", "created", "inputs", "status",
               "query"]
    records = [
        {
            "name": r.name,
            "rows": r.rows,
            "run": of_run[r.name].label() if r.name in of_run else "",
            "semantics": r.semantics,
            "index": "yes" if r.index else "no",
            "created": time_text(r.created_at),
            "inputs": " ".join([*(f"{t}@v{v}" for t, v in r.tables.items()), *(f"result:{n}" for n in r.results)]),
            "status": status(r, stale.get(r.name)),
            "query": " ".join(r.query.split()),
        }
        for r in saved
    ]
    write_table(records, columns, session.catalog, sys.stdout)
    print(f"({len(records)} saved results)")
    return 0


def status(result: SavedResult, stale: str | None) -> str:
    """The listing's status: past retention, stale (why), or current."""
    if result.pruned_at is not None:
        return f"PAST RETENTION: lineage dropped at {time_text(result.pruned_at)}, rows kept"
    return f"STALE: {stale}" if stale else "current"


def prune(session, args: argparse.Namespace) -> int:
    """``results prune NAME --keep-runs N --before DATE``: one line of what was dropped and kept."""
    before = runs.moment(args.before, "--before") if args.before is not None else None
    record, pruned = runs.prune(session, args.name, args.keep_runs, before)
    saved = {run.result: session.store.get(run.result) for run in record.run_list()}  # each result.json read once
    kept = [run for run in record.run_list() if saved[run.result].pruned_at is None]
    past = [run for run in record.run_list() if run not in kept]
    rows = sum(saved[run.result].rows for run in pruned)
    plural = "s" if len(pruned) != 1 else ""
    done = (f"pruned the lineage of {len(pruned)} run{plural} of {record.name} (run{plural} "
            f"{runs.numbers(pruned)}: {rows} rows)" if pruned else f"nothing to prune in {record.name}")
    print(f"{done}; past retention: {f'runs {runs.numbers(past)}' if past else 'none'}; lineage kept: "
          f"{f'runs {runs.numbers(kept)}' if kept else 'none'}; the output's files and tables are unchanged")
    return 0
