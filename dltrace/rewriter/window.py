"""Rule: window functions.  A window value is computed from the rows of its frame, so those
rows' lineage flows into it.

Data semantics: the row's own DL, plus per window function the DLUNION of the rows it reads
(``window_frame``): an aggregate's frame (as written; with ORDER BY and no frame the rows up to
the row and its peers; without ORDER BY the partition), ``LAG``/``LEAD``'s row at the offset,
``ROW_NUMBER``/``RANK``/``DENSE_RANK``'s rows ordered at or before the row (peers included, the
rows a running count counts), and the partition for ``PERCENT_RANK``, ``CUME_DIST``, ``NTILE``:

>>> from dltrace.rewriter import rewrite_sql, PAPER_SCHEMA
>>> print(rewrite_sql("SELECT t_id, SUM(num) OVER (PARTITION BY s_id ORDER BY t_id) AS running, "
...                   "LAG(num) OVER (PARTITION BY s_id ORDER BY t_id) AS previous FROM sales", PAPER_SCHEMA,
...                   semantics="data"))
SELECT sales.t_id, SUM(sales.num) OVER (PARTITION BY sales.s_id ORDER BY sales.t_id) AS running, LAG(sales.num) OVER (PARTITION BY sales.s_id ORDER BY sales.t_id) AS previous, SORT_ARRAY(ARRAY_DISTINCT(CONCAT(ARRAY_COMPACT(ARRAY(LAG(sales._dl_id) OVER (PARTITION BY sales.s_id ORDER BY sales.t_id))), COLLECT_LIST(sales._dl_id) OVER (PARTITION BY sales.s_id ORDER BY sales.t_id RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)))) AS DL FROM sales AS sales

Control semantics: the DLUNION of the rows of the row's window partition (every row of the
partition was compared to order it, or can change its value), as a window aggregate over
the same PARTITION BY:

>>> print(rewrite_sql("SELECT t_id, RANK() OVER (PARTITION BY s_id ORDER BY num) AS r FROM sales", PAPER_SCHEMA))
SELECT sales.t_id, RANK() OVER (PARTITION BY sales.s_id ORDER BY sales.num) AS r, SORT_ARRAY(COLLECT_LIST(sales._dl_id) OVER (PARTITION BY sales.s_id)) AS DL FROM sales AS sales
"""  # noqa: E501

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from sqlglot import exp

from dltrace.rewriter.context import RewriteContext, unsupported
from dltrace.rewriter.terms import Lineage
from dltrace.rewriter.window_sets import OFFSETS, bound, can_hold_apart, held_apart, holds_apart

# the window functions whose value counts the rows ordered at or before the row
RUNNING_COUNTS = (exp.RowNumber, exp.Rank, exp.DenseRank)
# the window functions whose value depends on the partition's size
WHOLE_PARTITION = (exp.PercentRank, exp.CumeDist, exp.Ntile)


def window(select: exp.Expression, context: RewriteContext) -> exp.Expression:
    """Widen each row's lineage to the rows its window values read."""
    if not isinstance(select, exp.Select):
        return select
    windows = [w for e in select.expressions for w in e.find_all(exp.Window) if w.find_ancestor(exp.Select) is select]
    if not windows:
        return select
    for spec in windows:
        if spec.args.get("alias") or isinstance(spec.this, exp.Identifier):
            raise unsupported(spec, "a named window (WINDOW clause)")
        if isinstance(spec.this, exp.IgnoreNulls) and isinstance(spec.this.this, OFFSETS):
            raise unsupported(spec, "LAG or LEAD with IGNORE NULLS (the row it reads depends on the values)")
    lineage = context.lineage.of(select)
    own = tuple(t for t in lineage.rows if not t.shared)
    shared = tuple(t for t in lineage.rows if t.shared)
    if context.semantics == "data":
        read = _distinct(window_frame(spec) for spec in windows)
        # the row's own DL is always in: as part of a frame that holds the row, else as it is
        kept = () if any(_holds_the_row(frame) for frame in read) else own
    else:
        read, kept = _distinct(_partition(spec) for spec in windows), ()
    # a save holds partitions and RANGE frames apart where a copy of this SELECT, run on its
    # own, gives the same rows (window_sets.py)
    apart = context.windows_apart and can_hold_apart(select, context)
    terms = [term for frame in read
             for term in (held_apart(select, frame, own, context) if apart and holds_apart(frame)
                          else _read_by(frame, own, context))]
    lineage.rows = (*kept, *terms, *shared)
    return select


def window_frame(spec: exp.Window) -> exp.Window:
    """The rows whose values the window function of ``spec`` reads, as a window over which a
    DLUNION gives their lineage (a partition as ``* OVER (PARTITION BY ...)``); a
    ``LAG``/``LEAD`` is given back as it is (one row).

    >>> def frame(sql): print(window_frame(exp.maybe_parse(sql, dialect="spark")).sql("spark"))
    >>> frame("SUM(x) OVER (PARTITION BY k ORDER BY t)")
    SUM(x) OVER (PARTITION BY k ORDER BY t RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)
    >>> frame("MAX(x) OVER (ORDER BY t ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING)")
    MAX(x) OVER (ORDER BY t ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING)
    >>> frame("RANK() OVER (PARTITION BY k ORDER BY t DESC)")
    RANK() OVER (PARTITION BY k ORDER BY t DESC RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)
    >>> frame("NTILE(4) OVER (PARTITION BY k ORDER BY t)")
    * OVER (PARTITION BY k)
    >>> frame("AVG(x) OVER (PARTITION BY k)")
    * OVER (PARTITION BY k)
    """
    function = spec.this.this if isinstance(spec.this, (exp.IgnoreNulls, exp.RespectNulls)) else spec.this
    if isinstance(function, OFFSETS):
        offset = spec.copy()
        offset.set("this", function.copy())  # LAG(x) RESPECT NULLS is LAG(x)
        return offset
    if isinstance(function, WHOLE_PARTITION) or not spec.args.get("order"):
        return _partition(spec)
    if isinstance(function, RUNNING_COUNTS) or not spec.args.get("spec"):
        framed = spec.copy()
        framed.set("spec", exp.WindowSpec(kind="RANGE", start="UNBOUNDED", start_side="PRECEDING", end="CURRENT ROW"))
        return framed
    return spec


def _holds_the_row(frame: exp.Window) -> bool:
    """Whether every row is in its own frame (a frame from a PRECEDING or CURRENT ROW bound to
    a FOLLOWING or CURRENT ROW bound, or no frame: the partition)."""
    if isinstance(frame.this, OFFSETS):
        return False
    spec = frame.args.get("spec")
    if spec is None:
        return True
    start, end = bound(spec, "start"), bound(spec, "end")
    return (start == "CURRENT ROW" or start.endswith("PRECEDING")) and (
        end == "CURRENT ROW" or end.endswith("FOLLOWING"))


def _read_by(frame: exp.Window, own: Lineage, context: RewriteContext) -> Lineage:
    """The lineage of the rows ``frame`` reads: the DLUNION over the frame, or for ``LAG``/
    ``LEAD`` the lineage of the row at the offset (none past the partition's edge)."""
    if not isinstance(frame.this, OFFSETS):
        return tuple(context.representation.aggregate(term, frame) for term in own)
    return tuple(replace(term.at(_at_offset(frame, term.sql)), nullable=True, unique=False) for term in own)


def _at_offset(frame: exp.Window, value: exp.Expression) -> exp.Window:
    """``value`` of the row ``frame``'s ``LAG``/``LEAD`` reads (NULL past the edge: no default)."""
    moved = frame.copy()
    moved.this.set("this", value.copy())
    moved.this.set("default", None)
    return moved


def _partition(spec: exp.Window) -> exp.Window:
    """A window over ``spec``'s partition (no order, no frame: every row of it)."""
    return exp.Window(this=exp.Star(), partition_by=[p.copy() for p in spec.args.get("partition_by") or []])


def _distinct(frames: Iterable[exp.Window]) -> list[exp.Window]:
    """One of each window (by partition, order and frame; by offset too for ``LAG``/``LEAD``)."""
    seen: dict[str, exp.Window] = {}
    for frame in frames:
        key = frame.copy()
        key.this.set("this", exp.Star())
        if not isinstance(key.this, OFFSETS):
            key.set("this", exp.Star())
        seen.setdefault(key.sql(), frame)
    return list(seen.values())
