"""What the layers above the rewriter stand on: the narrow interface ``impact/`` and
``granularity/`` are written against, and the one path from a catalog to the rewriter.

``Engine`` is what they use of a ``LineageSession``: the catalog, Spark and Spark SQL over
the catalog's tables, views inlined, and the rewriter entry point.  ``rewrite_over_catalog``
is that entry point's pure part: every lineage query (``sql``, ``rewrite``, ``script``,
``LINEAGE ON``, impact re-evaluation, the golden SQL tests) is built by it, from the same
catalog facts (codes, row counts, keys, the saved results read), so one query cannot get
two rewrites.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from sqlglot import exp

from dltrace import rewriter
from dltrace.errors import BadInput
from dltrace.ids import REFERENCE_CODE

if TYPE_CHECKING:
    from dltrace.catalog import Catalog
    from dltrace.results import SavedResult


class Engine(Protocol):
    """What ``impact/`` and ``granularity/`` use of a session (``LineageSession`` is one)."""

    catalog: Catalog

    @property
    def spark(self) -> Any:
        """The Spark session (``pyspark.sql.SparkSession``)."""

    def run(self, spark_sql: str, reads: set[str] | None = None, lineage_query: bool = True) -> Any:
        """A DataFrame of Spark SQL over the catalog's tables and saved results (``reads``:
        those it reads, when known; ``lineage_query`` False: a query as its user wrote it)."""

    def expand(self, query: str, inline_results: bool = False) -> str:
        """``query`` with the views it reads (and, ``inline_results``, the saved results) as CTEs."""

    def traceable_on_values(self, query: str) -> str:
        """``query`` for ``LINEAGE ON``: saved results inlined; a stale one is refused."""

    def lineage_expression(
        self,
        query: str,
        semantics: str = "control",
        representation: str = "set",
        id_source: rewriter.IdSource | None = None,
        ids_ordered_by_table: bool = True,
        references: bool = False,
        windows_apart: bool = False,
    ) -> exp.Expression:
        """The lineage query of ``query`` over the catalog (``rewrite_over_catalog``)."""


class TableFacts(Protocol):
    """What the rewriter needs of a registered table (``catalog.TableEntry`` has it)."""

    code: int
    rows: int
    key: list[str] | None


def rewrite_over_catalog(
    expression: exp.Expression,
    tables: Mapping[str, TableFacts],
    schemas: dict[str, dict[str, str]],
    saved: Mapping[str, SavedResult],
    semantics: str = "control",
    representation: str = "set",
    id_source: rewriter.IdSource | None = None,
    ids_ordered_by_table: bool = True,
    rules: Sequence[rewriter.Phase] = rewriter.RULES,
    references: bool = False,
    windows_apart: bool = False,
) -> exp.Expression:
    """``expression`` (views inlined) rewritten over the registered ``tables`` and the
    ``saved`` results it reads (``schemas``: the columns of both); ids from ``id_source``,
    default ``_dl_id``.  The saved results must hold lineage of the same semantics (a mix
    would be neither) and base-row ids (other ids cannot be traced through them).
    ``references``: the rows read from saved results are named (``reference_codes``), not
    spelled out, as a saved step stores them (dltrace/results.py, "References");
    ``windows_apart``: window partitions and frames held apart as named sets, as a save
    stores them (rewriter/window_sets.py)."""
    for result in saved.values():
        if id_source is not None:
            raise BadInput(f"this lineage cannot be traced through saved result {result.name}: "
                           f"inline its query as a CTE")
        if result.semantics != semantics:
            raise BadInput(f"saved result {result.name} holds {result.semantics} lineage and this query asks for "
                           f"{semantics}: run it with --semantics {result.semantics} or save {result.name} again")
    named = reference_codes(saved) if references else {}
    return rewriter.rewrite(
        expression, schemas, {**{name: entry.code for name, entry in tables.items()}, **named}, representation,
        semantics, id_source, ids_ordered_by_table,
        table_rows={**{n: e.rows for n, e in tables.items()}, **{n: r.rows for n, r in saved.items()}},
        table_keys={n: e.key or [] for n, e in tables.items()},
        saved={n: rewriter.SavedLineage(frozenset(r.lineage_tables) & frozenset(tables), r.disjoint, r.shared_sets,
                                        named.get(n)) for n, r in saved.items()},
        rules=rules,
        windows_apart=windows_apart,
    )


def reference_codes(saved: Iterable[str]) -> dict[str, int]:
    """The code that names the rows of each saved result a step reads, in name order."""
    return {name: REFERENCE_CODE + number for number, name in enumerate(sorted(saved))}
