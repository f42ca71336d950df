"""Speed-up rules for uncorrelated lineage copies: each is computed once for every row, and one
that reads the rows its SELECT groups stands in for their own lineage.

``hoist_uncorrelated_copies``: an uncorrelated copy is the same set on every row.  Sorted
once, it travels as a *shared* term, the same scalar subquery that Spark evaluates once:
rows do not carry it through joins and groups, and the sort of a row's DL over it is nearly
free.  Without the rule the copy is an ordinary term, the same lineage computed per row:

>>> from dltrace.rewriter import rewrite_sql, without, PAPER_SCHEMA
>>> query = "SELECT s_id, COUNT(*) AS n FROM sales WHERE num > (SELECT AVG(num) FROM sales) GROUP BY s_id"
>>> print(rewrite_sql(query, PAPER_SCHEMA))
SELECT sales.s_id AS s_id, COUNT(*) AS n, SORT_ARRAY(ARRAY_DISTINCT(CONCAT(COLLECT_LIST(sales._dl_id), (SELECT SORT_ARRAY(COLLECT_LIST(sales._dl_id)) AS __dl FROM sales AS sales)))) AS DL FROM sales AS sales WHERE sales.num > (SELECT AVG(sales.num) AS _col_0 FROM sales AS sales) GROUP BY sales.s_id
>>> print(rewrite_sql(query, PAPER_SCHEMA, rules=without("hoist_uncorrelated_copies")))
SELECT sales.s_id AS s_id, COUNT(*) AS n, SORT_ARRAY(ARRAY_DISTINCT(CONCAT(COLLECT_LIST(sales._dl_id), ARRAY_DISTINCT(FLATTEN(COLLECT_LIST((SELECT COLLECT_LIST(sales._dl_id) AS __dl FROM sales AS sales))))))) AS DL FROM sales AS sales WHERE sales.num > (SELECT AVG(sales.num) AS _col_0 FROM sales AS sales) GROUP BY sales.s_id

``mark_subsuming_copies`` (HAVING subsumption): when a HAVING or SELECT-list copy reads
exactly the rows its SELECT groups (the same FROM, joins and WHERE, as TPC-H Q11's HAVING),
every id of every group is in the copy's lineage, which alone is each group's union with
it (``subquery_value`` drops the groups' own).  With occurrence-tagged ids (the tree
definition) the two differ and both are kept.
"""  # noqa: E501

from __future__ import annotations

from dataclasses import replace

from sqlglot import exp

from dltrace.rewriter.context import CLAUSE, RewriteContext
from dltrace.rewriter.dialect import SPARK
from dltrace.rewriter.representation import call
from dltrace.rewriter.subquery_copies import is_lineage_copy


def hoist_uncorrelated_copies(query: exp.Expression, context: RewriteContext) -> exp.Expression:
    """Sort an uncorrelated copy (already the DLUNION of its rows) once, and share it."""
    lineage = context.lineage.of(query)
    if not is_lineage_copy(query) or not lineage.output or context.scope.is_correlated_subquery:
        return query
    (term,) = lineage.output
    value = term.sql.this.expressions[0]  # the copy's one column, __dl
    if isinstance(value, exp.Subquery):  # ``(a shared set's subquery) AS __dl``: hoisted, sorted already
        value.replace(exp.alias_(exp.Subquery(this=value.this), value.alias))
    else:
        value.set("this", call("sort_array", value.this))
    lineage.output = (replace(term, shared=True),)
    return query


def mark_subsuming_copies(query: exp.Expression, context: RewriteContext) -> exp.Expression:
    """Mark a HAVING or SELECT-list copy that reads the rows its SELECT groups (before the
    copy's other rules change its WHERE)."""
    if query.meta.get(CLAUSE) not in ("having", "expressions") or context.id_source is not None:
        return query
    select = context.scope.parent.expression
    if isinstance(query, exp.Select) and not context.scope.is_correlated_subquery and _rows(query) == _rows(select):
        context.lineage.of(query).subsumes = True
    return query


def _rows(query: exp.Select) -> list[str | None]:
    """What decides the rows ``query`` reads: its FROM, joins and WHERE."""
    parts = [query.args.get("from_"), *(query.args.get("joins") or []), query.args.get("where")]
    return [part.sql(dialect=SPARK) if part is not None else None for part in parts]
