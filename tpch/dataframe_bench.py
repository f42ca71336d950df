"""DataFrame benchmark: the 22 TPC-H queries written in the DataFrame API
(``tpch/dataframe_queries.py``) against the same queries in SQL, in one Spark Connect session.

    python -m tpch.dataframe_bench --sf 1 [--queries q1,q3] [--repeat 3] [--catalog DIR]

Two figures per query, side by side in one run:

* **translate + rewrite**: the milliseconds from a DataFrame to its lineage query (the plan
  translated to SQL, then rewritten), median of ``--repeat`` runs; the target is at most
  50 ms at the median query.  It includes the Spark Connect calls the translation makes
  (schemas of relations whose columns Spark names itself).
* **execution**: the lineage query's time over the plain query's, for the DataFrame (traced
  against ``df.collect()``) and for the SQL (``ls.sql`` against the plain SQL), each pair
  run in turn within a round, the ratio taken per round and its median reported; the
  DataFrame path should cost the ratio the SQL path does.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

from dltrace import LineageSession
from dltrace.errors import DltraceError
from tpch.harness import log


def timed(run) -> float:
    started = time.perf_counter()
    run()
    return time.perf_counter() - started


def measure(session: LineageSession, name: str, repeat: int) -> dict[str, float]:
    from tpch.dataframe_queries import QUERIES
    from tpch.queries import load

    spark = session.frames
    sql = load(name)
    translate_ms = []
    for _ in range(repeat):
        frame = QUERIES[name](spark)
        started = time.perf_counter()
        session.lineage_expression(session.dataframe_sql(frame))
        translate_ms.append((time.perf_counter() - started) * 1000)
    frame = QUERIES[name](spark)
    forms = {
        "dataframe plain": lambda: frame.collect(),
        "dataframe lineage": lambda: session.trace(frame).collect(),
        "sql plain": lambda: session.sql(sql, lineage=False).collect(),
        "sql lineage": lambda: session.sql(sql).collect(),
    }
    for run in forms.values():  # warm-up: plans compiled, files cached
        run()
    seconds: dict[str, list[float]] = {form: [] for form in forms}
    for round_number in range(repeat):
        order = list(forms) if round_number % 2 == 0 else list(reversed(forms))
        for form in order:
            seconds[form].append(timed(forms[form]))

    def ratio(lineage: str, plain: str) -> float:
        return statistics.median(a / b for a, b in zip(seconds[lineage], seconds[plain]))

    return {"translate_ms": statistics.median(translate_ms),
            "dataframe": ratio("dataframe lineage", "dataframe plain"), "sql": ratio("sql lineage", "sql plain"),
            "plain_s": statistics.median(seconds["sql plain"])}


def main(argv: list[str] | None = None) -> int:
    from dltrace.datasets import register_tpch
    from tpch.__main__ import catalog_for
    from tpch.dataframe_queries import QUERIES

    parser = argparse.ArgumentParser(prog="python -m tpch.dataframe_bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sf", type=float, default=1.0)
    parser.add_argument("--queries", default=",".join(QUERIES))
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--catalog", help="catalog directory (default data/catalog-tpch-sfSF)")
    args = parser.parse_args(argv)
    try:
        session = LineageSession(args.catalog or catalog_for(args.sf))
        session.frames  # noqa: B018 - Spark in Connect mode, before anything else starts it
        register_tpch(session, args.sf, Path("data"), progress=log)
        results = {}
        for name in args.queries.split(","):
            log(f"{name}: translate, rewrite and run, {args.repeat} rounds")
            results[name] = measure(session, name, args.repeat)
    except DltraceError as error:
        print(f"tpch.dataframe_bench: error: {error}", file=sys.stderr)
        return error.exit_code
    report(args.sf, args.repeat, results)
    return 0


def report(sf: float, repeat: int, results: dict[str, dict[str, float]]) -> None:
    print(f"TPC-H SF {sf:g}, the DataFrame API against SQL, {repeat} rounds per query, Spark Connect\n")
    print("| query | translate + rewrite ms | DataFrame lineage / plain | SQL lineage / plain | plain SQL s |")
    print("|---|---:|---:|---:|---:|")
    for name, r in results.items():
        print(f"| {name} | {r['translate_ms']:.1f} | {r['dataframe']:.3f}x | {r['sql']:.3f}x | {r['plain_s']:.2f} |")
    medians = {key: statistics.median(r[key] for r in results.values()) for key in ("translate_ms", "dataframe", "sql")}
    print(f"\nmedian translate + rewrite: {medians['translate_ms']:.1f} ms (target <= 50 ms); median ratio: "
          f"DataFrame {medians['dataframe']:.3f}x, SQL {medians['sql']:.3f}x")


if __name__ == "__main__":
    sys.exit(main())
