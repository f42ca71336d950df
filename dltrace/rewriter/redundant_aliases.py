"""Rule: ``u.k AS k`` is written ``u.k`` where Spark 4's optimizer fails on it (the same name).

Spark names a column as it is written, so ``u.k AS k`` and ``u.k`` are the same output.  Its
optimizer fails on such aliases in some plans (RemoveRedundantAliases: "The plan was
previously resolved and now became unresolved", PLAN_VALIDATION_FAILED_RULE_IN_BATCH): in a
SELECT with windows of its own over a UNION ALL (an alias of a PARTITION BY column), in a
SELECT with ORDER BY over a UNION ALL derived table (``ORDER BY x.k`` over ``x.k AS k`` sorts
by a column the SELECT list hides, which Spark adds to the union's inputs), and in any SELECT
inside a set operation's input, to any depth (generator seeds 1197, 1618, 1952, 2196, 2443,
2470: a PIVOT's lineage join under a ROLLUP of a UNION ALL; a window over a union of a
DataFrame's ``select``s).  The rule runs after every scope is rewritten, on the whole lineage
query, so that it sees the SELECTs every rule wrote and the queries kept as written, and before
the output copies the rows' query for the sets held apart.

>>> from dltrace.rewriter import rewrite_sql, PAPER_SCHEMA
>>> print(rewrite_sql("SELECT x.s_name, x.n FROM (SELECT s_name, s_id AS n FROM store UNION ALL SELECT i_name, i_id FROM item) x ORDER BY x.s_name", PAPER_SCHEMA))
SELECT x.s_name, x.n, SORT_ARRAY(x.__dl0) AS DL FROM (SELECT store.s_name, store.s_id AS n, ARRAY(store._dl_id) AS __dl0 FROM store AS store UNION ALL SELECT item.i_name, item.i_id, ARRAY(item._dl_id) AS __dl0 FROM item AS item) AS x ORDER BY x.s_name
"""  # noqa: E501

from __future__ import annotations

from sqlglot import exp

from dltrace.rewriter.context import RewriteContext


def redundant_aliases(expression: exp.Expression, context: RewriteContext) -> exp.Expression:
    """Drop the aliases that repeat their column's name in every SELECT Spark fails on them."""
    for select in list(expression.find_all(exp.Select)):
        if _spark_fails_on_redundant_aliases(select):
            drop_redundant_aliases(select)
    return expression


def _spark_fails_on_redundant_aliases(select: exp.Select) -> bool:
    """A SELECT with windows of its own, one inside a set operation's input, or one with ORDER
    BY over a set operation derived table."""
    if any(w.find_ancestor(exp.Select) is select for e in select.expressions for w in e.find_all(exp.Window)):
        return True
    if select.find_ancestor(exp.SetOperation) is not None:
        return True
    from_ = select.args.get("from_")
    return bool(select.args.get("order")) and from_ is not None and isinstance(from_.this, exp.Subquery) \
        and isinstance(from_.this.this, exp.SetOperation)


def drop_redundant_aliases(select: exp.Select) -> None:
    """``u.k AS k`` becomes ``u.k`` in ``select``'s list.

    >>> select = exp.maybe_parse("SELECT u.k AS k, u.v AS w, COUNT(*) OVER (PARTITION BY u.k) AS n FROM u")
    >>> drop_redundant_aliases(select); print(select.sql())
    SELECT u.k, u.v AS w, COUNT(*) OVER (PARTITION BY u.k) AS n FROM u
    """
    for item in select.expressions:
        if isinstance(item, exp.Alias) and isinstance(item.this, exp.Column) and item.alias == item.this.name:
            item.replace(item.this)
