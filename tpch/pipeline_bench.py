"""Pipeline benchmark (target: docs/targets.md): a three-step TPC-H pipeline with lineage, each step saved,
against the same steps without lineage writing their rows as Parquet, in one session.

    python -m tpch.pipeline_bench --sf 1 [--repeat 6] [--warm-up 3] [--catalog DIR] [--breakdown]

The steps: revenue per customer (customer, orders, lineitem), per nation (reading step 1),
per region (reading step 2).  With lineage each step is a ``CREATE OR REPLACE TABLE``
of a ``dltrace run`` script: the query with lineage, saved as a result (rows with ``_pos``
and ``DL``, a forward index when the rows are large enough), and the next step reads the
saved result.  Without lineage each step is the plain query written as Parquet, and the
next step reads that Parquet.  Each round runs both, the one that goes first alternating
from round to round (an even ``--repeat``: each goes first in half the rounds), because a
run right after the other pipeline is slower (10 alternating rounds: 1.664x where the plain
pipeline went first, 1.421x where the lineage one did); the ratio is taken within each
round and its median reported.  Target: at most 1.3x.  The rounds come after ``--warm-up``
rounds (3) that are not counted: the JVM compiles the lineage plan's code later than the
plain plan's (step 1 with lineage took 5.4 s, 4.4 s, 3.9 s in the first three rounds after
one warm-up round, then about 3.7 s).

``--breakdown`` then takes step 1 apart, each form in every round, in an order that changes
from round to round (``form_order``), as many rounds as ``--repeat`` after one more warm-up
round: its plain query written as Parquet (the baseline) and to Spark's ``noop`` sink, the plain plan
with each table's ``_dl_id`` carried through the joins and kept by ``MAX`` (what the ids
cost to read and shuffle), the lineage query to ``noop`` (plus collecting the ids into
each row's DL), the lineage query written with a save's Parquet options (plus writing
them), and the step as ``CREATE OR REPLACE TABLE`` saves it (plus the save's bookkeeping).
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
from typing import TYPE_CHECKING

from dltrace import LineageSession
from dltrace.errors import DltraceError
from dltrace.results import ROWS_ROW_GROUP_BYTES, WRITE_OPTIONS
from tpch.harness import cpu_seconds, execute, log

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from dltrace.pipeline import Outcome

WITHOUT, WITH = "without lineage", "with lineage"
PIPELINES = (WITHOUT, WITH)
BASELINE = "plain query, written as Parquet"  # the breakdown's ratios are over this form

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

# step 1 without lineage, each table's row id carried through the joins and kept by MAX
# (Spark's hash aggregate): what reading and shuffling the ids costs, without collecting them
STEP1_IDS_CARRIED = (
    "select c_custkey, c_nationkey, c_mktsegment, sum(l_extendedprice * (1 - l_discount)) as revenue, "
    "max(customer._dl_id) as customer_id, max(orders._dl_id) as order_id, max(lineitem._dl_id) as lineitem_id "
    "from customer join orders on c_custkey = o_custkey join lineitem on l_orderkey = o_orderkey "
    "where l_shipdate >= date '1995-01-01' group by c_custkey, c_nationkey, c_mktsegment"
)


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


Form = Callable[[], None]


def step1_forms(session: LineageSession, directory: Path, discard: Callable[[DataFrame], None] = execute
                ) -> dict[str, Form]:
    """Step 1 as the forms ``--breakdown`` compares (module docstring), each a function that
    runs it; ``discard`` runs the forms that keep no rows (Spark's ``noop`` sink)."""
    spark, (name, query) = session.spark, STEPS[0]
    session.run("select 1")  # the catalog's tables as views: the plain forms read the same data

    def lineage(action: Callable[[DataFrame], None]) -> Form:
        def run() -> None:
            frame = session.sql(query)
            with session.executing(frame):  # planned as a save plans it
                action(frame)
        return run

    def written_as_saved(frame: DataFrame) -> None:
        frame.write.options(**WRITE_OPTIONS).option("parquet.block.size", ROWS_ROW_GROUP_BYTES).mode(
            "overwrite").parquet(str(directory / "lineage.parquet"))

    return {
        BASELINE: lambda: spark.sql(query).write.mode("overwrite").parquet(str(directory / "plain.parquet")),
        "plain query, no write (noop)": lambda: discard(spark.sql(query)),
        "ids carried through the joins, kept by MAX, noop": lambda: discard(spark.sql(STEP1_IDS_CARRIED)),
        "lineage query, noop": lineage(discard),
        "lineage query, written with a save's options": lineage(written_as_saved),
        "the step as saved (CREATE OR REPLACE TABLE)": lambda: session.run_script(
            f"create or replace table {name} as {query};"),
    }


def form_order(names: list[str], round_number: int) -> list[str]:
    """The forms in the order round ``round_number`` runs them: rotated by one every two
    rounds and backwards in odd rounds, so that no form always follows the same one (a run
    after the other kind of query is slower: module docstring)."""
    shift = (round_number // 2) % len(names)
    order = names[shift:] + names[:shift]
    return order[::-1] if round_number % 2 else order


def pipeline_order(round_number: int) -> tuple[str, str]:
    """The two pipelines in the order round ``round_number`` runs them: each goes first
    every other round."""
    return PIPELINES if round_number % 2 == 0 else PIPELINES[::-1]


def timed(run: Form, spark) -> tuple[float, float | None]:
    """Seconds and CPU seconds (None where unknown) ``run`` takes."""
    start_cpu = cpu_seconds(spark)
    start = time.perf_counter()
    run()
    elapsed = time.perf_counter() - start
    end_cpu = cpu_seconds(spark)
    return elapsed, None if start_cpu is None or end_cpu is None else end_cpu - start_cpu


def record(measured: dict[str, tuple[float, float | None]], seconds: dict[str, list[float]],
           cpu: dict[str, list[float]]) -> None:
    """Adds a round's ``timed`` figures; its CPU seconds only when every run has them, so that
    the lists stay paired round by round."""
    for name, (elapsed, _) in measured.items():
        seconds[name].append(elapsed)
    if all(used is not None for _, used in measured.values()):
        for name, (_, used) in measured.items():
            cpu[name].append(used)


def median_ratio(values: list[float], baseline: list[float]) -> float:
    """The median of the per-round ratios of ``values`` over ``baseline`` (paired by round)."""
    return statistics.median(value / base for value, base in zip(values, baseline))


def breakdown(session: LineageSession, directory: Path, repeat: int) -> None:
    """Prints step 1's forms side by side: for each, the median of its per-round ratios over
    the baseline (the plain query written as Parquet), in ``repeat`` rounds after a warm-up."""
    forms = step1_forms(session, directory)
    names = list(forms)
    seconds: dict[str, list[float]] = {name: [] for name in names}
    cpu: dict[str, list[float]] = {name: [] for name in names}
    for round_number in range(-1, repeat):
        measured = {name: timed(forms[name], session.spark) for name in form_order(names, round_number)}
        if round_number >= 0:
            record(measured, seconds, cpu)
        log(f"breakdown {'warm-up' if round_number < 0 else f'round {round_number + 1}/{repeat}'}")
    print(f"\nStep 1 taken apart, {repeat} rounds after a warm-up round: medians, and medians of the "
          f"per-round ratios over the first form\n")
    print("| step 1 as | s | ratio | CPU s | CPU ratio |")
    print("|---|---:|---:|---:|---:|")
    for name in names:
        cpu_cells = "- | -"
        if cpu[name]:
            cpu_cells = f"{statistics.median(cpu[name]):.1f} | {median_ratio(cpu[name], cpu[BASELINE]):.2f}x"
        print(f"| {name} | {statistics.median(seconds[name]):.2f} | "
              f"{median_ratio(seconds[name], seconds[BASELINE]):.2f}x | {cpu_cells} |")


def even_rounds(text: str) -> int:
    """``--repeat``: a positive even number, so that each pipeline goes first in half the rounds."""
    value = int(text)
    if value < 2 or value % 2:
        raise argparse.ArgumentTypeError(f"{text} is not an even number of rounds (2, 4, 6, ...)")
    return value


def rounds_not_counted(text: str) -> int:
    """``--warm-up``: zero or more rounds."""
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text} is not zero or more rounds")
    return value


def main(argv: list[str] | None = None) -> int:
    from dltrace.datasets import register_tpch

    parser = argparse.ArgumentParser(prog="python -m tpch.pipeline_bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sf", type=float, default=1.0)
    parser.add_argument("--repeat", type=even_rounds, default=6, help="counted rounds, an even number (default 6)")
    parser.add_argument("--warm-up", type=rounds_not_counted, default=3,
                        help="rounds run first and not counted (default 3; --breakdown runs one more)")
    parser.add_argument("--catalog", help="catalog directory (default data/catalog-tpch-sfSF)")
    parser.add_argument("--breakdown", action="store_true", help="then take step 1 apart (module docstring)")
    args = parser.parse_args(argv)
    scratch = Path(tempfile.mkdtemp(prefix="dltrace-pipeline-bench-"))
    try:
        session = LineageSession(args.catalog or Path("data") / f"catalog-tpch-sf{args.sf:g}")
        log(f"TPC-H SF {args.sf:g}: data and registration (cached after the first run)")
        register_tpch(session, args.sf, Path("data"), progress=log)
        session.run("select 1")  # the catalog's tables as views: the plain steps read the same data
        times: dict[str, list[float]] = {name: [] for name in PIPELINES}
        cpu: dict[str, list[float]] = {name: [] for name in PIPELINES}
        steps: dict[str, list[float]] = {name: [] for name, _ in STEPS}
        outcomes: list[Outcome] = []

        def with_lineage() -> None:
            outcomes[:] = session.run_script(script())

        runs: dict[str, Form] = {WITHOUT: lambda: plain_pipeline(session.spark, scratch), WITH: with_lineage}
        for round_number in range(-args.warm_up, args.repeat):
            order = pipeline_order(round_number)
            measured = {name: timed(runs[name], session.spark) for name in order}
            if round_number >= 0:
                record(measured, times, cpu)
                for outcome in outcomes:
                    steps[outcome.name].append(outcome.seconds)
            label = (f"warm-up {round_number + args.warm_up + 1}/{args.warm_up}" if round_number < 0
                     else f"round {round_number + 1}/{args.repeat}")
            log(f"{label}, {order[0]} first: {WITHOUT} {measured[WITHOUT][0]:.1f} s, {WITH} {measured[WITH][0]:.1f} s "
                f"({', '.join(f'{o.name} {o.rows} rows {o.seconds:.1f} s' for o in outcomes)})")
        report(args.sf, args.repeat, args.warm_up, times, cpu, steps)
        if args.breakdown:
            breakdown(session, scratch, args.repeat)
    except DltraceError as error:
        print(f"tpch.pipeline_bench: error: {error}", file=sys.stderr)
        return error.exit_code
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


def report(sf: float, repeat: int, warm_up: int, times: dict[str, list[float]], cpu: dict[str, list[float]],
           steps: dict[str, list[float]]) -> None:
    """The pipelines' medians, each step's with lineage, and the per-round ratios' medians."""
    print(f"TPC-H SF {sf:g}, a three-step pipeline, {repeat} rounds after {warm_up} warm-up rounds, "
          f"the pipeline that runs first alternating\n")
    print("| pipeline | median s | min s |")
    print("|---|---:|---:|")
    for name, values in times.items():
        print(f"| {name} | {statistics.median(values):.2f} | {min(values):.2f} |")
    for name, values in steps.items():
        print(f"| step {name} (with lineage) | {statistics.median(values):.2f} | {min(values):.2f} |")
    print(f"\nwith / without lineage: median of per-round ratios {median_ratio(times[WITH], times[WITHOUT]):.3f}x "
          f"(target <= 1.3x)")
    if cpu[WITH]:
        plain_cpu, lineage_cpu = (statistics.median(cpu[name]) for name in (WITHOUT, WITH))
        print(f"CPU seconds (Spark's JVM and this process; load does not inflate them): without lineage "
              f"{plain_cpu:.1f}, with lineage {lineage_cpu:.1f}, median of per-round ratios "
              f"{median_ratio(cpu[WITH], cpu[WITHOUT]):.3f}x")


if __name__ == "__main__":
    sys.exit(main())
