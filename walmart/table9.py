"""``python -m walmart table9``: the paper's Table 9 (space of the lineage) on the Walmart queries.

Measured like Table 7 (:func:`tpch.table7.characteristics`, natively in Spark over ``DL``),
laid out as the paper's table: one column per query, the paper's figures beside ours.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from tpch.harness import log
from tpch.table7 import Characteristics, characteristics
from walmart.queries import QUERIES

# Table 9 of the paper: (cardinality, average lineage size, total lineage size, space in bytes)
PAPER_TABLE9 = {
    "q1": (14898, 1, 14898, 59592), "q2": (14898, 2, 29796, 119184), "q3": (12376, 3, 37128, 148512),
    "q4": (12376, 4, 49504, 198016), "q5": (130, 11248, 1462254, 5849016), "q6": (121, 2034, 246156, 984624),
    "q7": (3293, 405, 1335824, 5343296), "q8": (7608, 946, 1343557, 5374228),
}


def markdown(rows: list[Characteristics], scale: float) -> str:
    """Table 9 with the paper's row under each of ours; space counts 4-byte ids, as the paper did."""
    names = [row.query for row in rows]
    lines = [
        f"## Table 9 on the Walmart data, scale {scale:g} (control semantics; paper's figures in brackets)",
        "",
        "| | " + " | ".join(name.upper() for name in names) + " |",
        "|---|" + "---:|" * len(names),
    ]

    def line(label: str, ours: list[str], column: int) -> str:
        cells = [f"{value} ({PAPER_TABLE9[name][column]})" if name in PAPER_TABLE9 else value
                 for name, value in zip(names, ours)]
        return f"| {label} | " + " | ".join(cells) + " |"

    lines.append(line("cardinality", [r.note or str(r.cardinality) for r in rows], 0))
    lines.append(line("avg lineage size", [f"{r.avg_lineage:.0f}" for r in rows], 1))
    lines.append(line("total lineage size", [str(r.total_lineage) for r in rows], 2))
    lines.append(line("space (bytes)", [str(4 * r.total_lineage) for r in rows], 3))
    return "\n".join(lines) + "\n"


def add_parser(commands) -> None:
    table9 = commands.add_parser("table9", help="the paper's Table 9: result rows and lineage space per query")
    table9.add_argument("--scale", type=float, default=1.0, help="data scale (default 1)")
    table9.add_argument("--queries", default=",".join(QUERIES), help="comma-separated, from q1..q8 (default: all)")
    table9.add_argument("--catalog", help="catalog directory (default data/catalog-walmart-scaleS)")
    table9.set_defaults(run=main)


def main(args: argparse.Namespace) -> int:
    from dltrace import LineageSession
    from walmart.bench import catalog_for, register_walmart, selected_queries

    queries = selected_queries(args.queries)
    session = LineageSession(Path(args.catalog or catalog_for(args.scale)))
    log(f"Walmart scale {args.scale:g}: data and registration (cached after the first run)")
    register_walmart(session, args.scale)
    rows = []
    for name, query in queries.items():
        log(f"{name}: running with lineage")
        rows.append(characteristics(session, name, query))
    print(markdown(rows, args.scale))
    return 0
