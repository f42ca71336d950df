"""``python -m tpch bench``: the paper's Figures 4 and 5 on Spark, forward lineage beside its baselines.

    python -m tpch bench --sf 1 [--queries tpch,spj] [--modes original,set,...] [--repeat 3] [--out DIR]

Modes (all run in one Spark session, interleaved, see :mod:`tpch.harness`):

* ``original``: the query without lineage;
* ``set``, ``bdd``, ``auto``: dltrace with that lineage representation;
* ``reverse-one``, ``reverse-all``: backward lineage by reverse queries (Cui & Widom), of one
  result tuple or of all, including the materialized view (:mod:`tpch.baselines`);
* ``perm``: Perm's provenance rewriting, the result joined with its contributing rows.

Every mode executes its query fully and drops the rows (Spark's ``noop`` sink), so no
result is brought to the driver and every mode pays for the same work the query implies.
The query's rewriting and Spark's analysis happen once, before timing: the runs time
optimization and execution only, the part lineage is claimed to make cheap.  Spark keeps
the classes it compiles for a plan (``WARM_CODEGEN``) for every plan of the run, so each
timed run is as warm as the warm-up pass left it, whatever ran between.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path

from dltrace.errors import BadInput, DltraceError
from tpch import baselines
from tpch.harness import (
    CannotRun,
    Figure,
    Mode,
    Panel,
    Runner,
    Target,
    best_of_target,
    execute,
    faster_target,
    log,
    measure,
    ratio_target,
    versus_target,
    write_report,
)

MODES = ["original", "ids", "set", "bdd", "auto", "reverse-one", "reverse-all", "perm"]
FORWARD = ["set", "bdd", "auto"]
DESCRIPTIONS = {
    "original": "the query without lineage (qualified like the lineage query).",
    "ids": "SPJ only: the lineage query's plan with each table occurrence's `_dl_id` as a column of its own and "
           "no `DL` array: what reading and moving the id columns costs by itself.",
    "set": "dltrace, lineage sets as sorted `array<bigint>` (the paper's *set*).",
    "bdd": "dltrace, lineage sets as roBDDs (the paper's *bdd*).",
    "auto": "dltrace, representation chosen per query.",
    "reverse-one": "backward lineage of ONE result tuple by reverse queries (Cui & Widom): write the view "
                   "as Parquet (the result; for an aggregate the grouped intermediate view with its group-by "
                   "attributes), read back its first tuple, run the reverse query with that tuple's values.",
    "reverse-all": "backward lineage of ALL result tuples: write the view as Parquet, then join the base "
                   "tables with it on the output (SPJ) or group-by attributes (aggregates).",
    "perm": "Perm-style provenance rewriting (SMOKE's logical baseline): the result joined with its "
            "unaggregated contributing rows, one row per combination, with every table occurrence's `_dl_id`.",
}
DEFAULT_TIMEOUT = 900.0
# Spark keeps the classes compiled for 100 plans by default: between two runs of one query the
# other queries push them out, except where two modes run the same plan back to back (`auto`
# and `set` often do), and the second then skips compilation (TPC-H Q20 at SF 1: 0.94 s
# against 1.10-1.55 s for the same SQL).  With room for every plan, every timed run is warm.
WARM_CODEGEN = {"spark.sql.codegen.cache.maxEntries": "100000"}
# docs/targets.md: (median, none over) of the ratios to the plain query over the 22 queries
TPCH_LIMITS = {"set": (1.15, 2.0), "auto": (1.15, 2.0), "bdd": (1.3, 3.0)}
SCRATCH_VIEW = "dl_bench_view"
PAPER_NOTE = ("Paper (PostgreSQL 7.4, SF1): SPJ with sets +1.7% on average, reverse-one +82%, reverse-all +325%; "
              "ASPJ with roBDDs +74% on average (+387% with Q11), reverse-all 19.44x the overhead of bdd.")


def spark_modes(session, names: list[str], scratch: Path) -> list[Mode]:
    """The named modes over ``session``; each prepares a query once and runs it on demand."""

    def dataframe(build: Callable[[], object]) -> Runner:
        try:
            frame = build()
        except DltraceError as error:
            raise CannotRun(str(error)) from None
        return lambda: execute(frame)

    def original(name: str, query: str) -> Runner:
        return dataframe(lambda: session.sql(query, lineage=False))

    def forward(representation: str) -> Callable[[str, str], Runner]:
        return lambda name, query: dataframe(lambda: session.sql(query, representation=representation))

    def ids(name: str, query: str) -> Runner:
        return dataframe(lambda: session.run(ids_only_sql(session, query)))

    def reverse(trace: Callable, mode: str) -> Callable[[str, str], Runner]:
        def prepare(name: str, query: str) -> Runner:
            shape = baselines.shape_of(session, query)
            path = scratch / f"{name}-{mode}"

            def run() -> None:
                frame = trace(session, shape, path, SCRATCH_VIEW)
                if frame is not None:
                    execute(frame)

            return run

        return prepare

    def perm(name: str, query: str) -> Runner:
        text = baselines.perm_sql(baselines.shape_of(session, query))
        return dataframe(lambda: session.run(text))

    preparers = {
        "original": original,
        "ids": ids,
        **{representation: forward(representation) for representation in FORWARD},
        "reverse-one": reverse(baselines.reverse_one, "reverse-one"),
        "reverse-all": reverse(baselines.reverse_all, "reverse-all"),
        "perm": perm,
    }
    return [Mode(name, preparers[name]) for name in names]


def ids_only_sql(session, query: str) -> str:
    """The lineage query of an SPJ query with its ``DL`` replaced by the ``_dl_id`` columns it
    is built from, one column each: the same plan, less the array (``CannotRun`` otherwise)."""
    from sqlglot import exp

    from dltrace.rewriter.aggregate import is_aggregate

    expression = session.lineage_expression(query)
    spj = isinstance(expression, exp.Select) and not is_aggregate(expression)
    dl = next((p for p in expression.expressions if p.alias_or_name == "DL"), None) if spj else None
    arrays = {"array", "concat", "sort_array", "array_distinct"}  # how a row's ids become DL; nothing else
    if dl is None or dl.find(exp.AggFunc, exp.Subquery, exp.Window) or any(
        function.name.lower() not in arrays for function in dl.find_all(exp.Anonymous)
    ):
        raise CannotRun("not an SPJ query: its DL is more than the joined rows' ids")
    ids = [column.copy() for column in dl.find_all(exp.Column) if column.name == "_dl_id"]
    if not ids:  # e.g. a SELECT over a UNION ALL: its DL is the derived table's lineage column
        raise CannotRun("its DL holds no table's ids: it reads the lineage of a derived table")
    dl.replace(ids[0].as_("__id0"))
    expression.select(*(column.as_(f"__id{i}") for i, column in enumerate(ids[1:], 1)), copy=False)
    return expression.sql(dialect="spark")


def checked_modes(text: str) -> list[str]:
    """The modes named in ``text``, ``original`` always first (every ratio needs it)."""
    names = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in MODES]
    if unknown:
        raise BadInput(f"unknown mode(s) {', '.join(unknown)}: choose from {', '.join(MODES)}")
    return ["original", *(name for name in dict.fromkeys(names) if name != "original")]


def run_bench(
    session,
    queries: dict[str, str],
    modes: list[str],
    repeat: int,
    out: Path,
    title: str,
    context: list[str],
    figures: list[Figure],
    targets: list[Target],
    timeout: float | None = DEFAULT_TIMEOUT,
    warm_up: bool = True,
) -> Path:
    """Measure ``queries`` in ``modes`` and write ``out/report.md`` with its figures; returns its path."""
    if repeat < 1:
        raise BadInput("--repeat must be at least 1")
    spark = session.spark
    started, load_before = time.time(), os.getloadavg()
    scratch = out / "scratch"
    try:
        results = measure(queries, spark_modes(session, modes, scratch), repeat, timeout,
                          spark.sparkContext.cancelAllJobs, warm_up=warm_up)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    load_after = os.getloadavg()
    peak = max((m.load for m in results.measurements), default=0.0)
    conf = spark.sparkContext.getConf()
    context = [
        *context,
        "",
        f"* ran {time.strftime('%Y-%m-%d %H:%M', time.localtime(started))} for {(time.time() - started) / 60:.1f} min; "
        f"{repeat} timed repetition(s){' after a warm-up pass' if warm_up else ', no warm-up pass'}, "
        "modes interleaved, median reported"
        + (f"; a run is stopped after {timeout:g} s" if timeout else ""),
        f"* machine: {os.cpu_count()} cores; load average (1/5/15 min) before "
        f"{'/'.join(f'{v:.2f}' for v in load_before)}, after {'/'.join(f'{v:.2f}' for v in load_after)}, "
        f"highest 1-min load seen during the runs {peak:.2f} (other work on the machine makes times noisy)",
        f"* Spark {spark.version}, master {spark.sparkContext.master}, "
        f"shuffle partitions {spark.conf.get('spark.sql.shuffle.partitions')}, "
        f"driver memory {conf.get('spark.driver.memory', 'default')}, "
        f"AQE {spark.conf.get('spark.sql.adaptive.enabled')}",
        f"* peak memory: {peak_memory(spark)}",
    ]
    return write_report(out, results, title, context, DESCRIPTIONS, figures, targets)


def peak_memory(spark) -> str:
    """The highest resident memory of the JVM (driver and, in local mode, executors) and of
    this Python process so far, from ``/proc`` (Linux)."""
    import resource

    python = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # KiB -> GiB
    try:
        pid = spark._jvm.java.lang.ProcessHandle.current().pid()
        status = Path(f"/proc/{pid}/status").read_text()
        jvm = next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmHWM:")) / 2**20
    except (OSError, StopIteration, AttributeError):
        return f"Python {python:.2f} GiB (the JVM's is not readable here)"
    heap = spark.sparkContext.getConf().get("spark.driver.memory", "1g")
    return f"JVM {jvm:.2f} GiB (heap limit {heap}), Python {python:.2f} GiB"


def forward_targets(modes: list[str], spj: list[str], tpch: list[str]) -> list[Target]:
    """The targets of docs/targets.md, for each forward mode that runs."""
    targets = []
    forward = [mode for mode in FORWARD if mode in modes]
    for mode in forward:
        median, most = TPCH_LIMITS.get(mode, TPCH_LIMITS["set"])
        if spj:
            targets.append(ratio_target(f"SPJ S1-S8, `{mode}`: median <= 1.02x", mode, spj, "median", 1.02))
        if tpch:
            name = f"TPC-H queries, `{mode}`"
            targets.append(ratio_target(f"{name}: median <= {median:g}x", mode, tpch, "median", median))
            targets.append(ratio_target(f"{name}: none over {most:g}x", mode, tpch, "max", most))
    if "q10" in tpch and {"set", "bdd"} <= set(modes):
        targets.append(versus_target("TPC-H Q10, `bdd` within 1.5x of `set`", "bdd", "set", "q10", 1.5))
    if tpch and {"set", "bdd", "auto"} <= set(modes):
        targets.append(best_of_target("TPC-H queries, `auto` at most 10% slower than the better of `set` and `bdd`",
                                      "auto", ["set", "bdd"], tpch, 1.10))
    if forward and "reverse-all" in modes:
        targets.append(faster_target("forward (all rows) cheaper than reverse-all (all rows), every query",
                                     forward, "reverse-all", tpch + spj))
    return targets


def selected_queries(text: str) -> dict[str, str]:
    """Query names from ``--queries`` (``tpch`` = Q1-Q22, ``spj`` = S1-S8) with their SQL."""
    from tpch.queries import SPJ, TPCH, load

    groups = {"tpch": TPCH, "spj": SPJ}
    names = [
        n for part in text.split(",") if part.strip() for n in groups.get(part.strip().lower(), [part.strip().lower()])
    ]
    unknown = [name for name in names if name not in TPCH + SPJ]
    if unknown:
        raise BadInput(f"unknown TPC-H quer{'ies' if len(unknown) > 1 else 'y'} {', '.join(unknown)}: "
                       "use q1..q22, s1..s8, tpch or spj")
    return {name: load(name) for name in dict.fromkeys(names)}


def add_parser(commands) -> None:
    """The ``bench`` subcommand of ``python -m tpch``."""
    bench = commands.add_parser("bench", help="time queries with lineage against the plain query and the baselines")
    bench.add_argument("--sf", type=float, default=1.0, help="TPC-H scale factor (default 1)")
    bench.add_argument("--queries", default="tpch,spj", help="q1..q22, s1..s8, tpch, spj (default: all)")
    bench.add_argument(
        "--modes", default=",".join(MODES), help=f"comma-separated, from {','.join(MODES)} (default: all)"
    )
    bench.add_argument("--repeat", type=int, default=3, help="timed repetitions, median reported (default 3)")
    bench.add_argument("--out", type=Path, default=Path("bench-results/tpch"), help="report directory")
    bench.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, help="seconds before a run is stopped")
    bench.add_argument("--catalog", help="catalog directory (default data/catalog-tpch-sfSF)")
    bench.add_argument("--no-warm-up", dest="warm_up", action="store_false",
                       help="skip the warm-up pass (at SF 10 a run lasts minutes; JIT warm-up is noise beside it)")
    bench.add_argument("--in-place", action="store_true",
                       help="register the tables in place (ids in file order, no copy; what SF 10 needs)")
    bench.add_argument("--shuffle-partitions", type=int,
                       help="spark.sql.shuffle.partitions (default: dltrace's 8, times the SF above 1)")


def main(args: argparse.Namespace, catalog: Path) -> int:
    """``python -m tpch bench``: register TPC-H at ``--sf`` (cached), measure, write the report."""
    from dltrace import LineageSession
    from dltrace.datasets import register_tpch
    from dltrace.spark import get_spark
    from tpch.queries import SPJ, TPCH

    queries = selected_queries(args.queries)
    modes = checked_modes(args.modes)
    session = LineageSession(catalog, spark=get_spark(conf=WARM_CODEGEN))
    partitions = args.shuffle_partitions or max(8, round(8 * args.sf))
    session.spark.conf.set("spark.sql.shuffle.partitions", str(partitions))
    log(f"TPC-H SF {args.sf:g}: data and registration (cached after the first run)")
    register_tpch(session, args.sf, Path("data"), progress=log, in_place=args.in_place)
    figures = [
        Figure("figure4-aspj.png", f"TPC-H queries (the paper's Figure 4), SF {args.sf:g}",
               [Panel("TPC-H Q1-Q22 (ASPJ)", [q for q in TPCH if q in queries])]),
        Figure("figure5-spj.png", f"SPJ queries S1-S8 (the paper's Figure 5), SF {args.sf:g}",
               [Panel("SPJ S1-S8", [q for q in SPJ if q in queries])]),
    ]
    targets = forward_targets(modes, [q for q in SPJ if q in queries], [q for q in TPCH if q in queries])
    report = run_bench(session, queries, modes, args.repeat, args.out,
                       f"Forward lineage vs. baselines, TPC-H SF {args.sf:g}",
                       [f"`python -m tpch {' '.join(sys.argv[1:])}`: catalog `{catalog}`, {len(queries)} queries, "
                        f"modes {', '.join(modes)}.", "", PAPER_NOTE],
                       figures, targets, args.timeout, args.warm_up)
    print(report)
    return 0
