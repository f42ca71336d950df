"""Rule: a saved result read as a source (a pipeline step).  ``DL = saved DL(t)``.

A saved result's rows carry the lineage they were saved with, base-row ids, in a hidden
column (``_dl_lineage`` in the view dltrace defines over the saved rows), so reading a
result is like reading a view over the base tables (paper §2: lineage maps view rows to
base rows) and lineage composes: a downstream row's DL is the DLUNION of the saved DLs of
the rows it derives from, exactly as if the step's query were inlined as a CTE.

The saved DL is a native set (``array<bigint>``, distinct ids) over the base tables the
result's lineage reaches.  When no id is in two saved rows' DLs (the saving query's lineage
terms were all ``unique``: e.g. rows grouped by a table's key), DLUNION over them needs no
deduplication, as for a table's own ids.

>>> from dltrace.rewriter import rewrite_sql, PAPER_SCHEMA
>>> schema = {**PAPER_SCHEMA, "by_city": {"city": "string", "n": "bigint"}}
>>> print(rewrite_sql("SELECT count(*) AS cities FROM by_city WHERE n > 10", schema,
...                   {"store": 1, "item": 2, "sales": 3}, saved={"by_city": SavedLineage(frozenset({"store", "sales"}))}))
SELECT COUNT(*) AS cities, SORT_ARRAY(ARRAY_DISTINCT(FLATTEN(COLLECT_LIST(by_city._dl_lineage)))) AS DL FROM by_city AS by_city WHERE by_city.n > 10
>>> print(rewrite_sql("SELECT s_name, n FROM store JOIN by_city USING (city)", schema,
...                   {"store": 1, "item": 2, "sales": 3}, saved={"by_city": SavedLineage(frozenset({"store", "sales"}))}))
SELECT store.s_name AS s_name, by_city.n AS n, SORT_ARRAY(ARRAY_DISTINCT(CONCAT(ARRAY(store._dl_id), by_city._dl_lineage))) AS DL FROM store AS store JOIN by_city AS by_city ON store.city = by_city.city
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from dltrace.rewriter.context import RewriteContext
from dltrace.rewriter.terms import Kind, Term

LINEAGE_COLUMN = "_dl_lineage"  # the saved DL, as the view over a saved result names it


@dataclass(frozen=True)
class SavedLineage:
    """What the rewriter knows of a saved result's lineage."""

    tables: frozenset[str]  # the base tables its ids come from
    disjoint: bool = False  # no id is in the DLs of two of its rows


def saved_result(table: exp.Table, context: RewriteContext) -> tuple[Term, ...]:
    """The lineage a saved result contributes to the scope that reads it: its rows' DLs."""
    lineage = context.saved[table.name.lower()]
    if not lineage.tables:
        return ()
    return (Term(exp.column(LINEAGE_COLUMN, table=table.alias_or_name), Kind.IDS, lineage.tables,
                 unique=lineage.disjoint, source=table.alias_or_name),)
