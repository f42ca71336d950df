"""Speed-up rule: in a SELECT that collects its groups' lineage, ``COUNT(DISTINCT c)`` of a
column of a catalog table or saved result becomes ``CAST(SIZE(COLLECT_SET(c)) AS BIGINT)``.

Spark plans one DISTINCT aggregate as four aggregation steps (by the group and ``c``, merged,
then by the group), and every lineage buffer beside it goes through all four; counted as a
set, ``c`` is one more object aggregate beside the lineage ones, in one partial and one final
step (TPC-H Q16 gets most of the way to the plain query's time: docs/performance.md, "Measurements behind design choices").  The value is the
same: both ignore NULLs, an empty group counts 0, and the type stays BIGINT.  Float, double
and collated string columns keep ``COUNT(DISTINCT)`` (-0.0 and NaN; a collation's equality),
and so do a count with ``FILTER (WHERE ...)``, a window's count and a SELECT whose lineage is
not collected (grouped by a key: nothing to gain).

>>> from dltrace.rewriter import rewrite_sql, PAPER_SCHEMA
>>> print(rewrite_sql("SELECT s_id, COUNT(DISTINCT i_id) AS items FROM sales GROUP BY s_id", PAPER_SCHEMA))
SELECT sales.s_id AS s_id, CAST(SIZE(COLLECT_SET(sales.i_id)) AS BIGINT) AS items, SORT_ARRAY(COLLECT_LIST(sales._dl_id)) AS DL FROM sales AS sales GROUP BY sales.s_id
"""  # noqa: E501

from __future__ import annotations

import re

from sqlglot import exp

from dltrace.rewriter.clauses import catalog_type
from dltrace.rewriter.context import RewriteContext
from dltrace.rewriter.terms import Term

LINEAGE_AGGREGATES = {"COLLECT_LIST", "COLLECT_SET"}
# column types (Spark's simpleString, as the catalog records them) whose sets and DISTINCT
# agree on equality: not float and double (-0.0, NaN), not collated strings (COLLECT_SET
# refuses them)
EXACT_TYPE = re.compile(r"(tinyint|smallint|int|bigint|string|date|timestamp(_ntz)?|decimal\(\d+,\d+\)|boolean)")


def distinct_count(select: exp.Expression, context: RewriteContext) -> exp.Expression:
    """Count the distinct values of a column as the size of their set where the SELECT also
    collects lineage."""
    if not isinstance(select, exp.Select) or not collects_lineage(context.lineage.of(select).rows):
        return select
    for count in list(select.find_all(exp.Count)):
        distinct = count.this
        if not (isinstance(distinct, exp.Distinct) and len(distinct.expressions) == 1):
            continue
        if count.find_ancestor(exp.Select, exp.Window) is not select or isinstance(count.parent, exp.Filter):
            continue  # a window's count, or one with FILTER (WHERE ...), which belongs to the call
        column = distinct.expressions[0]
        if not (isinstance(column, exp.Column) and exact_type(column, context)):
            continue
        values = exp.Anonymous(this="COLLECT_SET", expressions=[column.copy()])
        count.replace(exp.cast(exp.Anonymous(this="SIZE", expressions=[values]), "BIGINT"))
    return select


def collects_lineage(rows: tuple[Term, ...]) -> bool:
    """True when the group's lineage ``rows`` (as the aggregation rule left them) collect ids."""
    return any(
        call.name.upper() in LINEAGE_AGGREGATES and not term.shared
        for term in rows
        for call in term.sql.find_all(exp.Anonymous)
    )


def exact_type(column: exp.Column, context: RewriteContext) -> bool:
    """True when ``column`` is a column of a catalog table or saved result, of a type sets
    compare exactly."""
    source = context.scope.sources.get(column.table) if context.scope else None
    return bool(EXACT_TYPE.fullmatch(catalog_type(column, source, context.schemas) or ""))
