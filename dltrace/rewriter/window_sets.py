"""Windows' lineage held apart when a result is saved (``windows_apart``, the ``window`` rule).

Spelled out in every row, a window partition of n rows holds n² ids (control) and a running
frame n²/2 (data).  Planned for a save, a row names sets held apart instead (``Kind.REFS``):
its partition's set, or the O(log n) aligned blocks of the partition's rows in window order
that make up its RANGE frame (``frame_blocks``).  Each set is computed once by a copy of the
window's SELECT (``_named_ids``, registered in ``context.lineage.held_apart``) and stored
once (``dltrace/named_sets.py``).  That copy is a second run of the SELECT: it is held apart
only where both runs give the same rows (``can_hold_apart``) and where the frame's rows do
not depend on the order of tied rows (``holds_apart``: partitions and RANGE frames).
"""

from __future__ import annotations

import sqlglot
from sqlglot import exp

from dltrace.rewriter.context import RewriteContext
from dltrace.rewriter.dialect import SPARK
from dltrace.rewriter.representation import SET
from dltrace.rewriter.terms import Kind, Lineage, Term, tables_of

OFFSETS = (exp.Lag, exp.Lead)
# a frame's blocks are of BRANCHING^l rows: each id is stored once per level (log_b(n) + 1
# times), and a row names at most 2·(b - 1) blocks per level.  4 against 2: half the levels
# and ids stored, the saves 10-20% faster; 8 and 16 store less still, no faster
# (docs/performance.md, "window sets named by numbers, blocks of 4 rows")
BLOCK_BITS = 2
BRANCHING = 1 << BLOCK_BITS


def can_hold_apart(select: exp.Select, context: RewriteContext) -> bool:
    """Whether a copy of ``select`` run on its own gives the rows this run gives: it can be
    run where the outermost query is (``_readable_anywhere``) and picks no rows or values by
    chance (``_deterministic``), and reads no LATERAL VIEW (a generator's or an UNPIVOT's:
    the copy of such a query is not yet made right, DUPLICATED_CTE_NAMES; spelled out instead)."""
    if any(node.find(exp.Lateral) for node in _inputs(select)):
        return False
    return _readable_anywhere(select, context) and _deterministic(select)


def holds_apart(frame: exp.Window) -> bool:
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
        if isinstance(node, exp.Window) and str(
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
    number = len(context.lineage.held_apart)
    key = _partition_name(frame, number)
    spec = frame.args.get("spec")
    blocks = spec is not None and frame.args.get("order") is not None
    sets = select.copy()
    for clause in ("order", "limit", "offset"):
        sets.set(clause, None)
    partition = frame.args.get("partition_by") or []
    values = [f"__dlp{i}" for i in range(len(partition))]
    columns = [exp.alias_(key, "__dlname"), exp.alias_(SET.as_set(ids), "__dlids"),
               *(exp.alias_(p.copy(), v) for p, v in zip(partition, values))]
    if blocks:
        columns += [exp.alias_(_parsed(f"ROW_NUMBER() OVER ({_over(frame, order=True)}) - 1"), "__dlpos"),
                    exp.alias_(_parsed(f"COUNT(*) OVER ({_over(frame)})"), "__dln")]
    sets.set("expressions", columns)
    context.lineage.held_apart.append(_named_ids(sets, blocks, values))
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
    """The name of the row's partition of window ``number``: a 64-bit hash of the window's
    number and the partition's values as JSON (strings quoted, binary in base64, timestamps
    to the microsecond with their offset, NULLs inside arrays and structs shown, where a hash
    of the values would skip them), the least JSON over the partition (Spark's partitions
    merge -0.0 and 0.0, which print apart).  A number, not text, travels through every frame
    that gathers names, and a save checks that its sets' names are distinct (``named_sets``)."""
    partition = frame.args.get("partition_by") or []
    if not partition:
        return _parsed(f"XXHASH64('w{number}')")
    values = ", ".join(f"'p{i}', {p.sql(dialect=SPARK)}" for i, p in enumerate(partition))
    options = ("MAP('timestampFormat', 'yyyy-MM-dd HH:mm:ss.SSSSSSXXX', "
               "'timestampNTZFormat', 'yyyy-MM-dd HH:mm:ss.SSSSSS')")
    return _parsed(f"XXHASH64('w{number}', MIN(TO_JSON(NAMED_STRUCT({values}), {options})) OVER ({_over(frame)}))")


def frame_blocks(key: exp.Expression, frame: exp.Window) -> exp.Expression:
    """The names of the aligned blocks that make up the row's frame: with the partition's rows
    numbered 0..n-1 in window order, the frame is rows [lo, hi), and a block (l, j) is rows
    [j·b^l, (j+1)·b^l) (b = ``BRANCHING``), named by ``block_name``.  The canonical cover
    takes the blocks inside [lo, hi) whose parent is not: per level at most b - 1 at each end
    (a b-ary segment tree's decomposition), so at most 2·(b - 1)·log_b(n) names.  lo and hi
    are counts over RANGE frames: peers stay together."""
    spec = frame.args["spec"]
    start, end = bound(spec, "start"), bound(spec, "end")
    n = f"COUNT(*) OVER ({_over(frame)})"
    lo = ("CAST(0 AS BIGINT)" if start == "UNBOUNDED PRECEDING" else
          f"({n} - COUNT(*) OVER ({_over(frame, True, f'RANGE BETWEEN {start} AND UNBOUNDED FOLLOWING')}))")
    hi = (n if end == "UNBOUNDED FOLLOWING" else
          f"COUNT(*) OVER ({_over(frame, True, f'RANGE BETWEEN UNBOUNDED PRECEDING AND {end}')})")
    bits, parent_bits = f"__dlb.l * {BLOCK_BITS}", f"(__dlb.l + 1) * {BLOCK_BITS}"
    parent = f"SHIFTRIGHT(__dlb.j, {BLOCK_BITS})"
    inside = (f"SHIFTLEFT(__dlb.j, {bits}) >= {lo} AND SHIFTLEFT(__dlb.j + 1, {bits}) <= {hi} AND NOT "
              f"(SHIFTLEFT({parent}, {parent_bits}) >= {lo} AND SHIFTLEFT({parent} + 1, {parent_bits}) <= {hi})")
    level_bits = f"__dll * {BLOCK_BITS}"
    first = f"SHIFTRIGHT({lo} + SHIFTLEFT(CAST(1 AS BIGINT), {level_bits}) - 1, {level_bits})"
    last = f"SHIFTRIGHT({hi}, {level_bits}) - 1"
    candidates = (f"FLATTEN(TRANSFORM({block_levels(n)}, __dll -> FLATTEN(TRANSFORM(SEQUENCE(0, {BRANCHING - 2}), "
                  f"__dlk -> ARRAY(NAMED_STRUCT('l', __dll, 'j', {first} + __dlk), "
                  f"NAMED_STRUCT('l', __dll, 'j', {last} - __dlk))))))")
    return _parsed(f"TRANSFORM(ARRAY_DISTINCT(FILTER({candidates}, __dlb -> {inside})), "
                   f"__dlb -> {block_name(key.sql(dialect=SPARK), '__dlb.l', '__dlb.j')})")


def block_levels(n: str) -> str:
    """The levels of the blocks of a partition of ``n`` rows: 0 (a row each) up to the level
    whose blocks' parent holds more than ``n`` rows."""
    return f"SEQUENCE(0, CAST(FLOOR((LENGTH(BIN({n})) + {BLOCK_BITS - 1}) / {BLOCK_BITS}) AS INT) - 1)"


def block_name(partition: str, level: str, block: str) -> str:
    """The name of block ``block`` at ``level`` of a partition named ``partition``: a hash
    of the three, typed alike wherever it is computed (a hash of an int differs from a
    bigint's)."""
    return f"XXHASH64({partition}, CAST({level} AS INT), CAST({block} AS BIGINT))"


def bound(spec: exp.WindowSpec, which: str) -> str:
    """A frame bound as SQL text (``2 PRECEDING``, ``CURRENT ROW``, ``UNBOUNDED FOLLOWING``); a
    frame written with its start alone (``RANGE UNBOUNDED PRECEDING``) ends at the current row."""
    value, side = spec.args.get(which), spec.args.get(f"{which}_side")
    if value is None:
        return "CURRENT ROW"
    text = value.sql(dialect=SPARK) if isinstance(value, exp.Expression) else str(value).upper()
    return f"{text} {str(side).upper()}" if side else text


def _named_ids(sets: exp.Select, blocks: bool, values: list[str]) -> exp.Expression:
    """``(__dlname, __dlids)``: each set's name and its ids (distinct, sorted), one row per set,
    from ``sets`` (a copy of the window's SELECT with each row's partition name, ids, the
    partition's ``values`` and, for blocks, its number in window order and its partition's
    size): a row's ids are in its partition's set, or at every level in the block that holds
    the row.  Grouped by set, the ids of a row travel as its array: a set per id and level, as
    text, cost 10x (the mart's 3 million ids, docs/performance.md).  Grouped by the
    partition's values too, not its name alone: two partitions whose names collide stay two
    rows of one name, which stops the save (``named_sets``), instead of one set of both's ids.
    A set of rows without ids is empty: its name exists."""
    union = "SORT_ARRAY(ARRAY_DISTINCT(FLATTEN(COLLECT_LIST(__dlids)))) AS __dlids"
    if not blocks:
        grouped = exp.select("__dlname", union, dialect=SPARK).from_(sets.subquery("__dlrows"))
        return grouped.group_by("__dlname", *values)
    levels = exp.select("__dlname", "__dlids", "__dlpos", *values,
                        f"EXPLODE({block_levels('__dln')}) AS __dll",
                        dialect=SPARK).from_(sets.subquery("__dlrows"))
    block = f"SHIFTRIGHT(__dlpos, __dll * {BLOCK_BITS}) AS __dlj"
    blocks_of_rows = exp.select("__dlname", "__dll", block, union, dialect=SPARK) \
        .from_(levels.subquery("__dllevels")).group_by("__dlname", *values, "__dll", "__dlj")
    return exp.select(f"{block_name('__dlname', '__dll', '__dlj')} AS __dlname", "__dlids", dialect=SPARK).from_(
        blocks_of_rows.subquery("__dlblocks"))


def _parsed(sql: str) -> exp.Expression:
    return sqlglot.parse_one(sql, read=SPARK)
