"""``dltrace run --profile``: where a traced job's time goes, step by step.

A step (a write of the job: ``saveAsTable``, a path, a run added to a table) is timed from
the moment its save starts to the moment it is recorded, in phases:

* ``plain``: the step's DataFrame computed plainly (written to Spark's ``noop`` sink), what
  the step costs under ``spark-submit``; measured only under ``--profile``, before the save,
  and counted apart from the step's own time;
* ``plan``: the query rewritten and planned (``steps.save`` before the rows are computed);
* ``sets``: the lineage rows share, and the sets of window partitions and frames, computed
  apart from the rows (``session.shared_lineage``, ``steps.held_apart_sets``);
* ``save``: the rows and their lineage computed and stored (``ResultStore.save``);
* ``write``: the saved rows written where the job writes them;
* ``other``: the rest (catalog records, listing the files written, partitions named).

Each phase also counts the Spark jobs it ran (when Spark runs in this process), and each
step the ids and bytes of its stored lineage.  The reads (sources registered or read back)
are timed as their own lines.  Phases are recorded into the profile of the ``with
profiling(...)`` block around them, so code that is not profiled pays a context lookup.
"""

from __future__ import annotations

import contextvars
import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field

PHASES = ("plan", "sets", "save", "write", "other")
_current: contextvars.ContextVar[Profile | None] = contextvars.ContextVar("dltrace_profile", default=None)


@dataclass
class Entry:
    """One line of the profile: a step (``kind`` "step") or a read ("read")."""

    kind: str
    name: str
    line: int
    seconds: dict[str, float] = field(default_factory=dict)  # phase -> seconds
    jobs: dict[str, int] = field(default_factory=dict)  # phase -> Spark jobs run
    rows: int | None = None
    plain_seconds: float | None = None
    lineage_ids: int | None = None
    lineage_bytes: int | None = None
    total: float = 0.0


class Profile:
    """The entries of one run, and the clock of the entry open now."""

    def __init__(self) -> None:
        self.counts_jobs = True  # False once Spark is found not to run in this process
        self.entries: list[Entry] = []
        self.started = time.perf_counter()
        self.total = 0.0
        self._open: Entry | None = None
        self._opened_at = 0.0
        self._in_phases = 0.0
        self._depth = 0  # phases open now: a phase inside another counts in the outer one only

    def jobs_so_far(self) -> int | None:
        """How many Spark jobs this process's SparkContext has started (the next job's id)."""
        from pyspark import SparkContext

        context = SparkContext._active_spark_context  # None on a warm server (another process)
        if not self.counts_jobs or context is None:
            return None
        try:
            next_id = context._jsc.sc().dagScheduler().nextJobId()  # an AtomicInteger, read as an int by Py4J
            return int(next_id if isinstance(next_id, int) else next_id.get())
        except Exception:  # noqa: BLE001 - a Spark without that field: no counts
            self.counts_jobs = False
            return None

    def begin(self, kind: str, name: str, line: int) -> Entry:
        """Open an entry (closing one left open: a step that failed before it was recorded)."""
        if self._open is not None:
            self.end()
        self._open, self._opened_at, self._in_phases = Entry(kind, name, line), time.perf_counter(), 0.0
        self.entries.append(self._open)
        return self._open

    def end(self, rows: int | None = None) -> Entry | None:
        """Close the open entry: its ``other`` phase is the time no phase took."""
        entry, self._open = self._open, None
        if entry is None:
            return None
        entry.total = time.perf_counter() - self._opened_at - (entry.plain_seconds or 0.0)
        entry.seconds["other"] = max(0.0, entry.total - self._in_phases)
        if rows is not None:
            entry.rows = rows
        return entry

    @contextmanager
    def phase(self, name: str, apart: bool = False) -> Iterator[None]:
        """Time the block as phase ``name`` of the open entry (nested phases count once, in
        the outer one); ``apart``: measured for the profile, not part of the step's time."""
        entry = self._open
        if entry is None or self._depth:
            yield
            return
        self._depth = 1
        jobs, started = self.jobs_so_far(), time.perf_counter()
        try:
            yield
        finally:
            self._depth = 0
            seconds = time.perf_counter() - started
            if apart:
                entry.plain_seconds = (entry.plain_seconds or 0.0) + seconds
            else:
                entry.seconds[name] = entry.seconds.get(name, 0.0) + seconds
                self._in_phases += seconds
            if jobs is not None and (after := self.jobs_so_far()) is not None:
                key = "plain" if apart else name
                entry.jobs[key] = entry.jobs.get(key, 0) + after - jobs

    def finish(self) -> None:
        self.end()
        self.total = time.perf_counter() - self.started

    def as_json(self) -> dict:
        return {"seconds": self.total, "entries": [asdict(entry) for entry in self.entries]}

    def table(self, title: str) -> str:
        """The profile as a text table, a line per entry and one of totals."""
        header = ["line", "what", "rows", "plain s", *[f"{p} s" for p in PHASES], "total s", "x plain", "jobs",
                  "lineage ids", "lineage MB"]
        lines = [header]
        for entry in self.entries:
            jobs = sum(entry.jobs.get(p, 0) for p in PHASES) if entry.jobs else None
            lines.append([str(entry.line), f"{entry.kind} {entry.name}", number(entry.rows),
                          seconds(entry.plain_seconds), *[seconds(entry.seconds.get(p)) for p in PHASES],
                          seconds(entry.total),
                          f"{entry.total / entry.plain_seconds:.2f}x" if entry.plain_seconds else "",
                          number(jobs), number(entry.lineage_ids),
                          "" if entry.lineage_bytes is None else f"{entry.lineage_bytes / 1e6:.2f}"])
        profiled = sum(entry.total for entry in self.entries)
        lines.append(["", "the script's own work", "", "", *[""] * len(PHASES),
                      seconds(max(0.0, self.total - profiled - self.plain_seconds())), "", "", "", ""])
        widths = [max(len(row[i]) for row in lines) for i in range(len(header))]
        text = [f"{title}: {self.total:.1f} s in all ({self.plain_seconds():.1f} s of it computing steps plainly "
                f"for the profile)"]
        text += ["  ".join(cell.rjust(width) if i != 1 else cell.ljust(width)
                           for i, (cell, width) in enumerate(zip(row, widths))) for row in lines]
        return "\n".join(text)

    def plain_seconds(self) -> float:
        return sum(entry.plain_seconds or 0.0 for entry in self.entries)


def seconds(value: float | None) -> str:
    return "" if value is None else f"{value:.2f}"


def number(value: int | None) -> str:
    return "" if value is None else f"{value:,}"


@contextmanager
def profiling(profile: Profile | None) -> Iterator[Profile | None]:
    """Record the phases run inside the block into ``profile`` (None: record nothing)."""
    token = _current.set(profile)
    try:
        yield profile
    finally:
        _current.reset(token)


def current() -> Profile | None:
    return _current.get()


@contextmanager
def entry(kind: str, name: str, line: int) -> Iterator[None]:
    """The block timed as an entry of the profile being recorded, if any (a read)."""
    profile = _current.get()
    if profile is None:
        yield
        return
    profile.begin(kind, name, line)
    try:
        yield
    finally:
        profile.end()


@contextmanager
def phase(name: str) -> Iterator[None]:
    """Phase ``name`` of the step being profiled, if any (module docstring)."""
    profile = _current.get()
    if profile is None:
        yield
        return
    with profile.phase(name):
        yield


def write_json(profile: Profile, path: str) -> None:
    with open(path, "w", encoding="utf-8") as out:
        json.dump(profile.as_json(), out, indent=1)


def stored_lineage(lineage, name: str) -> tuple[int | None, int]:
    """Saved result ``name``'s lineage as stored: the ids in its DLs and shared sets (None for
    BDDs, whose ids are not counted) and the bytes of its directory."""
    from dltrace.results import DL, directory_bytes

    result = lineage.store.get(name)
    data = lineage.store.path(result.data)
    size = directory_bytes(data.parent)
    if result.representation != "set":
        return None, size
    own = lineage.spark.read.parquet(str(data)).selectExpr(f"coalesce(sum(size({DL})), 0)").first()[0]
    return int(own) + result.shared_ids, size
