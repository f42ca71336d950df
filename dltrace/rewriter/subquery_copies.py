"""Rule: every subquery used in an expression gets a *lineage copy* (paper §3.4, Q8 -> Q9).

The subquery itself stays where it is, untouched, so the query filters and computes exactly
as before.  Its copy is placed in the enclosing SELECT list as a scalar subquery; the copy is
rewritten like any query and becomes the DLUNION of the subquery's result rows.  A
correlated copy stays correlated, so each outer row gets the lineage of its own subquery
result: Spark decorrelates it into a join against the subquery grouped by its correlation
keys.  The rules ``subquery_condition`` and ``subquery_value`` then move the copies into
the rows' lineage.

Under ``semantics="data"`` subqueries in WHERE and HAVING contribute nothing and get no
copy; scalar subqueries in the SELECT list compute output values and always do.

>>> from dltrace.rewriter import rewrite_sql, PAPER_SCHEMA
>>> print(rewrite_sql("SELECT i_name FROM item WHERE i_id IN (SELECT i_id FROM sales WHERE s_id = 1 AND num > 1500)", PAPER_SCHEMA))
SELECT item.i_name AS i_name, CONCAT(ARRAY(item._dl_id), SORT_ARRAY((SELECT SORT_ARRAY(COLLECT_LIST(sales._dl_id)) AS __dl FROM sales AS sales WHERE sales.s_id = 1 AND sales.num > 1500))) AS DL FROM item AS item WHERE item.i_id IN (SELECT sales.i_id AS i_id FROM sales AS sales WHERE sales.s_id = 1 AND sales.num > 1500)
"""  # noqa: E501

from __future__ import annotations

from collections.abc import Iterator

from sqlglot import exp

from dltrace.rewriter.aggregate import is_aggregate, only_if_rows_read
from dltrace.rewriter.clauses import conjuncts, defined_names, sources
from dltrace.rewriter.context import CLAUSE, SKIP, WHOLE_INPUT, RewriteContext, unsupported
from dltrace.rewriter.representation import SET, call, empty_id_array
from dltrace.rewriter.terms import Term, tables_of

PLACEHOLDER = "__dlq"
SUPPORTED_CLAUSES = ("where", "having", "expressions")


def subquery_copies(expression: exp.Expression, context: RewriteContext) -> exp.Expression:
    """Place a lineage copy beside every expression subquery that contributes lineage."""
    for select in list(expression.find_all(exp.Select)):
        if not is_skipped(select):
            _copy_subqueries(select, context)
    return expression


def in_lineage_copy(node: exp.Expression) -> bool:
    """True inside a lineage copy, whose sets are always native (see ``lineage_term``)."""
    return _marked(node, CLAUSE)


def is_skipped(node: exp.Expression) -> bool:
    """True inside an original subquery, which keeps its plain SQL."""
    return _marked(node, SKIP)


def ctes_read_by_copies(expression: exp.Expression) -> frozenset[str]:
    """The CTEs a lineage copy reads, directly or through other CTEs.

    A copy becomes a scalar subquery, where Spark cannot run Python UDFs, so these CTEs are
    rewritten with native sets too (their lineage columns would be roBDDs otherwise, which
    the copy would have to decode in Python).
    """
    with_ = expression.args.get("with_")
    if with_ is None:
        return frozenset()
    bodies = {cte.alias_or_name.lower(): cte.this for cte in with_.expressions}
    pending = [t.name.lower() for copy in expression.find_all(exp.Select) if copy.meta.get(CLAUSE)
               for t in copy.find_all(exp.Table)]
    found: set[str] = set()
    while pending:
        name = pending.pop()
        if name in bodies and name not in found:
            found.add(name)
            pending.extend(t.name.lower() for t in bodies[name].find_all(exp.Table))
    return frozenset(found)


def in_cte(node: exp.Expression | None, names: frozenset[str]) -> bool:
    """True when ``node`` is (inside) the body of one of the CTEs ``names``."""
    while node is not None:
        if isinstance(node, exp.CTE) and node.alias_or_name.lower() in names:
            return True
        node = node.parent
    return False


def _marked(node: exp.Expression | None, key: str) -> bool:
    """True when ``node`` or one of its ancestors carries ``key`` in its meta."""
    while node is not None:
        if node.meta.get(key):
            return True
        node = node.parent
    return False


def _copy_subqueries(select: exp.Select, context: RewriteContext) -> None:
    for index, query in enumerate(list(expression_subqueries(select))):
        clause = clause_of(query, select)
        if clause not in SUPPORTED_CLAUSES:
            raise unsupported(query, f"a subquery in {clause.upper().rstrip('_')}")
        query.meta[SKIP] = True
        if clause != "expressions" and context.semantics == "data":
            continue
        if _always_empty(query, select) and not query.meta.get(WHOLE_INPUT):
            continue
        copy = query.copy()
        copy.meta[SKIP] = False
        copy.meta[CLAUSE] = clause
        if query.meta.get(WHOLE_INPUT):
            copy.set("where", None)
        placeholder = exp.Alias(this=exp.Subquery(this=copy), alias=exp.to_identifier(f"{PLACEHOLDER}{index}"))
        select.append("expressions", placeholder)
        for inner in list(copy.find_all(exp.Select)):  # the copy itself first, then its inner queries
            if not is_skipped(inner):
                _copy_subqueries(inner, context)


def _always_empty(query: exp.Expression, select: exp.Select) -> bool:
    """A ``NOT EXISTS`` conjunct of WHERE: rows pass only when its result is empty, so the
    lineage it adds (DLUNION of its result rows) is always ∅."""
    node = query.parent
    if not isinstance(node, exp.Exists) or not isinstance(node.parent, exp.Not):
        return False
    node = node.parent
    while isinstance(node.parent, (exp.And, exp.Paren)):
        node = node.parent
    return isinstance(node.parent, exp.Where) and node.parent.parent is select


def expression_subqueries(select: exp.Select) -> Iterator[exp.Expression]:
    """Queries used as values or predicates by ``select`` itself (not by nested queries)."""
    stack = [value for key, value in select.args.items() if key not in ("from_", "joins", "with_")]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(node)
            continue
        if not isinstance(node, exp.Expression):
            continue
        if isinstance(node, (exp.Select, exp.SetOperation)):
            yield node
            continue
        stack.extend(node.iter_expressions())


def clause_of(node: exp.Expression, select: exp.Select) -> str:
    """The argument of ``select`` that contains ``node``: where, having, expressions, ..."""
    while node.parent is not select:
        node = node.parent
    return node.arg_key


def placeholders(select: exp.Select, clauses: tuple[str, ...]) -> list[exp.Expression]:
    """The lineage copies of ``select``'s subqueries standing in ``clauses``."""
    return [
        e for e in select.expressions
        if e.alias_or_name.startswith(PLACEHOLDER) and e.this.this.meta.get(CLAUSE) in clauses
    ]


def lineage_term(placeholder: exp.Expression, context: RewriteContext) -> Term | None:
    """Turn a rewritten lineage copy into the DLUNION of its rows, as a scalar subquery term
    (None when no table in it contributes ids, e.g. under impact re-evaluation)."""
    outer_select = placeholder.parent
    placeholder.pop()
    query = placeholder.this.this
    lineage = context.lineage.of(query)
    if not lineage.output:
        return None
    correlated = is_correlated(query)
    representation = SET  # no Python UDFs inside scalar subqueries (Spark cannot run them there)
    if isinstance(query, exp.Select) and not query.args.get("group") and not query.args.get("limit"):
        terms = lineage.projected
        if not is_aggregate(query):
            # DLUNION over the copy's rows: a set they all share counts only when there are rows
            terms = tuple(only_if_rows_read(t) if t.shared and isinstance(t.sql, exp.Subquery)
                          else representation.aggregate(t) for t in terms)
        value = representation.as_set(terms)
        if not correlated:  # sorted once here, so every row's sort of a union with it is nearly free
            value = call("sort_array", value)
        query.set("expressions", [exp.alias_(value, "__dl")])
        query.set("order", None)
        scalar = query
        if correlated:
            reduce_to_outer_rows(query, outer_select, context.table_rows or {})
        if correlated and (split := split_inequality(query)) is not None:
            return Term(split, SET.set_kind, tables_of(terms), nullable=True)
    else:
        if correlated:
            raise unsupported(query, "a correlated subquery with GROUP BY, LIMIT or a set operation")
        restrict_to_surviving_groups(query)
        terms = lineage.output
        inner = tuple(representation.aggregate(t.at(exp.column(t.sql.name, table="__dlq"))) for t in terms)
        scalar = exp.select(exp.alias_(call("sort_array", representation.as_set(inner)), "__dl")).from_(
            exp.Subquery(this=query, alias=exp.TableAlias(this=exp.to_identifier("__dlq")))
        )
        terms = inner
    # an uncorrelated copy is a global aggregate: exactly one row, never NULL
    return Term(exp.Subquery(this=scalar), SET.set_kind, tables_of(terms), nullable=correlated, shared=not correlated)


KEYS_ALIAS = "__dlkeys"
GROUPS_ALIAS = "__dlgroups"


def restrict_to_surviving_groups(query: exp.Expression) -> None:
    """Let a grouped copy with HAVING collect ids only for the groups HAVING keeps.

    Spark builds every group's id list before HAVING drops most groups (TPC-H Q18: 1.5M
    orders' lists for 57 orders).  The copy's rows are restricted to group keys of the
    plain query's result first: a surviving group keeps all its rows, so its aggregates, its
    HAVING and its lineage are unchanged, and the others would be dropped anyway.  Keys are
    compared null-safely (a NULL group is a group).
    """
    if not isinstance(query, exp.Select) or not query.args.get("having") or query.args.get("limit"):
        return
    group = query.args.get("group")
    if group is None or not group.expressions or any(query.find_all(exp.Window)):
        return
    keys = query.copy()
    keys.set("expressions", [exp.alias_(g.copy(), f"k{i}") for i, g in enumerate(group.expressions)])
    keys.set("order", None)
    matches = [
        exp.NullSafeEQ(this=exp.column(f"k{i}", table=GROUPS_ALIAS), expression=g.copy())
        for i, g in enumerate(group.expressions)
    ]
    survivors = (
        exp.select("1")
        .from_(exp.Subquery(this=keys, alias=exp.TableAlias(this=exp.to_identifier(GROUPS_ALIAS))))
        .where(exp.and_(*matches))
    )
    query.where(exp.Exists(this=survivors), copy=False)


def reduce_to_outer_rows(scalar: exp.Select, outer_select: exp.Select, table_rows: dict[str, int]) -> None:
    """Restrict a copy correlated by ``inner = outer`` equalities on one outer table to the
    keys of that table's rows that pass the outer WHERE's own filters on it.

    The copy's value is needed only for outer rows that survive WHERE, and their keys pass
    this semi-join; Spark then aggregates the inner rows of those keys only, not of every key
    (TPC-H Q4: the lineitems of one quarter's orders instead of all 6M; magic sets do the
    same).  Only a smaller outer table is worth it (the keys are read from it), and copies
    of any other shape are left as they are.
    """
    where, outer_where = scalar.args.get("where"), outer_select.args.get("where")
    if where is None or outer_where is None:
        return
    defined = defined_names(scalar)
    pairs = [pair for c in conjuncts(where) if isinstance(c, exp.EQ) and (pair := _inner_outer(c, defined))]
    aliases = {outer.table for _, outer in pairs}
    if len(aliases) != 1:
        return
    alias = aliases.pop()
    table = next((t for t in sources(outer_select) if isinstance(t, exp.Table) and t.alias_or_name == alias), None)
    filters = [c for c in conjuncts(outer_where) if _filters_only(c, alias)]
    inner_rows = max((table_rows.get(t.name.lower(), 0) for t in scalar.find_all(exp.Table)), default=0)
    if table is None or not filters or table_rows.get(table.name.lower(), 0) >= inner_rows:
        return

    def renamed(node: exp.Expression) -> exp.Expression:
        node = node.copy()
        for column in node.find_all(exp.Column):
            if column.table == alias:
                column.set("table", exp.to_identifier(KEYS_ALIAS))
        return node

    keys = exp.select(*(renamed(outer) for _, outer in pairs)).from_(
        exp.Table(this=table.this.copy(), alias=exp.TableAlias(this=exp.to_identifier(KEYS_ALIAS)))
    )
    keys.where(exp.and_(*(renamed(f) for f in filters)), copy=False)
    inner = pairs[0][0].copy() if len(pairs) == 1 else exp.Tuple(expressions=[i.copy() for i, _ in pairs])
    scalar.set("where", exp.Where(this=exp.and_(where.this, exp.In(this=inner, query=exp.Subquery(this=keys)))))


def _filters_only(condition: exp.Expression, alias: str) -> bool:
    """True when ``condition`` reads columns of ``alias`` and nothing else of the outer
    query; subqueries in it must not be correlated to ``alias`` (recomputing them for the
    keys would cost what the reduction saves)."""
    local = defined_names(condition)
    own = [c for c in condition.find_all(exp.Column) if c.table == alias]
    nested = [c for q in condition.find_all(exp.Select) for c in q.find_all(exp.Column) if c.table == alias]
    return (
        bool(own) and not nested and all(c.table == alias or c.table in local for c in condition.find_all(exp.Column))
    )


def split_inequality(scalar: exp.Select) -> exp.Expression | None:
    """A copy correlated through one ``inner <> outer`` as the difference of two copies
    correlated by equalities only (None when the copy is not of that shape).

    Spark decorrelates a non-equality correlation with a domain join: the distinct outer
    values crossed with the whole inner input (TPC-H Q21: every lineitem row times each
    supplier key, billions of pairs).  For a non-NULL outer value ``o``, the rows with
    ``r.c <> o`` are those with ``r.c IS NOT NULL`` minus those with ``r.c = o``; for a NULL
    one there are none.  Both sides decorrelate into an aggregate joined back by key.
    """
    where = scalar.args.get("where")
    if where is None:
        return None
    parts = conjuncts(where)
    defined = defined_names(scalar)
    pairs = {id(c): _inner_outer(c, defined) for c in parts}
    inequalities = [c for c in parts if isinstance(c, exp.NEQ) and pairs[id(c)]]
    if len(inequalities) != 1:
        return None
    for conjunct in parts:
        outer_columns = [c for c in conjunct.find_all(exp.Column) if c.table and c.table not in defined]
        if (
            outer_columns
            and conjunct is not inequalities[0]
            and not (isinstance(conjunct, exp.EQ) and pairs[id(conjunct)])
        ):
            return None
    inner, outer = pairs[id(inequalities[0])]

    def replacing_inequality(condition: exp.Expression) -> exp.Select:
        variant = scalar.copy()
        variant.set(
            "where", exp.Where(this=exp.and_(*(condition if c is inequalities[0] else c.copy() for c in parts)))
        )
        return variant

    non_null = replacing_inequality(exp.Not(this=exp.Is(this=inner.copy(), expression=exp.Null())))
    equal = replacing_inequality(exp.EQ(this=inner.copy(), expression=outer.copy()))
    difference = call("array_except", exp.Subquery(this=non_null), exp.Subquery(this=equal))
    return exp.Case(
        ifs=[exp.If(this=exp.Is(this=outer.copy(), expression=exp.Null()), true=empty_id_array())], default=difference
    )


def _inner_outer(condition: exp.Expression, defined: set[str]) -> tuple[exp.Column, exp.Column] | None:
    """``(inner column, outer column)`` of a comparison between one of each, else None."""
    if not isinstance(condition, (exp.EQ, exp.NEQ)):
        return None
    sides = [condition.this, condition.expression]
    if not all(isinstance(side, exp.Column) and side.table for side in sides):
        return None
    inner = [side for side in sides if side.table in defined]
    outer = [side for side in sides if side.table not in defined]
    return (inner[0], outer[0]) if len(inner) == 1 and len(outer) == 1 else None


def reads_same_rows(copy: exp.Select, select: exp.Select) -> bool:
    """True when the uncorrelated lineage copy reads exactly the rows ``select`` reads (the
    same FROM, joins and WHERE, as in TPC-H Q11's HAVING): then every id of ``select``'s
    groups is also in the copy's lineage, which alone is each group's union with it."""
    def rows_of(query: exp.Select) -> list[str | None]:
        parts = [query.args.get("from_"), *(query.args.get("joins") or []), query.args.get("where")]
        return [part.sql(dialect="spark") if part is not None else None for part in parts]

    return isinstance(copy, exp.Select) and not is_correlated(copy) and rows_of(copy) == rows_of(select)


def is_correlated(query: exp.Expression) -> bool:
    """True when ``query`` reads a column of a table it does not itself define."""
    defined = defined_names(query)
    return any(c.table and c.table not in defined for c in query.find_all(exp.Column))
