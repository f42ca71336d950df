"""Reading a saved result's lineage for summaries and the lineage relation.

Saved rows keep their own ids in ``DL`` (a sorted ``array<bigint>``) and name the shared sets
their DL also holds in ``DL_shared`` (``dltrace/results.py``); ``ResultStore.row_ids`` gives
one row's whole DL, and ``relation.py`` spells the same out as SQL.
"""

from __future__ import annotations

import numpy as np

from dltrace.errors import BadInput
from dltrace.results import DL, ResultStore, SavedResult


def require_lineage(saved: SavedResult) -> None:
    """Refuse a result saved without base-row lineage (nothing to explain or summarize)."""
    if saved.schema and DL not in saved.schema:
        raise BadInput(f"result {saved.name} has no lineage (no {DL} column): save it from `dltrace sql` with lineage")


def row_ids(session, result: str, row: int) -> tuple[SavedResult, np.ndarray]:
    """The saved result and the sorted ids of its row ``row`` (its own and its shared sets')."""
    store = ResultStore(session.catalog)
    saved = store.get(result)
    require_lineage(saved)
    return saved, store.row_ids(saved, row)
