"""Named points where a writer may die, so that crash tests kill exactly there.

A test sets ``DLTRACE_FAULT=<point>`` in a writer's environment; when that writer reaches
``point(<point>)`` it kills itself with SIGKILL (no clean-up, no ``finally``), as a power
loss or the OOM killer would; ``DLTRACE_FAULT=<point>:interrupt`` sends its process group
SIGINT there instead, as Ctrl-C in a terminal does.  Without the variable a point costs one
dictionary lookup.
Each point sits between two writes whose order the crash guarantees rely on
(docs/formats.md, "Atomic writes and recovery").
"""

from __future__ import annotations

import os
import signal
import sys

from dltrace.errors import BadInput

ENVIRONMENT = "DLTRACE_FAULT"
POINTS = frozenset({
    "register.after-data",  # a copy's Parquet written under its temporary name, not renamed
    "register.after-rename",  # the copy renamed into place, the catalog not yet committed
    "catalog.after-commit",  # a catalog version committed to log/, catalog.json not yet rewritten
    "save.after-rows",  # a save's rows written, its result.json not yet
    "save.after-metadata",  # result.json replaced, the data it replaced not yet deleted
})


def point(name: str) -> None:
    """Die here (SIGKILL) when ``$DLTRACE_FAULT`` names this point."""
    setting = os.environ.get(ENVIRONMENT)
    if not setting:
        return
    wanted, _, how = setting.partition(":")
    if wanted not in POINTS or how not in ("", "interrupt"):
        raise BadInput(f"{ENVIRONMENT}={setting}: no such fault point (there are {', '.join(sorted(POINTS))}, "
                       f"each optionally followed by :interrupt)")
    if wanted == name:
        sys.stdout.flush()
        sys.stderr.flush()
        if how:
            os.killpg(os.getpgrp(), signal.SIGINT)
        else:
            os.kill(os.getpid(), signal.SIGKILL)
