"""The lineage explorer's answers as JSON-ready values, from the Python API, and read from
the catalog's files by pyarrow where they give what Spark would: the pipeline, why a row is
what it is and impacts (pages of rows are ``ui.pages``'s) (``explain`` and ``impact``
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

from dltrace.dataframe import runs
from dltrace.errors import BadInput
from dltrace.formatting import plain_value
from dltrace.impact import ImpactWarning, explain, impact, parse_source, search
from dltrace.impact.search import warn_if_stale
from dltrace.plain import names_read
from dltrace.result_pages import columns_of, records
from dltrace.results import DL, ROW
from dltrace.ui.pages import Remember, computed, key_example
from dltrace.ui.values import page_bounds, value

IMPACT_SHOWN = 200  # affected rows shown per result; the export has them all
RECORDING_WARNINGS = threading.Lock()  # one impact's warnings recorded at a time (_impact_frames)


def pipeline(session) -> dict:
    """Tables, saved results and views as nodes, each with the names it reads as edges, and the
    stale results with why.  Reads catalog files only (no Spark)."""
    tables = session.catalog.tables
    saved = session.saved_results()
    views = session.views()
    stale = session.stale_results()
    nodes = [{"id": name, "kind": "table", "rows": entry.rows, "version": entry.version, "key": entry.key,
              "source": entry.source, "registered_at": entry.registered_at, "columns": list(entry.schema),
              "example": key_example(session, name)}
             for name, entry in sorted(tables.items())]
    edges, of_run = [], runs.runs_by_result(session.catalog)
    for name, result in sorted(saved.items()):
        nodes.append({"id": name, "kind": "result", "rows": result.rows, "stamp": result.stamp,
                      "created_at": result.created_at, "semantics": result.semantics, "query": result.query,
                      "inputs": {**{t: f"v{v}" for t, v in result.tables.items()}, **dict(result.results)},
                      "stale": stale.get(name), "columns": list(result.columns),
                      "lineage_tables": sorted(result.lineage_tables), "pruned_at": result.pruned_at,
                      "run": asdict(of_run[name]) if name in of_run else None})
        edges += [{"from": source, "to": name} for source in [*result.tables, *result.results]]
    known = set(tables) | set(saved) | set(views)
    for name, query in sorted(views.items()):
        read = sorted(names_read(query) & known - {name})  # a view that no longer parses: none
        nodes.append({"id": name, "kind": "view", "query": query})
        edges += [{"from": source, "to": name} for source in read]
    return {"catalog": str(session.catalog.directory), "version": session.catalog.version, "nodes": nodes,
            "edges": edges, "stale": stale}


def why(session, name: str, row: int, limit: int) -> dict:
    """Why row ``row`` of ``name`` is what it is, but its summary: how many ids each table
    gave, the saved results it went through, and the first page of its source rows per table."""
    saved = session.store.get(name)
    explained = explain(session, saved.name, row, from_files=True, page=(0, limit))
    return {"result": saved.name, "row": row, "ids": dict(explained.ids), "through": session.store.upstream(saved.name),
            "tables": {table: _page(frame, explained.ids[table], 0) for table, frame in explained.items()}}


def sources(session, name: str, row: int, table: str, offset: int, limit: int) -> dict:
    """One page of the source rows of ``table`` behind row ``row`` of ``name``."""
    offset, limit = page_bounds(offset, limit)
    explained = explain(session, name, row, from_files=True, page=(offset, limit))
    if table not in explained:
        have = ", ".join(explained) or "none"
        raise BadInput(f"row {row} of {name.lower()} has no source rows in table '{table}' (it has: {have})")
    return {"table": table, **_page(explained[table], explained.ids[table], offset)}


def _page(frame, total: int, offset: int) -> dict:
    """A page of an explained table's rows (``explain``'s ``page``, ordered by ``_dl_id``),
    ``offset`` on of its ``total``."""
    return {"columns": columns_of(frame), "total": total, "offset": offset,
            "rows": [{k: value(v) for k, v in r.items()} for r in records(frame)]}


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


def affected_rows(session, source: str, result: str | None, shown: int = IMPACT_SHOWN,
                  remember: Remember = computed) -> dict:
    """The rows ``source`` ("TABLE WHERE PREDICATE") affected, per saved result (or in
    ``result`` alone): how many, and the first ``shown`` by ``_row`` with their DL narrowed to
    the bad ids.  The bad ids of one result's answer are kept (``remember``) for the next's:
    the page asks result after result, to show how far it got."""
    answer, said = _impact_frames(session, source, result, remember)
    results, of_run = {}, runs.runs_by_result(session.catalog)
    for name, frame in answer.items():
        rows = [{**a, "DL": value(a["DL"]), "values": value(a["values"])} for a in _affected(frame)]
        columns = [c for c in columns_of(frame) if c not in (ROW, DL)]
        run = of_run.get(name)
        results[name] = {"count": len(rows), "columns": columns, "rows": rows[:shown], "run": run and run.label()}
    return {"source": source, "results": results, "warnings": said}


def impact_export(session, source: str, result: str | None, fmt: str) -> str:
    """Every affected row, as JSON lines (``{"result", "_row", columns..., "DL"}``) or CSV
    (``result,_row,<every result's columns>,DL`` with DL as space-separated ids)."""
    if fmt not in ("csv", "json"):
        raise BadInput(f"export format must be csv or json (got '{fmt}')")
    answer, _ = _impact_frames(session, source, result, computed)
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


def _impact_frames(session, source: str, result: str | None, remember: Remember) -> tuple[dict, list[str]]:
    """``{result: affected rows}`` and the warnings the answer came with (one line each).
    Recorded one impact at a time: ``catch_warnings`` swaps the process's warning state (not
    per thread before Python 3.14), and impacts read from the files run side by side."""
    if not source.strip():
        raise BadInput("give a source: TABLE WHERE PREDICATE, e.g. orders WHERE o_orderkey = 1")
    with RECORDING_WARNINGS, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ImpactWarning)
        frames = _in_one(session, source, result, remember) if result else impact(session, source, from_files=True)
    return frames, [str(w.message) for w in caught if issubclass(w.category, ImpactWarning)]


def _in_one(session, text: str, result: str, remember: Remember) -> dict:
    """``{result: its affected rows}``, as ``impact(..., result=result)`` answers, the bad ids
    kept by the source's text and its table's data."""
    source = parse_source(text, session.catalog)
    saved = session.store.get(result)
    warn_if_stale(session, saved, source, "stored")
    search.warn_if_past_retention(session.store, [saved])
    entry = session.catalog.entry(source.table)
    key = ("bad ids", session.catalog.version, entry.version, entry.registered_at, source.text)
    ids = remember(key, lambda: search.bad_ids(session, source, from_files=True))
    return {saved.name: search.stored_impact(session, source, saved, from_files=True, ids=ids)}


def _affected(frame) -> list[dict]:
    """An impact answer's rows by ``_row``: each its values and its narrowed DL, sorted."""
    found = []
    for record in sorted(records(frame), key=lambda r: r[ROW]):
        found.append({"_row": record.pop(ROW), "DL": sorted(int(i) for i in record.pop(DL) or []),
                      "values": {k: plain_value(v) for k, v in record.items()}})
    return found
