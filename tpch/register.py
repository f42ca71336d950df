"""Registering generated TPC-H data in a lineage catalog, with the paper's chronological ids."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from tpch.data import REGISTRATION, TABLES, generate, table_paths


def register_tpch(session, sf: float = 0.01, root: Path = Path("data"), progress: Callable[[str], None] = lambda _: None) -> Path:
    """Generate (or reuse) TPC-H at ``sf`` and register its eight tables in ``session``'s catalog.

    Registration is idempotent, so a second call costs only a look at the files.
    """
    directory = generate(sf, root)
    paths = table_paths(directory)
    for table in TABLES:
        plan = REGISTRATION[table]
        progress(f"registering {table} (ids ordered by {', '.join(plan.order_by)})")
        session.register(table, paths[table], key=list(plan.key), order_by=list(plan.order_by))
    return directory
