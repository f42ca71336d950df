"""Microbenchmark of the lineage-set implementations: when do roBDDs pay off?

Run ``python -m tpch.bddsets_bench [--sizes 1e3,1e4,1e5,1e6,1e7] [--out DIR]``.
For clustered, random and range-shaped id sets of each size it measures, per
implementation: building from ids, the union of two overlapping sets of that
size, membership of 1000 probe ids, and bytes per id of the encoding. With
``--out`` it writes ``DIR/bddsets.md`` (a Markdown table) and ``DIR/bddsets.png``.
It ends with the DLUNION workload of Spark: groups of 1000 sets of 1-5 ids.

Implementations:

* ``sorted``: :class:`SortedIdSet` objects (numpy arrays, the paper's "set").
* ``bdd``: :class:`BddSet` objects in CUDD; build includes loading the BDD into
  CUDD, union is CUDD's apply on two loaded BDDs.
* ``set-bytes`` / ``bdd-bytes`` / ``compact-bytes``: the byte-level helpers the Spark
  UDFs call (:func:`bytes_from_ids`, :func:`union_bytes`, :func:`contains_any_bytes`),
  from ids or bytes to bytes; membership is one "any of 1000 probes" call.
  ``compact`` is what the UDFs write: sorted, or the roBDD where smaller.
* ``pyeda``: :class:`PyedaBddSet`, only while it stays fast enough.

A case is skipped, and says so, when the previous size of the same shape
suggests it would take more than the time budget (slow cases grow about
linearly with the size).

Shapes (ids of one table, ``(7 << 48) + 12345`` onward): *clustered* runs of
consecutive ids with geometric lengths and gaps of mean 50 (chronological ids
of rows a query selects); *random* ids, each present with probability 1/16;
*range* one run of consecutive ids; *periodic* every id but each third (TPC-H Q13's
customers with orders: where a roBDD is far smaller than any id list). The second set of a union is the same shape
shifted by half its span (random: an independent draw over the same span).

>>> rows = run([1000], shapes=["range"], implementations=["sorted"], report=lambda line: None)
>>> rows[0].shape, rows[0].size, rows[0].implementation, rows[0].bytes_per_id < 0.1
('range', 1000, 'sorted', True)
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from dltrace.bddsets.bdd import BddSet, bdd_backend
from dltrace.bddsets.bulk import bytes_from_ids, contains_any_bytes, union_by_row, union_bytes
from dltrace.bddsets.encoding import decode_batch
from dltrace.bddsets.sorted_set import SortedIdSet

BASE_ID = (7 << 48) + 12_345
MEAN_RUN = 50
RANDOM_DENSITY = 1 / 16
PROBES = 1000
SHAPES = ("clustered", "random", "range", "periodic")
IMPLEMENTATIONS = ("sorted", "bdd", "set-bytes", "bdd-bytes", "compact-bytes", "pyeda")
DEFAULT_SIZES = (1_000, 10_000, 100_000, 1_000_000, 10_000_000)


@dataclass(frozen=True)
class Result:
    """One benchmark case; timings in seconds, None when skipped."""

    shape: str
    size: int
    implementation: str
    build: float | None = None
    union: float | None = None
    membership: float | None = None
    bytes_per_id: float | None = None
    nodes: int | None = None
    note: str = ""


def make_ids(shape: str, size: int, seed: int) -> np.ndarray:
    """Sorted unique int64 ids of the given shape (see module doc)."""
    rng = np.random.default_rng(seed)
    if shape == "range":
        return np.arange(BASE_ID, BASE_ID + size, dtype=np.int64)
    if shape == "random":
        return BASE_ID + np.cumsum(rng.geometric(RANDOM_DENSITY, size)).astype(np.int64)
    if shape == "periodic":
        return BASE_ID + (np.arange(size, dtype=np.int64) * 3 + 1) // 2
    runs = size // MEAN_RUN + 16
    lengths = rng.geometric(1 / MEAN_RUN, runs)
    while lengths.sum() < size:
        lengths = np.concatenate((lengths, rng.geometric(1 / MEAN_RUN, runs)))
    gaps = rng.geometric(1 / MEAN_RUN, lengths.size)
    starts = BASE_ID + np.cumsum(lengths + gaps) - lengths
    first = np.cumsum(lengths) - lengths
    ids = np.repeat(starts - first, lengths) + np.arange(int(lengths.sum()))
    return ids[:size].astype(np.int64)


def overlapping_ids(shape: str, ids: np.ndarray, seed: int) -> np.ndarray:
    """A set of the same shape and size that overlaps `ids` (see module doc)."""
    if shape == "random":
        return make_ids(shape, ids.size, seed + 1)
    return ids + (int(ids[-1] - ids[0]) // 2 + 1)


def probe_ids(ids: np.ndarray, seed: int) -> np.ndarray:
    """Half members, half arbitrary ids over the set's span."""
    rng = np.random.default_rng(seed)
    members = rng.choice(ids, PROBES // 2)
    anywhere = rng.integers(int(ids[0]), int(ids[-1]) + 1, PROBES - PROBES // 2)
    return np.concatenate((members, anywhere)).astype(np.int64)


def timed(operation: Callable[[], Any], min_total: float = 0.05, max_repeats: int = 20) -> tuple[float, Any]:
    """Best wall time of `operation`, repeated while it is too quick to time once."""
    start = time.perf_counter()
    result = operation()
    best = time.perf_counter() - start
    repeats = min(max_repeats, int(min_total / best) if best > 0 else max_repeats)
    for _ in range(repeats):
        start = time.perf_counter()
        operation()
        best = min(best, time.perf_counter() - start)
    return best, result


def _measure_objects(cls: Any, ids: np.ndarray, other: np.ndarray, probes: np.ndarray) -> dict[str, Any]:
    def build(members: np.ndarray) -> Any:
        lineage = cls.from_ids(members)
        if isinstance(lineage, BddSet):
            lineage.function  # noqa: B018  (loading into CUDD is part of building)
        return lineage

    build_time, lineage = timed(lambda: build(ids))
    second = build(other)
    # CUDD's computed table would answer a repeated apply from cache: time it once.
    union_repeats = 0 if cls is BddSet else 20
    union_time, _ = timed(lambda: lineage | second, max_repeats=union_repeats)
    membership_time, _ = timed(lambda: lineage.contains_many(probes))
    nodes = lineage.node_count if isinstance(lineage, BddSet) else None
    return dict(build=build_time, union=union_time, membership=membership_time, nbytes=lineage.nbytes, nodes=nodes)


def _measure_bytes(kind: str, ids: np.ndarray, other: np.ndarray, probes: np.ndarray) -> dict[str, Any]:
    build_time, encoded = timed(lambda: bytes_from_ids(ids, kind))
    second = bytes_from_ids(other, kind)
    union_time, _ = timed(lambda: union_bytes([encoded, second], kind))
    membership_time, _ = timed(lambda: contains_any_bytes(encoded, probes))
    return dict(build=build_time, union=union_time, membership=membership_time, nbytes=len(encoded), nodes=None)


def measure(implementation: str, ids: np.ndarray, other: np.ndarray, probes: np.ndarray) -> dict[str, Any]:
    """Timings and encoded size of one implementation on one pair of sets."""
    if implementation.endswith("-bytes"):
        return _measure_bytes(implementation.removesuffix("-bytes"), ids, other, probes)
    if implementation == "pyeda":  # the tests' independent implementation: run from the repository
        from tests.pyeda_set import PyedaBddSet

        return _measure_objects(PyedaBddSet, ids, other, probes)
    classes = {"sorted": SortedIdSet, "bdd": BddSet}
    return _measure_objects(classes[implementation], ids, other, probes)


def run(
    sizes: Sequence[int],
    shapes: Sequence[str] = SHAPES,
    implementations: Sequence[str] = IMPLEMENTATIONS,
    budget: float = 20.0,
    report: Callable[[str], None] = lambda line: print(line, flush=True),
) -> list[Result]:
    """All cases, smallest size first; one report line per case as it finishes."""
    results: list[Result] = []
    for shape in shapes:
        last_cost: dict[str, tuple[int, float]] = {}
        for size in sorted(sizes):
            ids = make_ids(shape, size, seed=size)
            other = overlapping_ids(shape, ids, seed=size)
            probes = probe_ids(ids, seed=size)
            for implementation in implementations:
                if implementation in last_cost:
                    previous_size, previous_cost = last_cost[implementation]
                    if previous_cost * size / previous_size > budget:
                        results.append(Result(shape, size, implementation, note="skipped (too slow)"))
                        report(f"{shape:9s} n={size:<9,d} {implementation:9s} skipped (too slow)")
                        continue
                started = time.perf_counter()
                numbers = measure(implementation, ids, other, probes)
                last_cost[implementation] = (size, time.perf_counter() - started)
                result = Result(
                    shape,
                    size,
                    implementation,
                    build=numbers["build"],
                    union=numbers["union"],
                    membership=numbers["membership"],
                    bytes_per_id=numbers["nbytes"] / size,
                    nodes=numbers["nodes"],
                )
                results.append(result)
                report(_line(result))
    return results


def small_sets_union(groups: int = 20, per_group: int = 1000, seed: int = 0) -> list[tuple[str, float]]:
    """Microseconds per input set for the DLUNION of many 1-5 id sets per group.

    The aggregate Spark runs most: e.g. 6M base rows grouped into thousands of
    groups. Inputs arrive as encodings, so byte-level unions include decoding.
    """
    rng = np.random.default_rng(seed)
    id_groups = [
        [BASE_ID + start + np.arange(length)
         for start, length in zip(rng.integers(0, 6_000_000, per_group), rng.integers(1, 6, per_group))]
        for _ in range(groups)
    ]
    timings = []
    for kind in ("set", "bdd", "compact"):
        encoded = [[bytes_from_ids(ids, kind) for ids in group] for group in id_groups]
        elapsed, _ = timed(lambda: [union_bytes(group, kind) for group in encoded], max_repeats=2)
        timings.append((f"union_bytes(..., {kind!r})", elapsed / (groups * per_group) * 1e6))
    # what the Spark UDF does with a batch: every group's union in the same numpy passes
    flat = [data for group in encoded for data in group]
    decoded = decode_batch(flat)
    set_row = np.repeat(np.arange(groups), per_group)
    no_ids = np.empty(0, dtype=np.int64)
    elapsed, _ = timed(lambda: union_by_row(groups, decoded, set_row, no_ids, no_ids), max_repeats=2)
    timings.append(("union_by_row (one batch, 'compact')", elapsed / (groups * per_group) * 1e6))
    for cls in (SortedIdSet, BddSet):  # in-memory objects, BDDs already loaded into CUDD
        objects = [[cls.from_ids(ids) for ids in group] for group in id_groups[:5]]
        for lineage in (s for group in objects for s in group if isinstance(s, BddSet)):
            lineage.function  # noqa: B018
        elapsed, _ = timed(lambda: [cls.union_all(group) for group in objects], max_repeats=0)
        timings.append((f"{cls.__name__}.union_all", elapsed / (5 * per_group) * 1e6))
    return timings


def _seconds(value: float | None) -> str:
    if value is None:
        return "–"
    if value < 1e-3:
        return f"{value * 1e6:.0f} µs"
    if value < 1:
        return f"{value * 1e3:.1f} ms"
    return f"{value:.2f} s"


def _line(result: Result) -> str:
    nodes = f", {result.nodes:,} nodes" if result.nodes is not None else ""
    return (
        f"{result.shape:9s} n={result.size:<9,d} {result.implementation:9s} "
        f"build {_seconds(result.build):>9s}  union {_seconds(result.union):>9s}  "
        f"member {_seconds(result.membership):>9s}  {result.bytes_per_id:8.3g} B/id{nodes}"
    )


def markdown_table(results: Sequence[Result], small_sets: Sequence[tuple[str, float]] = ()) -> str:
    """The results as Markdown tables."""
    lines = [
        f"| shape | ids | implementation | build | union of two | {PROBES} probes | bytes/id | BDD nodes |",
        "|---|---:|---|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        if r.note:
            lines.append(f"| {r.shape} | {r.size:,} | {r.implementation} | {r.note} | | | | |")
            continue
        nodes = f"{r.nodes:,}" if r.nodes is not None else ""
        lines.append(
            f"| {r.shape} | {r.size:,} | {r.implementation} | {_seconds(r.build)} | {_seconds(r.union)} "
            f"| {_seconds(r.membership)} | {r.bytes_per_id:.3g} | {nodes} |"
        )
    if small_sets:
        lines += [
            "",
            "Union of groups of 1000 sets of 1-5 ids each:",
            "",
            "| operation | µs per input set |",
            "|---|---:|",
        ]
        lines += [f"| {name} | {micros:.2f} |" for name, micros in small_sets]
    return "\n".join(lines) + "\n"


def plot(results: Sequence[Result], path: Path) -> None:
    """Log-log panels: one row per shape, one column per measure."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    measures = (("build", "build (s)"), ("union", "union of two (s)"), ("bytes_per_id", "bytes per id"))
    shapes = sorted({r.shape for r in results}, key=SHAPES.index)
    figure, axes = plt.subplots(len(shapes), len(measures), figsize=(13, 3.4 * len(shapes)), squeeze=False)
    for row, shape in enumerate(shapes):
        for column, (field, label) in enumerate(measures):
            axis = axes[row][column]
            for implementation in IMPLEMENTATIONS:
                points = [
                    (r.size, getattr(r, field))
                    for r in results
                    if r.shape == shape and r.implementation == implementation and not r.note
                ]
                if points:
                    axis.plot(*zip(*points), marker="o", label=implementation)
            axis.set_xscale("log")
            axis.set_yscale("log")
            axis.set_title(f"{shape}: {label}", fontsize=10)
            axis.set_xlabel("ids per set")
            axis.grid(True, which="major", alpha=0.3)
    axes[0][0].legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def _sizes(text: str) -> list[int]:
    return [int(float(part)) for part in text.split(",") if part.strip()]


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m tpch.bddsets_bench", description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=_sizes, default=list(DEFAULT_SIZES), help="comma list, e.g. 1e3,1e5")
    parser.add_argument("--out", type=Path, help="directory for bddsets.md and bddsets.png")
    parser.add_argument("--budget", type=float, default=20.0, help="skip cases predicted to take longer (s)")
    parser.add_argument("--shapes", default=",".join(SHAPES), help="comma list of " + ", ".join(SHAPES))
    parser.add_argument("--implementations", default=",".join(IMPLEMENTATIONS), help="comma list")
    options = parser.parse_args(argv)
    shapes = [s for s in options.shapes.split(",") if s]
    implementations = [i for i in options.implementations.split(",") if i]
    unknown = sorted(set(shapes) - set(SHAPES)) + sorted(set(implementations) - set(IMPLEMENTATIONS))
    if unknown:
        parser.error(f"unknown shape or implementation: {', '.join(unknown)}")
    print(f"dd backend: {bdd_backend()}; {PROBES} probes; times are the best of repeated runs", flush=True)
    started = time.perf_counter()
    results = run(options.sizes, shapes, implementations, options.budget)
    small_sets = small_sets_union()
    for name, micros in small_sets:
        print(f"many small sets: {name:28s} {micros:7.2f} µs per input set", flush=True)
    print(f"total {time.perf_counter() - started:.0f} s", flush=True)
    if options.out:
        options.out.mkdir(parents=True, exist_ok=True)
        (options.out / "bddsets.md").write_text(markdown_table(results, small_sets))
        plot(results, options.out / "bddsets.png")
        print(f"wrote {options.out / 'bddsets.md'} and {options.out / 'bddsets.png'}", flush=True)


if __name__ == "__main__":
    main()
