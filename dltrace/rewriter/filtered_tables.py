"""Speed-up rule (control semantics): a derived table that only filters one table by an EXISTS
is merged into the SELECT that joins it, so that ``exists_join`` joins the EXISTS there.

A DataFrame program writes a semi join on a table it then joins to others as a derived
table (TPC-H Q21: ``(SELECT ... FROM lineitem WHERE ... AND EXISTS (...)) AS _df12``, joined
to supplier, nation and orders).  Joined inside the derived table, the EXISTS meets every
row of the table, where the same query in SQL meets only the rows the other joins keep: the
whole table grouped back per row.  Merged, the derived table is its table, its WHERE is
ANDed to the reading SELECT's, and ``exists_join`` joins the EXISTS after the other joins,
as it does for the SQL.  The rows are the same (a filter of an inner join's input is a
filter of its output), and so is their lineage: a derived table's is its rows' (the
derived-table rule reads it as if inlined).

It applies, under control semantics (where ``exists_join`` does), to a derived table whose
query is a SELECT of columns of one catalog table, a WHERE with an EXISTS conjunct and
nothing else, read as the FROM or an inner or cross join of a SELECT with no RIGHT or FULL
join, whose name no other query in that SELECT uses.

>>> from dltrace.rewriter import rewrite_sql, only, PAPER_SCHEMA
>>> print(rewrite_sql("SELECT d.s_name, x.n FROM store d JOIN (SELECT s.s_id, s.num AS n FROM sales s WHERE "
...                   "s.num > 5 AND EXISTS (SELECT 1 FROM item i WHERE i.i_id = s.i_id)) x ON x.s_id = d.s_id",
...                   PAPER_SCHEMA, rules=only("qualify", "merge_filtered_tables")))
SELECT d.s_name AS s_name, x.num AS n FROM store AS d JOIN sales AS x ON x.s_id = d.s_id WHERE x.num > 5 AND EXISTS(SELECT 1 AS `1` FROM item AS i WHERE i.i_id = x.i_id)
"""  # noqa: E501

from __future__ import annotations

from sqlglot import exp

from dltrace.rewriter.base_table import is_catalog_table
from dltrace.rewriter.clauses import conjuncts, sources
from dltrace.rewriter.context import RewriteContext
from dltrace.rewriter.exists_join import nondeterministic

ONLY_PARTS = ("expressions", "from_", "where")


def merge_filtered_tables(expression: exp.Expression, context: RewriteContext) -> exp.Expression:
    """Merge each derived table that filters one table by an EXISTS into its SELECT (see the
    module docstring)."""
    if context.semantics != "control":
        return expression
    for select in list(expression.find_all(exp.Select)):
        joins = select.args.get("joins") or []
        if any(join.side in ("RIGHT", "FULL") for join in joins):
            continue
        from_ = select.args.get("from_")
        candidates = [from_.this] if from_ is not None else []
        candidates += [join.this for join in joins if not join.side and join.kind.upper() in ("", "INNER", "CROSS")]
        for source in candidates:
            if isinstance(source, exp.Subquery) and _filters_one_table(source, select, context):
                _merge(select, source)
    return expression


def _filters_one_table(source: exp.Subquery, select: exp.Select, context: RewriteContext) -> bool:
    query, name = source.this, source.alias_or_name
    if not isinstance(query, exp.Select) or any(v for k, v in query.args.items() if k not in ONLY_PARTS and v):
        return False
    table = query.args["from_"].this
    inner = table.alias_or_name
    if not is_catalog_table(table, context) or nondeterministic(query):
        return False
    if not all(isinstance(e.unalias(), exp.Column) and e.unalias().table == inner for e in query.expressions):
        return False
    # an EXISTS of a query: the array function EXISTS(tags, x -> ...) is read as exp.Exists too
    if not any(isinstance(c, exp.Exists) and isinstance(c.this, exp.Query) for c in conjuncts(query.args.get("where"))):
        return False
    # the names the merge renames must mean one source each: no other query defines them
    named = [s.alias_or_name for part in select.find_all(exp.Select) for s in sources(part)]
    return named.count(name) == 1 and named.count(inner) == 1


def _merge(select: exp.Select, source: exp.Subquery) -> None:
    query, name = source.this, source.alias_or_name
    table = query.args["from_"].this
    inner = table.alias_or_name
    columns = {e.alias_or_name.lower(): e.unalias().name for e in query.expressions}
    where = query.args["where"].this.pop()
    for column in where.find_all(exp.Column):
        if column.table == inner:
            column.set("table", exp.to_identifier(name))
    for item in select.expressions:  # an output column named by the derived table keeps its name
        if isinstance(item, exp.Column) and item.table == name and columns[item.name.lower()] != item.name:
            item.replace(exp.alias_(item.copy(), item.name))
    for column in select.find_all(exp.Column):
        if column.table == name:
            column.set("this", exp.to_identifier(columns[column.name.lower()]))
    merged = exp.Table(this=table.this.copy(), alias=exp.TableAlias(this=exp.to_identifier(name)))
    merged.meta.update(table.meta)
    source.replace(merged)
    select.where(where, copy=False)
