"""Pipeline benchmark (target: docs/targets.md): a three-step TPC-H pipeline with lineage, each step saved,
against the same steps without lineage writing their rows as Parquet, in one session.

    python -m tpch.pipeline_bench --sf 1 [--repeat 3] [--catalog DIR]

The steps: revenue per customer (customer, orders, lineitem), per nation (reading step 1),
per region (reading step 2).  With lineage each step is a ``CREATE OR REPLACE TABLE``
of a ``dltrace run`` script: the query with lineage, saved as a result (rows with ``_pos``
and ``DL``, a forward index when the rows are large enough), and the next step reads the
saved result.  Without lineage each step is the plain query written as Parquet, and the
next step reads that Parquet.  Rounds alternate the two, after a warm-up round; the ratio
is taken within each round and its median reported.  Target: at most 1.3x.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from dltrace import LineageSession
from dltrace.errors import DltraceError
from tpch.harness import cpu_seconds, log

STEPS = [
    ("bench_custrev", "select c_custkey, c_nationkey, c_mktsegment, sum(l_extendedprice * (1 - l_discount)) as revenue "
                      "from customer join orders on c_custkey = o_custkey join lineitem on l_orderkey = o_orderkey "
                      "where l_shipdate >= date '1995-01-01' group by c_custkey, c_nationkey, c_mktsegment"),
    ("bench_natrev", "select n_regionkey, n_name, c_mktsegment, sum(revenue) as revenue, count(*) as customers "
                     "from bench_custrev join nation on c_nationkey = n_nationkey "
                     "group by n_regionkey, n_name, c_mktsegment"),
    ("bench_regrev", "select r_name, c_mktsegment, sum(revenue) as revenue, sum(customers) as customers "
                     "from bench_natrev join region on n_regionkey = r_regionkey group by r_name, c_mktsegment"),
]


def script() -> str:
    return "".join(f"create or replace table {name} as {query};\n" for name, query in STEPS)


def plain_pipeline(spark, directory: Path) -> None:
    """The steps as a Spark user runs them without lineage: each query written as Parquet,
    read by the next as a view (``plain_<step>``, apart from the saved results' views)."""
    for name, query in STEPS:
        for earlier, _ in STEPS:
            query = query.replace(f"from {earlier} ", f"from plain_{earlier} ")
        target = directory / f"{name}.parquet"
        spark.sql(query).write.mode("overwrite").parquet(str(target))
        spark.read.parquet(str(target)).createOrReplaceTempView(f"plain_{name}")


def main(argv: list[str] | None = None) -> int:
    from dltrace.datasets import register_tpch

    parser = argparse.ArgumentParser(prog="python -m tpch.pipeline_bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sf", type=float, default=1.0)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--catalog", help="catalog directory (default data/catalog-tpch-sfSF)")
    args = parser.parse_args(argv)
    scratch = Path(tempfile.mkdtemp(prefix="dltrace-pipeline-bench-"))
    try:
        session = LineageSession(args.catalog or Path("data") / f"catalog-tpch-sf{args.sf:g}")
        log(f"TPC-H SF {args.sf:g}: data and registration (cached after the first run)")
        register_tpch(session, args.sf, Path("data"), progress=log)
        session.run("select 1")  # the catalog's tables as views: the plain steps read the same data
        times: dict[str, list[float]] = {"without lineage": [], "with lineage": []}
        cpu: dict[str, list[float]] = {"without lineage": [], "with lineage": []}
        steps: dict[str, list[float]] = {name: [] for name, _ in STEPS}
        for round_number in range(args.repeat + 1):
            start, start_cpu = time.perf_counter(), cpu_seconds(session.spark)
            plain_pipeline(session.spark, scratch)
            plain, plain_cpu = time.perf_counter() - start, cpu_seconds(session.spark)
            start = time.perf_counter()
            outcomes = session.run_script(script())
            lineage, lineage_cpu = time.perf_counter() - start, cpu_seconds(session.spark)
            if round_number:
                times["without lineage"].append(plain)
                times["with lineage"].append(lineage)
                if start_cpu is not None:
                    cpu["without lineage"].append(plain_cpu - start_cpu)
                    cpu["with lineage"].append(lineage_cpu - plain_cpu)
                for outcome in outcomes:
                    steps[outcome.name].append(outcome.seconds)
            log(f"round {round_number}/{args.repeat}{' (warm-up)' if not round_number else ''}: "
                f"without lineage {plain:.1f} s, with lineage {lineage:.1f} s "
                f"({', '.join(f'{o.name} {o.rows} rows {o.seconds:.1f} s' for o in outcomes)})")
    except DltraceError as error:
        print(f"tpch.pipeline_bench: error: {error}", file=sys.stderr)
        return error.exit_code
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    ratios = [w / p for w, p in zip(times["with lineage"], times["without lineage"])]
    print(f"TPC-H SF {args.sf:g}, a three-step pipeline, {args.repeat} interleaved rounds after a warm-up\n")
    print("| pipeline | median s | min s |")
    print("|---|---:|---:|")
    for name, values in times.items():
        print(f"| {name} | {statistics.median(values):.2f} | {min(values):.2f} |")
    for name, values in steps.items():
        print(f"| step {name} (with lineage) | {statistics.median(values):.2f} | {min(values):.2f} |")
    print(f"\nwith / without lineage: median of per-round ratios {statistics.median(ratios):.3f}x (target <= 1.3x)")
    if cpu["with lineage"]:
        cpu_ratios = [w / p for w, p in zip(cpu["with lineage"], cpu["without lineage"])]
        plain_cpu, lineage_cpu = (statistics.median(cpu[name]) for name in ("without lineage", "with lineage"))
        print(f"CPU seconds (Spark's JVM and this process; load does not inflate them): without lineage "
              f"{plain_cpu:.1f}, with lineage {lineage_cpu:.1f}, median of per-round ratios "
              f"{statistics.median(cpu_ratios):.3f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
