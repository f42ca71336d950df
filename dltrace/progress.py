"""Spark's progress on stderr while a command runs, when stderr is a terminal.

One line, rewritten in place, names the running stages and their tasks done of all (as
Spark's own console progress bar does); when the command ends the line is cleared and one
line says how many Spark jobs ran and how long the command took.  Embedded Spark is polled
through its status tracker; a Spark Connect session reports through its progress handler.
``--quiet`` shows nothing; ``--verbose`` also shows Spark's warnings (embedded Spark: the
lines its JVM logs at WARN and above, which otherwise only go to the JVM's log file).  When
stderr is not a terminal nothing is added.
"""

from __future__ import annotations

import re
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO

POLL_SECONDS = 0.2
# a line Spark logs (dltrace/log4j2.properties: "%d{HH:mm:ss} %p %c{1}: %m")
LOG_LINE = re.compile(r"^\d\d:\d\d:\d\d (WARN|ERROR|FATAL) ")


class ProgressLine:
    """A line on a terminal, written over in place.

    >>> import io
    >>> out = io.StringIO()
    >>> line = ProgressLine(out)
    >>> line.show([(3, 40, 200), (4, 0, 8)])
    >>> line.clear()
    >>> out.getvalue()
    '\\r[Stage 3: 40/200] [Stage 4: 0/8]\\r                                \\r'
    """

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.width = 0

    def show(self, stages: list[tuple[int, int, int]]) -> None:
        """``stages``: (stage id, tasks done, tasks) of each running stage."""
        text = " ".join(f"[Stage {stage}: {done}/{total}]" for stage, done, total in stages)
        self.stream.write("\r" + text.ljust(self.width))
        self.width = max(self.width, len(text))
        self.stream.flush()

    def clear(self) -> None:
        if self.width:
            self.stream.write("\r" + " " * self.width + "\r")
            self.stream.flush()
        self.width = 0


class SparkProgress:
    """Polls embedded Spark (and hooks a Connect session) from a thread of its own while the
    ``with`` block runs; the session need not exist yet when it begins (Spark starts lazily)."""

    def __init__(self, stream: TextIO, verbose: bool = False) -> None:
        self.line = ProgressLine(stream)
        self.stream = stream
        self.verbose = verbose
        self.lock = threading.Lock()
        self.stopped = threading.Event()
        self.jobs: set[int] = set()
        self.connect_operations: set[str] = set()
        self.hooked = None
        self.log_offset = 0
        if verbose:
            from dltrace.spark import jvm_log_path, log_spark_warnings

            path = jvm_log_path()
            self.log_offset = path.stat().st_size if path.exists() else 0  # what the command's JVM writes next
            log_spark_warnings()

    def __call__(self, stages, inflight_tasks: int, operation_id: str | None, done: bool) -> None:
        """Spark Connect's progress handler (``registerProgressHandler``)."""
        if operation_id:
            self.connect_operations.add(operation_id)
        running = [(s.stage_id, s.num_completed_tasks, s.num_tasks) for s in stages or () if not s.done]
        with self.lock:
            self.line.show(running) if running and not done else self.line.clear()

    def run(self) -> None:
        while not self.stopped.wait(POLL_SECONDS):
            self.poll()

    def poll(self) -> None:
        from pyspark import SparkContext

        self.hook_connect()
        context = SparkContext._active_spark_context
        if getattr(context, "_jsc", None) is None:  # not yet, or no longer, a running context
            return
        if self.verbose:
            self.show_warnings()
        tracker = context.statusTracker()
        self.jobs.update(tracker.getJobIdsForGroup(None))
        stages = [info for info in map(tracker.getStageInfo, tracker.getActiveStageIds()) if info is not None]
        running = [(s.stageId, s.numCompletedTasks, s.numTasks) for s in sorted(stages, key=lambda s: s.stageId)]
        with self.lock:
            self.line.show(running) if running else self.line.clear()

    def hook_connect(self) -> None:
        from dltrace import spark

        session = spark._session
        if self.hooked is None and type(session).__module__.startswith("pyspark.sql.connect"):
            session.registerProgressHandler(self)
            self.hooked = session

    def show_warnings(self) -> None:
        """Spark's warnings: the log lines (dltrace/log4j2.properties' pattern, not the JVM's
        start-up chatter or stack frames) the JVM wrote since the command began."""
        from dltrace.spark import jvm_log_path

        path = jvm_log_path()
        if not path.exists():
            return
        if path.stat().st_size < self.log_offset:  # a log over its limit starts anew
            self.log_offset = 0
        with open(path, "rb") as log:
            log.seek(self.log_offset)
            data = log.read()
        self.log_offset += len(data)
        lines = [line for line in data.decode(errors="replace").splitlines() if LOG_LINE.match(line)]
        if lines:
            with self.lock:
                self.line.clear()
                self.stream.write("".join(f"spark: {line}\n" for line in lines))

    def finish(self, seconds: float) -> None:
        """After the polling thread stopped: count the last jobs, clear the line, say what ran."""
        try:
            self.poll()
        except Exception:  # noqa: BLE001 - Spark stopping or gone: nothing more to count
            pass
        if self.hooked:
            self.hooked.removeProgressHandler(self)
        with self.lock:
            self.line.clear()
            ran = len(self.jobs) or len(self.connect_operations)
            if ran:
                what = "Spark jobs" if self.jobs else "Spark Connect operations"
                self.stream.write(f"dltrace: {ran} {what} in {seconds:.1f} s\n")
                self.stream.flush()


_shown: list[SparkProgress] = []  # the progress line on the terminal now, if any


def say(text: str) -> None:
    """One line of dltrace's own on stderr, never glued onto the progress line: that line is
    cleared first, and drawn again at Spark's next report."""
    if _shown:
        with _shown[-1].lock:
            _shown[-1].line.clear()
            print(text, file=sys.stderr, flush=True)
    else:
        print(text, file=sys.stderr, flush=True)


@contextmanager
def shown(quiet: bool = False, verbose: bool = False, stream: TextIO | None = None) -> Iterator[None]:
    """Spark's progress on ``stream`` (stderr) while the block runs, if it is a terminal."""
    stream = stream or sys.stderr
    if quiet or not stream.isatty():
        yield
        return
    progress = SparkProgress(stream, verbose)
    thread = threading.Thread(target=progress.run, name="dltrace-progress", daemon=True)
    started = time.monotonic()
    thread.start()
    _shown.append(progress)
    try:
        yield
    finally:
        _shown.remove(progress)
        progress.stopped.set()
        thread.join(5)
        progress.finish(time.monotonic() - started)
