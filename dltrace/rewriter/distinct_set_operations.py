"""Rule: UNION (distinct), INTERSECT and EXCEPT as DISTINCT queries (docs/semantics.md, paper §3.4).

* ``A UNION B`` is ``SELECT DISTINCT * FROM (A UNION ALL B)``: a row's DL is the DLUNION of
  all the duplicates merged into it.
* ``A INTERSECT B`` keeps the rows of A that have a match in B, ``A EXCEPT B`` those that
  have none (``<=>``: NULLs match, as in set operations).  Data lineage: from the left input.
  Control lineage adds, for INTERSECT, the matching rows of B and, for EXCEPT, all of B
  (the paper's ``DL(t, v1) ∪ DLUNION(v2)``).  Under control semantics the INTERSECT is a join
  of A with B's distinct rows rather than an EXISTS: the EXISTS's lineage would be a
  correlated subquery, and one inside another (an INTERSECT of an EXCEPT of INTERSECTs) is a
  plan Spark cannot generate code for (``outer(id)``).

>>> from dltrace.rewriter import rewrite_sql, PAPER_SCHEMA
>>> print(rewrite_sql("SELECT s_name FROM store EXCEPT SELECT i_name FROM item", PAPER_SCHEMA, semantics="data"))
SELECT _left.s_name, SORT_ARRAY(COLLECT_LIST(_left.__dl0)) AS DL FROM (SELECT store.s_name AS s_name, store._dl_id AS __dl0 FROM store AS store) AS _left WHERE NOT EXISTS(SELECT 1 FROM (SELECT item.i_name AS i_name FROM item AS item) AS _right WHERE _right.i_name IS NOT DISTINCT FROM _left.s_name) GROUP BY _left.s_name
"""  # noqa: E501

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp

from dltrace.rewriter.context import WHOLE_INPUT, RewriteContext

# what the set operation's result keeps: its ORDER BY ... LIMIT, and its WITH, whose CTEs
# either input may read
MODIFIERS = ("with_", "order", "limit", "offset")


def distinct_set_operations(expression: exp.Expression, context: RewriteContext) -> exp.Expression:
    """Rewrite every distinct set operation of the tree, innermost first."""
    joined = context.semantics == "control"
    return replaced_innermost_first(expression, lambda node: bool(node.args.get("distinct")),
                                    lambda node: _as_select(node, joined))


def replaced_innermost_first(expression: exp.Expression, chosen: Callable[[exp.SetOperation], bool],
                             replacement_of: Callable[[exp.SetOperation], exp.Select]) -> exp.Expression:
    """``expression`` with each set operation ``chosen`` replaced by its ``replacement_of``,
    innermost first, which keeps the operation's ORDER BY, LIMIT and WITH."""
    for node in reversed(list(expression.find_all(exp.SetOperation))):
        if not chosen(node):
            continue
        replacement = replacement_of(node)
        for key in MODIFIERS:
            if node.args.get(key):
                replacement.set(key, node.args[key].copy())
        if node is expression:
            expression = replacement
        else:
            node.replace(replacement)
    return expression


def _as_select(node: exp.SetOperation, joined: bool) -> exp.Select:
    if isinstance(node, exp.Union):
        inner = node.copy()
        inner.set("distinct", False)
        for key in MODIFIERS:
            inner.set(key, None)
        names = node.named_selects
        return exp.select(*[exp.column(n, table="_union") for n in names]).distinct().from_(inner.subquery("_union"))
    left, right = node.left.unnest().copy(), node.right.unnest().copy()
    unmatched = isinstance(node, exp.Except)
    if joined and not unmatched:
        right = exp.select(*[exp.column(n, table="_distinct") for n in right.named_selects]).distinct().from_(
            right.subquery("_distinct"))
    return kept_left_rows(left, right, left.named_selects, right.named_selects, unmatched, joined=joined).distinct()


def kept_left_rows(left: exp.Query, right: exp.Query, left_names: list[str], right_names: list[str],
                   unmatched: bool, *also: exp.Expression, joined: bool = False) -> exp.Select:
    """``left_names`` of the rows of ``left`` (as ``_left``) that have a row of ``right`` (as
    ``_right``) equal in ``right_names`` (NULLs match) and ``also``, or, ``unmatched``, have
    none (then control lineage takes the whole right input).  ``joined``: the matched rows as
    an inner join, when ``right`` has at most one row per match (distinct or numbered rows)."""
    matches = exp.and_(*[
        exp.NullSafeEQ(this=exp.column(right_name, table="_right"), expression=exp.column(left_name, table="_left"))
        for left_name, right_name in zip(left_names, right_names)
    ], *also)
    columns = [exp.column(n, table="_left") for n in left_names]
    if joined and not unmatched:
        return exp.select(*columns).from_(left.subquery("_left")).join(right.subquery("_right"), on=matches)
    probe = exp.select("1").from_(right.subquery("_right")).where(matches)
    condition: exp.Expression = exp.Exists(this=probe)
    if unmatched:
        probe.meta[WHOLE_INPUT] = True
        condition = exp.Not(this=condition)
    return exp.select(*columns).from_(left.subquery("_left")).where(condition)
