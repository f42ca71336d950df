"""Rule: PIVOT.  A pivoted row is a group (of the source's columns the PIVOT neither
aggregates nor pivots on): under data semantics its DL is the DLUNION of the group's rows
whose pivot value is among the pivoted values (their values flow into its cells), under
control semantics of all the group's rows (they decide that the row exists).

The PIVOT is kept as written, over exactly its source's columns (no lineage column may join
its implicit grouping), and its lineage comes from the same groups computed beside it, joined
back on the grouping columns (``<=>``: NULL is a group too).  A LEFT JOIN: under data
semantics a group without a pivoted value has no lineage rows.

>>> from dltrace.rewriter import rewrite_sql, PAPER_SCHEMA
>>> print(rewrite_sql("SELECT * FROM (SELECT s_id, i_id, num FROM sales) PIVOT (sum(num) FOR i_id IN (1, 2))",
...                   PAPER_SCHEMA, semantics="data"))
SELECT _1.s_id AS s_id, _1.`1` AS `1`, _1.`2` AS `2`, SORT_ARRAY(COALESCE(_1.__dl0, SLICE(ARRAY(CAST(0 AS BIGINT)), 1, 0))) AS DL FROM (SELECT __dlp.*, __dll.__dl0 AS __dl0 FROM (SELECT * FROM (SELECT _0.s_id, _0.i_id, _0.num FROM (SELECT sales.s_id AS s_id, sales.i_id AS i_id, sales.num AS num FROM sales AS sales) AS _0) AS _0 PIVOT(SUM(_0.num) FOR i_id IN (1, 2))) AS __dlp LEFT JOIN (SELECT __dls.s_id AS s_id, COLLECT_LIST(__dls.__dl0) AS __dl0 FROM (SELECT sales.s_id AS s_id, sales.i_id AS i_id, sales.num AS num, sales._dl_id AS __dl0 FROM sales AS sales) AS __dls WHERE __dls.i_id IS NOT DISTINCT FROM 1 OR __dls.i_id IS NOT DISTINCT FROM 2 GROUP BY __dls.s_id) AS __dll ON __dlp.s_id IS NOT DISTINCT FROM __dll.s_id) AS _1
"""  # noqa: E501

from __future__ import annotations

from sqlglot import exp

from dltrace.rewriter.clauses import replace_pivots, source_columns, without_pivots
from dltrace.rewriter.context import SKIP, RewriteContext, unsupported

PIVOTED, GROUPS, SOURCE = "__dlp", "__dll", "__dls"  # the PIVOT, its groups' lineage, their rows


def pivot(expression: exp.Expression, context: RewriteContext) -> exp.Expression:
    """Write every ``source PIVOT (...) AS alias`` as the PIVOT joined to its groups' lineage."""
    replace_pivots(expression, False, lambda source, node: _with_lineage(source, node, context))
    return expression


def _with_lineage(source: exp.Expression, node: exp.Pivot, context: RewriteContext) -> exp.Select:
    """``SELECT pivoted.* FROM (plain source) PIVOT (...) LEFT JOIN (the groups' lineage)``."""
    columns = source_columns(source, context.schemas)
    field = node.args["fields"][0]
    keys = list(field.this.expressions) if isinstance(field.this, exp.Tuple) else [field.this]
    used = {c.name.lower() for e in node.expressions for c in e.find_all(exp.Column)} | {k.name.lower() for k in keys}
    grouping = [c for c in columns if c.lower() not in used]
    name = source.alias_or_name
    plain = exp.select(*[exp.column(c, table=name) for c in columns]).from_(without_pivots(source))
    plain.meta[SKIP] = True  # the PIVOT reads its source's rows as written, never rewritten
    kept = node.copy()
    kept.set("alias", exp.TableAlias(this=exp.to_identifier(PIVOTED)))
    pivoted = exp.Subquery(this=plain, alias=exp.TableAlias(this=exp.to_identifier(name)), pivots=[kept])
    rows = without_pivots(source).copy()
    rows.set("alias", exp.TableAlias(this=exp.to_identifier(SOURCE)))
    groups = exp.select(*[exp.alias_(exp.column(c, table=SOURCE), c) for c in grouping] or [exp.Count(
        this=exp.Star()).as_("__dln")]).from_(rows)
    if grouping:
        groups = groups.group_by(*[exp.column(c, table=SOURCE) for c in grouping])
    if context.semantics == "data":  # only the rows whose pivot value is pivoted flow into the cells
        groups = groups.where(exp.or_(*[_matches(keys, value) for value in field.expressions]))
    on = exp.and_(*[exp.NullSafeEQ(this=exp.column(c, table=PIVOTED), expression=exp.column(c, table=GROUPS))
                    for c in grouping]) if grouping else exp.true()
    return (exp.select(exp.Column(this=exp.Star(), table=exp.to_identifier(PIVOTED))).from_(pivoted)
            .join(groups.subquery(GROUPS), on=on, join_type="LEFT"))


def _matches(keys: list[exp.Expression], value: exp.Expression) -> exp.Expression:
    """A source row has the pivoted ``value`` (``(k1, k2) IN ((1, 2))``: one per key), NULL
    matching NULL as Spark's PIVOT matches it."""
    value = value.this if isinstance(value, exp.PivotAlias) else value
    values = list(value.expressions) if isinstance(value, exp.Tuple) else [value]
    if len(values) != len(keys):
        raise unsupported(value, "a PIVOT value of another arity than its columns")
    return exp.and_(*[exp.NullSafeEQ(this=exp.column(k.name, table=SOURCE), expression=v.copy())
                      for k, v in zip(keys, values)])
