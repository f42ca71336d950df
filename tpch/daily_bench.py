"""Daily runs benchmark: does run N of a daily job cost what run 1 costs, plain and traced?

    python -m tpch.daily_bench [--days 7] [--events 200000] [--out DIR]

The daily job (``dltrace/examples/daily_job.py``: a partitioned events folder that gains a
day per run, a users CSV that gains versions, an append to ``orders_log``, inserts into the
table ``user_days`` and a dynamic partition overwrite of ``daily_revenue``) over files
``dltrace.examples.daily_data`` writes, ``--events`` events a day.  Each day the day's files
are written, then the job runs as a whole process twice, in turn: plain (classic Spark, as ``spark-submit``) and under
``dltrace run`` over one catalog that keeps every run before.  Per day: wall seconds of each
and their ratio; the figures are run N over run 1, plain and traced (registration, planning
and the save must not grow with the runs before).  Written to ``--out`` as ``daily.md``.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

from dltrace.examples import daily_data
from tpch.harness import log
from tpch.job_bench import timed

JOB = Path(__file__).resolve().parent.parent / "dltrace" / "examples" / "daily_job.py"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--days", type=int, default=7)
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--out", type=Path, default=Path("bench-results"))
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="dltrace-daily-bench-"))
    rows = []
    try:
        for day in range(1, args.days + 1):
            daily_data.write(work / "data", day, args.events)
            date = daily_data.day_of(day).isoformat()
            plain = timed([sys.executable, str(JOB), str(work / "data"), str(work / "out-plain"), date], work)
            traced = timed([sys.executable, "-m", "dltrace", "run", "--catalog", str(work / "catalog"), str(JOB),
                            str(work / "data"), str(work / "out-dltrace"), date], work)
            rows.append((day, plain, traced))
            log(f"daily_bench: day {day}: plain {plain:.1f} s, dltrace run {traced:.1f} s ({traced / plain:.2f}x)")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    first, last = rows[0], rows[-1]
    lines = [f"# Daily runs: {args.days} days of {args.events:,} events", "",
             "| day | plain s | dltrace run s | ratio |", "|---:|---:|---:|---:|",
             *(f"| {d} | {p:.1f} | {t:.1f} | {t / p:.2f}x |" for d, p, t in rows), "",
             f"Run {last[0]} over run 1: plain {last[1] / first[1]:.2f}x, dltrace run {last[2] / first[2]:.2f}x."]
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "daily.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
