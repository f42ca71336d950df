"""Rule: generators.  ``explode``, ``explode_outer``, ``posexplode(_outer)``, ``inline(_outer)``,
``stack`` and ``json_tuple`` make rows from one input row each: every generated row's DL is
its input row's DL (an OUTER row for an empty or NULL array too, since it is that row's).
The generated rows carry no ids of their own, so a ``LATERAL VIEW`` contributes no terms:
the row's lineage is its FROM's (``join``), whose ids the generator repeats (``unique`` no
more; ``projection`` says the same of a generator in the SELECT list).

A generator in the SELECT list with its column names (``explode(xs) AS x``, ``posexplode(xs)
AS (i, x)``), over no aggregate or window, becomes the ``LATERAL VIEW`` Spark plans it as
(Spark's ``ExtractGenerator``), so that DISTINCT and grouping over its columns are rewritten
as over any column.  One without names, or over aggregates (``explode(collect_list(x))``,
applied to each group's row), stays where it is.

>>> from dltrace.rewriter import rewrite_sql, PAPER_SCHEMA
>>> print(rewrite_sql("SELECT DISTINCT explode(array(s_id, i_id)) AS id FROM sales", PAPER_SCHEMA))
SELECT __dlg0.id AS id, SORT_ARRAY(COLLECT_SET(sales._dl_id)) AS DL FROM sales AS sales LATERAL VIEW EXPLODE(ARRAY(sales.s_id, sales.i_id)) __dlg0 AS id GROUP BY __dlg0.id
"""  # noqa: E501

from __future__ import annotations

from sqlglot import exp

from dltrace.errors import BadInput
from dltrace.rewriter.aggregate import is_aggregate
from dltrace.rewriter.context import UNALIASED, RewriteContext, unsupported

GENERATORS = (exp.Explode, exp.Inline, exp.Stack)  # Explode: also its _outer and pos forms
GENERATOR_NAMES = frozenset({"inline_outer", "json_tuple"})  # parsed as anonymous functions
GENERATED = "__dlg"  # the aliases of the LATERAL VIEWs this rule writes


def is_generator(node: exp.Expression | None) -> bool:
    """A table-generating function (one input row, zero or more output rows)."""
    return isinstance(node, GENERATORS) or (isinstance(node, exp.Anonymous) and node.name.lower() in GENERATOR_NAMES)


def mark_unaliased(expression: exp.Expression) -> None:
    """Mark the generators written without names (before qualification names them
    ``_col_N``, which Spark refuses for a generator of several columns)."""
    for select in expression.find_all(exp.Select):
        for item in select.expressions:
            if is_generator(item):
                item.meta[UNALIASED] = True


def name_lateral_views(expression: exp.Expression) -> None:
    """Give a LATERAL VIEW written without column names the names Spark gives them, so that
    ``*`` expands to them (unexpanded, it would show the tables' ``_dl_id``); one whose
    columns its arguments do not say (``inline``) is refused under a ``*``."""
    for lateral in expression.find_all(exp.Lateral):
        alias = lateral.args.get("alias")
        if not lateral.args.get("view") or (alias is not None and alias.columns):
            continue
        names = spark_names(lateral.this)
        if names is None:
            select = lateral.find_ancestor(exp.Select)
            if select is not None and any(isinstance(e, exp.Star) for e in select.expressions):
                raise unsupported(lateral, "SELECT * over a LATERAL VIEW without column names (name them)")
            continue
        lateral.set("alias", exp.TableAlias(this=alias.this if alias is not None else None,
                                            columns=[exp.to_identifier(n) for n in names]))


def unaliased_again(qualified: exp.Expression) -> None:
    """The generators marked by ``mark_unaliased`` without the names qualification gave
    them: Spark names their columns (``col``, ``pos``, ``key``, ``value``, ...)."""
    for alias in list(qualified.find_all(exp.Alias)):
        if is_generator(alias.this) and alias.this.meta.get(UNALIASED) and isinstance(alias.parent, exp.Select):
            alias.replace(alias.this)


def generator(expression: exp.Expression, context: RewriteContext) -> exp.Expression:
    """Write each named SELECT-list generator as a LATERAL VIEW; refuse a generator left in
    a SELECT list with DISTINCT or a window, which the rules would move it under."""
    views = 0
    for select in list(expression.find_all(exp.Select)):
        functions = [e.this if isinstance(e, (exp.Alias, exp.Aliases)) else e for e in select.expressions]
        if sum(map(is_generator, functions)) > 1:  # as LATERAL VIEWs they would make their product
            raise BadInput("Spark allows one generator per SELECT list: write the others as LATERAL VIEWs")
        for item in list(select.expressions):
            names = _names(item)
            function = item.this if isinstance(item, (exp.Alias, exp.Aliases)) else item
            if not is_generator(function):
                continue
            if not names and _in_expression(select):  # its lineage copy keeps only FROM: a LATERAL VIEW
                names = spark_names(function)
                if names is None:
                    raise unsupported(item, "a generator without column names in a subquery (name them)")
            if names and not is_aggregate(select) and not item.find(exp.Window):
                _as_lateral_view(select, item, names, f"{GENERATED}{views}")
                views += 1
            elif select.args.get("distinct") and not is_aggregate(select):
                raise unsupported(item, "SELECT DISTINCT over a generator without column names (name them)")
            elif any(w.find_ancestor(exp.Select) is select for e in select.expressions for w in e.find_all(exp.Window)):
                raise unsupported(item, "a generator in a SELECT list with a window function")
    return expression


def spark_names(function: exp.Expression) -> list[str] | None:
    """The names Spark gives the columns of a generator written without them, when its
    arguments say how many (not ``inline``'s struct fields; ``explode`` of an array)."""
    if isinstance(function, exp.Posexplode):
        return ["pos", "col"]
    if isinstance(function, exp.Explode):
        return ["col"]
    if isinstance(function, exp.Anonymous) and function.name.lower() == "json_tuple":
        return [f"c{i}" for i in range(len(function.expressions) - 1)]
    rows = function.this if isinstance(function, exp.Stack) else None
    if isinstance(rows, exp.Literal) and rows.is_int and int(rows.name) > 0:
        return [f"col{i}" for i in range(-(-len(function.expressions) // int(rows.name)))]
    return None


def _in_expression(select: exp.Select) -> bool:
    """Whether ``select`` is (a branch of) a subquery used as a value or a predicate."""
    node: exp.Expression = select
    while isinstance(node.parent, exp.SetOperation):
        node = node.parent
    parent = node.parent
    if isinstance(parent, exp.Subquery):
        return not isinstance(parent.parent, (exp.From, exp.Join, exp.Lateral))
    return parent is not None and not isinstance(parent, (exp.CTE, exp.From, exp.Join))


def _names(item: exp.Expression) -> list[str]:
    """The column names an item gives its generator (``AS x``, ``AS (i, x)``), else none."""
    if isinstance(item, exp.Aliases):
        return [name.name for name in item.expressions]
    if isinstance(item, exp.Alias) and not item.this.meta.get(UNALIASED):
        return [item.alias]
    return []


def _as_lateral_view(select: exp.Select, item: exp.Expression, names: list[str], alias: str) -> None:
    """``SELECT f(x) AS (a, b) FROM t`` as ``SELECT g.a, g.b FROM t LATERAL VIEW f(x) g AS a, b``
    (an ``_outer`` form stays one: Spark's LATERAL VIEW takes it as OUTER)."""
    function = item.this if isinstance(item, (exp.Alias, exp.Aliases)) else item
    lateral = exp.Lateral(this=function.copy(), view=True,
                          alias=exp.TableAlias(this=exp.to_identifier(alias),
                                               columns=[exp.to_identifier(n) for n in names]))
    select.append("laterals", lateral)
    position = select.expressions.index(item)
    columns = [exp.alias_(exp.column(name, table=alias), name) for name in names]
    select.set("expressions", select.expressions[:position] + columns + select.expressions[position + 1:])
