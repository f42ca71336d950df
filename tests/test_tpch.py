"""TPC-H SF 0.01: all 22 queries and the paper's SPJ queries S1-S8 with lineage.

* completeness under control semantics, in the paper's tree definition (each table
  occurrence a relation of its own): the original query on DL(t) gives exactly {t};
* the lineage users get (ids shared by all occurrences of a table) is the tree lineage
  with the occurrence tags removed, and data lineage is contained in control lineage;
* minimality on SPJ queries; lineage never adds or drops rows.
"""

from __future__ import annotations

import pytest

from tests.oracle import DuckOracle, check_completeness, check_exact_lineage, check_minimality, lineage_bag
from tpch.queries import SPJ, TPCH, load


@pytest.fixture(scope="module")
def oracle(tpch) -> DuckOracle:
    return DuckOracle(tpch)


@pytest.fixture(scope="module")
def lineage_rows(tpch):
    """``lineage_rows(name)``: the query's rows with the lineage users get, run once per module."""
    rows: dict[str, list] = {}

    def of(name: str) -> list:
        if name not in rows:
            rows[name] = tpch.sql(load(name)).collect()
        return rows[name]

    return of


@pytest.mark.parametrize("name", TPCH + SPJ)
def test_completeness(tpch, oracle, lineage_rows, name):
    query = load(name)
    tree = tpch.sql(query, tag_instances=True).collect()
    if not tree:
        pytest.fail(f"{name} returns no rows at SF 0.01: pick other parameters for the test")
    assert len(tree) == tpch.sql(query, lineage=False).count(), "lineage must not add or drop rows"
    check_completeness(oracle, query, tree, tree=True, most=6, instances=True)
    graph = lineage_rows(name)
    assert lineage_bag(graph) == lineage_bag(tree, strip=True), "graph lineage = tree lineage without tags"
    data = lineage_bag(tpch.sql(query, semantics="data").collect())
    control = lineage_bag(graph)
    for (values, dl), _count in data.items():
        assert any(v == values and dl <= c for v, c in control), (
            f"data lineage of {values} not within its control lineage"
        )


@pytest.mark.parametrize("name", ["s1", "s3", "s6"])
def test_minimality(oracle, lineage_rows, name):
    check_minimality(oracle, load(name), lineage_rows(name), most=3)


def test_oracle_catches_missing_ids(oracle, lineage_rows):
    """The oracle must be able to fail: Q6's single row without one lineitem id is not t."""
    query = load("q6")
    (row,) = lineage_rows("q6")
    values = tuple(v for k, v in row.asDict().items() if k != "DL")
    (again,) = oracle.run(query, row.DL[1:])
    assert again != values


def test_ids_are_chronological(tpch):
    """Lineitem ids follow l_shipdate (the paper's choice, which clusters lineage)."""
    rows = tpch.run("select l_shipdate, _dl_id from lineitem order by _dl_id").collect()
    dates = [r.l_shipdate for r in rows]
    assert dates == sorted(dates)
    assert [r._dl_id & ((1 << 48) - 1) for r in rows] == list(range(len(rows)))


def test_comma_joins_keep_spark_runtime_filters(tpch):
    """Spark injects runtime Bloom filters only into inner joins; the lineage query of a comma
    join must get them as the user's query does (sqlglot reads a comma as CROSS JOIN)."""
    spark = tpch.spark
    # as at scale: lineitem too large to broadcast orders against, and worth a Bloom filter
    thresholds = {"spark.sql.autoBroadcastJoinThreshold": "-1",
                  "spark.sql.optimizer.runtime.bloomFilter.applicationSideScanSizeThreshold": "1KB",
                  "spark.sql.optimizer.runtime.bloomFilter.creationSideThreshold": "100MB"}
    before = {key: spark.conf.get(key) for key in thresholds}
    try:
        for key, value in thresholds.items():
            spark.conf.set(key, value)
        query = load("s1")
        user_plan = tpch.run(query)._jdf.queryExecution().optimizedPlan().toString()
        assert "might_contain" in user_plan, "Spark did not filter the plain comma join (test thresholds too high?)"
        for frame in (tpch.sql(query, lineage=False), tpch.sql(query)):
            plan = frame._jdf.queryExecution().optimizedPlan().toString()
            assert "Cross" not in plan and "might_contain" in plan
    finally:
        for key, value in before.items():
            spark.conf.set(key, value)


# every TPC-H query with no subquery but in FROM (the ones Perm's rewriting covers), and S1-S8
EXACT = ["q1", "q3", "q5", "q6", "q7", "q8", "q9", "q10", "q12", "q14", "q19", *SPJ]


@pytest.mark.parametrize("name", EXACT)
def test_lineage_is_exactly_the_contributing_rows(tpch, oracle, lineage_rows, name):
    """Without subqueries, DL(t) is the set of all base rows that make t (Definition 1):
    DuckDB finds them with Perm's provenance query, independently of the rewriter."""
    check_exact_lineage(oracle, tpch, load(name), lineage_rows(name))


def test_exact_oracle_catches_a_stray_id(tpch, oracle, lineage_rows):
    """The exactness oracle must be able to fail: one extra id in one DL is caught (an extra
    row that joins with nothing would slip past the completeness oracle)."""
    from pyspark.sql import Row

    query = load("s1")
    rows = lineage_rows("s1")
    stray = next(i for i in rows[-1].DL if i not in rows[0].DL)
    changed = [Row(**{**rows[0].asDict(), "DL": sorted([*rows[0].DL, stray])}), *rows[1:]]
    with pytest.raises(AssertionError, match="exact lineage"):
        check_exact_lineage(oracle, tpch, query, changed)


# each speed-up of lineage copies, on a query it changes (the golden SQL shows where); a
# rule that another speed-up takes the place of on that query is compared with that one off
SPEED_UPS = [("semi_join_reduction", "q17", ()), ("grouped_value_join", "q20", ()), ("grouped_value_join", "q17", ()),
             ("grouped_value_join", "q2", ()), ("hoist_uncorrelated_copies", "q11", ()),
             ("mark_subsuming_copies", "q11", ()), ("surviving_groups", "q18", ()),
             ("inequality_split", "q21", ("exists_join",)), ("exists_join", "q21", ()), ("exists_join", "q4", ()),
             ("ungrouped_copies", "q15", ()), ("distinct_count", "q16", ())]


@pytest.mark.parametrize("rule, name, off", SPEED_UPS)
def test_a_speed_up_changes_how_lineage_is_computed_not_what_it_is(tpch, lineage_rows, rule, name, off):
    """Rewritten without the rule (``rewriter.without``), through the session's own path to
    the rewriter, the query gives every row the same lineage."""
    from dltrace.engine import rewrite_over_catalog
    from dltrace.rewriter import parse, without

    query = load(name)

    def rewritten(*rules: str) -> str:
        return rewrite_over_catalog(parse(query), tpch.catalog.tables, tpch.schemas({}), {},
                                    rules=without(*rules)).sql(dialect="spark")

    slower = rewritten(rule, *off)
    faster = rewritten(*off) if off else tpch.rewrite(query)
    assert slower != faster, f"{rule} does not change {name}: pick another query"
    assert lineage_bag(tpch.run(slower).collect()) == lineage_bag(lineage_rows(name))
