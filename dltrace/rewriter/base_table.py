"""Rule: base tables.  ``R -> <R, DL>`` with ``DL = {id(t)}`` (paper §3.3, first rule).

Every registered table carries its ids in the ``_dl_id`` column, so a table in FROM
contributes one ``ID`` term: its alias's ``_dl_id``.

>>> from dltrace.rewriter import rewrite_sql, PAPER_SCHEMA
>>> print(rewrite_sql("SELECT s_name FROM store WHERE city = 'Albany'", PAPER_SCHEMA))
SELECT store.s_name AS s_name, ARRAY(store._dl_id) AS DL FROM store AS store WHERE store.city = 'Albany'
"""

from __future__ import annotations

from sqlglot import exp
from sqlglot.optimizer.scope import Scope

from dltrace.catalog import ID_COLUMN
from dltrace.rewriter.context import RewriteContext
from dltrace.rewriter.terms import Kind, Term


def base_table(table: exp.Table, scope: Scope, context: RewriteContext) -> tuple[Term, ...]:
    """The lineage a registered table contributes to the scope that reads it."""
    alias = table.alias_or_name
    return (Term(exp.column(ID_COLUMN, table=alias), Kind.ID, frozenset({table.name.lower()})),)
