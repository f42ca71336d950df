"""What every rule needs: the catalog's tables, the representation, the semantics, and
the lineage already computed for inner scopes (kept in the AST nodes' ``meta``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sqlglot import exp

from dltrace.errors import UnsupportedLineage
from dltrace.rewriter.representation import Representation
from dltrace.rewriter.terms import Lineage

ROWS = "dl_rows"  # lineage of the rows a SELECT is computing, before its SELECT list
OUTPUT = "dl_output"  # lineage of a rewritten query's output rows, as its __dl columns
PROJECTED = "dl_projected"  # the terms behind a SELECT's __dl columns


# Where a table occurrence's lineage ids come from: ``(id expression, nullable)`` over the
# occurrence's alias, or None when the table contributes nothing.  The default reads
# ``_dl_id``; LINEAGE ON uses granule ids; impact re-evaluation gives ids to bad rows only.
IdSource = Callable[[exp.Table], tuple[exp.Expression, bool] | None]


@dataclass
class RewriteContext:
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


def get_lineage(node: exp.Expression, key: str) -> Lineage:
    return node.meta.get(key, ())


def set_lineage(node: exp.Expression, key: str, lineage: Lineage) -> None:
    node.meta[key] = tuple(lineage)


def unsupported(node: exp.Expression, what: str) -> UnsupportedLineage:
    """An error naming the construct and where it is in the query."""
    text = node.sql(dialect="spark")
    if len(text) > 70:
        text = text[:67] + "..."
    meta = getattr(node, "meta", {}) or {}
    where = f" (line {meta['line']}, col {meta['col']})" if "line" in meta else ""
    return UnsupportedLineage(f"{what} is not supported yet{where}: {text}")
