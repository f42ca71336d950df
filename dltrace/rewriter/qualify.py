"""Rule 0: parse the Spark SQL and qualify it against the catalog's schemas.

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

import sqlglot
from sqlglot import exp
from sqlglot.errors import OptimizeError, ParseError, TokenError
from sqlglot.optimizer.qualify import qualify

from dltrace.errors import BadInput, SqlSyntaxError, UnknownColumn, UnknownTable

RESERVED_OUTPUT = "dl"


def parse(sql: str) -> exp.Expression:
    """One Spark SQL query, or a ``SqlSyntaxError`` that says where it stops making sense."""
    statement = parse_statement(sql)
    if not isinstance(statement, exp.Query):
        raise BadInput(f"only queries can be traced, not {statement.key.upper()} statements")
    return statement


def parse_statement(sql: str) -> exp.Expression:
    """One Spark SQL statement of any kind (pipelines run ``CREATE ... AS`` statements)."""
    try:
        statements = [s for s in sqlglot.parse(sql, read="spark") if s is not None]
    except ParseError as error:
        first = error.errors[0] if error.errors else {}
        description = str(first.get("description", error)).split(". Line")[0]
        description = description.split(" <Token")[0].removesuffix(" but got")
        near = first.get("highlight")
        raise SqlSyntaxError(
            f"syntax error at line {first.get('line', '?')}, column {first.get('col', '?')}"
            f"{f' near {near!r}' if near else ''}: {description}"
        ) from None
    except TokenError as error:
        raise SqlSyntaxError(f"syntax error: {error}") from None
    if len(statements) != 1:
        raise BadInput(f"expected one statement, got {len(statements)}: run a script of several with `dltrace run FILE.sql`")
    return statements[0]


def qualify_against_catalog(expression: exp.Expression, schemas: dict[str, dict[str, str]]) -> exp.Expression:
    """Qualify ``expression`` with the catalog's schemas; unknown tables and columns are errors."""
    cte_names = {cte.alias_or_name.lower() for cte in expression.find_all(exp.CTE)}
    for table in expression.find_all(exp.Table):
        name = table.name.lower()
        if table.args.get("db") or (name not in schemas and name not in cte_names):
            full = table.sql(dialect="spark").split(" AS ")[0]
            raise UnknownTable(f"table '{full}' is not registered: run `dltrace register {table.name} PATH` first")
    try:
        qualified = qualify(
            expression.copy(),
            schema={name: dict(cols) for name, cols in schemas.items()},
            dialect="spark",
            quote_identifiers=False,
        )
    except OptimizeError as error:
        message = str(error).split(". Line")[0].replace("could not be resolved", "is unknown or ambiguous")
        raise UnknownColumn(f"{message}: check the column names of the registered tables") from None
    inner_joins(qualified)
    outputs = [name for name in qualified.named_selects if name.lower() == RESERVED_OUTPUT or name.lower().startswith("__dl")]
    if outputs:
        raise BadInput(f"the query already outputs a column named {outputs[0]}: rename it, dltrace adds DL")
    return qualified


def inner_joins(expression: exp.Expression) -> exp.Expression:
    """Write every join of two relations without a condition (comma, ``CROSS JOIN``) as
    ``INNER JOIN``: the same rows, and the join type Spark optimizes (runtime filters)."""
    for join in expression.find_all(exp.Join):
        relation = join.this
        if (join.kind == "CROSS" and not join.side and not join.args.get("on") and not join.args.get("using")
                and isinstance(relation, (exp.Table, exp.Subquery))):
            join.set("kind", "INNER")
    return expression
