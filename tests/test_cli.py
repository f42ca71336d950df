"""The command line: output formats, the spark-sql script, and every bad input of docs/errors.md
that the foundation touches (one line on stderr, exit 2 for bad input)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyspark
import pytest

from dltrace.cli import main
from dltrace.errors import JavaMissing
from dltrace.spark import check_java
from tpch.queries import load

PAPER = Path(__file__).resolve().parent / "data" / "paper"


def cli(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def one_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, f"expected one error line, got: {err!r}"
    return lines[0]


@pytest.fixture()
def paper_catalog(paper) -> str:
    return str(paper.catalog.directory)


def test_json_output_has_sorted_ids(capsys, paper_catalog):
    code, out, _ = cli(capsys, "sql", "select s_name, sum(num) as n from store natural join sales group by s_name",
                       "--catalog", paper_catalog, "--format", "json")
    assert code == 0
    rows = [json.loads(line) for line in out.splitlines()]
    assert {r["s_name"] for r in rows} == {"Target", "Macy's"}
    for row in rows:
        assert row["DL"] == sorted(row["DL"]) and all(isinstance(i, int) for i in row["DL"])


def test_csv_and_table_output(capsys, paper_catalog):
    code, out, _ = cli(
        capsys, "sql", "select i_name from item", "--catalog", paper_catalog, "--format", "csv", "--limit", "2"
    )
    assert code == 0 and out.splitlines()[0] == "i_name,DL" and len(out.splitlines()) == 3
    code, out, _ = cli(capsys, "sql", "select i_name from item where i_id = 1", "--catalog", paper_catalog)
    assert code == 0 and "item#0" in out and "(1 rows)" in out


def test_query_from_file(capsys, paper_catalog, tmp_path):
    query = tmp_path / "q.sql"
    query.write_text("select count(*) as n from sales")
    code, out, _ = cli(capsys, "sql", f"@{query}", "--catalog", paper_catalog, "--format", "json")
    assert code == 0 and json.loads(out)["n"] == 11 and len(json.loads(out)["DL"]) == 11


@pytest.mark.parametrize(
    "query, expected",
    [
        ("select * from nope", "dltrace register nope"),
        ("select from where", "line 1, column"),
        ("select s_nam from store", "s_nam"),
        ("select s_id from store a, store b", "s_id"),
        ("select s_name from store tablesample (50 percent)", "TABLESAMPLE is not supported"),
        ("select s_id as dl from store", "DL"),
        ("insert into store values (1)", "store is a registered table, which dltrace does not change"),
        ("update store set s_name = 'x'", "only queries can be traced, not UPDATE statements"),
    ],
)
def test_bad_queries_exit_2_with_one_line(capsys, paper_catalog, query, expected):
    code, out, err = cli(capsys, "sql", query, "--catalog", paper_catalog)
    assert code == 2 and out == ""
    assert expected.lower() in one_line(err).lower()


def test_unknown_table_names_register_command(capsys, tmp_path):
    code, _, err = cli(capsys, "sql", "select * from nope", "--catalog", str(tmp_path))
    assert code == 2 and "`dltrace register nope PATH`" in one_line(err)


@pytest.mark.parametrize(
    "args, expected",
    [
        (["register", "t", "/no/such/file.csv"], "no such file"),
        (["register", "t", str(PAPER / "store.csv"), "--key", "nope"], "no column nope"),
        (["register", "t", str(PAPER / "store.csv"), "--key", "s_name"], "not unique"),
        (["register", "bad-name", str(PAPER / "store.csv")], "not a valid table name"),
    ],
)
def test_bad_registrations(capsys, spark, tmp_path, args, expected):
    code, _, err = cli(capsys, *args, "--catalog", str(tmp_path))
    assert code == 2 and expected in one_line(err)
    assert not (tmp_path / "catalog.json").exists(), "a failed registration must leave no catalog behind"


@pytest.mark.parametrize("flags", [["--profile"], ["--profile-json", "p.json"], ["--resume"]])
def test_a_sql_script_takes_no_job_flags(capsys, tmp_path, flags):
    script = tmp_path / "steps.sql"
    script.write_text("SELECT 1;")
    code, _, err = cli(capsys, "run", str(script), *flags, "--catalog", str(tmp_path))
    assert code == 2 and flags[0].split("-json")[0] in one_line(err) and "PySpark scripts" in one_line(err)
    assert not (tmp_path / "p.json").exists()


def test_reregistering_is_idempotent(capsys, spark, tmp_path):
    args = ["register", "store", str(PAPER / "store.csv"), "--key", "s_id", "--catalog", str(tmp_path)]
    assert cli(capsys, *args)[0] == 0
    first = json.loads((tmp_path / "catalog.json").read_text())
    assert cli(capsys, *args)[0] == 0
    assert json.loads((tmp_path / "catalog.json").read_text()) == first
    entry = first["tables"]["store"]
    assert entry["code"] == 1 and entry["rows"] == 4 and entry["path"] == "tables/store-v1.parquet"
    assert entry["schema"] == {"s_id": "int", "s_name": "string", "city": "string", "state": "string"}


def test_catalog_from_a_newer_dltrace(capsys, tmp_path):
    (tmp_path / "catalog.json").write_text(json.dumps({"format": 99, "version": 1, "tables": {}}))
    code, _, err = cli(capsys, "sql", "select 1", "--catalog", str(tmp_path))
    assert code == 1 and "newer dltrace" in one_line(err)


def test_java_missing(monkeypatch, tmp_path):
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "no-java"))
    with pytest.raises(JavaMissing, match="Java 17"):
        check_java()


def test_python_m_dltrace_reports_syntax_errors():
    result = subprocess.run(
        [sys.executable, "-m", "dltrace", "sql", "select from where"], capture_output=True, text=True
    )
    assert result.returncode == 2 and "syntax error at line 1, column" in one_line(result.stderr)


def test_rewrite_runs_in_spark_sql(capsys, tpch):
    """The printed script runs unchanged in Spark's own spark-sql and gives dltrace sql's rows."""
    catalog = str(tpch.catalog.directory)
    code, script, _ = cli(capsys, "rewrite", load("q3"), "--catalog", catalog)
    assert code == 0
    spark_sql = Path(pyspark.__file__).parent / "bin" / "spark-sql"
    env = {**os.environ, "SPARK_HOME": str(Path(pyspark.__file__).parent)}
    result = subprocess.run(
        [str(spark_sql), "--master", "local[1]", "--conf", "spark.ui.enabled=false", "-S", "-e", script],
        capture_output=True, text=True, env=env, cwd=tpch.catalog.directory, timeout=300,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    from_spark_sql = sorted(
        (int(f[0]), f"{float(f[1]):.4f}", f[2], json.loads(f[4]))
        for f in (line.split("\t") for line in result.stdout.splitlines())
    )
    ours = sorted(
        (r.l_orderkey, f"{float(r.revenue):.4f}", str(r.o_orderdate), list(r.DL))
        for r in tpch.sql(load("q3")).collect()
    )
    assert from_spark_sql == ours and len(ours) > 100


@pytest.mark.parametrize("query", [
    "select count(*), o_orderstatus from orders group by o_orderstatus order by count(*)",
    "select count(*), sum(o_totalprice) from orders having count(*) > 1",
])
def test_rewrite_names_columns_as_spark_does(capsys, tpch, query):
    """No ``_col_N`` in the printed SQL: an unnamed column gets Spark's own name."""
    code, script, _ = cli(capsys, "rewrite", query, "--catalog", str(tpch.catalog.directory))
    assert code == 0 and "AS _col_" not in script.splitlines()[-1].split(" FROM ")[0]
    rewritten, plain = tpch.run(tpch.rewrite(query)), tpch.sql(query, lineage=False)
    assert rewritten.columns == [*plain.columns, "DL"]
    assert sorted(map(tuple, rewritten.drop("DL").collect())) == sorted(map(tuple, plain.collect()))
