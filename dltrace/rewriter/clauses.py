"""Reading a SELECT's parts the way several rules need them: its FROM/JOIN sources, the
conjuncts of a condition, and a conjunct that correlates it to an enclosing query."""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp
from sqlglot.optimizer.scope import Scope

from dltrace.errors import BadInput
from dltrace.rewriter.context import unsupported


def sources(select: exp.Select) -> list[exp.Expression]:
    """The tables and subqueries of ``select``'s FROM and JOINs, in order."""
    parts = [select.args.get("from_"), *(select.args.get("joins") or [])]
    return [part.this for part in parts if part is not None]


def source_columns(source: exp.Expression, schemas: dict[str, dict[str, str]]) -> list[str]:
    """The output columns of a FROM source (a catalog table, a CTE or a subquery), in order,
    or a ``BadInput`` when they are not known."""
    if isinstance(source, exp.Subquery):
        return source.this.named_selects
    name = source.name.lower()
    ctes = {cte.alias_or_name.lower(): cte.this for cte in source.root().find_all(exp.CTE)}
    if name in ctes:
        return ctes[name].named_selects
    schema = {n.lower(): columns for n, columns in schemas.items()}.get(name)
    if schema is None:
        raise BadInput(f"the columns of {source.sql(dialect='spark')} are not known")
    return list(schema)


def replace_pivots(expression: exp.Expression, unpivot: bool,
                   build: Callable[[exp.Expression, exp.Pivot], exp.Select]) -> None:
    """Replace each ``source PIVOT (...) AS alias`` (``unpivot``: each UNPIVOT) by the derived
    table ``(build(source, pivot)) AS alias``."""
    for node in list(expression.find_all(exp.Pivot)):
        if bool(node.args.get("unpivot")) != unpivot:
            continue
        source = node.parent
        if len(source.args.get("pivots")) != 1 or len(node.args.get("fields") or []) != 1:
            raise unsupported(node, f"this form of {'UNPIVOT' if unpivot else 'PIVOT'}")
        alias = node.alias or source.alias_or_name
        source.replace(exp.Subquery(this=build(source, node), alias=exp.TableAlias(this=exp.to_identifier(alias))))


def without_pivots(source: exp.Expression) -> exp.Expression:
    """A copy of a FROM source without its PIVOT or UNPIVOT."""
    bare = source.copy()
    bare.set("pivots", None)
    return bare


def catalog_type(column: exp.Column, source: exp.Expression | None, schemas: dict[str, dict[str, str]]) -> str | None:
    """The catalog type of ``column`` read from ``source`` (lower case), or None when the
    source is not a catalog table or saved result, or has no such column."""
    if not isinstance(source, exp.Table):
        return None
    columns = {name.lower(): kind for name, kind in schemas.get(source.name.lower(), {}).items()}
    kind = columns.get(column.name.lower())
    return kind.lower() if kind is not None else None


def conjuncts(condition: exp.Expression | None) -> list[exp.Expression]:
    """The AND-ed parts of a condition (of a WHERE clause, or an ON condition), through
    parentheses: ``(a = b) AND (c AND d)``, as a DataFrame's ``&`` is written, is a, c and d."""
    if condition is None:
        return []
    condition = (condition.this if isinstance(condition, exp.Where) else condition).unnest()
    if isinstance(condition, exp.And):
        return [part for side in (condition.this, condition.expression) for part in conjuncts(side)]
    return [condition]


def correlation(condition: exp.Expression, scope: Scope) -> tuple[exp.Column, exp.Column] | None:
    """``(inner column, outer column)`` when ``condition`` (a conjunct of ``scope``'s WHERE) is
    ``=`` or ``<>`` between a column of ``scope``'s own sources and one of an enclosing
    query's (sqlglot's test for an external column), else None."""
    if not isinstance(condition, (exp.EQ, exp.NEQ)):
        return None
    sides = [condition.this, condition.expression]
    if not all(isinstance(side, exp.Column) and side.table for side in sides):
        return None
    local = {name for name, _ in scope.references}
    inner = [side for side in sides if side.table in local]
    outer = [side for side in sides if side.table not in local]
    return (inner[0], outer[0]) if len(inner) == 1 and len(outer) == 1 else None
