"""Pages of a saved result's rows and of a registered table's rows for the explorer, filtered
and sorted (``ui.rows``): read by pyarrow from the catalog's files where they give what Spark
would (``result_pages``, ``impact.files.base_rows``), else by Spark.

A page is the rows ``offset`` to ``offset + limit`` of an *order*: the row numbers (``_row``
of a result, ``_dl_id`` of a table) the filter keeps, sorted.  Without a filter or a sort a
result's order is its rows' numbers themselves and nothing is read to find it; else it is
worked out once (a column or two of every row) and kept by the caller (``remember``), so that
the next page only reads its own rows.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from dltrace import result_pages
from dltrace.catalog import ID_COLUMN
from dltrace.ids import ROW_BITS
from dltrace.impact.files import base_rows, or_none
from dltrace.result_format import DL, ROW, SavedResult
from dltrace.table_data import table_rows, version_files
from dltrace.ui.rows import RowOrder, arrow_order, row_order, spark_ordered
from dltrace.ui.values import page_bounds, value

Remember = Callable[[tuple, Callable[[], np.ndarray]], np.ndarray]


def computed(key: tuple, compute: Callable[[], np.ndarray]) -> np.ndarray:
    """A ``Remember`` that keeps nothing."""
    return compute()


def counts_by_table(session, ids) -> dict[str, int]:
    """``{table: how many of ids (sorted, distinct) are its rows}``, in table-code order: the
    runs of one code in sorted ids, counted without a sort (a DL may hold millions)."""
    codes = np.asarray(ids, dtype=np.int64) >> ROW_BITS
    starts = np.flatnonzero(np.r_[True, codes[1:] != codes[:-1]]) if len(codes) else np.array([], dtype=np.int64)
    counts = np.diff(np.r_[starts, len(codes)])
    codes = codes[starts]
    return {session.catalog.table_of_code(int(code)): int(n) for code, n in zip(codes, counts)}


def result_rows(session, name: str, offset: int, limit: int, text: str = "", sort: str = "",
                descending: bool = False, remember: Remember = computed) -> dict:
    """A page of saved result ``name``: each row's ``_row``, values and DL as a count per
    table, of the rows ``text`` keeps ordered by ``sort`` (``ui.rows``); ``matched`` is how
    many rows the filter keeps."""
    offset, limit = page_bounds(offset, limit)
    saved = session.store.get(name)
    order = row_order(saved.name, result_schema(saved), text, sort, descending)
    if order.plain:
        numbers, matched = np.arange(offset, min(offset + limit, saved.rows), dtype=np.int64), saved.rows
    else:
        ordered = remember(("result", saved.name, saved.stamp, *order.key), lambda: result_order(session, saved, order))
        numbers, matched = ordered[offset:offset + limit], len(ordered)
    if not len(numbers):
        page = []
    elif result_pages.readable_without_spark(saved):
        page = arrow_page(session, saved, numbers)
    else:
        page = spark_page(session, saved, numbers)
    return {"result": saved.name, "columns": list(saved.columns), "total": saved.rows, "matched": matched,
            "offset": offset, "limit": limit, "rows": page, "stale": session.stale_results().get(saved.name)}


def result_schema(saved: SavedResult) -> dict[str, str]:
    """The columns a result's filter and sort may use, with their Spark types: ``_row`` and the query's."""
    return {ROW: "bigint", **{c: saved.schema[c] for c in saved.columns}}


def result_order(session, saved: SavedResult, order: RowOrder) -> np.ndarray:
    """The ``_row`` numbers of the rows ``order`` keeps, in its order: by pyarrow where it
    evaluates the filter, else by Spark."""
    if result_pages.readable_without_spark(saved):
        table = result_pages.every_row(session.store, saved, [c for c in order.columns() if c != ROW])
        found = arrow_order(table, order, saved.name, result_schema(saved), ROW)
        if found is not None:
            return found
    return collected(spark_ordered(session.store.rows(session.spark, saved), order, ROW), ROW)


def collected(frame, column: str) -> np.ndarray:
    """One bigint ``column`` of a DataFrame, in its order, as numpy int64."""
    table = frame.select(column).toArrow()
    return table.column(0).to_numpy().astype(np.int64)


def arrow_page(session, saved: SavedResult, numbers: np.ndarray) -> list[dict]:
    """The rows numbered ``numbers`` (in that order), read by pyarrow, DLs counted in numpy."""
    table = result_pages.rows_at(session.store, saved, numbers)
    rows = table.select([ROW, *saved.columns]).to_pylist()
    lineages = result_pages.whole_lineages(session.store, saved, table)
    page = {record[ROW]: {"_row": record.pop(ROW), "values": {k: value(v) for k, v in record.items()},
                          "dl": counts_by_table(session, ids)} for record, ids in zip(rows, lineages)}
    return [page[int(n)] for n in numbers]


def spark_page(session, saved: SavedResult, numbers: np.ndarray) -> list[dict]:
    """The rows numbered ``numbers`` (in that order) read with Spark; the counts are computed by
    Spark next to the rows, so a row's ids never travel."""
    from pyspark.sql import functions as F

    # result(name)'s rows without its ORDER BY (a sort is one more Spark job; the page is ordered here);
    # first, as Spark's column functions need a running Spark
    rows = session.store.lineage_rows(session.spark, saved)
    codes = F.transform(F.col(DL), lambda x: F.shiftright(x, ROW_BITS))
    per_code = F.transform(F.array_distinct(codes), lambda c: F.struct(
        c.alias("code"), F.size(F.filter(F.col(DL), lambda x: F.shiftright(x, ROW_BITS) == c)).alias("n")))
    frame = (rows.where(F.col(ROW).isin([int(n) for n in numbers]))
             .select(ROW, *[F.col(f"`{c}`") for c in saved.columns], per_code.alias("__dl_counts")))
    page = {}
    for row in frame.collect():
        record = row.asDict(recursive=False)
        counts = sorted((c["code"], c["n"]) for c in record.pop("__dl_counts") or [])
        page[record[ROW]] = {"_row": record.pop(ROW), "values": {k: value(v) for k, v in record.items()},
                             "dl": {session.catalog.table_of_code(code): n for code, n in counts}}
    return [page[int(n)] for n in numbers]


def table_page(session, name: str, offset: int, limit: int, text: str = "", sort: str = "",
               descending: bool = False, remember: Remember = computed) -> dict:
    """A page of registered table ``name``'s current rows (``_dl_id`` first), of the rows
    ``text`` keeps ordered by ``sort`` (by ``_dl_id`` without one)."""
    offset, limit = page_bounds(offset, limit)
    entry = session.catalog.entry(name)
    name = name.lower()
    schema = table_schema(entry)
    order = row_order(name, schema, text, sort, descending)
    ordered = remember(("table", name, entry.version, entry.registered_at, *order.key),
                       lambda: table_order(session, name, order))
    ids = ordered[offset:offset + limit]
    found = page_of_table(session, name, ids) if len(ids) else []
    return {"table": name, "columns": [ID_COLUMN, *(c for c in schema if c != ID_COLUMN)], "key": entry.key or [],
            "version": entry.version, "total": entry.rows, "matched": len(ordered), "offset": offset, "limit": limit,
            "rows": [{k: value(v) for k, v in r.items()} for r in found]}


def table_schema(entry) -> dict[str, str]:
    """A table's current columns with their Spark types, ``_dl_id`` included."""
    return entry.version_schema(None) or {**entry.schema, ID_COLUMN: "bigint"}


def readable_table(entry) -> bool:
    """Whether pyarrow reads the table's current rows as Spark does: copied (``_dl_id``
    stored) and of plain types."""
    schema = entry.version_schema(None)
    return bool(schema) and not version_files(entry, None) and result_pages.plain_types(schema)


def table_order(session, name: str, order: RowOrder) -> np.ndarray:
    """The ``_dl_id`` of the table's rows ``order`` keeps, in its order."""
    entry = session.catalog.entry(name)
    if readable_table(entry):
        columns = [ID_COLUMN, *(c for c in order.columns() if c != ID_COLUMN)]
        table = result_pages.read(result_pages.parquet_dataset(session.catalog.data_path(name)), columns)
        found = arrow_order(table, order, name, table_schema(entry), ID_COLUMN)
        if found is not None:
            return found
    return collected(spark_ordered(table_rows(session.spark, session.catalog, name), order, ID_COLUMN), ID_COLUMN)


def page_of_table(session, name: str, ids: np.ndarray) -> list[dict]:
    """The table's rows whose ids are ``ids``, in that order."""
    from pyspark.sql import functions as F

    entry = session.catalog.entry(name)
    found = base_rows(session.catalog, name, None, ids) if readable_table(entry) else None
    if found is not None:
        rows = found.to_pylist()
    else:
        frame = table_rows(session.spark, session.catalog, name).where(F.col(ID_COLUMN).isin([int(i) for i in ids]))
        rows = [r.asDict(recursive=False) for r in frame.collect()]
    by_id = {r[ID_COLUMN]: {ID_COLUMN: r[ID_COLUMN], **{k: v for k, v in r.items() if k != ID_COLUMN}} for r in rows}
    return [by_id[int(i)] for i in ids]


@or_none
def key_example(session, name: str) -> dict | None:
    """The key's values in the first row of table ``name`` (copied tables of plain types,
    read by pyarrow), for the explorer's examples of an impact source; None without one."""
    entry = session.catalog.entry(name)
    if not entry.key or not readable_table(entry):
        return None
    first = result_pages.parquet_dataset(session.catalog.data_path(name)).head(1, columns=entry.key).to_pylist()
    return {k: value(v) for k, v in first[0].items()} if first else None
