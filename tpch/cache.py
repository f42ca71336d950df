"""A generated data set cached on disk, written so that an interrupted run never leaves a
half-written cache: files go into a temporary sibling directory that is renamed into place
only when complete."""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, Iterable

import pyarrow.parquet as pq


def parquet_readable(paths: Iterable[Path]) -> bool:
    """True when every Parquet file exists and has a readable footer (a complete cache)."""
    try:
        for path in paths:
            pq.read_metadata(path)
    except (OSError, ValueError):
        return False
    return True


def progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def cached_directory(target: Path, build: Callable[[Path], None], is_complete: Callable[[Path], bool]) -> Path:
    """``target`` if it is complete, else built by ``build(staging)`` and renamed into place."""
    if is_complete(target):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        started = time.monotonic()
        build(staging)
        staging.chmod(0o755)  # mkdtemp makes it private; the cache is shared data
        if is_complete(target):  # a concurrent run finished first; keep its files
            return target
        if target.exists():  # an incomplete leftover, e.g. a table deleted by hand
            shutil.rmtree(target)
        staging.rename(target)
        progress(f"wrote {target} in {time.monotonic() - started:.1f} s")
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target
