"""Generated DataFrame programs, plain against traced, from the command line (issue 65, item 2).

    python -m tests.fuzz_programs --programs 1000 --seed 0
    python -m tests.fuzz_programs --seeds 10 1049      # just these programs

Program ``i`` is ``generate(seed + i)`` (``python -m tests.program_generator --seed N`` prints
it); each runs as ``spark-submit`` runs it (classic Spark) and under ``dltrace run``
(tests/program_check.py), in batches on one local Spark of this process.  Progress goes to
stderr after every batch; the end prints the counts (programs, that failed alike, differences)
and each difference with its seed, then the programs that fail alike at other lines.  The
exit status is 1 when a program differs.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import warnings
from pathlib import Path

from tests.program_check import BATCH, differences, line_differences, run_plain, run_traced, write_sources
from tests.program_generator import generate


def check(classic, lineage, seeds: list[int], work: Path, progress=None) -> tuple[dict, dict, dict]:
    """(plain outcomes, differences, line differences) of the programs of ``seeds``, batch by
    batch so that progress can be told."""
    data = write_sources(work / "data") if not (work / "data").exists() else work / "data"
    plain, traced, told = {}, {}, set()
    started = time.monotonic()
    for first in range(0, len(seeds), BATCH * 4):
        programs = [generate(seed) for seed in seeds[first:first + BATCH * 4]]
        plain.update(run_plain(classic, programs, data, work))
        traced.update(run_traced(lineage, programs, data, work))
        if progress:
            found = differences(plain, traced)
            rate = len(plain) / max(time.monotonic() - started, 1e-9)
            progress(f"{len(plain)}/{len(seeds)} programs, {rate:.2f}/s: {len(found)} differences")
            for seed in sorted(set(found) - told):  # each as soon as it is found: a long run is read as it goes
                progress(f"program {seed}: {found[seed]}")
            told.update(found)
    return plain, differences(plain, traced), line_differences(plain, traced)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.fuzz_programs", description=__doc__.splitlines()[0])
    parser.add_argument("--programs", type=int, default=1000, help="how many programs (default 1000)")
    parser.add_argument("--seed", type=int, default=0, help="the first program's seed (default 0)")
    parser.add_argument("--seeds", type=int, nargs="+", help="run just these programs (a difference again)")
    args = parser.parse_args(argv)
    from dltrace import LineageSession
    from dltrace.spark import connect_session, get_spark, serve_connect

    warnings.simplefilter("ignore")
    classic = get_spark("local[2]", {"spark.sql.shuffle.partitions": "2", "spark.ui.enabled": "false"})
    engine = connect_session(serve_connect(classic))
    with tempfile.TemporaryDirectory(prefix="dltrace-programs-") as directory:
        work = Path(directory)
        lineage = LineageSession(work / "catalog", spark=engine)
        seeds = args.seeds or list(range(args.seed, args.seed + args.programs))
        plain, found, lines = check(classic, lineage, seeds, work,
                                    lambda text: print(text, file=sys.stderr, flush=True))
    failing = sum(1 for outcome in plain.values() if outcome.error)
    print(f"{len(plain)} programs: {len(plain) - failing} ran, {failing} failing in plain Spark, "
          f"{len(found)} differences")
    for seed, what in sorted(found.items()):
        print(f"\nprogram {seed}: {what}")
    if lines:
        print(f"\n{len(lines)} programs fail alike at another line:")
        for seed, what in sorted(lines.items()):
            print(f"program {seed}: {what}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
