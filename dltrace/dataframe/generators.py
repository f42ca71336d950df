"""A generator in a DataFrame's select list (``F.explode``, ``F.posexplode``, ``F.inline``,
``F.json_tuple``, ``F.stack`` and their ``_outer`` forms, in ``select`` or ``withColumn``)
as the ``LATERAL VIEW`` Spark plans it as: each generated row's lineage is its input row's
(the rewriter's ``generator`` rule).  Its columns are named as Spark names them, asked of
Spark, since one generator makes as many columns as its argument's type says (``pos`` and
``col``, ``key`` and ``value``, a struct's fields).
"""

from __future__ import annotations

from sqlglot import exp

from dltrace.dataframe.scope import Column, Frame, Scope
from dltrace.rewriter.generator import is_generator


def generator_function(expression: exp.Expression) -> exp.Expression:
    """The function of a select item (``f(x) AS (a, b)``: ``f(x)``)."""
    return expression.this if isinstance(expression, exp.Aliases) else expression


def select_generating(translator, scope: Scope, items: list[tuple[exp.Expression, Column]], message) -> Frame:
    """``SELECT items FROM scope's input``, a generator among them written as a LATERAL VIEW
    whose columns take its place (``translator``: a ``plan.PlanTranslator``; ``message``: the
    relation, whose schema Spark gives)."""
    found = [i for i, (expression, _) in enumerate(items) if is_generator(generator_function(expression))]
    if not found:
        return translator.select(scope, items)
    names = [name for name, _ in translator.catalog.schema_of(message)]  # Spark refuses two generators
    position = found[0]
    generated = names[position:position + len(names) - len(items) + 1]
    alias = translator.alias()
    columns = [f"_gen{i}" for i in range(len(generated))]
    lateral = exp.Lateral(this=generator_function(items[position][0]).copy(), view=True,
                          alias=exp.TableAlias(this=exp.to_identifier(alias),
                                               columns=[exp.to_identifier(c) for c in columns]))
    made = [(exp.column(sql, table=alias), Column(name, "")) for sql, name in zip(columns, generated)]
    frame = translator.select(scope, items[:position] + made + items[position + 1:])
    frame.query.set("laterals", [lateral])
    return frame
