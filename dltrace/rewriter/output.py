"""Rule: the result's lineage leaves the query as one column ``DL``.

The ``__dl`` columns of the outermost query become a single ``DL`` value (for sets: the
ids sorted ascending).

>>> from dltrace.rewriter import rewrite_sql, PAPER_SCHEMA
>>> print(rewrite_sql("SELECT a.s_id, b.s_id FROM store a, store b WHERE a.s_name = b.s_name", PAPER_SCHEMA))
SELECT a.s_id AS s_id, b.s_id AS s_id, SORT_ARRAY(ARRAY_DISTINCT(ARRAY(a._dl_id, b._dl_id))) AS DL FROM store AS a CROSS JOIN store AS b WHERE a.s_name = b.s_name
"""

from __future__ import annotations

from sqlglot import exp

from dltrace.rewriter.context import RewriteContext
from dltrace.rewriter.set_operation import replace_lineage_columns

DL = "DL"


def output(expression: exp.Expression, context: RewriteContext) -> exp.Expression:
    """Replace the outermost query's ``__dl`` columns by the final ``DL`` column."""
    replace_lineage_columns(
        expression.unnest(), lambda terms: [(DL, context.representation.output(terms, context.codes))]
    )
    return expression
