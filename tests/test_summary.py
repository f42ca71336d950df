"""Explaining large lineage (issue 17): pattern summaries and lineage as a relation.

* Oracle: a summary recovers a query's filter (TPC-H Q6), separates Q15's supplier from its
  three months of lineitems, and the recall and precision it reports are what DuckDB counts
  for its patterns over the catalog's Parquet;
* the lineage relation answers docs/summaries.md's two examples as DuckDB does over the saved
  rows' Parquet and the base tables' Parquet;
* bad input: one line, exit 2.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest

from dltrace.cli import main
from dltrace.results import ResultStore
from tpch.queries import load

README_EXAMPLES = {
    "q3": "SELECT _row, l_shipmode, count(*) AS lineitems FROM lineage_sum_q3_lineitem WHERE _row < 10 "
          "GROUP BY _row, l_shipmode ORDER BY _row, l_shipmode",
    "q5": "SELECT _row, base_table, count(*) AS base_rows FROM lineage_sum_q5 GROUP BY _row, base_table "
          "ORDER BY _row, base_table",
}


def test_the_examples_are_the_documented_ones():
    """The examples tested here are docs/summaries.md's, on results saved as q3 and q5 there."""
    readme = " ".join((Path(__file__).resolve().parent.parent / "docs" / "summaries.md").read_text().split())
    for sql in README_EXAMPLES.values():
        assert sql.replace("lineage_sum_", "lineage_") + ";" in readme


@pytest.fixture(scope="module")
def saved(tpch) -> dict[str, str]:
    """TPC-H queries saved with lineage, by query name -> result name."""
    names = {}
    for query in ("q3", "q5", "q6", "q15"):
        names[query] = f"sum_{query}"
        tpch.save(tpch.sql(load(query)), names[query])
    return names


def parquet(path) -> str:
    return f"read_parquet('{path}/*.parquet')"


def saved_rows(path) -> str:
    """A saved result's rows with ``_row``, the rank of ``_pos`` (docs/formats.md), as DuckDB reads them."""
    return f"(SELECT row_number() OVER (ORDER BY _pos) - 1 AS _row, * FROM {parquet(path)})"


def duck_recall_precision(tpch, result: str, table: str, predicate: str) -> tuple[float, float]:
    """Recall and precision of ``predicate`` for row 0's ids of ``table``, counted by DuckDB."""
    store = ResultStore(tpch.catalog)
    rows = saved_rows(store.path(store.get(result).data))
    base = parquet(tpch.catalog.data_path(table))
    lineage, matching, both = duckdb.connect().execute(
        f"WITH ids AS (SELECT unnest(DL) AS id FROM {rows} WHERE _row = 0), "
        f"t AS (SELECT _dl_id IN (SELECT id FROM ids) AS in_lineage, ({predicate}) AS matches FROM {base}) "
        f"SELECT count_if(in_lineage), count_if(matches), count_if(in_lineage AND matches) FROM t"
    ).fetchone()
    return both / lineage, both / matching


def test_q6_summary_recovers_the_filter(tpch, saved):
    summary = tpch.summarize(saved["q6"], 0, k=3)
    assert [t.table for t in summary.tables] == ["lineitem"]
    lineitem = summary.tables[0]
    top = lineitem.patterns[0]
    assert set(top.columns) == {"l_shipdate", "l_discount", "l_quantity"}
    assert top.recall >= 0.95 and top.precision >= 0.9
    recall, precision = duck_recall_precision(tpch, saved["q6"], "lineitem", top.predicate)
    assert (top.recall, top.precision) == pytest.approx((recall, precision))
    assert lineitem.exact and lineitem.sample == lineitem.lineage_rows == 1191


def test_q15_summary_separates_the_supplier_from_three_months_of_lineitems(tpch, saved):
    supplier_key = tpch.result(saved["q15"]).first()["s_suppkey"]
    summary = {t.table: t for t in tpch.summarize(saved["q15"], 0).tables}
    assert set(summary) == {"supplier", "lineitem"}
    assert summary["supplier"].lineage_rows == 1
    assert [p.predicate for p in summary["supplier"].patterns] == [f"s_suppkey = {supplier_key}"]
    [months] = summary["lineitem"].patterns
    assert months.predicate == "l_shipdate BETWEEN DATE '1996-01-01' AND DATE '1996-03-31'"
    assert months.recall == 1.0 and months.precision == 1.0 and summary["lineitem"].covered == 1.0


def test_a_pattern_on_the_key_is_shown_where_it_covers_the_same_rows(spark, tmp_path):
    """Issue 56: a row found by a value that happens to be unique (``lat``) is described by the
    table's key (``faa``); a pattern whose rows no key pattern covers exactly is kept."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from dltrace.session import LineageSession

    pq.write_table(pa.table({"faa": ["ANC", "BOS", "HNL", "JFK", "LAX", "OGG", "ORD", "SFO"],
                             "lat": [61.17, 42.36, 21.318681, 40.64, 33.94, 20.9, 41.98, 37.62],
                             "tz": [-9, -5, -10, -5, -8, -10, -6, -8]}), tmp_path / "airports.parquet")
    pq.write_table(pa.table({"id": list(range(1, 9)), "g": ["a", "b", "a", "b", "b", "c", "c", "c"],
                             "v": [5, 1, 9, 2, 7, 3, 8, 4]}), tmp_path / "things.parquet")
    session = LineageSession(tmp_path / "catalog", spark=spark)
    session.register("airports", tmp_path / "airports.parquet", key=["faa"], order_by=["faa"])
    session.register("things", tmp_path / "things.parquet", key=["id"], order_by=["id"])
    session.save(session.sql("select faa, tz from airports where lat between 21 and 22"), "hnl")
    session.save(session.sql("select count(*) as n from things where g = 'b'"), "bs")
    (honolulu,) = session.summarize("hnl", 0, 3).tables
    assert [(p.predicate, p.recall, p.table_rows) for p in honolulu.patterns] == [("faa = 'HNL'", 1.0, 1)]
    (things,) = session.summarize("bs", 0, 3).tables
    assert [(p.predicate, p.recall, p.precision) for p in things.patterns] == [("g = 'b'", 1.0, 1.0)]


def test_a_pattern_on_the_declared_key_is_shown_on_a_sampled_table(spark, tmp_path, monkeypatch):
    """Issue 56: on a table too large to summarize whole, a pattern is replaced by one on the
    declared key where Spark counts the same rows: the key of its one row, or the key's run."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from dltrace.session import LineageSession
    from dltrace.summary import summaries

    monkeypatch.setattr(summaries, "TABLE_SAMPLE", 20)
    codes = [f"K{i:03d}" for i in range(200)]
    pq.write_table(pa.table({"code": codes, "lat": [10.0 + i / 7 for i in range(200)],
                             "zone": [i % 3 for i in range(200)]}), tmp_path / "places.parquet")
    pq.write_table(pa.table({"id": list(range(1, 201)), "v": [3 * i + 1 for i in range(200)],
                             "g": ["a" if i % 2 else "b" for i in range(200)]}), tmp_path / "things.parquet")
    session = LineageSession(tmp_path / "catalog", spark=spark)
    session.register("places", tmp_path / "places.parquet", key=["code"], order_by=["code"])
    session.register("things", tmp_path / "things.parquet", key=["id"], order_by=["id"])
    session.save(session.sql("select code, zone from places where lat between 20 and 20.1"), "one_place")
    session.save(session.sql("select count(*) as n from things where v between 31 and 91"), "a_run")
    (place,) = session.summarize("one_place", 0, 1).tables
    assert place.table_sample < place.table_rows == 200
    assert [(p.predicate, p.table_rows) for p in place.patterns] == [("code = 'K070'", 1)]
    (things,) = session.summarize("a_run", 0, 1).tables
    assert [(p.predicate, p.table_rows) for p in things.patterns] == [("id BETWEEN 11 AND 31", 21)]


def test_a_sampled_summary_states_its_error(tpch, saved):
    """Learned on 300 of Q6's 1191 lineitem rows: estimates with intervals that hold the
    figures DuckDB counts over the whole lineage."""
    lineitem = tpch.summarize(saved["q6"], 0, k=2, sample=300).tables[0]
    assert lineitem.sample == 300 and not lineitem.exact
    top = lineitem.patterns[0]
    recall, precision = duck_recall_precision(tpch, saved["q6"], "lineitem", top.predicate)
    assert top.recall_interval[0] <= recall <= top.recall_interval[1]
    assert top.precision_interval[0] <= precision <= top.precision_interval[1]
    assert top.recall_interval[0] < top.recall_interval[1] and recall >= 0.95
    assert lineitem.covered_interval[0] <= lineitem.covered <= lineitem.covered_interval[1]


@pytest.mark.parametrize("enough", [100, 1000])
def test_large_tables_are_summarized_from_a_stored_table_sample(tpch, saved, monkeypatch, enough):
    """lineitem as a table larger than the table sample (20,000 of its 60,175 rows): the
    lineage sample is the lineage rows in the table sample (about 400, enough when 100
    are) or else fetched by id (all 1191); pattern counts come from one job over the table."""
    from dltrace.summary import summaries

    monkeypatch.setattr(summaries, "TABLE_SAMPLE", 20_000)
    monkeypatch.setattr(summaries, "ENOUGH_IN_TABLE_SAMPLE", enough)
    lineitem = tpch.summarize(saved["q6"], 0).tables[0]
    assert (tpch.catalog.directory / "samples" / "lineitem-v1-20000.parquet").is_dir()
    assert 18_000 < lineitem.table_sample < 22_000 and lineitem.table_rows == 60175
    top = lineitem.patterns[0]
    recall, precision = duck_recall_precision(tpch, saved["q6"], "lineitem", top.predicate)
    assert lineitem.lineage_rows == 1191 and top.table_rows == round(recall * 1191 / precision)
    if enough == 100:
        assert 300 < lineitem.sample < 500 and not lineitem.exact
        assert top.recall_interval[0] <= recall <= top.recall_interval[1]
        assert top.precision_interval[0] <= precision <= top.precision_interval[1]
    else:
        assert lineitem.exact and (top.recall, top.precision) == pytest.approx((recall, precision))
    assert set(top.columns) == {"l_shipdate", "l_discount", "l_quantity"}


def test_every_pattern_is_a_valid_impact_source(tpch, saved):
    """Patterns are SQL over the table's columns, so `impact --source "TABLE WHERE pattern"`
    takes them as they are and finds the summarized row."""
    table = tpch.summarize(saved["q3"], 0).tables[-1]
    hits = tpch.impact(f"{table.table} WHERE {table.patterns[0].predicate}", result=saved["q3"])
    assert 0 in {row["_row"] for row in hits.collect()}


def duck_answer(tpch, result: str, query: str) -> list[tuple]:
    """A documented example answered by DuckDB over the saved rows and the base tables' Parquet
    (the table of an id found by looking it up in each table, not from its code)."""
    store = ResultStore(tpch.catalog)
    saved = store.get(result)
    db = duckdb.connect()
    db.execute(f"CREATE VIEW pairs AS SELECT _row, unnest(DL) AS base_id FROM {saved_rows(store.path(saved.data))}")
    owners = " UNION ALL ".join(f"SELECT '{t}' AS base_table, _dl_id FROM {parquet(tpch.catalog.data_path(t))}"
                                for t in saved.tables)
    db.execute(f"CREATE VIEW lineage_{result} AS SELECT p._row, o.base_table, p.base_id FROM pairs p "
               f"JOIN ({owners}) o ON o._dl_id = p.base_id")
    for table in saved.tables:
        db.execute(f"CREATE VIEW lineage_{result}_{table} AS SELECT p._row, t.* FROM pairs p "
                   f"JOIN {parquet(tpch.catalog.data_path(table))} t ON t._dl_id = p.base_id")
    return [tuple(row) for row in db.execute(query).fetchall()]


@pytest.mark.parametrize("query", sorted(README_EXAMPLES))
def test_lineage_relation_answers_the_readme_examples(tpch, saved, query):
    result, sql = saved[query], README_EXAMPLES[query]
    assert tpch.lineage_views(result)[0] == f"lineage_{result}"
    ours = [tuple(row) for row in tpch.run(sql).collect()]
    assert ours == duck_answer(tpch, result, sql) and len(ours) >= 10


def test_lineage_script_is_plain_spark_sql(tpch, saved):
    """The script reads the Parquet files by path (as spark-sql would) and gives the same rows."""
    sql = README_EXAMPLES["q3"]
    statements = [s for s in tpch.lineage_script(saved["q3"], sql).split(";\n") if s.strip()]
    assert all("parquet.`" in s for s in statements if "__dl_" in s.split(" AS ")[0])
    for statement in statements[:-1]:
        tpch.spark.sql(statement)
    assert tpch.spark.sql(statements[-1]).collect() == tpch.run(sql).collect()


def cli(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_explain_summary_cli(capsys, tpch, saved):
    catalog = str(tpch.catalog.directory)
    code, out, _ = cli(capsys, "explain", "--result", saved["q15"], "--row", "0", "--summary", "--catalog", catalog)
    assert code == 0 and "l_shipdate BETWEEN DATE '1996-01-01' AND DATE '1996-03-31'" in out
    assert "together: 1 pattern(s) cover 100.0% of lineitem's lineage rows" in out
    code, out, _ = cli(capsys, "explain", "--result", saved["q6"], "--row", "0", "--summary", "--sample", "500",
                       "--format", "json", "--catalog", catalog)
    [lineitem] = [json.loads(line) for line in out.splitlines()]
    assert code == 0 and lineitem["table"] == "lineitem" and lineitem["sample"] == 500


def test_lineage_sql_cli(capsys, tpch, saved):
    catalog = str(tpch.catalog.directory)
    code, out, _ = cli(capsys, "lineage-sql", "--result", saved["q5"], README_EXAMPLES["q5"], "--catalog", catalog)
    assert code == 0 and out.startswith("-- dltrace") and out.rstrip().endswith("ORDER BY _row, base_table;")
    code, out, _ = cli(capsys, "lineage-sql", "--result", saved["q5"], README_EXAMPLES["q5"], "--run",
                       "--format", "json", "--catalog", catalog)
    rows = [json.loads(line) for line in out.splitlines()]
    assert code == 0 and [tuple(r.values()) for r in rows] == duck_answer(tpch, saved["q5"], README_EXAMPLES["q5"])


@pytest.fixture(scope="module")
def without_lineage(tpch) -> Iterator[dict[str, str]]:
    """A saved row with empty lineage, and a result whose metadata has no DL column."""
    tpch.save(tpch.sql("select count(*) as n from lineitem where l_quantity < 0"), "sum_empty")
    tpch.save(tpch.sql("select count(*) as n from region"), "sum_no_dl")
    store = ResultStore(tpch.catalog)
    file = store.directory / "sum_no_dl" / "result.json"
    metadata = json.loads(file.read_text())
    del metadata["schema"]["DL"]
    file.write_text(json.dumps(metadata))
    yield {"empty": "sum_empty", "no_dl": "sum_no_dl"}
    for name in ("sum_empty", "sum_no_dl"):  # the catalog is shared: leave no odd results behind
        tpch.drop_result(name)


@pytest.mark.parametrize("args, expected", [
    (["explain", "--result", "sum_q6", "--row", "0", "--summary", "--patterns", "0"], "--patterns must be 1 or more"),
    (["explain", "--result", "sum_q6", "--row", "0", "--summary", "--sample", "0"], "--sample must be 1 or more"),
    (["explain", "--result", "sum_q6", "--row", "1", "--summary"], "result sum_q6 has rows 0..0, not 1"),
    (["explain", "--result", "sum_q6", "--row", "-1", "--summary"], "result sum_q6 has rows 0..0, not -1"),
    (["explain", "--result", "sum_empty", "--row", "0", "--summary"], "row 0 of result sum_empty has no lineage"),
    (["explain", "--result", "sum_no_dl", "--row", "0", "--summary"], "result sum_no_dl has no lineage"),
    (["lineage-sql", "--result", "sum_no_dl"], "result sum_no_dl has no lineage"),
    (["lineage-sql", "--result", "sum_q6", "--run"], "lineage-sql --run needs a QUERY"),
    (["lineage-sql", "--result", "nothing_saved"], "no saved result 'nothing_saved'"),
])
def test_bad_input_is_one_line_exit_2(capsys, tpch, saved, without_lineage, args, expected):
    code, out, err = cli(capsys, *args, "--catalog", str(tpch.catalog.directory))
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2 and out == "" and len(lines) == 1 and expected in lines[0], err
