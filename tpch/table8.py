"""The paper's Table 8 and Figure 6: variable-granularity lineage against tuple lineage.

Q5, Q6, Q7, Q9 and Q15 traced ``LINEAGE ON (year(l_shipdate), weekofyear(l_shipdate),
l_shipmode)`` (paper §5.5): each output row's lineage is the set of (year, week, ship
mode) combinations of the lineitems it derives from; the other tables provide none of
L and contribute nothing.  For each query:

* rows, average lineage size with tuple lineage (ids of every table) and with granules;
* space of all DLs at 4 bytes an id, the paper's unit (Table 8: 5 x 394 x 4 = 7880 for
  Q5); dltrace's ids are bigints, so its arrays take twice that;
* seconds of the plain query, tuple lineage and granular lineage, run in one Spark
  session: a warm-up of each first, then ``repeats`` rounds with the three modes
  interleaved (their order rotating), the median of each; every run writes all rows to
  Spark's ``noop`` sink, so DLs are computed in full and nothing is collected.

Spark's ``weekofyear`` is the ISO 8601 week (Monday first; week 1 holds the year's first
Thursday), so days around New Year pair ``year()`` with week 52/53 or 1 of the
neighbouring year: (1995, 52) also holds 1995-01-01, and (1996, 1) holds 1996-12-30.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tpch.harness import execute, rotated

TABLE8_QUERIES = ["q5", "q6", "q7", "q9", "q15"]
LINEAGE_ON = "year(l_shipdate), weekofyear(l_shipdate), l_shipmode"
ID_BYTES = 4  # the paper stored 32-bit ids
MODES = ("plain", "tuple", "granular")

# The paper's Table 8: (cardinality, average lineage size, space in bytes)
PAPER_TABLE8 = {
    "q5": (5, 394, 7880), "q6": (1, 364, 1456), "q7": (4, 334, 5344), "q9": (175, 402, 281400), "q15": (1, 91, 364),
}

SIZES = "SELECT count(*) AS cardinality, sum(size(DL)) AS total FROM ({query})"


@dataclass
class Table8Row:
    query: str
    cardinality: int
    tuple_total: int  # ids over all rows' DLs
    granular_total: int  # granule ids over all rows' DLs
    seconds: dict[str, float]  # mode -> median seconds

    def average(self, total: int) -> float:
        return total / self.cardinality if self.cardinality else 0.0


def measure(
    session, name: str, query: str, semantics: str = "control", repeats: int = 3,
    progress: Callable[[str], None] = lambda _: None,
) -> Table8Row:
    """Table 8's sizes and Figure 6's times for one query."""
    texts = {
        "plain": session.plain(query),
        "tuple": session.rewrite(query, semantics),
        "granular": session.rewrite(query, semantics, lineage_on=LINEAGE_ON),
    }
    progress(f"{name}: lineage sizes (also the warm-up)")
    sizes = {mode: session.run(SIZES.format(query=texts[mode])).first() for mode in ("tuple", "granular")}
    execute(session.run(texts["plain"]))
    times: dict[str, list[float]] = {mode: [] for mode in MODES}
    for round_number in range(repeats):
        for mode in rotated(list(MODES), round_number):
            started = time.perf_counter()
            execute(session.run(texts[mode]))
            times[mode].append(time.perf_counter() - started)
        progress(f"{name}: round {round_number + 1}/{repeats}: " + ", ".join(f"{m} {times[m][-1]:.2f}s" for m in MODES))
    return Table8Row(
        query=name,
        cardinality=int(sizes["tuple"].cardinality),
        tuple_total=int(sizes["tuple"].total or 0),
        granular_total=int(sizes["granular"].total or 0),
        seconds={mode: statistics.median(values) for mode, values in times.items()},
    )


def markdown(rows: list[Table8Row], sf: float, semantics: str, repeats: int) -> str:
    """Table 8 beside the paper's figures, and Figure 6's times."""
    lines = [
        f"## Table 8 at TPC-H SF {sf:g}: LINEAGE ON ({LINEAGE_ON}), {semantics} semantics",
        "",
        f"Space: all DLs at {ID_BYTES} bytes an id, as the paper counted (dltrace's bigint ids take twice that).",
        "",
        "| query | rows | avg tuple lineage | avg granules | paper avg granules | tuple space (B) "
        "| granular space (B) | paper granular space (B) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        paper_rows, paper_avg, paper_space = PAPER_TABLE8.get(r.query, ("", "", ""))
        lines.append(
            f"| {r.query} | {r.cardinality} | {r.average(r.tuple_total):.1f} | {r.average(r.granular_total):.1f} "
            f"| {paper_avg} "
            f"| {ID_BYTES * r.tuple_total} | {ID_BYTES * r.granular_total} | {paper_space} |"
        )
    lines += [
        "",
        f"## Figure 6: seconds (median of {repeats}, one Spark session, modes interleaved)",
        "",
        "| query | plain | tuple lineage | granular lineage | tuple / plain | granular / plain |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        plain, tuple_, granular = (r.seconds[m] for m in MODES)
        lines.append(
            f"| {r.query} | {plain:.2f} | {tuple_:.2f} | {granular:.2f} "
            f"| {tuple_ / plain:.2f}× | {granular / plain:.2f}× |"
        )
    return "\n".join(lines) + "\n"


def draw(rows: list[Table8Row], path: Path, sf: float) -> None:
    """Figure 6 as bars (seconds per mode) beside the average lineage sizes (log scale)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [r.query.upper() for r in rows]
    positions = range(len(rows))
    figure, (times, sizes) = plt.subplots(1, 2, figsize=(11, 4))
    width = 0.27
    for offset, mode in enumerate(MODES):
        times.bar([p + (offset - 1) * width for p in positions], [r.seconds[mode] for r in rows], width, label=mode)
    times.set(xticks=list(positions), xticklabels=names, ylabel="seconds", title=f"Figure 6: time at SF {sf:g}")
    times.legend()
    for offset, (label, total) in enumerate((("tuple", "tuple_total"), ("granular", "granular_total"))):
        values = [r.average(getattr(r, total)) for r in rows]
        sizes.bar([p + (offset - 0.5) * width for p in positions], values, width, label=label)
    sizes.set(
        xticks=list(positions),
        xticklabels=names,
        ylabel="average lineage size",
        yscale="log",
        title="Table 8: lineage size",
    )
    sizes.legend()
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=120)
    plt.close(figure)


def add_parser(commands) -> None:
    """The ``table8`` subcommand of ``python -m tpch``."""
    parser = commands.add_parser("table8", help="the paper's Table 8 and Figure 6: LINEAGE ON against tuple lineage")
    parser.add_argument("--sf", type=float, default=1.0)
    parser.add_argument("--queries", default=",".join(TABLE8_QUERIES))
    parser.add_argument("--semantics", choices=("control", "data"), default="control")
    parser.add_argument("--repeat", type=int, default=3, help="timed rounds after the warm-up (median reported)")
    parser.add_argument("--out", type=Path, help="also write table8.md and table8.png here")
    parser.add_argument("--catalog", help="catalog directory (default data/catalog-tpch-sfSF)")


def main(args, catalog: Path, progress: Callable[[str], None]) -> int:
    """Measure, print the Markdown, and write it with the figure under ``--out``."""
    from dltrace import LineageSession
    from dltrace.datasets import register_tpch
    from tpch.queries import load

    session = LineageSession(catalog)
    progress(f"TPC-H SF {args.sf:g}: data and registration (cached after the first run)")
    register_tpch(session, args.sf, Path("data"), progress=progress)
    rows = [
        measure(session, name, load(name), args.semantics, args.repeat, progress) for name in args.queries.split(",")
    ]
    report = markdown(rows, args.sf, args.semantics, args.repeat)
    print(report)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "table8.md").write_text(report)
        draw(rows, args.out / "table8.png", args.sf)
        progress(f"wrote {args.out / 'table8.md'} and {args.out / 'table8.png'}")
    return 0
