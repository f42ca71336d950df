"""LINEAGE ON (variable-granularity lineage): the clause, granule ids, decoding, errors.

The oracle is DuckDB on the catalog's Parquet: for an aggregate query, each output row's
granules must be exactly the distinct L values of the base rows it aggregates (the
query's FROM and WHERE, grouped by its keys), decoded through the granule dictionary.
"""

from __future__ import annotations

import json
from collections import defaultdict

import duckdb
import pytest
import sqlglot

from dltrace import BadInput, LineageSession
from dltrace.cli import main
from dltrace.errors import SqlSyntaxError, UnknownColumn
from dltrace.formatting import lineage_ids
from dltrace.granularity import split_lineage_on
from dltrace.rewriter.representation import REPRESENTATIONS
from tpch.duck import connect
from tpch.queries import load

SHIP_WEEKS = ["year(l_shipdate)", "weekofyear(l_shipdate)", "l_shipmode"]
PAPER_QUERY = (
    "SELECT s_name, sum(price * num) AS total FROM store s, sales t, item i "
    "WHERE s.s_id = t.s_id AND i.i_id = t.i_id GROUP BY s_name"
)


@pytest.fixture(scope="module")
def paper_duck(paper) -> duckdb.DuckDBPyConnection:
    return duck(paper)


@pytest.fixture(scope="module")
def tpch_duck(tpch) -> duckdb.DuckDBPyConnection:
    return duck(tpch)


def duck(session: LineageSession) -> duckdb.DuckDBPyConnection:
    """The catalog's tables as DuckDB views over their Parquet (no dltrace code)."""
    db = connect()
    for name in session.catalog.tables:
        db.execute(f"CREATE VIEW {name} AS SELECT * FROM read_parquet('{session.catalog.data_path(name)}/*.parquet')")
    return db


def expected_granules(db, query: str, keys: list[str], lineage_on: list[str]) -> dict[tuple, set[tuple]]:
    """Per group (values of ``keys``): the distinct values of each table's L expressions
    among the rows the group aggregates.  ``lineage_on`` lists, per table, its expressions
    separated by ``;`` (e.g. ``["s.city", "i.category"]``)."""
    granules: dict[tuple, set[tuple]] = defaultdict(set)
    for table_expressions in lineage_on:
        select = sqlglot.parse_one(query, read="spark")
        for clause in ("group", "order", "having"):
            select.set(clause, None)
        select.set("expressions", [sqlglot.parse_one(e, read="spark") for e in keys + table_expressions.split(";")])
        for row in db.execute(select.sql(dialect="duckdb")).fetchall():
            granules[row[: len(keys)]].add(row[len(keys) :])
    return dict(granules)


def traced_granules(
    session, query: str, keys: list[str], lineage_on: list[str], semantics: str = "control"
) -> dict[tuple, set[tuple]]:
    """Per output row (values of ``keys``): its decoded granules, as value tuples."""
    granules = {}
    for row in session.sql(query, semantics=semantics, lineage_on=lineage_on).collect():
        decoded = session.decode_granules(row.DL, query, lineage_on)
        assert len(decoded) == len(row.DL), "one decoded entry per granule id"
        granules[tuple(row[k] for k in keys)] = {tuple(g.values()) for g in decoded}
    return granules


# -- the clause ---------------------------------------------------------------------------


def test_clause_is_cut_outside_strings_and_comments():
    query, lineage_on = split_lineage_on(
        "SELECT 'LINEAGE ON (a)' AS s /* LINEAGE ON (b) */ FROM t\nLINEAGE ON (c, f(d, e)) ;"
    )
    assert query == "SELECT 'LINEAGE ON (a)' AS s /* LINEAGE ON (b) */ FROM t"
    assert [e.sql() for e in lineage_on] == ["c", "F(d, e)"]
    assert split_lineage_on("SELECT * FROM a JOIN lineage ON (a.x = lineage.x)")[1] is None
    assert split_lineage_on("SELECT x FROM t", "a, b")[1] is not None
    assert split_lineage_on("SELECT x FROM t lineage on ()") == ("SELECT x FROM t", ())
    assert split_lineage_on("SELECT x FROM t", []) == ("SELECT x FROM t", ())


@pytest.mark.parametrize(
    "query, lineage_on, error, message",
    [
        ("SELECT x FROM t LINEAGE ON (x) ORDER BY x", None, SqlSyntaxError, "must end the query"),
        ("SELECT x FROM t LINEAGE ON (x)", "x", BadInput, "given twice"),
        ("SELECT x FROM t LINEAGE ON (x +)", None, SqlSyntaxError, "cannot parse LINEAGE ON"),
        ("SELECT x FROM t", ["a, b"], BadInput, "not one expression"),
    ],
)
def test_clause_errors(query, lineage_on, error, message):
    with pytest.raises(error, match=message):
        split_lineage_on(query, lineage_on)


# -- semantics on the paper's tables ------------------------------------------------------


def test_two_table_lineage_on_matches_duckdb(paper, paper_duck):
    """Each store's granules: the cities and the item categories of its sales, one
    table's expressions each; sales provides nothing."""
    lineage_on = ["s.city", "i.category"]
    traced = traced_granules(paper, PAPER_QUERY, ["s_name"], lineage_on)
    assert traced == expected_granules(paper_duck, PAPER_QUERY, ["s_name"], lineage_on)
    assert traced[("Target",)] == {("Palo Alto",), ("Albany",), ("stationery",), ("clothing",)}


def test_same_values_in_different_tables_are_different_granules(paper):
    """store.s_id = 1 and item.i_id = 1 hash with their table's tag: distinct ids."""
    (row,) = paper.sql(
        "SELECT count(*) AS n FROM store, item WHERE s_id = i_id", lineage_on="store.s_id, item.i_id"
    ).collect()
    assert row.n == 4 and len(row.DL) == 8 == len(set(row.DL))


def test_self_join_occurrences_share_granules(paper):
    query = "SELECT a.s_id AS a_id, b.s_id AS b_id FROM store a, store b WHERE a.state = b.state AND a.s_id < b.s_id"
    rows = paper.sql(query + " LINEAGE ON (city)").collect()
    cities = {r.s_id: r.city for r in paper.sql("SELECT s_id, city FROM store", lineage=False).collect()}
    assert len(rows) == 2
    for row in rows:
        decoded = {g["city"] for g in paper.decode_granules(row.DL, query + " LINEAGE ON (city)")}
        assert decoded == {cities[row.a_id], cities[row.b_id]}
    (alone,) = paper.sql("SELECT s_id FROM store WHERE s_id = 1 LINEAGE ON (city)").collect()
    assert set(alone.DL) <= {g for r in rows for g in r.DL}, "the same city is the same granule in every occurrence"


def test_empty_lineage_on_runs_the_plain_query(paper):
    frame = paper.sql(PAPER_QUERY + " LINEAGE ON ()")
    assert frame.columns == ["s_name", "total"]
    assert sorted(frame.collect()) == sorted(paper.sql(PAPER_QUERY, lineage=False).collect())
    assert paper.rewrite(PAPER_QUERY, lineage_on=[]) == paper.plain(PAPER_QUERY)


def test_nulls_in_different_positions_are_different_granules(spark, tmp_path):
    """Spark's hash skips NULLs; the NULL flags keep (NULL, 'x') and ('x', NULL) apart."""
    source = tmp_path / "pairs.csv"
    source.write_text("k,a,b\n1,,x\n2,x,\n3,x,\n")
    session = LineageSession(tmp_path / "catalog", spark=spark)
    session.register("pairs", source, key=["k"])
    query = "SELECT k FROM pairs ORDER BY k LINEAGE ON (a, b)"
    first, second, third = session.sql(query).collect()
    assert first.DL != second.DL and second.DL == third.DL
    assert session.decode_granules(first.DL, query) == [{"a": None, "b": "x"}]


@pytest.mark.parametrize("representation", sorted(set(REPRESENTATIONS) - {"set"}))
def test_every_representation_gives_the_same_granules(paper, representation):
    """Granule ids are plain bigints (negative ones too): no representation needs more."""
    def lineage(repr_: str) -> list:
        rows = paper.sql(PAPER_QUERY, representation=repr_, lineage_on="s.city, i.category").collect()
        decoded = [paper.decode_granules(row.DL, PAPER_QUERY, "s.city, i.category") for row in rows]
        return sorted((row.s_name, lineage_ids(row.DL), str(values)) for row, values in zip(rows, decoded))

    assert lineage(representation) == lineage("set")


@pytest.mark.parametrize(
    "lineage_on, error, message",
    [
        ("s.nope", UnknownColumn, "no table the query reads has a column 's.nope'"),
        ("o_orderdate", UnknownColumn, "no table the query reads"),
        ("x.city", UnknownColumn, "'x' is not a table or alias"),
        ("s_id", UnknownColumn, "in sales and store: qualify it"),
        ("sum(price)", BadInput, "aggregate functions are not allowed"),
        ("rank() OVER (ORDER BY price)", BadInput, "window functions are not allowed"),
        ("(SELECT max(price) FROM sales)", BadInput, "subqueries are not allowed"),
        ("concat(s.city, i.category)", BadInput, "mixes columns of item and store"),
        ("42", BadInput, "uses no column"),
    ],
)
def test_bad_lineage_on(paper, lineage_on, error, message):
    with pytest.raises(error, match=message):
        paper.rewrite(PAPER_QUERY, lineage_on=lineage_on)


# -- TPC-H SF 0.01 ------------------------------------------------------------------------


def test_q6_granules_are_the_distinct_ship_weeks(tpch, tpch_duck):
    query = load("q6")
    traced = traced_granules(tpch, query, [], SHIP_WEEKS)
    expected = expected_granules(tpch_duck, query, [], [";".join(SHIP_WEEKS)])
    assert traced == expected and 300 < len(traced[()]) <= 7 * 53


def test_q5_granules_per_nation(tpch, tpch_duck):
    """Six tables joined, only lineitem provides L: per nation, its lineitems' ship weeks."""
    query = load("q5")
    traced = traced_granules(tpch, query, ["n_name"], SHIP_WEEKS)
    assert len(traced) == 5
    assert traced == expected_granules(tpch_duck, query, ["n_name"], [";".join(SHIP_WEEKS)])


def test_q15_control_and_data_semantics(tpch, tpch_duck):
    """Control: every lineitem the max(total_revenue) subquery read (the whole quarter);
    data: the top supplier's lineitems of the quarter only."""
    query = load("q15")
    quarter = (
        "SELECT DISTINCT year(l_shipdate), weekofyear(l_shipdate), l_shipmode FROM lineitem "
        "WHERE l_shipdate >= DATE '1996-01-01' AND l_shipdate < DATE '1996-04-01'"
    )
    (control,) = traced_granules(tpch, query, ["s_suppkey"], SHIP_WEEKS).items()
    (data,) = traced_granules(tpch, query, ["s_suppkey"], SHIP_WEEKS, semantics="data").items()
    assert control[1] == set(tpch_duck.execute(quarter).fetchall())
    assert data[1] == set(tpch_duck.execute(quarter + f" AND l_suppkey = {data[0][0]}").fetchall())
    assert data[1] < control[1]


# -- command line -------------------------------------------------------------------------


def test_cli_json_has_decoded_values(capsys, paper):
    code = main(
        [
            "sql",
            PAPER_QUERY,
            "--catalog",
            str(paper.catalog.directory),
            "--format",
            "json",
            "--lineage-on",
            "i.category AS cat",
        ]
    )
    out, _ = capsys.readouterr()
    assert code == 0
    rows = {r["s_name"]: r for r in map(json.loads, out.splitlines())}
    for row in rows.values():
        assert row["DL"] == sorted(row["DL"]) and len(row["DL_values"]) == len(row["DL"])
        assert row["DL_values"] == paper.decode_granules(row["DL"], PAPER_QUERY, ["i.category AS cat"])
    assert {g["cat"] for g in rows["Macy's"]["DL_values"]} == {"clothing", "kitchenware"}


def test_cli_table_rewrite_and_errors(capsys, paper):
    catalog = str(paper.catalog.directory)
    assert main(["sql", PAPER_QUERY + " LINEAGE ON (i.category)", "--catalog", catalog]) == 0
    out, _ = capsys.readouterr()
    assert "('clothing') ('kitchenware')" in out
    assert main(["rewrite", PAPER_QUERY, "--lineage-on", "s.city", "--catalog", catalog]) == 0
    out, _ = capsys.readouterr()
    assert "XXHASH64('store(city)', s.city)" in out
    assert main(["sql", PAPER_QUERY, "--lineage-on", "nope", "--catalog", catalog]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.strip().splitlines()) == 1 and "nope" in err
