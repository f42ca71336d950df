"""The lineage a rewritten scope carries, as a few SQL terms instead of one set column.

The DL of a row is the union of its *terms*.  A term is either

* an ``ID``: one base-row id (a bigint column, NULL when the row has none, e.g. the padded
  side of an outer join),
* ``IDS``: a native set, ``array<bigint>`` of distinct ids, or
* ``BDD``: a serialized roBDD (``binary``), or
* ``REFS``: names of sets held apart (``array<bigint>``, hashes): a window partition's ids, or a
  block of a partition's rows in window order (``window_sets.py``), stored once each when a
  result is saved and named by the rows whose DL holds them (only while planning a save).

Each term knows which tables its ids can come from.  Keeping ids apart until they must
meet is what makes lineage nearly free for SPJ queries (``array(l._dl_id, o._dl_id)`` at
the very end) and lets aggregation use Spark's native ``collect_set`` per id column.
Terms over different tables never share an id (the table code is in the id's top bits),
so they combine by concatenation; only terms over a common table need deduplication.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import Enum

from sqlglot import exp


class Kind(Enum):
    ID = "id"
    IDS = "ids"
    BDD = "bdd"
    REFS = "refs"


@dataclass(frozen=True)
class Term:
    """One part of a row's lineage: an SQL expression, its kind and the tables it covers."""

    sql: exp.Expression
    kind: Kind
    tables: frozenset[str]
    nullable: bool = False
    shared: bool = False  # the same value on every row (an uncorrelated subquery's lineage)
    # no id of this term is carried by two rows of its scope: DLUNION needs no deduplication
    unique: bool = False
    source: str | None = None  # the FROM alias of the table whose rows the ids come from

    def at(self, sql: exp.Expression) -> Term:
        """The same lineage, read from another expression (e.g. a column of a subquery),
        which is no longer a table's own column."""
        return replace(self, sql=sql, source=None)


Lineage = tuple[Term, ...]

LINEAGE_COLUMN_PREFIX = "__dl"


def lineage_column(index: int) -> str:
    """Name of the ``index``-th lineage column a rewritten subquery exposes."""
    return f"{LINEAGE_COLUMN_PREFIX}{index}"


def is_lineage_column(name: str) -> bool:
    return name.lower().startswith(LINEAGE_COLUMN_PREFIX)


def overlapping_groups(terms: Lineage) -> list[list[Term]]:
    """Partition terms into groups whose table sets are connected by overlap.

    Ids of different groups can never be equal, so groups combine without deduplication.
    """
    groups: list[tuple[set[str], list[Term]]] = []
    for term in terms:
        tables, members = set(term.tables), [term]
        for group in [g for g in groups if g[0] & tables]:
            groups.remove(group)
            tables |= group[0]
            members = group[1] + members
        groups.append((tables, members))
    return [members for _, members in groups]


def tables_of(terms: Lineage) -> frozenset[str]:
    return frozenset().union(*(t.tables for t in terms)) if terms else frozenset()
