"""A translated DataFrame plan made the query a person would write.

The translation (``plan.py``) makes each relation a SELECT over its input as a derived table,
nested as deep as the program is long, with every input under an alias ``_dfN``.  sqlglot's
``merge_subqueries`` folds each derived table into the query over it where that keeps the
query's meaning (a filter of a join is the join's WHERE): about a third of the text, quicker
to rewrite, and a correlated subquery's condition in its own WHERE, as the rewriter sees it in
SQL.  A table read once then gets its own name back as its alias.
"""

from __future__ import annotations

from sqlglot import exp
from sqlglot.optimizer.merge_subqueries import merge_subqueries

from dltrace.dataframe.scope import SIMPLE_NAME


def as_written(query: exp.Query) -> exp.Query:
    """``query`` (fully qualified, inputs aliased ``_dfN``) with its derived tables merged
    where the meaning allows and its tables read once named after themselves."""
    return named_after_tables(merge_subqueries(query))


def named_after_tables(query: exp.Query) -> exp.Query:
    """A table the query reads once is aliased by its own name, not ``_dfN``, as a person
    writes it: what users see of the query (reasons' inputs, ``dataframe_sql``) reads
    ``customer.c_acctbal``."""
    tables = list(query.find_all(exp.Table))
    names = [table.name.lower() for table in tables]
    taken = {table.alias.lower() for table in tables} | {a.alias.lower() for a in query.find_all(exp.TableAlias)}
    renames = {}
    for table in tables:
        name = table.name.lower()
        if table.alias.startswith("_df") and names.count(name) == 1 and name not in taken \
                and SIMPLE_NAME.fullmatch(table.name):
            renames[table.alias] = table.name
            table.set("alias", exp.TableAlias(this=exp.to_identifier(table.name)))
    for column in query.find_all(exp.Column):
        if column.table in renames:
            column.set("table", exp.to_identifier(renames[column.table]))
    return query
