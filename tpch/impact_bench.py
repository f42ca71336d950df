"""Impact benchmark (targets: docs/targets.md): one bad lineitem row against TPC-H Q3, in one warm session.

    python -m tpch.impact_bench --sf 1 [--repeat 5] [--large] [--catalog DIR]

Saves Q3 with lineage and its forward index, picks a lineitem row in the lineage of Q3's
top row (named by its key, ``l_orderkey = .. AND l_linenumber = ..``), then times,
interleaved and after a warm-up round:

* stored impact with the forward index, and without it (a scan of the saved DLs), each
  including the lookup of the bad row's id through lineitem's key index (built once per
  table version, before the timings);
* re-evaluation impact (Q3 rerun with lineage for the bad row only);
* plain Q3, and Q3 with full lineage, for reference;
* with ``--large``, the same stored impact on a large saved result (lineitem grouped by
  order: 1.5M rows at SF1), where the forward index matters.

Queries that produce rows are executed into Spark's ``noop`` sink (the cost of computing
them, not of shipping rows to Python); stored impact is collected, as a user gets it.
Ratios to the plain query are taken within each round (the machine's load drifts between
rounds) and their median is reported.  Targets: stored impact <= 1 s; re-evaluation <= 1.05x
the plain query.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

from dltrace import LineageSession
from dltrace.catalog import ID_COLUMN
from dltrace.errors import DltraceError
from dltrace.ids import split_id
from dltrace.impact.key_index import ensure_key_index
from tpch.harness import execute, log

RESULT = "impact_bench_q3"
LARGE = "impact_bench_orders"
LARGE_QUERY = "select l_orderkey, sum(l_quantity) as quantity from lineitem group by l_orderkey"



def bad_lineitem_source(session: LineageSession) -> str:
    """A key predicate for a lineitem row in the lineage of the saved Q3's first row."""
    from pyspark.sql import functions as F

    from dltrace.table_data import table_rows

    first = session.result(RESULT).first()
    code = session.catalog.entry("lineitem").code
    bad_id = next(i for i in first["DL"] if split_id(i)[0] == code)
    lineitem = table_rows(session.spark, session.catalog, "lineitem")
    row = lineitem.where(F.col(ID_COLUMN) == bad_id).select("l_orderkey", "l_linenumber").first()
    return f"lineitem WHERE l_orderkey = {row.l_orderkey} AND l_linenumber = {row.l_linenumber}"


def timed(operations: dict[str, Callable[[], object]], repeat: int) -> dict[str, list[float]]:
    """Seconds per operation, ``repeat`` interleaved rounds after one warm-up round."""
    times: dict[str, list[float]] = {name: [] for name in operations}
    for round_number in range(repeat + 1):
        for name, operation in operations.items():
            start = time.perf_counter()
            operation()
            if round_number:
                times[name].append(time.perf_counter() - start)
        log(f"round {round_number}/{repeat} done" + (" (warm-up)" if not round_number else ""))
    return times


def main(argv: list[str] | None = None) -> int:
    from dltrace.datasets import register_tpch
    from tpch.queries import load

    parser = argparse.ArgumentParser(prog="python -m tpch.impact_bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sf", type=float, default=1.0)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--large", action="store_true", help="also a large saved result (forward index vs scan)")
    parser.add_argument("--catalog", help="catalog directory (default data/catalog-tpch-sfSF)")
    args = parser.parse_args(argv)
    try:
        session = LineageSession(args.catalog or Path("data") / f"catalog-tpch-sf{args.sf:g}")
        log(f"TPC-H SF {args.sf:g}: data and registration (cached after the first run)")
        register_tpch(session, args.sf, Path("data"), progress=log)
        q3 = load("q3")
        start = time.perf_counter()
        saved = session.save(session.sql(q3), RESULT, index=True)
        save_seconds = time.perf_counter() - start
        log(f"saved Q3: {saved.rows} rows with lineage and forward index in {save_seconds:.1f} s")
        start = time.perf_counter()
        ensure_key_index(session, "lineitem")
        log(f"lineitem key index ready in {time.perf_counter() - start:.1f} s")
        source = bad_lineitem_source(session)
        log(f"bad row: {source}")
        affected = session.impact(source, result=RESULT).count()
        operations = {
            "plain Q3": lambda: execute(session.sql(q3, lineage=False)),
            "Q3 with lineage": lambda: execute(session.sql(q3)),
            "impact reeval": lambda: execute(session.impact(source, query=q3, mode="reeval")),
            "impact stored, index": lambda: session.impact(source, result=RESULT).collect(),
            "impact stored, no index": lambda: session.impact(source, result=RESULT, use_index=False).collect(),
        }
        if args.large:
            start = time.perf_counter()
            large = session.save(session.sql(LARGE_QUERY), LARGE, index=True)
            log(f"saved {LARGE_QUERY!r}: {large.rows} rows with forward index in {time.perf_counter() - start:.1f} s")
            operations["large result: impact stored, index"] = lambda: session.impact(source, result=LARGE).collect()
            operations["large result: impact stored, no index"] = (
                lambda: session.impact(source, result=LARGE, use_index=False).collect()
            )
        times = timed(operations, args.repeat)
    except DltraceError as error:
        print(f"tpch.impact_bench: error: {error}", file=sys.stderr)
        return error.exit_code
    plain = times["plain Q3"]
    print(f"TPC-H SF {args.sf:g}, Q3 ({saved.rows} rows), bad row `{source}` affects {affected} row(s); "
          f"{args.repeat} interleaved warm rounds; Q3 saved with forward index in {save_seconds:.1f} s")
    print()
    print("| operation | median s | min s | × plain Q3 (median of per-round ratios) |")
    print("|---|---:|---:|---:|")
    for name, values in times.items():
        paired = statistics.median(v / p for v, p in zip(values, plain))
        print(f"| {name} | {statistics.median(values):.3f} | {min(values):.3f} | {paired:.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
