"""The memory bound of dltrace's own Python process (docs/impact.md, "Memory").

Impact streams saved DLs a batch at a time and finds bad ids by columns, so its memory does
not grow with the lineage's size.  One answer cannot stream: a row's whole DL, which explain,
its summary and reasons, and the explorer's "why" sort and deduplicate in memory (its own
ids, the shared sets it names, the upstream rows it names).  Before reading one, the ids it
needs are counted from the files' row-group statistics; past the bound the command says so in
one line (exit 2) instead of being killed by the kernel with nothing printed.

``DLTRACE_MEMORY_BOUND`` sets the bound (``2g``, ``512m``, bytes); 2 GiB by default.  Spark's
side is bounded by ``spark.driver.memory`` (``SPARK_DRIVER_MEMORY``), its out-of-memory
failures one line too (``errors.unexpected_error``).
"""

from __future__ import annotations

import os
import re

from dltrace.errors import BadInput

BOUND_VARIABLE = "DLTRACE_MEMORY_BOUND"
DEFAULT_BOUND = 2 << 30
# bytes a DL's id costs while its parts are read, joined and deduplicated (8 bytes each in
# the parts read, their concatenation and the sorted result)
BYTES_PER_ID = 24
UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


class OverMemoryBound(BadInput):
    """An answer larger than the memory bound: one line that says what to ask instead."""


def memory_bound() -> int:
    """The bound in bytes (``DLTRACE_MEMORY_BOUND``, else 2 GiB).

    >>> os.environ[BOUND_VARIABLE] = "512m"; memory_bound() == 512 << 20
    True
    >>> del os.environ[BOUND_VARIABLE]; memory_bound() == 2 << 30
    True
    """
    text = os.environ.get(BOUND_VARIABLE, "").strip().lower()
    if not text:
        return DEFAULT_BOUND
    match = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?", text)
    if match is None:
        raise BadInput(f"{BOUND_VARIABLE}={text!r} is not a size: write it as 2g, 512m or a number of bytes")
    return int(float(match.group(1)) * UNITS[match.group(2)])


def check_ids(ids: int, what: str) -> None:
    """Refuse, in one line, to read ``ids`` ids of ``what`` (a row's DL) at once when they
    would take more memory than the bound."""
    bound = memory_bound()
    if ids * BYTES_PER_ID > bound:
        raise OverMemoryBound(
            f"{what} holds about {ids:,} ids, {_size(ids * BYTES_PER_ID)} to read at once, over dltrace's memory "
            f"bound of {_size(bound)}: ask for a row with fewer ids, impact (which streams), or raise "
            f"{BOUND_VARIABLE} where the machine has the memory"
        )


def _size(n: int) -> str:
    """
    >>> _size(3 << 30), _size(700 << 20)
    ('3.0 GiB', '700 MiB')
    """
    return f"{n / (1 << 30):.1f} GiB" if n >= 1 << 30 else f"{n / (1 << 20):.0f} MiB"
