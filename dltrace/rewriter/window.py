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
    start, end = _bound(spec, "start"), _bound(spec, "end")
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


def _holds_apart(frame: exp.Window) -> bool:
    """Whether a frame's rows are the same whatever the order of peers, so that a set held
    apart, numbered in another run of the query, names them: a partition, a RANGE frame
    (ROWS frames and offsets may end between peers; they are computed in the row)."""
    spec = frame.args.get("spec")
    return not isinstance(frame.this, OFFSETS) and (spec is None or str(spec.args.get("kind")).upper() == "RANGE")


def _readable_anywhere(select: exp.Select, context: RewriteContext) -> bool:
    """Whether a copy of ``select`` can be run on its own, where the outermost query is: it is
    not correlated, not in a CTE of a nested WITH (lineage copies read such CTEs as they are
    rewritten) and reads only names every part of the query sees (catalog tables, saved
    results not named by row, the outermost CTEs) or CTEs it defines itself."""
    if context.scope is not None and context.scope.is_correlated_subquery:
        return False
    root_with = select.root().args.get("with_")
    cte = select.find_ancestor(exp.CTE)
    while cte is not None:
        if cte.parent is not root_with:
            return False
        cte = cte.find_ancestor(exp.CTE)
    own_ctes = {cte.alias_or_name.lower() for cte in select.find_all(exp.CTE)}
    named_by_row = {name for name, saved in context.saved.items() if saved.reference is not None}
    return all(t.name.lower() in (context.global_names | own_ctes) - named_by_row
               for node in _inputs(select) for t in node.find_all(exp.Table))


# what makes a query's rows or values differ between two runs: the sets held apart are
# computed by a run of their own, and must describe the rows of the run that names them
NONDETERMINISTIC = (exp.Rand, exp.Randn, exp.First, exp.Last, exp.AnyValue, exp.ArrayAgg, exp.FirstValue,
                    exp.LastValue, exp.NthValue, exp.RowNumber, exp.Lag, exp.Lead, exp.Ntile, exp.Limit, exp.Fetch)
NONDETERMINISTIC_NAMES = frozenset({"uuid", "shuffle", "monotonically_increasing_id", "spark_partition_id",
                                    "input_file_name", "random", "rand", "randn", "try_reflect", "reflect"})


def _inputs(select: exp.Select) -> list[exp.Expression]:
    """``select`` and the bodies of the CTEs it reads (of the outermost WITH), to search what
    it reads."""
    root_with = select.root().args.get("with_")
    bodies = {cte.alias_or_name.lower(): cte.this for cte in (root_with.expressions if root_with else [])}
    found, pending, reached = [select], [select], set()
    while pending:
        for table in pending.pop().find_all(exp.Table):
            name = table.name.lower()
            if name in bodies and name not in reached:
                reached.add(name)
                found.append(bodies[name])
                pending.append(bodies[name])
    return found


def _deterministic(select: exp.Select) -> bool:
    """Whether ``select``'s rows and their order keys are the same in every run: nothing below
    its own windows picks rows or values by chance (a LIMIT, ROW_NUMBER or LAG over ties,
    FIRST, random numbers) and no ROWS frame ends between tied rows."""
    own = {id(w) for e in select.expressions for w in e.find_all(exp.Window)}
    # its own ORDER BY and LIMIT come after its windows: its sets are computed without them
    own |= {id(select.args[clause]) for clause in ("order", "limit", "offset") if select.args.get(clause)}
    pending: list[exp.Expression] = list(_inputs(select))
    while pending:
        node = pending.pop()
        if id(node) in own:  # the windows traced here: their values are the ones lineage explains
            continue
        pending.extend(node.iter_expressions())
        if isinstance(node, exp.Window) and id(node) not in own and str(
                (node.args.get("spec") or exp.WindowSpec(kind="RANGE")).args.get("kind")).upper() == "ROWS":
            return False
        if isinstance(node, NONDETERMINISTIC) or (
                isinstance(node, exp.Anonymous) and node.name.lower() in NONDETERMINISTIC_NAMES):
            return False
    return True


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
    if not _deterministic(select):  # the sets' own run may number other rows: spelled out here
        return (*names, *_read_by(frame, ids, context))
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
    """The name of the row's partition of window ``number``: the partition's values as JSON
    (strings quoted, binary in base64, timestamps to the microsecond with their offset), the
    least over the partition (Spark's partitions merge -0.0 and 0.0, which print apart)."""
    partition = frame.args.get("partition_by") or []
    if not partition:
        return exp.Literal.string(f"w{number}:")
    values = ", ".join(f"'p{i}', {p.sql(dialect=SPARK)}" for i, p in enumerate(partition))
    options = ("MAP('timestampFormat', 'yyyy-MM-dd HH:mm:ss.SSSSSSXXX', "
               "'timestampNTZFormat', 'yyyy-MM-dd HH:mm:ss.SSSSSS')")
    return _parsed(f"CONCAT('w{number}:', MIN(TO_JSON(NAMED_STRUCT({values}), {options})) OVER ({_over(frame)}))")


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
    """A frame bound as SQL text (``2 PRECEDING``, ``CURRENT ROW``, ``UNBOUNDED FOLLOWING``); a
    frame written with its start alone (``RANGE UNBOUNDED PRECEDING``) ends at the current row."""
    value, side = spec.args.get(which), spec.args.get(f"{which}_side")
    if value is None:
        return "CURRENT ROW"
    text = value.sql(dialect=SPARK) if isinstance(value, exp.Expression) else str(value).upper()
    return f"{text} {str(side).upper()}" if side else text


def _named_ids(sets: exp.Select, blocks: bool) -> exp.Expression:
    """``(__dlname, __dlid)``: each set's ids, from ``sets`` (a copy of the window's SELECT with
    each row's partition name, ids and, for blocks, its number in window order and its
    partition's size): a row's ids are in its partition's set, or at every level in the
    block that holds the row.  A set of rows without ids has one NULL id: its name exists."""
    ids = exp.select("__dlname", "EXPLODE_OUTER(__dlids) AS __dlid", *(["__dlpos", "__dln"] if blocks else []),
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
