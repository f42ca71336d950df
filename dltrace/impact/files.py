"""Impact and explain read from the catalog's files with pyarrow, no Spark: the command line's
``dltrace impact`` and ``dltrace explain``, which must answer in about a second, warm or not
(docs/performance.md, 2026-11-28: 1.3 s and 1.4 s on the demo catalog).  Where these
readers cannot give what Spark would, they answer None and the caller asks Spark.

**Bad ids** (``bad_ids``): a table of at most ``ARROW_SCAN_MAX_ROWS`` rows, copied
(``_dl_id`` stored) or read in place (ids by position, ``impact/in_place.py``, its files
checked unchanged as Spark's reads check them), and a predicate made
of comparisons of a column with a literal of its own kind (integers of the column's range;
strings by equality), IN lists, BETWEEN, IS NULL, AND, OR and NOT: evaluated by pyarrow with
SQL's three-valued logic (an IN list as ORs of equalities, so that NOT IN over NULL is NULL).

**Base rows** (``base_rows``): a table's rows by id (in place: by position), of one data
version, whose columns are all of types pyarrow gives as Spark does.

**Stored impact** (``affected_rows``):

The answer is ``search.search_result``'s, row for row: the rows whose whole DL holds a bad id
(their own ids, the shared sets they name, the upstream rows they name), each with ``DL``
narrowed to the bad ids it holds, in ``_row`` order.  Rows are found by the forward index
(id -> ``_row``) when the result has one, else by reading every row's DL; a shared set that
holds a bad id reaches every row naming it; an upstream save is searched once (``searched``)
and its hit rows are then looked up by their names, like ids.  Columns are given as Spark
gives them only for plain types (``result_pages.readable_without_spark``): for other results
the caller asks Spark (and files pyarrow cannot read, missing or damaged, are left to Spark,
which says what is wrong with them as it always has).
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable
from typing import TypeVar

import numpy as np
from sqlglot import exp

from dltrace.catalog import ID_COLUMN, Catalog
from dltrace.ids import ROW_BITS
from dltrace.impact.in_place import ids_where as in_place_ids
from dltrace.impact.in_place import rows_by_id
from dltrace.impact.source import Source
from dltrace.result_format import DL, INDEX_ID, ROW, SHARED_ID, SHARED_REFS, SHARED_SET, SavedResult
from dltrace.result_pages import dataset, numbered, parquet_dataset, plain_types, read, rows_at
from dltrace.table_data import checked_files

T = TypeVar("T")
Pairs = tuple[np.ndarray, np.ndarray]  # (row numbers, ids) of equal length, pair by pair
# the bad ids of a table up to this size are found by scanning the predicate's columns (about
# a second for 100M rows of one column); Spark, its key index, beyond
ARROW_SCAN_MAX_ROWS = 100_000_000
# a search reads the saved rows a batch at a time: about this many bytes of DLs (a row's DL
# may hold a million ids, or one)
STREAMED_BYTES = 32 << 20
MOST_STREAMED_ROWS = 1 << 17


def or_none(read: Callable[..., T]) -> Callable[..., T | None]:
    """``read``, answering None when pyarrow cannot read the files (Spark then says why)."""

    @functools.wraps(read)
    def reading(*args, **kwargs) -> T | None:
        import pyarrow as pa

        try:
            return read(*args, **kwargs)
        except (OSError, pa.ArrowException):
            return None

    return reading


@or_none
def affected_rows(store, result: SavedResult, ids: np.ndarray, use_index: bool = True,
                  searched: dict | None = None):
    """The rows of ``result`` whose whole DL holds one of ``ids``, ``DL`` narrowed to those
    ids, in ``_row`` order: a pyarrow Table of ``_row``, the result's columns and ``DL`` (None
    when its files do not read)."""
    import pyarrow as pa

    rows, hit_ids = hit_pairs(store, result, np.asarray(ids, dtype=np.int64), use_index,
                              {} if searched is None else searched)
    hit_rows, starts = np.unique(rows, return_index=True)  # pairs are sorted by row, then id
    table = rows_at(store, result, hit_rows, list(result.columns))  # not their DLs, which may be huge
    narrowed = pa.ListArray.from_arrays(pa.array(np.append(starts, len(rows)), pa.int32()),
                                        pa.array(hit_ids, pa.int64()))
    return table.append_column(DL, narrowed)


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
    import pyarrow.dataset as ds

    if use_index and result.index:
        found = read(dataset(store, result.index), [INDEX_ID, ROW], ds.field(INDEX_ID).isin(wanted))
        return found.column(ROW).to_numpy(), found.column(INDEX_ID).to_numpy()
    return exploded(store, result, DL, wanted)


def shared_pairs(store, result: SavedResult, ids: np.ndarray) -> Pairs:
    """``(row, id)`` for each of ``ids`` in a shared set a row names: each set read once."""
    import pyarrow.dataset as ds

    found = read(dataset(store, result.shared), [SHARED_SET, SHARED_ID], ds.field(SHARED_ID).isin(ids))
    if not found.num_rows:
        return no_pairs()
    sets = found.column(SHARED_SET).to_numpy()
    rows, named = exploded(store, result, SHARED_REFS, np.unique(sets))
    return joined(rows, named, sets, found.column(SHARED_ID).to_numpy())


def exploded(store, result: SavedResult, column: str, wanted: np.ndarray) -> Pairs:
    """``(row, element)`` for each element of list ``column`` (``DL``, ``DL_shared``) of a
    saved row that is one of ``wanted``: read a batch of rows at a time, so that memory holds
    one batch's lists and the hits, whatever the result's size."""
    import pyarrow as pa
    import pyarrow.compute as pc

    found = [no_pairs()]
    parts = dataset(store, result.data)
    batches = parts.to_batches(columns=[result.numbering, column], batch_size=rows_per_batch(parts, column),
                               use_threads=False)
    for batch in batches:
        table = numbered(result, pa.Table.from_batches([batch]))
        lists = table.column(column).combine_chunks()
        elements = pc.list_flatten(lists).to_numpy(zero_copy_only=False)
        kept = np.isin(elements, wanted)
        if kept.any():
            owners = pc.list_parent_indices(lists).to_numpy(zero_copy_only=False)[kept]
            found.append((table.column(ROW).to_numpy()[owners], elements[kept]))
    rows, elements = (np.concatenate(part) for part in zip(*found))
    return rows.astype(np.int64), elements.astype(np.int64)


def rows_per_batch(parts, column: str) -> int:
    """Rows of a batch that holds about ``STREAMED_BYTES`` of ``column`` (as the first row
    group of the files has it): a few rows of huge DLs, many of small ones."""
    for fragment in parts.get_fragments():
        for number in range(fragment.metadata.num_row_groups):
            group = fragment.metadata.row_group(number)
            size = sum(group.column(c).total_uncompressed_size for c in range(group.num_columns)
                       if group.column(c).path_in_schema.split(".")[0] == column)
            if group.num_rows:
                return int(min(MOST_STREAMED_ROWS, max(1, STREAMED_BYTES * group.num_rows // max(size, 1))))
    return MOST_STREAMED_ROWS


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


INTEGERS = {"tinyint": 8, "smallint": 16, "int": 32, "bigint": 64}  # bits of Spark's integer types
COMPARISONS = {exp.EQ: "==", exp.NEQ: "!=", exp.LT: "<", exp.LTE: "<=", exp.GT: ">", exp.GTE: ">="}
OPERATORS = {"==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le, ">": operator.gt,
             ">=": operator.ge}
MIRRORED = {"==": "==", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}  # literal OP column


@or_none
def bad_ids(catalog: Catalog, source: Source) -> np.ndarray | None:
    """The ids (sorted int64) of the rows ``source`` names, or None when Spark must find them."""
    entry = catalog.entry(source.table)
    rows = next((old["rows"] for old in entry.previous if old["version"] == source.version), entry.rows)
    schema = entry.version_schema(source.version)
    if rows > ARROW_SCAN_MAX_ROWS or not schema:
        return None
    condition = arrow_condition(source.predicate, source.table, schema)
    if condition is None:
        return None
    entry, in_place = checked_files(catalog, source.table, source.version)
    if in_place:  # ids by position in the files; a predicate on _dl_id is left to Spark
        read_columns = sorted({schema_name(schema, c.name) for c in source.predicate.find_all(exp.Column)})
        if None in read_columns or ID_COLUMN in read_columns:
            return None
        return in_place_ids(entry.code, in_place, condition, read_columns)
    found = read(parquet_dataset(catalog.data_path(source.table, source.version)), [ID_COLUMN], condition)
    return np.unique(found.column(0).to_numpy().astype(np.int64))


def arrow_condition(predicate: exp.Expression, table: str, schema: dict[str, str]):
    """``predicate`` as a pyarrow dataset filter keeping exactly the rows Spark's WHERE keeps,
    or None when it holds anything else (the caller asks Spark)."""
    return ArrowCondition(table, schema).translated(predicate)


class ArrowCondition:
    """The translation of a predicate over ``table`` (its columns' Spark types ``schema``)."""

    def __init__(self, table: str, schema: dict[str, str]) -> None:
        self.table, self.schema = table, schema
        self.names = {name.lower(): name for name in schema}

    def translated(self, node: exp.Expression):
        import pyarrow.dataset as ds

        if isinstance(node, exp.Paren):
            return self.translated(node.this)
        if isinstance(node, (exp.And, exp.Or)):
            left, right = self.translated(node.left), self.translated(node.right)
            if left is None or right is None:
                return None
            return left & right if isinstance(node, exp.And) else left | right  # Kleene, as SQL
        if isinstance(node, exp.Not):
            inner = self.translated(node.this)
            return None if inner is None else ~inner
        field = self.column(node.this) if isinstance(node, (exp.Is, exp.In, exp.Between)) else None
        if isinstance(node, exp.Is) and isinstance(node.expression, exp.Null) and field:
            return ds.field(field).is_null()
        if type(node) in COMPARISONS:
            comparison = COMPARISONS[type(node)]
            if self.column(node.this):
                return self.compared(self.column(node.this), comparison, node.expression)
            if self.column(node.expression):
                return self.compared(self.column(node.expression), MIRRORED[comparison], node.this)
            return None
        if isinstance(node, exp.In) and field and node.expressions and not node.args.get("query"):
            return self.any_equal(field, node.expressions)
        if isinstance(node, exp.Between) and field:
            low, high = self.compared(field, ">=", node.args["low"]), self.compared(field, "<=", node.args["high"])
            return None if low is None or high is None else low & high
        return None

    def any_equal(self, field: str, items: list[exp.Expression]):
        """``field IN (items)`` as ORs of equalities: NULL IN (...) is NULL, so NOT IN keeps it out."""
        parts = [self.compared(field, "==", item) for item in items]
        if any(part is None for part in parts):
            return None
        return functools.reduce(operator.or_, parts)

    def column(self, node: exp.Expression) -> str | None:
        """The table's column ``node`` names, or None."""
        if isinstance(node, exp.Column) and node.table.lower() in ("", self.table) and not node.args.get("db"):
            return self.names.get(node.name.lower())
        return None

    def compared(self, field: str, comparison: str, literal: exp.Expression):
        """``field comparison literal``, or None when the literal is not of the column's kind."""
        import pyarrow.dataset as ds

        kind = self.schema[field]
        found = literal_value(literal, kind)
        if found is None or (kind == "string" and comparison not in ("==", "!=")):
            return None
        return OPERATORS[comparison](ds.field(field), found)


def schema_name(schema: dict[str, str], name: str) -> str | None:
    """The name ``schema`` gives a column (Spark's names are case-insensitive), or None."""
    return next((column for column in schema if column.lower() == name.lower()), None)


def literal_value(node: exp.Expression, kind: str) -> int | str | None:
    """A literal's value for a column of Spark type ``kind``: an integer in that type's range,
    or a string for a string column; None for anything else (Spark would cast)."""
    negative = isinstance(node, exp.Neg)
    node = node.this if negative else node
    if not isinstance(node, exp.Literal):
        return None
    if kind in INTEGERS and not node.is_string and node.this.isdigit():
        number = -int(node.this) if negative else int(node.this)
        half = 1 << (INTEGERS[kind] - 1)
        return number if -half <= number < half else None
    return node.this if kind == "string" and node.is_string and not negative else None


@or_none
def base_rows(catalog: Catalog, table: str, versions: list[int] | None, ids: np.ndarray):
    """``_dl_id`` then the columns of ``table``'s rows whose ids are ``ids``, sorted by id (a
    pyarrow Table), as ``backward.explain`` has them; None when Spark must read them: a table
    read in place, rows of several data versions, or columns of other types."""
    import pyarrow.compute as pc
    import pyarrow.dataset as ds

    entry = catalog.entry(table)
    version = (versions or [None])[0]
    schema = entry.version_schema(version)
    if len(versions or [None]) > 1 or not schema or not plain_types(schema):
        return None
    entry, in_place = checked_files(catalog, table, version)
    if in_place:
        return rows_by_id(entry.code, in_place, ids, [c for c in schema if c != ID_COLUMN])
    columns = [ID_COLUMN, *(c for c in schema if c != ID_COLUMN)]
    found = read(parquet_dataset(catalog.data_path(table, version)), columns, ds.field(ID_COLUMN).isin(ids))
    return found.take(pc.sort_indices(found.column(ID_COLUMN)))
