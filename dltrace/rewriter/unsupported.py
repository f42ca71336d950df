"""Rule: refuse what cannot be given exact lineage yet, naming the construct and its place.

A whitelist would be too blunt for SQL expressions, so this lists the constructs that
change which rows exist or which rows a row depends on; everything else (arithmetic,
CASE, scalar functions, casts) leaves a row's DL unchanged.

>>> from dltrace.rewriter import rewrite_sql, PAPER_SCHEMA
>>> rewrite_sql("SELECT s_id FROM store WHERE s_id IN (SELECT s_id FROM sales)", PAPER_SCHEMA)
Traceback (most recent call last):
  ...
dltrace.errors.UnsupportedLineage: a subquery in an expression is not supported yet: (SELECT sales.s_id AS s_id FROM sales AS sales)
"""

from __future__ import annotations

from sqlglot import exp

from dltrace.rewriter.context import unsupported

REFUSED: tuple[tuple[type[exp.Expression], str], ...] = (
    (exp.Window, "a window function"),
    (exp.Intersect, "INTERSECT"),
    (exp.Except, "EXCEPT"),
    (exp.Lateral, "LATERAL / LATERAL VIEW"),
    (exp.Pivot, "PIVOT / UNPIVOT"),
    (exp.Values, "a VALUES list"),
    (exp.TableSample, "TABLESAMPLE"),
    (exp.Explode, "a generator function (explode)"),
    (exp.Unnest, "UNNEST"),
)


def refuse_unsupported(expression: exp.Expression) -> exp.Expression:
    """Raise ``UnsupportedLineage`` for the first construct the rewriter cannot handle."""
    with_ = expression.args.get("with_")
    if with_ is not None and with_.args.get("recursive"):
        raise unsupported(with_, "WITH RECURSIVE")
    for node in expression.walk():
        for kind, what in REFUSED:
            if isinstance(node, kind):
                raise unsupported(node, what)
        if isinstance(node, (exp.Select, exp.SetOperation)) and _in_expression(node):
            raise unsupported(node.parent if isinstance(node.parent, exp.Subquery) else node, "a subquery in an expression")
    return expression


def _in_expression(query: exp.Expression) -> bool:
    """True for a query used as a value or predicate (IN, EXISTS, scalar), not as a source."""
    node = query
    while isinstance(node.parent, (exp.Subquery, exp.SetOperation, exp.Paren)):
        node = node.parent
    parent = node.parent
    if parent is None or isinstance(parent, (exp.From, exp.Join, exp.CTE, exp.With)):
        return False
    return not (isinstance(node, exp.Subquery) and isinstance(parent, (exp.From, exp.Join)))
