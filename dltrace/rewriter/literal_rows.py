"""Rule: literal rows.  A ``VALUES`` list and ``range(...)`` in FROM are rows the program
writes, not rows of a source: they have no ids, so they contribute ∅, as a literal in an
expression does.  A row joined to them keeps the lineage of its other sources; a group of
literal rows alone has an empty DL.  A user who wants them traced registers them as a table.

>>> from dltrace.rewriter import rewrite_sql, PAPER_SCHEMA
>>> print(rewrite_sql("SELECT s.t_id, v.label FROM sales s JOIN VALUES (1, 'one') AS v(s_id, label) "
...                   "ON s.s_id = v.s_id", PAPER_SCHEMA))
SELECT s.t_id AS t_id, v.label AS label, ARRAY(s._dl_id) AS DL FROM sales AS s JOIN VALUES (1, 'one') AS v(s_id, label) ON s.s_id = v.s_id
"""  # noqa: E501

from __future__ import annotations

from sqlglot import exp

from dltrace.rewriter.context import RewriteContext

# table-valued functions whose rows are computed from their arguments alone
LITERAL_FUNCTIONS = frozenset({"range"})


def is_literal_function(table: exp.Expression) -> bool:
    """A table-valued function in FROM whose rows the program writes (``range(10)``)."""
    return (isinstance(table, exp.Table) and isinstance(table.this, exp.Anonymous)
            and table.this.name.lower() in LITERAL_FUNCTIONS)


def name_literal_columns(expression: exp.Expression) -> exp.Expression:
    """Literal rows aliased with the names Spark gives their columns (``range``: ``id``; a
    VALUES list: ``col1``, ``col2``, ...), so that ``*`` expands to them and a query may read
    them; a VALUES statement becomes ``SELECT * FROM VALUES ...``."""
    if isinstance(expression, exp.Values):
        expression = exp.select("*").from_(expression)
    for rows in list(expression.find_all(exp.Table, exp.Values)):
        alias = rows.args.get("alias")
        if alias is not None and alias.columns:
            continue
        if isinstance(rows, exp.Values) and rows.expressions:
            first = rows.expressions[0]
            names = [f"col{i + 1}" for i in range(len(first.expressions) if isinstance(first, exp.Tuple) else 1)]
        elif is_literal_function(rows):
            names = ["id"]
        else:
            continue
        rows.set("alias", exp.TableAlias(this=alias.this if alias is not None else None,
                                         columns=[exp.to_identifier(name) for name in names]))
    return expression


def literal_rows(query: exp.Expression, context: RewriteContext) -> exp.Expression:
    """A ``VALUES`` scope's rows carry no lineage: every enclosing query reads ∅ from it."""
    if isinstance(query, exp.Values):
        lineage = context.lineage.of(query)
        lineage.rows = lineage.projected = lineage.output = ()
    return query
