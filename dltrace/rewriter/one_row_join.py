"""Speed-up rule: the lineage of a one-row aggregate joined to every row is computed once.

A derived table or CTE that aggregates without GROUP BY (``(SELECT AVG(num) AS a FROM
sales) t``, how a DataFrame program writes a scalar: ``df.crossJoin(df.agg(...))``; TPC-DS
q23's ``max_store_sales`` joined to the sales it bounds) has one row, and an
inner join gives that row to every row of the join.  By the join rule each of them carries
its whole lineage, every id the aggregate read: a GROUP BY above then unions the same large
set once per joined row (the square of the table's size for an average over it).

Its lineage is instead a lineage copy of the derived table in the SELECT list (as
``subquery_copies`` places one for a scalar subquery, clause ``expressions``, so that it
counts under data semantics too), and the derived table itself contributes nothing
(``ONE_ROW`` on it, read by ``join.source_lineage``).  The copy is uncorrelated, so
``hoist_uncorrelated_copies`` shares it: one set, computed once, on every row.  The same ids
on the same rows: every row of the join has the derived table's one row, and a row of a
HAVING that filtered it out would have none.  (The derived table keeps its lineage
column, which nothing reads: Spark prunes it.)

It applies to a derived table or CTE whose query is an uncorrelated, deterministic SELECT that
aggregates without GROUP BY, window, generator, LIMIT or OFFSET, read by a SELECT with no
RIGHT or FULL join where it is the FROM or an inner or cross join (on the preserved side),
and which gives no row without joined rows (not an aggregate without GROUP BY or of
grouping sets: over no rows it still gives one, whose lineage the copy must not reach).

>>> from dltrace.rewriter import rewrite_sql, PAPER_SCHEMA
>>> print(rewrite_sql("SELECT s.s_id, COUNT(*) AS n FROM sales s CROSS JOIN (SELECT AVG(num) AS a FROM sales) t "
...                   "WHERE s.num > t.a GROUP BY s.s_id", PAPER_SCHEMA))
SELECT s.s_id AS s_id, COUNT(*) AS n, SORT_ARRAY(ARRAY_DISTINCT(CONCAT(COLLECT_LIST(s._dl_id), (SELECT SORT_ARRAY(COLLECT_LIST(sales._dl_id)) AS __dl FROM sales AS sales)))) AS DL FROM sales AS s INNER JOIN (SELECT AVG(sales.num) AS a, COLLECT_LIST(sales._dl_id) AS __dl0 FROM sales AS sales) AS t WHERE s.num > t.a GROUP BY s.s_id
"""  # noqa: E501

from __future__ import annotations

from sqlglot import exp
from sqlglot.optimizer.scope import build_scope

from dltrace.rewriter.aggregate import has_grouping_sets, is_aggregate
from dltrace.rewriter.context import ONE_ROW, RewriteContext
from dltrace.rewriter.exists_join import nondeterministic
from dltrace.rewriter.generator import is_generator
from dltrace.rewriter.subquery_copies import COPY_ALIAS, in_lineage_copy, is_skipped, place_copy


def one_row_join(expression: exp.Expression, context: RewriteContext) -> exp.Expression:
    """Give each one-row aggregate joined to every row (see the module docstring) a shared
    lineage copy in its SELECT's list, in place of its own lineage."""
    for select in list(expression.find_all(exp.Select)):
        if is_skipped(select) or in_lineage_copy(select) or select.args.get("laterals"):
            continue
        joins = select.args.get("joins") or []
        if any(join.side in ("RIGHT", "FULL") for join in joins) or _row_without_input(select):
            continue
        from_ = select.args.get("from_")
        candidates = [from_.this] if from_ is not None else []
        candidates += [join.this for join in joins if not join.side and join.kind.upper() in ("", "INNER", "CROSS")]
        for source in candidates:
            body = _body(source)
            if body is not None and _one_row(body):
                _share(select, source, body)
    return expression


def _body(source: exp.Expression) -> exp.Expression | None:
    """The query a FROM source reads: a derived table's, or the CTE's it names (the nearest
    WITH that defines the name, not a recursive one)."""
    if isinstance(source, exp.Subquery):
        return source.this
    if not isinstance(source, exp.Table) or source.args.get("db"):
        return None
    node = source.parent
    while node is not None:
        with_ = node.args.get("with_") if isinstance(node, exp.Query) else None
        if with_ is not None:
            for cte in with_.expressions:
                if cte.alias_or_name.lower() == source.name.lower():
                    return None if with_.args.get("recursive") else cte.this
        node = node.parent
    return None


def _row_without_input(select: exp.Select) -> bool:
    """Whether ``select`` may give a row that no joined row made (an aggregate without GROUP
    BY, or of grouping sets, over no rows), whose lineage the shared copy must not reach."""
    return is_aggregate(select) and (not select.args.get("group") or has_grouping_sets(select))


def _one_row(query: exp.Expression) -> bool:
    """An uncorrelated, deterministic aggregate without GROUP BY: exactly one row (none
    past a HAVING; a generator or LATERAL VIEW would make several)."""
    if not isinstance(query, exp.Select) or not is_aggregate(query) or query.find(exp.Window):
        return False
    if any(query.args.get(key) for key in ("group", "limit", "offset", "laterals")) or nondeterministic(query):
        return False
    if any(is_generator(node) for item in query.expressions for node in item.walk()):
        return False
    root = build_scope(query)
    for scope in root.traverse():
        for column in scope.external_columns:
            parent = scope.parent
            while parent is not None and column.table not in parent.sources:
                parent = parent.parent
            if parent is None:  # read from outside the derived table: correlated
                return False
    return True


def _share(select: exp.Select, source: exp.Expression, body: exp.Select) -> None:
    taken = {e.alias_or_name for e in select.expressions}
    number = next(n for n in range(len(taken) + 1) if f"{COPY_ALIAS}{n}" not in taken)
    place_copy(select, body, "expressions", f"{COPY_ALIAS}{number}")
    source.meta[ONE_ROW] = True
