"""Sets held apart when a result is saved: a window's partitions and the blocks of a
partition's rows its frames are made of (``rewriter/window_sets.py``), stored once each in
``shared.parquet`` after the sets every row shares, numbered in the order of their names
(64-bit hashes), and named by number in the rows' ``DL_shared`` (docs/formats.md).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from dltrace.errors import DltraceError
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
    numbered, names = _numbers(named_sets, shared_sets)
    return _naming(frame, names, shared_sets), numbered, len(names)


def _numbers(named_sets, first: int) -> tuple:
    """``(numbered, names)``: ``named_sets`` (``(__dlname, __dlids)``, a set each) as
    ``(set_id, ids)`` rows, and the sets' names (64-bit hashes, ``rewriter/window_sets.py``)
    sorted, the name at index i that of set ``first`` + i.  The names are read once, as one
    array, and joined back as a table of their own: no window over all names in one task.
    Two sets of one name would merge: the save stops instead (a chance of about one in
    4·10^7 for a million sets)."""
    import numpy as np
    import pyarrow as pa
    from pyspark.sql import functions as F
    from pyspark.sql.types import IntegerType, LongType, StructField, StructType

    names = np.sort(named_sets.select("__dlname").toArrow().column("__dlname").to_numpy())
    if names.size > 1 and bool((names[1:] == names[:-1]).any()):
        raise DltraceError("lineage not saved: two of the windows' sets held apart have the same 64-bit name "
                           "(a hash collision, about one in 4·10^7 saves of a million sets): save the result with "
                           "its lineage spelled out, as sql() gives it, and report this")
    table = pa.table({"__dlname": pa.array(names, pa.int64()),
                      SHARED_SET: np.arange(first, first + names.size, dtype=np.int32)})
    # with no sets held apart (a window over no rows) the schema is given: Spark infers none
    # from no rows (CANNOT_INFER_EMPTY_SCHEMA)
    empty = StructType([StructField("__dlname", LongType()), StructField(SHARED_SET, IntegerType())])
    numbered = named_sets.sparkSession.createDataFrame(table, schema=empty if not names.size else None)
    rows = named_sets.join(F.broadcast(numbered), "__dlname")
    return rows.select(SHARED_SET, F.col("__dlids").alias(SHARED_ID)), names


def _naming(frame, names, shared_sets: int):
    """``frame`` with ``DL_shared`` naming by number the shared sets (every row all of them)
    and the sets held apart its ``DL_names`` names (``names``: the sorted names, the first
    numbered ``shared_sets``).  Looked up in Arrow batches by binary search: a Spark map is
    searched key by key (a save of 30,000 rows naming 60,000 sets: 67 s), and a Python dict
    per name cost seconds for the 6.7 million names of a rank over 336,776 flights."""
    from pyspark.sql.types import ArrayType, IntegerType, StructField, StructType

    kept = [field for field in frame.schema.fields if field.name not in (DL_NAMES, SHARED_REFS)]
    schema = StructType([*kept, StructField(SHARED_REFS, ArrayType(IntegerType()))])
    columns = [field.name for field in kept]

    def with_set_numbers(batches):
        """Each batch with its rows' names replaced by their sets' numbers."""
        import pyarrow as pa

        for batch in batches:
            numbers = _set_numbers(batch.column(DL_NAMES), names, shared_sets)
            yield pa.RecordBatch.from_arrays([*(batch.column(c) for c in columns), numbers], [*columns, SHARED_REFS])

    return frame.mapInArrow(with_set_numbers, schema)


def _set_numbers(names_per_row, names, shared_sets: int):
    """Each row's list of names (NULL: none) as the list of its sets' numbers: first the
    ``shared_sets`` every row names, then each name's number (``shared_sets`` + its index in
    the sorted ``names``)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    lengths = pc.fill_null(pc.list_value_length(names_per_row), 0).to_numpy(zero_copy_only=False).astype(np.int64)
    named = pc.list_flatten(names_per_row).to_numpy(zero_copy_only=False)
    found = np.searchsorted(names, named)
    if named.size and (found.max() >= names.size or bool((names[found] != named).any())):
        raise AssertionError("a row names a set held apart that the save did not compute")
    counts = lengths + shared_sets
    offsets = np.concatenate([[0], np.cumsum(counts)])
    numbers = np.empty(offsets[-1], dtype=np.int32)
    every_row = np.zeros(offsets[-1], dtype=bool)  # the places of the shared sets, at each row's start
    every_row[(offsets[:-1, None] + np.arange(shared_sets)).ravel()] = True
    numbers[every_row] = np.tile(np.arange(shared_sets, dtype=np.int32), lengths.size)
    numbers[~every_row] = found + shared_sets
    return pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), pa.array(numbers, pa.int32()))
