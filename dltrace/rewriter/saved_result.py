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

A result whose rows share lineage (``shared_sets``: it was stored once, see
``dltrace/results.py``) passes it on as a shared term, read once from the view
``__dl_shared_<name>`` over the stored sets, as an uncorrelated subquery's lineage is:

>>> print(rewrite_sql("SELECT n, count(*) AS cities FROM by_city GROUP BY n", schema, {"store": 1, "item": 2, "sales": 3},
...                   saved={"by_city": SavedLineage(frozenset({"store", "sales"}), shared_sets=1)}))
SELECT by_city.n AS n, COUNT(*) AS cities, SORT_ARRAY(ARRAY_DISTINCT(CONCAT(ARRAY_DISTINCT(FLATTEN(COLLECT_LIST(by_city._dl_lineage))), (SELECT SORT_ARRAY(COLLECT_LIST(id)) AS __dl FROM __dl_shared_by_city)))) AS DL FROM by_city AS by_city GROUP BY by_city.n

When a step is saved, the rows it reads from a saved result are named instead: their lineage
is held once, in the result that computed it (``reference``, ``dltrace/results.py``), and a
row's name is one id, ``(code << 48) | _row``, distinct per row like a table's row id:

>>> print(rewrite_sql("SELECT s_name, n FROM store JOIN by_city USING (city)", schema,
...                   {"store": 1, "item": 2, "sales": 3, "by_city": 16384},
...                   saved={"by_city": SavedLineage(frozenset({"store", "sales"}), reference=16384)}))
SELECT store.s_name AS s_name, by_city.n AS n, ARRAY(store._dl_id, (by_city._dl_row + 4611686018427387904)) AS DL FROM store AS store JOIN by_city AS by_city ON store.city = by_city.city
"""  # noqa: E501

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from dltrace.ids import ROW_BITS
from dltrace.rewriter.context import RewriteContext
from dltrace.rewriter.terms import Kind, Term

LINEAGE_COLUMN = "_dl_lineage"  # the saved DL, as the view over a saved result names it
ROW_COLUMN = "_dl_row"  # the saved row's number (``_row``), as the view names it


@dataclass(frozen=True)
class SavedLineage:
    """What the rewriter knows of a saved result's lineage."""

    tables: frozenset[str]  # the base tables its ids come from
    disjoint: bool = False  # no own id is in the DLs of two of its rows
    shared_sets: int = 0  # how many sets all its rows share, stored once (the view shared_view(name))
    # when saving a step: the rows read are named, ``(reference << 48) | _row``, instead of
    # carrying their lineage (dltrace/results.py, "References"); the code is ``codes[name]``
    reference: int | None = None


def shared_view(result: str) -> str:
    """The view over a saved result's shared sets, ``(set_id, id)``."""
    return f"__dl_shared_{result.lower()}"


def saved_result(table: exp.Table, context: RewriteContext) -> tuple[Term, ...]:
    """The lineage a saved result contributes to the scope that reads it: its rows' DLs."""
    lineage = context.saved[table.name.lower()]
    if not lineage.tables:
        return ()
    if lineage.reference is not None:
        name = exp.column(ROW_COLUMN, table=table.alias_or_name)
        code = exp.Literal.number(lineage.reference << ROW_BITS)
        return (Term(exp.Paren(this=exp.Add(this=name, expression=code)), Kind.ID, frozenset({table.name.lower()}),
                     unique=True, source=table.alias_or_name),)
    own = Term(exp.column(LINEAGE_COLUMN, table=table.alias_or_name), Kind.IDS, lineage.tables,
               unique=lineage.disjoint, source=table.alias_or_name)
    if not lineage.shared_sets:
        return (own,)
    collect = "COLLECT_LIST" if lineage.shared_sets == 1 else "COLLECT_SET"  # sets may overlap
    shared = exp.Subquery(this=exp.select(f"SORT_ARRAY({collect}(id)) AS __dl").from_(shared_view(table.name)))
    return own, Term(shared, Kind.IDS, lineage.tables, shared=True)
