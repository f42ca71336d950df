"""The Spark SQL dltrace writes: sqlglot's Spark dialect, with typed literals and Spark's own
functions kept as written.

sqlglot reads ``DATE '1996-12-31'`` as a cast and writes it back as ``CAST('1996-12-31' AS
DATE)``.  Spark 4.0's optimizer fails on such a cast in a scalar subquery of a CTE read twice
(``NoSuchElementException: None.get`` in ``SpecialDatetimeValues``: the cast has no time zone
there), where the literal runs; so a cast of a string literal to a date or timestamp is
written as the typed literal it came from.

>>> from sqlglot import parse_one
>>> parse_one("SELECT DATE '1996-12-31', TIMESTAMP '1996-12-31 10:00:00', CAST('' AS DATE)", read="spark").sql(
...     dialect=SPARK)
"SELECT DATE '1996-12-31', TIMESTAMP '1996-12-31 10:00:00', CAST('' AS DATE)"

Functions sqlglot's Spark dialect writes as others that give other values are written as
Spark's: ``LOG10(x)`` is not ``LOG(10, x)`` (its last digits differ), ``TO_CHAR(x, f)`` keeps
its format (not a CAST), ``PARSE_JSON(s)`` stays a call (not ``s``), and ``LISTAGG(x)``
has no delimiter (not ``','``).

>>> parse_one("SELECT LOG10(x), LOG2(x), TO_CHAR(x, '0999'), PARSE_JSON(s), LISTAGG(n), LISTAGG(n, '-')",
...           read=SPARK).sql(dialect=SPARK)
"SELECT LOG10(x), LOG2(x), TO_CHAR(x, '0999'), PARSE_JSON(s), LISTAGG(n, ''), LISTAGG(n, '-')"
"""

from __future__ import annotations

from sqlglot import exp
from sqlglot.dialects.spark import Spark

# Spark's TIMESTAMP is sqlglot's TIMESTAMPTZ (the session's time zone)
TYPED_LITERALS = {exp.DataType.Type.DATE: "DATE", exp.DataType.Type.TIMESTAMPTZ: "TIMESTAMP"}


def spark_call(name: str):
    """A parser of Spark's function ``name`` as a call of its own (sqlglot would rewrite it)."""
    return lambda args: exp.Anonymous(this=name, expressions=args)


class DltraceSpark(Spark):
    """Registered with sqlglot under its name in lower case, ``SPARK``."""

    class Parser(Spark.Parser):
        FUNCTIONS = {**Spark.Parser.FUNCTIONS, "LOG10": spark_call("LOG10"), "LOG2": spark_call("LOG2")}

    class Generator(Spark.Generator):
        TRANSFORMS = {
            **Spark.Generator.TRANSFORMS,
            exp.ToChar: lambda self, e: self.func("TO_CHAR", e.this, e.args.get("format")),
            exp.ParseJSON: lambda self, e: self.func("PARSE_JSON", e.this, e.expression),
            exp.GroupConcat: lambda self, e: listagg_sql(self, e),
        }


        def cast_sql(self, expression: exp.Cast, safe_prefix: str | None = None) -> str:
            literal, target = expression.this, expression.to
            # Spark's CAST(...) is read as TRY_CAST (a subclass): only the literal is a plain Cast
            if (type(expression) is exp.Cast and isinstance(literal, exp.Literal) and literal.is_string
                    and not expression.args.get("format")
                    and target.this in TYPED_LITERALS and not target.expressions):
                return f"{TYPED_LITERALS[target.this]} {self.sql(literal)}"
            return super().cast_sql(expression, safe_prefix)


def listagg_sql(generator, expression: exp.GroupConcat) -> str:
    """Spark's ``LISTAGG(x)`` joins with no delimiter; sqlglot's default is ``','``."""
    if expression.args.get("separator") is None:
        expression = expression.copy()
        expression.set("separator", exp.Literal.string(""))
    return Spark.Generator.TRANSFORMS[exp.GroupConcat](generator, expression)


SPARK = "dltracespark"
