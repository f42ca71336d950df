"""Rule: ``UNION ALL`` leaves each row's DL unchanged (paper §3.4).

Both inputs must expose the same lineage columns, so each is collapsed to one set column.
A set every input's rows share (the same uncorrelated subquery's lineage in each, as TPC-DS
queries write one filter per sales channel) stays out of that column: it is
shared by every row of the union too, so it is evaluated once and held apart above it,
instead of being spelled out in every row.

>>> from dltrace.rewriter import rewrite_sql, PAPER_SCHEMA
>>> print(rewrite_sql("SELECT s_name AS name FROM store UNION ALL SELECT i_name FROM item", PAPER_SCHEMA))
SELECT store.s_name AS name, ARRAY(store._dl_id) AS DL FROM store AS store UNION ALL SELECT item.i_name, ARRAY(item._dl_id) AS DL FROM item AS item
"""  # noqa: E501

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp

from dltrace.rewriter.context import RewriteContext, unsupported
from dltrace.rewriter.dialect import SPARK
from dltrace.rewriter.projection import is_symbolic
from dltrace.rewriter.representation import typed_empty_array
from dltrace.rewriter.terms import Kind, Lineage, Term, is_lineage_column, lineage_column, tables_of


def union_all(union: exp.Expression, context: RewriteContext) -> exp.Expression:
    """Give both inputs of a UNION ALL one common lineage column."""
    if not isinstance(union, exp.SetOperation):
        return union
    if union.args.get("distinct"):
        raise unsupported(union, "UNION (distinct)")
    of = context.lineage.of
    shared = _shared_by_every_input(union, context)
    own = lambda terms: tuple(t for t in terms if _text(t) not in shared and t.kind is not Kind.REFS)  # noqa: E731
    sides = [of(side.unnest()).output for side in (union.left, union.right)]
    tables = tables_of(own(sides[0])) | tables_of(own(sides[1]))
    # names of sets held apart (window partitions and frames, while planning a save): a column of their own
    names = [t for terms in sides for t in terms if t.kind is Kind.REFS]

    def columns(terms: Lineage) -> list[tuple[str, exp.Expression]]:
        ids = [(lineage_column(0), context.representation.as_set(own(terms)))]
        if not names:
            return ids
        refs = [exp.func("coalesce", t.sql, typed_empty_array("STRING")) for t in terms if t.kind is Kind.REFS]
        value = exp.func("array_distinct", exp.func("concat", *refs)) if len(refs) > 1 else \
            refs[0] if refs else typed_empty_array("STRING")
        return [*ids, (lineage_column(1), value)]

    for side in (union.left, union.right):
        replace_lineage_columns(side.unnest(), columns, context)
    own_term = Term(exp.column(lineage_column(0)), context.representation.set_kind, tables)
    named = [Term(exp.column(lineage_column(1)), Kind.REFS, tables_of(names))] if names else []
    of(union).output = (*([own_term] if tables or not names else []), *named, *shared.values())
    return union


def _shared_by_every_input(union: exp.SetOperation, context: RewriteContext) -> dict[str, Term]:
    """The symbolic terms (shared sets, ``projection.is_symbolic``) that every SELECT under
    ``union`` carries, by their SQL text."""
    common: dict[str, Term] | None = None
    for select in _inputs(union):
        terms = {_text(t): t for t in context.lineage.of(select).output if is_symbolic(t, context)}
        common = terms if common is None else {text: t for text, t in common.items() if text in terms}
    return common or {}


def _inputs(query: exp.Expression) -> list[exp.Expression]:
    """The SELECTs a chain of set operations combines."""
    if isinstance(query, exp.SetOperation):
        return _inputs(query.left.unnest()) + _inputs(query.right.unnest())
    return [query]


def _text(term: Term) -> str:
    return term.sql.sql(dialect=SPARK)


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
