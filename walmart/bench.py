"""``python -m walmart bench``: the paper's Figure 8 (§5.6) on the synthetic Walmart data.

    python -m walmart bench --scale 1 [--queries q1,...,q8] [--modes original,set,...] [--repeat 3] [--out DIR]

The same modes and harness as ``python -m tpch bench`` (:mod:`tpch.bench`); the figure has
the paper's two panels, (a) SPJ Q1-Q4 with 0-3 joins and (b) ASPJ Q5-Q8.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from dltrace.errors import BadInput
from tpch.bench import DEFAULT_TIMEOUT, FORWARD, MODES, checked_modes, run_bench
from tpch.harness import Figure, Panel, Target, faster_target, log, ratio_target
from walmart import data
from walmart.queries import QUERIES, load

SPJ = ["q1", "q2", "q3", "q4"]
ASPJ = ["q5", "q6", "q7", "q8"]
PAPER_NOTE = ("Paper (PostgreSQL 7.4, one day of real Walmart sales): forward lineage with roBDDs under 15% "
              "overhead on every query; the reverse query (materialization + one tuple) more than doubled Q1 and Q2.")


def catalog_for(scale: float) -> Path:
    """One catalog per scale, next to the data, so that re-runs reuse the registrations."""
    return Path("data") / f"catalog-walmart-scale{scale:g}"


def register_walmart(session, scale: float, root: Path = Path("data"), progress: Callable[[str], None] = log) -> Path:
    """Generate (or reuse) the Walmart data at ``scale`` and register its four tables, ids
    chronological where the data has a time (visits, scans), by key elsewhere."""
    directory = data.generate(scale, root)
    paths = data.table_paths(directory)
    for table in data.TABLES:
        plan = data.REGISTRATION[table]
        progress(f"registering {table} (ids ordered by {', '.join(plan.order_by)})")
        session.register(table, paths[table], key=list(plan.key), order_by=list(plan.order_by))
    return directory


def selected_queries(text: str) -> dict[str, str]:
    names = [name.strip().lower() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in QUERIES]
    if unknown:
        raise BadInput(f"unknown Walmart quer{'ies' if len(unknown) > 1 else 'y'} {', '.join(unknown)}: use q1..q8")
    return {name: load(name) for name in dict.fromkeys(names)}


def paper_targets(modes: list[str], queries: list[str]) -> list[Target]:
    """The paper's §5.6 findings as checks: forward under 1.15x everywhere, and cheaper than a reverse query."""
    forward = [mode for mode in FORWARD if mode in modes]
    targets = [ratio_target(f"paper §5.6: `{mode}` under 1.15x on every query", mode, queries, "max", 1.15)
               for mode in forward]
    for reverse in ("reverse-one", "reverse-all"):
        if forward and reverse in modes:
            targets.append(
                faster_target(f"forward (all rows) cheaper than {reverse}, every query", forward, reverse, queries)
            )
    return targets


def add_parser(commands) -> None:
    bench = commands.add_parser("bench", help="the paper's Figure 8: lineage overhead on the Walmart queries")
    bench.add_argument("--scale", type=float, default=1.0, help="data scale (default 1: the paper's row counts)")
    bench.add_argument("--queries", default=",".join(QUERIES), help="comma-separated, from q1..q8 (default: all)")
    bench.add_argument(
        "--modes", default=",".join(MODES), help=f"comma-separated, from {','.join(MODES)} (default: all)"
    )
    bench.add_argument("--repeat", type=int, default=3, help="timed repetitions, median reported (default 3)")
    bench.add_argument("--out", type=Path, default=Path("bench-results/walmart"), help="report directory")
    bench.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, help="seconds before a run is stopped")
    bench.add_argument("--catalog", help="catalog directory (default data/catalog-walmart-scaleS)")
    bench.set_defaults(run=main)


def main(args: argparse.Namespace) -> int:
    """Register the Walmart data at ``--scale`` (cached), measure, write the report."""
    from dltrace import LineageSession

    queries = selected_queries(args.queries)
    modes = checked_modes(args.modes)
    catalog = Path(args.catalog or catalog_for(args.scale))
    session = LineageSession(catalog)
    log(f"Walmart scale {args.scale:g}: data and registration (cached after the first run)")
    register_walmart(session, args.scale)
    figure = Figure("figure8-walmart.png", f"Walmart queries (the paper's Figure 8), scale {args.scale:g}",
                    [Panel("(a) SPJ Q1-Q4", [q for q in SPJ if q in queries]),
                     Panel("(b) ASPJ Q5-Q8", [q for q in ASPJ if q in queries])])
    report = run_bench(session, queries, modes, args.repeat, args.out,
                       f"Forward lineage vs. baselines, Walmart scale {args.scale:g}",
                       [f"`python -m walmart {' '.join(sys.argv[1:])}`: catalog `{catalog}`, {len(queries)} queries, "
                        f"modes {', '.join(modes)}.", "", PAPER_NOTE],
                       [figure], paper_targets(modes, list(queries)), args.timeout)
    print(report)
    return 0
