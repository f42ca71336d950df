"""How lineage-set values are built in SQL: the ``set`` representation in native Spark SQL.

A representation turns lineage terms into expressions: a set from ids and sets, the
``DLUNION`` aggregate, and the final ``DL`` column.  The ``set`` representation keeps
``array<bigint>`` values with distinct ids, and its final ``DL`` is sorted ascending.
Everything is a built-in Spark function, so native aggregates get map-side partial
aggregation and the rewritten SQL runs in ``spark-sql`` unchanged.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Protocol, Sequence

from sqlglot import exp

from dltrace.rewriter.terms import Kind, Lineage, Term, overlapping_groups


def call(name: str, *args: exp.Expression) -> exp.Expression:
    """A function call printed verbatim (sqlglot must not translate lineage functions)."""
    return exp.Anonymous(this=name, expressions=list(args))


def over(aggregate: exp.Expression, partition_by: list[exp.Expression] | None) -> exp.Expression:
    """``aggregate`` as a window function over ``partition_by`` (None: a plain aggregate)."""
    if partition_by is None:
        return aggregate
    return exp.Window(this=aggregate, partition_by=[p.copy() for p in partition_by])


class Representation(Protocol):
    name: str

    def aggregate(self, term: Term, partition_by: list[exp.Expression] | None = None) -> Term:
        """``DLUNION`` of a term over the rows of a group (or of a window partition)."""

    def as_set(self, terms: Lineage) -> exp.Expression:
        """One set value holding the union of ``terms``."""

    def output(self, terms: Lineage, codes: dict[str, int], ordered_by_table: bool = True) -> exp.Expression:
        """The final ``DL`` column."""


class SetRepresentation:
    """``DL`` as ``array<bigint>``: distinct ids, sorted in the output."""

    name = "set"
    sql_type = "ARRAY<BIGINT>"

    def empty(self) -> exp.Expression:
        return exp.cast(call("array"), exp.DataType.build(self.sql_type, dialect="spark"))

    def aggregate(self, term: Term, partition_by: list[exp.Expression] | None = None) -> Term:
        if term.shared:
            # the same set on every row: its union over a group is itself, read once
            if isinstance(term.sql, exp.Subquery):
                return term
            return replace(term, sql=over(call("first", term.sql, exp.true()), partition_by))
        if term.kind is Kind.ID:
            return Term(over(call("collect_set", term.sql), partition_by), Kind.SET, term.tables)
        return Term(call("array_distinct", call("flatten", over(call("collect_list", term.sql), partition_by))), Kind.SET, term.tables)

    def _group(self, terms: Sequence[Term], sort: bool) -> exp.Expression:
        """The union of terms over overlapping tables (deduplicated)."""
        ids = [t for t in terms if t.kind is Kind.ID]
        sets = [call("coalesce", t.sql, self.empty()) if t.nullable else t.sql for t in terms if t.kind is Kind.SET]
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
        if sort and not single_id:
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
        groups = sorted(overlapping_groups(terms), key=lambda g: min(codes[t] for term in g for t in term.tables))
        ranges = [(min(codes[t] for term in g for t in term.tables), max(codes[t] for term in g for t in term.tables)) for g in groups]
        interleaved = any(prev[1] >= nxt[0] for prev, nxt in zip(ranges, ranges[1:]))
        all_single_ids = all(len(g) == 1 and g[0].kind is Kind.ID for g in groups)
        if all_single_ids:
            # one id per table, in code order: already sorted; NULLs of outer joins dropped
            value = call("array", *(g[0].sql for g in groups))
            return call("array_compact", value) if any(g[0].nullable for g in groups) else value
        parts = [self._group(g, sort=not interleaved) for g in groups]
        value = parts[0] if len(parts) == 1 else call("concat", *parts)
        return call("sort_array", value) if interleaved else value


REPRESENTATIONS: dict[str, Representation] = {"set": SetRepresentation()}
