"""What a new user hit (issue 18): empty and headerless sources, dropping tables, damaged
catalogs, messages, Spark's own column names, plain queries as written, the packaging."""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path

import pytest
import tomllib
from packaging.specifiers import SpecifierSet

from dltrace import LineageSession
from dltrace.cli import main
from dltrace.demo import data_step
from dltrace.errors import BadInput
from dltrace.ids import make_id
from dltrace.impact.search import ImpactWarning
from tests.test_cli import cli, one_line

ROOT = Path(__file__).resolve().parent.parent
PAPER = Path(__file__).resolve().parent / "data" / "paper"
NATION_ROWS = ["00,ALGERIA,02,haggle carefully", "01,ARGENTINA,01,al foxes", "02,BRAZIL,01,y alongside"]


@pytest.fixture()
def catalog(paper, tmp_path) -> Path:
    """A copy of the paper's catalog (store, item, sales) without other tests' results, free to change."""
    target = tmp_path / "catalog"
    shutil.copytree(paper.catalog.directory, target, ignore=shutil.ignore_patterns("results", "indexes"))
    return target


# --- empty, headerless and columnless sources ------------------------------------------

def test_an_empty_file_is_refused_and_breaks_nothing(capsys, spark, catalog, tmp_path):
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    before = (catalog / "catalog.json").read_text()
    code, out, err = cli(capsys, "register", "nation_csv2", str(empty), "--catalog", str(catalog))
    assert code == 2 and out == "" and "has no columns" in one_line(err)
    assert (catalog / "catalog.json").read_text() == before
    code, out, _ = cli(
        capsys, "sql", "select s_name from store where s_id = 1", "--catalog", str(catalog), "--format", "json"
    )
    assert code == 0 and json.loads(out)["s_name"] == "Target"


def test_a_source_without_rows_is_a_table_with_its_schema(capsys, spark, catalog, tmp_path):
    header_only = tmp_path / "none.csv"
    header_only.write_text("n_id,n_name\n")
    code, out, err = cli(capsys, "register", "none", str(header_only), "--catalog", str(catalog))
    assert code == 0 and out.strip().endswith("0 rows, code 4, no ids"), out
    code, out, _ = cli(
        capsys, "sql", "select n_name, count(*) as n from none group by n_name", "--catalog", str(catalog)
    )
    assert code == 0 and "(0 rows)" in out
    code, out, _ = cli(capsys, "sql", "select count(*) as n from store", "--catalog", str(catalog), "--format", "json")
    assert code == 0 and json.loads(out)["n"] == 4


def test_a_columnless_table_of_an_older_dltrace_breaks_no_other_query(capsys, catalog):
    data = json.loads((catalog / "catalog.json").read_text())
    entry = {**data["tables"]["store"], "code": 9, "schema": {}, "rows": 0, "path": "tables/empty-v1.parquet"}
    data["tables"]["empty"] = entry
    (catalog / "catalog.json").write_text(json.dumps(data))
    code, out, _ = cli(capsys, "rewrite", "select s_name from store", "--catalog", str(catalog))
    assert code == 0 and "s_name" in out
    code, _, err = cli(capsys, "rewrite", "select * from empty", "--catalog", str(catalog))
    assert code == 2 and "tables drop empty" in one_line(err)
    assert cli(capsys, "tables", "drop", "empty", "--catalog", str(catalog))[0] == 0
    assert "empty" not in json.loads((catalog / "catalog.json").read_text())["tables"]


@pytest.fixture()
def headerless(tmp_path) -> Path:
    path = tmp_path / "nation.csv"
    path.write_text("\n".join(NATION_ROWS) + "\n")
    return path


def test_a_headerless_csv_is_refused_by_default(capsys, spark, tmp_path, headerless):
    code, _, err = cli(capsys, "register", "nation", str(headerless), "--catalog", str(tmp_path / "c"))
    assert code == 2 and "--no-header" in one_line(err) and "00, 02" in err
    assert not (tmp_path / "c" / "catalog.json").exists()


def test_header_is_an_explicit_option(capsys, spark, tmp_path, headerless):
    catalog = str(tmp_path / "c")
    assert cli(capsys, "register", "nation", str(headerless), "--no-header", "--catalog", catalog)[0] == 0
    code, out, _ = cli(capsys, "sql", "select _c1 from nation order by _c0", "--catalog", catalog, "--format", "csv")
    assert code == 0 and [line.split(",")[0] for line in out.splitlines()[1:]] == ["ALGERIA", "ARGENTINA", "BRAZIL"]
    assert cli(capsys, "register", "named", str(headerless), "--header", "--catalog", catalog)[0] == 0
    entry = json.loads((tmp_path / "c" / "catalog.json").read_text())["tables"]["named"]
    assert entry["rows"] == 2 and list(entry["schema"])[:2] == ["00", "ALGERIA"]
    code, _, err = cli(capsys, "register", "store", str(PAPER / "store.csv"), "--format", "json", "--no-header",
                       "--catalog", catalog)
    assert code == 2 and "apply to CSV sources" in one_line(err)


def test_a_headerless_csv_is_refused_quoting_its_first_row(capsys, spark, tmp_path):
    """Issue 40: Spark renames a header's repeated names (1, 1 as 11, 12); the message quotes
    the first row as the file holds it."""
    flights = tmp_path / "flights.csv"
    flights.write_text("2013,1,1,517,515,2,830,819,11,UA,1545,N14228,EWR,IAH,227,1400,5,15,2013-01-01 05:00:00\n"
                       "2013,1,1,533,529,4,850,830,20,UA,1714,N24211,LGA,IAH,227,1416,5,29,2013-01-01 05:00:00\n")
    short = tmp_path / "short.csv"  # no value like a renamed one: Spark reads names 2013, 11, 12, ...
    short.write_text("2013,1,1,517,515,UA,EWR\n2013,1,1,533,529,UA,LGA\n")
    for path in (flights, short):
        code, _, err = cli(capsys, "register", "flights", str(path), "--catalog", str(tmp_path / "c"))
        assert code == 2 and "looks like data, not column names (2013, 1, 1):" in one_line(err), err
    assert not (tmp_path / "c" / "catalog.json").exists()

# --- tables list / drop -------------------------------------------------------------------

def test_tables_list_and_drop(capsys, spark, catalog):
    c = str(catalog)
    code, out, _ = cli(capsys, "tables", "--catalog", c)
    assert code == 0 and [line.split()[0] for line in out.splitlines()[2:5]] == ["item", "sales", "store"]
    assert f"(3 tables in catalog {catalog.resolve()})" in out
    assert cli(capsys, "sql", "select s_name from store", "--save", "names", "--catalog", c)[0] == 0
    code, _, err = cli(capsys, "tables", "drop", "store", "--catalog", c)
    assert code == 2 and "saved results names read table store" in one_line(err)
    assert (catalog / "tables" / "store-v1.parquet").exists()
    code, out, _ = cli(capsys, "tables", "drop", "store", "--force", "--catalog", c)
    assert code == 0 and out.startswith("dropped table store")
    assert not (catalog / "tables" / "store-v1.parquet").exists()
    assert not [p for p in (catalog / "tables").iterdir() if p.name.startswith(".")]
    code, _, err = cli(capsys, "tables", "drop", "store", "--catalog", c)
    assert code == 2 and "not registered" in one_line(err)
    # the dropped table's code is never given out again: saved lineage holds its ids
    assert cli(capsys, "register", "store2", str(PAPER / "store.csv"), "--catalog", c)[0] == 0
    data = json.loads((catalog / "catalog.json").read_text())
    assert data["tables"]["store2"]["code"] == 4 and data["retired_codes"] == [1]
    code, out, _ = cli(capsys, "tables", "--format", "json", "--catalog", c)
    assert code == 0 and {json.loads(line)["name"] for line in out.splitlines()} == {"item", "sales", "store2"}


# --- damaged metadata ---------------------------------------------------------------------

@pytest.mark.parametrize(
    "content, expected",
    [
        ("[]", "must hold a JSON object"),
        ('{"tables": []}', "tables must be a JSON object"),
        ('{"tables": {"t": {"code": 1}}}', "lacks the field 'path'"),
        ('{"tables": {"t": {"code": "1", "path": "p", "source": "s", "key": null, "order_by": null, "rows": 1, '
         '"schema": {"a": "int"}}}}', "tables.t.code has a wrong value"),
        ('{"version": "x"}', "version has a wrong value"),
        ('{"format": "new"}', "format has a wrong value"),
        ('{"tables": {"t": []}}', "tables.t must be a JSON object"),
    ],
)
def test_a_damaged_catalog_is_one_line(capsys, tmp_path, content, expected):
    (tmp_path / "catalog.json").write_text(content)
    code, out, err = cli(capsys, "rewrite", "select 1", "--catalog", str(tmp_path))
    assert code == 1 and out == "" and expected in one_line(err) and "is damaged" in err


def test_a_damaged_result_json_is_one_line(capsys, catalog):
    (catalog / "results" / "bad").mkdir(parents=True)
    (catalog / "results" / "bad" / "result.json").write_text('{"name": "bad", "rows": -1}')
    code, _, err = cli(capsys, "results", "--catalog", str(catalog))
    assert code == 1 and "result.json is damaged" in one_line(err)


# --- messages -----------------------------------------------------------------------------

@pytest.mark.parametrize(
    "query, expected",
    [
        ("select s_id from store, sales",
         "column 's_id' at line 1, column 11 is ambiguous: store and sales both have it"),
        ("select s_nam from store",
         "column 's_nam' at line 1, column 12 is unknown: no table of the query has it (did you mean s_name?)"),
        ("select x.s_id from store", "the query has no table or alias named x"),
    ],
)
def test_unknown_and_ambiguous_columns_are_told_apart(capsys, paper, query, expected):
    code, _, err = cli(capsys, "rewrite", query, "--catalog", str(paper.catalog.directory))
    assert code == 2 and expected in one_line(err)


def test_an_invalid_predicate_speaks_sql_not_sqlglot(capsys, paper):
    code, _, err = cli(capsys, "impact", "--source", "store WHERE s_id =", "--result", "none",
                       "--catalog", str(paper.catalog.directory))
    line = one_line(err)
    assert code == 2 and "the expression is incomplete (= needs a right-hand side)" in line
    assert "class" not in line and "Required keyword" not in line


def test_an_unknown_table_names_the_catalog_searched(capsys, tmp_path):
    code, _, err = cli(capsys, "sql", "select * from orders", "--catalog", str(tmp_path / "elsewhere"))
    assert code == 2 and f"not registered in catalog {(tmp_path / 'elsewhere').resolve()}" in one_line(err)


def test_the_api_warning_does_not_speak_of_options(paper):
    paper.save(paper.sql("select s_name from store"), "names_api")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ImpactWarning)
        assert paper.impact("store WHERE s_id = 99", result="names_api").count() == 0
    messages = [str(w.message) for w in caught if issubclass(w.category, ImpactWarning)]
    assert messages == ["no rows match the source 'store WHERE s_id = 99': nothing is affected"]
    paper.drop_result("names_api")


def test_table_footer_gives_the_total(capsys, paper):
    c = str(paper.catalog.directory)
    code, out, _ = cli(capsys, "sql", "select t_id from sales", "--limit", "0", "--catalog", c)
    assert code == 0 and out.splitlines()[-1] == "(0 of 11 rows: raise --limit to see more)"
    code, out, _ = cli(capsys, "sql", "select t_id from sales", "--limit", "11", "--catalog", c)
    assert code == 0 and out.splitlines()[-1] == "(11 rows)"


def test_usage_errors_are_one_line(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["sql"])
    assert exit_.value.code == 2 and "the following arguments are required: query" in one_line(capsys.readouterr().err)


# --- Spark's results, Spark's names -------------------------------------------------------

def test_unnamed_columns_keep_sparks_names(spark, paper):
    query = "select category, count(*), sum(num + 1) from item join sales using (i_id) group by category"
    frame = paper.sql(query)
    spark_names = paper.sql(query, lineage=False).columns
    assert spark_names == ["category", "count(1)", "sum((num + 1))"]
    assert frame.columns == [*spark_names, "DL"]
    assert {r["count(1)"] for r in frame.collect()} == {
        r["count(1)"] for r in paper.sql(query, lineage=False).collect()
    }
    saved = paper.save(frame, "spark_names")  # names with parentheses survive Parquet
    assert saved.columns == spark_names and paper.result("spark_names").columns == ["_row", *spark_names, "DL"]
    paper.drop_result("spark_names")


DISTINCT_ORDER = "select distinct (category) from item as i1 where i_id between 1 and 3 order by category"


def test_lineage_off_runs_the_query_as_written(capsys, spark, paper):
    """sqlglot qualifies the ORDER BY to ``i1.category``, which Spark rejects after DISTINCT."""
    rows = [r.category for r in paper.sql(DISTINCT_ORDER).collect()]  # with lineage it always worked
    assert rows == [r.category for r in spark.sql(DISTINCT_ORDER).collect()] == sorted(set(rows)) and rows
    assert [r.category for r in paper.sql(DISTINCT_ORDER, lineage=False).collect()] == rows
    assert [r.category for r in paper.sql(DISTINCT_ORDER, lineage_on=[]).collect()] == rows
    assert [r.category for r in paper.sql(DISTINCT_ORDER + " LINEAGE ON ()").collect()] == rows
    code, out, _ = cli(capsys, "sql", DISTINCT_ORDER, "--lineage-on", "", "--format", "csv",
                       "--catalog", str(paper.catalog.directory))
    assert code == 0 and out.splitlines() == ["category", *rows]
    # `*` still never shows the ids
    assert paper.sql("select * from item i", lineage=False).columns == ["i_id", "i_name", "category"]


# --- README and packaging details ---------------------------------------------------------

def test_the_demo_says_cached_only_when_it_is(tpch, tmp_path):
    assert data_step(0.01, ROOT / "data").startswith("using TPC-H SF 0.01 generated earlier")
    assert data_step(0.01, tmp_path).startswith("generating TPC-H SF 0.01")


def test_license_is_an_spdx_string_and_duckdb_is_pinned():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["license"] == "Apache-2.0"  # a TOML table makes pip warn it is deprecated
    duckdb = next(r for r in project["optional-dependencies"]["dev"] if r.startswith("duckdb"))
    assert "2.0.0" not in SpecifierSet(duckdb.removeprefix("duckdb")), "DuckDB 2.0.0 crashes on TPC-H joins"


def test_registration_message_gives_the_id_range(capsys, spark, tmp_path):
    code, out, _ = cli(capsys, "register", "store", str(PAPER / "store.csv"), "--catalog", str(tmp_path))
    assert code == 0 and out.strip() == f"registered store: 4 rows, code 1, ids {make_id(1, 0)}..{make_id(1, 3)}"


def test_api_refuses_header_for_other_formats(spark, tmp_path):
    (tmp_path / "t.json").write_text('{"a": 1}\n')
    with pytest.raises(BadInput, match="apply to CSV"):
        LineageSession(tmp_path / "c", spark=spark).register("t", tmp_path / "t.json", header=True)


def test_the_oracles_duckdb_answers_correlated_exists_with_two_inequalities():
    """DuckDB 1.x's deliminator answers this with no rows (tpch/duck.py)."""
    from tpch.duck import connect

    db = connect()
    db.execute("CREATE TABLE a AS SELECT 11 AS t, 4 AS k, 200 AS n")
    db.execute("CREATE TABLE b AS SELECT 10 AS t, 4 AS k, 1200 AS n")
    query = "SELECT t FROM a WHERE EXISTS (SELECT 1 FROM b WHERE b.k = a.k AND b.t <> a.t AND b.n > a.n)"
    assert db.execute(query).fetchall() == [(11,)]


def test_a_bug_in_dltrace_is_one_line_with_its_traceback_in_a_file(capsys, monkeypatch, tmp_path):
    """The front door never shows a stack trace, not even for dltrace's own bugs."""
    import dltrace.cli

    def broken(args):
        raise KeyError("a bug")

    monkeypatch.setattr(dltrace.cli, "run", broken)
    code, _, err = cli(capsys, "tables", "--catalog", str(tmp_path / "c"))
    line = one_line(err)
    assert code == 1
    assert line.startswith("dltrace: error: internal error (a bug in dltrace, please report it): KeyError")
    traceback_file = Path(line.rsplit("traceback in ", 1)[1])
    assert "raise KeyError" in traceback_file.read_text()
    traceback_file.unlink()


def test_spark_out_of_memory_is_one_line_saying_what_to_do(tmp_path, monkeypatch):
    """A task out of memory stops local Spark's whole JVM: Python sees the connection go, and
    the reason is only in the JVM's log (read once the JVM is found gone: here it is made so,
    whatever JVM this test process runs)."""
    from py4j.protocol import Py4JNetworkError

    from dltrace import errors
    from dltrace.errors import unexpected_error

    monkeypatch.setattr(errors, "jvm_alive", lambda: False)

    log = tmp_path / "spark.log"
    log.write_text("ERROR Executor: Exception in task 0.0\njava.lang.OutOfMemoryError: Java heap space\n")
    gone = unexpected_error(Py4JNetworkError("Answer from Java side is empty"), str(log), "8g")
    assert str(gone).startswith("Spark ran out of memory: the lineage is too large")
    assert "SPARK_DRIVER_MEMORY" in str(gone) and "now 8g" in str(gone) and gone.exit_code == 1
    log.write_text("INFO all is well\n")
    died = unexpected_error(Py4JNetworkError("Answer from Java side is empty"), str(log))
    assert str(died).startswith("Spark's JVM stopped unexpectedly") and str(log) in str(died)
    assert "out of memory" in str(unexpected_error(RuntimeError("java.lang.OutOfMemoryError: GC overhead")))
