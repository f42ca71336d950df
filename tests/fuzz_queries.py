"""``make fuzz``'s generated queries: thousands, checked in parallel processes, every failure listed.

    python -m tests.fuzz_queries --queries 5000 --jobs 3
    python -m tests.fuzz_queries --queries 2600 --containing "ANTI JOIN"   # those seeds only

Query ``i`` is ``Generator(RandomChooser(first_seed + i))`` (``python -m tests.query_generator
--seed N`` prints it again) and is checked as ``tests/test_generated_queries.py`` checks its
queries (``tests/differential.py``), ``set``/``bdd``/``auto`` on every tenth seed.  Each worker
is a process with a Spark of its own (one core: the queries are tiny, most of their time is
planning) and its own copy of the tiny TPC-H catalog.  A failure does not stop the run:
progress goes to stderr every 100 queries, the end prints the counts by outcome and each
failure's seed, error and query, and the exit status is 1 when any query failed.  Shrink a
failure by pasting its query into ``FOUND`` in tests/test_generated_queries.py and cutting it
down (or by the hypothesis test, which shrinks what it finds).
"""

from __future__ import annotations

import argparse
import atexit
import multiprocessing
import shutil
import signal
import sys
import tempfile
import time
import warnings
from collections import Counter
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

from tests.differential import REJECTED, check, generated_summary, tiny_tpch
from tests.query_generator import Generator, RandomChooser

# Spark's interpreted evaluation: each generated query is new code to compile (Janino, then the
# JIT) for a few rows, and compiling cost more than running.  Two workers on 2 cores, seeds
# 3000-3089: 0.56 queries/s compiled, 0.81 interpreted (docs/testing.md).
# ``make test``'s generated queries keep Spark's default, so compiled plans stay checked too.
INTERPRETED = {"spark.sql.codegen.wholeStage": "false", "spark.sql.codegen.factoryMode": "NO_CODEGEN"}
# one worker's session and oracle, made by ``start_worker`` in each process
WORKER: dict[str, object] = {}


def start_worker() -> None:
    from dltrace.spark import get_spark
    from tests.oracle import DuckOracle

    warnings.simplefilter("ignore")
    spark = get_spark("local[1]", {"spark.sql.shuffle.partitions": "1", "spark.driver.memory": "2g",
                                   "spark.ui.enabled": "false", **INTERPRETED})
    directory = tempfile.mkdtemp(prefix="dltrace-fuzz-")
    atexit.register(shutil.rmtree, directory, True)
    session = tiny_tpch(Path(directory), spark)
    WORKER.update(session=session, oracle=DuckOracle(session))


def run_seed(seed: int) -> tuple[int, str, str, str]:
    """(seed, outcome, query, the first line of the error when it failed)."""
    query = ""
    try:
        query = Generator(RandomChooser(seed)).statement()
        outcome = check(WORKER["session"], WORKER["oracle"], query, representations=seed % 10 == 0)
    except Exception as error:  # noqa: BLE001 - any error is a failure to list, not the end of the run
        lines = [line for line in str(error).strip().splitlines() if line.strip()]
        # a Py4JJavaError's first line only names the call: the Java exception is the second
        first = " ".join(lines[:2] if lines and lines[0].startswith("An error occurred") else lines[:1])
        return seed, "failures", query, f"{type(error).__name__}: {first[:300]}"
    return seed, outcome, query, ""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.fuzz_queries", description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=5000, help="how many queries (default 5000)")
    parser.add_argument("--jobs", type=int, default=2, help="worker processes, one Spark each (default 2)")
    parser.add_argument("--first-seed", type=int, default=0, help="the first query's seed (default 0)")
    parser.add_argument("--containing", metavar="TEXT",
                        help="only the seeds whose query contains TEXT (again the queries a changed rule "
                             "touches, e.g. 'ANTI JOIN')")
    args = parser.parse_args(argv)
    seeds = [seed for seed in range(args.first_seed, args.first_seed + args.queries)
             if not args.containing or args.containing in Generator(RandomChooser(seed)).statement()]
    outcomes: Counter = Counter()
    failures: list[tuple[int, str, str]] = []
    rejected: list[int] = []  # seeds whose query Spark itself fails: Spark's bugs or the generator's
    started = 0.0
    stopped = False
    signal.signal(signal.SIGTERM, stop_by_signal)
    context = multiprocessing.get_context("spawn")  # a JVM's gateway does not survive fork
    pool = ProcessPoolExecutor(args.jobs, mp_context=context, initializer=start_worker)
    try:
        answers = as_completed([pool.submit(run_seed, seed) for seed in seeds])
        for done, answer in enumerate(answers, 1):
            seed, outcome, query, error = answer.result()
            started = started or time.monotonic()  # the rate from the first answer: workers start in ~a minute
            outcomes[outcome] += 1
            if outcome == REJECTED:
                rejected.append(seed)
            if error:
                failures.append((seed, error, query))
                print(f"seed {seed} failed: {error}", file=sys.stderr, flush=True)
            if done % 100 == 0 or done == len(seeds):
                rate = (done - 1) / max(time.monotonic() - started, 1e-9)
                left = (len(seeds) - done) / max(rate, 1e-9) / 60
                print(f"{done}/{len(seeds)} queries, {rate:.2f}/s, about {left:.0f} min left: "
                      f"{generated_summary(outcomes)}", file=sys.stderr, flush=True)
    except BrokenProcessPool as error:  # a worker that could not start (no Java) or died (killed, out of memory)
        print(f"a worker process ended: {error}; the run stopped", file=sys.stderr)
        failures.append((-1, f"a worker process ended: {error}", ""))
    except (Stopped, KeyboardInterrupt):
        stopped = True
        print(f"stopped after {sum(outcomes.values())} of {len(seeds)} queries", file=sys.stderr)
    finally:
        stop_pool(pool, wait=not stopped)
    print(generated_summary(outcomes))
    if rejected:
        print(f"{REJECTED} (python -m tests.query_generator --seed N prints one): seeds "
              f"{', '.join(map(str, sorted(rejected)))}")
    for seed, error, query in sorted(failures):
        print(f"\nseed {seed}: {error}\n{query}")
    return 1 if failures else 143 if stopped else 0


class Stopped(Exception):
    """SIGTERM: the run ends with what it found so far."""


def stop_by_signal(*_) -> None:
    raise Stopped


def stop_pool(pool: ProcessPoolExecutor, wait: bool) -> None:
    """Shut the pool down; when stopped, without running the queries still queued (shutdown
    alone would run all of them) and with its workers (and so their JVMs) ended now."""
    workers = list((pool._processes or {}).values())  # the pool has no public way to end them
    pool.shutdown(wait=wait, cancel_futures=True)
    if not wait:
        for worker in workers:
            worker.terminate()


if __name__ == "__main__":
    sys.exit(main())
