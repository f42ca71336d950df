"""Speed-up rule (control semantics): a correlated EXISTS over one table becomes an inner join
with that table, grouped back to one row per outer row.

Under control semantics an EXISTS adds to an outer row the lineage of the subquery's rows for
that row, which are the rows an inner join on the subquery's WHERE matches to it.  Left a
subquery, its lineage copy is decorrelated by Spark into aggregates of the whole inner table
by the correlation keys, joined back (TPC-H Q21: two aggregates of all of lineitem, several
times the plain query's work).  Joined instead, each outer row meets its own inner rows once, where the plan
reaches them.  Grouping by the ids of the outer row's base rows (a row of a join is one
combination of its tables' rows) gives back each outer row that has a match, once; the join
and aggregate rules then give it ``DL(outer row) ∪ DLUNION(its matches)``, the EXISTS's
control lineage.  The rest of the query (SELECT list, GROUP BY, HAVING, ORDER BY, ...) reads
the grouped rows as a derived table: the same rows, columns and order.

It applies to a SELECT that reads catalog tables only, through inner or cross joins, and is
not itself correlated; to the first top-level WHERE conjunct ``EXISTS (SELECT ... FROM one
catalog table WHERE ...)`` with nothing but a WHERE that correlates it to that SELECT's
tables through at least one equality (a join Spark can hash) and selects plain columns or
constants; and only when the SELECT has no subquery outside its WHERE, no arrays_zip (whose
fields are named after the columns the rule renames) and nothing non-deterministic (joined,
``rand()`` would be drawn once per match, and Spark refuses it in a join condition).  One EXISTS per SELECT: joining two would multiply their
matches.  Under data semantics an EXISTS adds nothing, and the rule does not apply.

>>> from dltrace.rewriter import rewrite_sql, only, PAPER_SCHEMA
>>> print(rewrite_sql("SELECT d.s_name FROM store d WHERE d.state = 'CA' AND EXISTS "
...                   "(SELECT 1 FROM sales s WHERE s.s_id = d.s_id AND s.num > 2000)", PAPER_SCHEMA,
...                   rules=only("qualify", "exists_join")))
SELECT __dlexists.s_name AS s_name FROM (SELECT ANY_VALUE(d.s_name) AS s_name FROM store AS d INNER JOIN sales AS s ON s.s_id = d.s_id AND s.num > 2000 WHERE d.state = 'CA' GROUP BY d._dl_id) AS __dlexists
"""  # noqa: E501

from __future__ import annotations

from sqlglot import exp
from sqlglot.optimizer.scope import Scope, traverse_scope

from dltrace.catalog import ID_COLUMN
from dltrace.rewriter.base_table import is_catalog_table
from dltrace.rewriter.clauses import conjuncts, sources
from dltrace.rewriter.context import RewriteContext

DERIVED_ALIAS = "__dlexists"
JOINED = "exists_joined"  # meta of the grouped SELECT the rule made: not joined again
# the parts of a SELECT that move into the grouped rows; every other part reads them
MOVED = ("from_", "joins", "where", "with_")
INNER_JOINS = ("", "INNER", "CROSS")
# evaluated once per (outer row, match) once joined, and refused by Spark in a join condition
# (sqlglot parses random() as rand(); the rest of Spark's own are anonymous functions here)
NONDETERMINISTIC = frozenset({"rand", "randn", "uuid", "shuffle", "monotonically_increasing_id",
                              "spark_partition_id", "input_file_name", "input_file_block_start",
                              "input_file_block_length"})


def exists_join(expression: exp.Expression, context: RewriteContext) -> exp.Expression:
    """Join each SELECT's first joinable EXISTS (see the module docstring), innermost first."""
    if context.semantics != "control":
        return expression
    while (found := _next_candidate(expression, context)) is not None:
        _join(*found)
    return expression


def _next_candidate(expression: exp.Expression, context: RewriteContext):
    for scope in traverse_scope(expression):
        select = scope.expression
        if isinstance(select, exp.Select) and not select.meta.get(JOINED) and _reads_tables_only(scope, context):
            aliases = {table.alias_or_name for table in sources(select)}
            for conjunct in conjuncts(select.args.get("where")):
                if isinstance(conjunct, exp.Exists) and _joinable(conjunct.this, aliases, context):
                    return select, conjunct
    return None


def _reads_tables_only(scope: Scope, context: RewriteContext) -> bool:
    select = scope.expression
    tables = sources(select)
    if not tables or scope.external_columns or select.args.get("laterals"):
        return False
    if not all(is_catalog_table(t, context) and scope.sources.get(t.alias_or_name) is t for t in tables):
        return False
    for join in select.args.get("joins") or []:
        if join.side or join.kind.upper() not in INNER_JOINS or join.args.get("using") or join.method:
            return False
    if any(isinstance(e, exp.Star) or isinstance(e.this, exp.Star) for e in select.expressions):
        return False
    if nondeterministic(select):
        return False
    # arrays_zip names its struct's fields after its argument columns, which the rule renames
    return not any(node.find(exp.Select, exp.ArraysZip) for node in _read_parts(select))


def nondeterministic(node: exp.Expression) -> bool:
    """Anything non-deterministic in ``node``, its subqueries (the EXISTS's own WHERE) included."""
    return any((f.name.lower() if isinstance(f, exp.Anonymous) else f.key) in NONDETERMINISTIC
               for f in node.find_all(exp.Func))


def _read_parts(select: exp.Select) -> list[exp.Expression]:
    """The parts of ``select`` that read the grouped rows once the rule has applied."""
    parts: list[exp.Expression] = []
    for key, value in select.args.items():
        if key not in MOVED:
            parts.extend(v for v in (value if isinstance(value, list) else [value]) if isinstance(v, exp.Expression))
    return parts


def _joinable(sub: exp.Expression, outer_aliases: set[str], context: RewriteContext) -> bool:
    """A SELECT over one catalog table with only a WHERE, correlated to ``outer_aliases``
    alone, through at least one equality of an inner and an outer expression."""
    if not isinstance(sub, exp.Select) or sub.args.get("where") is None:
        return False
    if any(value for key, value in sub.args.items() if key not in ("expressions", "from_", "where")):
        return False
    table = sub.args["from_"].this
    if not is_catalog_table(table, context) or any(s is not sub for s in sub.find_all(exp.Select)):
        return False
    if sub.find(exp.AggFunc, exp.Window):
        return False
    # EXISTS asks whether the select list gives a row: a generator there (inline, stack) may not
    if not all(isinstance(e.unalias(), (exp.Column, exp.Literal)) for e in sub.expressions):
        return False
    inner = table.alias_or_name
    condition = sub.args["where"].this
    tables_read = {column.table for column in condition.find_all(exp.Column)}
    if not tables_read - {inner} or not tables_read <= outer_aliases | {inner}:
        return False

    def reads_only(side: exp.Expression, aliases: set[str]) -> bool:
        read = {column.table for column in side.find_all(exp.Column)}
        return bool(read) and read <= aliases

    outer = outer_aliases - {inner}  # an outer table the subquery's own name hides is not read
    return any(
        isinstance(c, exp.EQ)
        and ((reads_only(c.this, {inner}) and reads_only(c.expression, outer))
             or (reads_only(c.expression, {inner}) and reads_only(c.this, outer)))
        for c in conjuncts(condition)
    )


def _join(select: exp.Select, exists: exp.Exists) -> None:
    """Move ``select``'s FROM, JOINs and WHERE (without ``exists``) into grouped rows joined
    with the subquery's table on its WHERE, which the rest of ``select`` reads."""
    aliases = [table.alias_or_name for table in sources(select)]
    sub = exists.this
    table = sub.args["from_"].this
    if table.alias_or_name in aliases:  # the subquery's name for its table hides an outer one
        fresh = _fresh(table.alias_or_name, set(aliases))
        for column in sub.find_all(exp.Column):
            if column.table == table.alias_or_name:
                column.set("table", exp.to_identifier(fresh))
        table.set("alias", exp.TableAlias(this=exp.to_identifier(fresh)))
    read = {(column.table, column.name) for part in _read_parts(select) for column in part.find_all(exp.Column)
            if column.table in aliases}
    names = [name.lower() for _, name in read]
    # a column keeps its name (what Spark names fields after), unless two tables' columns share it
    carried = {(alias, name): name.lower() if names.count(name.lower()) == 1 else f"{alias}__{name}".lower()
               for alias, name in sorted(read)}
    if len(set(carried.values())) < len(carried) or DERIVED_ALIAS in carried.values():
        select.meta[JOINED] = True  # two columns would get one name: leave the EXISTS
        return
    projections = [
        exp.alias_(exp.AnyValue(this=exp.column(name, table=alias)), exp.to_identifier(carried_name))
        for (alias, name), carried_name in carried.items()
    ] or [exp.alias_(exp.true(), exp.to_identifier(DERIVED_ALIAS))]
    grouped = exp.select(*projections, copy=False)
    grouped.set("from_", select.args["from_"].pop())
    joins = [join.pop() for join in list(select.args.get("joins") or [])]
    condition = sub.args["where"].this.pop()
    grouped.set("joins", [*joins, exp.Join(this=table.pop(), kind="INNER", on=condition)])
    rest = [c for c in conjuncts(select.args.get("where")) if c is not exists]
    select.set("where", None)
    if rest:
        grouped.where(exp.and_(*rest, copy=False), copy=False)
    grouped.group_by(*(exp.column(ID_COLUMN, table=alias) for alias in aliases), copy=False)
    grouped.meta[JOINED] = True
    for part in _read_parts(select):
        for column in list(part.find_all(exp.Column)):
            if (column.table, column.name) in carried:
                column.replace(exp.column(exp.to_identifier(carried[(column.table, column.name)]), table=DERIVED_ALIAS))
    select.set("joins", None)
    select.set("from_", exp.From(this=exp.Subquery(this=grouped, alias=exp.TableAlias(
        this=exp.to_identifier(DERIVED_ALIAS)))))


def _fresh(name: str, taken: set[str]) -> str:
    """``name_1``, ``name_2``, ...: the first not in ``taken``."""
    number = 1
    while f"{name}_{number}" in taken:
        number += 1
    return f"{name}_{number}"
