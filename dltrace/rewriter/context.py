"""What every rule is given: the rewrite's settings, the scope being rewritten, the lineage
the rules hand each other, and the annotations they leave on the tree.

**Lineage between rules** is a typed value, ``ScopeLineage``, one per rewritten query (a
SELECT, a set operation, a lineage copy), kept in ``RewriteContext.lineage``:

========== ============================================== ===============================
field      what it is                                     written by -> read by
========== ============================================== ===============================
rows       the lineage of the rows a SELECT computes,     join, subquery_condition,
           before its SELECT list                         aggregate, subquery_value,
                                                          window -> the next, projection
projected  the terms behind its ``__dl`` columns          projection -> output,
                                                          union_all, subquery_copies
output     its lineage as the enclosing query reads it:   projection, union_all,
           ``__dl`` columns; for a lineage copy, the one  subquery_copies and the copy
           scalar-subquery term of its DLUNION            speed-ups -> join (through
                                                          derived_table), output,
                                                          subquery_condition/_value
subsumes   a lineage copy whose lineage holds every id    uncorrelated_copies ->
           of the enclosing SELECT's rows                 subquery_value
========== ============================================== ===============================

**Annotations** (``meta`` keys, all defined here) are facts about AST nodes that must
survive ``copy()`` (sqlglot copies ``meta`` with the node), set while the whole query is
prepared and read later:

* ``INSTANCE`` (a table): the occurrence's number, so that copies keep their original's
  (``base_table.number_instances``, read by ``tagged_row_ids``);
* ``SKIP`` (a query): an original expression subquery, never rewritten; ``CLAUSE`` (a
  query): a lineage copy, and the clause of the subquery it copies (``where``, ``having``,
  ``expressions``); ``WHOLE_INPUT`` (EXCEPT's probe): the copy reads the whole right input
  (set by ``subquery_copies`` and ``distinct_set_operations``); ``COPY_OF``: the same
  number on a subquery and its copy, within their SELECT (``subquery_copies``, read by
  ``grouped_value_join``); ``ONE_ROW`` (a derived table): its lineage comes from a shared
  copy in the SELECT list, not through the join (``one_row_join``, read by ``join``);
* ``UNALIASED`` (a SELECT-list generator): written without column names, which Spark gives
  it (``generator.mark_unaliased``, read by ``generator.unaliased_again`` and ``generator``);
* ``DISJOINT_ROWS``, ``SHARED`` and ``MANY_GROUPS`` (the rewritten query ``rewrite``
  returns): what callers learn of its lineage and its grouping (``output``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from itertools import count
from typing import Any

from sqlglot import exp
from sqlglot.optimizer.scope import Scope

from dltrace.errors import UnsupportedLineage
from dltrace.rewriter.dialect import SPARK
from dltrace.rewriter.representation import Representation
from dltrace.rewriter.terms import Lineage

INSTANCE = "dl_instance"  # a table occurrence's number (0, 1, ...) among those of its table
SKIP = "dl_skip"  # an original expression subquery: never rewritten
CLAUSE = "dl_clause"  # a lineage copy: where its subquery stands (where, having, expressions)
KEYS_ALIAS = "__dlkeys"  # a semi-join reduction's keys: they restrict rows, and add no lineage
WHOLE_INPUT = "dl_whole_input"  # EXCEPT's control lineage: all rows of the right input
COPY_OF = "dl_copy_of"  # an expression subquery and its lineage copy: the same number
DISJOINT_ROWS = "dl_disjoint_rows"  # on the result: no id is in the DLs of two rows
SHARED = "dl_shared"  # on the result: its lineage with the sets all rows share apart (SharedLineage)
ONE_ROW = "dl_one_row"  # a one-row aggregate joined to every row: its lineage is a shared copy
MANY_GROUPS = "dl_many_groups"  # on the result: its outermost SELECT groups by a key into many groups
UNALIASED = "dl_unaliased"  # a generator written without column names (qualify, generator)


# Where a table occurrence's lineage ids come from: ``(id expression, nullable)`` over the
# occurrence's alias, or None when the table contributes nothing.  The default reads
# ``_dl_id``; LINEAGE ON uses granule ids; impact re-evaluation gives ids to bad rows only.
IdSource = Callable[[exp.Table], tuple[exp.Expression, bool] | None]


@dataclass
class ScopeLineage:
    """The lineage the rules compute for one query (see the module's table)."""

    rows: Lineage = ()
    projected: Lineage = ()
    output: Lineage = ()
    subsumes: bool = False


class Lineages:
    """``ScopeLineage`` per query node, by identity (sqlglot nodes compare by structure)."""

    def __init__(self) -> None:
        self._by_node: dict[int, tuple[exp.Expression, ScopeLineage]] = {}
        # the sets held apart (``Kind.REFS`` names): queries of ``(__dlname, __dlids)`` rows, a set each
        self.held_apart: list[exp.Expression] = []

    def of(self, node: exp.Expression) -> ScopeLineage:
        """The lineage of ``node``, empty until a rule sets it."""
        entry = self._by_node.get(id(node))
        if entry is None:
            entry = self._by_node[id(node)] = (node, ScopeLineage())  # the node is kept: its id stays its own
        return entry[1]


@dataclass
class RewriteContext:
    """The second argument of every rule: settings, catalog facts, the lineage store and,
    for per-scope rules, the scope (lineage copies get a copy with native sets)."""

    codes: dict[str, int]
    representation: Representation
    semantics: str = "control"
    id_source: IdSource | None = None  # None: every row's own id (``_dl_id``)
    # True when ids of a lower table code are always smaller (row ids, not granule hashes)
    ids_ordered_by_table: bool = True
    # names any part of the query can read: catalog tables and the outermost WITH's CTEs
    global_names: frozenset[str] = frozenset()
    # catalog statistics for choosing representations: rows and key columns per table
    table_rows: dict[str, int] | None = None
    table_keys: dict[str, list[str]] | None = None
    # saved results a query may read like tables: name -> what their DLs hold (SavedLineage)
    saved: dict[str, Any] = field(default_factory=dict)
    # the columns of every table and saved result the query may read (for ``qualify``)
    schemas: dict[str, dict[str, str]] = field(default_factory=dict)
    # the lineage rules hand each other, shared by every context of one rewrite
    lineage: Lineages = field(default_factory=Lineages)
    # per-scope rules: the scope of the query they are given (sqlglot's: sources, correlation)
    scope: Scope | None = None
    # ``COPY_OF`` numbers, shared by every context of one rewrite: a subquery's copy inherits
    # its number, a copy of a copy gets its own
    copy_numbers: Iterator[int] = field(default_factory=count)
    # planning a save: window partitions and frame blocks held apart as sets (``Kind.REFS``)
    windows_apart: bool = False


def unsupported(node: exp.Expression, what: str) -> UnsupportedLineage:
    """An error naming the construct and where it is in the query."""
    text = node.sql(dialect=SPARK)
    if len(text) > 70:
        text = text[:67] + "..."
    meta = getattr(node, "meta", {}) or {}
    where = f" (line {meta['line']}, col {meta['col']})" if "line" in meta else ""
    return UnsupportedLineage(f"{what} is not supported yet{where}: {text}", construct=what)


def reads_keys(node: exp.Expression) -> bool:
    """Whether ``node`` reads a semi-join reduction's keys (``KEYS_ALIAS``): a condition that
    restricts rows to those a join keeps anyway, with no lineage of its own."""
    return any(table.alias_or_name == KEYS_ALIAS for table in node.find_all(exp.Table))
