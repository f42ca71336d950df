"""The SQL rewriter: a user's query in, the same query with a lineage column ``DL`` out.

Rules follow the paper's section 3.3 list, one module each, composed below in the order
they apply.  Scopes (subqueries, CTEs, set operations) are rewritten innermost first, so a
rule always finds the lineage of its inputs already computed.

>>> print(rewrite_sql("SELECT d.s_name, i.i_name FROM store d, item i, sales s "
...                   "WHERE d.s_id = s.s_id AND i.i_id = s.i_id AND i.category = 'stationery'", PAPER_SCHEMA))
SELECT d.s_name AS s_name, i.i_name AS i_name, ARRAY(d._dl_id, i._dl_id, s._dl_id) AS DL FROM store AS d INNER JOIN item AS i INNER JOIN sales AS s WHERE d.s_id = s.s_id AND i.i_id = s.i_id AND i.category = 'stationery'
"""  # noqa: E501

from __future__ import annotations

from dataclasses import replace

from sqlglot import exp
from sqlglot.optimizer.scope import traverse_scope

from dltrace.errors import BadInput
from dltrace.rewriter.aggregate import aggregate
from dltrace.rewriter.base_table import number_instances
from dltrace.rewriter.context import DISJOINT_ROWS, SHARED, IdSource, RewriteContext
from dltrace.rewriter.distinct import distinct
from dltrace.rewriter.distinct_set_operations import distinct_set_operations
from dltrace.rewriter.join import join
from dltrace.rewriter.output import DL, SharedLineage, output
from dltrace.rewriter.projection import projection
from dltrace.rewriter.qualify import parse, qualify_against_catalog
from dltrace.rewriter.representation import REPRESENTATIONS, SET
from dltrace.rewriter.saved_result import SavedLineage, shared_view
from dltrace.rewriter.semi_anti_join import semi_anti_join
from dltrace.rewriter.set_operation import union_all
from dltrace.rewriter.subquery_condition import subquery_condition
from dltrace.rewriter.subquery_copies import ctes_read_by_copies, in_cte, in_lineage_copy, is_skipped, subquery_copies
from dltrace.rewriter.subquery_value import subquery_value
from dltrace.rewriter.unsupported import refuse_unsupported
from dltrace.rewriter.window import window

# Whole-query preparation, before any scope is rewritten: refuse what cannot be traced,
# turn constructs into equivalent ones the scope rules know, copy expression subqueries.
PREPARE = (refuse_unsupported, number_instances, distinct_set_operations, semi_anti_join, distinct, subquery_copies)
# Per SELECT, innermost first: sources and joins (base tables, subqueries, CTEs, outer
# joins), WHERE subqueries, aggregation, HAVING and SELECT-list subqueries, windows, and
# last the SELECT list.
SELECT_RULES = (join, subquery_condition, aggregate, subquery_value, window, projection)
# Per set operation, after both inputs.
SET_OPERATION_RULES = (union_all,)

SEMANTICS = ("control", "data")

# The paper's running example (section 2, Tables 1-3), used by the rules' doctests.
PAPER_SCHEMA = {
    "store": {"s_id": "int", "s_name": "string", "city": "string", "state": "string"},
    "item": {"i_id": "int", "i_name": "string", "category": "string"},
    "sales": {"t_id": "int", "s_id": "int", "i_id": "int", "price": "int", "num": "int"},
}
PAPER_CODES = {"store": 1, "item": 2, "sales": 3}

__all__ = [
    "DISJOINT_ROWS",
    "DL",
    "SHARED",
    "SharedLineage",
    "IdSource",
    "SavedLineage",
    "rewrite",
    "rewrite_sql",
    "parse",
    "PAPER_SCHEMA",
    "PAPER_CODES",
]


def rewrite(
    expression: exp.Expression,
    schemas: dict[str, dict[str, str]],
    codes: dict[str, int],
    representation: str = "set",
    semantics: str = "control",
    id_source: IdSource | None = None,
    ids_ordered_by_table: bool = True,
    table_rows: dict[str, int] | None = None,
    table_keys: dict[str, list[str]] | None = None,
    saved: dict[str, SavedLineage] | None = None,
) -> exp.Expression:
    """``expression`` rewritten so that it also outputs ``DL``, its rows' lineage.

    ``id_source`` says where each table occurrence's ids come from (default: ``_dl_id``);
    ``ids_ordered_by_table`` is False when they are not row ids (e.g. granule hashes);
    ``table_rows`` and ``table_keys`` (catalog statistics) let ``auto`` choose; ``saved``
    names the saved results the query may read, with what their lineage holds (``schemas``
    has their columns).  The result's ``meta[DISJOINT_ROWS]`` says whether no id is in the
    DLs of two of its rows; ``meta[SHARED]`` (a ``SharedLineage``), when set, is the same
    result with the lineage all its rows share held apart.
    """
    if semantics not in SEMANTICS:
        raise BadInput(f"unknown semantics '{semantics}': use control or data")
    if representation not in REPRESENTATIONS:
        raise BadInput(f"unknown representation '{representation}': use {' or '.join(REPRESENTATIONS)}")
    context = RewriteContext(codes, REPRESENTATIONS[representation], semantics, id_source, ids_ordered_by_table)
    context.table_rows, context.table_keys, context.saved = table_rows, table_keys, dict(saved or {})
    expression = qualify_against_catalog(expression, schemas)
    with_ = expression.args.get("with_")
    context.global_names = (frozenset(codes) | frozenset(context.saved)
                            | frozenset(shared_view(name) for name, lineage in context.saved.items()
                                        if lineage.shared_sets)
                            | frozenset(c.alias_or_name.lower() for c in (with_.expressions if with_ else [])))
    for rule in PREPARE:
        expression = rule(expression, context)
    in_copy = replace(context, representation=SET)  # lineage copies, and CTEs they read, use native sets
    native_ctes = ctes_read_by_copies(expression)
    for scope in traverse_scope(expression):
        node = scope.expression
        if is_skipped(node):
            continue  # an original subquery: its lineage copy is rewritten instead
        rules = SELECT_RULES if isinstance(node, exp.Select) else SET_OPERATION_RULES
        native = in_lineage_copy(node) or in_cte(node, native_ctes)
        for rule in rules:
            rule(node, scope, in_copy if native else context)
    return output(expression, context)


def rewrite_sql(
    sql: str,
    schemas: dict[str, dict[str, str]],
    codes: dict[str, int] | None = None,
    representation: str = "set",
    semantics: str = "control",
    saved: dict[str, SavedLineage] | None = None,
) -> str:
    """Spark SQL in, lineage Spark SQL out (``saved``: saved results read like tables)."""
    codes = (
        codes
        if codes is not None
        else (PAPER_CODES if schemas is PAPER_SCHEMA else {n: i + 1 for i, n in enumerate(sorted(schemas))})
    )
    return rewrite(parse(sql), schemas, codes, representation, semantics, saved=saved).sql(dialect="spark")
