"""``dltrace results [list|drop NAME|index NAME]``: the saved results, removing one, indexing one."""

from __future__ import annotations

import argparse
import datetime as dt
import sys
from dataclasses import asdict

from dltrace.commands.common import OUTPUTS, Parents, open_session, reporting_warnings
from dltrace.errors import BadInput
from dltrace.formatting import write_json, write_table
from dltrace.results import ResultStore


def add_parser(commands, parents: Parents) -> None:
    results = commands.add_parser("results", parents=[parents.common],
                                  help="list saved results, drop one, or index one")
    results.add_argument(
        "action",
        nargs="?",
        choices=("list", "drop", "index"),
        default="list",
        help="index: build a result's forward index (id -> rows) for repeated impact questions",
    )
    results.add_argument("name", nargs="?", help="the result to drop or index")
    results.add_argument("--format", choices=OUTPUTS, default="table")
    results.set_defaults(handler=run)


@reporting_warnings
def run(args: argparse.Namespace) -> int:
    session = open_session(args)
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
