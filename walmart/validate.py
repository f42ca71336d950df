"""Check the Walmart queries on DuckDB and Spark, as :mod:`tpch.validate` does for TPC-H.

Both engines must return the same rows over the generated Parquet files. The
paper's Table 9 cardinalities are printed alongside for comparison, not
enforced: the data is synthetic. Run by hand::

    python -m walmart.validate --scale 0.01
    python -m walmart.validate --scale 1
"""

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from tpch.validate import ENGINES, report, validate
from walmart import data, queries

# Table 9 of the paper: result cardinalities on the real data.
PAPER_ROWS = {"q1": 14898, "q2": 14898, "q3": 12376, "q4": 12376,
              "q5": 130, "q6": 121, "q7": 3293, "q8": 7608}


def main(argv: Sequence[str] | None = None) -> int:
    """Generate the retail data at ``--scale`` (cached) and validate Q1-Q8 on it."""
    parser = argparse.ArgumentParser(prog="python -m walmart.validate", description=main.__doc__)
    parser.add_argument("--scale", type=float, default=0.01, help="data scale (default 0.01)")
    parser.add_argument("--root", type=Path, default=Path("data"), help="data directory (default data/)")
    parser.add_argument("--engines", default=",".join(ENGINES),
                        help="comma-separated engines to run (default duckdb,spark)")
    arguments = parser.parse_args(argv)

    engines = [engine.strip() for engine in arguments.engines.split(",") if engine.strip()]
    if set(engines) - set(ENGINES):
        parser.error(f"unknown engine(s) {sorted(set(engines) - set(ENGINES))}; choose from {list(ENGINES)}")
    directory = data.generate(arguments.scale, arguments.root)
    verdicts = validate(data.table_paths(directory),
                        {name: queries.load(name) for name in queries.QUERIES}, engines)
    print(f"Walmart scale {data.scale_label(arguments.scale)} ({directory})")
    passed = report(verdicts, engines)
    print("paper (Table 9): " + ", ".join(f"{name} {rows}" for name, rows in PAPER_ROWS.items()))
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
