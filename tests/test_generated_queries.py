"""Differential testing of valid queries (SQLancer's and SQLsmith's idea, applied to the rewriter).

Queries come from ``tests/query_generator.py`` through hypothesis (seeded, ``derandomize``;
a failure shrinks to a minimal query) and are checked by ``tests/differential.py``: for each
one whose plain form Spark runs, on a tiny slice of TPC-H, the lineage query gives the plain
query's rows as a bag or is refused in one line, the DuckDB completeness oracle holds on
sampled rows, and on every tenth query ``set``, ``bdd`` and ``auto`` give the same lineage.
``DLTRACE_GENERATED_QUERIES`` sets the number of queries (120 times ``DLTRACE_FUZZ_SCALE``
unless set); the counts by outcome are printed at the end of the run.  ``make fuzz`` runs
thousands more through ``python -m tests.fuzz_queries``.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from dltrace import LineageSession
from dltrace.spark import session_conf
from tests import differential
from tests.differential import OUTSIDE_THEOREM, TOO_LARGE, check, grand_total_below_top, tiny_tpch
from tests.oracle import DuckOracle
from tests.query_generator import Generator, HypothesisChooser

pytestmark = pytest.mark.spark

SCALE = float(os.environ.get("DLTRACE_FUZZ_SCALE", "1"))
# make test: 200 queries (about 25 minutes on 2 cores); make fuzz: 5,000 more (tests/fuzz_queries.py)
QUERIES = int(os.environ.get("DLTRACE_GENERATED_QUERIES", max(1, int(120 * SCALE))))
# the window over a UNION ALL derived table that Spark's optimizer rejected (RemoveRedundantAliases)
WINDOW_OVER_UNION_ALL = (
    "select c_custkey, c_name, row_number() over (partition by c_custkey order by c_custkey) as rn "
    "from (select c_custkey, c_name from customer where c_acctbal > 9000 "
    "union all select c_custkey, c_name from customer where c_nationkey = 7) u"
)

# queries the generator found failing, each kept as a test
FOUND = [
    # a CUBE's grand total sorts first over a subset of the rows: the oracle's LIMIT picked it
    "SELECT count(DISTINCT d9.c1) AS c0, t10.n_regionkey AS c1 FROM (SELECT CASE WHEN lineitem.l_orderkey = 0 "
    "THEN lineitem.l_orderkey ELSE 0 END AS c0, CASE WHEN lineitem.l_orderkey = 0 THEN lineitem.l_returnflag "
    "ELSE 'A' END AS c1 FROM lineitem JOIN lineitem t1 ON lineitem.l_orderkey = t1.l_orderkey AND t1.l_orderkey "
    "= t1.l_partkey JOIN customer t2 ON lineitem.l_orderkey = t2.c_custkey AND t2.c_custkey = 0 WHERE EXISTS "
    "(SELECT t3.c_custkey FROM customer t3 WHERE t3.c_custkey = 0)) d4 FULL JOIN (SELECT min(d8.c1) AS c0, "
    "max(d8.c2) AS c1 FROM (SELECT t5.s_nationkey AS c0, COALESCE(t6.o_orderstatus, 'Customer#000000004') AS c1, "
    "t7.l_extendedprice + 10 AS c2 FROM supplier t5 FULL JOIN orders t6 ON t5.s_nationkey = t6.o_totalprice "
    "FULL JOIN lineitem t7 ON t5.s_suppkey = t7.l_suppkey) d8) d9 ON d4.c0 = d9.c1 AND d9.c0 > 'O' FULL JOIN "
    "nation t10 ON d4.c1 = t10.n_name AND t10.n_name <= 'BUILDING' GROUP BY CUBE(t10.n_regionkey) "
    "ORDER BY 1, 2 LIMIT 1",
    # an ANTI JOIN written as NOT EXISTS beside customer read again under a HAVING: Spark's analyzer
    # lost c_custkey (MISSING_ATTRIBUTES); it is given the join back (seed 1310, cut down)
    "SELECT t1.p_retailprice AS c0 FROM part t1 JOIN supplier t2 ON t1.p_partkey = t2.s_acctbal LEFT ANTI JOIN "
    "customer t3 ON t1.p_retailprice = t3.c_custkey UNION ALL SELECT avg(customer.c_nationkey) AS c0 FROM customer "
    "WHERE customer.c_nationkey <= 25 HAVING sum(customer.c_custkey) > 2",
    # a WITH over EXCEPT was lost when EXCEPT became NOT EXISTS (seed 183)
    "WITH w1 AS (SELECT t2.ps_partkey AS c0, t2.ps_partkey AS c1, COALESCE(t2.ps_supplycost, 7) AS c2 FROM partsupp "
    "t2) SELECT t3.c_mktsegment AS c0, min(t3.c_acctbal) AS c1 FROM customer t3 LEFT ANTI JOIN w1 t4 ON t3.c_custkey "
    "= t4.c2 GROUP BY t3.c_mktsegment EXCEPT SELECT COALESCE(region.r_name, 'GERMANY') AS c0, region.r_regionkey AS "
    "c1 FROM region WHERE NOT (region.r_name >= 'Customer#000000004')",
    # DATE '...' written back as CAST('...' AS DATE), which Spark's optimizer fails on in a scalar
    # subquery of a CTE read twice (seed 162, cut down); the same query once failed in a rule (no FROM)
    "WITH w1 AS (SELECT t2.o_custkey AS c0 FROM orders t2 WHERE t2.o_orderdate <= (SELECT date '1996-12-31') "
    "GROUP BY t2.o_custkey) SELECT count(*) AS c1 FROM w1 t8 FULL JOIN w1 t9 ON t8.c0 = t9.c0",
    # the untagged oracle failed: the subquery's lineitem ids joined t1's rows in the re-run and
    # changed the window's NULL partition; checked in tree form instead (seed 856)
    "SELECT COALESCE(t1.l_quantity, 3) AS c0, t1.l_partkey AS c1, t1.l_quantity + 10 AS c2, rank() OVER (PARTITION "
    "BY nation.n_regionkey ORDER BY t1.l_quantity) AS c3, (SELECT avg(t2.l_suppkey) FROM lineitem t2) AS c4 FROM "
    "nation FULL JOIN lineitem t1 ON nation.n_regionkey = t1.l_suppkey AND t1.l_quantity <= t1.l_orderkey",
]
# seed 752: the inner grand total, re-run over DL(t), has a NULL sum and joins t's NULL group
GRAND_TOTAL_UNDER_AN_AGGREGATE = (
    "SELECT DISTINCT count(*) AS c0, d6.c0 AS c1 FROM (SELECT sum(d5.c2) AS c0, d5.c2 AS c1 FROM (SELECT t2.s_name "
    "AS c0 FROM part t1 LEFT JOIN supplier t2 ON t1.p_partkey = t2.s_suppkey WHERE NOT (t2.s_name IS NOT NULL) "
    "GROUP BY t2.s_name) d3 JOIN (SELECT lineitem.l_partkey AS c0, CASE WHEN lineitem.l_orderkey <= 25 THEN "
    "lineitem.l_partkey ELSE 1 END AS c1, CASE WHEN lineitem.l_linenumber < 10 THEN t4.s_acctbal ELSE 5000.5 END "
    "AS c2 FROM lineitem LEFT JOIN supplier t4 ON lineitem.l_suppkey = t4.s_suppkey) d5 ON TRUE GROUP BY GROUPING "
    "SETS ((d5.c2), ())) d6 LEFT ANTI JOIN region t7 ON d6.c1 = t7.r_regionkey AND t7.r_name IS NOT NULL "
    "GROUP BY ROLLUP(d6.c0)"
)


@pytest.fixture(scope="module")
def tiny(spark, tmp_path_factory) -> LineageSession:
    return tiny_tpch(tmp_path_factory.mktemp("tiny-tpch"), spark)


@pytest.fixture(scope="module")
def oracle(tiny: LineageSession) -> DuckOracle:
    return DuckOracle(tiny)


def test_window_over_union_all_derived_table(tiny, oracle) -> None:
    """The keep-the-latest-row-per-key idiom over a UNION ALL derived table is traced."""
    assert check(tiny, oracle, WINDOW_OVER_UNION_ALL.replace("9000", "5000").replace("= 7", "<= 7"),
                 representations=True) == "traced and checked"


@pytest.mark.parametrize("query", FOUND)
def test_found_by_the_generator(tiny, oracle, query) -> None:
    assert check(tiny, oracle, query) == "traced and checked"


def test_grand_total_under_an_aggregate_is_outside_the_theorem(tiny, oracle) -> None:
    """Seed 752: its rows and tree lineage are checked, completeness is not stated for it
    (docs/semantics.md), and the same shape without the inner grand total is complete."""
    assert check(tiny, oracle, GRAND_TOTAL_UNDER_AN_AGGREGATE) == OUTSIDE_THEOREM
    without = GRAND_TOTAL_UNDER_AN_AGGREGATE.replace("GROUPING SETS ((d5.c2), ())", "d5.c2")
    assert not grand_total_below_top(without)
    assert check(tiny, oracle, without) == "traced and checked"


def test_a_result_past_the_checked_size_is_counted_apart(tiny, oracle, monkeypatch) -> None:
    """Seed 2489's cross join of four slices has 9M rows; here 131 x 40 past a limit of 1,000."""
    monkeypatch.setattr(differential, "MOST_ROWS_CHECKED", 1_000)
    assert check(tiny, oracle, "SELECT o_orderkey, ps_partkey FROM orders CROSS JOIN partsupp") == TOO_LARGE
    assert check(tiny, oracle, "SELECT o_orderkey FROM orders") == "traced and checked"


def test_grand_totals_below_the_top_are_recognised() -> None:
    assert grand_total_below_top("SELECT s, count(*) FROM (SELECT sum(x) AS s FROM t GROUP BY ROLLUP(x)) d GROUP BY s")
    assert grand_total_below_top("SELECT s FROM (SELECT sum(x) AS s FROM t) d JOIN u ON d.s = u.y")
    assert not grand_total_below_top("SELECT sum(x) FROM t GROUP BY CUBE(x)")
    assert not grand_total_below_top("SELECT a FROM t WHERE a > (SELECT avg(x) FROM t)")
    assert not grand_total_below_top("SELECT a FROM t UNION ALL SELECT sum(x) FROM t GROUP BY GROUPING SETS ((x), ())")


@settings(max_examples=QUERIES, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                 HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_generated_queries(tiny, oracle, generated_outcomes, data) -> None:
    """Every generated valid query is traced with the plain query's rows, or refused in one line."""
    generator = Generator(HypothesisChooser(data))
    query = generator.statement()
    note(query)
    outcomes = generated_outcomes
    number = sum(outcomes.values())
    with session_conf(tiny.spark, {"spark.sql.shuffle.partitions": "1"}):
        try:
            outcome = check(tiny, oracle, query, representations=number % 10 == 0)
        except BaseException:
            outcomes["failures"] += 1
            raise
    outcomes[outcome] += 1



@pytest.mark.heavy
def test_fuzz_command_counts_its_queries() -> None:
    """``make fuzz``'s runner, as it runs there (its own process and Spark), at three queries."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    done = subprocess.run([sys.executable, "-m", "tests.fuzz_queries", "--queries", "3", "--jobs", "1"],
                          cwd=root, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr[-2000:]
    assert done.stdout.startswith("generated queries: 3 (traced and checked"), done.stdout
    assert "3/3 queries" in done.stderr
