"""Stored impact read from a saved result's files with pyarrow, no Spark: the command line's
``dltrace impact`` over saved results, which once warm must answer in about the time it takes
to find the bad ids (issue 43).

The answer is ``search.search_result``'s, row for row: the rows whose whole DL holds a bad id
(their own ids, the shared sets they name, the upstream rows they name), each with ``DL``
narrowed to the bad ids it holds, in ``_row`` order.  Rows are found by the forward index
(id -> ``_row``) when the result has one, else by reading every row's DL; a shared set that
holds a bad id reaches every row naming it; an upstream save is searched once (``searched``)
and its hit rows are then looked up by their names, like ids.  Columns are given as Spark
gives them only for plain types (``result_pages.readable_without_spark``): for other results
the caller asks Spark.
"""

from __future__ import annotations

import numpy as np

from dltrace.ids import ROW_BITS
from dltrace.result_format import DL, INDEX_ID, ROW, SHARED_ID, SHARED_REFS, SHARED_SET, SavedResult
from dltrace.result_pages import dataset, every_row, rows_at

Pairs = tuple[np.ndarray, np.ndarray]  # (row numbers, ids) of equal length, pair by pair


def affected_rows(store, result: SavedResult, ids: np.ndarray, use_index: bool = True,
                  searched: dict | None = None):
    """The rows of ``result`` whose whole DL holds one of ``ids``, ``DL`` narrowed to those
    ids, in ``_row`` order: a pyarrow Table of ``_row``, the result's columns and ``DL``."""
    import pyarrow as pa

    rows, hit_ids = hit_pairs(store, result, np.asarray(ids, dtype=np.int64), use_index,
                              {} if searched is None else searched)
    hit_rows, starts = np.unique(rows, return_index=True)  # pairs are sorted by row, then id
    table = rows_at(store, result, hit_rows)
    narrowed = pa.ListArray.from_arrays(pa.array(np.append(starts, len(rows)), pa.int32()),
                                        pa.array(hit_ids, pa.int64()))
    kept = [c for c in table.column_names if c not in (DL, SHARED_REFS)]
    return table.select(kept).append_column(DL, narrowed)


def hit_pairs(store, result: SavedResult, ids: np.ndarray, use_index: bool, searched: dict) -> Pairs:
    """``(row, bad id)`` for each bad id in each row's whole DL, sorted and without repeats."""
    if not len(ids):
        return no_pairs()
    parts = [id_pairs(store, result, ids, use_index)]
    if result.shared:
        parts.append(shared_pairs(store, result, ids))
    for upstream, code in store.referenced(result) if result.references else []:
        key = (upstream.name, upstream.stamp)
        if key not in searched:
            searched[key] = hit_pairs(store, upstream, ids, use_index, searched)
        upstream_rows, upstream_ids = searched[key]
        if len(upstream_rows):
            names = upstream_rows + (code << ROW_BITS)  # how this result's DLs name those rows
            naming_rows, named = id_pairs(store, result, np.unique(names), use_index)
            parts.append(joined(naming_rows, named, names, upstream_ids))
    rows, found = (np.concatenate(column).astype(np.int64) for column in zip(*parts))
    order = np.lexsort((found, rows))
    rows, found = rows[order], found[order]
    first = np.ones(len(rows), dtype=bool)
    first[1:] = (np.diff(rows) != 0) | (np.diff(found) != 0)
    return rows[first], found[first]


def id_pairs(store, result: SavedResult, wanted: np.ndarray, use_index: bool) -> Pairs:
    """``(row, id)`` for each of ``wanted`` (sorted ids) in a row's own DL."""
    import pyarrow.compute as pc
    import pyarrow.dataset as ds

    if use_index and result.index:
        found = dataset(store, result.index).to_table(columns=[INDEX_ID, ROW],
                                                      filter=ds.field(INDEX_ID).isin(wanted))
        return found.column(ROW).to_numpy(), found.column(INDEX_ID).to_numpy()
    table = every_row(store, result, [DL])
    lists = table.column(DL).combine_chunks()
    ids = pc.list_flatten(lists).to_numpy(zero_copy_only=False)
    owners = pc.list_parent_indices(lists).to_numpy(zero_copy_only=False)
    kept = np.isin(ids, wanted)
    return table.column(ROW).to_numpy()[owners[kept]], ids[kept]


def shared_pairs(store, result: SavedResult, ids: np.ndarray) -> Pairs:
    """``(row, id)`` for each of ``ids`` in a shared set a row names: each set read once."""
    import pyarrow.compute as pc
    import pyarrow.dataset as ds

    found = dataset(store, result.shared).to_table(columns=[SHARED_SET, SHARED_ID],
                                                   filter=ds.field(SHARED_ID).isin(ids))
    if not found.num_rows:
        return no_pairs()
    naming = every_row(store, result, [SHARED_REFS])
    lists = naming.column(SHARED_REFS).combine_chunks()
    sets = pc.list_flatten(lists).to_numpy(zero_copy_only=False)
    owners = pc.list_parent_indices(lists).to_numpy(zero_copy_only=False)
    return joined(naming.column(ROW).to_numpy()[owners], sets,
                  found.column(SHARED_SET).to_numpy(), found.column(SHARED_ID).to_numpy())


def joined(rows: np.ndarray, keys: np.ndarray, other_keys: np.ndarray, values: np.ndarray) -> Pairs:
    """``(row, value)`` for each ``rows[i]`` and each value whose key equals ``keys[i]``: an
    equi-join of numpy arrays (sort one side, find each key's run in it)."""
    order = np.argsort(other_keys, kind="stable")
    other_keys, values = other_keys[order], values[order]
    starts = np.searchsorted(other_keys, keys, side="left")
    counts = np.searchsorted(other_keys, keys, side="right") - starts
    offsets = np.cumsum(counts) - counts  # where each row's matches begin in the output
    taken = np.arange(int(counts.sum())) + np.repeat(starts - offsets, counts)
    return np.repeat(rows, counts), values[taken]


def no_pairs() -> Pairs:
    return np.array([], dtype=np.int64), np.array([], dtype=np.int64)
