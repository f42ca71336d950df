"""Views and inlining: named queries that other queries read as if written in place.

``CREATE [OR REPLACE] [TEMP] VIEW name AS query`` defines a view (paper §2: a view's rows
map to base rows, so its lineage is its query's).  Nothing is computed or stored for a view:
a query that reads one gets the view's query as a CTE in front of its own, and is rewritten
like any query with CTEs.  A temporary view lives as long as its ``LineageSession`` (one
``dltrace run`` script); a view without TEMP is kept in the catalog directory as
``views/<name>.json`` (its query), so later commands read it too.

Impact re-evaluation inlines saved results the same way: a result's recorded query becomes a
CTE, down to the base tables, which is what a pipeline of saved steps must equal.

>>> from dltrace.rewriter import parse
>>> views = {"ca": "SELECT s_id FROM store WHERE state = 'CA'", "ca_sales": "SELECT * FROM sales JOIN ca USING (s_id)"}
>>> print(inline(parse("SELECT count(*) FROM ca_sales"), views.get).sql("spark"))
WITH ca AS (SELECT s_id FROM store WHERE state = 'CA'), ca_sales AS (SELECT * FROM sales JOIN ca USING (s_id)) SELECT COUNT(*) FROM ca_sales
"""  # noqa: E501

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from sqlglot import exp

from dltrace.catalog import NAME_PATTERN, Catalog
from dltrace.errors import BadInput
from dltrace.json_store import JsonStore
from dltrace.rewriter import parse
from dltrace.rewriter.dialect import SPARK

DIRECTORY = "views"


@dataclass
class View:
    """A named query, as kept in ``views/<name>.json``."""

    name: str
    query: str
    created_at: float


class ViewStore(JsonStore[View]):
    """The views kept in one catalog directory."""

    record = View
    kind = "view"

    def __init__(self, catalog: Catalog) -> None:
        super().__init__(catalog.directory / DIRECTORY)

    def save(self, name: str, query: str) -> View:
        """Write the view atomically (a temporary file renamed over the old one)."""
        if not NAME_PATTERN.match(name):
            raise BadInput(f"'{name}' is not a valid view name: use letters, digits and _")
        return self.write(View(name.lower(), query, time.time()))

    def drop(self, name: str) -> None:
        if not self.file(name).exists():
            known = ", ".join(self.all()) or "none"
            raise BadInput(f"no view '{name}' (views: {known})")
        self.file(name).unlink()


def inline(expression: exp.Query, definition: Callable[[str], str | None]) -> exp.Query:
    """``expression`` with every named query it reads, directly or through another, as a
    CTE in front of its own CTEs, in dependency order.  ``definition(name)`` is the query
    text of a view or result, None for anything else; the query's own top-level CTEs
    shadow names as they would in SQL."""
    from dltrace.rewriter import parse

    own = {cte.alias_or_name.lower() for cte in expression.ctes}
    ordered: list[tuple[str, exp.Query]] = []
    done: set[str] = set()

    def visit(query: exp.Expression, reading: tuple[str, ...]) -> None:
        for table in query.find_all(exp.Table):
            name = table.name.lower()
            if table.args.get("db") or name in own or name in done:
                continue
            text = definition(name)
            if text is None:
                continue
            if name in reading:
                raise BadInput(f"{' -> '.join((*reading, name))}: a view cannot read itself")
            body = parse(text)
            visit(body, (*reading, name))
            ordered.append((name, body))
            done.add(name)

    visit(expression, ())
    if not ordered:
        return expression
    expression = expression.copy()
    ctes = [exp.CTE(this=body, alias=exp.TableAlias(this=exp.to_identifier(name))) for name, body in ordered]
    with_ = expression.args.get("with_")
    if with_ is None:
        expression.set("with_", exp.With(expressions=ctes))
    else:
        with_.set("expressions", ctes + list(with_.expressions))
    return expression


def create_view(ls, name: str, query: str, temporary: bool, replace: bool) -> None:
    """``LineageSession.create_view``: a view's name is checked against the one namespace,
    and its query (unknown tables and columns, a view that reads itself) before it is kept."""
    if not NAME_PATTERN.match(name):
        raise BadInput(f"'{name}' is not a valid view name: use letters, digits and _")
    ls.check_name_free(name, "a view")
    lowered = name.lower()
    stored = ViewStore(ls.catalog)
    exists = lowered in ls.temporary_views if temporary else lowered in stored.all()
    if exists and not replace:
        raise BadInput(f"view {lowered} exists: CREATE OR REPLACE VIEW replaces it")
    views = {**ls.views(), lowered: query}
    inline(parse(query), views.get)  # a view that reads itself fails here
    ls.plain(query)  # unknown tables and columns fail now, at the CREATE
    if temporary:
        ls.temporary_views[lowered] = query
    else:
        stored.save(lowered, query)


def expand(query: str, definitions: dict[str, str]) -> str:
    """``query`` with the views (or saved results) of ``definitions`` it reads as CTEs; the
    text unchanged when it reads none."""
    expression = parse(query)
    expanded = inline(expression, definitions.get)
    return query if expanded is expression else expanded.sql(dialect=SPARK)


def check_result_name(name: str, what: str = "result") -> None:
    """Refuse a result or view name the catalog cannot hold, before any Spark work."""
    if not NAME_PATTERN.match(name):
        raise BadInput(f"'{name}' is not a valid {what} name: use letters, digits and _")


def owners_of(name: str, tables, result_exists: Callable[[str], bool], views) -> list[str]:
    """What holds ``name`` in the one namespace: "a table", "a saved result", "a view"."""
    lowered = name.lower()
    owners = {"a table": lowered in tables, "a saved result": result_exists(lowered), "a view": lowered in views}
    return [owner for owner, taken in owners.items() if taken]


def check_name_free(name: str, wanted: str, tables, result_exists: Callable[[str], bool], views) -> None:
    """Tables, saved results and views share one namespace: ``name`` must not be one of
    another kind than ``wanted`` ("a table", "a saved result", "a view")."""
    lowered = name.lower()
    for owner in owners_of(lowered, tables, result_exists, views):
        if owner != wanted:
            raise BadInput(f"'{lowered}' is already {owner}: tables, saved results and views share one namespace, "
                           f"choose another name")
