"""Rule: selection and joins.  ``FROM V1, ..., Vm WHERE C``: ``DL = V1.DL ∪ ... ∪ Vm.DL``
(paper §3.3, join rule); a WHERE filter leaves each row's DL unchanged.

Inner, comma, CROSS and OUTER joins are handled here; the padded (NULL) side of an outer
join contributes ∅ (its terms may be NULL).  The union is kept as separate terms, one per
source, and only materialised where the lineage leaves the query.

>>> from dltrace.rewriter import rewrite_sql, PAPER_SCHEMA
>>> print(rewrite_sql("SELECT d.s_name, i.i_name FROM store d JOIN sales s ON d.s_id = s.s_id "
...                   "JOIN item i ON i.i_id = s.i_id WHERE i.category = 'stationery'", PAPER_SCHEMA))
SELECT d.s_name AS s_name, i.i_name AS i_name, ARRAY(d._dl_id, i._dl_id, s._dl_id) AS DL FROM store AS d JOIN sales AS s ON d.s_id = s.s_id JOIN item AS i ON i.i_id = s.i_id WHERE i.category = 'stationery'
"""  # noqa: E501

from __future__ import annotations

from dataclasses import replace

from sqlglot import exp
from sqlglot.optimizer.scope import Scope

from dltrace.rewriter.base_table import base_table
from dltrace.rewriter.clauses import conjuncts
from dltrace.rewriter.context import ONE_ROW, RewriteContext, unsupported
from dltrace.rewriter.derived_table import derived_table
from dltrace.rewriter.keys import single_row_sources
from dltrace.rewriter.literal_rows import is_literal_function
from dltrace.rewriter.saved_result import saved_result
from dltrace.rewriter.terms import Term

JOIN_KINDS = {"", "INNER", "CROSS", "OUTER"}


def source_lineage(source: exp.Expression, scope: Scope, context: RewriteContext) -> tuple[Term, ...]:
    """Lineage of one FROM/JOIN source: a registered table, a saved result, a CTE, a subquery
    or literal rows (``range``: none)."""
    if source.meta.get(ONE_ROW):  # its lineage is a shared copy in the SELECT list (one_row_join)
        return ()
    if is_literal_function(source) or source.args.get("pivots"):  # a PIVOT's lineage is joined beside it (pivot)
        return ()
    alias = source.alias_or_name
    inner = scope.sources.get(alias)
    if isinstance(inner, Scope):
        return derived_table(alias, inner, context)
    if isinstance(source, exp.Table) and source.name.lower() in context.saved:
        return saved_result(source, context)  # first: a referenced result has a code too
    if isinstance(source, exp.Table) and source.name.lower() in context.codes:
        return base_table(source, context)
    raise unsupported(source, "this kind of FROM source")


def join(select: exp.Expression, context: RewriteContext) -> exp.Expression:
    """Collect the lineage of every source of ``select`` into the rows' lineage; an id
    stays ``unique`` only when the joins cannot repeat its source's rows."""
    if not isinstance(select, exp.Select):
        return select
    scope = context.scope
    # a LATERAL VIEW's generator repeats its input rows and contributes no ids (generator)
    single = set() if select.args.get("laterals") else single_row_sources(select, context.table_keys or {})

    def lineage_of(source: exp.Expression) -> list[Term]:
        terms = source_lineage(source, scope, context)
        return list(terms) if source.alias_or_name in single else [replace(t, unique=False) for t in terms]

    terms: list[Term] = []
    from_ = select.args.get("from_")
    if from_ is not None:
        terms.extend(lineage_of(from_.this))
    seen = {from_.this.alias_or_name} if from_ is not None else set()
    for join_node in select.args.get("joins") or []:
        side, kind = join_node.side.upper(), join_node.kind.upper()
        if kind not in JOIN_KINDS:
            raise unsupported(join_node, f"{' '.join(filter(None, (side, kind)))} JOIN")
        joined = lineage_of(join_node.this)
        if side in ("RIGHT", "FULL"):
            terms = padded(terms, join_node, seen, by_condition=side == "RIGHT")
        if side in ("LEFT", "FULL"):
            joined = padded(joined, join_node, {join_node.this.alias_or_name}, by_condition=side == "LEFT")
        terms.extend(joined)
        seen.add(join_node.this.alias_or_name)
    context.lineage.of(select).rows = tuple(terms)
    return select


def padded(terms: list[Term], join_node: exp.Join, aliases: set[str], by_condition: bool) -> list[Term]:
    """The terms of a side an outer join may pad with NULLs (the sources ``aliases``):
    nullable, since a padded row contributes no lineage.  A set the side's rows share (an
    uncorrelated subquery's, held apart and evaluated once) is not NULL on a padded row by
    itself: it holds only where one of the side's own ids does, or, on a side without ids
    (literal rows) that only appears matched (``by_condition``: not a FULL JOIN's, whose
    unmatched rows are kept too), one of its columns the ON condition's ``=`` matched."""
    guard = next((t.sql for t in terms if not isinstance(t.sql, exp.Subquery) and not t.nullable), None)
    if guard is None and by_condition:
        guard = next((side for eq in conjuncts(join_node.args.get("on")) if isinstance(eq, exp.EQ)
                      for side in (eq.this, eq.expression) if isinstance(side, exp.Column) and side.table in aliases),
                     None)
    result = []
    for term in terms:
        if isinstance(term.sql, exp.Subquery):
            if guard is None:
                raise unsupported(join_node, "an outer join whose padded side has no lineage of its own rows")
            present = exp.Not(this=exp.Is(this=guard.copy(), expression=exp.Null()))
            term = replace(term, sql=exp.If(this=present, true=term.sql, false=exp.Null()), shared=False)
        result.append(replace(term, nullable=True))
    return result
