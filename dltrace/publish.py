"""Saved results published as views of the Spark session's catalog (``dltrace sql ... --save
NAME --publish db.name``, ``ls.publish(name, "db.name")``): ``spark-sql`` and other Spark
users read the result's query columns and ``DL`` (its ids, sorted) without dltrace.

The view reads the Parquet of the save it was made for.  Saving the result again through
dltrace replaces the view's query with the new save's (``republish``), and dropping the result
drops the view (``unpublish``); each publication is kept in ``published/<result>.json``.  The
view lives where the session's catalog keeps views: for good in a Hive metastore (a session
with Hive support), for the session only in Spark's in-memory catalog.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass

from dltrace.errors import BadInput
from dltrace.json_store import JsonStore
from dltrace.results import DL

DIRECTORY = "published"
VIEW_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?$")


@dataclass
class Published:
    name: str  # the saved result
    view: str  # [db.]view in the Spark catalog
    published_at: float


class PublishedStore(JsonStore[Published]):
    record = Published
    kind = "publication"

    def __init__(self, catalog) -> None:
        super().__init__(catalog.directory / DIRECTORY)


def view_sql(store, result) -> str:
    """The view's query: the result's query columns and its DL, in the result's own order."""
    if result.references or result.shared:
        what = "names the rows of results it was computed from" if result.references else "has shared lineage sets"
        raise BadInput(f"saved result {result.name} {what}, so its DL is not one column of its Parquet: dltrace "
                       "cannot publish it as a view yet (save it from a query over tables)")
    return store.ordered_sql(result, f"array_sort(array_compact({DL})) AS DL")


def check_view_name(view: str) -> None:
    if not VIEW_NAME.match(view):
        raise BadInput(f"--publish {view}: name a view as [database.]name (letters, digits and _)")


def publish(spark, catalog, store, name: str, view: str) -> Published:
    """Create or replace ``view`` over saved result ``name`` and keep the publication."""
    check_view_name(view)
    result = store.get(name)
    _create(spark, view, view_sql(store, result))
    return PublishedStore(catalog).write(Published(result.name, view, time.time()))


def _create(spark, view: str, query: str) -> None:
    from pyspark.errors import AnalysisException

    try:
        spark.sql(f"CREATE OR REPLACE VIEW {view} AS {query}")
    except AnalysisException as error:
        first = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise BadInput(f"cannot create the view {view} in the Spark catalog: {first}") from None


def republish(spark, catalog, store, name: str) -> None:
    """After ``name`` was saved again: its view (if published) reads the new save."""
    published = PublishedStore(catalog).all().get(name.lower())
    if published is not None:
        _create(spark, published.view, view_sql(store, store.get(name)))


def unpublish(spark: Callable[[], object], catalog, name: str) -> None:
    """After ``name`` was dropped: its view (if published) is dropped too (``spark()`` gives the
    session, started only then)."""
    store = PublishedStore(catalog)
    published = store.all().get(name.lower())
    if published is not None:
        spark().sql(f"DROP VIEW IF EXISTS {published.view}")
        store.file(name).remove()
