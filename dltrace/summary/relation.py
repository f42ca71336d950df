"""Lineage as a relation: views over a saved result that lineage-consuming queries (SMOKE's
term) read with plain SQL, in a PySpark session or in Spark's own ``spark-sql``.

For saved result ``q3`` (reading orders, customer, lineitem)::

    lineage_q3            (_row, base_table, base_id)   one row per id in each row's DL
    lineage_q3_lineitem   (_row, _dl_id, l_orderkey, ...)   the lineage joined to lineitem's
                                                        rows, as of the version q3 read
    lineage_q3_orders, lineage_q3_customer             likewise

Views rather than a table-valued function: Spark SQL has no SQL-defined table functions,
and a Python UDTF would not run in ``spark-sql``; views are plain SQL over the catalog's
Parquet, so the same statements serve ``LineageSession.lineage_views`` and the script
``dltrace lineage-sql`` prints.  Filters on ``_row`` reach the scan of the saved rows when
the result was written in one partition (``_row`` is ``_pos`` itself); in several, ``_row``
is computed from ``_pos`` and Spark cannot push a filter on it into the scan.
"""

from __future__ import annotations

from dltrace.catalog import ID_COLUMN
from dltrace.errors import BadInput
from dltrace.ids import FIRST_REFERENCE_ID, ROW_BITS
from dltrace.results import (
    DL,
    ROW,
    SHARED_ID,
    SHARED_REFS,
    SHARED_SCHEMA,
    SHARED_SET,
    ResultStore,
    SavedResult,
)
from dltrace.summary.patterns import quote
from dltrace.summary.stored import require_lineage
from dltrace.table_data import backquoted, read_parquet, rows_sql, table_rows

SHARED = "*shared"  # in _sources: the helper view over the shared sets (no table has this name)
TABLE = "base_table"
ID = "base_id"


def relation_name(result: str) -> str:
    """The relation's view name (saved results share one namespace with tables).

    >>> relation_name("q3")
    'lineage_q3'
    """
    return f"lineage_{result}"


def _prefix(saved: SavedResult, upstream: bool) -> str:
    """The helper views' infix: the result's name, and for an upstream save its stamp too
    (a step may name the rows of an earlier save of a result saved again since)."""
    return f"{saved.name}__{''.join(c if c.isalnum() else '_' for c in saved.stamp)}" if upstream else saved.name


def _sources(
    session, saved: SavedResult, upstream: bool = False
) -> dict[str, tuple[str, str, dict | None, list[str]]]:
    """``{helper view: (table or "" or SHARED, Parquet path, schema, its columns as SQL)}`` the
    lineage views read: the saved rows (``_row`` derived from ``_pos``), their shared sets,
    each base table at the data version the result was computed from, and the same for the
    upstream saves whose rows it names."""
    catalog = session.catalog
    store = ResultStore(catalog)
    prefix = _prefix(saved, upstream)
    sources = {f"__dl_rows_{prefix}": ("", str(store.path(saved.data)), saved.schema, saved.rows_sql())}
    if saved.shared:
        sources[f"__dl_shared_rows_{prefix}"] = (SHARED, str(store.path(saved.shared)), SHARED_SCHEMA, ["*"])
    for named, _ in store.referenced(saved):
        sources.update(_sources(session, named, upstream=True))
    for table, version in sorted(saved.base_versions.items()):
        if table in catalog.tables:
            entry = catalog.entry(table)
            sources[f"__dl_{table}_v{version}"] = (
                table,
                str(catalog.data_path(table, version)),
                entry.version_schema(version),
                ["*"],
            )
    return sources


def _relation_statements(session, saved: SavedResult, upstream: bool = False) -> list[tuple[str, str]]:
    """``(view, SELECT ...)`` of ``saved``'s relation ``(_row, base_table, base_id)``, after
    those of the upstream saves whose rows its DLs name (each such row stands for its whole
    DL: dltrace/results.py, "References")."""
    catalog = session.catalog
    store = ResultStore(catalog)
    prefix = _prefix(saved, upstream)
    rows_view, shared_view = f"__dl_rows_{prefix}", f"__dl_shared_rows_{prefix}"
    relation = f"__dl_lineage_{prefix}" if upstream else relation_name(saved.name)
    tables = [t for t in sorted(saved.base_versions) if t in catalog.tables]
    names = " ".join(f"WHEN {catalog.entry(t).code} THEN '{t}'" for t in tables)
    table_of = f"CASE shiftright({{id}}, {ROW_BITS}) {names} END AS {TABLE}"
    select = (f"SELECT r.{ROW}, {table_of.format(id=f'e.{ID}')}, e.{ID} "
              f"FROM {rows_view} AS r LATERAL VIEW explode(r.{DL}) e AS {ID}")
    statements = []
    if saved.references:
        select += f" WHERE e.{ID} < {FIRST_REFERENCE_ID}"
    for named, code in store.referenced(saved):
        statements += _relation_statements(session, named, upstream=True)
        named_rows = f"SELECT r.{ROW}, e.{ID} FROM {rows_view} AS r LATERAL VIEW explode(r.{DL}) e AS {ID}"
        select += (f" UNION SELECT n.{ROW}, u.{TABLE}, u.{ID} FROM ({named_rows}) AS n "
                   f"JOIN {statements[-1][0]} AS u ON n.{ID} = u.{ROW} + {code << ROW_BITS}")
    if saved.shared:  # and the ids of the shared sets each row names
        select += (f" UNION{'' if saved.references else ' ALL'} SELECT r.{ROW}, "
                   f"{table_of.format(id=f's.{SHARED_ID}')}, s.{SHARED_ID} AS {ID} "
                   f"FROM {rows_view} AS r JOIN {shared_view} AS s ON array_contains(r.{SHARED_REFS}, s.{SHARED_SET})")
    return [*statements, (relation, select)]


def lineage_statements(session, saved: SavedResult) -> list[tuple[str, str]]:
    """``(view, SELECT ...)`` for the relation and each table's joined view, in the order they
    must be defined; they read the helper views of ``_sources``."""
    require_lineage(saved)
    catalog = session.catalog
    sources = _sources(session, saved)
    tables = {t: f"__dl_{t}_v{saved.base_versions[t]}" for v, (t, _, _, _) in sources.items() if t and t != SHARED}
    statements = _relation_statements(session, saved)
    relation = statements[-1][0]
    for table, view in tables.items():
        code = catalog.entry(table).code
        schema = catalog.entry(table).version_schema(saved.base_versions[table]) or {}
        columns = ", ".join(f"t.{quote(c)}" for c in [ID_COLUMN, *(c for c in schema if c != ID_COLUMN)])
        statements.append((f"{relation}_{table}", (
            f"SELECT l.{ROW}, {columns} FROM {relation} AS l JOIN {view} AS t ON t.{ID_COLUMN} = l.{ID} "
            f"WHERE l.{ID} BETWEEN {code << ROW_BITS} AND {((code + 1) << ROW_BITS) - 1}"
        )))
    _check_names(session, [name for name, _ in statements])
    return statements


def _check_names(session, views: list[str]) -> None:
    """Views must not hide a registered table or a saved result of the same name."""
    taken = set(session.catalog.tables) | {r.name for r in ResultStore(session.catalog).list()}
    clash = sorted(set(views) & taken)
    if clash:
        raise BadInput(f"the lineage view {clash[0]} would hide the table or result of that name: rename it")


def define_views(session, results: list[str]) -> list[str]:
    """Define the lineage views of saved ``results`` in the session's Spark; their names."""
    store = ResultStore(session.catalog)
    defined = []
    for name in results:
        saved = store.get(name)
        statements = lineage_statements(session, saved)
        for view, (table, path, schema, columns) in _sources(session, saved).items():
            if table and table != SHARED:  # a base table's rows, copied or in place
                table_rows(session.spark, session.catalog, table, saved.base_versions[table]).createOrReplaceTempView(
                    view
                )
            else:
                read_parquet(session.spark, path, schema).selectExpr(*columns).createOrReplaceTempView(view)
        for view, select in statements:
            session.spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW {view} AS {select}")
            defined.append(view)
    return defined


def script(session, results: list[str], query: str | None = None) -> str:
    """The same views as a ``spark-sql`` script over the Parquet files, then ``query``."""
    store = ResultStore(session.catalog)
    lines = ["-- dltrace: lineage of saved results as views (_row, base_table, base_id) and joined to each base table"]
    for name in results:
        saved = store.get(name)
        statements = lineage_statements(session, saved)
        for view, (table, path, _, columns) in _sources(session, saved).items():
            select = (
                rows_sql(session.catalog, table, saved.base_versions[table])
                if table and table != SHARED
                else f"SELECT {', '.join(columns)} FROM parquet.{backquoted(path)}"
            )
            lines.append(f"CREATE OR REPLACE TEMPORARY VIEW {view} AS {select};")
        lines += [f"CREATE OR REPLACE TEMPORARY VIEW {view} AS {select};" for view, select in statements]
    if query:
        lines.append(query.strip().rstrip(";") + ";")
    return "\n".join(lines) + "\n"
