"""Valid Spark SQL over the TPC-H schema, generated from a stream of choices (SQLsmith's idea).

Every choice goes through a ``Chooser``: ``RandomChooser`` (a seed: ``python -m
tests.query_generator --seed 7 -n 5`` prints five queries) or hypothesis' ``st.data()``
(``HypothesisChooser``), so that a failing query shrinks to a minimal one.  Queries are
small on purpose (few joins, depth two): they are run on tiny data, plain and with lineage.

Output columns are always aliased ``c0, c1, ...`` (a derived table's names are unique) and
a ``LIMIT`` comes with an ``ORDER BY`` of every output column, so that the plain query's
rows are a bag independent of Spark's plan.
"""

from __future__ import annotations

import argparse
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

T = TypeVar("T")

NUM, STR, DATE = "num", "str", "date"
# the columns the generator uses, by kind; keys and foreign keys join
COLUMNS: dict[str, dict[str, str]] = {
    "region": {"r_regionkey": NUM, "r_name": STR},
    "nation": {"n_nationkey": NUM, "n_name": STR, "n_regionkey": NUM},
    "supplier": {"s_suppkey": NUM, "s_name": STR, "s_nationkey": NUM, "s_acctbal": NUM},
    "customer": {"c_custkey": NUM, "c_name": STR, "c_nationkey": NUM, "c_acctbal": NUM, "c_mktsegment": STR},
    "part": {"p_partkey": NUM, "p_brand": STR, "p_size": NUM, "p_retailprice": NUM},
    "partsupp": {"ps_partkey": NUM, "ps_suppkey": NUM, "ps_availqty": NUM, "ps_supplycost": NUM},
    "orders": {"o_orderkey": NUM, "o_custkey": NUM, "o_orderstatus": STR, "o_totalprice": NUM, "o_orderdate": DATE},
    "lineitem": {"l_orderkey": NUM, "l_partkey": NUM, "l_suppkey": NUM, "l_linenumber": NUM, "l_quantity": NUM,
                 "l_extendedprice": NUM, "l_returnflag": STR, "l_shipdate": DATE},
}
LITERALS: dict[str, Sequence[str]] = {
    NUM: ("0", "1", "3", "7", "10", "25", "1000", "5000.5"),
    STR: ("'A'", "'F'", "'O'", "'BUILDING'", "'Brand#13'", "'GERMANY'", "'Customer#000000004'"),
    DATE: ("date '1994-01-01'", "date '1995-06-17'", "date '1996-12-31'"),
}
COMPARISONS = ("=", "<>", "<", "<=", ">", ">=")
JOINS = ("JOIN", "LEFT JOIN", "RIGHT JOIN", "FULL JOIN", "CROSS JOIN", "LEFT SEMI JOIN", "LEFT ANTI JOIN")
# window functions that need an ORDER BY and take no frame
ORDERED_WINDOW_FUNCTIONS = ("rank", "dense_rank", "row_number", "ntile", "percent_rank", "cume_dist", "lag", "lead")
FRAMES = ("ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING", "ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW",
          "ROWS BETWEEN 2 PRECEDING AND 1 PRECEDING", "ROWS BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING",
          "RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW", "RANGE BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING")
SET_OPERATIONS = ("UNION ALL", "UNION", "INTERSECT", "INTERSECT ALL", "EXCEPT", "EXCEPT ALL")


class Chooser(Protocol):
    """Where the generator's choices come from."""

    def choice(self, options: Sequence[T]) -> T: ...

    def integer(self, low: int, high: int) -> int: ...

    def chance(self, p: float) -> bool: ...


class RandomChooser:
    """Choices from a seeded ``random.Random``."""

    def __init__(self, seed: int) -> None:
        self.random = random.Random(seed)

    def choice(self, options: Sequence[T]) -> T:
        return self.random.choice(list(options))

    def integer(self, low: int, high: int) -> int:
        return self.random.randint(low, high)

    def chance(self, p: float) -> bool:
        return self.random.random() < p


class HypothesisChooser:
    """Choices drawn from hypothesis' ``st.data()``: the first option of each choice is the
    simplest, so shrinking moves toward plain selects of one table."""

    def __init__(self, data) -> None:
        self.data = data

    def choice(self, options: Sequence[T]) -> T:
        from hypothesis import strategies as st

        return self.data.draw(st.sampled_from(list(options)))

    def integer(self, low: int, high: int) -> int:
        from hypothesis import strategies as st

        return self.data.draw(st.integers(low, high))

    def chance(self, p: float) -> bool:
        from hypothesis import strategies as st

        # shrinks to False: the construct left out
        return self.data.draw(st.integers(0, 99)) >= 100 - round(p * 100)


@dataclass
class Column:
    sql: str
    kind: str


@dataclass
class Relation:
    """A FROM item: its text and the columns it shows (qualified by its alias)."""

    sql: str
    columns: list[Column]


@dataclass
class Query:
    sql: str
    kinds: list[str]


@dataclass
class Generator:
    """One query's worth of choices; ``query()`` is the entry point."""

    chooser: Chooser
    max_depth: int = 2
    aliases: int = 0
    ctes: dict[str, list[str]] = field(default_factory=dict)

    def alias(self, prefix: str) -> str:
        self.aliases += 1
        return f"{prefix}{self.aliases}"

    # -- the statement -----------------------------------------------------------------------

    def statement(self) -> str:
        """A whole query: optional CTEs, a query, optional ORDER BY ... LIMIT ... OFFSET."""
        c = self.chooser
        prefix = ""
        if c.chance(0.2):
            name = self.alias("w")
            body = self.query(1)
            self.ctes[name] = body.kinds
            prefix = f"WITH {name} AS ({body.sql}) "
        main = self.query(0)
        suffix = ""
        if c.chance(0.15):
            order = ", ".join(str(i + 1) for i in range(len(main.kinds)))
            suffix = f" ORDER BY {order} LIMIT {c.integer(0, 6)}"
            if c.chance(0.3):
                suffix += f" OFFSET {c.integer(1, 3)}"
        return prefix + main.sql + suffix

    def query(self, depth: int, kinds: list[str] | None = None) -> Query:
        """A SELECT, or a set operation of two (columns of ``kinds`` when given)."""
        if depth < self.max_depth and self.chooser.chance(0.15):
            left = self.select(depth + 1, kinds)
            right = self.select(depth + 1, left.kinds)
            operation = self.chooser.choice(SET_OPERATIONS)
            return Query(f"{left.sql} {operation} {right.sql}", left.kinds)
        return self.select(depth, kinds)

    # -- FROM ---------------------------------------------------------------------------------

    def relation(self, depth: int, bare: bool = False) -> Relation:
        """A table, derived table or CTE under a fresh alias; with ``bare`` (the first of a
        FROM, so never twice in one) maybe a table under its own name, which a subquery may
        then read under the same name (``nation`` in and around it)."""
        c = self.chooser
        kind = c.choice(["table", "table", "derived", "cte", "reshaped"] if depth < self.max_depth else ["table"])
        if kind == "reshaped":
            return c.choice([self.literal_rows, self.generated_rows, self.unpivoted, self.pivoted])()
        if kind == "cte" and self.ctes:
            name = c.choice(sorted(self.ctes))
            alias = self.alias("t")
            return Relation(f"{name} {alias}", [Column(f"{alias}.c{i}", k) for i, k in enumerate(self.ctes[name])])
        if kind == "derived":
            inner = self.query(depth + 1)
            alias = self.alias("d")
            return Relation(f"({inner.sql}) {alias}", [Column(f"{alias}.c{i}", k) for i, k in enumerate(inner.kinds)])
        table = c.choice(sorted(COLUMNS))
        if bare and c.chance(0.3):
            return Relation(table, [Column(f"{table}.{n}", k) for n, k in COLUMNS[table].items()])
        alias = self.alias("t")
        return Relation(f"{table} {alias}", [Column(f"{alias}.{n}", k) for n, k in COLUMNS[table].items()])

    # -- rows written in the query, generated, unpivoted and pivoted (issue 55) ---------------

    def named(self, sql: str, kinds: list[str], prefix: str = "r") -> Relation:
        """``sql`` (a derived table's body, outputs ``c0, c1, ...``) under a fresh alias."""
        alias = self.alias(prefix)
        return Relation(f"({sql}) {alias}", [Column(f"{alias}.c{i}", k) for i, k in enumerate(kinds)])

    def literal_rows(self) -> Relation:
        """A VALUES list of one to three rows (a number and a string): rows of no source."""
        c = self.chooser
        rows = ", ".join(f"({c.choice(LITERALS[NUM][:6])}, {c.choice(LITERALS[STR][:3])})"
                         for _ in range(c.integer(1, 3)))
        return self.named(f"SELECT * FROM VALUES {rows} AS v(c0, c1)", [NUM, STR], "v")

    def table_columns(self) -> tuple[str, str, list[Column]]:
        table = self.chooser.choice(sorted(COLUMNS))
        alias = self.alias("t")
        return table, alias, [Column(f"{alias}.{n}", k) for n, k in COLUMNS[table].items()]

    def generated_rows(self) -> Relation:
        """A table's rows, each exploded into the elements of an array built from its columns
        or of a string split at '#' (``Brand#13``): each with its input row's lineage."""
        c = self.chooser
        table, alias, columns = self.table_columns()
        key = c.choice(columns)
        strings = [x for x in columns if x.kind == STR]
        numbers = [x for x in columns if x.kind == NUM]
        if strings and c.chance(0.4):
            return self.named(f"SELECT {key.sql} AS c0, explode(split({c.choice(strings).sql}, '#')) AS c1 "
                              f"FROM {table} {alias}", [key.kind, STR], "g")
        pair = ", ".join(c.choice(numbers).sql for _ in range(2))
        view = c.choice([f"explode(array({pair})) g AS c1", f"OUTER explode(filter(array({pair}), x -> x > 3)) g AS c1",
                         f"posexplode(array({pair})) g AS p, c1"])
        return self.named(f"SELECT {key.sql} AS c0, c1 FROM {table} {alias} LATERAL VIEW {view}", [key.kind, NUM], "g")

    def unpivoted(self) -> Relation:
        """Two columns of a kind unpivoted into (name, value) rows, NULL values left out or not."""
        c = self.chooser
        table, alias, columns = self.table_columns()
        kind = c.choice([k for k in (NUM, STR) if sum(x.kind == k for x in columns) >= 2] or [None])
        if kind is None:
            return self.literal_rows()
        first, second = [x for x in columns if x.kind == kind][:2]
        key = c.choice(columns)
        nulls = c.choice(["", "INCLUDE NULLS "])
        body = (f"SELECT {key.sql} AS c0, CASE WHEN {self.comparison(columns)} THEN {first.sql} END AS a, "
                f"{second.sql} AS b FROM {table} {alias}")
        return self.named(f"SELECT * FROM ({body}) s UNPIVOT {nulls}(c2 FOR c1 IN (a, b))", [key.kind, STR, kind], "u")

    def pivoted(self) -> Relation:
        """A number summed per key and per value of a one-letter string column (o_orderstatus,
        l_returnflag), two of its values pivoted: a group's lineage."""
        c = self.chooser
        table = c.choice(["orders", "lineitem"])
        flag = "o_orderstatus" if table == "orders" else "l_returnflag"
        numbers = [n for n, k in COLUMNS[table].items() if k == NUM]
        key, value = c.choice(numbers), c.choice(numbers)
        first, second = c.choice([("A", "F"), ("F", "O"), ("N", "R"), ("O", "R")])
        function = c.choice(["sum", "max", "min"])
        body = f"SELECT {key} AS c0, {flag} AS flag, {value} AS v FROM {table}"
        relation = self.named(f"SELECT * FROM ({body}) s PIVOT ({function}(v) FOR flag IN ('{first}', '{second}'))",
                              [NUM, NUM, NUM], "p")
        alias = relation.sql.rsplit(" ", 1)[1]
        relation.columns[1:] = [Column(f"{alias}.{first}", NUM), Column(f"{alias}.{second}", NUM)]
        return relation

    def from_clause(self, depth: int) -> tuple[str, list[Column]]:
        c = self.chooser
        first = self.relation(depth, bare=True)
        text, columns = first.sql, list(first.columns)
        for _ in range(c.integer(0, 2)):
            other = self.relation(depth)
            join = c.choice(JOINS)
            if join == "CROSS JOIN":
                text += f" CROSS JOIN {other.sql}"
            else:
                text += f" {join} {other.sql} ON {self.join_condition(columns, other.columns)}"
            if "SEMI" not in join and "ANTI" not in join:
                columns += other.columns
        return text, columns

    def join_condition(self, left: list[Column], right: list[Column]) -> str:
        c = self.chooser
        pairs = [(a, b) for a in left for b in right if a.kind == b.kind and a.kind == NUM
                 and a.sql.split("_")[-1] == b.sql.split("_")[-1] and "_" in a.sql]  # o_custkey = c_custkey
        pairs = pairs or [(a, b) for a in left for b in right if a.kind == b.kind]
        if not pairs:
            return "TRUE"
        a, b = c.choice(pairs)
        condition = f"{a.sql} = {b.sql}"
        if c.chance(0.25):
            condition += f" AND {self.comparison(right)}"
        return condition

    # -- expressions and predicates ----------------------------------------------------------

    def comparison(self, columns: list[Column]) -> str:
        c = self.chooser
        column = c.choice(columns)
        if c.chance(0.1):
            return f"{column.sql} IS {c.choice(['NULL', 'NOT NULL'])}"
        if c.chance(0.1):
            values = ", ".join(c.choice(LITERALS[column.kind]) for _ in range(c.integer(1, 3)))
            return f"{column.sql} {c.choice(['IN', 'NOT IN'])} ({values})"
        same = [o for o in columns if o.kind == column.kind and o is not column]
        other = c.choice(same).sql if same and c.chance(0.3) else c.choice(LITERALS[column.kind])
        return f"{column.sql} {c.choice(COMPARISONS)} {other}"

    def predicate(self, columns: list[Column], depth: int) -> str:
        """A WHERE condition: comparisons, AND/OR/NOT, subqueries (correlated or not)."""
        c = self.chooser
        kind = c.choice(["compare", "compare", "and", "or", "not", "exists", "in", "scalar"])
        if kind == "and":
            return f"{self.predicate(columns, depth)} AND {self.predicate(columns, depth)}"
        if kind == "or":
            return f"({self.predicate(columns, depth)} OR {self.comparison(columns)})"
        if kind == "not":
            return f"NOT ({self.comparison(columns)})"
        if depth >= self.max_depth or kind == "compare":
            return self.comparison(columns)
        if kind == "exists":
            return f"{c.choice(['EXISTS', 'NOT EXISTS'])} ({self.subquery(columns, depth, None)})"
        column = c.choice(columns)
        if kind == "in":
            return f"{column.sql} {c.choice(['IN', 'NOT IN'])} ({self.subquery(columns, depth, column.kind)})"
        return f"{column.sql} {c.choice(COMPARISONS)} ({self.scalar_subquery(columns, depth, column.kind)})"

    def subquery(self, outer: list[Column], depth: int, kind: str | None) -> str:
        """A one-column SELECT (of ``kind``; any when None), correlated with ``outer`` or not."""
        c = self.chooser
        relation = self.relation(self.max_depth, bare=True)
        candidates = [x for x in relation.columns if kind is None or x.kind == kind]
        if not candidates:
            return f"SELECT {c.choice(LITERALS[kind or NUM])} FROM {relation.sql}"
        column = c.choice(candidates)
        conditions = [self.comparison(relation.columns)] if c.chance(0.5) else []
        if c.chance(0.5):
            conditions.append(self.correlation(outer, relation.columns))
        where = f" WHERE {' AND '.join(conditions)}" if conditions else ""
        return f"SELECT {column.sql} FROM {relation.sql}{where}"

    def scalar_subquery(self, outer: list[Column], depth: int, kind: str) -> str:
        """An aggregate of one row, correlated with ``outer`` by an equality or not."""
        c = self.chooser
        relation = self.relation(self.max_depth, bare=True)
        candidates = [x for x in relation.columns if x.kind == kind]
        if not candidates:
            return f"SELECT {c.choice(LITERALS[kind])}"
        function = c.choice(["max", "min", "sum", "avg", "count"] if kind == NUM else ["max", "min"])
        where = f" WHERE {self.correlation(outer, relation.columns)}" if c.chance(0.5) else ""
        return f"SELECT {function}({c.choice(candidates).sql}) FROM {relation.sql}{where}"

    def correlation(self, outer: list[Column], inner: list[Column]) -> str:
        pairs = [(a, b) for a in outer for b in inner if a.kind == b.kind]
        if not pairs:
            return "TRUE"
        a, b = self.chooser.choice(pairs)
        return f"{b.sql} = {a.sql}"

    def value(self, columns: list[Column], kind: str | None = None) -> Column:
        """A SELECT-list value: a column, arithmetic, CASE, COALESCE or a literal."""
        c = self.chooser
        pool = [x for x in columns if kind is None or x.kind == kind]
        if not pool:
            k = kind or NUM
            return Column(f"CAST({c.choice(LITERALS[k])} AS {'string' if k == STR else k.replace('num', 'int')})"
                          if k != DATE else c.choice(LITERALS[DATE]), k)
        column = c.choice(pool)
        shape = c.choice(["column", "column", "arithmetic", "case", "coalesce"])
        if shape == "arithmetic" and column.kind == NUM:
            return Column(f"{column.sql} {c.choice(['+', '-', '*'])} {c.choice(['1', '2', '10'])}", NUM)
        if shape == "case":
            other = c.choice(LITERALS[column.kind])
            return Column(f"CASE WHEN {self.comparison(columns)} THEN {column.sql} ELSE {other} END", column.kind)
        if shape == "coalesce":
            return Column(f"COALESCE({column.sql}, {c.choice(LITERALS[column.kind])})", column.kind)
        return column

    # -- SELECT -------------------------------------------------------------------------------

    def select(self, depth: int, kinds: list[str] | None = None) -> Query:
        c = self.chooser
        source, columns = self.from_clause(depth)
        where = f" WHERE {self.predicate(columns, depth)}" if c.chance(0.5) else ""
        shape = c.choice(["project", "aggregate", "window"])
        if shape == "aggregate":
            return self.aggregate(depth, source, columns, where, kinds)
        values = [self.value(columns, k) for k in (kinds or [None] * c.integer(1, 3))]
        items = [v.sql for v in values]
        if shape == "window" and kinds is None:
            items.append(self.window(columns))
            values.append(Column("", NUM))
        if depth < self.max_depth and kinds is None and c.chance(0.15):
            items.append(f"({self.scalar_subquery(columns, depth, NUM)})")
            values.append(Column("", NUM))
        distinct = "DISTINCT " if c.chance(0.15) else ""
        listed = ", ".join(f"{item} AS c{i}" for i, item in enumerate(items))
        return Query(f"SELECT {distinct}{listed} FROM {source}{where}", [v.kind for v in values])

    def window(self, columns: list[Column]) -> str:
        c = self.chooser
        partition = c.choice(columns)
        order = c.choice(columns)
        function = c.choice(["rank()", "dense_rank()", "row_number()", "ntile(3)", "percent_rank()", "cume_dist()",
                             "count(*)", "sum({n})", "max({n})", "avg({n})", "first_value({n})", "lag({n})",
                             "lead({n}, 2)"])
        numbers = [x for x in columns if x.kind == NUM]
        if "{n}" in function:
            if not numbers:
                function = "count(*)"
            else:
                function = function.format(n=c.choice(numbers).sql)
        over = f"PARTITION BY {partition.sql}" if c.chance(0.8) else ""
        ranking = function.endswith(")") and function.split("(")[0] in ORDERED_WINDOW_FUNCTIONS
        if ranking or c.chance(0.6):
            # every column after the chosen one: rows that tie are alike, so the values the rows
            # get do not depend on which of them Spark takes first (ROW_NUMBER, LAG, ROWS frames)
            over += " ORDER BY " + ", ".join([order.sql] + [x.sql for x in columns if x is not order])
            if not ranking and c.chance(0.5):
                over += " " + c.choice(FRAMES)
        return f"{function} OVER ({over.strip()})"

    def aggregate(self, depth: int, source: str, columns: list[Column], where: str,
                  kinds: list[str] | None) -> Query:
        c = self.chooser
        wanted = kinds or [c.choice([NUM, STR, NUM])] + [NUM] * c.integer(0, 1)
        keys: list[Column] = []
        items: list[str] = []
        for kind in wanted:
            pool = [x for x in columns if x.kind == kind and x not in keys]
            if pool and c.chance(0.6):
                key = c.choice(pool)
                keys.append(key)
                items.append(key.sql)
            elif kind == NUM:
                numbers = [x for x in columns if x.kind == NUM]
                function = c.choice(["count(*)", "sum", "min", "max", "avg", "count(DISTINCT"])
                if function == "count(*)" or not numbers:
                    items.append("count(*)")
                else:
                    closing = ")"
                    items.append(f"{function}{'' if function.endswith('DISTINCT') else '('}"
                                 f"{' ' if function.endswith('DISTINCT') else ''}{c.choice(numbers).sql}{closing}")
            else:
                pool = [x for x in columns if x.kind == kind]
                items.append(f"{c.choice(['min', 'max'])}({c.choice(pool).sql})" if pool
                             else self.value([], kind).sql)
        group = ""
        if keys:
            listed = ", ".join(k.sql for k in keys)
            style = c.choice(["plain", "plain", "rollup", "cube", "sets"])
            if style == "rollup":
                group = f" GROUP BY ROLLUP({listed})"
            elif style == "cube":
                group = f" GROUP BY CUBE({listed})"
            elif style == "sets":
                group = f" GROUP BY GROUPING SETS (({listed}), ())"
            else:
                group = f" GROUP BY {listed}"
        having = ""
        if c.chance(0.3):
            numbers = [x for x in columns if x.kind == NUM]
            measure = f"sum({c.choice(numbers).sql})" if numbers and c.chance(0.5) else "count(*)"
            if depth < self.max_depth and c.chance(0.4):
                threshold = f"({self.scalar_subquery([], depth, NUM)})"
            else:
                threshold = c.choice(["0", "1", "2", "100"])
            having = f" HAVING {measure} {c.choice(['>', '>=', '<'])} {threshold}"
        distinct = "DISTINCT " if c.chance(0.1) else ""
        listed = ", ".join(f"{item} AS c{i}" for i, item in enumerate(items))
        return Query(f"SELECT {distinct}{listed} FROM {source}{where}{group}{having}", wanted)


def generate(seed: int) -> str:
    """The query of ``seed``."""
    return Generator(RandomChooser(seed)).statement()


def main() -> None:
    parser = argparse.ArgumentParser(description="print generated queries")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("-n", type=int, default=10)
    args = parser.parse_args()
    for seed in range(args.seed, args.seed + args.n):
        print(f"-- seed {seed}\n{generate(seed)};")


if __name__ == "__main__":
    main()
