"""The lineage explorer's answers as JSON-ready values, from the Python API, and read from
the catalog's files by pyarrow where they give what Spark would: a result's pages
(``dltrace.result_pages``), why a row is what it is and impacts (``explain`` and ``impact``
with ``from_files``, as the command line reads them, ``dltrace.impact.files``).

Each function takes a ``LineageSession`` opened for this one request (so a catalog changed
since the last request is what it answers from) and returns plain dicts and lists; nothing
here knows HTTP, so the API tests compare these answers with the session's own.  Nothing here
writes to the catalog: it reads with ``dltrace.impact``'s ``explain`` and ``impact``, the
session's ``saved_results``, ``stale_results``, ``views``, ``udfs``, ``explain``,
``summarize`` and ``explain_reasons``, and its store's and catalog's lookups alone.
"""

from __future__ import annotations

import csv
import io
import json
import threading
import warnings
from dataclasses import asdict

import numpy as np

from dltrace import result_pages
from dltrace.errors import BadInput
from dltrace.formatting import plain_value
from dltrace.ids import ROW_BITS
from dltrace.impact import ImpactWarning, explain, impact
from dltrace.plain import names_read
from dltrace.result_pages import columns_of, records
from dltrace.results import DL, ROW

JS_SAFE = 2 ** 53  # JavaScript's numbers hold integers exactly up to here; ids and bigints go past it
MAX_PAGE = 5000  # rows per page at most: a page is read into the server's memory and the browser's
IMPACT_SHOWN = 200  # affected rows shown per result; the export has them all
RECORDING_WARNINGS = threading.Lock()  # one impact's warnings recorded at a time (_impact_frames)


def value(v):
    """A value for the page: JSON-friendly (``plain_value``), an integer past 2^53 as text.

    >>> value(7), value(2 ** 60), value([1, 2 ** 60]), value({"n": 2 ** 60})
    (7, '1152921504606846976', [1, '1152921504606846976'], {'n': '1152921504606846976'})
    """
    v = plain_value(v)
    if isinstance(v, int) and not isinstance(v, bool) and abs(v) >= JS_SAFE:
        return str(v)
    if isinstance(v, list):
        return [value(x) for x in v]
    return {k: value(x) for k, x in v.items()} if isinstance(v, dict) else v


def pipeline(session) -> dict:
    """Tables, saved results and views as nodes, each with the names it reads as edges, and the
    stale results with why.  Reads catalog files only (no Spark)."""
    tables = session.catalog.tables
    saved = session.saved_results()
    views = session.views()
    stale = session.stale_results()
    nodes = [{"id": name, "kind": "table", "rows": entry.rows, "version": entry.version, "key": entry.key,
              "source": entry.source, "registered_at": entry.registered_at, "columns": list(entry.schema)}
             for name, entry in sorted(tables.items())]
    edges = []
    for name, result in sorted(saved.items()):
        nodes.append({"id": name, "kind": "result", "rows": result.rows, "stamp": result.stamp,
                      "created_at": result.created_at, "semantics": result.semantics, "query": result.query,
                      "inputs": {**{t: f"v{v}" for t, v in result.tables.items()}, **dict(result.results)},
                      "stale": stale.get(name), "columns": list(result.columns)})
        edges += [{"from": source, "to": name} for source in [*result.tables, *result.results]]
    known = set(tables) | set(saved) | set(views)
    for name, query in sorted(views.items()):
        read = sorted(names_read(query) & known - {name})  # a view that no longer parses: none
        nodes.append({"id": name, "kind": "view", "query": query})
        edges += [{"from": source, "to": name} for source in read]
    return {"catalog": str(session.catalog.directory), "version": session.catalog.version, "nodes": nodes,
            "edges": edges, "stale": stale}


def page_bounds(offset: int, limit: int) -> tuple[int, int]:
    """A page's bounds, checked: bad ones are bad input.

    >>> page_bounds(0, 100)
    (0, 100)
    >>> page_bounds(-1, 10)
    Traceback (most recent call last):
    dltrace.errors.BadInput: offset must be 0 or more (got -1)
    """
    if offset < 0:
        raise BadInput(f"offset must be 0 or more (got {offset})")
    if not 1 <= limit <= MAX_PAGE:
        raise BadInput(f"limit must be between 1 and {MAX_PAGE} (got {limit})")
    return offset, limit


def counts_by_table(session, ids) -> dict[str, int]:
    """``{table: how many of ids are its rows}``, in table-code order."""
    codes, counts = np.unique(np.asarray(ids, dtype=np.int64) >> ROW_BITS, return_counts=True)
    return {session.catalog.table_of_code(int(code)): int(n) for code, n in zip(codes, counts)}


def result_rows(session, name: str, offset: int, limit: int) -> dict:
    """A page of saved result ``name``: each row's ``_row``, values and DL as a count per table,
    read by pyarrow from the saved files (``result_pages``: no Spark job, no JVM), or by Spark
    for columns only Spark reads as it shows them."""
    offset, limit = page_bounds(offset, limit)
    saved = session.store.get(name)
    numbers = np.arange(offset, min(offset + limit, saved.rows), dtype=np.int64)
    if not len(numbers):
        page = []
    elif result_pages.readable_without_spark(saved):
        table = result_pages.rows_at(session.store, saved, numbers)
        rows = table.select([ROW, *saved.columns]).to_pylist()
        lineages = result_pages.whole_lineages(session.store, saved, table)
        page = [{"_row": record.pop(ROW), "values": {k: value(v) for k, v in record.items()},
                 "dl": counts_by_table(session, ids)} for record, ids in zip(rows, lineages)]
    else:
        page = spark_page(session, saved, offset, limit)
    return {"result": saved.name, "columns": list(saved.columns), "total": saved.rows, "offset": offset,
            "limit": limit, "rows": page, "stale": session.stale_results().get(saved.name)}


def spark_page(session, saved, offset: int, limit: int) -> list[dict]:
    """The rows of a page read with Spark; the counts are computed by Spark next to the rows,
    so a row's ids never travel."""
    from pyspark.sql import functions as F

    # result(name)'s rows without its ORDER BY (a sort is one more Spark job; the page is sorted here);
    # first, as Spark's column functions need a running Spark
    rows = session.store.lineage_rows(session.spark, saved)
    codes = F.transform(F.col(DL), lambda x: F.shiftright(x, ROW_BITS))
    per_code = F.transform(F.array_distinct(codes), lambda c: F.struct(
        c.alias("code"), F.size(F.filter(F.col(DL), lambda x: F.shiftright(x, ROW_BITS) == c)).alias("n")))
    frame = (rows.where(F.col(ROW).between(offset, offset + limit - 1))
             .select(ROW, *[F.col(f"`{c}`") for c in saved.columns], per_code.alias("__dl_counts")))
    page = []
    for row in sorted(frame.collect(), key=lambda r: r[ROW]):
        record = row.asDict(recursive=False)
        counts = sorted((c["code"], c["n"]) for c in record.pop("__dl_counts") or [])
        page.append({"_row": record.pop(ROW), "values": {k: value(v) for k, v in record.items()},
                     "dl": {session.catalog.table_of_code(code): n for code, n in counts}})
    return page


def why(session, name: str, row: int, limit: int) -> dict:
    """Why row ``row`` of ``name`` is what it is, but its summary: how many ids each table
    gave, the saved results it went through, and the first page of its source rows per table."""
    saved = session.store.get(name)
    explained = explain(session, saved.name, row, from_files=True)
    return {"result": saved.name, "row": row, "ids": dict(explained.ids), "through": session.store.upstream(saved.name),
            "tables": {table: _page(frame, explained.ids[table], 0, limit) for table, frame in explained.items()}}


def sources(session, name: str, row: int, table: str, offset: int, limit: int) -> dict:
    """One page of the source rows of ``table`` behind row ``row`` of ``name``."""
    offset, limit = page_bounds(offset, limit)
    explained = explain(session, name, row, from_files=True)
    if table not in explained:
        have = ", ".join(explained) or "none"
        raise BadInput(f"row {row} of {name.lower()} has no source rows in table '{table}' (it has: {have})")
    return {"table": table, **_page(explained[table], explained.ids[table], offset, limit)}


def _page(frame, total: int, offset: int, limit: int) -> dict:
    """Rows ``offset`` to ``offset + limit`` of an explained table (ordered by ``_dl_id``)."""
    return {"columns": columns_of(frame), "total": total, "offset": offset,
            "rows": [{k: value(v) for k, v in r.items()} for r in records(frame, offset, limit)]}


def summary(session, name: str, row: int, k: int) -> dict:
    """The row's pattern summary (``summarize``), as its dataclasses' fields."""
    if not 1 <= k <= 10:
        raise BadInput(f"patterns must be between 1 and 10 (got {k})")
    return asdict(session.summarize(name, row, k))


def reasons(session, name: str, row: int, limit: int) -> list[dict]:
    """The reasons of the reason-capable UDFs on the row's path (none when its query calls none)."""
    if not session.udfs():
        return []
    return [{"udf": found.udf, "call": found.call, "inputs": found.inputs, "invocations": found.invocations,
             "columns": [str(c) for c in found.rows.columns],
             "rows": [{str(k): value(v) for k, v in r.items()}
                      for r in found.rows.head(limit).to_dict("records")]}
            for found in session.explain_reasons(name, row)]


def granules(session, name: str, row: int, on: str) -> dict:
    """The row's lineage on attribute values (``LINEAGE ON (on)``, decoded): per base table
    that has every expression's columns, each distinct combination of their values among the
    row's source rows, with how many rows have it."""
    from pyspark.errors import PySparkException
    from pyspark.sql import functions as F

    expressions = [e.strip() for e in on.split(",") if e.strip()]
    if not expressions:
        raise BadInput("LINEAGE ON needs at least one expression, e.g. year(o_orderdate), o_orderpriority")
    found = {}
    for table, frame in session.explain(name, row).items():
        try:
            grouped = frame.groupBy(*[F.expr(e).alias(e) for e in expressions]).count()
            rows = grouped.orderBy(*[F.col(f"`{e}`") for e in expressions]).collect()
        except PySparkException:
            continue  # the table does not provide these attributes: it contributes no granule
        found[table] = [{"values": {e: value(r[i]) for i, e in enumerate(expressions)}, "rows": r["count"]}
                        for r in rows]
    if not found:
        raise BadInput(f"no source table of row {row} of {name.lower()} has the columns of LINEAGE ON ({on})")
    return {"on": expressions, "tables": found}


def affected_rows(session, source: str, result: str | None, shown: int = IMPACT_SHOWN) -> dict:
    """The rows ``source`` ("TABLE WHERE PREDICATE") affected, per saved result (or in
    ``result`` alone): how many, and the first ``shown`` by ``_row`` with their DL narrowed to
    the bad ids."""
    answer, said = _impact_frames(session, source, result)
    results = {}
    for name, frame in answer.items():
        rows = [{**a, "DL": value(a["DL"]), "values": value(a["values"])} for a in _affected(frame)]
        columns = [c for c in columns_of(frame) if c not in (ROW, DL)]
        results[name] = {"count": len(rows), "columns": columns, "rows": rows[:shown]}
    return {"source": source, "results": results, "warnings": said}


def impact_export(session, source: str, result: str | None, fmt: str) -> str:
    """Every affected row, as JSON lines (``{"result", "_row", columns..., "DL"}``) or CSV
    (``result,_row,<every result's columns>,DL`` with DL as space-separated ids)."""
    if fmt not in ("csv", "json"):
        raise BadInput(f"export format must be csv or json (got '{fmt}')")
    answer, _ = _impact_frames(session, source, result)
    lines = [{"result": name, "_row": a["_row"], **a["values"], "DL": a["DL"]}
             for name, frame in answer.items() for a in _affected(frame)]
    if fmt == "json":
        return "".join(json.dumps(r, default=str) + "\n" for r in lines)
    columns = ["result", "_row", *dict.fromkeys(c for r in lines for c in r if c not in ("result", "_row", "DL")),
               "DL"]
    out = io.StringIO()
    writer = csv.DictWriter(out, columns, lineterminator="\n")
    writer.writeheader()
    writer.writerows({**r, "DL": " ".join(map(str, r["DL"]))} for r in lines)
    return out.getvalue()


def _impact_frames(session, source: str, result: str | None) -> tuple[dict, list[str]]:
    """``{result: affected rows}`` and the warnings the answer came with (one line each).
    Recorded one impact at a time: ``catch_warnings`` swaps the process's warning state (not
    per thread before Python 3.14), and impacts read from the files run side by side."""
    if not source.strip():
        raise BadInput("give a source: TABLE WHERE PREDICATE, e.g. orders WHERE o_orderkey = 1")
    with RECORDING_WARNINGS, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ImpactWarning)
        answer = impact(session, source, result=result or None, from_files=True)
    frames = answer if isinstance(answer, dict) else {session.store.get(result).name: answer}
    return frames, [str(w.message) for w in caught if issubclass(w.category, ImpactWarning)]


def _affected(frame) -> list[dict]:
    """An impact answer's rows by ``_row``: each its values and its narrowed DL, sorted."""
    found = []
    for record in sorted(records(frame), key=lambda r: r[ROW]):
        found.append({"_row": record.pop(ROW), "DL": sorted(int(i) for i in record.pop(DL) or []),
                      "values": {k: plain_value(v) for k, v in record.items()}})
    return found
