"""Shared lineage benchmark (docs/impact.md, "Shared lineage is held once"): TPC-H queries whose rows
share an uncorrelated subquery's lineage, side by side in one session.

    python -m tpch.shared_bench --sf 10 --query q11 [--query q15] [--repeat 3] [--spelled]

Per query and round: the plain query's rows collected; the query with lineage shown as
``dltrace sql`` shows it (each row's own ids, the shared set read once); and the query with
lineage saved as a result (the shared set stored once).  ``--spelled`` adds the saved
result the way dltrace stored it before shared sets (each row's whole DL spelled out).
Only the tables the queries read are generated and registered, in a catalog of their own
(``data/catalog-tpch-sfSF-shared``), so SF 10 needs minutes, not the whole of TPC-H.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

from dltrace import LineageSession
from dltrace.datasets import REGISTRATION, TABLES, scale_label, tpchgen_executable
from dltrace.errors import DltraceError
from dltrace.plain import names_read
from dltrace.results import DL
from tpch.harness import log
from tpch.queries import load


def generate_tables(sf: float, tables: list[str], directory: Path) -> dict[str, Path]:
    """``directory/<table>.parquet`` for each table, generated when missing (written aside,
    renamed into place)."""
    directory.mkdir(parents=True, exist_ok=True)
    missing = [t for t in tables if not (directory / f"{t}.parquet").exists()]
    if missing:
        log(f"generating {', '.join(missing)} at SF {scale_label(sf)}")
        staging = directory / ".staging"
        subprocess.run([str(tpchgen_executable()), "parquet", "--scale-factor", scale_label(sf), "--tables",
                        ",".join(missing), "--output-dir", str(staging), "--no-progress", "--quiet"], check=True)
        for table in missing:
            (staging / f"{table}.parquet").rename(directory / f"{table}.parquet")
    return {t: directory / f"{t}.parquet" for t in tables}


def query_at(query: str, sf: float) -> str:
    """The query's text at scale factor ``sf``: Q11's FRACTION is 0.0001 / SF (TPC-H 2.4.11.3),
    so that it keeps about a thousand rows at every scale factor."""
    text = load(query)
    return text.replace("* 0.0001", f"* {0.0001 / sf:.10f}".rstrip("0")) if query == "q11" else text


def timed(action) -> float:
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tpch.shared_bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sf", type=float, default=1.0)
    parser.add_argument("--query", action="append", help="TPC-H query (default q11)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--spelled", action="store_true", help="also save every row's whole DL (the format before)")
    args = parser.parse_args(argv)
    queries = args.query or ["q11"]
    label = scale_label(args.sf)
    try:
        session = LineageSession(Path("data") / f"catalog-tpch-sf{label}-shared")
        tables = sorted(set(TABLES) & {t for q in queries for t in names_read(load(q))})
        for table, path in generate_tables(args.sf, tables, Path("data") / f"tpch-sf{label}-partial").items():
            if table not in session.catalog.tables:
                log(f"registering {table}")
            plan = REGISTRATION[table]
            session.register(table, path, key=list(plan.key), order_by=list(plan.order_by))
        session.run("select 1")  # the tables' views, for the plain query
        figures: dict[tuple[str, str], list[float]] = {}
        failed: dict[str, str] = {}  # query -> why saving it spelled out failed (it is not tried again)
        for round_number in range(args.repeat + 1):
            for query in queries:
                text = query_at(query, args.sf)
                frame = session.sql(text)
                own, sets = session.shared_lineage(frame)
                measured = {
                    "plain": timed(lambda: session.run(session.plain(text)).toArrow()),
                    "lineage shown": timed(lambda: (own.toArrow(), [s.toArrow() for s in sets])),
                    "lineage saved": timed(lambda: session.save(frame, f"shared_bench_{query}")),
                }
                if args.spelled and query not in failed:
                    try:
                        measured["spelled out, saved"] = timed(lambda: session.store.save(
                            frame, f"shared_bench_{query}_spelled", text, "control", "set"))
                    except Exception as error:  # noqa: BLE001 - the old format's failure is a figure too
                        failed[query] = (
                            "out of memory" if "OutOfMemoryError" in str(error) else str(error).splitlines()[0]
                        )
                        log(f"{query}: saving every row's whole DL failed: {failed[query]}")
                saved = session.store.get(f"shared_bench_{query}")
                log(
                    f"round {round_number}/{args.repeat}{' (warm-up)' if not round_number else ''} {query}: "
                    + ", ".join(f"{k} {v:.1f} s" for k, v in measured.items())
                    + f" ({saved.rows} rows, shared set of {saved.shared_ids:,} ids)"
                )
                if round_number:
                    for kind, seconds in measured.items():
                        figures.setdefault((query, kind), []).append(seconds)
    except DltraceError as error:
        print(f"tpch.shared_bench: error: {error}", file=sys.stderr)
        return error.exit_code
    print(f"TPC-H SF {label}, {args.repeat} rounds after a warm-up, driver heap as dltrace sets it\n")
    print("| query | what | median s | x plain |")
    print("|---|---|---:|---:|")
    for query in queries:
        plain = statistics.median(figures[(query, "plain")])
        for (name, kind), values in figures.items():
            if name == query:
                print(
                    f"| {query} | {kind} | {statistics.median(values):.2f} | {statistics.median(values) / plain:.2f} |"
                )
    for query, why in failed.items():
        print(f"| {query} | spelled out, saved | failed: {why} | |")
    for query in queries:
        saved = session.store.get(f"shared_bench_{query}")
        print(
            f"\n{query}: {saved.rows:,} rows; each row's whole DL holds the shared set of {saved.shared_ids:,} ids "
            f"({saved.rows * saved.shared_ids:,} ids spelled out); column {DL} keeps the rows' own ids"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
