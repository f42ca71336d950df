"""The extended SQL: a ``LINEAGE ON (expr, ...)`` clause after a query (paper §4.3).

sqlglot cannot parse the clause, so it is cut off the text before the query is parsed.
The cut works on sqlglot's Spark tokens, so string literals and comments that happen to
contain ``LINEAGE ON`` are left alone, and only a clause at parenthesis depth 0 that ends
the text (a ``;`` may follow) counts.  ``... JOIN lineage ON (a.x = lineage.x)`` is valid
SQL (a table or alias named ``lineage``): text that parses as it is has no clause.

>>> query, lineage_on = split_lineage_on("SELECT l_shipmode FROM lineitem -- LINEAGE ON (x)\\n"
...                                      "LINEAGE ON (year(l_shipdate) AS y, l_shipmode);")
>>> query
'SELECT l_shipmode FROM lineitem -- LINEAGE ON (x)'
>>> [e.sql("spark") for e in lineage_on]
['YEAR(l_shipdate) AS y', 'l_shipmode']
>>> split_lineage_on("SELECT 1 LINEAGE ON ()")
('SELECT 1', ())
>>> split_lineage_on("SELECT 'LINEAGE ON (x)'")
("SELECT 'LINEAGE ON (x)'", None)
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError
from sqlglot.tokens import Token, TokenType

from dltrace.errors import BadInput, SqlSyntaxError
from dltrace.rewriter.qualify import parse_error_description

# The L of a LINEAGE ON clause: parsed expressions, each maybe aliased.
LineageOn = tuple[exp.Expression, ...]
# What the API and the command line accept: "expr, expr", a list of expressions, or parsed ones.
LineageOnArgument = str | Sequence[str | exp.Expression] | None

# Anything that would make an L expression something other than a value of one base row.
# Checked in this order: the outermost construct is named (a subquery may hold an
# aggregate, a window its function; sqlglot's ranking functions are AggFuncs too).
NOT_ROW_VALUES = {
    exp.Query: "subqueries",
    exp.Window: "window functions",
    exp.AggFunc: "aggregate functions",
    exp.Star: "*",
}


def split_lineage_on(query: str, lineage_on: LineageOnArgument = None) -> tuple[str, LineageOn | None]:
    """``query`` without its ``LINEAGE ON`` clause, and the clause's L (None: no clause).

    ``lineage_on`` is L given beside the query (the API's ``lineage_on=``, the CLI's
    ``--lineage-on``); giving L both ways is an error.
    """
    given = parse_lineage_on(lineage_on)
    found = _trailing_clause(query)
    if found is None:
        return query, given
    if given is not None:
        raise BadInput("LINEAGE ON is given twice: in the query and as an option; keep one")
    prefix, inner = found
    return prefix, parse_lineage_on(inner)


def parse_lineage_on(lineage_on: LineageOnArgument) -> LineageOn | None:
    """L as parsed expressions; ``""`` and ``[]`` are the empty L (lineage off)."""
    if lineage_on is None:
        return None
    if isinstance(lineage_on, str):
        expressions = _parse_list(lineage_on)
    else:
        expressions = []
        for item in lineage_on:
            parsed = [item] if isinstance(item, exp.Expression) else _parse_list(item)
            if len(parsed) != 1:
                raise BadInput(f"LINEAGE ON: {item!r} is not one expression; give one expression per list item")
            expressions.extend(parsed)
    for expression in expressions:
        for kind, what in NOT_ROW_VALUES.items():
            if expression.find(kind):
                raise BadInput(
                    f"LINEAGE ON ({expression.sql(dialect='spark')}): {what} are not allowed; "
                    "use expressions over the columns of a base row"
                )
    return tuple(expressions)


def lineage_on_sql(lineage_on: LineageOn) -> str:
    """The clause as SQL text, for messages and for people.

    >>> lineage_on_sql(parse_lineage_on("year(d), m"))
    'LINEAGE ON (YEAR(d), m)'
    """
    return f"LINEAGE ON ({', '.join(e.sql(dialect='spark') for e in lineage_on)})"


def _parse_list(text: str) -> list[exp.Expression]:
    """Comma-separated expressions, each maybe with an alias."""
    if not text.strip():
        return []
    try:
        select = sqlglot.parse_one(f"SELECT {text}", read="spark")
    except (ParseError, TokenError) as error:
        detail = parse_error_description(error) if isinstance(error, ParseError) else str(error)
        raise SqlSyntaxError(f"cannot parse LINEAGE ON ({text.strip()}): {detail}") from None
    extra = [key for key, value in select.args.items() if key != "expressions" and value]
    if not isinstance(select, exp.Select) or extra:
        raise SqlSyntaxError(f"LINEAGE ON ({text.strip()}) must be a list of expressions")
    return list(select.expressions)


def _trailing_clause(text: str) -> tuple[str, str] | None:
    """``(query text, text between the clause's parentheses)``, or None without a clause."""
    try:
        tokens = sqlglot.tokenize(text, read="spark")
    except TokenError:
        return None  # the query's own parse reports it
    start = _last_clause_start(tokens)
    if start is None:
        return None
    close = _matching_paren(tokens, start + 2)
    if close is None or _parses(text):
        return None  # unbalanced: the query's own parse error says where; or no clause at all
    if any(token.token_type is not TokenType.SEMICOLON for token in tokens[close + 1 :]):
        raise SqlSyntaxError("LINEAGE ON (expr, ...) must end the query, after ORDER BY and LIMIT")
    return text[: tokens[start].start].rstrip(), text[tokens[start + 2].end + 1 : tokens[close].start]


def _last_clause_start(tokens: list[Token]) -> int | None:
    """Index of the last ``LINEAGE ON (`` outside parentheses."""
    depth, found = 0, None
    for index, token in enumerate(tokens):
        if token.token_type is TokenType.L_PAREN:
            depth += 1
        elif token.token_type is TokenType.R_PAREN:
            depth -= 1
        elif (
            depth == 0
            and token.token_type is TokenType.VAR
            and token.text.upper() == "LINEAGE"
            and index + 2 < len(tokens)
            and tokens[index + 1].token_type is TokenType.ON
            and tokens[index + 2].token_type is TokenType.L_PAREN
        ):
            found = index
    return found


def _matching_paren(tokens: list[Token], open_index: int) -> int | None:
    depth = 0
    for index in range(open_index, len(tokens)):
        if tokens[index].token_type is TokenType.L_PAREN:
            depth += 1
        elif tokens[index].token_type is TokenType.R_PAREN:
            depth -= 1
            if depth == 0:
                return index
    return None


def _parses(text: str) -> bool:
    """Whether ``text`` is SQL as it is (then a trailing ``lineage ON (...)`` is a join's)."""
    try:
        sqlglot.parse(text, read="spark")
    except (ParseError, TokenError):
        return False
    return True
