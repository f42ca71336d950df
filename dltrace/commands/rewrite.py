"""``dltrace rewrite QUERY``: the lineage query as a script for ``spark-sql -f``."""

from __future__ import annotations

import argparse
import sys

from dltrace.commands.common import Parents, open_session, query_text
from dltrace.granularity import split_lineage_on


def add_parser(commands, parents: Parents) -> None:
    rew = commands.add_parser(
        "rewrite", parents=[parents.common, parents.lineage], help="print the lineage query as a spark-sql script"
    )
    rew.add_argument("query", help="SQL text or @file.sql")
    rew.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    session = open_session(args)
    query, lineage_on = split_lineage_on(query_text(args.query), args.lineage_on)
    sys.stdout.write(session.script(query, args.semantics, args.repr, lineage_on))
    return 0
