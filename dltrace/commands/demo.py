"""``dltrace demo``: end to end on generated TPC-H data (dltrace/demo.py)."""

from __future__ import annotations

import argparse
from pathlib import Path

from dltrace.commands.common import Parents


def add_parser(commands, parents: Parents) -> None:
    demo = commands.add_parser("demo", parents=[parents.common], help="end to end on generated TPC-H data")
    demo.add_argument("--sf", type=float, default=0.01, help="TPC-H scale factor (default 0.01)")
    demo.add_argument("--data", default="data", help="where generated data is cached (default ./data)")
    demo.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from dltrace.demo import demo

    return demo(args.catalog, Path(args.data), args.sf, args.master)
