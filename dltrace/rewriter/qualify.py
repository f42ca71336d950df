"""Rule: parse the Spark SQL and qualify it against the catalog's schemas (the first rule).

After this every column names its table alias, every table has an alias and ``*`` is
expanded from the catalog (so ``_dl_id`` never leaks into results), which is what the
lineage rules rely on.  Errors become one-line messages with positions.

sqlglot reads Spark's comma join as a ``CROSS JOIN``, which Spark plans as a join of type
Cross: the same rows, but Spark injects runtime Bloom filters and dynamic partition pruning
only into inner joins.  So a join without a condition is written ``INNER JOIN`` (what
Spark itself makes of a comma), and the rewritten query keeps the plans the user's gets.

>>> from dltrace.rewriter import PAPER_SCHEMA
>>> print(qualify_against_catalog(parse("SELECT * FROM item WHERE i_id < 3"), PAPER_SCHEMA).sql("spark"))
SELECT item.i_id AS i_id, item.i_name AS i_name, item.category AS category FROM item AS item WHERE item.i_id < 3

>>> print(qualify_against_catalog(parse("SELECT s_name FROM store, sales WHERE store.s_id = sales.s_id"),
...                               PAPER_SCHEMA).sql("spark"))
SELECT store.s_name AS s_name FROM store AS store INNER JOIN sales AS sales WHERE store.s_id = sales.s_id
"""

from __future__ import annotations

import difflib
import re

import sqlglot
from sqlglot import exp
from sqlglot.errors import OptimizeError, ParseError, SchemaError, TokenError
from sqlglot.optimizer.qualify import qualify as sqlglot_qualify

from dltrace.errors import BadInput, SqlSyntaxError, UnknownColumn, UnknownTable
from dltrace.rewriter.context import RewriteContext, unsupported
from dltrace.rewriter.dialect import SPARK
from dltrace.rewriter.generator import mark_unaliased, name_lateral_views, unaliased_again
from dltrace.rewriter.literal_rows import is_literal_function, name_literal_columns

RESERVED_OUTPUT = "dl"
MISSING_KEYWORD = re.compile(r"Required keyword: '(\w+)' missing for <class '(?:\w+\.)*(\w+)'>")
OPERATORS = {"EQ": "=", "NEQ": "<>", "GT": ">", "GTE": ">=", "LT": "<", "LTE": "<=", "Add": "+", "Sub": "-",
             "Mul": "*", "Div": "/", "And": "AND", "Or": "OR", "Paren": "(", "Like": "LIKE", "In": "IN"}


def parse(sql: str) -> exp.Expression:
    """One Spark SQL query, or a ``SqlSyntaxError`` that says where it stops making sense."""
    statement = name_literal_columns(parse_statement(sql))
    if not isinstance(statement, exp.Query):
        raise BadInput(f"only queries can be traced, not {statement.key.upper()} statements")
    return statement


def parse_statement(sql: str) -> exp.Expression:
    """One Spark SQL statement of any kind (pipelines run ``CREATE ... AS`` statements)."""
    try:
        statements = [s for s in sqlglot.parse(sql, read=SPARK) if s is not None]
    except ParseError as error:
        first = error.errors[0] if error.errors else {}
        near = first.get("highlight")
        raise SqlSyntaxError(
            f"syntax error at line {first.get('line', '?')}, column {first.get('col', '?')}"
            f"{f' near {near!r}' if near else ''}: {parse_error_description(error)}"
        ) from None
    except (TokenError, RecursionError) as error:
        raise SqlSyntaxError(
            f"syntax error: {error if isinstance(error, TokenError) else 'the query nests too deeply'}"
        ) from None
    if len(statements) != 1:
        raise BadInput(
            f"expected one statement, got {len(statements)}: run a script of several with `dltrace run FILE.sql`"
        )
    return statements[0]


def parse_error_description(error: ParseError) -> str:
    """sqlglot's description of a parse error in the user's terms, not its classes':
    "Required keyword: 'expression' missing for <class '...EQ'>" is an incomplete expression.

    >>> parse("SELECT 1 FROM t WHERE a =")
    Traceback (most recent call last):
    dltrace.errors.SqlSyntaxError: syntax error at line 1, column 25 near '=': the expression is incomplete (= needs a right-hand side)
    """  # noqa: E501
    first = error.errors[0] if error.errors else {}
    description = str(first.get("description", error)).split(". Line")[0]
    missing = MISSING_KEYWORD.match(description)
    if missing:
        operator = OPERATORS.get(missing.group(2), missing.group(2).upper())
        side = "a right-hand side" if missing.group(1) == "expression" else "an operand"
        return f"the expression is incomplete ({operator} needs {side})"
    return description.split(" <Token")[0].removesuffix(" but got")


def qualify(expression: exp.Expression, context: RewriteContext) -> exp.Expression:
    """The rule: ``expression`` qualified against the context's schemas."""
    return qualify_against_catalog(expression, context.schemas)


def qualify_against_catalog(expression: exp.Expression, schemas: dict[str, dict[str, str]]) -> exp.Expression:
    """Qualify ``expression`` with the catalog's schemas; unknown tables and columns are errors."""
    expression = name_literal_columns(expression)  # (parse names them too, for a VALUES statement)
    cte_names = {cte.alias_or_name.lower() for cte in expression.find_all(exp.CTE)}
    for table in expression.find_all(exp.Table):
        if is_literal_function(table):  # range(10): literal rows (literal_rows)
            continue
        if not isinstance(table.this, exp.Identifier):  # explode(...) in FROM, a UDTF
            raise unsupported(table, "a table-valued function in FROM (but range)")
        name = table.name.lower()
        if table.args.get("db") or (name not in schemas and name not in cte_names):
            full = table.sql(dialect=SPARK).split(" AS ")[0]
            where = f" in catalog {schemas.location}" if getattr(schemas, "location", "") else ""
            close = [] if table.args.get("db") else difflib.get_close_matches(name, [*schemas, *cte_names], n=1)
            if close:
                raise UnknownTable(f"table '{full}' is not registered{where} (did you mean {close[0]}?)")
            raise UnknownTable(f"table '{full}' is not registered{where}: "
                               f"run `dltrace register {table.name} PATH` first"
                               f"{', or choose the catalog with --catalog DIR' if where else ''}")
        if name in schemas and not schemas[name]:
            raise BadInput(f"table '{table.name}' has no columns (registered from an empty file): "
                           f"remove it with `dltrace tables drop {table.name}`")
    mark_unaliased(expression)
    name_lateral_views(expression)
    try:
        qualified = sqlglot_qualify(
            expression.copy(),
            # a table without columns (an empty file registered by an older dltrace) would
            # make sqlglot refuse every query: it can only be named, and is refused above
            schema={name: dict(cols) for name, cols in schemas.items() if cols},
            dialect="spark",
            quote_identifiers=False,
        )
    except OptimizeError as error:
        raise column_error(str(error), expression, schemas) from None
    except SchemaError as error:
        raise BadInput(f"the query does not fit the catalog's schemas: {error}") from None
    inner_joins(qualified)
    unaliased_again(qualified)
    outputs = [
        name for name in qualified.named_selects if name.lower() == RESERVED_OUTPUT or name.lower().startswith("__dl")
    ]
    if outputs:
        raise BadInput(f"the query already outputs a column named {outputs[0]}: rename it, dltrace adds DL")
    return qualified


def column_error(message: str, expression: exp.Expression, schemas: dict[str, dict[str, str]]) -> UnknownColumn:
    """sqlglot's "could not be resolved" told apart: a column no table of the query has
    (unknown, with the nearest names), one several have (ambiguous: qualify it), or one whose
    qualifier names no table of the query.

    >>> from dltrace.rewriter import PAPER_SCHEMA
    >>> print(column_error("Column 's_id' could not be resolved", parse("SELECT s_id FROM store, sales"), PAPER_SCHEMA))
    column 's_id' is ambiguous: store and sales both have it: qualify it (store.s_id)
    >>> print(column_error("Column 's_nam' could not be resolved", parse("SELECT s_nam FROM store"), PAPER_SCHEMA))
    column 's_nam' is unknown: no table of the query has it (did you mean s_name?)
    """
    text, _, position = message.partition(". Line: ")
    at = " at line {}, column {}".format(*position.split(", Col: ")) if ", Col: " in position else ""
    named = re.match(r"(?:Column '(.+?)' could not be resolved(?: for table: '(.+?)')?|Unknown column: (.+))$", text)
    if named is None:
        return UnknownColumn(f"{text}{at}: check the column names of the registered tables")
    column, qualifier = (named.group(1) or named.group(3)), named.group(2)
    occurrences = [
        (t.alias_or_name, t.name.lower()) for t in expression.find_all(exp.Table) if t.name.lower() in schemas
    ]
    if qualifier is not None:
        return UnknownColumn(f"column '{qualifier}.{column}'{at}: the query has no table or alias named {qualifier}")
    having = [alias for alias, table in occurrences if column.lower() in {c.lower() for c in schemas[table]}]
    if len(having) > 1:
        both = "both" if len(having) == 2 else "all"
        return UnknownColumn(f"column '{column}'{at} is ambiguous: {' and '.join(having)} {both} have it: "
                             f"qualify it ({having[0]}.{column})")
    known = sorted({c for _, table in occurrences for c in schemas[table]})
    close = difflib.get_close_matches(column, known, n=1)
    hint = f" (did you mean {close[0]}?)" if close else ""
    if having:
        return UnknownColumn(f"column '{column}'{at} cannot be resolved where it is used: {having[0]} has it, "
                             f"but not in that part of the query")
    return UnknownColumn(f"column '{column}'{at} is unknown: no table of the query has it{hint}")


def inner_joins(expression: exp.Expression) -> exp.Expression:
    """Write every join of two relations without a condition (comma, ``CROSS JOIN``) as
    ``INNER JOIN``: the same rows, and the join type Spark optimizes (runtime filters)."""
    for join in expression.find_all(exp.Join):
        relation = join.this
        if (join.kind == "CROSS" and not join.side and not join.args.get("on") and not join.args.get("using")
                and isinstance(relation, (exp.Table, exp.Subquery))):
            join.set("kind", "INNER")
    return expression
