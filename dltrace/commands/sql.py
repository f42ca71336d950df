"""``dltrace sql QUERY``: run a query with lineage, print its rows, optionally save them."""

from __future__ import annotations

import argparse
import sys

from dltrace.commands.common import FORMATS, Parents, open_session, query_text
from dltrace.commands.output import print_rows
from dltrace.commands.run import report_outcome
from dltrace.errors import BadInput
from dltrace.formatting import output_limit
from dltrace.granularity import GranuleDecoder, split_lineage_on
from dltrace.pipeline import Statement, run_statement
from dltrace.publish import check_view_name
from dltrace.steps import check_savable
from dltrace.views import check_result_name


def add_parser(commands, parents: Parents) -> None:
    sql = commands.add_parser("sql", parents=[parents.common, parents.lineage], help="run a query with lineage")
    sql.add_argument("query", help="SQL text or @file.sql")
    sql.add_argument("--format", choices=FORMATS, default="table")
    sql.add_argument("--limit", type=int, help="at most N rows (table format: 50 by default)")
    sql.add_argument("--save", metavar="NAME", help="keep the result with its lineage for impact and explain")
    sql.add_argument("--publish", metavar="[DB.]VIEW",
                     help="with --save: also a view of the Spark catalog over the saved rows and DL")
    sql.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    session = open_session(args)
    query, lineage_on = split_lineage_on(query_text(args.query), args.lineage_on)
    # bad options fail before Spark starts
    if args.publish and not args.save:
        raise BadInput("--publish makes a view of a saved result: give --save NAME too")
    if args.publish:
        check_view_name(args.publish)
    if args.save:
        check_savable(lineage_on)
        check_result_name(args.save)
    limit = output_limit(args)
    if lineage_on is not None and is_create(query):
        raise BadInput("LINEAGE ON belongs to queries: CREATE TABLE and INSERT keep base-row lineage")
    if is_create(query):
        if args.save:
            raise BadInput("--save names the result of a query; CREATE TABLE name AS ... (or INSERT INTO name) "
                           "saves it as name already")
        outcome = run_statement(session, Statement(query.strip(), 1, 1), args.semantics, args.repr)
        report_outcome(session, outcome, args, total=0)
        return 0
    frame = session.sql(query, args.semantics, args.repr, lineage_on=lineage_on)
    if args.save:
        frame = save_for_sql(session, frame, args.save, query, args.semantics, args.repr)
        if args.publish:
            session.publish(args.save, args.publish)
            print(f"dltrace: published result {args.save.lower()} as Spark view {args.publish}", file=sys.stderr)
    print_rows(session, frame, args, limit, GranuleDecoder(session, query, lineage_on) if lineage_on else None)
    return 0


def is_create(query: str) -> bool:
    """True for a ``CREATE ...`` or ``INSERT ...`` statement (``sql`` runs one as a
    one-statement script)."""
    words = query.lstrip().split(None, 1)
    return bool(words) and words[0].upper() in ("CREATE", "INSERT")


def save_for_sql(session, frame, name: str, query: str, semantics: str, representation: str):
    """``sql --save NAME``: save, say so on stderr, and return the saved rows (with ``_row``,
    which ``explain --row`` takes) so that printing them does not run the query again."""
    saved = session.save(frame, name, query=query, semantics=semantics, representation=representation)
    index = "with" if saved.index else "without"
    print(
        f"dltrace: saved result {saved.name}: {saved.rows} rows at catalog version {saved.catalog_version}, "
        f"{index} forward index",
        file=sys.stderr,
    )
    return session.result(saved.name)
