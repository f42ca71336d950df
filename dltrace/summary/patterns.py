"""Patterns that describe a set of base rows: conjunctions of per-column constraints.

Lee, Ludäscher & Glavic summarize provenance with patterns (selection conditions with
placeholders), scored for completeness over a sample of the provenance.  Here a pattern is
a conjunction over one table's columns: ``column BETWEEN low AND high`` for ordered columns
(numbers, dates, timestamps) and ``column = value`` for categorical ones.  It is judged by

* recall: the fraction of the lineage rows it matches (the paper's completeness), and
* precision: the fraction of the table's rows it matches that are lineage rows, which is
  what makes a pattern *informative* here: ``TRUE`` covers everything and says nothing.

The search is sequential covering, done locally on two samples (``positives``: lineage
rows; ``population``: the table's rows): each pattern starts empty and greedily takes the
constraint that most improves the F1 of recall (of the lineage rows no earlier pattern
covers) and precision (estimated from the population sample), while that gain is at least
``MIN_GAIN``; the next pattern covers what is left.  Since K patterns should describe the
whole lineage, not a few of its rows precisely, a pattern must cover at least half its
share of what is left (with 3 patterns to go, a sixth of the uncovered rows).  Range candidates are the span of the
lineage values, and its pieces around the widest gaps (the population rows between two
consecutive lineage values), so that two separate months become two patterns.

>>> import numpy as np
>>> x = Column("x", "range", "int")
>>> positives = {"x": np.arange(10, 20, dtype=float)}
>>> population = {"x": np.arange(0, 100, dtype=float)}
>>> [p.sql() for p in learn_patterns([x], positives, population, 10, 100, k=3)]
['x BETWEEN 10 AND 19']
>>> positives = {"x": np.array([10, 11, 12, 80, 81, 82], dtype=float)}
>>> [p.sql() for p in learn_patterns([x], positives, population, 6, 100, k=3)]
['x BETWEEN 10 AND 12', 'x BETWEEN 80 AND 82']
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass, field

import numpy as np

from dltrace.table_data import backquoted

MIN_GAIN = 0.02  # a constraint must raise the F1 estimate by this much to be added
MAX_CONSTRAINTS = 4  # a pattern people can read; more fits the sample's noise
EQUALITY_CANDIDATES = 8  # most frequent lineage values of a categorical column tried
RANGE_SPLITS = 3  # widest gaps a range is cut at
EPOCH = dt.date(1970, 1, 1)


@dataclass(frozen=True)
class Column:
    """A column patterns may constrain: ``kind`` "range" (ordered values held as float64:
    numbers, dates as days and timestamps as microseconds since the epoch) or "equal"."""

    name: str
    kind: str
    sql_type: str


@dataclass(frozen=True)
class Constraint:
    """``column BETWEEN low AND high`` or ``column = value``."""

    column: Column
    low: float | None = None
    high: float | None = None
    value: object = None

    def holds(self, values: np.ndarray) -> np.ndarray:
        """Which rows satisfy it (NULLs never do)."""
        if self.column.kind == "range":
            with np.errstate(invalid="ignore"):
                return (values >= self.low) & (values <= self.high)
        return values == self.value

    def sql(self) -> str:
        name = quote(self.column.name)
        if self.column.kind == "range" and self.low != self.high:
            return (f"{name} BETWEEN {literal(self.low, self.column.sql_type)} "
                    f"AND {literal(self.high, self.column.sql_type)}")
        value = self.low if self.column.kind == "range" else self.value
        return f"{name} = {literal(value, self.column.sql_type)}"


@dataclass
class LearnedPattern:
    """A pattern and which positives (lineage sample rows) it matches."""

    constraints: list[Constraint]
    matches: np.ndarray = field(repr=False)

    def sql(self) -> str:
        """The pattern as a Spark SQL condition over the table's columns."""
        return " AND ".join(c.sql() for c in self.constraints) or "TRUE"


def quote(name: str) -> str:
    """A column name for Spark SQL, back-quoted unless it is a plain identifier.

    >>> quote("l_shipdate"), quote("order date")
    ('l_shipdate', '`order date`')
    """
    return name if name.isidentifier() and name.isascii() else backquoted(name)


def literal(value, sql_type: str) -> str:
    """A Spark SQL literal for a bound held as a float (dates as days, timestamps as µs).

    >>> literal(8766.0, "date"), literal(0.05, "decimal(15,2)"), literal(3.0, "bigint"), literal("it's", "string")
    ("DATE '1994-01-01'", '0.05', '3', "'it''s'")

    A timestamp reads as one, at UTC (the instant its microseconds count from the epoch):

    >>> literal(1372669200000000.0, "timestamp")
    "TIMESTAMP '2013-07-01 09:00:00+00:00'"
    """
    if sql_type == "date":
        return f"DATE '{(EPOCH + dt.timedelta(days=int(value))).isoformat()}'"
    if sql_type.startswith("timestamp"):
        moment = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(microseconds=int(value))
        return f"TIMESTAMP '{moment.isoformat(sep=' ')}'"
    if sql_type.startswith("decimal"):
        scale = int(sql_type.rstrip(")").split(",")[1]) if "," in sql_type else 0
        return f"{value:.{scale}f}"
    if sql_type in ("tinyint", "smallint", "int", "bigint"):
        return str(int(value))
    if sql_type in ("float", "double"):
        return repr(float(value))
    if sql_type == "boolean":
        return "TRUE" if value in (True, "true") else "FALSE"
    return "'" + str(value).replace("\\", "\\\\").replace("'", "''") + "'"


class _Estimates:
    """F1 of a pattern from the two samples, scaled to the lineage and the table."""

    def __init__(self, positives: int, population: int, lineage_rows: int, table_rows: int) -> None:
        self.per_positive = lineage_rows / max(positives, 1)
        self.per_member = table_rows / max(population, 1)

    def f1(self, matched: np.ndarray, new: np.ndarray, uncovered: int, members: np.ndarray) -> float:
        """``matched``: positives the pattern matches; ``new``: those no earlier pattern
        covers, out of ``uncovered``; ``members``: population rows it matches."""
        hits = int(new.sum())
        if not hits:
            return 0.0
        lineage = matched.sum() * self.per_positive
        precision = lineage / max(members.sum() * self.per_member, lineage)  # lineage rows are table rows
        recall = hits / uncovered
        return 2 * precision * recall / (precision + recall)


def learn_patterns(
    columns: list[Column],
    positives: dict[str, np.ndarray],
    population: dict[str, np.ndarray],
    lineage_rows: int,
    table_rows: int,
    k: int,
) -> list[LearnedPattern]:
    """At most ``k`` patterns covering the positives (sequential covering, see the module).

    ``columns`` in order of preference (on a tie the earlier column wins: put keys first).
    """
    size = len(next(iter(positives.values()))) if positives else 0
    estimates = _Estimates(size, len(next(iter(population.values()))) if population else 0, lineage_rows, table_rows)
    uncovered = np.ones(size, dtype=bool)
    patterns: list[LearnedPattern] = []
    while len(patterns) < k and uncovered.any():
        minimum = math.ceil(uncovered.sum() / (2 * (k - len(patterns))))
        pattern = _learn_one(columns, positives, population, uncovered, minimum, estimates)
        if not (pattern.matches & uncovered).any():
            break
        patterns.append(pattern)
        uncovered &= ~pattern.matches
    return patterns


def _learn_one(columns, positives, population, uncovered: np.ndarray, minimum: int,
               estimates: _Estimates) -> LearnedPattern:
    """One pattern over the ``uncovered`` positives, matching at least ``minimum`` of them."""
    matched = np.ones_like(uncovered)
    members = np.ones(len(next(iter(population.values()))) if population else 0, dtype=bool)
    total = int(uncovered.sum())
    constraints: list[Constraint] = []
    score = estimates.f1(matched, uncovered, total, members)
    while len(constraints) < MAX_CONSTRAINTS:
        best = None
        used = {c.column.name for c in constraints}
        for column in columns:
            if column.name in used:
                continue
            values = positives[column.name][matched & uncovered]
            for candidate in _candidates(column, values, population[column.name][members]):
                new_matched = matched & candidate.holds(positives[column.name])
                if (new_matched & uncovered).sum() < minimum:
                    continue
                new_members = members & candidate.holds(population[column.name])
                candidate_score = estimates.f1(new_matched, new_matched & uncovered, total, new_members)
                if best is None or candidate_score > best[0]:
                    best = (candidate_score, candidate, new_matched, new_members)
        if best is None or best[0] < score + MIN_GAIN:
            return LearnedPattern(constraints, matched)
        score, constraint, matched, members = best
        constraints.append(constraint)
    return LearnedPattern(constraints, matched)


def _candidates(column: Column, values: np.ndarray, members: np.ndarray) -> list[Constraint]:
    """Constraints on ``column`` for lineage ``values``, given the population ``members``
    still matched: equalities with frequent values, or the span of the values and its
    pieces between the widest gaps."""
    if column.kind == "equal":
        present = [v for v in values if v is not None]
        if not present:
            return []
        kinds, counts = np.unique(np.asarray(present, dtype=object).astype(str), return_counts=True)
        by_text = {str(v): v for v in present}
        frequent = kinds[np.argsort(-counts, kind="stable")[:EQUALITY_CANDIDATES]]
        return [Constraint(column, value=by_text[text]) for text in frequent]
    distinct = np.unique(values[~np.isnan(values)])
    if not len(distinct):
        return []
    spans = [(distinct[0], distinct[-1])]
    if len(distinct) > 1:
        ordered = np.sort(members[~np.isnan(members)])
        # population rows strictly inside each gap between consecutive lineage values
        inside = np.searchsorted(ordered, distinct[1:], "left") - np.searchsorted(ordered, distinct[:-1], "right")
        cuts = sorted(i for i in np.argsort(-inside, kind="stable")[:RANGE_SPLITS] if inside[i] > 0)
        starts = [0, *(i + 1 for i in cuts)]
        ends = [*cuts, len(distinct) - 1]
        spans += [(distinct[s], distinct[e]) for s, e in zip(starts, ends)] if cuts else []
    return [Constraint(column, low=float(low), high=float(high)) for low, high in spans]


def prefer_keys(patterns: list[LearnedPattern], keys: list[list[Column]],
                population: dict[str, np.ndarray]) -> list[LearnedPattern]:
    """``patterns`` with each one that matches exactly the population rows a pattern on a key
    matches (``keys``: the table's key, then its unique columns) replaced by the key's: people
    find a row by its key (``faa = 'HNL'``), not by a value that happens to be unique
    (``lat = 21.318681``).  ``population`` must be the whole table, for "the same rows" to hold.

    >>> faa, lat = Column("faa", "equal", "string"), Column("lat", "range", "double")
    >>> table = {"faa": np.array(["HNL", "JFK"], dtype=object), "lat": np.array([21.318681, 40.63])}
    >>> found = LearnedPattern([Constraint(lat, low=21.318681, high=21.318681)], np.array([True]))
    >>> [p.sql() for p in prefer_keys([found], [[faa]], table)]
    ["faa = 'HNL'"]
    """
    return [_on_a_key(pattern, keys, population) for pattern in patterns]


def key_constraints(key: list[Column], low: dict, high: dict, rows: int) -> list[Constraint] | None:
    """A pattern on ``key`` that holds every row of another's (its ``rows`` rows' key values
    reach from ``low`` to ``high``): the run of key values of a one-column ordered key, or
    the key of its one row; None when neither fits."""
    if len(key) == 1 and key[0].kind == "range":  # a run of key values
        return [Constraint(key[0], low=float(low[key[0].name]), high=float(high[key[0].name]))]
    if rows == 1:  # one row: its key
        return [Constraint(c, low=float(low[c.name]), high=float(low[c.name])) if c.kind == "range"
                else Constraint(c, value=low[c.name]) for c in key]
    return None


def _on_a_key(pattern: LearnedPattern, keys: list[list[Column]], population: dict[str, np.ndarray]) -> LearnedPattern:
    """The pattern on the first key that matches the same population rows, else ``pattern``."""
    members = np.ones(len(next(iter(population.values()))), dtype=bool)
    for constraint in pattern.constraints:
        members &= constraint.holds(population[constraint.column.name])
    used = {c.column.name for c in pattern.constraints}
    for key in keys:
        if not members.any() or used <= {c.name for c in key}:
            return pattern  # nothing to describe, or on this key already
        values = {c.name: population[c.name][members] for c in key}
        low = {c.name: np.nanmin(values[c.name]) if c.kind == "range" else values[c.name][0] for c in key}
        high = {c.name: np.nanmax(values[c.name]) if c.kind == "range" else values[c.name][0] for c in key}
        constraints = key_constraints(key, low, high, int(members.sum()))
        if constraints is None:
            continue
        same = np.ones_like(members)
        for constraint in constraints:
            same &= constraint.holds(population[constraint.column.name])
        if np.array_equal(same, members):
            return LearnedPattern(constraints, pattern.matches)
    return pattern
