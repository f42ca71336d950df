"""Window benchmark: saving window steps with lineage against the plain steps, side by side.

    python -m tpch.window_bench [--flights 336776] [--repeat 3] [--spelled] [--out DIR]

Generated flights at nycflights13's scale (336,776 flights, 16 carriers of uneven size, 365
days; seeded), registered in place, and two steps, each saved under both semantics:

* **mart**, the new-user trial's step: flights per carrier and day, a running total per
  carrier (``SUM(...) OVER (PARTITION BY carrier ORDER BY day)``), then a rank per day over
  it (5,840 rows);
* **partitions**: a rank of every flight within its carrier (partitions of 2,000 to 60,000
  rows, one row per flight).

Per step and semantics, medians of ``--repeat`` rounds: the plain step (the query without
lineage, written to Parquet) and the save (``ls.save(ls.sql(...))``), run in turn within a
round, the ratio taken per round; the bytes the save wrote (rows, sets held apart) and the
ids a row's whole DL holds on average (what spelling DLs out in every row would store).
``--spelled`` also times writing every row's DL spelled out, as saves did before sets were
held apart (mart only: the partitions step spelled out holds billions of ids).  A plot
(``windows.png``) is written beside the Markdown table in ``--out``.
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import sys
import tempfile
import time
from pathlib import Path

from dltrace import LineageSession
from dltrace.errors import DltraceError
from dltrace.results import directory_bytes
from tpch.harness import log

CARRIERS = ["UA", "B6", "EV", "DL", "AA", "MQ", "US", "9E", "WN", "VX", "FL", "AS", "F9", "YV", "HA", "OO"]
STEPS = {
    "mart": "with daily as (select carrier, day, count(*) as flights, sum(dep_delay) as delay from flights "
            "group by carrier, day), running as (select carrier, day, flights, delay, sum(flights) over "
            "(partition by carrier order by day) as running_flights from daily) select carrier, day, flights, "
            "running_flights, rank() over (partition by day order by running_flights desc) as place from running",
    "partitions": "select flight_id, carrier, day, rank() over (partition by carrier order by dep_delay) "
                  "as delay_rank from flights",
}


def write_flights(path: Path, flights: int, seed: int = 13) -> None:
    """``flights`` rows: carriers of uneven size (as nycflights13's: UA 58,665 to OO 32), days of
    2013, delays with NULLs (cancelled flights)."""
    import datetime as dt

    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    random = np.random.default_rng(seed)
    weights = np.array([58665, 54635, 54173, 48110, 32729, 26397, 20536, 18460, 12275, 5162, 3260, 714, 685, 601,
                        342, 32], dtype=float)
    carrier = random.choice(len(CARRIERS), size=flights, p=weights / weights.sum())
    day = random.integers(0, 365, size=flights)
    delay = random.normal(12, 40, size=flights).round().astype(np.int64)
    cancelled = random.random(flights) < 0.025
    table = pa.table({
        "flight_id": np.arange(1, flights + 1, dtype=np.int64),
        "carrier": pa.array(np.array(CARRIERS)[carrier]),
        "day": pa.array([dt.date(2013, 1, 1) + dt.timedelta(days=int(d)) for d in day], pa.date32()),
        "origin": pa.array(np.array(["EWR", "JFK", "LGA"])[random.integers(0, 3, size=flights)]),
        "dep_delay": pa.array(delay, mask=cancelled),
    })
    pq.write_table(table, path)


def timed(run) -> float:
    started = time.perf_counter()
    run()
    return time.perf_counter() - started


def measure(session: LineageSession, step: str, semantics: str, repeat: int, scratch: Path, spelled: bool) -> dict:
    query = STEPS[step]
    name = f"{step}_{semantics}"
    counter = itertools.count()

    def plain() -> None:
        session.sql(query, lineage=False).write.parquet(str(scratch / f"plain-{name}-{next(counter)}"))

    def saved() -> None:
        session.save(session.sql(query, semantics=semantics), name)

    def spelled_out() -> None:
        session.sql(query, semantics=semantics).write.parquet(str(scratch / f"spelled-{name}-{next(counter)}"))

    forms = {"plain": plain, "save": saved, **({"spelled": spelled_out} if spelled else {})}
    seconds: dict[str, list[float]] = {form: [] for form in forms}
    for round_number in range(repeat):
        order = list(forms) if round_number % 2 == 0 else list(reversed(forms))
        for form in order:
            log(f"{step} ({semantics}): {form}, round {round_number + 1} of {repeat}")
            seconds[form].append(timed(forms[form]))
    result = session.store.get(name)
    data_dir = session.store.path(result.data).parent
    whole = named_ids_per_row(session, result)
    figures = {
        "plain_s": statistics.median(seconds["plain"]), "save_s": statistics.median(seconds["save"]),
        "ratio": statistics.median(s / p for s, p in zip(seconds["save"], seconds["plain"])),
        "rows": result.rows, "named_sets": result.named_sets, "stored_ids": result.shared_ids,
        "bytes": directory_bytes(data_dir), "whole_ids": whole or 0.0,
    }
    if spelled:
        figures["spelled_ratio"] = statistics.median(s / p for s, p in zip(seconds["spelled"], seconds["plain"]))
    return figures


def named_ids_per_row(session: LineageSession, result) -> float:
    """The ids a saved row holds on average: its own and those of the sets it names (counted
    per set, without spelling the sets out: the partitions step names billions of ids)."""
    from pyspark.sql import functions as F

    from dltrace.results import SHARED_ID, SHARED_REFS, SHARED_SET

    rows = session.store.rows(session.spark, result)
    if not result.shared:
        return rows.select(F.avg(F.size("DL"))).first()[0] or 0.0
    sizes = session.store.shared_sets(session.spark, result).groupBy(SHARED_SET).agg(F.count(SHARED_ID).alias("n"))
    named = rows.select("_row", F.explode(SHARED_REFS).alias(SHARED_SET)).join(sizes, SHARED_SET)
    named_total = named.agg(F.sum("n")).first()[0] or 0
    own_total = rows.select(F.sum(F.size("DL"))).first()[0] or 0
    return (named_total + own_total) / max(result.rows, 1)


def report(flights: int, repeat: int, results: dict[tuple[str, str], dict]) -> str:
    lines = [f"Window steps over {flights:,} generated flights, {repeat} rounds, embedded Spark\n",
             "| step | semantics | rows | plain s | save s | save / plain | saved bytes | sets held apart | ids stored "
             "| ids per row (own and sets named) | spelled out / plain |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for (step, semantics), r in results.items():
        spelled = f"{r['spelled_ratio']:.2f}x" if "spelled_ratio" in r else "not run"
        lines.append(f"| {step} | {semantics} | {r['rows']:,} | {r['plain_s']:.2f} | {r['save_s']:.2f} | "
                     f"{r['ratio']:.2f}x | "
                     f"{r['bytes']:,} | {r['named_sets']:,} | {r['stored_ids']:,} | {r['whole_ids']:,.0f} | "
                     f"{spelled} |")
    return "\n".join(lines) + "\n"


def plot(results: dict[tuple[str, str], dict], target: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [f"{step}\n{semantics}" for step, semantics in results]
    figure, axes = plt.subplots(1, 2, figsize=(10, 4))
    axes[0].bar(labels, [r["ratio"] for r in results.values()], color="#4878a8")
    axes[0].axhline(2, color="grey", linestyle="--", linewidth=1)
    axes[0].set_title("save with lineage / plain step")
    axes[1].bar(labels, [r["bytes"] / 2**20 for r in results.values()], color="#6a9a58")
    axes[1].set_title("saved MiB (rows + sets held apart)")
    figure.tight_layout()
    figure.savefig(target, dpi=110)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tpch.window_bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--flights", type=int, default=336_776)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--steps", default=",".join(STEPS))
    parser.add_argument("--spelled", action="store_true", help="also time the mart's DLs spelled out in every row")
    parser.add_argument("--out", default="bench-results/windows")
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="dltrace-window-bench-") as temporary:
        scratch = Path(temporary)
        try:
            log(f"generating {args.flights:,} flights")
            write_flights(scratch / "flights.parquet", args.flights)
            session = LineageSession(scratch / "catalog")
            session.register("flights", scratch / "flights.parquet", key=["flight_id"])
            results = {}
            for step in args.steps.split(","):
                for semantics in ("data", "control"):
                    results[(step, semantics)] = measure(session, step, semantics, args.repeat, scratch,
                                                         args.spelled and step == "mart")
        except DltraceError as error:
            print(f"tpch.window_bench: error: {error}", file=sys.stderr)
            return error.exit_code
    text = report(args.flights, args.repeat, results)
    (out / "windows.md").write_text(text)
    plot(results, out / "windows.png")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
