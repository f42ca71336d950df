"""The values of a pivot without them, found when ``pivot`` is called, as classic Spark finds them.

Classic Spark's ``groupBy(k).pivot(c)`` runs a job at once: the distinct values of ``c``,
sorted (NULL first), at most ``spark.sql.pivotMaxValues`` (10,000).  Connect defers that to
the query, so under ``dltrace run`` a failure in the pivot's input (an index out of bounds, a
cast of a malformed value) was reported at the later write instead of the user's pivot line.
Connect's ``GroupedData.pivot`` is wrapped (once per process): without values it runs the
same query at once, so a failure is raised at the pivot, and keeps the values for the
translation (``reshape.pivot_rows``), which would otherwise run the query again.
"""

from __future__ import annotations

import weakref

MAX_VALUES = 10_000  # spark.sql.pivotMaxValues' default
_found: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # session -> {query bytes: Arrow table}


def distinct_values(input_relation, column):
    """The Connect ``Relation`` of the values a pivot of ``column`` (an ``Expression``) over
    ``input_relation`` pivots on: Spark's ``select(c).distinct().limit(max + 1).sort(c)``."""
    from pyspark.sql.connect.proto import expressions_pb2 as e
    from pyspark.sql.connect.proto import relations_pb2 as r

    named = e.Expression(alias=e.Expression.Alias(expr=column, name=["_value"]))
    distinct = r.Relation(deduplicate=r.Deduplicate(input=r.Relation(project=r.Project(
        input=input_relation, expressions=[named])), all_columns_as_keys=True))
    order = e.Expression.SortOrder(child=e.Expression(unresolved_attribute=e.Expression.UnresolvedAttribute(
        unparsed_identifier="_value")), direction=e.Expression.SortOrder.SORT_DIRECTION_ASCENDING,
        null_ordering=e.Expression.SortOrder.SORT_NULLS_FIRST)
    return r.Relation(sort=r.Sort(input=r.Relation(limit=r.Limit(input=distinct, limit=MAX_VALUES + 1)),
                                  order=[order], is_global=True))


def values_table(session, relation):
    """The rows of ``relation`` (a pyarrow Table), from those found at a pivot call when it
    is the query one ran; Connect's own exception when Spark fails."""
    from pyspark.sql.connect.proto import base_pb2

    key = relation.SerializeToString(deterministic=True)
    found = _found.setdefault(session, {})
    if key not in found:
        found[key] = session.client.to_table(base_pb2.Plan(root=relation), {})[0]
    return found[key]


def find_pivot_values_at_once() -> None:
    """Wrap Connect's ``GroupedData.pivot`` (once): without values, the values' query runs at
    the call, as in classic Spark."""
    from pyspark.sql.connect.group import GroupedData

    if getattr(GroupedData.pivot, "_dltrace", False):
        return
    pivot = GroupedData.pivot

    def pivot_finding_values(grouped, pivot_col, values=None):
        made = pivot(grouped, pivot_col, values)
        if values is None:
            session = grouped._df._session
            client = session.client
            values_table(session, distinct_values(grouped._df._plan.plan(client), made._pivot_col.to_plan(client)))
        return made

    pivot_finding_values._dltrace = True
    pivot_finding_values.__doc__ = pivot.__doc__
    GroupedData.pivot = pivot_finding_values
