"""Job benchmark: ``dltrace run job.py`` against ``python job.py`` (as ``spark-submit``), side by side.

    python -m tpch.job_bench [--orders 2000000] [--repeat 3] [--out DIR]

The shop job (``dltrace/examples/shop_job.py``: Parquet, CSV and JSON reads, an eager count,
a temporary view with ``spark.sql``, two windows, a table and a Parquet directory written and
read back) over generated files (``dltrace.examples.shop_data``, ``--orders`` orders), run in
turn within a round as a whole process each: plain (classic Spark, as ``spark-submit`` runs
it) and under ``dltrace run`` (Spark Connect, its reads registered in place or copied on the
first round, its writes saved with lineage).  The first ``dltrace run`` registers the sources
and is reported apart; the rounds after it reuse the registration, as a team's daily run does.
Per round: wall seconds of each, and their ratio; the median ratio is the figure.  Written to
``--out`` as ``jobs.md``.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from dltrace.examples import shop_data
from tpch.harness import log

JOB = Path(__file__).resolve().parent.parent / "dltrace" / "examples" / "shop_job.py"


def timed(command: list[str], cwd: Path) -> float:
    """Seconds ``command`` took; its failure stops the benchmark with its last lines."""
    started = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"benchmark: {' '.join(command[:4])} ... failed:\n{done.stderr[-2000:]}")
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--orders", type=int, default=2_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", type=Path, default=Path("bench-results"))
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="dltrace-job-bench-"))
    try:
        data = shop_data.write(work / "data", orders=args.orders)
        log(f"job_bench: {args.orders:,} orders generated in {data}")
        plain = [sys.executable, str(JOB), str(data), str(work / "out-plain")]
        traced = [sys.executable, "-m", "dltrace", "run", "--catalog", str(work / "catalog"), str(JOB), str(data),
                  str(work / "out-dltrace")]
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
        report = (f"# The shop job, {args.orders:,} orders\n\nFirst `dltrace run` (registers the sources): "
                  f"{first:.1f} s.\n\n" + "\n".join(lines) + f"\n\nMedian ratio: **{ratio:.2f}x**\n")
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "jobs.md").write_text(report)
        print(report)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
