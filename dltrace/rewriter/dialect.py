"""The Spark SQL dltrace writes: sqlglot's Spark dialect, with typed literals kept as written.

sqlglot reads ``DATE '1996-12-31'`` as a cast and writes it back as ``CAST('1996-12-31' AS
DATE)``.  Spark 4.0's optimizer fails on such a cast in a scalar subquery of a CTE read twice
(``NoSuchElementException: None.get`` in ``SpecialDatetimeValues``: the cast has no time zone
there), where the literal runs; so a cast of a string literal to a date or timestamp is
written as the typed literal it came from.

>>> from sqlglot import parse_one
>>> parse_one("SELECT DATE '1996-12-31', TIMESTAMP '1996-12-31 10:00:00', CAST('' AS DATE)", read="spark").sql(
...     dialect=SPARK)
"SELECT DATE '1996-12-31', TIMESTAMP '1996-12-31 10:00:00', CAST('' AS DATE)"
"""

from __future__ import annotations

from sqlglot import exp
from sqlglot.dialects.spark import Spark

# Spark's TIMESTAMP is sqlglot's TIMESTAMPTZ (the session's time zone)
TYPED_LITERALS = {exp.DataType.Type.DATE: "DATE", exp.DataType.Type.TIMESTAMPTZ: "TIMESTAMP"}


class DltraceSpark(Spark):
    """Registered with sqlglot under its name in lower case, ``SPARK``."""

    class Generator(Spark.Generator):
        def cast_sql(self, expression: exp.Cast, safe_prefix: str | None = None) -> str:
            literal, target = expression.this, expression.to
            # Spark's CAST(...) is read as TRY_CAST (a subclass): only the literal is a plain Cast
            if (type(expression) is exp.Cast and isinstance(literal, exp.Literal) and literal.is_string
                    and not expression.args.get("format")
                    and target.this in TYPED_LITERALS and not target.expressions):
                return f"{TYPED_LITERALS[target.this]} {self.sql(literal)}"
            return super().cast_sql(expression, safe_prefix)


SPARK = "dltracespark"
