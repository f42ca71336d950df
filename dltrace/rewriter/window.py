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

import sqlglot
from sqlglot import exp

from dltrace.rewriter.context import RewriteContext, unsupported
from dltrace.rewriter.dialect import SPARK
from dltrace.rewriter.representation import SET
from dltrace.rewriter.terms import Kind, Lineage, Term, tables_of

# the window functions whose value counts the rows ordered at or before the row
RUNNING_COUNTS = (exp.RowNumber, exp.Rank, exp.DenseRank)
# the window functions whose value depends on the partition's size
WHOLE_PARTITION = (exp.PercentRank, exp.CumeDist, exp.Ntile)
OFFSETS = (exp.Lag, exp.Lead)


def window(select: exp.Expression, context: RewriteContext) -> exp.Expression:
    """Widen each row's lineage to the rows its window values read."""
    if not isinstance(select, exp.Select):
        return select
    windows = [w for e in select.expressions for w in e.find_all(exp.Window) if w.find_ancestor(exp.Select) is select]
    if not windows:
        return select
    drop_redundant_aliases(select)
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
    apart = context.windows_apart and _readable_anywhere(select, context)
    terms = [term for frame in read
             for term in (held_apart(select, frame, own, context) if apart and _holds_apart(frame)
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
        return spec
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
    start, end = str(spec.args.get("start")).upper(), str(spec.args.get("end")).upper()
    start_side, end_side = str(spec.args.get("start_side")).upper(), str(spec.args.get("end_side")).upper()
    return (start == "CURRENT ROW" or start_side == "PRECEDING") and (end == "CURRENT ROW" or end_side == "FOLLOWING")


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


def _holds_apart(frame: exp.Window) -> bool:
    """Whether a frame's rows are the same whatever the order of peers, so that a set held
    apart, numbered in another run of the query, names them: a partition, a RANGE frame
    (ROWS frames and offsets may end between peers; they are computed in the row)."""
    spec = frame.args.get("spec")
    return not isinstance(frame.this, OFFSETS) and (spec is None or str(spec.args.get("kind")).upper() == "RANGE")


def _readable_anywhere(select: exp.Select, context: RewriteContext) -> bool:
    """Whether a copy of ``select`` can be run on its own: it is not correlated and reads only
    names every part of the query sees (catalog tables, saved results, the outermost CTEs)
    or CTEs it defines itself."""
    if context.scope is not None and context.scope.is_correlated_subquery:
        return False
    own_ctes = {cte.alias_or_name.lower() for cte in select.find_all(exp.CTE)}
    return all(t.name.lower() in context.global_names | own_ctes for t in select.find_all(exp.Table))


def held_apart(select: exp.Select, frame: exp.Window, own: Lineage, context: RewriteContext) -> Lineage:
    """The lineage of the rows ``frame`` reads, as names of sets held apart (``Kind.REFS``):
    its partition's set, or for a RANGE frame the few aligned blocks of the partition's rows
    in window order that make up the frame (``frame_blocks``).  Each row names O(log n) sets
    and each id is stored in O(log n) sets, instead of every row spelling out its frame: a
    running total over a partition of n rows holds n²/2 ids spelled out.  Names read from an
    inner window's rows are gathered over the frame as they are."""
    names = [context.representation.aggregate(t, frame) for t in own if t.kind is Kind.REFS]
    ids = tuple(t for t in own if t.kind is not Kind.REFS)
    if not ids:
        return tuple(names)
    number = len(context.lineage.held_apart)
    key = _partition_name(frame, number)
    spec = frame.args.get("spec")
    blocks = spec is not None and frame.args.get("order") is not None
    sets = select.copy()
    for clause in ("order", "limit", "offset"):
        sets.set(clause, None)
    columns = [exp.alias_(key, "__dlname"), exp.alias_(SET.as_set(ids), "__dlids")]
    if blocks:
        columns += [exp.alias_(_parsed(f"ROW_NUMBER() OVER ({_over(frame, order=True)}) - 1"), "__dlpos"),
                    exp.alias_(_parsed(f"COUNT(*) OVER ({_over(frame)})"), "__dln")]
    sets.set("expressions", columns)
    context.lineage.held_apart.append(_named_ids(sets, blocks))
    if not blocks:
        return (*names, Term(exp.Array(expressions=[key.copy()]), Kind.REFS, tables_of(ids)))
    return (*names, Term(frame_blocks(key, frame), Kind.REFS, tables_of(ids)))


def _over(frame: exp.Window, order: bool = False, spec: str = "") -> str:
    """``frame``'s PARTITION BY (and ORDER BY, and a frame) as the text inside OVER (...)."""
    window = exp.Window(this=exp.Star(), partition_by=[p.copy() for p in frame.args.get("partition_by") or []])
    if order:
        window.set("order", frame.args["order"].copy())
    text = window.sql(dialect=SPARK)
    inside = text[text.index("OVER (") + len("OVER ("):-1]
    return f"{inside} {spec}".strip()


def _partition_name(frame: exp.Window, number: int) -> exp.Expression:
    """The name of the row's partition of window ``number``: the partition's values as text,
    the least over the partition (Spark's partitions merge -0.0 and 0.0, which print apart)."""
    partition = frame.args.get("partition_by") or []
    if not partition:
        return exp.Literal.string(f"w{number}:")
    values = ", ".join(f"CAST({p.sql(dialect=SPARK)} AS STRING)" for p in partition)
    return _parsed(f"CONCAT('w{number}:', MIN(TO_JSON(ARRAY({values}))) OVER ({_over(frame)}))")


def frame_blocks(key: exp.Expression, frame: exp.Window) -> exp.Expression:
    """The names of the aligned blocks that make up the row's frame: with the partition's rows
    numbered 0..n-1 in window order, the frame is rows [lo, hi), and a block ``key:l:j`` is
    rows [j·2^l, (j+1)·2^l).  The canonical cover takes, per level, a block inside [lo, hi)
    whose parent is not (at most the first and the last: a segment tree's decomposition), so
    at most 2·log2(n) names.  lo and hi are counts over RANGE frames: peers stay together."""
    spec = frame.args["spec"]
    start, end = _bound(spec, "start"), _bound(spec, "end")
    n = f"COUNT(*) OVER ({_over(frame)})"
    lo = ("CAST(0 AS BIGINT)" if start == "UNBOUNDED PRECEDING" else
          f"({n} - COUNT(*) OVER ({_over(frame, True, f'RANGE BETWEEN {start} AND UNBOUNDED FOLLOWING')}))")
    hi = (n if end == "UNBOUNDED FOLLOWING" else
          f"COUNT(*) OVER ({_over(frame, True, f'RANGE BETWEEN UNBOUNDED PRECEDING AND {end}')})")
    one = "SHIFTLEFT(CAST(1 AS BIGINT), __dll)"
    inside = (f"SHIFTLEFT(__dlb.j, __dlb.l) >= {lo} AND SHIFTLEFT(__dlb.j + 1, __dlb.l) <= {hi} AND NOT "
              f"(SHIFTLEFT(SHIFTRIGHT(__dlb.j, 1), __dlb.l + 1) >= {lo} AND "
              f"SHIFTLEFT(SHIFTRIGHT(__dlb.j, 1) + 1, __dlb.l + 1) <= {hi})")
    candidates = (f"FLATTEN(TRANSFORM(SEQUENCE(0, LENGTH(BIN({n})) - 1), __dll -> ARRAY("
                  f"NAMED_STRUCT('l', __dll, 'j', SHIFTRIGHT({lo} + {one} - 1, __dll)), "
                  f"NAMED_STRUCT('l', __dll, 'j', SHIFTRIGHT({hi}, __dll) - 1))))")
    return _parsed(f"TRANSFORM(ARRAY_DISTINCT(FILTER({candidates}, __dlb -> {inside})), "
                   f"__dlb -> CONCAT({key.sql(dialect=SPARK)}, ':', __dlb.l, ':', __dlb.j))")


def _bound(spec: exp.WindowSpec, which: str) -> str:
    """A frame bound as SQL text (``2 PRECEDING``, ``CURRENT ROW``, ``UNBOUNDED FOLLOWING``)."""
    value, side = spec.args.get(which), spec.args.get(f"{which}_side")
    text = value.sql(dialect=SPARK) if isinstance(value, exp.Expression) else str(value).upper()
    return f"{text} {str(side).upper()}" if side else text


def _named_ids(sets: exp.Select, blocks: bool) -> exp.Expression:
    """``(__dlname, __dlid)``: each set's ids, from ``sets`` (a copy of the window's SELECT with
    each row's partition name, ids and, for blocks, its number in window order and its
    partition's size): a row's ids are in its partition's set, or at every level in the
    block that holds the row."""
    ids = exp.select("__dlname", "EXPLODE(__dlids) AS __dlid", *(["__dlpos", "__dln"] if blocks else []),
                     dialect=SPARK).from_(sets.subquery("__dlrows"))
    if not blocks:
        return exp.select("__dlname", "__dlid").distinct().from_(ids.subquery("__dlexploded"))
    levels = exp.select("__dlname", "__dlid", "__dlpos", "EXPLODE(SEQUENCE(0, LENGTH(BIN(__dln)) - 1)) AS __dll",
                        dialect=SPARK).from_(ids.subquery("__dlexploded"))
    return exp.select("CONCAT(__dlname, ':', __dll, ':', SHIFTRIGHT(__dlpos, __dll)) AS __dlname", "__dlid",
                      dialect=SPARK).distinct().from_(levels.subquery("__dllevels"))


def _parsed(sql: str) -> exp.Expression:
    return sqlglot.parse_one(sql, read=SPARK)


def drop_redundant_aliases(select: exp.Select) -> None:
    """``u.k AS k`` becomes ``u.k`` (the same output name) in a SELECT with windows: over a
    UNION ALL derived table, such an alias of a PARTITION BY column makes Spark's optimizer
    fail (RemoveRedundantAliases: "The plan was previously resolved and now became unresolved").

    >>> select = exp.maybe_parse("SELECT u.k AS k, u.v AS w, COUNT(*) OVER (PARTITION BY u.k) AS n FROM u")
    >>> drop_redundant_aliases(select); print(select.sql())
    SELECT u.k, u.v AS w, COUNT(*) OVER (PARTITION BY u.k) AS n FROM u
    """
    for item in select.expressions:
        if isinstance(item, exp.Alias) and isinstance(item.this, exp.Column) and item.alias == item.this.name:
            item.replace(item.this)
