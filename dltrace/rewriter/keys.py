"""Which sources of a SELECT never repeat a row: the key analysis behind ``collect_list``.

A row of source T appears at most once in ``FROM ... WHERE`` when, given T's row, every
other source is pinned to at most one row by equalities covering one of its declared
keys (TPC-H's lineitem joined to orders on ``o_orderkey``, orders to customer on
``c_custkey``).  T's ids are then distinct among the SELECT's rows, and DLUNION may
collect them as a list instead of building a hash set per group.

>>> from sqlglot import parse_one
>>> select = parse_one("SELECT 1 FROM lineitem l, orders o, customer c "
...                    "WHERE o.o_orderkey = l.l_orderkey AND c.c_custkey = o.o_custkey")
>>> sorted(single_row_sources(select, {"orders": ["o_orderkey"], "customer": ["c_custkey"]}))
['l']
"""

from __future__ import annotations

from sqlglot import exp

from dltrace.rewriter.clauses import conjuncts, sources
from dltrace.rewriter.context import ONE_ROW


def single_row_sources(select: exp.Select, table_keys: dict[str, list[str]]) -> set[str]:
    """Aliases of ``select``'s FROM/JOIN sources whose rows each appear at most once in
    its rows (before grouping)."""
    by_alias, keys, bindings = _join_graph(select, table_keys)
    return {alias for alias in by_alias if _pinned(alias, keys, bindings) == by_alias.keys()}


def pinned_sources(select: exp.Select, table_keys: dict[str, list[str]], start: str) -> set[str]:
    """Aliases of ``select``'s sources that one row of ``start`` pins to at most one row
    (``start`` included): every row of ``select`` holding that row holds the same row of each.

    >>> from sqlglot import parse_one
    >>> select = parse_one("SELECT 1 FROM lineitem l JOIN orders o ON o.o_orderkey = l.l_orderkey "
    ...                    "JOIN customer c ON c.c_custkey = o.o_custkey")
    >>> sorted(pinned_sources(select, {"orders": ["o_orderkey"], "customer": ["c_custkey"]}, "o"))
    ['c', 'o']
    """
    _, keys, bindings = _join_graph(select, table_keys)
    return _pinned(start, keys, bindings)


def _join_graph(select: exp.Select, table_keys: dict[str, list[str]]):
    """``select``'s sources by alias, their declared keys, and its equalities."""
    by_alias = {source.alias_or_name: source for source in sources(select)}
    keys = {
        alias: [{c.lower() for c in key}] if (key := table_keys.get(source.name.lower())) else []
        for alias, source in by_alias.items()
        if isinstance(source, exp.Table)
    }
    # a one-row aggregate (one_row_join) has the empty key: any row pins its one row
    keys.update({alias: [set()] for alias, source in by_alias.items() if source.meta.get(ONE_ROW)})
    return by_alias, keys, _equalities(select)


def _equalities(select: exp.Select) -> list[tuple[exp.Column, exp.Column | None]]:
    """``column = column`` and ``column = constant`` conjuncts of WHERE and ON (the constant
    side as None)."""
    conditions = [select.args.get("where")] + [j.args.get("on") for j in select.args.get("joins") or []]
    found: list[tuple[exp.Column, exp.Column | None]] = []
    for condition in conditions:
        for conjunct in conjuncts(condition):
            if not isinstance(conjunct, exp.EQ):
                continue
            left, right = conjunct.this, conjunct.expression
            for one, other in ((left, right), (right, left)):
                if isinstance(one, exp.Column) and one.table:
                    if isinstance(other, exp.Column) and other.table:
                        found.append((one, other))
                    elif not any(True for _ in other.find_all(exp.Column, exp.Subquery)):
                        found.append((one, None))
    return found


def _pinned(start: str, keys: dict[str, list[set[str]]], bindings) -> set[str]:
    """The sources whose row key equalities pin, from one row of ``start`` (itself included)."""
    known = {start}
    changed = True
    while changed:
        changed = False
        for alias in keys.keys() - known:
            bound = {
                c.name.lower() for c, other in bindings if c.table == alias and (other is None or other.table in known)
            }
            if any(key <= bound for key in keys[alias]):
                known.add(alias)
                changed = True
    return known
