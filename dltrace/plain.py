"""SQL helpers over the user's query: the names it reads, the query without lineage, and
Spark's names for its output columns.

Without lineage (``LINEAGE ON ()``, ``lineage=False``, the benchmarks' baseline) Spark must
run the query as the user wrote it: sqlglot's qualified form is not always valid Spark
(``SELECT DISTINCT p_brand FROM part AS p1 ORDER BY p_brand`` qualifies its ORDER BY to
``p1.p_brand``, which Spark rejects after DISTINCT) and names unaliased expressions
``_col_N`` where Spark says ``count(1)``.  The one change: each catalog table is read through
a subquery of its own columns, under its own name or alias, so that ``*`` never shows
``_dl_id``.  The query is still qualified against the catalog first, for the same one-line
errors as with lineage.

>>> from dltrace.rewriter import PAPER_SCHEMA
>>> print(plain_sql("SELECT DISTINCT (category) FROM item AS i ORDER BY category", PAPER_SCHEMA))
SELECT DISTINCT (category) FROM (SELECT i_id, i_name, category FROM item) AS i ORDER BY category
"""

from __future__ import annotations

import re
from functools import lru_cache

from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.optimizer.scope import traverse_scope

from dltrace.errors import DltraceError
from dltrace.rewriter import DL, parse
from dltrace.rewriter.dialect import SPARK
from dltrace.rewriter.qualify import inner_joins, qualify_against_catalog

GENERATED_NAME = re.compile(r"_col_\d+")  # sqlglot's alias for an unnamed output column


def plain_sql(query: str, schemas: dict[str, dict[str, str]]) -> str:
    """``query`` as written, each catalog table read as a subquery of its own columns."""
    expression = parse(query)
    qualify_against_catalog(expression, schemas)  # errors only: the query runs as written
    cte_names = {cte.alias_or_name.lower() for cte in expression.find_all(exp.CTE)}
    for table in list(expression.find_all(exp.Table)):
        name = table.name.lower()
        if name not in schemas or name in cte_names or set(k for k, v in table.args.items() if v) - {"this", "alias"}:
            continue
        columns = exp.select(*[exp.column(c, quoted=not re.fullmatch(r"[A-Za-z_]\w*", c)) for c in schemas[name]])
        table.replace(columns.from_(exp.to_table(table.name)).subquery(table.alias_or_name))
    return inner_joins(expression).sql(dialect=SPARK)  # sqlglot would print a comma as CROSS JOIN


def with_spark_names(session, query: str, frame):
    """``frame`` (the lineage query's result) with the output names Spark gives ``query``
    itself where sqlglot made up ``_col_N`` (``count(*)`` is Spark's ``count(1)``): code that
    reads columns by Spark's names must work with lineage too.  Costs an analysis of the
    plain query (no job), only when such a name occurs."""
    made_up = [c for c in frame.columns if GENERATED_NAME.fullmatch(c) and not re.search(rf"\b{c}\b", query)]
    if not made_up or DL not in frame.columns:
        return frame
    names = session.run(plain_sql(query, session.schemas())).columns
    return frame.toDF(*names, *frame.columns[len(names):])  # DL (and DL_names, held apart) last


def with_spark_aliases(session, query: str, expression: exp.Expression) -> exp.Expression:
    """``expression`` (``query``'s lineage query) with the ``_col_N`` aliases sqlglot made up
    for its output replaced by Spark's names for ``query``'s columns, as ``with_spark_names``
    renames a result's columns: the SQL ``dltrace rewrite`` prints names ``count(*)``'s column
    ``count(1)``, as ``spark-sql`` would."""
    outer = expression.unnest()
    if not isinstance(outer, exp.Select):
        return expression
    names = outer.named_selects
    made_up = [i for i, n in enumerate(names) if GENERATED_NAME.fullmatch(n) and not re.search(rf"\b{n}\b", query)]
    if not made_up or names[-1] != DL:
        return expression
    from pyspark.errors import PySparkException

    try:
        spark_names = session.run(plain_sql(query, session.schemas())).columns
    except (PySparkException, DltraceError):
        return expression  # Spark cannot analyze the query now (e.g. files gone): sqlglot's names
    renamed = {names[i]: spark_names[i] for i in made_up}
    for i in made_up:
        column = outer.expressions[i]
        outer.expressions[i] = exp.alias_(column.this if isinstance(column, exp.Alias) else column,
                                          exp.to_identifier(spark_names[i], quoted=True))
    for column in outer.args["order"].find_all(exp.Column) if outer.args.get("order") else []:
        if not column.table and column.name in renamed:
            column.set("this", exp.to_identifier(renamed[column.name], quoted=True))
    return expression


def names_read(query: str) -> set[str]:
    """The names of the tables, saved results and views ``query`` reads (lower case); a
    name a CTE defines is the CTE's where the CTE is visible, as in SQL (``WITH orders AS
    (SELECT ... FROM orders)`` reads the table)."""
    return set(_names_read(query))


@lru_cache(maxsize=64)  # a pipeline step asks it of the same texts several times
def _names_read(query: str) -> frozenset[str]:
    try:
        expression = parse(query)
    except DltraceError:
        return frozenset()
    try:
        return frozenset(source.name.lower() for scope in traverse_scope(expression)
                         for source in scope.sources.values() if isinstance(source, exp.Table))
    except SqlglotError:  # scopes sqlglot cannot build: every name not defined by a CTE
        defined = {cte.alias_or_name.lower() for cte in expression.find_all(exp.CTE)}
        return frozenset({table.name.lower() for table in expression.find_all(exp.Table)} - defined)
