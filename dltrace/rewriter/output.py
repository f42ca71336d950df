"""Rule: the result's lineage leaves the query as one column ``DL``.

The ``__dl`` columns of the outermost query become a single ``DL`` value (for sets: the
ids sorted ascending).  Spark computes a grouped query's SELECT list for every group
before HAVING drops most of them, so after a HAVING the value is assembled in a thin
projection above the query, for the surviving groups only.

>>> from dltrace.rewriter import rewrite_sql, PAPER_SCHEMA
>>> print(rewrite_sql("SELECT a.s_id, b.s_id FROM store a, store b WHERE a.s_name = b.s_name", PAPER_SCHEMA))
SELECT a.s_id AS s_id, b.s_id AS s_id, SORT_ARRAY(ARRAY_DISTINCT(ARRAY(a._dl_id, b._dl_id))) AS DL FROM store AS a INNER JOIN store AS b WHERE a.s_name = b.s_name

So it is above an ORDER BY when the rows share a set (an uncorrelated subquery's lineage,
under control semantics), which Spark would otherwise shuffle and sort in every row:

>>> print(rewrite_sql("SELECT s_id FROM sales WHERE price > (SELECT avg(price) FROM sales) ORDER BY s_id", PAPER_SCHEMA))
SELECT __dlout.s_id, SORT_ARRAY(ARRAY_DISTINCT(CONCAT(ARRAY(__dlout.__dl0), (SELECT SORT_ARRAY(COLLECT_LIST(sales._dl_id)) AS __dl FROM sales AS sales)))) AS DL FROM (SELECT sales.s_id AS s_id, sales._dl_id AS __dl0 FROM sales AS sales WHERE sales.price > (SELECT AVG(sales.price) AS _col_0 FROM sales AS sales) ORDER BY s_id) AS __dlout

Lineage every row shares (an uncorrelated subquery's, under control semantics) is spelled
out in every row's ``DL``; beside it the rule keeps the same result with that lineage held
apart (``meta[SHARED]``): ``DL`` with each row's own ids, and each shared set as a query of
its own, computed once.  That is what a saved result stores (docs/impact.md, "Shared lineage is held once"):

>>> from dltrace.rewriter import parse, rewrite, PAPER_CODES
>>> query = parse("SELECT s_id FROM sales WHERE price > (SELECT avg(price) FROM sales)")
>>> shared = rewrite(query, PAPER_SCHEMA, PAPER_CODES).meta[SHARED]
>>> print(shared.rows.sql(dialect="spark"))
SELECT sales.s_id AS s_id, ARRAY(sales._dl_id) AS DL FROM sales AS sales WHERE sales.price > (SELECT AVG(sales.price) AS _col_0 FROM sales AS sales)
>>> print(shared.sets[0].sql(dialect="spark"))
SELECT SORT_ARRAY(COLLECT_LIST(sales._dl_id)) AS __dl FROM sales AS sales
"""  # noqa: E501

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sqlglot import exp

from dltrace.rewriter.aggregate import has_many_groups
from dltrace.rewriter.clauses import sources
from dltrace.rewriter.context import DISJOINT_ROWS, MANY_GROUPS, SHARED, RewriteContext, ScopeLineage
from dltrace.rewriter.projection import is_symbolic
from dltrace.rewriter.representation import computed_in_python, computed_once, empty_id_array, typed_empty_array
from dltrace.rewriter.set_operation import replace_lineage_columns, set_lineage_columns
from dltrace.rewriter.terms import Kind, Lineage, Term, is_lineage_column, tables_of

OUTER = "__dlout"
ARGUMENT = "__dlarg"  # the arguments of a DL computed above the ORDER BY (_above_sort)
SHARED_SET = "__dlset"  # a shared set joined beside a one-row query (_assembled_above)

DL = "DL"
DL_NAMES = "DL_names"  # in SharedLineage.rows: the names of the sets held apart a row's DL holds
NAMED_SETS = "__dlnamed"  # the sets held apart as a map, name -> ids, to spell a DL out


@dataclass(frozen=True)
class SharedLineage:
    """A result's lineage with the sets every row shares held apart.

    ``rows`` is the query with each row's own ids in ``DL``; every row's full DL is that
    plus each of ``sets`` (queries of one row and one column: a sorted id array).
    ``disjoint``: no own id is in the DLs of two rows.
    """

    rows: exp.Expression
    sets: tuple[exp.Expression, ...]
    disjoint: bool
    # sets held apart that some rows each name (window partitions and frame blocks, planned
    # with ``windows_apart``): ``(__dlname, __dlids)`` rows, a set each, the names in ``rows``' DL_NAMES
    named: exp.Expression | None = None


def output(expression: exp.Expression, context: RewriteContext) -> exp.Expression:
    """Replace the outermost query's ``__dl`` columns by the final ``DL`` column."""
    query = expression.unnest()
    lineage = context.lineage.of(query)
    terms = lineage.output
    shared = [t for t in terms if is_symbolic(t, context)] if isinstance(query, exp.Select) else []
    named = _named_sets(context)
    split = None
    if shared or named is not None:
        with_ = query.args.get("with_")
        sets = []
        for term in shared:
            standalone = term.sql.this.copy()
            if with_ is not None:
                standalone.set("with_", with_.copy())
            sets.append(standalone)
        standalone_named = named.copy() if named is not None else None
        if standalone_named is not None and with_ is not None:
            standalone_named.set("with_", with_.copy())
        # the sets held apart: symbolic shared terms (of an outermost SELECT; under a set
        # operation they stay in DL) and names of window sets
        own = lambda term: term.kind is not Kind.REFS and not any(term is t for t in shared)  # noqa: E731
        rows = _with_names(expression.copy(), lineage, context, own) if named is not None else \
            _with_dl(expression.copy(), lineage, context, own)
        split = SharedLineage(rows, tuple(sets), disjoint_rows([t for t in terms if own(t)]), standalone_named)
    many_groups = has_many_groups(query, context)
    if named is not None:
        expression = _with_names(expression, lineage, context, lambda term: True, _lookup(named))
    else:
        expression = _with_dl(expression, lineage, context, lambda term: True)
    expression.meta[DISJOINT_ROWS] = disjoint_rows(terms)
    expression.meta[MANY_GROUPS] = many_groups
    if split is not None:
        expression.meta[SHARED] = split
    return expression


def _named_sets(context: RewriteContext) -> exp.Expression | None:
    """The sets the window rule held apart, ``(__dlname, __dlids)``, as one query (None: none)."""
    queries = context.lineage.held_apart
    if not queries:
        return None
    union = queries[0].copy()
    for query in queries[1:]:
        union = exp.union(union, query.copy(), distinct=False)
    return union if isinstance(union, exp.Select) else exp.select("*").from_(union.subquery("__dlsets"))


def _lookup(named: exp.Expression) -> exp.Select:
    """One row: every set held apart, as a map from its name to its ids (``NAMED_SETS``)."""
    return exp.select(f"MAP_FROM_ENTRIES(COLLECT_LIST(STRUCT(__dlname, __dlids))) AS {NAMED_SETS}").from_(
        named.copy().subquery("__dlmap"))


def _with_names(expression: exp.Expression, lineage: ScopeLineage, context: RewriteContext,
                keep: Callable[[Term], bool], lookup: exp.Select | None = None) -> exp.Select:
    """``SELECT cols, DL, DL_names FROM (expression) AS __dlout``: the rows with their own ids
    (the terms ``keep`` selects) in ``DL`` and the names of the sets held apart their DL
    holds in ``DL_names``, both from the ``__dl`` columns of the query (its order kept).

    With ``lookup`` (``_lookup``: one row, the map of every set held apart, joined beside the
    rows: Spark allows no subquery inside the lambda that reads it), the whole DL instead:
    the names looked up, their ids in ``DL``."""
    query = expression.unnest()
    names = [n for n in query.named_selects if not is_lineage_column(n)]
    outer = exp.select(*[exp.column(n, table=OUTER) for n in names]).from_(query.subquery(OUTER, copy=False))
    terms = [t if isinstance(t.sql, exp.Subquery) else t.at(exp.column(t.sql.name, table=OUTER))
             for t in lineage.output]
    refs = [exp.func("coalesce", t.sql, typed_empty_array("BIGINT")) for t in terms if t.kind is Kind.REFS]
    value = refs[0] if len(refs) == 1 else exp.func("array_distinct", exp.func("concat", *refs)) if refs else \
        typed_empty_array("BIGINT")
    if lookup is None:
        outer.select(exp.alias_(_dl(tuple(terms), context, keep), DL), copy=False)
        outer.select(exp.alias_(value, DL_NAMES), copy=False)
        return outer
    outer.join(lookup.subquery(NAMED_SETS), join_type="cross", copy=False)
    found = exp.func("coalesce", exp.Anonymous(this="try_element_at", expressions=[
        exp.column(NAMED_SETS, table=NAMED_SETS), exp.column("__dlr")]), empty_id_array())
    spelled = exp.func("array_distinct", exp.func("flatten", exp.func(
        "transform", value, exp.Lambda(this=found, expressions=[exp.to_identifier("__dlr")]))))
    # a query whose rows name no set (the window held apart is in a CTE it does not read) has none to spell
    ids = [t for t in terms if t.kind is not Kind.REFS] + ([Term(spelled, Kind.IDS, tables_of(terms))] if refs else [])
    outer.select(exp.alias_(_dl(tuple(ids), context, keep), DL), copy=False)
    return outer


def disjoint_rows(terms: Lineage) -> bool:
    """No id is in the DLs of two rows: each term's ids are carried by one row only
    (``unique``), and no two terms hold ids of one table (a row's customer ids through a
    saved step and another row's through the table itself may meet)."""
    seen: set[str] = set()
    for term in terms:
        if not term.unique or term.tables & seen:
            return False
        seen |= term.tables
    return True


def _with_dl(
    expression: exp.Expression, lineage: ScopeLineage, context: RewriteContext, keep: Callable[[Term], bool]
) -> exp.Expression:
    """``expression`` (the rewritten query whose lineage is ``lineage``, or a copy of it) with
    its ``__dl`` columns replaced by ``DL``, the union of the terms ``keep`` selects."""
    query = expression.unnest()
    if not isinstance(query, exp.Select):
        replace_lineage_columns(query, lambda terms: [(DL, _dl(terms, context, keep))], context)
        return expression
    join_shared = (_one_row(query) and any(_is_shared(t, keep) for t in lineage.output)
                   and computed_in_python(_dl(lineage.output, context, keep)))
    if query.args.get("having") or join_shared:
        return _assembled_above(query, lineage.output, context, keep, join_shared)
    dl = _dl(lineage.projected, context, keep)
    names = [n for n in query.named_selects if not is_lineage_column(n)]
    if query.args.get("order") and len(set(names)) == len(names):
        if computed_in_python(dl) and _sort_is_kept(query, context):
            arguments = [(f"{ARGUMENT}{i}", computed_once(argument)) for i, argument in enumerate(dl.expressions)]
            set_lineage_columns(query, arguments)
            return _above_sort(query, dl)
        if any(is_symbolic(t, context) and keep(t) for t in lineage.output):
            return _assembled_above(query, lineage.output, context, keep)
    set_lineage_columns(query, [(DL, dl)])
    return expression


def _above_sort(query: exp.Select, call: exp.Expression) -> exp.Select:
    """``SELECT cols, udf(args) AS DL FROM (query with its ORDER BY, and args) AS __dlout``.

    Spark samples an ORDER BY's input to partition it by range, which runs everything below
    the sort twice: a Python UDF computing ``DL`` below it would cross to Python and build
    every row's set twice (measured: every batch of TPC-H Q10 at SF 1 twice).  Its
    arguments are native values, computed below the sort; the call runs once, above it.
    """
    names = [n for n in query.named_selects if not is_lineage_column(n)]
    outer = exp.select(*[exp.column(n, table=OUTER) for n in names]).from_(query.subquery(OUTER, copy=False))
    arguments = [exp.column(f"{ARGUMENT}{i}", table=OUTER) for i in range(len(call.expressions))]
    udf = call.copy()
    udf.set("expressions", arguments)
    outer.select(exp.alias_(udf, DL), copy=False)
    return outer


def _sort_is_kept(query: exp.Select, context: RewriteContext) -> bool:
    """Whether Spark surely keeps ``query``'s ORDER BY between ``_above_sort``'s arguments and
    its call (else the call stays below the sort, which then costs nothing to run twice).

    Spark drops a sort by constant keys or over at most one row (``EliminateSorts``,
    ``OptimizeOneMaxRowPlan``); the projections around it then merge, a shared set's
    subquery lands in the UDF's arguments, and Spark 4 fails there (its plan runs in a task
    with no session), whether or not it reads a relation.  So: keys that are columns, not
    projections of constants; and rows Spark cannot bound (``_unbounded``)."""
    constant = {select.alias_or_name.lower() for select in query.expressions if _constant(select.unalias())}
    keys = [ordered.this for ordered in query.args["order"].expressions]
    if not all(isinstance(key, exp.Column) and (key.table or key.name.lower() not in constant) for key in keys):
        return False
    return _unbounded(query, context)


def _constant(expression: exp.Expression) -> bool:
    """Whether an expression is built of literals alone (Spark folds it to a constant)."""
    literal_parts = (exp.Literal, exp.Null, exp.Boolean, exp.Cast, exp.DataType, exp.Binary, exp.Paren, exp.Neg)
    return all(isinstance(node, literal_parts) for node in expression.walk())


def _unbounded(query: exp.Expression, context: RewriteContext) -> bool:
    """Whether Spark cannot bound ``query``'s rows: it reads a catalog table (directly, or
    through subqueries in FROM) and is neither a global aggregate nor limited to one row."""
    if isinstance(query, exp.SetOperation):
        return _unbounded(query.this, context) or _unbounded(query.expression, context)
    if not isinstance(query, exp.Select) or _one_row_itself(query):
        return False
    return any(
        source.name.lower() in context.schemas if isinstance(source, exp.Table)
        else isinstance(source, exp.Subquery) and _unbounded(source.unnest(), context)
        for source in sources(query)
    )


def _one_row_itself(query: exp.Select) -> bool:
    """Whether ``query`` is a global aggregate or limited to one row."""
    limit = query.args.get("limit")
    if limit is not None and isinstance(limit.expression, exp.Literal) and int(limit.expression.name) <= 1:
        return True
    return not query.args.get("group") and any(select.find(exp.AggFunc) for select in query.expressions)


def _one_row(query: exp.Select) -> bool:
    """Whether ``query`` gives at most one row: a global aggregate, ``LIMIT 1``, or one
    source, itself such a query."""
    if _one_row_itself(query):
        return True
    only = sources(query)
    return (len(only) == 1 and isinstance(only[0], exp.Subquery) and isinstance(only[0].unnest(), exp.Select)
            and _one_row(only[0].unnest()))


def _dl(terms: Lineage, context: RewriteContext, keep: Callable[[Term], bool]) -> exp.Expression:
    return context.representation.output(
        tuple(t for t in terms if keep(t)), context.codes, context.ids_ordered_by_table
    )


def _is_shared(term: Term, keep: Callable[[Term], bool]) -> bool:
    """A kept set every row shares: an uncorrelated subquery's, evaluated once."""
    return isinstance(term.sql, exp.Subquery) and keep(term)


def _assembled_above(
    query: exp.Select, outputs: Lineage, context: RewriteContext, keep: Callable[[Term], bool],
    join_shared: bool = False,
) -> exp.Select:
    """``SELECT cols, DL FROM (query) AS __dlout``: after a HAVING, or above an ORDER BY when
    rows share a set (their shared subqueries are evaluated above, once).

    The query keeps its ORDER BY and LIMIT: Spark sorts and limits the rows before their
    (possibly large) DL values exist, and the projection above keeps the sorted order.  A
    set every row shares is not spelled out below the sort: Spark would shuffle and sort
    it once per row (TPC-H Q20 at SF 10: 1,804 rows × 178,045 shared ids).  A roBDD
    DL keeps its arguments below the sort (``_above_sort``): there the shared set is one
    compact value, and evaluating it above, beside the Python call, was slower (Q20 at SF 1).

    ``join_shared``, for a roBDD DL of a query of at most one row: each shared set is joined
    beside the query as a one-row relation (``CROSS JOIN (...) AS __dlset0``).  Spark drops
    the projections between a one-row query and the DL above it, and a shared set's subquery
    would land among the arguments of the Python UDF that builds the DL, where Spark 4 fails
    (the subquery's plan is canonicalized in a task, which has no session).

    >>> from dltrace.rewriter import rewrite_sql, PAPER_SCHEMA
    >>> print(rewrite_sql("SELECT s_id FROM sales WHERE price > (SELECT avg(price) FROM sales) ORDER BY s_id LIMIT 1",
    ...                   PAPER_SCHEMA, representation="bdd"))
    SELECT __dlout.s_id, DL_BDD_UNION(CAST(ARRAY() AS ARRAY<BINARY>), CONCAT(ARRAY(__dlout.__dl0), __dlset0.__dl)) AS DL FROM (SELECT sales.s_id AS s_id, sales._dl_id AS __dl0 FROM sales AS sales WHERE sales.price > (SELECT AVG(sales.price) AS _col_0 FROM sales AS sales) ORDER BY s_id LIMIT 1) AS __dlout CROSS JOIN (SELECT SORT_ARRAY(COLLECT_LIST(sales._dl_id)) AS __dl FROM sales AS sales) AS __dlset0
    """  # noqa: E501
    names = [n for n in query.named_selects if not is_lineage_column(n)]
    outer = exp.select(*[exp.column(n, table=OUTER) for n in names]).from_(query.subquery(OUTER, copy=False))
    terms: list[Term] = []
    joined = 0
    for term in outputs:
        if join_shared and _is_shared(term, keep):
            alias, joined = f"{SHARED_SET}{joined}", joined + 1
            outer.join(term.sql.this.copy().subquery(alias), join_type="cross", copy=False)
            terms.append(term.at(exp.column(term.sql.this.named_selects[0], table=alias)))
        elif isinstance(term.sql, exp.Subquery):  # evaluated above, once
            terms.append(term)
        else:
            terms.append(term.at(exp.column(term.sql.name, table=OUTER)))
    outer.select(exp.alias_(_dl(tuple(terms), context, keep), DL), copy=False)
    return outer
