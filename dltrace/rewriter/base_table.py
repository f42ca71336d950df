"""Rule: base tables.  ``R -> <R, DL>`` with ``DL = {id(t)}`` (paper §3.3, first rule).

Every registered table carries its ids in the ``_dl_id`` column, so a table in FROM
contributes one ``ID`` term: its alias's ``_dl_id``.

>>> from dltrace.rewriter import rewrite_sql, PAPER_SCHEMA
>>> print(rewrite_sql("SELECT s_name FROM store WHERE city = 'Albany'", PAPER_SCHEMA))
SELECT store.s_name AS s_name, ARRAY(store._dl_id) AS DL FROM store AS store WHERE store.city = 'Albany'

Where the ids come from is the context's ``id_source``: ``row_ids`` by default, and
``tagged_row_ids`` for tests, which adds each table occurrence's number in the id's top
bits so that lineage follows the paper's tree definition (§3.1).
"""

from __future__ import annotations

from sqlglot import exp

from dltrace.catalog import ID_COLUMN
from dltrace.rewriter.context import INSTANCE, RewriteContext
from dltrace.rewriter.terms import Kind, Term

INSTANCE_SHIFT = 56  # above the table codes (< 256) that tagged tests use


def number_instances(expression: exp.Expression, context: RewriteContext) -> exp.Expression:
    """Number the occurrences of each table (0, 1, ...) in the order a tree walk meets them;
    copies made later keep their original's number."""
    seen: dict[str, int] = {}
    for table in expression.find_all(exp.Table):
        name = table.name.lower()
        if name in context.codes:
            table.meta[INSTANCE] = seen.get(name, 0)
            seen[name] = seen.get(name, 0) + 1
    return expression


def is_catalog_table(node: exp.Expression, context: RewriteContext) -> bool:
    """A table of the catalog, whose rows carry ``_dl_id`` (not a saved result or a CTE)."""
    if not isinstance(node, exp.Table) or node.args.get("db") or not isinstance(node.this, exp.Identifier):
        return False
    name = node.name.lower()
    return name in context.codes and name not in context.saved


def row_ids(table: exp.Table) -> tuple[exp.Expression, bool]:
    """Each row's own id."""
    return exp.column(ID_COLUMN, table=table.alias_or_name), False


def tagged_row_ids(table: exp.Table) -> tuple[exp.Expression, bool]:
    """Each row's id plus its table occurrence's number in the top bits (tests only)."""
    dl_id, nullable = row_ids(table)
    tag = exp.Literal.number(table.meta[INSTANCE] << INSTANCE_SHIFT)
    return exp.Paren(this=exp.Add(this=dl_id, expression=tag)), nullable


def base_table(table: exp.Table, context: RewriteContext) -> tuple[Term, ...]:
    """The lineage a registered table contributes to the scope that reads it."""
    source = (context.id_source or row_ids)(table)
    if source is None:
        return ()
    dl_id, nullable = source
    # row ids (not granule ids, which many rows share) identify the row they come from
    return (Term(dl_id, Kind.ID, frozenset({table.name.lower()}), nullable=nullable,
                 unique=context.ids_ordered_by_table, source=table.alias_or_name),)
