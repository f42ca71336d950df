"""A translated DataFrame plan made the query a person would write.

The translation (``plan.py``) makes each relation a SELECT over its input as a derived table,
nested as deep as the program is long, with every input under an alias ``_dfN``.  sqlglot's
``merge_subqueries`` folds each derived table into the query over it where that keeps the
query's meaning (a filter of a join is the join's WHERE): about a third of the text, quicker
to rewrite, and a correlated subquery's condition in its own WHERE, as the rewriter sees it in
SQL.  A table read once then gets its own name back as its alias.
"""

from __future__ import annotations

from sqlglot import exp
from sqlglot.optimizer.merge_subqueries import merge_subqueries

from dltrace.dataframe.scope import SIMPLE_NAME

FILTER_DEPTH = "dltrace_filter_depth"  # meta of a filter: how deep in the program's plan it was written


def as_written(query: exp.Query) -> exp.Query:
    """``query`` (fully qualified, inputs aliased ``_dfN``) with its derived tables merged
    where the meaning allows and its tables read once named after themselves."""
    return named_after_tables(filters_in_program_order(merged(with_filter_depths(query))))


def with_filter_depths(query: exp.Query) -> exp.Query:
    """Each WHERE's condition in parentheses marked with its depth (the SELECTs around it),
    for ``filters_in_program_order``."""
    for select in list(query.find_all(exp.Select)):
        where = select.args.get("where")
        if where is not None:
            depth = sum(1 for node in _ancestors(select) if isinstance(node, exp.Select))
            marked = exp.Paren(this=where.this)
            marked.meta[FILTER_DEPTH] = depth
            where.set("this", marked)
    return query


def filters_in_program_order(query: exp.Query) -> exp.Query:
    """Each WHERE's conditions in the order the program filtered: the merge writes a derived
    table's filter after the filter over it (``outer AND inner``), where Spark, combining the
    two, tests the inner one first, so a filter that guards an expression of a later one
    (``b > 0`` then ``a / b > 1``, ``size(tags) > 0`` then ``x % size(tags)``) no longer did
    under ANSI mode (generator seed 2207: REMAINDER_BY_ZERO).  Conditions whose mark the merge
    replaced keep their place after the marked ones."""
    for select in list(query.find_all(exp.Select)):
        where = select.args.get("where")
        if where is None:
            continue
        units = list(_filter_units(where.this))
        units.sort(key=lambda unit: -unit.meta.get(FILTER_DEPTH, -1))  # stable: same depth, same order
        where.set("this", exp.and_(*[_unmarked(unit) for unit in units], copy=False))
    return query


def _ancestors(node: exp.Expression):
    while node.parent is not None:
        node = node.parent
        yield node


def _filter_units(condition: exp.Expression):
    """The marked conditions of an AND of them (parenthesized, as sqlglot writes an AND it
    combines), and the others as they are."""
    if FILTER_DEPTH not in condition.meta and isinstance(condition, exp.Paren) and isinstance(condition.this, exp.And):
        yield from _filter_units(condition.this)
    elif FILTER_DEPTH in condition.meta or not isinstance(condition, exp.And):
        yield condition
    else:
        yield from _filter_units(condition.this)
        yield from _filter_units(condition.expression)


def _unmarked(unit: exp.Expression) -> exp.Expression:
    """A marked condition without the parentheses of its mark, but around an AND or OR."""
    if FILTER_DEPTH in unit.meta and not isinstance(unit.this, exp.Connector):
        return unit.this
    return unit


def merged(query: exp.Query) -> exp.Query:
    """``merge_subqueries`` of ``query``, but for the derived tables whose merge would change
    what the query computes (``changes_if_merged``): each is merged within on its own and kept
    in place of a stand-in table while the rest is merged."""
    kept: dict[str, exp.Subquery] = {}
    for derived in list(query.find_all(exp.Subquery)):
        if derived.root() is not query:  # inside one kept already, merged with it
            continue
        if changes_if_merged(derived):
            stand_in = f"__dlkept{len(kept)}"
            kept[stand_in] = exp.Subquery(this=merged(derived.this.copy()), alias=derived.args["alias"].copy())
            derived.replace(exp.Table(this=exp.to_identifier(stand_in), alias=derived.args["alias"].copy()))
    query = parenthesized(merge_subqueries(query))
    for table in list(query.find_all(exp.Table)):
        if table.name in kept:
            table.replace(kept[table.name])
    return query


def parenthesized(query: exp.Query) -> exp.Query:
    """Each AND or OR that the merge put under another operator in parentheses: merged into
    ``NOT c IS NULL``, a ``c`` that is ``a >= 1 AND a <= 5`` was printed ``NOT a >= 1 AND a
    <= 5 IS NULL``, which Spark reads otherwise (generator seeds 1708, 1883)."""
    for connector in list(query.find_all(exp.Connector)):
        parent = connector.parent
        if isinstance(parent, (exp.Binary, exp.Unary, exp.Between, exp.In)) and not isinstance(parent, exp.Paren) \
                and not isinstance(parent, type(connector)) \
                and not (isinstance(parent, exp.Or) and isinstance(connector, exp.And)):
            connector.replace(exp.Paren(this=connector.copy()))
    return query


def changes_if_merged(derived: exp.Subquery) -> bool:
    """Whether folding derived table ``derived`` into the SELECT that reads it changes the
    rows, where ``merge_subqueries`` does not see it: a value computed in it (not a column)
    on a side of an outer join that the join pads with NULLs (merged, it would be computed
    over the NULLs: ``concat_ws`` of NULL is ``''``, a literal is not NULL), or columns it
    renames or computes that a ROLLUP, CUBE or GROUPING SETS of the outer SELECT groups by
    (merged, two grouping columns can become one).  And one the rewriter could not trace
    merged: a semi or anti join that would come before a RIGHT or FULL join."""
    inner, holder = derived.this, derived.parent
    outer = holder.parent if isinstance(holder, (exp.From, exp.Join)) else None
    if not isinstance(inner, exp.Select) or not isinstance(outer, exp.Select):
        return False
    kinds = {s.alias_or_name: origin(inner, s) for s in inner.selects}
    computed = {name for name, kind in kinds.items() if kind == "computed"}
    renamed = {name for name, kind in kinds.items() if kind != "column"}
    if computed and padded_with_nulls(holder, outer):
        return True
    if semi_joined(inner) and any(join.side in ("RIGHT", "FULL") for join in outer.args.get("joins") or []):
        return True  # the rewriter traces a semi or anti join before a RIGHT or FULL one only apart
    alias = derived.alias_or_name
    group = outer.args.get("group")
    return any(column.table == alias and column.name in renamed
               for sets in (group.find_all(exp.Rollup, exp.Cube, exp.GroupingSets) if group else [])
               for column in sets.find_all(exp.Column))


def origin(select: exp.Select, projection: exp.Expression) -> str:
    """What ``projection`` of ``select`` is once the derived tables below are merged into it:
    ``column`` (a column of its own name), ``renamed`` or ``computed``."""
    value = projection.unalias()
    if not isinstance(value, exp.Column):
        return "computed"
    if value.name != projection.alias_or_name:
        return "renamed"
    sources = [select.args.get("from_"), *(select.args.get("joins") or [])]
    for source in sources:
        derived = source.this if source is not None else None
        if isinstance(derived, exp.Subquery) and derived.alias_or_name == value.table \
                and isinstance(derived.this, exp.Select):
            below = [s for s in derived.this.selects if s.alias_or_name == value.name]
            return origin(derived.this, below[0]) if below else "column"
    return "column"


def semi_joined(select: exp.Select) -> bool:
    return any((join.kind or "").upper() in ("SEMI", "ANTI") for join in select.args.get("joins") or [])


def padded_with_nulls(holder: exp.From | exp.Join, outer: exp.Select) -> bool:
    """Whether the input in ``holder`` (the FROM or a JOIN of ``outer``) can have its columns
    padded with NULLs: joined LEFT or FULL, or followed by a RIGHT or FULL join."""
    joins = outer.args.get("joins") or []
    if isinstance(holder, exp.Join) and holder.side in ("LEFT", "FULL"):
        return True
    after = joins[joins.index(holder) + 1:] if isinstance(holder, exp.Join) else joins
    return any(join.side in ("RIGHT", "FULL") for join in after)


def named_after_tables(query: exp.Query) -> exp.Query:
    """A table the query reads once is aliased by its own name, not ``_dfN``, as a person
    writes it: what users see of the query (reasons' inputs, ``dataframe_sql``) reads
    ``customer.c_acctbal``."""
    tables = list(query.find_all(exp.Table))
    names = [table.name.lower() for table in tables]
    taken = {table.alias.lower() for table in tables} | {a.alias.lower() for a in query.find_all(exp.TableAlias)}
    renames = {}
    for table in tables:
        name = table.name.lower()
        if table.alias.startswith("_df") and names.count(name) == 1 and name not in taken \
                and SIMPLE_NAME.fullmatch(table.name):
            renames[table.alias] = table.name
            table.set("alias", exp.TableAlias(this=exp.to_identifier(table.name)))
    for column in query.find_all(exp.Column):
        if column.table in renames:
            column.set("table", exp.to_identifier(renames[column.table]))
    return query
