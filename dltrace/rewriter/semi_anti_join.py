"""Rule: ``LEFT SEMI JOIN`` and ``LEFT ANTI JOIN`` are EXISTS and NOT EXISTS (docs/semantics.md).

They are rewritten into the equivalent subqueries, whose lineage rules apply: under data
semantics the right side contributes nothing, under control semantics a row gains the
lineage of the right rows it matched.  Spark plans the subqueries as the same joins.

A NOT EXISTS adds no lineage under either semantics, so once the lineage is written the
rule ``anti_join_restored`` gives Spark back the ANTI JOIN the query was written with:
Spark 4's analyzer fails on some NOT EXISTS forms of a join (one whose table is read again
under a HAVING elsewhere in the query: ``MISSING_ATTRIBUTES``) that it takes as joins.

>>> from dltrace.rewriter import rewrite_sql, PAPER_SCHEMA
>>> print(rewrite_sql("SELECT d.s_name FROM store d LEFT SEMI JOIN sales s ON s.s_id = d.s_id AND s.num > 2000", PAPER_SCHEMA, semantics="data"))
SELECT d.s_name AS s_name, ARRAY(d._dl_id) AS DL FROM store AS d WHERE EXISTS(SELECT 1 FROM sales AS s WHERE s.s_id = d.s_id AND s.num > 2000)
"""  # noqa: E501

from __future__ import annotations

from sqlglot import exp

from dltrace.rewriter.context import RewriteContext, unsupported

FROM_ANTI_JOIN = "dltrace_anti_join"  # meta of a NOT EXISTS made from a LEFT ANTI JOIN


def semi_anti_join(expression: exp.Expression, context: RewriteContext) -> exp.Expression:
    """Replace semi and anti joins by EXISTS / NOT EXISTS conditions, innermost first: a join's
    right side is copied into its EXISTS, so the joins inside it must be rewritten before."""
    for select in reversed(list(expression.find_all(exp.Select))):
        joins = list(select.args.get("joins") or [])
        for i, join in enumerate(joins):
            kind = join.kind.upper()
            if kind not in ("SEMI", "ANTI"):
                continue
            if any(later.side.upper() in ("RIGHT", "FULL") for later in joins[i + 1:]):
                # as a WHERE condition it would filter the outer join's padded rows too
                raise unsupported(join, f"{kind} JOIN before a RIGHT or FULL JOIN")
            condition = join.args.get("on")
            if condition is None:
                raise unsupported(join, f"{kind} JOIN without ON")
            source, condition = _inlined(join.this, condition.copy())
            exists = exp.Exists(this=exp.select("1").from_(source).where(condition))
            join.pop()
            if kind == "ANTI":
                exists = exp.Not(this=exists)
                exists.meta[FROM_ANTI_JOIN] = True
            select.where(exists, copy=False)
    return expression


def _inlined(right: exp.Expression, condition: exp.Expression) -> tuple[exp.Expression, exp.Expression]:
    """The join's right side and its condition for the EXISTS: a derived table that only
    renames and filters one table (``l.select(col("l_orderkey").alias("k"))``, as DataFrame
    programs write the right side of a semi join) is read as that table under the derived
    table's alias, its filter and the renamed columns moved into the condition.  So the
    EXISTS reads one table, as the same query in SQL does, and the rules that plan it as an
    equi-join (``exists_join``, ``inequality_split``) apply: TPC-H Q21 as a DataFrame program
    had a ``<>`` correlation over a derived table, evaluated as a nested loop (over 100x).

    >>> from dltrace.rewriter import rewrite_sql, PAPER_SCHEMA
    >>> print(rewrite_sql("SELECT d.s_name FROM store d LEFT SEMI JOIN (SELECT s_id AS k, num AS n FROM sales "
    ...                   "WHERE price > 10) s ON s.k = d.s_id AND s.n > 2000", PAPER_SCHEMA, semantics="data"))
    SELECT d.s_name AS s_name, ARRAY(d._dl_id) AS DL FROM store AS d WHERE EXISTS(SELECT 1 FROM sales AS s WHERE s.price > 10 AND (s.s_id = d.s_id AND s.num > 2000))
    """  # noqa: E501
    query = right.this if isinstance(right, exp.Subquery) else None
    simple = isinstance(query, exp.Select) and not any(
        query.args.get(part) for part in ("joins", "group", "having", "qualify", "order", "limit", "offset", "with_",
                                          "distinct", "laterals"))
    table = query.args["from_"].this if simple and query.args.get("from_") else None
    alias = right.alias_or_name
    if not isinstance(table, exp.Table) or not alias:
        return right.copy(), condition
    inner = table.alias_or_name
    renamed: dict[str, str] = {}
    for item in query.expressions:
        column = item.this if isinstance(item, exp.Alias) else item
        if not isinstance(column, exp.Column) or column.table != inner:
            return right.copy(), condition
        renamed[item.alias_or_name.lower()] = column.name
    where = query.args.get("where")
    filters = where.this.copy() if where is not None else None
    if filters is not None and any(c.table != inner for c in filters.find_all(exp.Column)):
        return right.copy(), condition  # correlated, or reading something else
    for column in condition.find_all(exp.Column):
        if column.table == alias:
            if column.name.lower() not in renamed:
                return right.copy(), condition
            column.set("this", exp.to_identifier(renamed[column.name.lower()]))
    if filters is not None:
        for column in filters.find_all(exp.Column):
            column.set("table", exp.to_identifier(alias))
        condition = exp.and_(filters, condition)
    source = table.copy()
    source.set("alias", exp.TableAlias(this=exp.to_identifier(alias)))
    return source, condition


def anti_join_restored(expression: exp.Expression, context: RewriteContext) -> exp.Expression:
    """Write each NOT EXISTS made from an ANTI JOIN, still a conjunct of its SELECT's WHERE,
    back as the last join of that SELECT: a filter of each row either way, as WHERE is
    applied after every join (the rewrite's lineage joins included).

    >>> from dltrace.rewriter import rewrite_sql, PAPER_SCHEMA
    >>> print(rewrite_sql("SELECT d.s_name FROM store d LEFT ANTI JOIN sales s ON s.s_id = d.s_id", PAPER_SCHEMA))
    SELECT d.s_name AS s_name, ARRAY(d._dl_id) AS DL FROM store AS d LEFT ANTI JOIN sales AS s ON s.s_id = d.s_id
    """
    for condition in list(expression.find_all(exp.Not)):
        inner = condition.this.this
        if not condition.meta.get(FROM_ANTI_JOIN) or not isinstance(inner, exp.Select):
            continue
        conjunct = condition
        while isinstance(conjunct.parent, exp.Paren):
            conjunct = conjunct.parent
        where = conjunct.parent
        while isinstance(where, (exp.And, exp.Paren)):
            where = where.parent
        plain = inner.args.get("where") and not inner.args.get("joins") and not any(
            inner.args.get(part) for part in ("group", "having", "qualify", "order", "limit", "with_"))
        if not isinstance(where, exp.Where) or not isinstance(where.parent, exp.Select) or not plain:
            continue
        select = where.parent
        on, right = inner.args["where"].this.pop(), inner.args["from_"].this.pop()
        if conjunct.parent is where:
            where.pop()
        else:
            pair = conjunct.parent
            pair.replace(pair.right if conjunct is pair.left else pair.left)
        select.append("joins", exp.Join(this=right, on=on, side="LEFT", kind="ANTI"))
    return expression
