"""What-if benchmark (issue target: one row corrected, answered in at most 10% of a full re-run).

    python -m tpch.what_if_bench --sf 1 [--repeat 4] [--catalog DIR]

Saves the three-step TPC-H pipeline of ``tpch.pipeline_bench`` (revenue per customer, per
nation, per region) with lineage, then times, interleaved round by round after a warm-up round:

* the full re-run: the three steps without lineage, each written as Parquet and read by the
  next (what a team runs to get the corrected outputs without dltrace);
* ``what_if`` for each correction of one row, its every answer collected (the rows that
  change, vanish and appear in each of the three results): a lineitem row removed, its
  ``l_extendedprice`` doubled (a measure), and a customer's nation changed (a key).

Ratios to the full re-run are taken within each round and their median reported, with what
each step's answer recomputed (``WhatIf.recomputed``).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from dltrace import LineageSession
from dltrace.catalog import ID_COLUMN
from dltrace.errors import DltraceError
from dltrace.ids import split_id
from tpch.harness import log
from tpch.pipeline_bench import STEPS, plain_pipeline, script

FULL = "full re-run (three plain steps written as Parquet)"


def corrections(session: LineageSession) -> dict[str, dict]:
    """The corrections timed, as ``what_if`` keywords: rows in the lineage of the first
    saved customer's row, named by their keys."""
    from pyspark.sql import functions as F

    from dltrace.table_data import table_rows

    first = session.result(STEPS[0][0]).orderBy("c_custkey").first()
    codes = {session.catalog.entry(t).code: t for t in ("lineitem", "customer")}
    ids = {codes[split_id(i)[0]]: i for i in first["DL"] if split_id(i)[0] in codes}
    line = table_rows(session.spark, session.catalog, "lineitem").where(F.col(ID_COLUMN) == ids["lineitem"]).first()
    lineitem = f"lineitem WHERE l_orderkey = {line.l_orderkey} AND l_linenumber = {line.l_linenumber}"
    customer = f"customer WHERE c_custkey = {first.c_custkey}"
    return {
        f"remove `{lineitem}`": {"source": lineitem, "removed": True},
        "double its l_extendedprice (a measure)": {"source": lineitem,
                                                   "changes": "l_extendedprice = l_extendedprice * 2"},
        f"`{customer}`: c_nationkey moved (a key)": {"source": customer,
                                                     "changes": "c_nationkey = (c_nationkey + 1) % 25"},
    }


def answered(session: LineageSession, correction: dict, how: dict[str, str]) -> Callable[[], None]:
    def run() -> None:
        for name, answer in session.what_if(**correction).items():
            answer.rows()
            how[name] = answer.recomputed
    return run


def main(argv: list[str] | None = None) -> int:
    from dltrace.datasets import register_tpch

    parser = argparse.ArgumentParser(prog="python -m tpch.what_if_bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sf", type=float, default=1.0)
    parser.add_argument("--repeat", type=int, default=4, help="counted rounds (default 4)")
    parser.add_argument("--catalog", help="catalog directory (default data/catalog-tpch-sfSF)")
    args = parser.parse_args(argv)
    scratch = Path(tempfile.mkdtemp(prefix="dltrace-what-if-bench-"))
    try:
        session = LineageSession(args.catalog or Path("data") / f"catalog-tpch-sf{args.sf:g}")
        log(f"TPC-H SF {args.sf:g}: data and registration (cached after the first run)")
        register_tpch(session, args.sf, Path("data"), progress=log)
        start = time.perf_counter()
        session.run_script(script())
        log(f"pipeline saved with lineage in {time.perf_counter() - start:.1f} s")
        session.run("select 1")  # the catalog's tables as views: the full re-run reads the same data
        how: dict[str, dict[str, str]] = {}
        operations: dict[str, Callable[[], None]] = {FULL: lambda: plain_pipeline(session.spark, scratch)}
        for name, correction in corrections(session).items():
            how[name] = {}
            operations[name] = answered(session, correction, how[name])
        times: dict[str, list[float]] = {name: [] for name in operations}
        for round_number in range(args.repeat + 1):
            order = list(operations) if round_number % 2 else list(operations)[::-1]
            for name in order:
                start = time.perf_counter()
                operations[name]()
                seconds = time.perf_counter() - start
                if round_number:
                    times[name].append(seconds)
                log(f"round {round_number}/{args.repeat}{'' if round_number else ' (warm-up)'}: {name} {seconds:.1f} s")
    except DltraceError as error:
        print(f"tpch.what_if_bench: error: {error}", file=sys.stderr)
        return error.exit_code
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    full = times[FULL]
    print(f"TPC-H SF {args.sf:g}, the three-step pipeline of tpch.pipeline_bench; {args.repeat} interleaved "
          f"rounds after a warm-up round\n")
    print("| operation | median s | x full re-run (median of per-round ratios) | recomputed |")
    print("|---|---:|---:|---|")
    for name, values in times.items():
        ratio = statistics.median(v / f for v, f in zip(values, full))
        recomputed = "; ".join(f"{result}: {what}" for result, what in how.get(name, {}).items())
        print(f"| {name} | {statistics.median(values):.2f} | {ratio:.3f} | {recomputed} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
