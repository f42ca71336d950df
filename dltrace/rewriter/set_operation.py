"""Rule: ``UNION ALL`` leaves each row's DL unchanged (paper §3.4).

Both inputs must expose the same lineage columns, so each is collapsed to one set column.

>>> from dltrace.rewriter import rewrite_sql, PAPER_SCHEMA
>>> print(rewrite_sql("SELECT s_name AS name FROM store UNION ALL SELECT i_name FROM item", PAPER_SCHEMA))
SELECT store.s_name AS name, ARRAY(store._dl_id) AS DL FROM store AS store UNION ALL SELECT item.i_name AS i_name, ARRAY(item._dl_id) AS DL FROM item AS item
"""  # noqa: E501

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp

from dltrace.rewriter.context import RewriteContext, unsupported
from dltrace.rewriter.terms import Lineage, Term, is_lineage_column, lineage_column, tables_of


def union_all(union: exp.Expression, context: RewriteContext) -> exp.Expression:
    """Give both inputs of a UNION ALL one common lineage column."""
    if not isinstance(union, exp.SetOperation):
        return union
    if union.args.get("distinct"):
        raise unsupported(union, "UNION (distinct)")
    of = context.lineage.of
    tables = tables_of(of(union.left.unnest()).output) | tables_of(of(union.right.unnest()).output)
    for side in (union.left, union.right):
        replace_lineage_columns(
            side.unnest(), lambda terms: [(lineage_column(0), context.representation.as_set(terms))], context
        )
    of(union).output = (Term(exp.column(lineage_column(0)), context.representation.set_kind, tables),)
    return union


def replace_lineage_columns(
    query: exp.Expression, columns: Callable[[Lineage], list[tuple[str, exp.Expression]]], context: RewriteContext
) -> None:
    """Swap the ``__dl`` columns of a rewritten query (of each SELECT under a set operation)
    for ``columns(terms)``, built from the terms they held."""
    if isinstance(query, exp.SetOperation):
        for side in (query.left, query.right):
            replace_lineage_columns(side.unnest(), columns, context)
        return
    set_lineage_columns(query, columns(context.lineage.of(query).projected))


def set_lineage_columns(select: exp.Select, columns: list[tuple[str, exp.Expression]]) -> None:
    """``select`` with ``columns`` (name, value) in place of its ``__dl`` columns."""
    kept = [e for e in select.expressions if not is_lineage_column(e.alias_or_name)]
    select.set("expressions", kept + [exp.alias_(sql, name) for name, sql in columns])
