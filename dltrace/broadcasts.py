"""A lineage query keeps the plain query's broadcast joins.

Spark broadcasts a join side when its estimated size is at most
``spark.sql.autoBroadcastJoinThreshold`` (10 MB).  Without table statistics the estimate of a
scan is its files' bytes scaled by the width of the columns it reads, so the id column a
lineage query reads widens it: TPC-H Q8's filtered ``part`` reads ``p_partkey`` (8 bytes a row,
plus 8 of overhead) and, with lineage, ``_dl_id`` too, which lifts its estimate at SF 10 from
7.1 MB to 10.6 MB.  Spark then shuffles lineitem's 60M rows for a sort-merge join where the
plain query broadcasts ``part``; adaptive execution switches to a broadcast only after both
shuffles ran, which alone made Q8 far slower than the plain query (docs/performance.md,
"Measurements behind design choices").

``keep_broadcasts`` looks at the lineage plan's join sides that scan one table: one whose
estimate passes the threshold only because of the lineage columns (without them, in the same
proportion Spark estimates a projection, it would be broadcast) gets a ``BROADCAST`` hint in the
SELECT that reads the table.  The hinted plan is checked in turn: if a hint landed on a side
that would not fit without lineage either, the query runs unhinted.

It needs the plan, so it works on classic (embedded or cluster) Spark; on Spark Connect the
query runs as written.  A query whose tables are each smaller than the threshold is not looked
at (no side can pass it), so small data pays nothing.  It is only a speed-up: whatever goes
wrong while looking, the query runs as written.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

from sqlglot import exp

from dltrace.formatting import DL
from dltrace.rewriter.clauses import conjuncts
from dltrace.rewriter.dialect import SPARK
from dltrace.rewriter.saved_result import LINEAGE_COLUMN
from dltrace.rewriter.terms import is_lineage_column
from dltrace.table_data import ID_COLUMN

# the sides that may be broadcast, per join type (Spark's ``canBuildBroadcastLeft``/``Right``)
_BUILDS_LEFT = {"Inner", "Cross", "RightOuter"}
_BUILDS_RIGHT = {"Inner", "Cross", "LeftOuter", "LeftSemi", "LeftAnti", "ExistenceJoin"}
_TABLE_BYTES: dict[str, int] = {}  # a copied table version's Parquet -> its bytes (written once, never changed)


class WidenedScan(NamedTuple):
    """A scan of one table that the plain query would broadcast: the table's columns (to find
    it in the SQL) and the columns the side keeps (to tell its readings apart)."""

    table_columns: frozenset[str]
    kept_columns: frozenset[str]


def _is_id_column(name: str) -> bool:
    """A column the rewrite adds (``_dl_id``, ``__dl3``, ``_dl_lineage``, ``DL``)."""
    return is_lineage_column(name) or name in (ID_COLUMN, LINEAGE_COLUMN, DL)


def largest_table_bytes(catalog, names: set[str]) -> int:
    """The bytes of the largest of the catalog's tables among ``names`` (their files: in
    place, as recorded; copied, as listed once per data version)."""
    largest = 0
    for name in names & set(catalog.tables):
        entry = catalog.entry(name)
        if entry.files:
            size = sum(f["size"] for f in entry.files)
        else:
            path = catalog.data_path(name)
            if str(path) not in _TABLE_BYTES:
                _TABLE_BYTES[str(path)] = path.size()
            size = _TABLE_BYTES[str(path)]
        largest = max(largest, size)
    return largest


def threshold(spark) -> int:
    """Spark's broadcast threshold in bytes (<= 0: broadcasting by size is off)."""
    return int(spark._jsparkSession.sessionState().conf().autoBroadcastJoinThreshold())


def _children(node) -> Iterator[Any]:
    children = node.children().iterator()
    while children.hasNext():
        yield children.next()


def _nodes(node) -> Iterator[Any]:
    """A plan's nodes, those of the subqueries in its expressions included."""
    yield node
    for child in _children(node):
        yield from _nodes(child)
    subqueries = node.subqueries().iterator()
    while subqueries.hasNext():
        yield from _nodes(subqueries.next())


def _names(attributes) -> list[tuple[str, int]]:
    """``(name, default size)`` of each attribute, as Spark's estimates weigh them."""
    found = []
    iterator = attributes.iterator()
    while iterator.hasNext():
        attribute = iterator.next()
        found.append((attribute.name(), int(attribute.dataType().defaultSize())))
    return found


def size_without_lineage(side) -> tuple[int, int]:
    """``(estimate, estimate without the lineage columns)`` of a plan node: Spark scales a
    projection's estimate by its row width (8 bytes of overhead plus each column's default
    size), so the second is the first in the proportion of the widths."""
    estimate = int(side.stats().sizeInBytes())
    columns = _names(side.output())
    width = 8 + sum(size for _, size in columns)
    plain_width = 8 + sum(size for name, size in columns if not _is_id_column(name))
    return estimate, estimate * plain_width // width


def _scanned_relation(side):
    """The relation a join side reads through projections and filters only, else None."""
    while side.getClass().getSimpleName() in ("Project", "Filter"):
        side = side.child()
    return side if side.getClass().getSimpleName() == "LogicalRelation" else None


def _join_type(join) -> str:
    """``Inner``, ``LeftSemi``, ... (``ExistenceJoin`` without its attribute)."""
    return str(join.joinType().toString()).split("(")[0]


def _table_columns(relation) -> str:
    """A relation's own columns (what tells the tables apart), sorted, ``;``-separated."""
    return ";".join(sorted(n.lower() for n, _ in _names(relation.output()) if not _is_id_column(n)
                           and n != "_metadata"))


def _join_sides(plan) -> Iterator[tuple[Any, str, Any]]:
    """``(join, "left"|"right", side)`` for every side Spark may broadcast."""
    for node in _nodes(plan):
        if node.getClass().getSimpleName() != "Join":
            continue
        join_type = _join_type(node)
        if join_type in _BUILDS_LEFT:
            yield node, "left", node.left()
        if join_type in _BUILDS_RIGHT:
            yield node, "right", node.right()


def widened_scans(plan, limit: int) -> list[WidenedScan]:
    """The scans Spark will not broadcast only because of their lineage columns."""
    found = []
    for _, _, side in _join_sides(plan):
        relation = _scanned_relation(side)
        if relation is None:
            continue
        estimate, plain_estimate = size_without_lineage(side)
        if plain_estimate <= limit < estimate:
            found.append(WidenedScan(
                frozenset(_table_columns(relation).split(";")),
                frozenset(n.lower() for n, _ in _names(side.output()) if not _is_id_column(n)),
            ))
    return found


def hints_fit(plan, limit: int) -> bool:
    """Whether every side a broadcast hint names would be broadcast without lineage too."""
    for join, which, side in _join_sides(plan):
        hint = getattr(join.hint(), f"{which}Hint")()
        if hint.isDefined() and "broadcast" in str(hint.get().toString()).lower():
            if size_without_lineage(side)[1] > limit:
                return False
    return True


def _inner_only(select: exp.Select) -> bool:
    """Whether a SELECT's FROM is tables and subqueries joined by inner joins (with or
    without ON), which Spark reorders freely, and it names its output columns (reordering its
    FROM keeps them)."""
    for projection in select.expressions:  # a * (in HASH(*), STRUCT(*), ...) follows the FROM order
        for star in projection.find_all(exp.Star, exp.Column):
            if (isinstance(star, exp.Star) or star.is_star) and not isinstance(star.parent, exp.Count):
                return False
    if select.args.get("laterals"):
        return False
    for join in select.args.get("joins") or []:
        if join.args.get("using") or join.side or (join.kind or "INNER") not in ("INNER", "CROSS"):
            return False
        if join.args.get("method") or not isinstance(join.this, (exp.Table, exp.Subquery)):
            return False
    return isinstance(select.args.get("from_") and select.args["from_"].this, (exp.Table, exp.Subquery))


def in_spark_join_order(select: exp.Select) -> None:
    """Rewrite an inner-only SELECT's FROM in the order Spark's ``ReorderJoin`` would join it
    (the first item, then each time the first remaining one a condition links to those joined),
    conditions in WHERE.  A join strategy hint stops Spark from reordering the join it lands
    on; written in Spark's own order, the hinted query keeps the unhinted one's joins.

    >>> import sqlglot
    >>> query = sqlglot.parse_one("SELECT a.x FROM a, b, c WHERE c.k = a.k AND b.j = c.j", read="spark")
    >>> in_spark_join_order(query); query.sql("spark")
    'SELECT a.x FROM a INNER JOIN c INNER JOIN b WHERE c.k = a.k AND b.j = c.j'
    """
    joins = select.args.get("joins") or []
    items = [select.args["from_"].this, *(join.this for join in joins)]
    conditions = [c for join in joins for c in conjuncts(join.args.get("on")) if c != exp.true()]
    conditions = [*conditions, *conjuncts(select.args.get("where"))]
    name = {id(item): item.alias_or_name for item in items}
    # the FROM items a condition reads (not the tables of a subquery in it, which Spark plans apart)
    referenced = [{column.table for column in condition.find_all(exp.Column)} & set(name.values())
                  for condition in conditions]
    def links(joined: set[str], item: str) -> bool:
        return any(refs and refs <= joined | {item} and not refs <= joined and refs != {item} for refs in referenced)

    ordered, rest = [items[0]], items[1:]
    while rest:
        joined = {name[id(item)] for item in ordered}
        chosen = next((item for item in rest if links(joined, name[id(item)])), rest[0])
        ordered.append(chosen)
        rest.remove(chosen)
    where = exp.and_(*conditions) if conditions else None
    select.set("from_", exp.From(this=ordered[0].pop()))
    select.set("joins", [exp.Join(this=item.pop(), kind="INNER") for item in ordered[1:]])
    select.set("where", exp.Where(this=where) if where is not None else None)


def with_broadcast_hints(expression: exp.Expression, scans: list[WidenedScan],
                         schemas: dict[str, dict[str, str]]) -> exp.Expression | None:
    """``expression`` with ``BROADCAST(alias)`` in each SELECT reading one of ``scans``' tables
    with (at least) the columns the scan keeps, its FROM in Spark's join order; None when no
    reading matches.

    >>> import sqlglot
    >>> query = sqlglot.parse_one("SELECT p.a, l.b FROM part AS p JOIN li AS l ON p.k = l.k", read="spark")
    >>> scan = WidenedScan(frozenset({"k", "a", "z"}), frozenset({"k", "a"}))
    >>> with_broadcast_hints(query, [scan], {"part": {"k": "bigint", "a": "int", "z": "int"}}).sql("spark")
    'SELECT /*+ BROADCAST(p) */ p.a, l.b FROM part AS p INNER JOIN li AS l WHERE p.k = l.k'
    """
    tables = {name.lower(): frozenset(c.lower() for c in columns) for name, columns in schemas.items()}
    hinted = expression.copy()
    aliases: dict[int, tuple[exp.Select, list[str]]] = {}
    for table in hinted.find_all(exp.Table):
        select = table.parent.parent if isinstance(table.parent, (exp.From, exp.Join)) else None
        columns = tables.get(table.name.lower())
        if not isinstance(select, exp.Select) or columns is None or not _inner_only(select):
            continue
        alias = table.alias_or_name
        read = {c.name.lower() for c in select.find_all(exp.Column) if c.table == alias}
        if any(scan.table_columns == columns and scan.kept_columns <= read for scan in scans):
            aliases.setdefault(id(select), (select, []))[1].append(alias)
    for select, names in aliases.values():
        in_spark_join_order(select)
        hint = select.args.get("hint") or exp.Hint(expressions=[])
        broadcast = exp.JoinHint(this="BROADCAST", expressions=[exp.Table(this=exp.to_identifier(n)) for n in names])
        hint.set("expressions", [*hint.expressions, broadcast])
        select.set("hint", hint)
    return hinted if aliases else None


def join_shape(plan) -> list[tuple[str, ...]]:
    """The joins of a plan, in order, each as its type and the tables under each side (by
    their columns): what a hint must leave as it was."""
    def tables(node) -> str:
        return ",".join(sorted(_table_columns(leaf) for leaf in _nodes(node)
                               if leaf.getClass().getSimpleName() == "LogicalRelation"))

    return [(_join_type(node), tables(node.left()), tables(node.right()))
            for node in _nodes(plan) if node.getClass().getSimpleName() == "Join"]


def keep_broadcasts(frame, expression: exp.Expression, catalog, run: Callable[[str], Any]):
    """``frame`` (``expression`` run over ``catalog``'s tables), or the same query with
    broadcast hints where its lineage columns alone keep Spark from broadcasting a side the
    plain query broadcasts."""
    jdf = getattr(frame, "_jdf", None)
    if jdf is None:  # Spark Connect: no plan to read
        return frame
    try:
        limit = threshold(frame.sparkSession)
        read = {table.name.lower() for table in expression.find_all(exp.Table)}
        if limit <= 0 or largest_table_bytes(catalog, read) <= limit:
            return frame
        plan = jdf.queryExecution().optimizedPlan()
        scans = widened_scans(plan, limit)
        hinted = with_broadcast_hints(expression, scans, catalog.schemas()) if scans else None
        if hinted is None:
            return frame
        hinted_frame = run(hinted.sql(dialect=SPARK))
        hinted_plan = hinted_frame._jdf.queryExecution().optimizedPlan()
        if hints_fit(hinted_plan, limit) and join_shape(hinted_plan) == join_shape(plan):
            return hinted_frame
    except Exception:  # noqa: BLE001 - a speed-up: whatever fails here, the query runs as written
        pass
    return frame
