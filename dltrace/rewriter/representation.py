"""How lineage-set values are built in SQL: ``set`` (native Spark SQL) and ``bdd`` (roBDDs).

A representation turns lineage terms into expressions: a set from ids and sets, the
``DLUNION`` aggregate, and the final ``DL`` column.  Terms say what their value is (an
``ID``, a native ``IDS`` array or ``BDD`` bytes), and each representation accepts the
other's sets, so parts of one query can use different representations (``auto``; and
lineage copies of subqueries, which always use native sets because Spark cannot run a
Python UDF inside a correlated subquery; an uncorrelated one, computed once, can:
``bdd`` encodes a shared set there).

* ``set``: ``array<bigint>`` with distinct ids, sorted in the final ``DL``; built-in
  functions only, so native aggregates aggregate map-side and the SQL runs in
  ``spark-sql`` unchanged.
* ``bdd``: ``binary`` encoded sets, each a roBDD (paper §4) or a sorted id list, whichever
  is smaller (:mod:`dltrace.bddsets.encoding`), built by the Arrow UDF ``dl_bdd_union``
  (:mod:`dltrace.udafs`) from native ``collect_set``/``collect_list`` results, so Spark
  still groups map-side and Python runs once per group or output row.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Protocol

from sqlglot import exp

from dltrace.rewriter.terms import Kind, Lineage, Term, overlapping_groups

ONE_ROW = "RANGE(1) AS __dlone"  # a one-row relation Spark does not inline (computed_once)


def call(name: str, *args: exp.Expression) -> exp.Expression:
    """A function call printed verbatim (sqlglot must not translate lineage functions)."""
    return exp.Anonymous(this=name, expressions=list(args))


def over(aggregate: exp.Expression, window: exp.Window | None) -> exp.Expression:
    """``aggregate`` as a window function over ``window``'s partition, order and frame (a
    ``Window`` whose function is ignored; None: a plain aggregate)."""
    if window is None:
        return aggregate
    windowed = window.copy()
    windowed.set("this", aggregate)
    return windowed


def typed_empty_array(element: str) -> exp.Expression:
    return exp.cast(call("array"), exp.DataType.build(f"ARRAY<{element}>", dialect="spark"))


def empty_id_array() -> exp.Expression:
    """An empty ``array<bigint>`` typed as holding no NULLs.

    ``CAST(ARRAY() AS ARRAY<BIGINT>)`` would declare nullable elements, and one such
    operand makes every ``concat``/``coalesce`` over it nullable too: ``sort_array`` then
    sorts boxed objects with a comparator instead of ``java.util.Arrays.sort(long[])``
    (several times slower on large sets).
    """
    return call(
        "slice",
        call("array", exp.cast(exp.Literal.number(0), exp.DataType.build("BIGINT"))),
        exp.Literal.number(1),
        exp.Literal.number(0),
    )


def aggregate_shared(term: Term, window: exp.Window | None) -> Term:
    """DLUNION over a group of a set that is the same on every row: itself, read once."""
    if isinstance(term.sql, exp.Subquery):
        return term
    return replace(term, sql=over(call("first", term.sql, exp.true()), window))


def aggregate_refs(term: Term, window: exp.Window | None) -> Term:
    """DLUNION over a group of the names of sets held apart: the names, each once."""
    return replace(term, sql=call("array_distinct", call("flatten", over(call("collect_list", term.sql), window))),
                   nullable=False, unique=False)


def collect_ids(term: Term) -> str:
    """The native aggregate gathering an ID term's values: a list when no two rows carry
    the same id (no hash set per group), else a set."""
    return "collect_list" if term.unique else "collect_set"


def as_id_array(term: Term) -> exp.Expression:
    """A set term's ids as a native array (roBDD bytes decoded by ``dl_ids``)."""
    if term.kind is Kind.REFS:  # names of sets held apart are no ids: only the output spells them out
        raise AssertionError(f"names of sets held apart used as ids: {term.sql.sql()[:80]}")
    return call("dl_ids", term.sql) if term.kind is Kind.BDD else term.sql


class Representation(Protocol):
    name: str
    set_kind: Kind

    def aggregate(
        self, term: Term, window: exp.Window | None = None, group_size: float | None = None
    ) -> Term:
        """``DLUNION`` of a term over the rows of a group (or of each row's window frame);
        ``group_size`` is the expected number of ids per group, when known."""

    def as_set(self, terms: Lineage) -> exp.Expression:
        """One set value (of ``set_kind``) holding the union of ``terms``."""

    def output(self, terms: Lineage, codes: dict[str, int], ordered_by_table: bool = True) -> exp.Expression:
        """The final ``DL`` column."""


def _sorted_subquery(term: Term) -> bool:
    """Whether a term's ids come sorted: a shared subquery ending in an ascending
    ``SORT_ARRAY`` (``uncorrelated_copies``, saved results' shared sets).  Sorting it again
    cost every row a sort of the shared ids (TPC-H Q20 at SF 10: 1,804 rows of 178,045)."""
    value = _only_projection(term.sql) if term.kind is Kind.IDS else None
    while isinstance(value, exp.Subquery):  # a copy selecting a shared set's subquery
        value = _only_projection(value)
    if isinstance(value, exp.Anonymous):  # as the rewriter writes it (``call``)
        return value.name.lower() == "sort_array" and len(value.expressions) == 1
    return isinstance(value, exp.ArraySort) and value.args.get("asc") is None  # as sqlglot parses it


class SetRepresentation:
    """``DL`` as ``array<bigint>``: distinct ids, sorted in the output."""

    name = "set"
    set_kind = Kind.IDS

    def empty(self) -> exp.Expression:
        return empty_id_array()

    def aggregate(
        self, term: Term, window: exp.Window | None = None, group_size: float | None = None
    ) -> Term:
        if term.shared:
            return aggregate_shared(term, window)
        if term.kind is Kind.REFS:
            return aggregate_refs(term, window)
        # groups split the rows: ids that no two rows share, no two groups share (not so for
        # window frames, which overlap)
        disjoint = term.unique and window is None
        if term.kind is Kind.ID:
            return Term(over(call(collect_ids(term), term.sql), window), Kind.IDS, term.tables, unique=disjoint)
        flat = call("flatten", over(call("collect_list", as_id_array(term)), window))
        return Term(flat if term.unique else call("array_distinct", flat), Kind.IDS, term.tables, unique=disjoint)

    def _group(self, terms: Sequence[Term], sort: bool) -> exp.Expression:
        """The union of terms over overlapping tables (deduplicated)."""
        ids = [t for t in terms if t.kind is Kind.ID]
        sets = [
            call("coalesce", as_id_array(t), self.empty()) if t.nullable else as_id_array(t)
            for t in terms
            if t.kind is not Kind.ID
        ]
        parts = sets[:]
        if ids:
            array = call("array", *(t.sql for t in ids))
            if any(t.nullable for t in ids):
                array = call("array_compact", array)
            parts.insert(0, array)
        single_id = len(ids) == 1 and not sets
        single_set = len(sets) == 1 and not ids
        if single_id or single_set:
            value = parts[0]
        else:
            value = call("array_distinct", parts[0] if len(parts) == 1 else call("concat", *parts))
        sorted_already = single_set and _sorted_subquery(next(t for t in terms if t.kind is not Kind.ID))
        if sort and not single_id and not sorted_already:
            value = call("sort_array", value)
        return value

    def as_set(self, terms: Lineage) -> exp.Expression:
        if not terms:
            return self.empty()
        groups = [self._group(group, sort=False) for group in overlapping_groups(terms)]
        return groups[0] if len(groups) == 1 else call("concat", *groups)

    def output(self, terms: Lineage, codes: dict[str, int], ordered_by_table: bool = True) -> exp.Expression:
        """Sorted without a global sort where possible: groups over disjoint code ranges,
        concatenated in code order, are sorted when each group is (``ordered_by_table``:
        the ids are row ids, whose top bits are the table code)."""
        if not terms:
            return self.empty()
        if not ordered_by_table:
            return call("sort_array", self._group(terms, sort=False))
        code_range = lambda g: (  # noqa: E731
            min(codes[t] for term in g for t in term.tables),
            max(codes[t] for term in g for t in term.tables),
        )
        groups = sorted(overlapping_groups(terms), key=code_range)
        ranges = [code_range(g) for g in groups]
        interleaved = any(prev[1] >= nxt[0] for prev, nxt in zip(ranges, ranges[1:]))
        if all(len(g) == 1 and g[0].kind is Kind.ID for g in groups):
            # one id per table, in code order: already sorted; NULLs of outer joins dropped
            value = call("array", *(g[0].sql for g in groups))
            return call("array_compact", value) if any(g[0].nullable for g in groups) else value
        parts = [self._group(g, sort=not interleaved) for g in groups]
        value = parts[0] if len(parts) == 1 else call("concat", *parts)
        return call("sort_array", value) if interleaved else value


def _is_union(sql: exp.Expression) -> bool:
    return isinstance(sql, exp.Anonymous) and sql.name == "dl_bdd_union"


def computed_in_python(sql: exp.Expression) -> bool:
    """Whether a ``DL`` value is a Python UDF's result (whose native arguments may be
    computed apart from the call: the output rule then calls it above an ORDER BY)."""
    return _is_union(sql)


def computed_once(value: exp.Expression) -> exp.Expression:
    """``value`` with each shared set encoded in a scalar subquery (``_encoded_once``) reading
    ``RANGE(1)``, for a value projected as a column of its own.

    Spark inlines a scalar subquery without FROM into the query that reads it
    (``OptimizeOneRowRelationSubquery``): the UDF then ran on every row, with every row's
    copy of the shared ids (TPC-H Q11 ``bdd`` took far longer than ``set``: docs/performance.md,
    "Measurements behind design choices").  A subquery reading a relation is computed once, before the query; but not
    inside a Python UDF's arguments, where Spark 4 runs it in a task and fails (its plan
    has no session there), so only a value that is a column of its own gets the relation.
    """
    for subquery in list(value.find_all(exp.Subquery)):
        projection = _only_projection(subquery)
        if projection is not None and not subquery.this.args.get("from_") and _is_union(projection):
            subquery.this.from_(ONE_ROW, dialect="spark", copy=False)
    return value


def _only_projection(subquery: exp.Expression) -> exp.Expression | None:
    """The one value a scalar subquery ``(SELECT value ...)`` selects (unaliased), else None."""
    if not isinstance(subquery, exp.Subquery):
        return None
    select = subquery.this
    if not isinstance(select, exp.Select) or len(select.expressions) != 1:
        return None
    return select.expressions[0].unalias()


class BddRepresentation:
    """``DL`` as ``binary``: an encoded set (sorted ids, or a roBDD where that is smaller)."""

    name = "bdd"
    set_kind = Kind.BDD

    @staticmethod
    def _union(sets: Sequence[exp.Expression], ids: Sequence[exp.Expression], id_arrays: Sequence[exp.Expression] = (),
               set_arrays: Sequence[exp.Expression] = ()) -> exp.Expression:
        """``dl_bdd_union(bdd sets and arrays of them, ids and native id arrays)``."""
        set_parts = ([call("array", *sets)] if sets else []) + list(set_arrays)
        if not set_parts:
            set_value = typed_empty_array("BINARY")
        else:
            set_value = set_parts[0] if len(set_parts) == 1 else call("concat", *set_parts)
        id_parts = ([call("array", *ids)] if ids else []) + list(id_arrays)
        if not id_parts:
            id_value = empty_id_array()
        else:
            id_value = id_parts[0] if len(id_parts) == 1 else call("concat", *id_parts)
        return call("dl_bdd_union", set_value, id_value)

    def aggregate(
        self, term: Term, window: exp.Window | None = None, group_size: float | None = None
    ) -> Term:
        if term.shared:
            return aggregate_shared(term, window)
        if term.kind is Kind.REFS:
            return aggregate_refs(term, window)
        if term.kind is Kind.ID:
            value = self._union([], [], [over(call(collect_ids(term), term.sql), window)])
        elif term.kind is Kind.IDS:
            value = self._union([], [], [call("flatten", over(call("collect_list", term.sql), window))])
        else:
            value = self._union([], [], [], [over(call("collect_list", term.sql), window)])
        return Term(value, Kind.BDD, term.tables)

    def as_set(self, terms: Lineage) -> exp.Expression:
        shared = [t for t in terms if _shared_ids(t)]
        if shared:
            terms = (self._encoded_once(shared), *(t for t in terms if not _shared_ids(t)))
        if len(terms) == 1 and terms[0].kind is Kind.BDD and not terms[0].nullable:
            return computed_once(terms[0].sql)
        # A roBDD built in this SELECT (a fresh aggregate, ``dl_bdd_union(sets, ids)``) joins
        # the union with its arguments: each row's roBDD is then built once, in one UDF call,
        # instead of once per term and again to union them (Q10's DL: one call, not five).
        built = [t for t in terms if t.kind is Kind.BDD and not t.nullable and _is_union(t.sql)]
        inputs = [t for t in terms if not any(t is b for b in built)]
        return self._union(
            [t.sql for t in inputs if t.kind is Kind.BDD],
            [t.sql for t in inputs if t.kind is Kind.ID],
            # a scalar subquery straight in a Python UDF's arguments fails in Spark 4 (an
            # NPE while canonicalizing the plan); under COALESCE it is evaluated first
            [call("coalesce", t.sql, empty_id_array()) if t.nullable or isinstance(t.sql, exp.Subquery) else t.sql
             for t in inputs if t.kind is Kind.IDS]
            + [b.sql.expressions[1] for b in built if b.sql.expressions[1] != empty_id_array()],
            [b.sql.expressions[0] for b in built if b.sql.expressions[0] != typed_empty_array("BINARY")],
        )

    def output(self, terms: Lineage, codes: dict[str, int], ordered_by_table: bool = True) -> exp.Expression:
        return self.as_set(terms)

    def _encoded_once(self, shared: Sequence[Term]) -> Term:
        """The sets every row shares (uncorrelated subqueries' native ids, the same on every
        row) as one encoding, computed once in a scalar subquery of its own: rows whose DL is
        only that set take the value as it is, and the others union one encoded value with
        their own ids, instead of every row shipping the shared ids to Python (TPC-H Q11:
        1,048 rows of 32,000 ids each).  Spark inlines a scalar subquery without FROM into the
        query that reads it, so the UDF still runs per row unless :func:`computed_once` gives
        the subquery a relation to read, where that is allowed.

        All of a DL's shared sets go into one subquery: Spark takes two inlined UDF calls that
        differ only in the scalar subquery they read for the same call, and the DL of TPC-H-like
        ``... HAVING sum(x) > (SELECT ...) ... WHERE y > (SELECT ...)`` lost one of the sets."""
        encoded = self._union([], [], [call("coalesce", t.sql, empty_id_array()) for t in shared])
        return replace(shared[0], sql=exp.Subquery(this=exp.select(exp.alias_(encoded, "__dl"))), kind=Kind.BDD,
                       nullable=False, tables=frozenset().union(*(t.tables for t in shared)))


def _shared_ids(term: Term) -> bool:
    """Whether a term is an uncorrelated subquery's native ids, the same on every row."""
    return term.shared and term.kind is Kind.IDS and isinstance(term.sql, exp.Subquery)


class AutoRepresentation:
    """Per aggregate, native sets or roBDDs, whichever measured cheaper for the expected
    number of ids per group (the paper: sets win for small lineage, roBDDs for large).
    ``DL`` is ``array<bigint>`` as with ``set``.

    ``BDD_FROM_IDS`` comes from measurements on Spark (docs/performance.md, "Measurements
    behind design choices"): at TPC-H SF 1 native sets match or beat roBDDs at every group
    size there is: the roBDD pays for shipping ids to Python, which a native
    ``collect_list`` never does (parity up to 10^5 ids per group, sets ahead at 10^6).
    roBDDs are kept for groups expected above 5·10^7 ids, where a native array holds 400 MB
    per group and the roBDD's compression of clustered ids is what keeps the value small.
    """

    name = "auto"
    set_kind = Kind.IDS
    BDD_FROM_IDS = 50_000_000

    def __init__(self, small: SetRepresentation, large: BddRepresentation) -> None:
        self.small, self.large = small, large

    def aggregate(
        self, term: Term, window: exp.Window | None = None, group_size: float | None = None
    ) -> Term:
        chosen = self.large if group_size is not None and group_size >= self.BDD_FROM_IDS else self.small
        return chosen.aggregate(term, window, group_size)

    def as_set(self, terms: Lineage) -> exp.Expression:
        return self.small.as_set(terms)

    def output(self, terms: Lineage, codes: dict[str, int], ordered_by_table: bool = True) -> exp.Expression:
        return self.small.output(terms, codes, ordered_by_table)


SET = SetRepresentation()
BDD = BddRepresentation()
REPRESENTATIONS: dict[str, Representation] = {"set": SET, "bdd": BDD, "auto": AutoRepresentation(SET, BDD)}
