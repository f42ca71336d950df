"""Timing queries under several modes, interleaved in one process, then the report and figures.

Nothing here knows about lineage: a *mode* turns a query into a callable that runs it to
completion, and the harness times those callables the way the paper's comparisons need:

* every mode of a query runs in the same session, modes alternating within each
  repetition (their order rotating from one repetition to the next), so that a burst
  of load from elsewhere hits all modes alike instead of one;
* a warm-up pass first (JIT, file cache, Spark's code generation), then the median of
  ``repeat`` timed runs;
* a mode that cannot run a query says why once ("cannot run: ...") and the rest go on;
  so does one that fails or runs past its time limit.

The report gives seconds, ratios against a reference mode (``original``), summaries per
figure panel, the targets, and one PNG per figure in the style of the paper's bar charts.
"""

from __future__ import annotations

import csv
import math
import os
import statistics
import sys
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

Runner = Callable[[], None]
REFERENCE = "original"


class CannotRun(Exception):
    """A mode has no way to run a query (an unsupported shape, a representation not built yet)."""


@dataclass(frozen=True)
class Mode:
    """One way of running a query: ``prepare(name, sql)`` gives a runner or raises CannotRun."""

    name: str
    prepare: Callable[[str, str], Runner]


@dataclass
class Measurement:
    """One run of one query in one mode; ``seconds`` is None when it did not complete."""

    query: str
    mode: str
    repetition: int  # 0 is the warm-up
    seconds: float | None
    note: str = ""  # why there is no time: "cannot run: ...", "failed: ...", "timed out ..."
    load: float = 0.0  # 1-minute load average when the run ended


@dataclass(frozen=True)
class Panel:
    """A group of queries summarized together and drawn as one bar chart."""

    title: str
    queries: list[str]


@dataclass(frozen=True)
class Figure:
    """A PNG of one or more panels, like the paper's Figures 4, 5 and 8."""

    filename: str
    title: str
    panels: list[Panel]


@dataclass
class Results:
    """All measurements of a run, with medians and ratios against the reference mode."""

    queries: list[str]
    modes: list[str]
    measurements: list[Measurement] = field(default_factory=list)

    def times(self, query: str, mode: str) -> list[float]:
        return [m.seconds for m in self.measurements
                if m.query == query and m.mode == mode and m.repetition > 0 and m.seconds is not None]

    def median(self, query: str, mode: str) -> float | None:
        times = self.times(query, mode)
        return statistics.median(times) if times else None

    def ratio(self, query: str, mode: str) -> float | None:
        """Median time of ``mode`` over the median time of the reference mode."""
        time_, reference = self.median(query, mode), self.median(query, REFERENCE)
        return time_ / reference if time_ is not None and reference else None

    def note(self, query: str, mode: str) -> str:
        return next((m.note for m in self.measurements if m.query == query and m.mode == mode and m.note), "")


@dataclass(frozen=True)
class Target:
    """A goal checked on the results: ``evaluate`` gives what was measured and whether it is met
    (None when there is nothing to judge)."""

    description: str
    evaluate: Callable[[Results], tuple[str, bool | None]]


def log(message: str) -> None:
    """One progress line on stderr, flushed at once so that a long run can be followed."""
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def cpu_seconds(spark) -> float | None:
    """CPU seconds used so far by this process and, with embedded Spark, its JVM (where the
    tasks run), from ``/proc``: a measure other work on the machine does not inflate the
    way it inflates wall time (None where the JVM is not local or not readable)."""
    own = os.times()
    try:
        pid = spark._jvm.java.lang.ProcessHandle.current().pid()
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, AttributeError):
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK") + own.user + own.system


def execute(frame) -> None:
    """Run a DataFrame to completion without bringing a row to the driver."""
    frame.write.format("noop").mode("overwrite").save()


def rotated(items: list[Mode], by: int) -> list[Mode]:
    """The modes starting at a different one in each repetition and for each next query, so
    that none always runs first: the first run of a query reads its data from disk (at SF 10
    without a warm-up pass, the mode that always went first paid for it in every query)."""
    by %= len(items)
    return items[by:] + items[:by]


def measure(
    queries: dict[str, str],
    modes: list[Mode],
    repeat: int,
    timeout: float | None = None,
    interrupt: Callable[[], None] | None = None,
    progress: Callable[[str], None] = log,
    warm_up: bool = True,
) -> Results:
    """Run every (query, mode) ``repeat`` times after a warm-up pass (unless ``warm_up`` is
    False: at SF 10 a run lasts minutes, and JIT warm-up is noise beside it), modes interleaved.

    ``interrupt`` stops whatever the current runner is doing (e.g. cancels Spark jobs); it is
    called, once a second, when a run exceeds ``timeout`` seconds, until the runner gives up.
    """
    results = Results(list(queries), [mode.name for mode in modes])
    runners: dict[tuple[str, str], Runner] = {}
    given_up: dict[tuple[str, str], str] = {}
    latest_reference: dict[str, tuple[int, float]] = {}  # (repetition, seconds), for progress lines
    for repetition in range(0 if warm_up else 1, repeat + 1):
        label = "warm-up" if repetition == 0 else f"rep {repetition}/{repeat}"
        for position, (query, sql) in enumerate(queries.items()):
            for mode in rotated(modes, repetition + position):
                key = (query, mode.name)
                if key in given_up:
                    continue
                try:
                    if key not in runners:
                        runners[key] = mode.prepare(query, sql)
                except CannotRun as reason:
                    given_up[key] = f"cannot run: {reason}"
                    results.measurements.append(Measurement(query, mode.name, repetition, None, given_up[key]))
                    progress(f"{label:>9}  {query:<4} {mode.name:<12} {given_up[key]}")
                    continue
                seconds, note = timed(runners[key], timeout, interrupt)
                measurement = Measurement(query, mode.name, repetition, seconds, note, round(os.getloadavg()[0], 2))
                results.measurements.append(measurement)
                if note:
                    given_up[key] = note
                    progress(f"{label:>9}  {query:<4} {mode.name:<12} {note}")
                    continue
                if mode.name == REFERENCE:
                    latest_reference[query] = (repetition, seconds)
                # against this repetition's reference, or a timed one before it (never a cold warm-up)
                reference_repetition, reference = latest_reference.get(query, (0, 0.0))
                comparable = reference and mode.name != REFERENCE and (reference_repetition > 0 or repetition == 0)
                ratio = f"  x{seconds / reference:.2f}" if comparable else ""
                progress(
                    f"{label:>9}  {query:<4} {mode.name:<12} {seconds:8.2f} s{ratio}  (load {measurement.load:.2f})"
                )
    return results


def timed(runner: Runner, timeout: float | None, interrupt: Callable[[], None] | None) -> tuple[float | None, str]:
    """Seconds the runner took, or None and why it did not finish."""
    finished = threading.Event()
    expired = threading.Event()

    def watchdog() -> None:
        if finished.wait(timeout):
            return
        expired.set()
        while not finished.is_set():
            interrupt()
            finished.wait(1.0)

    if timeout and interrupt:
        threading.Thread(target=watchdog, daemon=True).start()
    started = time.perf_counter()
    try:
        runner()
    except Exception as error:  # a failed run is a finding to report, not a reason to stop
        return None, f"timed out after {timeout:g} s" if expired.is_set() else f"failed: {one_line(error)}"
    finally:
        finished.set()
    return time.perf_counter() - started, ""


def one_line(error: Exception) -> str:
    """The first meaningful line of an error (Spark's carry pages of JVM stack); when that line
    only announces what follows (a Python worker's traceback), the traceback's last line too."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()] or [type(error).__name__]
    line = lines[0]
    if line.endswith(":") and len(lines) > 1:
        line = f"{line} {lines[-1]}"
    return line[:300]


# -- summaries ---------------------------------------------------------------------------


def ratio_target(description: str, mode: str, queries: list[str], statistic: str, limit: float) -> Target:
    """``statistic`` ("median" or "max") of ``mode``'s ratios over ``queries`` at most ``limit``."""

    def evaluate(results: Results) -> tuple[str, bool | None]:
        ratios = {q: results.ratio(q, mode) for q in queries if q in results.queries}
        measured = {q: r for q, r in ratios.items() if r is not None}
        if not measured:
            return f"{mode} did not run", None
        coverage = "" if len(measured) == len(ratios) else f" (on {len(measured)} of {len(ratios)} queries)"
        if statistic == "median":
            value = statistics.median(measured.values())
            return f"median {value:.3f}x{coverage}", value <= limit and not coverage
        worst = max(measured, key=measured.get)
        over = [q for q, r in measured.items() if r > limit]
        text = f"worst {worst} {measured[worst]:.2f}x" + (f"; over {limit:g}x: {', '.join(over)}" if over else "")
        return text + coverage, not over and not coverage

    return Target(description, evaluate)


def versus_target(description: str, mode: str, other: str, query: str, limit: float) -> Target:
    """``mode``'s median time on ``query`` at most ``limit`` times ``other``'s."""

    def evaluate(results: Results) -> tuple[str, bool | None]:
        time_, reference = results.median(query, mode), results.median(query, other)
        if time_ is None or not reference:
            return f"{query} did not run in both {mode} and {other}", None
        return f"{query}: {time_ / reference:.2f}x", time_ / reference <= limit

    return Target(description, evaluate)


def faster_target(description: str, fast: list[str], slow: str, queries: list[str]) -> Target:
    """The best of the ``fast`` modes takes less time than ``slow`` on every query where both ran."""

    def evaluate(results: Results) -> tuple[str, bool | None]:
        compared, losses = 0, []
        for query in queries:
            slow_time = results.median(query, slow)
            fast_times = [t for t in (results.median(query, mode) for mode in fast) if t is not None]
            if slow_time is None or not fast_times:
                continue
            compared += 1
            if min(fast_times) >= slow_time:
                losses.append(query)
        if not compared:
            return f"no query ran in both {slow} and {'/'.join(fast)}", None
        text = f"{compared - len(losses)} of {compared} queries" + (f"; not on {', '.join(losses)}" if losses else "")
        return text, not losses

    return Target(description, evaluate)


def best_of_target(description: str, mode: str, candidates: list[str], queries: list[str], limit: float) -> Target:
    """``mode``'s total time over ``queries`` at most ``limit`` times the total of the best
    candidate per query (only queries where all of them ran); the worst query is named."""

    def evaluate(results: Results) -> tuple[str, bool | None]:
        totals, best, worst = 0.0, 0.0, (None, 0.0)
        for query in queries:
            time_ = results.median(query, mode)
            others = [results.median(query, c) for c in candidates]
            if time_ is None or any(t is None for t in others):
                continue
            totals, best = totals + time_, best + min(others)
            if time_ / min(others) > worst[1]:
                worst = (query, time_ / min(others))
        if not best:
            return f"{mode} and {'/'.join(candidates)} did not all run", None
        return (
            f"total {totals / best:.3f}x the best per query; worst {worst[0]} {worst[1]:.2f}x",
            totals / best <= limit,
        )

    return Target(description, evaluate)


def geometric_mean(values: Iterable[float]) -> float:
    values = list(values)
    return math.exp(sum(math.log(v) for v in values) / len(values))


# -- the report --------------------------------------------------------------------------


def seconds_cell(results: Results, query: str, mode: str) -> str:
    median = results.median(query, mode)
    if median is not None:
        return f"{median:.2f}"
    note = results.note(query, mode)
    return note.split(":")[0] if note else ""


def ratio_cell(results: Results, query: str, mode: str) -> str:
    ratio = results.ratio(query, mode)
    return f"{ratio:.2f}" if ratio is not None else ""


def table(header: list[str], rows: list[list[str]], numeric_from: int = 1) -> list[str]:
    """A markdown table, numbers right-aligned."""
    align = ["---" if i < numeric_from else "---:" for i in range(len(header))]
    return ["| " + " | ".join(header) + " |", "| " + " | ".join(align) + " |",
            *("| " + " | ".join(row) + " |" for row in rows)]


def panel_summary(results: Results, panel: Panel) -> list[str]:
    """Per mode over the panel's queries: how many ran, median, geometric mean, mean overhead, worst."""
    queries = [q for q in panel.queries if q in results.queries]
    rows = []
    for mode in results.modes:
        if mode == REFERENCE:
            continue
        ratios = {q: results.ratio(q, mode) for q in queries}
        measured = {q: r for q, r in ratios.items() if r is not None}
        if not measured:
            rows.append([mode, f"0 of {len(queries)}", "", "", "", ""])
            continue
        worst = max(measured, key=measured.get)
        rows.append([
            mode,
            f"{len(measured)} of {len(queries)}",
            f"{statistics.median(measured.values()):.3f}",
            f"{geometric_mean(measured.values()):.3f}",
            f"{100 * (statistics.mean(measured.values()) - 1):+.1f}%",
            f"{worst} {measured[worst]:.2f}x",
        ])
    header = ["mode", "queries run", "median ratio", "geometric mean", "mean overhead (paper's average)", "worst"]
    return table(header, rows)


def worst_queries(results: Results, mode: str, queries: list[str], count: int = 5) -> list[tuple[str, float]]:
    ratios = [(q, results.ratio(q, mode)) for q in queries]
    return sorted(((q, r) for q, r in ratios if r is not None), key=lambda item: -item[1])[:count]


def write_report(
    out: Path,
    results: Results,
    title: str,
    context: list[str],
    mode_descriptions: dict[str, str],
    figures: list[Figure],
    targets: list[Target],
) -> Path:
    """``out/report.md``, ``out/measurements.csv`` and one PNG per figure; returns the report's path."""
    out.mkdir(parents=True, exist_ok=True)
    write_measurements(out / "measurements.csv", results)
    drawn = [figure for figure in figures if draw(out / figure.filename, results, figure)]
    lines = [f"# {title}", "", *context, ""]
    lines += ["## Modes", ""]
    lines += [f"* `{mode}`: {mode_descriptions[mode]}" for mode in results.modes]
    lines += ["", "Times are medians of the timed repetitions (the warm-up pass is not counted); "
              "a ratio is a mode's median over `original`'s median for the same query.", ""]
    if targets:
        lines += ["## Targets", ""]
        rows = []
        for target in targets:
            measured, met = target.evaluate(results)
            rows.append([target.description, measured, {True: "met", False: "**missed**", None: "n/a"}[met]])
        lines += table(["target", "measured", "verdict"], rows, numeric_from=3) + [""]
    lines += ["## Summary per figure panel", ""]
    for figure in figures:
        for panel in figure.panels:
            if any(q in results.queries for q in panel.queries):
                lines += [f"### {panel.title}", "", *panel_summary(results, panel), ""]
    lines += ["## Worst queries", ""]
    for mode in results.modes:
        if mode != REFERENCE:
            worst = worst_queries(results, mode, results.queries)
            if worst:
                lines.append(f"* `{mode}`: " + ", ".join(f"{q} {r:.2f}x" for q, r in worst))
    lines += ["", "## Seconds per query (median)", ""]
    lines += table(["query", *results.modes],
                   [[q, *(seconds_cell(results, q, m) for m in results.modes)] for q in results.queries]) + [""]
    ratio_modes = [m for m in results.modes if m != REFERENCE]
    lines += ["## Time ratio vs. original per query", ""]
    lines += table(["query", *(f"{m} / original" for m in ratio_modes)],
                   [[q, *(ratio_cell(results, q, m) for m in ratio_modes)] for q in results.queries]) + [""]
    notes = sorted({(m.query, m.mode, m.note) for m in results.measurements if m.note},
                   key=lambda n: (results.queries.index(n[0]), results.modes.index(n[1])))
    if notes:
        lines += ["## Runs without a time", ""] + [f"* {q} `{mode}`: {note}" for q, mode, note in notes] + [""]
    if drawn:
        lines += ["## Figures", "", "Bars: median time of each mode over `original`'s (1.0 = no overhead, "
                  "dashed); a cross marks a mode that could not run the query.", ""]
        lines += [f"![{figure.title}]({figure.filename})" for figure in drawn] + [""]
    path = out / "report.md"
    path.write_text("\n".join(lines))
    return path


def write_measurements(path: Path, results: Results) -> None:
    """Every run, warm-up included, for anyone who wants more than medians."""
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["query", "mode", "repetition", "seconds", "note", "load1"])
        for m in results.measurements:
            writer.writerow(
                [m.query, m.mode, m.repetition, "" if m.seconds is None else f"{m.seconds:.4f}", m.note, m.load]
            )


def draw(path: Path, results: Results, figure: Figure) -> bool:
    """Grouped bars of time ratio vs. original, one group per query, one bar per mode.

    A log scale is used once some ratio passes 10x, so that 1.02x and 30x both stay readable.
    Returns False when there is nothing to draw (no query of the figure, no mode but the reference).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    panels = [(p.title, [q for q in p.queries if q in results.queries]) for p in figure.panels]
    panels = [(title, queries) for title, queries in panels if queries]
    modes = [m for m in results.modes if m != REFERENCE]
    if not panels or not modes:
        return False
    colors = {mode: plt.get_cmap("tab10").colors[i % 10] for i, mode in enumerate(modes)}
    widths = [max(2.5, len(queries) * max(0.45, 0.2 * len(modes)) + 1.0) for _, queries in panels]  # inches
    fig, axes = plt.subplots(1, len(panels), figsize=(max(6.0, sum(widths)), 4.2), squeeze=False,
                             gridspec_kw={"width_ratios": widths})
    for axis, (title, queries) in zip(axes[0], panels):
        bar = 0.8 / len(modes)
        ratios = [results.ratio(q, m) for q in queries for m in modes]
        logarithmic = max((r for r in ratios if r is not None), default=1.0) > 10
        for index, mode in enumerate(modes):
            xs = [q_index + (index - (len(modes) - 1) / 2) * bar for q_index in range(len(queries))]
            values = [results.ratio(q, mode) for q in queries]
            axis.bar([x for x, v in zip(xs, values) if v is not None], [v for v in values if v is not None],
                     width=bar, color=colors[mode])
            missing = [x for x, v in zip(xs, values) if v is None]
            axis.scatter(missing, [1.0] * len(missing), marker="x", color=colors[mode], zorder=3)
        axis.axhline(1.0, color="black", linestyle="--", linewidth=0.8)
        axis.set_xticks(range(len(queries)), [q.upper() for q in queries])
        axis.set_title(title, fontsize=10)
        axis.set_ylabel("time ratio vs. original")
        if logarithmic:
            axis.set_yscale("log")
        axis.grid(axis="y", alpha=0.3)
    handles = [Patch(color=colors[mode], label=mode) for mode in modes]
    fig.legend(handles=handles, loc="lower center", ncol=len(modes), fontsize=8, bbox_to_anchor=(0.5, -0.02))
    fig.suptitle(figure.title, fontsize=11)
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)
    return True
