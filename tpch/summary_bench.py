"""Summary benchmark: ``explain --summary`` on TPC-H Q6 and Q15 in one warm session.

    python -m tpch.summary_bench --sf 1 [--repeat 5] [--queries q6,q15] [--catalog DIR]

Saves each query with lineage (Q6's row has 114,160 lineitem ids at SF 1, Q15's 225,955),
summarizes its row 0 once to warm up, then ``--repeat`` times, and prints the median and
minimum seconds, the lineage sample the patterns were learned on, and the summary itself.
Target: at most 5 s for Q6 at SF 1.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

from dltrace import LineageSession
from dltrace.commands.explain import summary_text
from dltrace.errors import DltraceError
from tpch.harness import log


def main(argv: list[str] | None = None) -> int:
    from dltrace.datasets import register_tpch
    from tpch.queries import load

    parser = argparse.ArgumentParser(prog="python -m tpch.summary_bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sf", type=float, default=1.0)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--queries", default="q6,q15")
    parser.add_argument("--catalog", help="catalog directory (default data/catalog-tpch-sfSF)")
    args = parser.parse_args(argv)
    rows = []
    try:
        session = LineageSession(args.catalog or Path("data") / f"catalog-tpch-sf{args.sf:g}")
        log(f"TPC-H SF {args.sf:g}: data and registration (cached after the first run)")
        register_tpch(session, args.sf, Path("data"), progress=log)
        for name in args.queries.split(","):
            result = f"summary_bench_{name}"
            saved = session.save(session.sql(load(name)), result)
            log(f"saved {name}: {saved.rows} row(s)")
            summary = session.summarize(result, 0)  # warm-up
            seconds = []
            for _ in range(args.repeat):
                start = time.perf_counter()
                summary = session.summarize(result, 0)
                seconds.append(time.perf_counter() - start)
            log(f"{name}: median {statistics.median(seconds):.2f} s")
            rows.append((name, summary, seconds))
    except DltraceError as error:
        print(f"tpch.summary_bench: error: {error}", file=sys.stderr)
        return error.exit_code
    load = os.getloadavg()[0]
    print(f"TPC-H SF {args.sf:g}, explain --summary of row 0, warm session, {args.repeat} runs after a warm-up "
          f"(load average {load:.1f} on {os.cpu_count()} cores)")
    print()
    print("| query | lineage ids | sampled lineage rows | sampled table rows | median s | min s |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, summary, seconds in rows:
        ids = sum(t.lineage_rows for t in summary.tables)
        sampled = " + ".join(str(t.sample) for t in summary.tables)
        table_sample = " + ".join(str(t.table_sample) for t in summary.tables)
        print(
            f"| {name} | {ids} | {sampled} | {table_sample} | {statistics.median(seconds):.2f} | {min(seconds):.2f} |"
        )
    for _name, summary, _ in rows:
        print()
        print(summary_text(summary), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
