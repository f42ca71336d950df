"""Rule: the result's lineage leaves the query as one column ``DL``.

The ``__dl`` columns of the outermost query become a single ``DL`` value (for sets: the
ids sorted ascending).  Spark computes a grouped query's SELECT list for every group
before HAVING drops most of them, so after a HAVING the value is assembled in a thin
projection above the query, for the surviving groups only.

>>> from dltrace.rewriter import rewrite_sql, PAPER_SCHEMA
>>> print(rewrite_sql("SELECT a.s_id, b.s_id FROM store a, store b WHERE a.s_name = b.s_name", PAPER_SCHEMA))
SELECT a.s_id AS s_id, b.s_id AS s_id, SORT_ARRAY(ARRAY_DISTINCT(ARRAY(a._dl_id, b._dl_id))) AS DL FROM store AS a INNER JOIN store AS b WHERE a.s_name = b.s_name
"""

from __future__ import annotations

from sqlglot import exp

from dltrace.rewriter.context import OUTPUT, RewriteContext, get_lineage
from dltrace.rewriter.set_operation import replace_lineage_columns
from dltrace.rewriter.terms import is_lineage_column

OUTER = "__dlout"

DL = "DL"
DISJOINT_ROWS = "dl_disjoint_rows"  # meta of the result: no id is in the DLs of two rows


def output(expression: exp.Expression, context: RewriteContext) -> exp.Expression:
    """Replace the outermost query's ``__dl`` columns by the final ``DL`` column."""
    query = expression.unnest()
    disjoint = all(term.unique for term in get_lineage(query, OUTPUT))
    if isinstance(query, exp.Select) and query.args.get("having"):
        expression = _after_having(query, context)
    else:
        replace_lineage_columns(query, lambda terms: [(DL, context.representation.output(terms, context.codes, context.ids_ordered_by_table))])
    expression.meta[DISJOINT_ROWS] = disjoint
    return expression


def _after_having(query: exp.Select, context: RewriteContext) -> exp.Select:
    """``SELECT cols, DL FROM (query) AS __dlout``.

    The query keeps its ORDER BY and LIMIT: Spark sorts and limits the rows before their
    (possibly large) DL values exist, and the projection above keeps the sorted order.
    """
    outputs = get_lineage(query, OUTPUT)
    names = [n for n in query.named_selects if not is_lineage_column(n)]
    terms = tuple(t if isinstance(t.sql, exp.Subquery) else t.at(exp.column(t.sql.name, table=OUTER)) for t in outputs)
    outer = exp.select(*[exp.column(n, table=OUTER) for n in names]).from_(query.subquery(OUTER, copy=False))
    outer.select(exp.alias_(context.representation.output(terms, context.codes, context.ids_ordered_by_table), DL), copy=False)
    return outer
