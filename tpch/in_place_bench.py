"""In-place vs copied registration: time and disk of registering TPC-H's
tables both ways (copied without ``--order-by``, so that both give the same ids), then the
lineage ratio (``set`` over the plain query) of a few queries over each, in one Spark session,
interleaved, after a warm-up, median of ``--repeat``.

    python -m tpch.in_place_bench --sf 1 --query q1 --query q3 --out /tmp/in-place-bench
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import time
from pathlib import Path

from dltrace import LineageSession
from dltrace.datasets import REGISTRATION, TABLES, generate, table_paths
from dltrace.results import directory_bytes
from tpch.harness import execute, log
from tpch.queries import load


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tpch.in_place_bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sf", type=float, default=1.0)
    parser.add_argument("--query", action="append", help="TPC-H query (default q1, q3)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", default="/tmp/dltrace-in-place-bench", help="scratch directory for both catalogs")
    args = parser.parse_args(argv)
    paths = table_paths(generate(args.sf, Path("data")))
    out = Path(args.out)
    shutil.rmtree(out, ignore_errors=True)
    sessions = {}
    for how in ("in-place", "copied"):
        session = sessions[how] = LineageSession(out / how)
        for table in TABLES:
            start = time.perf_counter()
            session.register(table, paths[table], key=list(REGISTRATION[table].key), copy=how == "copied")
            if table == "lineitem":
                disk = directory_bytes(out / how)
                log(
                    f"{how}: lineitem registered in {time.perf_counter() - start:.1f} s, "
                    f"catalog {disk / 2**20:.1f} MiB "
                    f"(source {paths[table].stat().st_size / 2**20:.1f} MiB)"
                )
    start = time.perf_counter()
    sessions["in-place"].register("lineitem_without_key", paths["lineitem"])
    log(f"in-place: lineitem without --key (no uniqueness check) registered in {time.perf_counter() - start:.1f} s")
    for query in args.query or ["q1", "q3"]:
        text = load(query)
        runs = {(how, lineage): [] for how in sessions for lineage in (False, True)}
        for repetition in range(args.repeat + 1):  # the first round warms up
            for (how, lineage), times in runs.items():
                start = time.perf_counter()
                execute(sessions[how].sql(text, lineage=lineage))
                if repetition:
                    times.append(time.perf_counter() - start)
        medians = {k: statistics.median(v) for k, v in runs.items()}
        for how in sessions:
            log(
                f"{query} {how}: plain {medians[how, False]:.2f} s, set {medians[how, True]:.2f} s, "
                f"ratio {medians[how, True] / medians[how, False]:.3f}"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
