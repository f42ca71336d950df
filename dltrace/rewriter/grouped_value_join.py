"""Speed-up rule: a correlated aggregate in WHERE and its lineage copy become one grouped join.

``x > (SELECT 0.5 * SUM(q) FROM t WHERE t.k = o.k)`` has, under control semantics, a copy
that collects the ids of the same rows (``subquery_condition``).  Spark decorrelates each of
the two into its own aggregate of ``t`` grouped by ``k``, so ``t`` is read and grouped twice
(TPC-H Q20 reads lineitem once more for the value than for the lineage, Q2 partsupp).  Here
both come from one aggregate, joined to the outer rows as Spark joins a decorrelated
subquery: ``LEFT JOIN (SELECT k, value, DLUNION(ids) FROM t GROUP BY k) ON k = o.k``.

>>> from dltrace.rewriter import rewrite_sql, without, PAPER_SCHEMA
>>> query = ("SELECT s_name FROM store d WHERE d.s_id > 2 AND "
...          "10 < (SELECT SUM(s.num) FROM sales s WHERE s.s_id = d.s_id AND s.price > 5)")
>>> print(rewrite_sql(query, PAPER_SCHEMA))
SELECT d.s_name AS s_name, CONCAT(ARRAY(d._dl_id), SORT_ARRAY(COALESCE(__dlv0.__dl, SLICE(ARRAY(CAST(0 AS BIGINT)), 1, 0)))) AS DL FROM store AS d LEFT JOIN (SELECT s.s_id AS __dlk0, SUM(s.num) AS __dlv, COLLECT_LIST(s._dl_id) AS __dl FROM sales AS s WHERE s.price > 5 GROUP BY s.s_id) AS __dlv0 ON __dlv0.__dlk0 = d.s_id WHERE d.s_id > 2 AND 10 < __dlv0.__dlv
>>> print(rewrite_sql(query, PAPER_SCHEMA, rules=without("grouped_value_join")))
SELECT d.s_name AS s_name, CONCAT(ARRAY(d._dl_id), SORT_ARRAY(COALESCE((SELECT COLLECT_LIST(s._dl_id) AS __dl FROM sales AS s WHERE s.s_id = d.s_id AND s.price > 5), SLICE(ARRAY(CAST(0 AS BIGINT)), 1, 0)))) AS DL FROM store AS d WHERE d.s_id > 2 AND 10 < (SELECT SUM(s.num) AS _col_0 FROM sales AS s WHERE s.s_id = d.s_id AND s.price > 5)

Exact where it applies: the subquery is one aggregate over its rows (no GROUP BY, HAVING,
DISTINCT, LIMIT, OFFSET), correlated only by ``inner = outer`` equalities between catalog
columns of one type, the outer ones of the enclosing SELECT's own sources, and its value is
NULL over no rows (SUM, AVG, MIN and MAX in arithmetic; not COUNT): an outer row without
inner rows gets NULL from the LEFT JOIN as from the subquery, and the empty set from the
COALESCE as from the copy.  Grouped by the inner columns, the aggregate has one row per
key, and with keys of one type an outer row meets at most one, so the join neither drops
nor repeats outer rows.  Anything else keeps the subquery and its copy.  When
``semi_join_reduction`` restricted the copy to the keys of the outer rows that pass the
outer WHERE's filters, the aggregate keeps that restriction, value included: an outer row
outside those keys fails those filters anyway (TPC-H Q17 then groups the lineitems of 204
parts, not of 200,000, and beats the plain query).

Inside a lineage copy (TPC-H Q20: the correlated aggregate sits in an IN subquery, whose
copy every row shares), the original subquery reads the same grouped join too, so that
Spark computes the aggregate once and reuses it for the copy (``ReusedExchange``) instead
of reading lineitem twice (docs/performance.md, "Measurements behind design choices").  The original does
not read the ids, and Spark would drop them from its aggregate, which then differs from the
copy's; a filter that is true for every row reads them.
"""  # noqa: E501

from __future__ import annotations

from dataclasses import replace

from sqlglot import exp

from dltrace.rewriter.clauses import catalog_type, conjuncts, sources
from dltrace.rewriter.context import COPY_OF, SKIP, RewriteContext, reads_keys
from dltrace.rewriter.subquery_copies import expression_subqueries

GROUPED = "__dlv"  # the grouped aggregate: its value column, and numbered its alias (``__dlv0``, ...)
KEY = "__dlk"  # its key columns (``__dlk0``, ...)
LINEAGE = "__dl"  # its lineage column, the copy's
# what a value may be built of so that it is NULL when its aggregates see no rows: these
# aggregates, and nodes that give NULL when an operand is NULL
NULL_ON_EMPTY = (exp.Sum, exp.Avg, exp.Min, exp.Max)
NULL_PRESERVING = (exp.Column, exp.Identifier, exp.Literal, exp.Paren, exp.Add, exp.Sub, exp.Mul, exp.Div, exp.Neg,
                   exp.Cast, exp.DataType, exp.Distinct)
# functions that may give another value when the reduction's keys are computed again
NONDETERMINISTIC = (exp.Rand, exp.Randn, exp.Uuid, exp.Anonymous)


def grouped_value_join(select: exp.Expression, context: RewriteContext) -> exp.Expression:
    """Replace each correlated aggregate of WHERE, and its copy, by one grouped LEFT JOIN."""
    if not isinstance(select, exp.Select) or context.scope.is_correlated_subquery or select.args.get("where") is None:
        return select
    lineage = context.lineage.of(select)
    copies = {term.sql.this.meta[COPY_OF]: term for term in lineage.rows
              if isinstance(term.sql, exp.Subquery) and COPY_OF in term.sql.this.meta}
    own = {source.alias_or_name: source for source in sources(select)}
    for subquery in list(expression_subqueries(select)):
        copy_term = copies.get(subquery.meta.get(COPY_OF))
        if copy_term is None or not _in_where(subquery, select):
            continue
        keys = _correlation_keys(subquery, own, context.schemas)
        copy = copy_term.sql.this
        if keys is None or not _is_copy_of(copy, subquery, keys):
            continue
        original = _original_of(select, subquery)  # found by the subquery's SQL, so before it is replaced
        alias = _next_alias(select)
        grouped = exp.select(
            *(exp.alias_(inner.copy(), f"{KEY}{i}") for i, (inner, _) in enumerate(keys)),
            exp.alias_(_value(subquery).copy(), GROUPED),
            exp.alias_(copy.expressions[0].this.copy(), LINEAGE),
        )
        grouped.set("from_", copy.args["from_"].copy())
        grouped.set("joins", [join.copy() for join in copy.args.get("joins") or []])
        local = _local_conjuncts(copy, keys, reduction=True)  # the copy's keys restrict the value too
        if local:
            grouped.where(exp.and_(*(c.copy() for c in local)), copy=False)
        grouped.group_by(*(inner.copy() for inner, _ in keys), copy=False)
        _join_grouped(select, subquery, grouped, alias, keys)
        if original is not None:  # the same aggregate in the query itself: Spark computes it once
            original_select, original_subquery = original
            original_alias = _next_alias(original_select)
            _join_grouped(original_select, original_subquery, grouped.copy(), original_alias, keys)
            # Spark drops aggregates nobody reads; this filter, true for every row (SIZE(NULL)
            # is NULL, or -1 without ANSI), reads the ids, so both aggregates stay alike and
            # Spark reuses one's exchange for the other
            ids = exp.column(LINEAGE, table=original_alias)
            kept = exp.or_(exp.Is(this=ids, expression=exp.Null()),
                           exp.GTE(this=exp.func("SIZE", ids.copy()), expression=exp.Literal.number(0)))
            original_select.where(kept, copy=False)
        lineage.rows = tuple(replace(t.at(exp.column(LINEAGE, table=alias)), nullable=True) if t is copy_term else t
                             for t in lineage.rows)
    return select


def _next_alias(select: exp.Select) -> str:
    return f"{GROUPED}{sum(1 for s in sources(select) if s.alias_or_name.startswith(GROUPED))}"


def _join_grouped(select: exp.Select, subquery: exp.Select, grouped: exp.Select, alias: str,
                  keys: list[tuple[exp.Column, exp.Column]]) -> None:
    """LEFT JOIN ``grouped`` to ``select`` on the correlation's keys, and read the subquery's
    value from it."""
    on = exp.and_(*(exp.EQ(this=exp.column(f"{KEY}{i}", table=alias), expression=outer.copy())
                    for i, (_, outer) in enumerate(keys)))
    select.join(exp.Subquery(this=grouped, alias=exp.TableAlias(this=exp.to_identifier(alias))),
                on=on, join_type="left", copy=False)
    subquery.parent.replace(exp.column(GROUPED, table=alias))


def _original_of(copy: exp.Select, subquery: exp.Select) -> tuple[exp.Select, exp.Select] | None:
    """When ``copy`` is the lineage copy of an original subquery (which keeps its plain SQL),
    that original and its own instance of ``subquery``, found by its SQL (both are as the
    user wrote them): the one query of the same ``COPY_OF`` number marked ``SKIP``."""
    number = copy.meta.get(COPY_OF)
    if number is None:
        return None
    originals = [q for q in copy.root().find_all(exp.Select) if q.meta.get(COPY_OF) == number and q.meta.get(SKIP)]
    if len(originals) != 1:
        return None
    text = subquery.sql()
    matches = [q for q in expression_subqueries(originals[0]) if q.sql() == text]
    return (originals[0], matches[0]) if len(matches) == 1 and _in_where(matches[0], originals[0]) else None


def _in_where(subquery: exp.Expression, select: exp.Select) -> bool:
    """True for a scalar subquery (a value, not IN or EXISTS) of ``select``'s WHERE."""
    parent = subquery.parent
    if not isinstance(parent, exp.Subquery) or isinstance(parent.parent, (exp.In, exp.Any, exp.All, exp.Exists)):
        return False
    node = parent
    while node.parent is not select:
        node = node.parent
    return node.arg_key == "where"


def _correlation_keys(subquery: exp.Expression, own: dict[str, exp.Expression],
                      schemas: dict[str, dict[str, str]]) -> list[tuple[exp.Column, exp.Column]] | None:
    """``(inner, outer)`` columns of the subquery's correlation, when it is one aggregate
    over its rows whose only outer references are WHERE equalities to ``own`` sources,
    between columns of tables of the same type (compared after a conversion, two inner keys
    could meet one outer value, and the join would repeat the outer row)."""
    shaped = ("group", "having", "distinct", "limit", "offset", "order", "with_", "qualify")
    if not isinstance(subquery, exp.Select) or len(subquery.expressions) != 1 or any(map(subquery.args.get, shaped)):
        return None
    value = _value(subquery)
    if not value.find(*NULL_ON_EMPTY) or not all(isinstance(node, (*NULL_ON_EMPTY, *NULL_PRESERVING))
                                                for node in value.walk()):
        return None
    if any(column.find_ancestor(*NULL_ON_EMPTY) is None for column in value.find_all(exp.Column)):
        return None
    top = {source.alias_or_name: source for source in sources(subquery)}
    keys, correlating = [], []
    for condition in conjuncts(subquery.args.get("where")):
        sides = [condition.this, condition.expression] if isinstance(condition, exp.EQ) else []
        if sides and all(isinstance(side, exp.Column) for side in sides):
            inner = [side for side in sides if side.table in top]
            outer = [side for side in sides if not _defined_within(side, subquery) and side.table in own]
            if len(inner) == 1 and len(outer) == 1 and _same_type(inner[0], top, outer[0], own, schemas):
                keys.append((inner[0], outer[0]))
                correlating.append(condition)
    external = [c for c in subquery.find_all(exp.Column) if not _defined_within(c, subquery)]
    if not keys or any(not any(c.parent is e for e in correlating) for c in external):
        return None
    return keys


def _defined_within(column: exp.Column, subquery: exp.Select) -> bool:
    """True when ``column``'s table is a source of a query between it and ``subquery``
    (inclusive): the innermost query naming the alias is the one it reads."""
    query = column.find_ancestor(exp.Select)
    while query is not None:
        if column.table in {source.alias_or_name for source in sources(query)}:
            return True
        if query is subquery:
            return False
        query = query.parent.find_ancestor(exp.Select) if query.parent else None
    return False


def _same_type(inner: exp.Column, inner_sources: dict[str, exp.Expression], outer: exp.Column,
               outer_sources: dict[str, exp.Expression], schemas: dict[str, dict[str, str]]) -> bool:
    """True when both columns are catalog columns of one type (unknown types: False)."""
    kind = catalog_type(inner, inner_sources.get(inner.table), schemas)
    return kind is not None and kind == catalog_type(outer, outer_sources.get(outer.table), schemas)


def _is_copy_of(copy: exp.Expression, subquery: exp.Select, keys: list[tuple[exp.Column, exp.Column]]) -> bool:
    """True when ``copy`` is the DLUNION of the subquery's own rows: sources of the same
    aliases, the same WHERE conjuncts but the correlation (and a semi-join reduction), one
    ``__dl`` column, no grouping."""
    if not isinstance(copy, exp.Select) or len(copy.expressions) != 1 or copy.expressions[0].alias != LINEAGE or any(
        copy.args.get(arg) for arg in ("group", "having", "distinct", "limit", "with_")
    ):
        return False
    if [s.alias_or_name for s in sources(copy)] != [s.alias_or_name for s in sources(subquery)]:
        return False
    original = sorted(c.sql() for c in _local_conjuncts(subquery, keys))
    return sorted(c.sql() for c in _local_conjuncts(copy, keys)) == original


def _local_conjuncts(query: exp.Select, keys: list[tuple[exp.Column, exp.Column]],
                     reduction: bool = False) -> list[exp.Expression]:
    """The WHERE conjuncts of ``query`` but its correlation (and a semi-join reduction's keys
    unless ``reduction``)."""
    correlation = {exp.EQ(this=inner, expression=outer).sql() for inner, outer in keys} | {
        exp.EQ(this=outer, expression=inner).sql() for inner, outer in keys}
    # a semi-join reduction ANDs its keys to the copy's WHERE: (corr AND filters) AND keys
    return [part for part in conjuncts(query.args.get("where")) if part.sql() not in correlation
            and (not reads_keys(part) or reduction and _plain_keys(part))]


def _plain_keys(reduction: exp.Expression) -> bool:
    """True when the reduction's keys come from its table's rows by plain filters: no
    subquery, and no function that may give another value when the keys are computed again
    (an outer row would then lose its value, and the query the row).  Keys that a subquery
    filters come from a join Spark cannot size when it plans, and cost more than they save
    (TPC-H Q20 is slower with them, Q17, whose keys come from part's filters, much faster:
    docs/performance.md, "Measurements behind design choices")."""
    return len(list(reduction.find_all(exp.Select))) == 1 and not reduction.find(*NONDETERMINISTIC)


def _value(subquery: exp.Select) -> exp.Expression:
    """The subquery's one output expression, without its alias."""
    value = subquery.expressions[0]
    return value.this if isinstance(value, exp.Alias) else value
