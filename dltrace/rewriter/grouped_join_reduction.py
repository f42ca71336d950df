"""Speed-up rule: a grouped derived table joined on its group key is restricted to the keys of
the filtered table it joins (a semi-join reduction, as ``semi_join_reduction`` does for a
correlated copy).

A DataFrame program writes a correlated aggregate as a join with a grouped DataFrame (TPC-H
Q17: ``part.join(lineitem).join(lineitem.groupBy("l_partkey").agg(avg(...)), ...)`` with
part filtered to one brand and container).  The lineage query gathers every group's ids,
200,000 parts' worth of 6M lineitems, where the same query in SQL (a correlated subquery,
``grouped_value_join`` and ``semi_join_reduction``) gathers those of the few hundred parts
the filter keeps.  Restricted to the keys the joined table's own filters keep, the derived
table's other groups, which the inner join would drop anyway, are never built; a kept
group's rows, its values and its lineage are unchanged.

It applies to a derived table that groups by plain columns (no grouping sets), deterministic,
without LIMIT, windows or LATERAL VIEW, read by a SELECT whose joins are all inner, where a
conjunct of its WHERE or ON equates a group-key column of the derived table with a column of
a catalog table that the SELECT filters by conditions on that table alone.

>>> from dltrace.rewriter import rewrite_sql, only, PAPER_SCHEMA
>>> print(rewrite_sql("SELECT d.s_name, g.n FROM store d JOIN (SELECT s_id, SUM(num) AS n FROM sales GROUP BY s_id) g "
...                   "ON g.s_id = d.s_id WHERE d.state = 'CA'", PAPER_SCHEMA,
...                   rules=only("qualify", "reduce_grouped_joins")))
SELECT d.s_name AS s_name, g.n AS n FROM store AS d JOIN (SELECT sales.s_id AS s_id, SUM(sales.num) AS n FROM sales AS sales WHERE sales.s_id IN (SELECT __dlkeys.s_id FROM store AS __dlkeys WHERE __dlkeys.state = 'CA') GROUP BY sales.s_id) AS g ON g.s_id = d.s_id WHERE d.state = 'CA'
"""  # noqa: E501

from __future__ import annotations

from sqlglot import exp

from dltrace.rewriter.base_table import is_catalog_table
from dltrace.rewriter.clauses import conjuncts, sources
from dltrace.rewriter.context import RewriteContext
from dltrace.rewriter.exists_join import nondeterministic
from dltrace.rewriter.semi_join_reduction import keys_of

GROUPED_PARTS = ("expressions", "from_", "joins", "where", "group", "having")


def reduce_grouped_joins(expression: exp.Expression, context: RewriteContext) -> exp.Expression:
    """Restrict each grouped derived table joined on its key to the joined table's filtered
    keys (see the module docstring)."""
    for select in list(expression.find_all(exp.Select)):
        joins = select.args.get("joins") or []
        if not joins or any(join.side or join.kind.upper() not in ("", "INNER", "CROSS") for join in joins):
            continue
        conditions = [c for part in (select.args.get("where"), *(j.args.get("on") for j in joins))
                      for c in conjuncts(part)]
        tables = {s.alias_or_name: s for s in sources(select) if is_catalog_table(s, context)}
        for source in sources(select):
            if isinstance(source, exp.Subquery) and _grouped(source.this):
                _reduce(source, tables, conditions)
    return expression


def _grouped(query: exp.Expression) -> bool:
    """A SELECT grouped by plain columns, whose groups do not depend on one another."""
    if not isinstance(query, exp.Select) or any(v for k, v in query.args.items() if k not in GROUPED_PARTS and v):
        return False
    group = query.args.get("group")
    if group is None or not group.expressions or any(group.args.get(k) for k in ("rollup", "cube", "grouping_sets")):
        return False
    plain = all(isinstance(g, exp.Column) for g in group.expressions)
    return plain and not any(e.find(exp.Window) for e in query.expressions) and not nondeterministic(query)


def _reduce(source: exp.Subquery, tables: dict[str, exp.Table], conditions: list[exp.Expression]) -> None:
    """AND ``key IN (SELECT column FROM table WHERE its filters)`` to the derived table's WHERE
    for the first join equality that pairs a group-key column with a filtered table."""
    query, name = source.this, source.alias_or_name
    keys = {e.alias_or_name.lower(): e.unalias() for e in query.expressions
            if e.unalias() in query.args["group"].expressions}
    for condition in conditions:
        if not isinstance(condition, exp.EQ):
            continue
        for mine, theirs in ((condition.left, condition.right), (condition.right, condition.left)):
            if not (isinstance(mine, exp.Column) and isinstance(theirs, exp.Column) and mine.table == name
                    and mine.name.lower() in keys and theirs.table in tables):
                continue
            filters = [c for c in conditions if _only_on(c, theirs.table)]
            if not filters:
                continue
            kept = keys_of(tables[theirs.table], theirs.table, [theirs], filters)
            query.where(exp.In(this=keys[mine.name.lower()].copy(), query=exp.Subquery(this=kept)), copy=False)
            return


def _only_on(condition: exp.Expression, alias: str) -> bool:
    """A condition on columns of ``alias`` alone, without subqueries or chance."""
    columns = list(condition.find_all(exp.Column))
    return (bool(columns) and all(c.table == alias for c in columns) and not condition.find(exp.Select)
            and not nondeterministic(condition))
