"""Rules: every subquery used in an expression gets a *lineage copy* (paper §3.4, Q8 -> Q9).

The subquery itself stays where it is, untouched, so the query filters and computes exactly
as before.  ``subquery_copies`` (whole query) places its copy in the enclosing SELECT list
as a scalar subquery, marked (``CLAUSE``) with the clause it copies:

>>> from dltrace.rewriter import rewrite_sql, only, PAPER_SCHEMA
>>> print(rewrite_sql("SELECT i_name FROM item WHERE i_id IN (SELECT i_id FROM sales WHERE num > 1500)", PAPER_SCHEMA,
...                   rules=only("qualify", "subquery_copies")))
SELECT item.i_name AS i_name, (SELECT sales.i_id AS i_id FROM sales AS sales WHERE sales.num > 1500) AS __dlq0 FROM item AS item WHERE item.i_id IN (SELECT sales.i_id AS i_id FROM sales AS sales WHERE sales.num > 1500)

The copy is rewritten like any query, and ``copy_lineage`` (per scope) makes it the DLUNION
of the subquery's result rows.  A correlated copy stays correlated, so each outer row gets
the lineage of its own subquery result: Spark decorrelates it into a join against the
subquery grouped by its correlation keys.  The rules ``subquery_condition`` and
``subquery_value`` then move the copies into the rows' lineage; the speed-ups
(``uncorrelated_copies``, ``surviving_groups``, ``semi_join_reduction``,
``inequality_split``) change how a copy is computed, not what it holds.

Under ``semantics="data"`` subqueries in WHERE and HAVING contribute nothing and get no
copy; scalar subqueries in the SELECT list compute output values and always do.

>>> print(rewrite_sql("SELECT i_name FROM item WHERE i_id IN (SELECT i_id FROM sales WHERE num > 1500)", PAPER_SCHEMA))
SELECT item.i_name AS i_name, CONCAT(ARRAY(item._dl_id), (SELECT SORT_ARRAY(COLLECT_LIST(sales._dl_id)) AS __dl FROM sales AS sales WHERE sales.num > 1500)) AS DL FROM item AS item WHERE item.i_id IN (SELECT sales.i_id AS i_id FROM sales AS sales WHERE sales.num > 1500)
"""  # noqa: E501

from __future__ import annotations

from collections.abc import Iterator

from sqlglot import exp

from dltrace.rewriter.aggregate import is_aggregate, only_if_rows_read
from dltrace.rewriter.context import CLAUSE, COPY_OF, SKIP, WHOLE_INPUT, RewriteContext, reads_keys, unsupported
from dltrace.rewriter.representation import SET
from dltrace.rewriter.terms import Term, tables_of

# a lineage copy's alias: numbered in the enclosing SELECT list (``__dlq0``, ...), and as is for
# a grouped copy's rows, read by the DLUNION above them
COPY_ALIAS = "__dlq"
SUPPORTED_CLAUSES = ("where", "having", "expressions")


def subquery_copies(expression: exp.Expression, context: RewriteContext) -> exp.Expression:
    """Place a lineage copy beside every expression subquery that contributes lineage."""
    for select in list(expression.find_all(exp.Select)):
        if not is_skipped(select):
            _copy_subqueries(select, context)
    return expression


def in_lineage_copy(node: exp.Expression) -> bool:
    """True inside a lineage copy, whose sets are always native (see ``copy_lineage``)."""
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
    for join in select.args.get("joins") or []:
        condition = join.args.get("on")
        query = condition.find(exp.Select, exp.SetOperation) if condition is not None else None
        if query is not None:  # its lineage would need a copy per joined pair: refused, never wrong
            raise unsupported(query, "a subquery in a JOIN condition")
    for index, query in enumerate(list(expression_subqueries(select))):
        clause = clause_of(query, select)
        if clause not in SUPPORTED_CLAUSES:
            raise unsupported(query, f"a subquery in {clause.upper().rstrip('_')}")
        query.meta[SKIP] = True
        if clause != "expressions" and context.semantics == "data" or reads_keys(query):
            continue
        if _always_empty(query, select) and not query.meta.get(WHOLE_INPUT):
            continue
        query.meta[COPY_OF] = next(context.copy_numbers)
        copy = place_copy(select, query, clause, f"{COPY_ALIAS}{index}")
        if query.meta.get(WHOLE_INPUT):
            copy.set("where", None)
        for inner in list(copy.find_all(exp.Select)):  # the copy itself first, then its inner queries
            if not is_skipped(inner):
                _copy_subqueries(inner, context)


def place_copy(select: exp.Select, query: exp.Expression, clause: str, name: str) -> exp.Expression:
    """Put a lineage copy of ``query`` (``clause``: where it stands) in ``select``'s SELECT
    list as ``name``, and return it (it keeps ``query``'s meta, ``COPY_OF`` included)."""
    copy = query.copy()
    copy.meta[SKIP] = False
    copy.meta[CLAUSE] = clause
    select.append("expressions", exp.Alias(this=exp.Subquery(this=copy), alias=exp.to_identifier(name)))
    return copy


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


def take_copies(select: exp.Select, clauses: tuple[str, ...]) -> list[exp.Expression]:
    """Remove from ``select``'s SELECT list the lineage copies of its subqueries standing in
    ``clauses``, and return them (their lineage: ``context.lineage.of(copy).output``)."""
    placeholders = [
        e for e in select.expressions
        if e.alias_or_name.startswith(COPY_ALIAS) and e.this.this.meta.get(CLAUSE) in clauses
    ]
    for placeholder in placeholders:
        placeholder.pop()
    return [placeholder.this.this for placeholder in placeholders]


def is_lineage_copy(query: exp.Expression) -> bool:
    """True for a lineage copy itself (not a query inside one)."""
    return query.meta.get(CLAUSE) is not None


def copy_lineage(query: exp.Expression, context: RewriteContext) -> exp.Expression:
    """A rewritten lineage copy becomes the DLUNION of its rows: its ``output`` is one
    scalar-subquery term (none when no table in it contributes ids, e.g. under impact
    re-evaluation), on native sets (no Python UDFs inside scalar subqueries)."""
    if not is_lineage_copy(query):
        return query
    lineage = context.lineage.of(query)
    if not lineage.output:
        return query
    correlated = context.scope.is_correlated_subquery
    if isinstance(query, exp.Select) and not query.args.get("group") and not query.args.get("limit"):
        terms = lineage.projected
        if not is_aggregate(query):
            # DLUNION over the copy's rows: a set they all share counts only when there are rows
            terms = tuple(only_if_rows_read(t) if t.shared and isinstance(t.sql, exp.Subquery) else SET.aggregate(t)
                          for t in terms)
        query.set("expressions", [exp.alias_(SET.as_set(terms), "__dl")])
        query.set("order", None)
        scalar = query
    else:
        if correlated:
            raise unsupported(query, "a correlated subquery with GROUP BY, LIMIT or a set operation")
        # a UNION ALL passes up the sets all its inputs share as subqueries (set_operation.py)
        terms = tuple(only_if_rows_read(t) if isinstance(t.sql, exp.Subquery)
                      else SET.aggregate(t.at(exp.column(t.sql.name, table=COPY_ALIAS))) for t in lineage.output)
        scalar = exp.select(exp.alias_(SET.as_set(terms), "__dl")).from_(
            exp.Subquery(this=query, alias=exp.TableAlias(this=exp.to_identifier(COPY_ALIAS)))
        )
    # an uncorrelated copy is a global aggregate: exactly one row, never NULL
    lineage.output = (Term(exp.Subquery(this=scalar), SET.set_kind, tables_of(terms), nullable=correlated),)
    return query
