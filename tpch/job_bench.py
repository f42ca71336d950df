"""Job benchmark: ``dltrace run job.py`` against ``python job.py`` (as ``spark-submit``), side by side.

    python -m tpch.job_bench [--job shop|flights] [--scale N] [--semantics control|data] [--repeat 3]
                             [--profile] [--out DIR]

Two jobs written as a team writes them, over generated files, ``--scale`` rows of their main
source:

* **shop** (``dltrace/examples/shop_job.py``, ``shop_data``: orders): Parquet, CSV and JSON
  reads, an eager count, a temporary view with ``spark.sql``, two windows, a table and a
  Parquet directory written and read back;
* **flights** (``flights_job.py``, ``flights_data``: flights, 336,776 a year): three joins, a
  union with dropDuplicates and a group, a daily mart per carrier (a running count over the
  years, then a rank per day), a table and two Parquet directories written.

Each round runs them in turn as a whole process each: plain (classic Spark, as
``spark-submit`` runs it) and under ``dltrace run`` (Spark Connect, its reads registered in
place or copied on the first round, its writes saved with lineage).  The first ``dltrace
run`` registers the sources and is reported apart; the rounds after it reuse the
registration, as a team's daily run does.  Per round: wall seconds of each, and their ratio;
the median ratio is the figure.  ``--profile`` runs the traced job once more with
``dltrace run --profile`` and adds its table (each step's seconds by phase against the step
computed plainly) to the report, ``--out``/``jobs-JOB-SCALE-SEMANTICS.md``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from dltrace.examples import flights_data, shop_data
from tpch.harness import log

EXAMPLES = Path(__file__).resolve().parent.parent / "dltrace" / "examples"
JOBS = {"shop": (EXAMPLES / "shop_job.py", lambda path, scale: shop_data.write(path, orders=scale), 1_000_000),
        "flights": (EXAMPLES / "flights_job.py", lambda path, scale: flights_data.write(path, flights=scale),
                    flights_data.FLIGHTS_PER_YEAR)}


def timed(command: list[str], cwd: Path) -> float:
    """Seconds ``command`` took; its failure stops the benchmark with its last lines."""
    started = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"benchmark: {' '.join(command[:4])} ... failed:\n{done.stderr[-2000:]}")
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--job", choices=JOBS, default="shop")
    parser.add_argument("--scale", type=int, help="rows of the job's main source (shop: 1,000,000 orders; "
                                                  "flights: 336,776 flights, a year)")
    parser.add_argument("--orders", type=int, help=argparse.SUPPRESS)  # the shop's --scale, as first named
    parser.add_argument("--semantics", choices=("control", "data"), default="control")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--profile", action="store_true", help="and a profiled run's table of steps and phases")
    parser.add_argument("--out", type=Path, default=Path("bench-results"))
    args = parser.parse_args(argv)
    job, generate, default_scale = JOBS[args.job]
    scale = args.scale or args.orders or default_scale
    work = Path(tempfile.mkdtemp(prefix="dltrace-job-bench-"))
    try:
        data = generate(work / "data", scale)
        log(f"job_bench: {args.job}, {scale:,} rows generated in {data}")
        plain = [sys.executable, str(job), str(data), str(work / "out-plain")]
        traced = [sys.executable, "-m", "dltrace", "run", "--catalog", str(work / "catalog"), "--semantics",
                  args.semantics, str(job), str(data), str(work / "out-dltrace")]
        first = timed(traced, work)
        log(f"job_bench: first dltrace run (registers the sources) {first:.1f} s")
        rounds = []
        for number in range(1, args.repeat + 1):
            shutil.rmtree(work / "spark-warehouse", ignore_errors=True)  # plain Spark's in-memory catalog forgets it
            plain_seconds = timed(plain, work)
            traced_seconds = timed(traced, work)
            rounds.append((plain_seconds, traced_seconds))
            log(f"job_bench: round {number}/{args.repeat}: python job.py {plain_seconds:.1f} s, dltrace run "
                f"{traced_seconds:.1f} s ({traced_seconds / plain_seconds:.2f}x)")
        ratio = statistics.median(t / p for p, t in rounds)
        lines = ["| round | python job.py (s) | dltrace run job.py (s) | ratio |", "|---|---|---|---|"]
        lines += [f"| {n} | {p:.1f} | {t:.1f} | {t / p:.2f}x |" for n, (p, t) in enumerate(rounds, 1)]
        report = (f"# The {args.job} job, {scale:,} rows, {args.semantics} semantics\n\nFirst `dltrace run` "
                  f"(registers the sources): {first:.1f} s.\n\n" + "\n".join(lines) +
                  f"\n\nMedian ratio: **{ratio:.2f}x**\n")
        if args.profile:
            report += "\n" + profiled(traced, work)
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / f"jobs-{args.job}-{scale}-{args.semantics}.md").write_text(report)
        print(report)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def profiled(traced: list[str], work: Path) -> str:
    """The traced job run once more with ``--profile``: its table of steps, as Markdown."""
    path = work / "profile.json"
    log("job_bench: a profiled dltrace run")
    timed([*traced[:4], "--profile-json", str(path), *traced[4:]], work)
    profile = json.loads(path.read_text())
    lines = ["| line | what | rows | plain s | plan s | sets s | save s | write s | other s | total s | x plain | "
             "jobs | lineage MB |", "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for entry in profile["entries"]:
        phases = [f"{entry['seconds'].get(p, 0):.2f}" if entry["kind"] == "step" else ""
                  for p in ("plan", "sets", "save", "write", "other")]
        plain, jobs = entry["plain_seconds"], sum(n for p, n in entry["jobs"].items() if p != "plain")
        lines.append(f"| {entry['line']} | {entry['kind']} {entry['name'].split('/')[-1]} | {entry['rows'] or ''} | "
                     f"{plain or 0:.2f} | " + " | ".join(phases) + f" | {entry['total']:.2f} | "
                     f"{entry['total'] / plain if plain else 0:.2f} | {jobs} | "
                     f"{(entry['lineage_bytes'] or 0) / 1e6:.2f} |")
    return (f"Profiled run (`dltrace run --profile`, each step also computed plainly once): "
            f"{profile['seconds']:.1f} s\n\n" + "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
