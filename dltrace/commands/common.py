"""What the command modules share: options, reading a query argument, opening a session,
and reporting the warnings of an answer that is still given.

Warnings about an answer that is still given (a source matching no rows, a result older
than its data) go to stderr as one line each, ``dltrace: warning: ...``; the exit status
stays 0.
"""

from __future__ import annotations

import argparse
import functools
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from dltrace.errors import BadInput
from dltrace.impact.search import ImpactWarning
from dltrace.rewriter.representation import REPRESENTATIONS

FORMATS = ("table", "json", "csv")
OUTPUTS = ("table", "json")
Handler = Callable[[argparse.Namespace], int]


class Parents(NamedTuple):
    """Option groups several commands take."""

    common: argparse.ArgumentParser  # --catalog, --master
    lineage: argparse.ArgumentParser  # --semantics, --repr, --lineage-on


def parents() -> Parents:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--catalog", help="catalog directory (default: $DLTRACE_CATALOG or ./.dltrace)")
    common.add_argument(
        "--master", help="Spark master (default: $SPARK_MASTER or local[*]; SPARK_REMOTE for Spark Connect)"
    )
    shown = common.add_mutually_exclusive_group()
    shown.add_argument("--quiet", action="store_true", help="no Spark progress on a terminal")
    shown.add_argument("--verbose", action="store_true", help="Spark's warnings too, beside its progress")
    lineage = argparse.ArgumentParser(add_help=False)
    lineage.add_argument("--semantics", choices=("control", "data"), default="control")
    lineage.add_argument("--repr", choices=tuple(REPRESENTATIONS), default="set",
                         help="lineage sets: set (array<bigint>, native SQL), bdd (roBDD bytes via Arrow UDFs)")
    lineage.add_argument(
        "--lineage-on", metavar='"EXPR, EXPR"',
        help='lineage on combinations of these values instead of base rows ("": lineage off)'
    )
    return Parents(common, lineage)


def query_text(argument: str) -> str:
    """``QUERY`` or ``@file.sql``."""
    if argument.startswith("@"):
        path = Path(argument[1:])
        try:
            return path.read_text()
        except OSError as error:
            raise BadInput(f"cannot read query file {path}: {error.strerror}") from None
    return argument


def columns_list(text: str | None) -> list[str] | None:
    return [c.strip() for c in text.split(",") if c.strip()] if text else None


def open_session(args: argparse.Namespace):
    """The ``LineageSession`` over ``--catalog`` (Spark starts when it is first used)."""
    from dltrace.session import LineageSession

    return LineageSession(args.catalog, master=args.master)


def reporting_warnings(handler: Handler) -> Handler:
    """``handler`` with the ``ImpactWarning``s it raised printed on stderr, one line each."""

    @functools.wraps(handler)
    def reporting(args: argparse.Namespace) -> int:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ImpactWarning)
            status = handler(args)
        for warning in caught:
            if issubclass(warning.category, ImpactWarning):
                print(f"dltrace: warning: {warning.message}", file=sys.stderr)
        return status

    return reporting
