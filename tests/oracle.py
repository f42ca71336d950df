"""Oracles for lineage, run with DuckDB on the catalog's Parquet (no dltrace code involved).

* completeness (paper Theorems 1 and 5): the original query over the base rows whose ids
  are in DL(t) gives t back (exactly {t} for tree-shaped queries);
* minimality (Theorem 2, SPJ without self-joins): without any one of those ids, t is gone.

Completeness is a theorem about tree definitions, where each occurrence of a table is a
relation of its own.  With ``instances=True`` the oracle checks exactly that: lineage
computed with ``tag_instances`` carries each id's table occurrence in its top bits, and
each occurrence in the original query is restricted to the ids tagged with its number.
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
from collections import Counter

import sqlglot
from sqlglot import exp
from sqlglot.optimizer.qualify import qualify

from dltrace import LineageSession
from dltrace.table_data import duckdb_rows_sql
from tpch.duck import connect

INSTANCE_SHIFT = 56


class DuckOracle:
    """The catalog's tables in DuckDB, restricted on demand to a set of ids."""

    def __init__(self, session: LineageSession) -> None:
        self.db = connect()
        self.tables = list(session.catalog.tables)
        self.schemas = session.catalog.schemas()
        self.instance_views: set[str] = set()
        self.db.execute("CREATE TEMP TABLE dl_keep (id BIGINT)")
        for name in self.tables:
            self.db.execute(f"CREATE TABLE base_{name} AS {duckdb_rows_sql(session.catalog, name)}")
            self.db.execute(
                f"CREATE VIEW {name} AS SELECT * EXCLUDE (_dl_id) FROM base_{name} "
                "WHERE _dl_id IN (SELECT id FROM dl_keep)"
            )

    def run(self, spark_sql: str, ids, instances: bool = False) -> list[tuple]:
        """The original query on the base rows whose ids are ``ids``."""
        self.db.execute("DELETE FROM dl_keep")
        if len(ids):  # one statement: a DL of TPC-DS q23 holds hundreds of thousands of ids
            self.db.execute("INSERT INTO dl_keep SELECT UNNEST(?::BIGINT[])", [[int(i) for i in ids]])
        expression = without_top_k(sqlglot.parse_one(spark_sql, read="spark"))
        if instances:
            expression = self._per_instance(expression)
        return [tuple(row) for row in self.db.execute(expression.sql(dialect="duckdb")).fetchall()]

    def _per_instance(self, expression: exp.Expression) -> exp.Expression:
        """Point the k-th occurrence of each table (in tree-walk order after qualification)
        at a view of the rows whose ids tagged with k are kept."""
        expression = qualify(expression, schema=self.schemas, dialect="spark", quote_identifiers=False)
        seen: dict[str, int] = {}
        for table in list(expression.find_all(exp.Table)):
            name = table.name.lower()
            if name not in self.tables:
                continue
            k = seen.get(name, 0)
            seen[name] = k + 1
            view = f"{name}__i{k}"
            if view not in self.instance_views:
                self.db.execute(
                    f"CREATE VIEW {view} AS SELECT * EXCLUDE (_dl_id) FROM base_{name} "
                    f"WHERE _dl_id + {k << INSTANCE_SHIFT} IN (SELECT id FROM dl_keep)"
                )
                self.instance_views.add(view)
            table.set("this", exp.to_identifier(view))
        return expression


def without_top_k(expression: exp.Expression) -> exp.Expression:
    """The query before its outermost LIMIT and OFFSET: over a subset of the base rows they
    pick other rows than over all of them, and DL(t) derives t in the whole ordered result."""
    expression.set("limit", None)
    expression.set("offset", None)
    return expression


def untagged(ids) -> frozenset[int]:
    """Ids without their table-occurrence tag: the graph definition's lineage (Theorem 4)."""
    return frozenset(int(i) & ((1 << INSTANCE_SHIFT) - 1) for i in ids)


def same_value(a, b) -> bool:
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, (int, float, decimal.Decimal)) and isinstance(b, (int, float, decimal.Decimal)):
        return math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-6)
    if isinstance(a, dt.datetime) or isinstance(b, dt.datetime):
        return str(a)[:19] == str(b)[:19]
    return a == b


def same_row(a: tuple, b: tuple) -> bool:
    return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b))


def sample(rows: list, most: int) -> list:
    """Up to ``most`` rows spread over the result, first and last included."""
    if len(rows) <= most:
        return rows
    step = (len(rows) - 1) / (most - 1)
    return [rows[round(i * step)] for i in range(most)]


def check_completeness(
    oracle: DuckOracle, query: str, rows: list, tree: bool, most: int = 12, instances: bool = False
) -> int:
    """Assert completeness on a sample of ``rows`` (Spark rows with DL); returns rows checked."""
    checked = 0
    for row in sample(rows, most):
        values = tuple(v for k, v in row.asDict().items() if k != "DL")
        again = oracle.run(query, row["DL"], instances)
        matches = [r for r in again if same_row(r, values)]
        assert matches, f"completeness: {values} not derived from its DL ({len(row['DL'])} ids); got {again[:3]}"
        if tree:
            assert len(again) == 1, f"completeness: DL of {values} derives {len(again)} rows, expected exactly it"
        checked += 1
    return checked


def check_minimality(oracle: DuckOracle, query: str, rows: list, most: int = 4) -> None:
    """Assert that dropping any one id of DL(t) makes t disappear."""
    for row in sample(rows, most):
        values = tuple(v for k, v in row.asDict().items() if k != "DL")
        for dropped in row["DL"]:
            rest = [i for i in row["DL"] if i != dropped]
            again = oracle.run(query, rest)
            assert not any(same_row(r, values) for r in again), f"minimality: {values} survives without id {dropped}"


def lineage_bag(rows, strip: bool = False) -> Counter:
    """(values, DL) pairs as a bag; DL untagged when ``strip``."""
    return Counter(
        (tuple(str(v) for k, v in r.asDict().items() if k != "DL"), untagged(r.DL) if strip else frozenset(r.DL))
        for r in rows
    )


def contributing_ids(oracle: DuckOracle, session: LineageSession, query: str) -> list[tuple[tuple, frozenset[int]]]:
    """Each result row of an SPJ or one-level aggregate query with the ids of all base rows
    that contribute to it, computed by DuckDB with Perm's provenance query (no lineage rules)."""
    from tpch.baselines import contributing_ids_duckdb, shape_of

    text = contributing_ids_duckdb(shape_of(session, query), "base_")
    return [(tuple(row[:-1]), frozenset(row[-1] or ())) for row in oracle.db.execute(text).fetchall()]


def check_exact_lineage(oracle: DuckOracle, session: LineageSession, query: str, rows: list) -> None:
    """Assert that the rows' DLs are exactly the contributing ids DuckDB finds, row for row."""
    expected: dict[frozenset[int], list[tuple]] = {}
    for values, ids in contributing_ids(oracle, session, query):
        expected.setdefault(ids, []).append(values)
    assert sum(map(len, expected.values())) == len(rows), "DuckDB and Spark return different numbers of rows"
    for row in rows:
        values = tuple(v for k, v in row.asDict().items() if k != "DL")
        candidates = expected.get(frozenset(row.DL), [])
        match = next((i for i, other in enumerate(candidates) if same_row(values, other)), None)
        assert match is not None, f"exact lineage: no result row {values} derives from exactly its {len(row.DL)} ids"
        candidates.pop(match)
