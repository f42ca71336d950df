"""The SQL rewriter: a user's query in, the same query with a lineage column ``DL`` out.

>>> print(rewrite_sql("SELECT d.s_name, i.i_name FROM store d, item i, sales s "
...                   "WHERE d.s_id = s.s_id AND i.i_id = s.i_id AND i.category = 'stationery'", PAPER_SCHEMA))
SELECT d.s_name AS s_name, i.i_name AS i_name, ARRAY(d._dl_id, i._dl_id, s._dl_id) AS DL FROM store AS d INNER JOIN item AS i INNER JOIN sales AS s WHERE d.s_id = s.s_id AND i.i_id = s.i_id AND i.category = 'stationery'

**The rule contract.**  Every rule is one function of one shape, ``Rule``::

    rule(query: exp.Expression, context: RewriteContext) -> exp.Expression

It is given a query and the rewrite's context, rewrites the query (in place, or builds its
replacement) and returns it.  Rules follow the paper's section 3.3 list, one module each
(with its doctest and ``tests/fixtures/rewriter/<module>.sql``).  The lineage a rule hands
to the next is a typed value in the context (``context.lineage.of(query)``, a
``ScopeLineage``); facts that must follow a node through ``copy()`` are its ``meta``.  Both
are listed in ``context.py``, the one module that defines them.

**Phases.**  ``rewrite`` runs the rules of ``rules`` (default ``RULES``) phase after phase,
each in order.  A whole-query phase gives its rules the whole query, once.  A per-scope
phase gives them each scope's query (a SELECT or a set operation, ``context.scope`` its
sqlglot ``Scope``), innermost first, all rules of the phase on one scope before the next:
a rule always finds the lineage of the scope's inputs computed, and one that does not
apply to the query it is given returns it unchanged.  ``only`` and ``without`` select rules
of ``RULES``, so one rule can run on its own (a fixture's ``only:``, a doctest):

>>> print(rewrite_sql("SELECT DISTINCT s_name FROM store", PAPER_SCHEMA, rules=only("qualify", "distinct")))
SELECT store.s_name AS s_name FROM store AS store GROUP BY store.s_name
"""  # noqa: E501

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from sqlglot import exp
from sqlglot.optimizer.scope import traverse_scope

from dltrace.errors import BadInput
from dltrace.rewriter.aggregate import aggregate
from dltrace.rewriter.all_set_operations import all_set_operations
from dltrace.rewriter.base_table import number_instances
from dltrace.rewriter.context import DISJOINT_ROWS, MANY_GROUPS, SHARED, IdSource, RewriteContext
from dltrace.rewriter.dialect import SPARK
from dltrace.rewriter.distinct import distinct
from dltrace.rewriter.distinct_count import distinct_count
from dltrace.rewriter.distinct_set_operations import distinct_set_operations
from dltrace.rewriter.exists_join import exists_join
from dltrace.rewriter.filtered_groups import merge_filtered_groups
from dltrace.rewriter.filtered_tables import merge_filtered_tables
from dltrace.rewriter.generator import generator
from dltrace.rewriter.grouped_join_reduction import reduce_grouped_joins
from dltrace.rewriter.grouped_value_join import grouped_value_join
from dltrace.rewriter.inequality_split import inequality_split
from dltrace.rewriter.join import join
from dltrace.rewriter.literal_rows import literal_rows
from dltrace.rewriter.one_row_join import one_row_join
from dltrace.rewriter.output import DL, SharedLineage, output
from dltrace.rewriter.pivot import pivot
from dltrace.rewriter.projection import projection
from dltrace.rewriter.qualify import parse, qualify
from dltrace.rewriter.redundant_aliases import redundant_aliases
from dltrace.rewriter.representation import REPRESENTATIONS, SET
from dltrace.rewriter.saved_result import SavedLineage, shared_view
from dltrace.rewriter.semi_anti_join import anti_join_restored, semi_anti_join
from dltrace.rewriter.semi_join_reduction import semi_join_reduction
from dltrace.rewriter.set_operation import union_all
from dltrace.rewriter.subquery_condition import subquery_condition
from dltrace.rewriter.subquery_copies import (
    copy_lineage,
    ctes_read_by_copies,
    in_cte,
    in_lineage_copy,
    is_skipped,
    subquery_copies,
)
from dltrace.rewriter.subquery_value import subquery_value
from dltrace.rewriter.surviving_groups import surviving_groups
from dltrace.rewriter.uncorrelated_copies import hoist_uncorrelated_copies, mark_subsuming_copies
from dltrace.rewriter.ungrouped_copies import ungrouped_copies
from dltrace.rewriter.unpivot import unpivot
from dltrace.rewriter.unsupported import refuse_unsupported
from dltrace.rewriter.window import window

Rule = Callable[[exp.Expression, RewriteContext], exp.Expression]


@dataclass(frozen=True)
class Phase:
    """Rules run in order on the whole query, or (``per_scope``) on each scope's query."""

    name: str
    rules: tuple[Rule, ...]
    per_scope: bool = False


RULES: tuple[Phase, ...] = (
    # The whole query, before any scope is rewritten.  qualify first: every rule relies on
    # qualified columns and expanded stars.  Then refuse what cannot be traced, on the query as
    # written; write UNPIVOTs and SELECT-list generators as the LATERAL VIEWs Spark plans (before
    # DISTINCT becomes GROUP BY); number table occurrences before copies duplicate them (a
    # PIVOT's groups are computed from a copy of its source, beside the PIVOT kept as written); turn constructs into
    # equivalent ones the scope rules know (INTERSECT ALL and EXCEPT ALL into numbered copies,
    # distinct set operations and SEMI/ANTI joins into
    # EXISTS and DISTINCT, DISTINCT into GROUP BY); under control semantics join an EXISTS
    # the plan is better off joining, after merging a filter of a grouped derived table into
    # its HAVING, restricting one joined on its key to the keys the join keeps and merging
    # a derived table it filters into the SELECT that joins it (speed-ups);
    # then copy the expression subqueries, which must see every subquery the earlier rules
    # made, copy a one-row aggregate joined to every row into its SELECT list, to be shared,
    # and point a copy over all of a grouped CTE at the rows it groups (speed-ups).
    Phase("prepare", (qualify, refuse_unsupported, unpivot, generator, number_instances, pivot,
                      all_set_operations, distinct_set_operations, semi_anti_join, distinct, merge_filtered_groups,
                      reduce_grouped_joins, merge_filtered_tables, exists_join, subquery_copies, one_row_join,
                      ungrouped_copies)),
    # Per scope, innermost first: the sources' lineage (literal rows: none; base tables, saved
    # results, subqueries, CTEs, outer joins), WHERE subqueries before grouping (a correlated aggregate and its
    # copy from one grouped join, a speed-up), aggregation, HAVING and SELECT-list
    # subqueries after it (a COUNT(DISTINCT) beside collected lineage counted as a set, a
    # speed-up), windows, then the SELECT list exposes the lineage to the enclosing
    # query; a UNION ALL gives its inputs one common lineage column.  A lineage copy, once
    # rewritten like any query, becomes the DLUNION of its rows (copy_lineage) before its
    # enclosing SELECT, a later scope, takes it.  Around that, the speed-ups: a copy that
    # reads the rows its SELECT groups is marked while its WHERE is still the subquery's, and
    # a grouped one is restricted to its surviving groups while it is still a plain query;
    # then an uncorrelated copy is shared, and a correlated one restricted to the outer rows'
    # keys or else split at a <> correlation (a reduced copy's WHERE no longer has the shape
    # the split needs).
    Phase(
        "scopes",
        (literal_rows, join, subquery_condition, grouped_value_join, aggregate, distinct_count, subquery_value, window,
         projection, union_all, mark_subsuming_copies, surviving_groups, copy_lineage, hoist_uncorrelated_copies,
         semi_join_reduction, inequality_split),
        per_scope=True,
    ),
    # The aliases that repeat a column's name are dropped where Spark's optimizer fails on them
    # (before the output, which copies the rows' query for the sets held apart); the outermost
    # query's lineage becomes the one column DL; the ANTI JOINs written as NOT EXISTS for their
    # lineage rule are given back to Spark as joins.
    Phase("output", (redundant_aliases, output, anti_join_restored)),
)

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
    "MANY_GROUPS",
    "SHARED",
    "SharedLineage",
    "IdSource",
    "SavedLineage",
    "Phase",
    "RULES",
    "Rule",
    "only",
    "rewrite",
    "rewrite_sql",
    "without",
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
    rules: Sequence[Phase] = RULES,
    windows_apart: bool = False,
) -> exp.Expression:
    """``expression`` rewritten so that it also outputs ``DL``, its rows' lineage.

    ``id_source`` says where each table occurrence's ids come from (default: ``_dl_id``);
    ``ids_ordered_by_table`` is False when they are not row ids (e.g. granule hashes);
    ``table_rows`` and ``table_keys`` (catalog statistics) let ``auto`` choose; ``saved``
    names the saved results the query may read, with what their lineage holds (``schemas``
    has their columns).  The result's ``meta[DISJOINT_ROWS]`` says whether no id is in the
    DLs of two of its rows; ``meta[SHARED]`` (a ``SharedLineage``), when set, is the same
    result with the lineage all its rows share held apart; ``meta[MANY_GROUPS]`` whether its
    outermost SELECT groups by a table's key into many groups (Spark sorts them better than
    it hashes them).  ``rules``: the phases to run.  ``windows_apart`` (planning a save): a
    window's partitions and frames are sets held apart (``rewriter/window_sets.py``), named in
    ``meta[SHARED]``'s rows and stored once each.
    """
    if semantics not in SEMANTICS:
        raise BadInput(f"unknown semantics '{semantics}': use control or data")
    if representation not in REPRESENTATIONS:
        raise BadInput(f"unknown representation '{representation}': use {' or '.join(REPRESENTATIONS)}")
    saved = dict(saved or {})
    with_ = expression.args.get("with_")
    global_names = (frozenset(codes) | frozenset(saved)
                    | frozenset(shared_view(name) for name, lineage in saved.items() if lineage.shared_sets)
                    | frozenset(c.alias_or_name.lower() for c in (with_.expressions if with_ else [])))
    context = RewriteContext(codes, REPRESENTATIONS[representation], semantics, id_source, ids_ordered_by_table,
                             global_names, table_rows, table_keys, saved, schemas, windows_apart=windows_apart)
    for phase in rules:
        run = _run_per_scope if phase.per_scope else _run
        expression = run(phase.rules, expression, context)
    return expression


def _run(rules: tuple[Rule, ...], expression: exp.Expression, context: RewriteContext) -> exp.Expression:
    for rule in rules:
        expression = rule(expression, context)
    return expression


def _run_per_scope(rules: tuple[Rule, ...], expression: exp.Expression, context: RewriteContext) -> exp.Expression:
    """Run ``rules`` on each scope's query, innermost first.  Original subqueries keep their
    plain SQL (their lineage copies are rewritten instead); lineage copies, and the CTEs they
    read, use native sets (Spark cannot run Python UDFs inside scalar subqueries)."""
    native_ctes = ctes_read_by_copies(expression)
    # a copy's lineage may be shared by every row and stored once as a set of base ids, so
    # it reads saved results' lineage spelled out, never their rows' names (saved_result)
    spelled = {name: replace(lineage, reference=None) for name, lineage in context.saved.items()}
    in_copy = replace(context, representation=SET, saved=spelled, windows_apart=False)
    for scope in traverse_scope(expression):
        query = scope.expression
        if is_skipped(query):
            continue
        native = in_lineage_copy(query) or in_cte(query, native_ctes)
        scoped = replace(in_copy if native else context, scope=scope)
        for rule in rules:
            query = rule(query, scoped)
    return expression


def only(*names: str, rules: Sequence[Phase] = RULES) -> tuple[Phase, ...]:
    """The phases of ``rules`` with only the rules ``names`` (to run a rule on its own)."""
    return _select(rules, names, keep=True)


def without(*names: str, rules: Sequence[Phase] = RULES) -> tuple[Phase, ...]:
    """The phases of ``rules`` without the rules ``names`` (e.g. a speed-up turned off)."""
    return _select(rules, names, keep=False)


def _select(rules: Sequence[Phase], names: tuple[str, ...], keep: bool) -> tuple[Phase, ...]:
    known = {rule.__name__ for phase in rules for rule in phase.rules}
    if unknown := sorted(set(names) - known):
        raise ValueError(f"no rule named {', '.join(unknown)} (rules: {', '.join(sorted(known))})")
    return tuple(replace(phase, rules=tuple(r for r in phase.rules if (r.__name__ in names) == keep))
                 for phase in rules)


def rewrite_sql(
    sql: str,
    schemas: dict[str, dict[str, str]],
    codes: dict[str, int] | None = None,
    representation: str = "set",
    semantics: str = "control",
    saved: dict[str, SavedLineage] | None = None,
    rules: Sequence[Phase] = RULES,
) -> str:
    """Spark SQL in, lineage Spark SQL out (``saved``: saved results read like tables)."""
    codes = (
        codes
        if codes is not None
        else (PAPER_CODES if schemas is PAPER_SCHEMA else {n: i + 1 for i, n in enumerate(sorted(schemas))})
    )
    return rewrite(parse(sql), schemas, codes, representation, semantics, saved=saved, rules=rules).sql(
        dialect=SPARK
    )
