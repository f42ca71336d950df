"""Sets held apart when a result is saved: a window's partitions and the blocks of a
partition's rows its frames are made of (``rewriter/window_sets.py``), stored once each in
``shared.parquet`` after the sets every row shares, numbered in name order, and named by
number in the rows' ``DL_shared`` (docs/formats.md).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from dltrace.result_format import SHARED_ID, SHARED_REFS, SHARED_SET
from dltrace.rewriter.output import DL_NAMES


@contextmanager
def persisted(frame) -> Iterator:
    """``frame`` kept by Spark while the block runs (None stays None)."""
    if frame is None:
        yield None
        return
    frame = frame.persist()
    try:
        yield frame
    finally:
        frame.unpersist()


def numbered_sets(frame, named_sets, shared_sets: int) -> tuple:
    """``(frame, numbered, count)``: ``frame`` with ``DL_shared`` naming the shared sets (every
    row all ``shared_sets`` of them) and, by number, the sets held apart its ``DL_names``
    names, ``named_sets`` (``(__dlname, __dlids)``) as ``(set_id, ids)`` rows (a set each, its
    ids sorted), and how many sets they are; ``(frame, None, 0)`` when nothing is held apart."""
    if named_sets is None:
        return frame, None, 0
    numbered, numbers = _numbers(named_sets, shared_sets)
    return _naming(frame, numbers, shared_sets), numbered, len(numbers)


def _numbers(named_sets, first: int) -> tuple:
    """``(numbered, numbers)``: ``named_sets`` (``(__dlname, __dlids)``, a set each) as
    ``(set_id, ids)`` rows, and ``numbers``, each set's name to its ``set_id``: from ``first``
    on, in name order (the names are distinct: the order, and so each number, is one;
    Python's order of text is Spark's, by code point).  The names are read once, numbered
    here, and joined back as a table of their own: no window over all names in one task, no
    Python call per id."""
    import pandas as pd
    from pyspark.sql import functions as F

    names = sorted(named_sets.select("__dlname").toArrow().column("__dlname").to_pylist())
    numbers = {name: number for number, name in enumerate(names, first)}
    table = pd.DataFrame({"__dlname": pd.Series(names, dtype=object),
                          SHARED_SET: pd.Series(range(first, first + len(names)), dtype="int32")})
    numbered = named_sets.sparkSession.createDataFrame(table, f"__dlname string, {SHARED_SET} int")
    rows = named_sets.join(F.broadcast(numbered), "__dlname")
    return rows.select(SHARED_SET, F.col("__dlids").alias(SHARED_ID)), numbers


def _naming(frame, numbers: dict[str, int], shared_sets: int):
    """``frame`` with ``DL_shared`` naming by number the shared sets (every row all of them)
    and the sets held apart its ``DL_names`` names.  The names are looked up in a Python dict:
    a Spark map is searched key by key (a save of 30,000 rows naming 60,000 sets: 67 s)."""
    import pandas as pd
    from pyspark.sql import functions as F

    every_row = list(range(shared_sets))

    def numbered(names):
        return names.map(lambda row: every_row + [numbers[name] for name in (row if row is not None else ())])

    numbered.__annotations__ = {"names": pd.Series, "return": pd.Series}  # read by pandas_udf
    return frame.withColumn(SHARED_REFS, F.pandas_udf(numbered, "array<int>")(F.col(DL_NAMES))).drop(DL_NAMES)
