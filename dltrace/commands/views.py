"""``dltrace views [list|drop NAME]``: the catalog's views, and removing one."""

from __future__ import annotations

import argparse
import sys

from dltrace.commands.common import Parents, open_session
from dltrace.errors import BadInput
from dltrace.formatting import write_table
from dltrace.views import ViewStore


def add_parser(commands, parents: Parents) -> None:
    views = commands.add_parser("views", parents=[parents.common], help="list the catalog's views, or drop one")
    views.add_argument("action", nargs="?", choices=("list", "drop"), default="list")
    views.add_argument("name", nargs="?", help="the view to drop")
    views.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    session = open_session(args)
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
