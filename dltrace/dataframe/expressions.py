"""Spark Connect ``Expression`` messages as sqlglot expressions.

A DataFrame's columns reach the client as unresolved expressions: names (``F.col("x")``,
``df["x"]`` with the DataFrame's plan id), function calls by Spark's own function names,
SQL strings (``F.expr``, ``selectExpr``, ``filter("...")``), literals, casts, sort orders and
windows.  Each becomes the sqlglot node the Spark SQL parser gives the same expression, so
that the rewriter sees a DataFrame's ``sum`` as the ``SUM`` of a query written in SQL (a
function sqlglot does not know stays a call by name, as it would in SQL).  Names are resolved
by the caller's ``Scope`` (``dltrace.dataframe.plan``).
"""

from __future__ import annotations

import datetime
import decimal
import math
from collections.abc import Callable
from typing import Protocol

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

from dltrace.dataframe.api_coverage import METADATA_COLUMN, REFUSED_FUNCTIONS, refused_expression, refused_function
from dltrace.errors import BadInput, UnsupportedLineage
from dltrace.rewriter.dialect import SPARK

TRY_EVAL_MODE = 3  # Connect's Cast.EvalMode EVAL_MODE_TRY: Column.try_cast
# Column operators pyspark sends as function names, and the sqlglot node each one is
BINARY = {
    "==": exp.EQ, "!=": exp.NEQ, "<": exp.LT, "<=": exp.LTE, ">": exp.GT, ">=": exp.GTE, "<=>": exp.NullSafeEQ,
    "and": exp.And, "or": exp.Or, "+": exp.Add, "-": exp.Sub, "*": exp.Mul, "/": exp.Div, "%": exp.Mod,
    "&": exp.BitwiseAnd, "|": exp.BitwiseOr, "^": exp.BitwiseXor,
}
# scalar types of Connect's DataType message, as Spark SQL names them
SIMPLE_TYPES = {
    "null": "VOID", "binary": "BINARY", "boolean": "BOOLEAN", "byte": "TINYINT", "short": "SMALLINT",
    "integer": "INT", "long": "BIGINT", "float": "FLOAT", "double": "DOUBLE", "string": "STRING",
    "char": "STRING", "var_char": "STRING", "date": "DATE", "timestamp": "TIMESTAMP",
    "timestamp_ntz": "TIMESTAMP_NTZ",
}


class Scope(Protocol):
    """What a name means where an expression stands (``dltrace.dataframe.plan``)."""

    def column(self, identifier: str, plan_id: int | None) -> exp.Expression: ...

    def star(self, target: str | None, plan_id: int | None) -> list[exp.Expression]: ...

    def named_star(self, star) -> list[tuple[exp.Expression, object]]: ...

    def resolve_sql(self, expression: exp.Expression) -> exp.Expression: ...

    def python_udf(self, udf) -> str: ...

    def subquery(self, plan_id: int) -> exp.Query: ...


def data_type(message) -> str:
    """A Connect ``DataType`` as Spark SQL's type name (``DECIMAL(12,2)``, ``ARRAY<BIGINT>``)."""
    kind = message.WhichOneof("kind")
    if kind in SIMPLE_TYPES:
        return SIMPLE_TYPES[kind]
    if kind == "decimal":
        precision = message.decimal.precision if message.decimal.HasField("precision") else 10
        return f"DECIMAL({precision},{message.decimal.scale if message.decimal.HasField('scale') else 0})"
    if kind == "array":
        return f"ARRAY<{data_type(message.array.element_type)}>"
    if kind == "map":
        return f"MAP<{data_type(message.map.key_type)}, {data_type(message.map.value_type)}>"
    if kind == "struct":
        fields = ", ".join(f"`{f.name}`: {data_type(f.data_type)}" for f in message.struct.fields)
        return f"STRUCT<{fields}>"
    if kind == "unparsed":
        return message.unparsed.data_type_string
    raise UnsupportedLineage(f"DataFrame: a value of type {kind} has no Spark SQL form dltrace can trace")


def cast_to(value: exp.Expression, type_name: str) -> exp.Expression:
    return exp.Cast(this=value, to=exp.DataType.build(type_name, dialect="spark"))


def literal(message) -> exp.Expression:
    """A Connect literal, typed as Spark types it: ``F.lit(0.05)`` is a DOUBLE, where the SQL
    text ``0.05`` would be a DECIMAL."""
    kind = message.WhichOneof("literal_type")
    value = getattr(message, kind) if kind else None
    if kind in (None, "null"):
        return exp.Null() if kind is None or message.null.WhichOneof("kind") in (None, "null") else \
            cast_to(exp.Null(), data_type(message.null))
    if kind == "boolean":
        return exp.Boolean(this=value)
    if kind == "string":
        return exp.Literal.string(value)
    if kind == "integer":
        return exp.Literal.number(value)
    if kind in ("byte", "short", "long"):
        return cast_to(exp.Literal.number(value), SIMPLE_TYPES[kind])
    if kind in ("float", "double"):
        if math.isnan(value) or math.isinf(value):
            return cast_to(exp.Literal.string(str(value)), SIMPLE_TYPES[kind])
        return cast_to(exp.Literal.number(repr(value)), SIMPLE_TYPES[kind])
    if kind == "decimal":
        return cast_to(exp.Literal.string(value.value), decimal_type(value))
    if kind == "date":
        day = datetime.date(1970, 1, 1) + datetime.timedelta(days=value)
        return cast_to(exp.Literal.string(day.isoformat()), "DATE")
    if kind in ("timestamp", "timestamp_ntz"):
        function = "TIMESTAMP_MICROS" if kind == "timestamp" else None
        if function:
            return exp.Anonymous(this=function, expressions=[exp.Literal.number(value)])
        moment = datetime.datetime(1970, 1, 1) + datetime.timedelta(microseconds=value)
        return cast_to(exp.Literal.string(moment.isoformat(sep=" ")), "TIMESTAMP_NTZ")
    if kind == "array":
        return exp.Array(expressions=[literal(element) for element in value.elements])
    if kind == "binary":  # X'6162': a BINARY literal, never NULL, as Spark types F.lit(bytearray(...))
        return exp.HexString(this=value.hex().upper())
    raise UnsupportedLineage(f"DataFrame: a literal of type {kind} is not supported by dltrace")


def decimal_digits(value: decimal.Decimal) -> tuple[int, int]:
    """``(precision, scale)`` of ``value`` as classic Spark types a ``BigDecimal`` literal.

    >>> decimal_digits(decimal.Decimal("7.0")), decimal_digits(decimal.Decimal("1E+3"))
    ((2, 1), (4, 0))
    """
    digits = value.as_tuple()
    exponent = int(digits.exponent)
    scale = max(0, -exponent)
    return max(len(digits.digits) + max(0, exponent), scale, 1), scale


def decimal_type(message) -> str:
    """A Connect decimal literal's type as Spark Connect's server gives it: the value's own
    digits (as classic Spark types a ``BigDecimal``), widened to the precision and scale the
    message carries (pyspark sends ``DecimalType()``'s 10 and 0 for a ``Decimal``).

    >>> from pyspark.sql.connect.proto import expressions_pb2
    >>> literal = expressions_pb2.Expression.Literal.Decimal
    >>> decimal_type(literal(value="7.0", precision=10, scale=0)), decimal_type(literal(value="1E+3"))
    ('DECIMAL(10,1)', 'DECIMAL(4,0)')
    """
    precision, scale = decimal_digits(decimal.Decimal(message.value))
    if message.HasField("scale"):
        scale = max(scale, message.scale)
    if message.HasField("precision"):
        precision = max(precision, message.precision)
    return f"DECIMAL({max(precision, scale)},{scale})"


def split_identifier(text: str) -> list[str]:
    """``a.b``, ``` `a.b`.c ```: the parts of a Spark column name (back-quotes protect dots)."""
    parts, current, quoted, i = [], [], False, 0
    while i < len(text):
        char = text[i]
        if char == "`":
            if quoted and text[i + 1:i + 2] == "`":
                current.append("`")
                i += 1
            else:
                quoted = not quoted
        elif char == "." and not quoted:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
        i += 1
    parts.append("".join(current))
    return parts


class ExpressionTranslator:
    """Connect expressions to sqlglot, names resolved in ``scope``."""

    def __init__(self, scope: Scope) -> None:
        self.scope = scope
        self.lambda_names: set[str] = set()

    def __call__(self, message) -> exp.Expression:
        kind = message.WhichOneof("expr_type")
        handler: Callable | None = getattr(self, f"_{kind}", None)
        if handler is None:  # named by the API call that makes it (api_coverage.py)
            raise UnsupportedLineage(refused_expression(kind))
        return handler(getattr(message, kind))

    def many(self, messages) -> list[exp.Expression]:
        return [self(m) for m in messages]

    def _literal(self, message) -> exp.Expression:
        return literal(message)

    def _unresolved_attribute(self, message) -> exp.Expression:
        plan_id = message.plan_id if message.HasField("plan_id") else None
        name = message.unparsed_identifier
        if message.is_metadata_column:
            raise UnsupportedLineage(f"DataFrame: metadataColumn({name!r}) is not supported by dltrace: "
                                     f"{METADATA_COLUMN}")
        if name in self.lambda_names:
            return exp.to_identifier(name)
        return self.scope.column(name, plan_id)

    def _unresolved_star(self, message) -> exp.Expression:
        raise BadInput("DataFrame: '*' is allowed only in a select list or a function call such as count('*')")

    def _alias(self, message) -> exp.Expression:
        # an alias inside an expression (not at the top of a select list) only names it
        return self(message.expr)

    def _cast(self, message) -> exp.Expression:
        target = data_type(message.type) if message.HasField("type") else message.type_str
        to = exp.DataType.build(target, dialect="spark")
        if message.eval_mode == TRY_EVAL_MODE:  # NULL for a malformed value; sqlglot prints TRY_CAST when safe
            return exp.TryCast(this=self(message.expr), to=to, safe=True)
        return exp.Cast(this=self(message.expr), to=to)

    def _expression_string(self, message) -> exp.Expression:
        parsed = parse_expression(message.expression)
        refused = [f.name for f in parsed.find_all(exp.Anonymous) if f.name.lower() in REFUSED_FUNCTIONS]
        if refused:
            raise UnsupportedLineage(refused_function(refused[0]))
        return self.scope.resolve_sql(parsed)

    def _sort_order(self, message) -> exp.Expression:
        descending = message.direction == 2  # SORT_DIRECTION_DESCENDING
        nulls_first = message.null_ordering == 1 if message.null_ordering else not descending
        return exp.Ordered(this=self(message.child), desc=descending, nulls_first=nulls_first)

    def _window(self, message) -> exp.Expression:
        spec: dict = {}
        if message.partition_spec:
            spec["partition_by"] = self.many(message.partition_spec)
        if message.order_spec:
            spec["order"] = exp.Order(expressions=[self._sort_order(o) for o in message.order_spec])
        if message.HasField("frame_spec"):
            spec["spec"] = self._frame(message.frame_spec)
        return exp.Window(this=self(message.window_function), **spec)

    def _frame(self, frame) -> exp.WindowSpec:
        def boundary(b) -> tuple[str, str]:
            which = b.WhichOneof("boundary")
            if which == "current_row":
                return "CURRENT ROW", ""
            if which == "unbounded":
                return "UNBOUNDED", ""
            value = self(b.value)
            negative = isinstance(value, exp.Neg) and isinstance(value.this, exp.Literal)
            if negative or isinstance(value, exp.Literal):  # a negative literal is Neg(literal)
                number = -int(value.this.name) if negative else int(value.name)
            else:
                number = None
            if number == 0:
                return "CURRENT ROW", ""
            if number is None:
                return value.sql(dialect=SPARK), "PRECEDING"
            return str(abs(number)), "PRECEDING" if number < 0 else "FOLLOWING"

        start, start_side = boundary(frame.lower)
        end, end_side = boundary(frame.upper)
        if start == "UNBOUNDED":
            start_side = "PRECEDING"
        if end == "UNBOUNDED":
            end_side = "FOLLOWING"
        return exp.WindowSpec(kind="ROWS" if frame.frame_type == 1 else "RANGE", start=start,
                              start_side=start_side or None, end=end, end_side=end_side or None)

    def _subquery_expression(self, message) -> exp.Expression:
        """``df.scalar()``, ``df.exists()`` and ``col.isin(df)``: the SQL subqueries they are."""
        query = self.scope.subquery(message.plan_id)
        kind = message.subquery_type
        if kind == 1:  # SUBQUERY_TYPE_SCALAR
            return exp.Subquery(this=query)
        if kind == 2:  # SUBQUERY_TYPE_EXISTS
            return exp.Exists(this=query)
        if kind == 4:  # SUBQUERY_TYPE_IN
            values = self.many(message.in_subquery_values)
            return exp.In(this=values[0] if len(values) == 1 else exp.Tuple(expressions=values),
                          query=exp.Subquery(this=query))
        raise UnsupportedLineage("DataFrame: a table argument (df.asTable()) is not supported by dltrace")

    def _unresolved_extract_value(self, message) -> exp.Expression:
        child, key = self(message.child), self(message.extraction)
        if isinstance(key, exp.Literal) and key.is_string:
            return exp.Dot(this=child, expression=exp.to_identifier(key.name))
        return exp.Bracket(this=child, expressions=[key])

    def _unresolved_function(self, message) -> exp.Expression:
        return self.function(message.function_name, list(message.arguments), message.is_distinct)

    def _call_function(self, message) -> exp.Expression:
        return self.function(message.function_name, list(message.arguments), False)

    def _lambda_function(self, message) -> exp.Expression:
        names = [v.name_parts[-1] for v in message.arguments]
        self.lambda_names.update(names)
        body = self(message.function)
        return exp.Lambda(this=body, expressions=[exp.to_identifier(n) for n in names])

    def _unresolved_named_lambda_variable(self, message) -> exp.Expression:
        return exp.to_identifier(message.name_parts[-1])

    def _common_inline_user_defined_function(self, message) -> exp.Expression:
        if not message.HasField("python_udf"):
            raise UnsupportedLineage(f"DataFrame: user-defined function {message.function_name} is not a Python "
                                     f"UDF: dltrace traces Python and pandas UDFs only")
        name = self.scope.python_udf(message)
        return exp.Anonymous(this=name, expressions=self.many(message.arguments))

    def function(self, name: str, arguments: list, distinct: bool) -> exp.Expression:
        """A call of Spark function ``name`` (or a Column operator pyspark sends as one)."""
        lowered = name.lower()
        if lowered in REFUSED_FUNCTIONS:
            raise UnsupportedLineage(refused_function(name))
        if lowered in BINARY and len(arguments) == 2:
            left, right = self.many(arguments)
            return BINARY[lowered](this=wrap(left), expression=wrap(right))
        if lowered in ("isnull", "isnotnull") and len(arguments) == 1:
            test = exp.Is(this=wrap(self(arguments[0])), expression=exp.Null())
            return test if lowered == "isnull" else exp.Not(this=test)
        if lowered in ("not", "!"):
            operand = self(arguments[0])
            if isinstance(operand, exp.EQ):  # ``a != b`` (PySpark's ``~(a == b)``) is ``a <> b``, as SQL writes
                return exp.NEQ(this=operand.this, expression=operand.expression)  # it (and inequality_split reads it)
            return exp.Not(this=wrap(operand))
        if lowered == "negative":
            return exp.Neg(this=wrap(self(arguments[0])))
        if lowered == "in":
            first, *rest = self.many(arguments)
            return exp.In(this=wrap(first), expressions=rest)
        if lowered == "when":  # when(c1, v1, c2, v2, ..., [otherwise])
            values = self.many(arguments)
            ifs = [exp.If(this=values[i], true=values[i + 1]) for i in range(0, len(values) - 1, 2)]
            return exp.Case(ifs=ifs, default=values[-1] if len(values) % 2 else None)
        if lowered in ("like", "rlike", "ilike") and len(arguments) == 2:
            left, right = self.many(arguments)
            node = {"like": exp.Like, "rlike": exp.RegexpLike, "ilike": exp.ILike}[lowered]
            return node(this=left, expression=right)
        if lowered in ("startswith", "endswith", "contains"):
            left, right = self.many(arguments)
            return exp.Anonymous(this=lowered, expressions=[left, right])
        if lowered == "count" and len(arguments) == 1 and arguments[0].WhichOneof("expr_type") == "unresolved_star":
            return exp.Count(this=exp.Star())
        if lowered == "struct":  # an argument's alias names its field: STRUCT(1 AS a), as Spark names it
            return exp.Struct(expressions=[field for argument in arguments for field in self.struct_fields(argument)])
        args = [value for argument in arguments for value in self.arguments(argument)]
        if distinct:
            args = [exp.Distinct(expressions=args)]
        return build_function(name, args)

    def arguments(self, argument) -> list[exp.Expression]:
        """A call's argument; ``*`` (``F.array("*")``) the columns it stands for, as Spark expands it."""
        if argument.WhichOneof("expr_type") == "unresolved_star":
            return [ref for ref, _ in self.scope.named_star(argument.unresolved_star)]
        return [self(argument)]

    def struct_fields(self, argument) -> list[exp.Expression]:
        """A field of ``struct(...)`` named as Spark names it: by its alias, or for ``*``
        (``F.struct("*")``, ``df.toJSON()``) by each column's name."""
        kind = argument.WhichOneof("expr_type")
        if kind == "alias":
            name = exp.to_identifier(argument.alias.name[-1])
            return [exp.PropertyEQ(this=name, expression=self(argument.alias.expr))]
        if kind == "unresolved_star":
            return [exp.PropertyEQ(this=exp.to_identifier(column.name), expression=ref)
                    for ref, column in self.scope.named_star(argument.unresolved_star)]
        node = self(argument)  # a column's field is named after it (once the query is merged, x may make qty)
        if kind == "unresolved_attribute" and isinstance(node, (exp.Column, exp.Dot)) and node.output_name:
            # by the column's name, not its SQL's: a pivot's column ``ann`` is ``_pivoted._p0`` (seed 2270)
            column = self.scope.column_of(node) if isinstance(node, exp.Column) else None
            name = column.name if column is not None and column.name else node.output_name
            return [exp.PropertyEQ(this=exp.to_identifier(name), expression=node)]
        return [node]


def parse_expression(text: str) -> exp.Expression:
    """One Spark SQL expression (``F.expr``, ``selectExpr``, ``filter("...")``), or one line."""
    try:
        return sqlglot.parse_one(text, read=SPARK)
    except (ParseError, TokenError) as error:
        raise BadInput(f"DataFrame: the SQL expression {text!r} does not parse: {str(error).splitlines()[0]}") from None


def build_function(name: str, args: list[exp.Expression]) -> exp.Expression:
    """The node the Spark SQL parser makes of ``name(args)``: ``SUM`` for sum, ``Anonymous``
    for a function (or a registered UDF) sqlglot does not know."""
    # an argument reading a struct's field (``t.s.f``) would come back from the text as a column
    # of table ``s`` in database ``t``: it goes through as a placeholder, put back after
    held = {f"_dl_arg{i}": arg for i, arg in enumerate(args) if arg.find(exp.Dot)}
    shown = [exp.column(f"_dl_arg{i}") if f"_dl_arg{i}" in held else arg for i, arg in enumerate(args)]
    text = exp.Anonymous(this=name, expressions=shown).sql(dialect=SPARK)
    try:
        node = parse_expression(text)
    except BadInput:
        return exp.Anonymous(this=name, expressions=args)
    for column in list(node.find_all(exp.Column)):
        if not column.table and column.name in held:
            column.replace(held[column.name])
    return node


def wrap(node: exp.Expression) -> exp.Expression:
    """``node`` as an operand: parenthesized where precedence could change its meaning."""
    if isinstance(node, (exp.Binary, exp.Not, exp.Neg, exp.Is, exp.In, exp.Between, exp.Like)):
        return exp.Paren(this=node)
    return node
