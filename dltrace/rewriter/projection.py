"""Rule: projection.  ``SELECT A FROM V``: each output row keeps ``V.DL`` (paper §3.3); the
rows' lineage terms are appended to the SELECT list as ``__dl`` columns so the enclosing
query can read them.  ORDER BY and LIMIT select rows and leave their DL unchanged.

A shared term (an uncorrelated subquery's lineage, the same set on every row) is not copied
into every row: it travels on as the same scalar subquery, evaluated once, and is only
spelled out in the final ``DL``.

>>> from dltrace.rewriter import rewrite_sql, PAPER_SCHEMA
>>> print(rewrite_sql("SELECT i_name FROM (SELECT i_name FROM item ORDER BY i_id LIMIT 2) AS t", PAPER_SCHEMA))
SELECT t.i_name AS i_name, ARRAY(t.__dl0) AS DL FROM (SELECT item.i_name AS i_name, item._dl_id AS __dl0 FROM item AS item ORDER BY item.i_id LIMIT 2) AS t
"""  # noqa: E501

from __future__ import annotations

from dataclasses import replace

from sqlglot import exp

from dltrace.rewriter.context import RewriteContext
from dltrace.rewriter.generator import is_generator
from dltrace.rewriter.terms import Term, lineage_column


def is_symbolic(term: Term, context: RewriteContext) -> bool:
    """A shared scalar subquery that reads only names visible everywhere in the query."""
    return (
        term.shared
        and isinstance(term.sql, exp.Subquery)
        and all(t.name.lower() in context.global_names for t in term.sql.find_all(exp.Table))
    )


def projection(select: exp.Expression, context: RewriteContext) -> exp.Expression:
    """Expose the rows' lineage terms as ``__dl0, __dl1, ...`` columns."""
    if not isinstance(select, exp.Select):
        return select
    lineage = context.lineage.of(select)
    rows = lineage.rows
    generates = any(is_generator(e.this if isinstance(e, (exp.Alias, exp.Aliases)) else e) for e in select.expressions)
    output = []
    for index, term in enumerate(rows):
        if is_symbolic(term, context):
            output.append(term)
            continue
        name = lineage_column(index)
        select.append("expressions", exp.alias_(term.sql, name))
        # a generator in the SELECT list repeats the row and its lineage (generator)
        output.append(replace(term, sql=exp.column(name), shared=False, unique=term.unique and not generates))
    lineage.projected, lineage.output = rows, tuple(output)
    return select
