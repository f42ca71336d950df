"""``python -m walmart``: the paper's Walmart experiments (§5.6) on the synthetic retail data.

    python -m walmart bench --scale 1 [--queries q1,...,q8] [--modes original,set,...] [--repeat 3] [--out DIR]
    python -m walmart table9 --scale 1
"""

from __future__ import annotations

import argparse
import sys

from dltrace.errors import DltraceError


def parser() -> argparse.ArgumentParser:
    """The command line: a subcommand per experiment (tests/test_bench_commands.py runs each)."""
    from walmart import bench, table9

    top = argparse.ArgumentParser(prog="python -m walmart", description=__doc__,
                                  formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = top.add_subparsers(dest="command", required=True)
    bench.add_parser(commands)
    table9.add_parser(commands)
    return top


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return args.run(args)
    except DltraceError as error:
        print(f"walmart: error: {error}", file=sys.stderr)
        return error.exit_code


if __name__ == "__main__":
    sys.exit(main())
