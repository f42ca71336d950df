"""Rule: INTERSECT ALL and EXCEPT ALL as semi and anti joins of numbered copies (docs/semantics.md).

A row of value ``v`` appears ``min(m, n)`` times in ``A INTERSECT ALL B`` and ``max(m - n, 0)``
times in ``A EXCEPT ALL B`` (``m``, ``n``: its copies in A and B).  Numbering each value's
copies on both sides (``ROW_NUMBER() OVER (PARTITION BY every column)``), the k-th copy of A
is kept when B has a k-th copy (INTERSECT ALL) or has none (EXCEPT ALL): the distinct set
operations' EXISTS and NOT EXISTS with the copy number as one more column to match.  Lineage
follows from those rules: data lineage from the left input, where a copy's number is computed
from its value's copies; control adds the matching right copies (INTERSECT ALL) or all of the
right input (EXCEPT ALL), as for INTERSECT and EXCEPT.

>>> from dltrace.rewriter import rewrite_sql, PAPER_SCHEMA
>>> print(rewrite_sql("SELECT s_name FROM store EXCEPT ALL SELECT i_name FROM item", PAPER_SCHEMA, semantics="data"))
SELECT _left.s_name, SORT_ARRAY(_left.__dl0) AS DL FROM (SELECT _copies.s_name, ROW_NUMBER() OVER (PARTITION BY _copies.s_name ORDER BY _copies.s_name NULLS LAST) AS _copy, COLLECT_LIST(_copies.__dl0) OVER (PARTITION BY _copies.s_name ORDER BY _copies.s_name NULLS LAST RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS __dl0 FROM (SELECT store.s_name AS s_name, store._dl_id AS __dl0 FROM store AS store) AS _copies) AS _left WHERE NOT EXISTS(SELECT 1 FROM (SELECT _copies.i_name, ROW_NUMBER() OVER (PARTITION BY _copies.i_name ORDER BY _copies.i_name NULLS LAST) AS _copy FROM (SELECT item.i_name AS i_name FROM item AS item) AS _copies) AS _right WHERE _right.i_name IS NOT DISTINCT FROM _left.s_name AND _right._copy = _left._copy)
"""  # noqa: E501

from __future__ import annotations

from sqlglot import exp

from dltrace.rewriter.context import RewriteContext
from dltrace.rewriter.distinct_set_operations import kept_left_rows, replaced_innermost_first

COPY = "_copy"  # a copy's number among the rows of its value


def all_set_operations(expression: exp.Expression, context: RewriteContext) -> exp.Expression:
    """Rewrite every INTERSECT ALL and EXCEPT ALL of the tree, innermost first."""
    joined = context.semantics == "control"  # as for INTERSECT: a join, not a correlated EXISTS
    return replaced_innermost_first(
        expression, lambda node: isinstance(node, (exp.Intersect, exp.Except)) and not node.args.get("distinct"),
        lambda node: _numbered(node, joined))


def _numbered(node: exp.SetOperation, joined: bool) -> exp.Select:
    left, right = (_with_copy_numbers(side.unnest()) for side in (node.left, node.right))
    same_copy = exp.EQ(this=exp.column(COPY, table="_right"), expression=exp.column(COPY, table="_left"))
    return kept_left_rows(left, right, [n for n in left.named_selects if n != COPY],
                          [n for n in right.named_selects if n != COPY], isinstance(node, exp.Except), same_copy,
                          joined=joined)


def _with_copy_numbers(query: exp.Expression) -> exp.Select:
    """``query``'s rows, each with its number among the rows of its value."""
    columns = [exp.column(name, table="_copies") for name in query.named_selects]
    number = exp.Window(this=exp.RowNumber(), partition_by=[c.copy() for c in columns],
                        order=exp.Order(expressions=[exp.Ordered(this=c.copy()) for c in columns]))
    return exp.select(*columns, exp.alias_(number, COPY)).from_(query.copy().subquery("_copies"))
