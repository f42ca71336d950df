"""TPC-DS queries whose rows share large lineage, answered without losing the process.

    python -m tpcds bench [--sf 0.1] [--queries q14,q23] [--frequency 4] [--repeat 1] [--out bench-results/tpcds]

Queries (``tpcds/queries``): q14; q23 (part one) and q23b (part two, the customers' names);
q23b_joined, q23b with ``max_store_sales`` joined as a DataFrame program writes a scalar.

Data: TPC-DS generated with tpcgen-cli (PyPI; cached in ``data/tpcds-sfSF``), the tables the
queries read registered in place in ``data/catalog-tpcds-sfSF``.  Each query runs, interleaved
in one Spark session after a warm-up pass (tpch/harness.py):

* ``original``: the plain query, its rows collected;
* ``lineage``: ``ls.sql(query).collect()``, every row's whole DL in Python;
* ``held_apart``: ``ls.shared_lineage`` of it, the rows' own ids and each shared set once;
* ``cli`` and ``cli_plain``: ``dltrace sql @query`` with lineage and without (``--lineage-on ""``),
  each a process of its own (its JVM start included), which must exit 0.

The report (``report.md``, a PNG, ``measurements.csv``) gives the times, the shared sets' sizes
and whether this process's Spark still answers at the end.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from dltrace import LineageSession
from dltrace.datasets import cached_directory, generator_executable, parquet_readable, scale_label
from dltrace.errors import DltraceError, jvm_alive
from dltrace.formatting import lineage_ids
from dltrace.plain import names_read
from tpch.harness import Figure, Mode, Panel, log, measure, write_report

QUERIES = Path(__file__).resolve().parent / "queries"
DEFAULT_QUERIES = ("q14", "q23")  # also q23b, q23b_joined (--queries)


def parser() -> argparse.ArgumentParser:
    """The command line (tests/test_bench_commands.py runs each subcommand)."""
    top = argparse.ArgumentParser(
        prog="python -m tpcds", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    commands = top.add_subparsers(dest="command", required=True)
    bench = commands.add_parser("bench", help="plain against lineage through the API and the CLI")
    bench.add_argument("--sf", type=float, default=0.1)
    bench.add_argument("--queries", default=",".join(DEFAULT_QUERIES))
    bench.add_argument("--repeat", type=int, default=1)
    bench.add_argument("--frequency", type=int, default=4,
                       help="q23's frequent items sell more than N times a day (the standard 4 leaves q23 no rows "
                            "below SF 1; 2 gives rows at SF 0.1)")
    bench.add_argument("--catalog", help="catalog directory (default data/catalog-tpcds-sfSF)")
    bench.add_argument("--out", type=Path, default=Path("bench-results/tpcds"))
    return top


def load(name: str, frequency: int = 4) -> str:
    """A query's text, with q23's frequent items selling more than ``frequency`` times a day."""
    text = (QUERIES / f"{name}.sql").read_text()
    standard = "having count(*) > 4)"
    if frequency != 4 and name.startswith("q23") and standard not in text:
        raise DltraceError(f"tpcds: {name}.sql no longer reads `{standard}`: --frequency cannot apply")
    return text.replace(standard, f"having count(*) > {frequency})")


def generate(sf: float, root: Path = Path("data")) -> Path:
    """TPC-DS at ``sf`` as one Parquet file per table under ``root`` (cached)."""
    try:
        executable = generator_executable("tpcgen-cli")
    except FileNotFoundError as missing:
        raise DltraceError(str(missing)) from None

    def build(staging: Path) -> None:
        log(f"generating TPC-DS SF {scale_label(sf)} with {executable} ...")
        done = subprocess.run([str(executable), "tpcds", "parquet", "--scale-factor", scale_label(sf),
                               "--output-dir", str(staging)], capture_output=True, text=True)
        if done.returncode != 0:
            raise DltraceError(f"tpcgen-cli failed (exit {done.returncode}): {done.stderr.strip()[:300]}")

    return cached_directory(root / f"tpcds-sf{scale_label(sf)}", build,
                            lambda d: d.is_dir() and parquet_readable([d / "store_sales.parquet", d / "item.parquet"]))


def register(session: LineageSession, directory: Path, queries: dict[str, str]) -> None:
    """The tables the queries read, registered in place (again only when their files changed)."""
    tables = sorted(set().union(*(names_read(query) for query in queries.values())))
    for table in tables:
        path = directory / f"{table}.parquet"
        if path.exists():
            log(f"registering {table} in place")
            session.register(table, path)


def cli_mode(name: str, catalog: Path, lineage: bool) -> Mode:
    """``dltrace sql @query`` in a process of its own, which must exit 0."""

    def prepare(query: str, sql: str):
        text = Path(tempfile.gettempdir()) / f"dltrace-tpcds-{query}.sql"  # the query as measured (--frequency)
        text.write_text(sql)
        command = [str(Path(sys.executable).parent / "dltrace"), "sql", f"@{text}",
                   "--catalog", str(catalog), "--limit", "100"] + ([] if lineage else ["--lineage-on", ""])

        def run() -> None:
            done = subprocess.run(command, capture_output=True, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
            if done.returncode != 0:
                raise RuntimeError(f"exit {done.returncode}: {done.stderr.strip().splitlines()[-1:]}")

        return run

    return Mode(name, prepare)


def modes(session: LineageSession, catalog: Path) -> list[Mode]:
    def plain(query: str, sql: str):
        return lambda: session.sql(sql, lineage=False).collect()

    def lineage(query: str, sql: str):
        return lambda: session.sql(sql).collect()

    def held_apart(query: str, sql: str):
        def run() -> None:
            rows, sets = session.shared_lineage(session.sql(sql))
            rows.collect()
            for shared in sets:
                shared.collect()

        return run

    return [Mode("original", plain), Mode("lineage", lineage), Mode("held_apart", held_apart),
            cli_mode("cli", catalog, True), cli_mode("cli_plain", catalog, False)]


def lineage_sizes(session: LineageSession, sql: str) -> str:
    """Rows, the shared sets' sizes and the rows' own ids, for the report."""
    rows, sets = session.shared_lineage(session.sql(sql))
    own = sum(len(lineage_ids(row.DL)) for row in rows.select("DL").collect())
    sizes = [len(shared.first()[0]) for shared in sets]
    held = f"{len(sizes)} shared sets of {', '.join(f'{n:,}' for n in sizes)} ids" if sizes else "no shared set"
    count = rows.count()
    return f"{count} row{'s' if count != 1 else ''}; {held}; {own:,} own ids in all rows"


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        queries = {name: load(name, args.frequency) for name in args.queries.split(",")}
        catalog = Path(args.catalog or f"data/catalog-tpcds-sf{scale_label(args.sf)}")
        session = LineageSession(catalog)
        register(session, generate(args.sf), queries)
        sizes = {name: lineage_sizes(session, sql) for name, sql in queries.items()}
        results = measure(queries, modes(session, catalog), args.repeat)
        alive = jvm_alive()
        cli = {name: (results.median(name, "cli"), results.median(name, "cli_plain")) for name in queries}
        context = [f"TPC-DS SF {scale_label(args.sf)}, tables registered in place, control semantics, `set`; "
                   f"q23's frequent items: `count(*) > {args.frequency}` (standard: 4).", ""]
        context += [f"* {name}: {size}" for name, size in sizes.items()]
        context += ["", f"This process's Spark answers after every run: {'yes' if alive else '**no**'}.", "",
                    "`cli` and `cli_plain` are processes of their own: each time includes a JVM start. "
                    "`cli` over `cli_plain`: " + ", ".join(
                        f"{name} {lineage / plain:.2f}x" for name, (lineage, plain) in cli.items() if lineage and plain)
                    + "."]
        descriptions = {"original": "the plain query, rows collected",
                        "lineage": "`ls.sql(query).collect()`: every row's whole DL",
                        "held_apart": "`ls.shared_lineage`: the rows' own ids, each shared set once",
                        "cli": "`dltrace sql @query --limit 100` (table)",
                        "cli_plain": "`dltrace sql @query --lineage-on \"\"` (no lineage)"}
        figure = Figure("tpcds.png", "TPC-DS queries with large shared lineage",
                        [Panel("TPC-DS", list(queries))])
        path = write_report(args.out, results, f"TPC-DS SF {scale_label(args.sf)}: large shared lineage", context,
                            descriptions, [figure], [])
        log(f"wrote {path}")
        return 0 if alive else 1
    except DltraceError as error:
        print(f"tpcds: error: {error}", file=sys.stderr)
        return error.exit_code


if __name__ == "__main__":
    sys.exit(main())
