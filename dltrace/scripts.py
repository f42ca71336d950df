"""Self-contained scripts for ``spark-sql -f``: the views a lineage query reads, then the query.

A script runs without dltrace (``dltrace rewrite``), so each view is spelled out in SQL over
the catalog's Parquet: a table's rows with ``_dl_id`` (stored, or computed for in-place files),
a saved result's rows with its saved DL as ``_dl_lineage``.
"""

from __future__ import annotations

from dltrace.catalog import Catalog
from dltrace.errors import BadInput
from dltrace.plain import names_read
from dltrace.results import DL, ResultStore
from dltrace.rewriter.saved_result import LINEAGE_COLUMN, shared_view
from dltrace.table_data import backquoted, rows_sql

HEADER = ("-- dltrace: the catalog's tables and saved results as views (tables' rows with _dl_id, stored or"
          " computed for in-place files, results' rows their saved DL), then the query")


def spark_sql_script(catalog: Catalog, lineage_query: str) -> str:
    """``lineage_query`` (Spark SQL) preceded by a view for each table and saved result it reads."""
    read = names_read(lineage_query)
    lines = [HEADER]
    for name in sorted(read & set(catalog.tables)):
        lines.append(f"CREATE OR REPLACE TEMPORARY VIEW {name} AS {rows_sql(catalog, name)};")
    store = ResultStore(catalog)
    for result in store.list():
        if result.name not in read:
            continue
        if result.references or result.named_sets:
            what = "the rows of results it was computed from" if result.references else "its windows' sets per row"
            raise BadInput(f"saved result {result.name} names {what}, which a spark-sql script cannot resolve: "
                           f"inline its query as a CTE")
        path = backquoted(str(store.path(result.data)))
        columns = ", ".join(map(backquoted, result.query_columns))
        lines.append(f"CREATE OR REPLACE TEMPORARY VIEW {result.name} AS "
                     f"SELECT {columns}, array_compact({DL}) AS {LINEAGE_COLUMN} FROM parquet.{path};")
        if result.shared:
            shared = backquoted(str(store.path(result.shared)))
            lines.append(f"CREATE OR REPLACE TEMPORARY VIEW {shared_view(result.name)} AS "
                         f"SELECT * FROM parquet.{shared};")
    lines.append(lineage_query + ";")
    return "\n".join(lines) + "\n"
