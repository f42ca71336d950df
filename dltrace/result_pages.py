"""Pages of a saved result read with pyarrow alone, no Spark: the lineage explorer's result
pages (``dltrace ui``), which must show in a fraction of a second.

A page is a run of ``_row`` numbers: ``positions`` turns them into ``_pos`` runs, and a
filter on those lets pyarrow read only the row groups whose statistics hold them (rows are
written in small row groups for such lookups, ``results.ROWS_ROW_GROUP_BYTES``).  A row's
whole DL is its own ids, the ids of the shared sets it names and, resolved the same way, the
whole DLs of the upstream rows it names: what ``ResultStore.lineage_rows`` gives with Spark.
Columns of the types below come out as Spark's ``collect`` gives them; a result with other
columns (timestamps, whose zone Spark applies, maps, structs) is read with Spark.
"""

from __future__ import annotations

import re

import numpy as np

from dltrace.ids import FIRST_REFERENCE_ID, ROW_BITS, ROW_MASK
from dltrace.memory_bound import check_ids
from dltrace.result_format import DL, PARTITION_BITS, POSITION, ROW, SHARED_ID, SHARED_REFS, SHARED_SET, SavedResult

PLAIN_TYPES = re.compile(r"(tinyint|smallint|int|bigint|float|double|boolean|string|date|binary|decimal\(\d+,\d+\))$")


def readable_without_spark(result: SavedResult) -> bool:
    """Whether every column of ``result`` reads with pyarrow as Spark gives it."""
    return plain_types(result.schema, (POSITION, ROW, DL, SHARED_REFS))


def plain_types(schema: dict[str, str], besides: tuple[str, ...] = ()) -> bool:
    """Whether every column of ``schema`` (Spark's type names), ``besides`` these, is of a type
    pyarrow gives as Spark does."""
    return all(PLAIN_TYPES.match(kind) for name, kind in schema.items() if name not in besides)


def from_files(answer) -> bool:
    """Whether an answer is a pyarrow Table (``impact.files``), not a Spark DataFrame (whose
    attribute lookup answers any name with a column, so no ``hasattr`` test tells them apart)."""
    import pyarrow as pa

    return isinstance(answer, pa.Table)


def columns_of(answer) -> list[str]:
    """The column names of an answer (a pyarrow Table or a Spark DataFrame)."""
    return answer.column_names if from_files(answer) else answer.columns


def count_of(answer) -> int:
    """The rows of an answer (a pyarrow Table or a Spark DataFrame), counted."""
    return answer.num_rows if from_files(answer) else answer.count()


def records(answer, offset: int = 0, limit: int | None = None) -> list[dict]:
    """Rows ``offset`` on (``limit`` of them, else all) of an answer as dicts: of a pyarrow
    Table read from the catalog's files, or of a Spark DataFrame."""
    if from_files(answer):
        return answer.slice(offset, limit).to_pylist()
    answer = answer.offset(offset) if offset else answer
    rows = (answer.limit(limit) if limit is not None else answer).collect()
    return [r.asDict(recursive=False) for r in rows]


def rows_at(store, result: SavedResult, rows: np.ndarray, columns: list[str] | None = None):
    """The saved rows numbered ``rows`` (numpy int64), as ``ResultStore.rows`` has them
    (``_row``, the columns, ``DL``, ``DL_shared``; or ``_row`` and ``columns``), in ``_row``
    order: a pyarrow Table."""
    import pyarrow.compute as pc
    import pyarrow.dataset as ds

    stored = result.numbering
    read_columns = None if columns is None else [stored, *columns]
    wanted = np.unique(result.positions_of(np.asarray(rows, dtype=np.int64)))
    if not len(wanted):
        empty = dataset(store, result.data).schema.empty_table()
        return numbered(result, empty if read_columns is None else empty.select(read_columns))
    breaks = np.flatnonzero(np.diff(wanted) != 1) + 1
    condition = None
    for run in np.split(wanted, breaks):  # one range per run: pyarrow prunes row groups by their statistics
        in_run = (ds.field(stored) >= int(run[0])) & (ds.field(stored) <= int(run[-1]))
        condition = in_run if condition is None else condition | in_run
    table = numbered(result, read(dataset(store, result.data), read_columns, condition))
    return table.take(pc.sort_indices(table.column(ROW)))


def every_row(store, result: SavedResult, columns: list[str]):
    """``_row`` and ``columns`` of every saved row, in file order: a pyarrow Table."""
    return numbered(result, read(dataset(store, result.data), [result.numbering, *columns]))


def dataset(store, relative: str):
    """A saved file (a directory of Parquet parts) of the catalog, as a pyarrow dataset."""
    return parquet_dataset(store.path(relative))


def read(parts, columns: list[str] | None = None, condition=None):
    """``columns`` of the rows of ``parts`` (a pyarrow dataset) that meet ``condition``, read in
    this thread: with its thread pools, pyarrow 26 can abort the process as it exits
    ("terminate called without an active exception", 9 of 60 runs of a script that read one
    such file), and these reads are small (the row groups a lookup needs)."""
    return parts.to_table(columns=columns, filter=condition, use_threads=False)


def parquet_dataset(location):
    """Parquet at a ``storage.Location`` (a file or a directory of parts), as a pyarrow dataset."""
    import pyarrow.dataset as ds

    return ds.dataset(location.path, filesystem=location.fs, format="parquet")


def numbered(result: SavedResult, table):
    """``table`` (read from rows.parquet) with ``_row`` first in place of ``_pos``: each
    partition's rows count on from its first row (``SavedResult.positions``)."""
    import pyarrow as pa

    if result.positions is None:
        return table
    positions = table.column(POSITION).to_numpy()
    partitions, firsts = np.array(result.positions, dtype=np.int64).reshape(-1, 2).T
    first_of = np.zeros(int(partitions.max()) + 1, dtype=np.int64)
    first_of[partitions] = firsts
    owner = positions >> PARTITION_BITS
    numbers = positions - (owner << PARTITION_BITS) + first_of[owner]
    return table.drop_columns([POSITION]).add_column(0, ROW, pa.array(numbers, pa.int64()))


def lineage_columns(result: SavedResult) -> list[str]:
    """The columns of a saved row that ``whole_lineages`` reads: its ids and shared-set names."""
    return [DL, SHARED_REFS] if result.shared else [DL]


def whole_lineages(store, result: SavedResult, table) -> list[np.ndarray]:
    """Each row's whole DL (sorted numpy int64 ids) of ``table`` (from ``rows_at``, with
    ``lineage_columns`` at least)."""
    own = own_ids(table)
    # ids at or past FIRST_REFERENCE_ID name upstream rows only in a result that has upstream saves
    parts: list[list[np.ndarray]] = [[ids[ids < FIRST_REFERENCE_ID] if result.references else ids] for ids in own]
    if result.shared:
        named = [refs or [] for refs in table.column(SHARED_REFS).to_pylist()]
        names = sorted({n for refs in named for n in refs})
        rows = (f"row {table.column(ROW)[0]} of {result.name}" if table.num_rows == 1 and ROW in table.column_names
                else f"rows of {result.name}")
        check_ids(sum(map(len, own)) + shared_ids_to_read(store, result, names), rows)
        sets = shared_sets(store, result, names)
        for row_parts, refs in zip(parts, named):
            row_parts.extend(sets[n] for n in refs)
    if result.references:
        for upstream, code in store.referenced(result):
            named_rows = [ids[(ids >= FIRST_REFERENCE_ID) & (ids >> ROW_BITS == code)] & ROW_MASK for ids in own]
            wanted = np.unique(np.concatenate(named_rows)) if named_rows else np.array([], dtype=np.int64)
            if not len(wanted):
                continue
            upstream_rows = rows_at(store, upstream, wanted, lineage_columns(upstream))
            resolved = dict(zip(upstream_rows.column(ROW).to_pylist(), whole_lineages(store, upstream, upstream_rows)))
            for row_parts, rows in zip(parts, named_rows):
                row_parts.extend(resolved[int(r)] for r in rows)
    return [union(row_parts) for row_parts in parts]


def own_ids(table) -> list[np.ndarray]:
    """Each row's own ids (``DL``) as numpy int64: pieces of one flat array, so that a DL of
    millions of ids never becomes a Python list."""
    import pyarrow.compute as pc

    if not table.num_rows:
        return []
    lists = table.column(DL).combine_chunks()
    flat = pc.list_flatten(lists).to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
    lengths = pc.list_value_length(lists).fill_null(0).to_numpy(zero_copy_only=False)
    return np.split(flat, np.cumsum(lengths)[:-1])


def union(parts: list[np.ndarray]) -> np.ndarray:
    """The sorted distinct ids of ``parts``; one part already sorted and distinct (a row's own
    ids, as saved) is given back as it is, without a sort of its millions of ids.

    >>> union([np.array([1, 5, 9])]).tolist(), union([np.array([5, 1]), np.array([1, 9])]).tolist()
    ([1, 5, 9], [1, 5, 9])
    """
    if len(parts) == 1 and bool(np.all(parts[0][1:] > parts[0][:-1])):
        return parts[0]
    return np.unique(np.concatenate(parts)) if parts else np.array([], dtype=np.int64)


def shared_ids_to_read(store, result: SavedResult, names: list[int]) -> int:
    """How many ids reading the shared sets ``names`` (sorted) reads: the rows of the row
    groups whose ``set_id`` statistics hold one of them (the files' footers alone)."""
    if not names:
        return 0
    wanted, total = np.asarray(names), 0
    for fragment in dataset(store, result.shared).get_fragments():
        metadata = fragment.metadata
        column = metadata.schema.names.index(SHARED_SET)
        for group in range(metadata.num_row_groups):
            statistics = metadata.row_group(group).column(column).statistics
            low, high = (statistics.min, statistics.max) if statistics is not None and statistics.has_min_max \
                else (wanted[0], wanted[-1])
            if np.searchsorted(wanted, high, side="right") > np.searchsorted(wanted, low):
                total += metadata.row_group(group).num_rows
    return total


def shared_sets(store, result: SavedResult, names: list[int]) -> dict[int, np.ndarray]:
    """The ids of each shared set named (``set_id``: sorted numpy int64 ids)."""
    import pyarrow.dataset as ds

    if not names:
        return {}
    found = read(dataset(store, result.shared), [SHARED_SET, SHARED_ID], ds.field(SHARED_SET).isin(names))
    set_ids, ids = found.column(SHARED_SET).to_numpy(), found.column(SHARED_ID).to_numpy()
    order = np.argsort(set_ids, kind="stable")
    set_ids, ids = set_ids[order], ids[order]
    starts = np.searchsorted(set_ids, names)
    ends = np.searchsorted(set_ids, names, side="right")
    return {name: np.sort(ids[start:end]) for name, start, end in zip(names, starts, ends)}
