"""Rule: subqueries in FROM, CTEs and views are handled recursively, as if inlined.

The inner query was rewritten first (scopes are visited innermost first) and exposes its
lineage as ``__dl`` columns; the outer query reads them through the source's alias.  A CTE
used twice is rewritten once and read twice.

>>> from dltrace.rewriter import rewrite_sql, PAPER_SCHEMA
>>> print(rewrite_sql("WITH ca AS (SELECT s_id FROM store WHERE state = 'CA') "
...                   "SELECT t_id FROM sales, ca WHERE sales.s_id = ca.s_id", PAPER_SCHEMA))
WITH ca AS (SELECT store.s_id AS s_id, store._dl_id AS __dl0 FROM store AS store WHERE store.state = 'CA') SELECT sales.t_id AS t_id, ARRAY(ca.__dl0, sales._dl_id) AS DL FROM sales AS sales INNER JOIN ca AS ca WHERE sales.s_id = ca.s_id
"""  # noqa: E501

from __future__ import annotations

from sqlglot import exp
from sqlglot.optimizer.scope import Scope

from dltrace.rewriter.context import RewriteContext
from dltrace.rewriter.terms import Term


def derived_table(alias: str, source: Scope, context: RewriteContext) -> tuple[Term, ...]:
    """The lineage of a rewritten subquery or CTE, read through ``alias`` (a shared
    subquery term is passed on as it is)."""
    return tuple(
        term if isinstance(term.sql, exp.Subquery) else term.at(exp.column(term.sql.name, table=alias))
        for term in context.lineage.of(source.expression).output
    )
