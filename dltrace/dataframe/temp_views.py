"""Temporary views a DataFrame program makes, kept by plan, so that what reads them is traced.

``df.createOrReplaceTempView("v")`` then ``spark.sql("... FROM v")`` or ``spark.table("v")``
is how many jobs hand a DataFrame to SQL.  Spark keeps the view's plan on its server, out of
the client's reach, so Connect's four ``create*TempView`` methods are wrapped (once per
process, when ``ls.frames`` is first made): each still defines the view in Spark, and the
view's plan is kept here for the session it was made in.  The translation reads a view by
translating its plan (``plan.PlanTranslator``), with the views as they were when it was made,
as Spark resolves them: a view replaced by one that reads it reads the old one.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from dataclasses import dataclass, field

from sqlglot import exp

GLOBAL_DATABASE = "global_temp"
_views: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # session -> {name: TempView}


@dataclass(frozen=True)
class TempView:
    """A view's plan (a Connect ``Relation``) and the views there were when it was made."""

    relation: object
    earlier: dict[str, TempView] = field(default_factory=dict)


def views_of(session) -> dict[str, TempView]:
    """The temporary views made in ``session``: ``name`` or ``global_temp.name``, lower case."""
    return dict(_views.get(session, {}))


def keep_temp_views() -> None:
    """Wrap Connect's ``createTempView`` and its three siblings (once): the view is made as
    before, and its plan kept for the session."""
    from pyspark.sql.connect.dataframe import DataFrame

    if getattr(DataFrame.createTempView, "_dltrace", False):
        return
    for method, is_global in (("createTempView", False), ("createOrReplaceTempView", False),
                              ("createGlobalTempView", True), ("createOrReplaceGlobalTempView", True)):
        setattr(DataFrame, method, _kept(getattr(DataFrame, method), is_global))


def _kept(create, is_global: bool):
    def create_and_keep(frame, name: str) -> None:
        create(frame, name)
        session = frame._session
        views = _views.setdefault(session, {})
        key = f"{GLOBAL_DATABASE}.{name.lower()}" if is_global else name.lower()
        views[key] = TempView(frame._plan.to_proto(session.client).root, dict(views))

    create_and_keep._dltrace = True
    create_and_keep.__doc__ = create.__doc__
    return create_and_keep


def temp_view(views: dict[str, TempView], parts: list[str]) -> TempView | None:
    """The temporary view of ``views`` that a table name's ``parts`` name (``v``, ``global_temp.v``)."""
    lowered = [part.lower() for part in parts]
    if len(lowered) == 1 or lowered[:-1] == [GLOBAL_DATABASE]:
        return views.get(".".join(lowered))
    return None


def with_temp_views(query: exp.Query, views: dict[str, TempView],
                    translate: Callable[[TempView], exp.Query]) -> bool:
    """``query`` (of ``spark.sql``) with the temporary views it reads as CTEs before it, each
    the query ``translate`` makes of its plan; a CTE of the query's own shadows a view.
    Whether it reads any."""
    ctes = {cte.alias_or_name.lower() for cte in query.find_all(exp.CTE)}
    used: dict[str, tuple[str, TempView]] = {}
    for table in list(query.find_all(exp.Table)):
        parts = [part.name for part in table.parts]
        view = temp_view(views, parts) if table.name.lower() not in ctes else None
        if view is not None:
            name = used.setdefault(".".join(parts).lower(), (f"_tv{len(used)}", view))[0]
            table.replace(exp.table_(name, alias=table.alias or table.name))
    for name, view in used.values():
        query.with_(name, as_=translate(view), copy=False)
    return bool(used)
