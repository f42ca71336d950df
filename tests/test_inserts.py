"""``INSERT INTO`` / ``INSERT OVERWRITE`` in pipeline scripts: a step added to run by run
(dltrace/inserts.py).

* Oracle: a step built by a CREATE and two INSERTs, and a step over it, give the same
  (row, DL) bag as the single query that unions the three queries (and groups it) as CTEs, in
  both semantics; each run's rows are the rows of its own query.
* Each row knows its run: impact over the step tags rows with ``_run``, ``--run`` filters.
* A script run again adds a run; INSERT OVERWRITE and CREATE OR REPLACE make the step whole.
* Every bad INSERT is one line, exit 2, before any work, with nothing saved.
"""

from __future__ import annotations

import json

import pytest

from dltrace.errors import BadInput, UnsupportedLineage
from tests.conftest import tpch_copy
from tests.test_cli import cli, one_line
from tests.test_pipelines import bag

COLUMNS = "o_orderkey, o_custkey, o_totalprice"
DAYS = ["o_orderkey < 200", "o_orderkey between 200 and 400", "o_orderkey between 401 and 600"]
CREATE = f"create table if not exists orders_log as select {COLUMNS} from orders where {DAYS[0]}"
# the second day's query gives other names and a wider type: matched by position, cast to the step's
SECOND = "insert into orders_log select o_orderkey as k, o_custkey as c, cast(o_totalprice as double) as p " \
         f"from orders where {DAYS[1]}"
THIRD = f"insert into table orders_log select {COLUMNS} from orders where {DAYS[2]}"
PER_CUSTOMER = "create or replace table log_per_customer as select o_custkey, count(*) as orders, " \
               "sum(o_totalprice) as total from orders_log group by o_custkey"


@pytest.fixture(scope="module")
def inserts(tpch, tmp_path_factory):
    return tpch_copy(tpch, tmp_path_factory, "inserts")


def union_of_days() -> str:
    return " union all ".join(f"select {COLUMNS} from orders where {day}" for day in DAYS)


@pytest.mark.parametrize("semantics", ["control", "data"])
def test_a_step_inserted_into_is_the_union_of_its_runs(inserts, semantics):
    prefix = f"{semantics}_"
    script = ";\n".join([CREATE, SECOND, THIRD, PER_CUSTOMER]).replace("orders_log", f"{prefix}orders_log") \
        .replace("log_per_customer", f"{prefix}log_per_customer")
    outcomes = inserts.run_script(script, semantics)
    assert [(o.kind, o.run) for o in outcomes] == [("table", None), ("insert", 2), ("insert", 3), ("table", None)]
    log = inserts.sql(f"select * from {prefix}orders_log", semantics).collect()
    assert bag(log) == bag(inserts.sql(union_of_days(), semantics).collect())
    per_customer = inserts.sql(f"select * from {prefix}log_per_customer", semantics).collect()
    inlined = (f"with log as ({union_of_days()}) select o_custkey, count(*) as orders, sum(o_totalprice) as total "
               f"from log group by o_custkey")
    assert bag(per_customer) == bag(inserts.sql(inlined, semantics).collect())
    for number, day in enumerate(DAYS, 1):  # each run holds its own query's rows and lineage
        run = inserts.result(f"{prefix}orders_log_run{number}").collect()
        assert bag(run) == bag(inserts.sql(f"select {COLUMNS} from orders where {day}", semantics).collect())
    assert dict(inserts.spark.table(f"{prefix}orders_log_run2").dtypes)["o_totalprice"].startswith("decimal")


def test_each_row_knows_its_run_and_impact_filters_by_it(capsys, inserts):
    inserts.run_script(";".join([CREATE, SECOND, THIRD]).replace("orders_log", "runs_log"))
    catalog = str(inserts.catalog.directory)
    code, out, err = cli(capsys, "impact", "--source", "orders WHERE o_orderkey IN (1, 450)", "--result", "runs_log",
                         "--format", "json", "--catalog", catalog)
    assert code == 0, err
    rows = [json.loads(line) for line in out.splitlines()]
    assert sorted((row["_run"], row["o_orderkey"]) for row in rows) == [(1, 1), (3, 450)]
    code, out, err = cli(capsys, "impact", "--source", "orders WHERE o_orderkey IN (1, 450)", "--result", "runs_log",
                         "--run", "3", "--format", "json", "--catalog", catalog)
    assert code == 0, err
    assert [json.loads(line)["o_orderkey"] for line in out.splitlines()] == [450]
    code, out, err = cli(capsys, "results", "--format", "json", "--catalog", catalog)
    listed = {json.loads(line)["name"]: json.loads(line) for line in out.splitlines()}
    assert listed["runs_log_run3"]["run"]["number"] == 3 and listed["runs_log_run3"]["run"]["output"] == "runs_log"


def test_a_script_run_again_adds_a_run_and_an_overwrite_makes_the_step_whole(capsys, inserts, tmp_path):
    script = tmp_path / "daily.sql"
    script.write_text(f"create table if not exists daily_log as select {COLUMNS} from orders where false;\n"
                      f"insert into daily_log select {COLUMNS} from orders "
                      f"where o_orderkey = (select max(o_orderkey) from orders where o_orderkey < 8);\n")
    catalog = str(inserts.catalog.directory)
    for day in (1, 2):
        code, _, err = cli(capsys, "run", str(script), "--catalog", catalog)
        assert code == 0, err
        progress = err.splitlines()
        assert "saved result daily_log: exists, skipped" in progress[0] if day == 2 else "saved result" in progress[0]
        assert f"added run {day + 1} to step daily_log: 1 rows in " in progress[1]
    assert inserts.sql("select count(*) as n from daily_log where o_orderkey = 7").first().n == 2  # a run a day
    code, _, err = cli(capsys, "sql", f"insert overwrite daily_log select {COLUMNS} from orders where o_orderkey = 7",
                       "--catalog", catalog)
    assert code == 0 and "replaced the rows of step daily_log: 1 rows" in err, err
    assert inserts.store.exists("daily_log") and not inserts.store.exists("daily_log_run1")
    assert inserts.result("daily_log").count() == 1
    inserts.run_script("insert into daily_log (o_orderkey, o_totalprice) values (1, 2.5);"
                       "insert into daily_log by name select o_totalprice, o_custkey, o_orderkey from orders "
                       "where o_orderkey = 3")
    rows = {r.o_orderkey: r for r in inserts.sql("select * from daily_log").collect()}
    assert rows[1].o_custkey is None and rows[1].DL == [] and rows[3].DL and rows[7].DL
    inserts.run_script(f"create or replace table daily_log as select {COLUMNS} from orders where o_orderkey = 3")
    assert inserts.result("daily_log").count() == 1 and not inserts.store.exists("daily_log_run2")


@pytest.mark.parametrize(("statement", "error", "expected"), [
    ("insert into nowhere select 1", BadInput, "there is no step nowhere to insert into"),
    ("insert into bad_log select o_orderkey from orders", BadInput, "bad_log takes 3 columns, the query gives 1"),
    ("insert into bad_log (o_nothing) select 1", BadInput, "o_nothing is not a column of bad_log"),
    ("insert into bad_log by name select o_orderkey, o_custkey from orders", BadInput, "BY NAME: the query's columns"),
    ("insert overwrite bad_log select * from bad_log", BadInput, "reads bad_log (as Spark refuses"),
    ("insert into bad_log partition (o_custkey = 1) select o_orderkey, o_totalprice from orders", BadInput,
     "with a PARTITION or REPLACE WHERE clause"),
    ("insert into tpch.bad_log select 1", BadInput, "INSERT needs the plain name of a step"),
    ("insert into bad_log select * from orders lineage on (o_custkey)", BadInput, "LINEAGE ON belongs to queries"),
])
def test_a_bad_insert_is_one_line_and_saves_nothing(capsys, inserts, statement, error, expected):
    inserts.run_script(CREATE.replace("orders_log", "bad_log"))
    before = sorted(saved.name for saved in inserts.results())
    with pytest.raises(error) as raised:
        inserts.run_script(statement)
    assert expected in str(raised.value)
    code, _, err = cli(capsys, "sql", statement, "--catalog", str(inserts.catalog.directory))
    assert code == 2 and expected in one_line(err)
    assert sorted(saved.name for saved in inserts.results()) == before


def test_a_jobs_output_is_added_to_by_the_job(inserts):
    from dltrace.dataframe.job_files import record_write

    inserts.run_script(CREATE.replace("orders_log", "job_log"))
    record_write(inserts, "job_log", "/tmp/out/job_log", "parquet", "overwrite", [], {})
    with pytest.raises(UnsupportedLineage, match="its rows are what a job wrote to /tmp/out/job_log"):
        inserts.run_script(f"insert into job_log select {COLUMNS} from orders where o_orderkey = 1")
