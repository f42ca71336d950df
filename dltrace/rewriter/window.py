"""Rule: window functions.  Data semantics: a row's DL is unchanged.  Control semantics:
the DLUNION of the rows of the row's window partition (every row of the partition can
change the row's window value), as a window aggregate over the same PARTITION BY.

>>> from dltrace.rewriter import rewrite_sql, PAPER_SCHEMA
>>> print(rewrite_sql("SELECT t_id, RANK() OVER (PARTITION BY s_id ORDER BY num) AS r FROM sales", PAPER_SCHEMA))
SELECT sales.t_id, RANK() OVER (PARTITION BY sales.s_id ORDER BY sales.num) AS r, SORT_ARRAY(COLLECT_LIST(sales._dl_id) OVER (PARTITION BY sales.s_id)) AS DL FROM sales AS sales
"""  # noqa: E501

from __future__ import annotations

from sqlglot import exp

from dltrace.rewriter.context import RewriteContext, unsupported


def window(select: exp.Expression, context: RewriteContext) -> exp.Expression:
    """Under control semantics, widen each row's lineage to its window partitions."""
    if not isinstance(select, exp.Select):
        return select
    windows = [w for e in select.expressions for w in e.find_all(exp.Window) if w.find_ancestor(exp.Select) is select]
    if not windows:
        return select
    drop_redundant_aliases(select)
    if context.semantics == "data":
        return select
    partitions: dict[str, list[exp.Expression]] = {}
    for spec in windows:
        if spec.args.get("alias") or isinstance(spec.this, exp.Identifier):
            raise unsupported(spec, "a named window (WINDOW clause)")
        partition = list(spec.args.get("partition_by") or [])
        partitions.setdefault(" , ".join(p.sql() for p in partition), partition)
    lineage = context.lineage.of(select)
    rows = lineage.rows
    widened = [
        context.representation.aggregate(term, partition_by=partition)
        for partition in partitions.values()
        for term in rows
        if not term.shared
    ]
    lineage.rows = (*widened, *(t for t in rows if t.shared))
    return select


def drop_redundant_aliases(select: exp.Select) -> None:
    """``u.k AS k`` becomes ``u.k`` (the same output name) in a SELECT with windows: over a
    UNION ALL derived table, such an alias of a PARTITION BY column makes Spark's optimizer
    fail (RemoveRedundantAliases: "The plan was previously resolved and now became unresolved").

    >>> select = exp.maybe_parse("SELECT u.k AS k, u.v AS w, COUNT(*) OVER (PARTITION BY u.k) AS n FROM u")
    >>> drop_redundant_aliases(select); print(select.sql())
    SELECT u.k, u.v AS w, COUNT(*) OVER (PARTITION BY u.k) AS n FROM u
    """
    for item in select.expressions:
        if isinstance(item, exp.Alias) and isinstance(item.this, exp.Column) and item.alias == item.this.name:
            item.replace(item.this)
