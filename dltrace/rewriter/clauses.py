"""Reading a SELECT's parts the way several rules need them: its FROM/JOIN sources, the
conjuncts of a condition, and the names a query defines for itself."""

from __future__ import annotations

from sqlglot import exp


def sources(select: exp.Select) -> list[exp.Expression]:
    """The tables and subqueries of ``select``'s FROM and JOINs, in order."""
    parts = [select.args.get("from_"), *(select.args.get("joins") or [])]
    return [part.this for part in parts if part is not None]


def conjuncts(condition: exp.Expression | None) -> list[exp.Expression]:
    """The AND-ed parts of a condition (of a WHERE clause, or an ON condition)."""
    if condition is None:
        return []
    condition = condition.this if isinstance(condition, exp.Where) else condition
    return list(condition.flatten()) if isinstance(condition, exp.And) else [condition]


def defined_names(query: exp.Expression) -> set[str]:
    """The table, subquery and CTE names ``query`` defines itself; a column qualified by any
    other name is an outer reference."""
    return (
        {t.alias_or_name for t in query.find_all(exp.Table)}
        | {s.alias_or_name for s in query.find_all(exp.Subquery) if s.alias_or_name}
        | {cte.alias_or_name for cte in query.find_all(exp.CTE)}
    )
