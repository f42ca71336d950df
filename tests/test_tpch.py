"""TPC-H SF 0.01: all 22 queries and the paper's SPJ queries S1-S8 with lineage.

* completeness under control semantics, in the paper's tree definition (each table
  occurrence a relation of its own): the original query on DL(t) gives exactly {t};
* the lineage users get (ids shared by all occurrences of a table) is the tree lineage
  with the occurrence tags removed, and data lineage is contained in control lineage;
* minimality on SPJ queries; lineage never adds or drops rows.
"""

from __future__ import annotations

import pytest

from tests.oracle import DuckOracle, check_completeness, check_minimality, lineage_bag
from tpch.queries import SPJ, TPCH, load


@pytest.fixture(scope="module")
def oracle(tpch) -> DuckOracle:
    return DuckOracle(tpch)


@pytest.mark.parametrize("name", TPCH + SPJ)
def test_completeness(tpch, oracle, name):
    query = load(name)
    tree = tpch.sql(query, tag_instances=True).collect()
    if not tree:
        pytest.fail(f"{name} returns no rows at SF 0.01: pick other parameters for the test")
    assert len(tree) == tpch.sql(query, lineage=False).count(), "lineage must not add or drop rows"
    check_completeness(oracle, query, tree, tree=True, most=6, instances=True)
    graph = tpch.sql(query).collect()
    assert lineage_bag(graph) == lineage_bag(tree, strip=True), "graph lineage = tree lineage without tags"
    data = lineage_bag(tpch.sql(query, semantics="data").collect())
    control = lineage_bag(graph)
    for (values, dl), count in data.items():
        assert any(v == values and dl <= c for v, c in control), f"data lineage of {values} not within its control lineage"


@pytest.mark.parametrize("name", ["s1", "s3", "s6"])
def test_minimality(tpch, oracle, name):
    query = load(name)
    check_minimality(oracle, query, tpch.sql(query).collect(), most=3)


def test_oracle_catches_missing_ids(tpch, oracle):
    """The oracle must be able to fail: Q6's single row without one lineitem id is not t."""
    query = load("q6")
    (row,) = tpch.sql(query).collect()
    values = tuple(v for k, v in row.asDict().items() if k != "DL")
    (again,) = oracle.run(query, row.DL[1:])
    assert again != values


def test_ids_are_chronological(tpch):
    """Lineitem ids follow l_shipdate (the paper's choice, which clusters lineage)."""
    rows = tpch.run("select l_shipdate, _dl_id from lineitem order by _dl_id").collect()
    dates = [r.l_shipdate for r in rows]
    assert dates == sorted(dates)
    assert [r._dl_id & ((1 << 48) - 1) for r in rows] == list(range(len(rows)))
