"""Reading a saved result's lineage: the one place that knows how ``DL`` is stored.

Saved rows keep ``DL`` as a sorted ``array<bigint>`` of base-row ids today; should the stored
form change (a shared set stored once, roBDD bytes), only ``stored_ids`` needs adapting:
summaries and the lineage relation read ids through it, as SQL text that works both in a
DataFrame expression and in a ``spark-sql`` script.
"""

from __future__ import annotations

import numpy as np

from dltrace.errors import BadInput
from dltrace.results import DL, ROW, ResultStore, SavedResult


def stored_ids(saved: SavedResult) -> str:
    """A Spark SQL expression over the saved rows giving each row's ids as ``array<bigint>``.

    >>> stored_ids(SavedResult("q6", "", "control", "set", 1, {}, 0.0, 1, ["revenue"], "", None,
    ...                        {"_row": "bigint", "revenue": "decimal(38,4)", "DL": "array<bigint>"}))
    '`DL`'
    """
    require_lineage(saved)
    return f"`{DL}`"


def require_lineage(saved: SavedResult) -> None:
    """Refuse a result saved without base-row lineage (nothing to explain or summarize)."""
    if saved.schema and DL not in saved.schema:
        raise BadInput(f"result {saved.name} has no lineage (no {DL} column): save it from `dltrace sql` with lineage")


def row_ids(session, result: str, row: int) -> tuple[SavedResult, np.ndarray]:
    """The saved result and the sorted ids of its row ``row`` (one small read: rows are
    stored in ``_row`` order in small row groups, so the filter skips the others)."""
    from pyspark.sql import functions as F

    store = ResultStore(session.catalog)
    saved = store.get(result)
    require_lineage(saved)
    if not 0 <= row < saved.rows:
        raise BadInput(f"result {saved.name} has rows 0..{saved.rows - 1}, not {row}")
    frame = store.rows(session.spark, saved).where(F.col(ROW) == row).select(F.expr(stored_ids(saved)).alias(DL))
    column = frame.toArrow().column(0)
    ids = column[0].values.to_numpy(zero_copy_only=False) if len(column) and column[0].is_valid else []
    return saved, np.unique(np.asarray(ids, dtype=np.int64))
