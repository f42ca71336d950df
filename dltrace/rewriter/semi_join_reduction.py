"""Speed-up rule: a correlated lineage copy is restricted to the keys of the outer rows that
can need it (a semi-join reduction, as magic sets do).

A copy correlated by ``inner = outer`` equalities on one outer table is needed only for
outer rows that survive the outer WHERE, and their keys pass the WHERE's own filters on that
table.  Restricted to those keys, Spark aggregates the inner rows of those keys only, not of
every key (TPC-H Q4: the lineitems of one quarter's orders instead of all 6M).  Only a
smaller outer table is worth it (the keys are read from it), and copies of any other shape
are left as they are.

>>> from dltrace.rewriter import rewrite, parse, without, PAPER_CODES, PAPER_SCHEMA
>>> query = parse("SELECT s_name FROM store d WHERE d.state = 'CA' AND EXISTS "
...               "(SELECT 1 FROM sales s WHERE s.s_id = d.s_id AND s.num > 2000)")
>>> print(rewrite(query, PAPER_SCHEMA, PAPER_CODES, table_rows={"store": 10, "sales": 1000},
...               rules=without("exists_join")).sql("spark"))
SELECT d.s_name AS s_name, CONCAT(ARRAY(d._dl_id), SORT_ARRAY(COALESCE((SELECT COLLECT_LIST(s._dl_id) AS __dl FROM sales AS s WHERE (s.s_id = d.s_id AND s.num > 2000) AND s.s_id IN (SELECT __dlkeys.s_id FROM store AS __dlkeys WHERE __dlkeys.state = 'CA')), SLICE(ARRAY(CAST(0 AS BIGINT)), 1, 0)))) AS DL FROM store AS d WHERE d.state = 'CA' AND EXISTS(SELECT 1 AS `1` FROM sales AS s WHERE s.s_id = d.s_id AND s.num > 2000)
"""  # noqa: E501

from __future__ import annotations

from sqlglot import exp
from sqlglot.optimizer.scope import Scope

from dltrace.rewriter.clauses import conjuncts, correlation, sources
from dltrace.rewriter.context import KEYS_ALIAS, RewriteContext
from dltrace.rewriter.subquery_copies import is_lineage_copy


def semi_join_reduction(query: exp.Expression, context: RewriteContext) -> exp.Expression:
    """Restrict a correlated copy (already the DLUNION of its rows) to the outer rows' keys."""
    scope = context.scope
    if not is_lineage_copy(query) or not context.lineage.of(query).output or not scope.is_correlated_subquery:
        return query
    outer_select = scope.parent.expression
    where, outer_where = query.args.get("where"), outer_select.args.get("where")
    if where is None or outer_where is None:
        return query
    pairs = [pair for c in conjuncts(where) if isinstance(c, exp.EQ) and (pair := correlation(c, scope))]
    aliases = {outer.table for _, outer in pairs}
    if len(aliases) != 1:
        return query
    alias = aliases.pop()
    table = next((t for t in sources(outer_select) if isinstance(t, exp.Table) and t.alias_or_name == alias), None)
    filters = [c for c in conjuncts(outer_where) if _filters_only(c, alias, scope.parent)]
    table_rows = context.table_rows or {}
    inner_rows = max((table_rows.get(t.name.lower(), 0) for t in query.find_all(exp.Table)), default=0)
    if table is None or not filters or table_rows.get(table.name.lower(), 0) >= inner_rows:
        return query

    keys = keys_of(table, alias, [outer for _, outer in pairs], filters)
    inner = pairs[0][0].copy() if len(pairs) == 1 else exp.Tuple(expressions=[i.copy() for i, _ in pairs])
    # not copied: the WHERE's columns stay those sqlglot's scope knows (inequality_split reads them)
    reduced = exp.and_(where.this, exp.In(this=inner, query=exp.Subquery(this=keys)), copy=False)
    query.set("where", exp.Where(this=reduced))
    return query


def keys_of(table: exp.Table, alias: str, columns: list[exp.Expression],
            filters: list[exp.Expression]) -> exp.Select:
    """``SELECT columns FROM table AS __dlkeys WHERE filters``: the keys a reduction keeps,
    ``alias``'s columns read from the keys' table (not those of a subquery nested in a
    filter, which may name its own table ``alias`` too: ``nation``)."""

    def renamed(node: exp.Expression) -> exp.Expression:
        node = node.copy()
        for column in node.find_all(exp.Column):
            if column.table == alias and column.find_ancestor(exp.Select) is None:
                column.set("table", exp.to_identifier(KEYS_ALIAS))
        return node

    keys = exp.select(*map(renamed, columns)).from_(
        exp.Table(this=table.this.copy(), alias=exp.TableAlias(this=exp.to_identifier(KEYS_ALIAS))))
    return keys.where(exp.and_(*map(renamed, filters)), copy=False)


def _filters_only(condition: exp.Expression, alias: str, outer: Scope) -> bool:
    """True when ``condition`` (a conjunct of the outer WHERE) reads columns of ``alias`` and
    nothing else of the outer query, and its subqueries read nothing outside themselves
    (recomputed for the keys, a correlated one would cost what the reduction saves)."""
    own = [c for c in condition.find_all(exp.Column) if c.find_ancestor(exp.Select) is outer.expression]
    nested = [s for s in outer.subquery_scopes if _inside(s.expression, condition)]
    return bool(own) and all(c.table == alias for c in own) and not any(s.external_columns for s in nested)


def _inside(node: exp.Expression | None, ancestor: exp.Expression) -> bool:
    while node is not None and node is not ancestor:
        node = node.parent
    return node is ancestor
