"""``python -m tpch``: the paper's TPC-H experiments.

    python -m tpch table7 --sf 1 [--queries q3,q5] [--check] [--catalog DIR]
    python -m tpch bench --sf 1 [--queries tpch,spj] [--modes original,set,...] [--repeat 3] [--out DIR]
    python -m tpch table8 --sf 1 [--queries q5,q6] [--repeat 3] [--out DIR]
    python -m tpch space --sf 1 [--queries tpch] [--repeat 3] [--baseline] [--candidates] [--out DIR]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from dltrace import LineageSession
from dltrace.errors import DltraceError
from tpch.harness import log


def catalog_for(sf: float) -> Path:
    """One catalog per scale factor, next to the data, so re-runs reuse registrations."""
    return Path("data") / f"catalog-tpch-sf{sf:g}"


def parser() -> argparse.ArgumentParser:
    """The command line: a subcommand per experiment (tests/test_bench_commands.py runs each)."""
    from tpch import bench, space, table8
    from tpch.table7 import TABLE7_QUERIES

    top = argparse.ArgumentParser(
        prog="python -m tpch", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    commands = top.add_subparsers(dest="command", required=True)
    table7 = commands.add_parser("table7", help="the paper's Table 7 (and Table 9 space) at a scale factor")
    table7.add_argument("--sf", type=float, default=1.0)
    table7.add_argument("--queries", default=",".join(TABLE7_QUERIES))
    table7.add_argument("--semantics", choices=("control", "data"), default="control")
    table7.add_argument("--catalog", help="catalog directory (default data/catalog-tpch-sfSF)")
    table7.add_argument("--check", action="store_true",
                        help="also count each query's lineage with DuckDB, without dltrace "
                             "(queries without subqueries)")
    bench.add_parser(commands)
    table8.add_parser(commands)
    space.add_parser(commands)
    return top


def main(argv: list[str] | None = None) -> int:
    from dltrace.datasets import register_tpch
    from tpch import bench, space, table8
    from tpch.queries import load
    from tpch.table7 import characteristics, independent_average, markdown

    args = parser().parse_args(argv)
    try:
        if args.command == "bench":
            return bench.main(args, Path(args.catalog or catalog_for(args.sf)))
        if args.command == "space":
            return space.main(args, Path(args.catalog or catalog_for(args.sf)))
        if args.command == "table8":
            return table8.main(args, Path(args.catalog or catalog_for(args.sf)), log)
        session = LineageSession(args.catalog or catalog_for(args.sf))
        log(f"TPC-H SF {args.sf:g}: data and registration (cached after the first run)")
        register_tpch(session, args.sf, Path("data"), progress=log)
        rows = []
        for name in args.queries.split(","):
            log(f"{name}: running with lineage")
            query = load(name)
            row = characteristics(session, name, query, args.semantics)
            if args.check:
                log(f"{name}: counting contributing rows with DuckDB")
                row.checked_avg = independent_average(session, query)
            rows.append(row)
        print(markdown(rows, args.sf))
    except DltraceError as error:
        print(f"tpch: error: {error}", file=sys.stderr)
        return error.exit_code
    return 0


if __name__ == "__main__":
    sys.exit(main())
