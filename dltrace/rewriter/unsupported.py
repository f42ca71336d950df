"""Rule: refuse what cannot be given exact lineage yet, naming the construct and its place.

A whitelist would be too blunt for SQL expressions, so this lists the constructs that
change which rows exist or which rows a row depends on; everything else (arithmetic,
CASE, scalar functions, casts) leaves a row's DL unchanged.

>>> from dltrace.rewriter import rewrite_sql, PAPER_SCHEMA
>>> rewrite_sql("SELECT s_name FROM store TABLESAMPLE (50 PERCENT)", PAPER_SCHEMA)
Traceback (most recent call last):
  ...
dltrace.errors.UnsupportedLineage: TABLESAMPLE is not supported yet: TABLESAMPLE (50 PERCENT)
"""

from __future__ import annotations

from sqlglot import exp

from dltrace.rewriter.context import RewriteContext, unsupported
from dltrace.rewriter.generator import is_generator

REFUSED: tuple[tuple[type[exp.Expression], str], ...] = (
    (exp.TableSample, "TABLESAMPLE"),
    (exp.Unnest, "UNNEST"),
)


def refuse_unsupported(expression: exp.Expression, context: RewriteContext) -> exp.Expression:
    """Raise ``UnsupportedLineage`` for the first construct the rewriter cannot handle."""
    with_ = expression.args.get("with_")
    if with_ is not None and with_.args.get("recursive"):
        raise unsupported(with_, "WITH RECURSIVE")
    for node in expression.walk():
        if isinstance(node, exp.Lateral) and not (node.args.get("view") and is_generator(node.this)):
            raise unsupported(node, "a LATERAL subquery")
        for kind, what in REFUSED:
            if isinstance(node, kind):
                raise unsupported(node, what)
        if isinstance(node, exp.Select) and node.args.get("distinct"):
            windows = [w for e in node.expressions for w in e.find_all(exp.Window)
                       if w.find_ancestor(exp.Select) is node]
            if windows:  # the distinct rule's GROUP BY cannot hold a window function
                raise unsupported(windows[0], "SELECT DISTINCT with a window function")
    return expression
