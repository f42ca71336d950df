"""Each row of an output written in runs knows its run (``_run``, ``_run_at``: impact, explain,
``dltrace results``), and retention (``dltrace results prune NAME --keep-runs N | --before
DATE``) drops old runs' lineage while the job's files and tables stay byte for byte, later
runs and reads keep working, and impact says how many rows are past retention
(dltrace/dataframe/runs.py).

Oracles: an output's answer is its runs' answers (each run a saved result of its own, as
before); after a prune, the answer over the kept runs is what it was before, restricted to
them; the files hash as before; rows read back equal DuckDB's over the files.
"""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path

import duckdb
import pytest

from dltrace.cli import main
from dltrace.dataframe.job_files import WrittenStore
from dltrace.dataframe.runs import RUN, RUN_AT, result_of, runs_by_result
from dltrace.impact.search import impact
from dltrace.result_format import time_text
from dltrace.result_pages import records
from tests.test_daily_jobs import order_days

pytestmark = pytest.mark.spark

APPENDING = """
    import sys
    from pyspark.sql import SparkSession, functions as F
    spark = SparkSession.builder.getOrCreate()
    out, day = sys.argv[1], sys.argv[2]
    orders = spark.read.parquet("{data}/orders").where(F.to_date("order_ts") == F.lit(day).cast("date"))
    orders.select("order_id", "status", "qty").write.mode("append").parquet(out + "/log")
"""

READER = """
    from pyspark.sql import SparkSession
    spark = SparkSession.builder.getOrCreate()
    spark.read.parquet("{out}/log").groupBy("status").count().write.mode("overwrite").saveAsTable("log_status")
"""


def cli(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def digest(directory: Path) -> dict[str, str]:
    """Every file below ``directory`` (its relative name) with the SHA-256 of its bytes."""
    return {str(f.relative_to(directory)): hashlib.sha256(f.read_bytes()).hexdigest()
            for f in sorted(directory.rglob("*")) if f.is_file()}


def order_of(data: Path, day: str) -> int:
    return duckdb.sql(f"SELECT min(order_id) FROM read_parquet('{data}/orders/*.parquet') "
                      f"WHERE CAST(order_ts AS DATE) = '{day}'").fetchone()[0]


def orders_on(data: Path, days: list[str]) -> int:
    listed = ", ".join(f"'{day}'" for day in days)
    return duckdb.sql(f"SELECT count(*) FROM read_parquet('{data}/orders/*.parquet') "
                      f"WHERE CAST(order_ts AS DATE) IN ({listed})").fetchone()[0]


def tagged(session, source: str, output: str) -> list[tuple]:
    """The output's answer as ``(_run, _row, order_id)``, sorted (read from the files, as the CLI reads it)."""
    answer = impact(session, source, result=output, from_files=True)
    return sorted((r[RUN], r["_row"], r["order_id"]) for r in records(answer))


def per_run(session, source: str, output: str) -> list[tuple]:
    """The oracle: each run's own answer (every saved result searched), tagged with its run."""
    of_run = runs_by_result(session.catalog)
    return sorted((of_run[name].number, r["_row"], r["order_id"])
                  for name, rows in impact(session, source, from_files=True).items()
                  if name in of_run and of_run[name].output == output for r in records(rows))


def check_runs_shown(session, capsys, data: Path, days: list[str]) -> None:
    """Three runs of ``log``: each row's ``_run`` is the run that appended its day, the output's
    answer is its runs' answers, and the CLI shows and filters on the run."""
    catalog = str(session.catalog.directory)
    for number, day in enumerate(days, 1):
        source = f"orders WHERE order_id = {order_of(data, day)}"
        answer = tagged(session, source, "log")
        assert answer == per_run(session, source, "log") and [run for run, _, _ in answer] == [number]
    source = f"orders WHERE order_id = {order_of(data, days[1])}"
    code, shown, _ = cli(capsys, "impact", "--source", source, "--result", "log", "--format", "json",
                         "--catalog", catalog)
    rows = [json.loads(line) for line in shown.splitlines()]
    assert code == 0 and [(r[RUN], r["order_id"]) for r in rows] == [(2, order_of(data, days[1]))]
    assert rows[0][RUN_AT] == time_text(runs_by_result(session.catalog)["log_run2"].written_at)
    for flags, expected in ((["--run", "2"], 1), (["--run", "1"], 0), (["--since", rows[0][RUN_AT]], 1),
                            (["--since", "2999-01-01"], 0)):
        code, shown, _ = cli(capsys, "impact", "--source", source, "--result", "log", *flags, "--catalog", catalog)
        assert code == 0 and f"({expected} affected rows)" in shown, (flags, shown)
    code, shown, _ = cli(capsys, "results", "--catalog", catalog)
    assert code == 0 and "run 2 of log, written" in shown and "run 3 of log, written" in shown
    assert result_of(session.catalog, "log", 2) == "log_run2"  # explain --result log --run 2
    assert session.explain("log_run2", rows[0]["_row"]).ids == {"orders": 1}
    for bad, says in ((["impact", "--source", source, "--result", "log", "--run", "9"], "has no run 9"),
                      (["impact", "--source", source, "--result", "log", "--since", "yesterday"], "is not a date"),
                      (["impact", "--source", source, "--run", "2"], "give --result OUTPUT"),
                      (["explain", "--result", "log", "--run", "9", "--row", "0"], "has no run 9")):
        code, _, err = cli(capsys, *bad, "--catalog", catalog)
        assert code == 2 and says in err and len(err.strip().splitlines()) == 1, (bad, err)


def test_each_row_knows_its_run_and_prune_drops_old_runs_lineage_not_the_files(job, capsys):
    data, out = job.data, job.data.parent / "out"
    days = order_days(data)[:4]
    for day in days[:3]:
        job(APPENDING.format(data=data), str(out), day)
    session, catalog = job.session, str(job.session.catalog.directory)
    check_runs_shown(session, capsys, data, days[:3])
    sources = [f"orders WHERE order_id = {order_of(data, day)}" for day in days[:3]]
    before = {source: tagged(session, source, "log") for source in sources}
    files = digest(out)
    code, said, _ = cli(capsys, "results", "prune", "log", "--keep-runs", "1", "--catalog", catalog)
    assert code == 0 and "pruned the lineage of 2 runs of log (runs 1, 2" in said, said
    assert digest(out) == files  # the job's files: byte for byte
    check_formats(Path(catalog))
    for source in sources:  # kept runs answer as before; the pruned runs' rows are counted, not listed
        with pytest.warns(UserWarning, match=f"{orders_on(data, days[:2])} rows of log \\(runs 1, 2\\) are past "
                                             f"retention"):
            assert tagged(session, source, "log") == [row for row in before[source] if row[0] == 3]
    code, shown, err = cli(capsys, "impact", "--source", sources[0], "--catalog", catalog)  # every saved result
    assert code == 0 and "past retention" in err and "log_run2" not in shown and "(0 affected rows" in shown, err
    code, _, err = cli(capsys, "explain", "--result", "log", "--row", "0", "--catalog", catalog)
    assert code == 2 and "past retention" in err and len(err.strip().splitlines()) == 1
    code, shown, _ = cli(capsys, "results", "--catalog", catalog)
    assert code == 0 and shown.count("PAST RETENTION") == 2
    _, said = job(READER.format(out=out))  # a later read composes, and says where lineage stops
    assert any("lineage stops at the rows of runs past retention" in line for line in said), said
    counts = dict(duckdb.sql(f"SELECT status, count(*) FROM read_parquet('{out}/log/*.parquet') GROUP BY 1").fetchall())
    assert {r["status"]: r["count"] for r in session.result("log_status").collect()} == counts
    with pytest.warns(UserWarning, match="the lineage of log_status stops at rows past retention: log "):
        assert len(session.impact(sources[2], result="log_status").collect()) == 1
    with pytest.warns(UserWarning, match="the lineage of log_status stops at rows past retention"):
        session.impact(sources[0], result="log_status").collect()
    job(APPENDING.format(data=data), str(out), days[3])  # a later run of the job
    assert duckdb.sql(f"SELECT count(*) FROM read_parquet('{out}/log/*.parquet')").fetchone()[0] == orders_on(data,
                                                                                                              days)
    fourth = f"orders WHERE order_id = {order_of(data, days[3])}"
    with pytest.warns(UserWarning, match="rows of log \\(runs 1, 2\\) are past retention"):
        assert [run for run, _, _ in tagged(session, fourth, "log")] == [4]
    code, said, _ = cli(capsys, "results", "prune", "log", "--keep-runs", "1", "--before",
                        time_text(session.store.get("log_run4").created_at - 3600), "--catalog", catalog)
    assert code == 0 and "nothing to prune in log" in said  # run 3: outside the newest 1, not before the date
    check_bad_prunes(capsys, catalog)


def check_formats(catalog: Path) -> None:
    """A pruned run's ``result.json`` is format 7, which a dltrace that reads format 6 refuses;
    a run that keeps its lineage is the file it was (no ``pruned_at``, format 5)."""
    from dltrace.errors import CatalogError
    from dltrace.result_format import FORMAT_NAMED_SETS, SavedResult
    from dltrace.validation import check_result

    pruned, kept = (catalog / "results" / name / "result.json" for name in ("log_run2", "log_run3"))
    assert json.loads(pruned.read_text())["format"] == 7 and json.loads(pruned.read_text())["pruned_at"]
    assert "pruned_at" not in json.loads(kept.read_text()) and json.loads(kept.read_text())["format"] == 5
    with pytest.raises(CatalogError, match="newer dltrace"):
        check_result(json.loads(pruned.read_text()), pruned, FORMAT_NAMED_SETS, SavedResult)


def check_bad_prunes(capsys, catalog: str) -> None:
    """Each bad input of ``results prune``: one line, exit 2."""
    for bad, says in ((["nosuch", "--keep-runs", "1"], "no output 'nosuch' written in runs"),
                      (["log", "--keep-runs", "0"], "keep at least 1"),
                      (["log", "--before", "last week"], "is not a date"),
                      (["log_status", "--keep-runs", "1"], "has no runs"),
                      (["log_run2", "--keep-runs", "1"], "is run 2 of output log"),
                      (["log"], "needs --keep-runs N or --before DATE")):
        code, _, err = cli(capsys, "results", "prune", *bad, "--catalog", catalog)
        assert code == 2 and says in err and len(err.strip().splitlines()) == 1, (bad, err)


TABLE_DAYS = """
    import sys
    from pyspark.sql import SparkSession, functions as F
    spark = SparkSession.builder.getOrCreate()
    orders = spark.read.parquet("{data}/orders").where(F.to_date("order_ts") == F.lit(sys.argv[1]).cast("date"))
    orders.select("order_id", "status", "qty").write.mode("append").saveAsTable("r_log")
"""


def test_a_table_pruned_before_a_date_keeps_its_rows_and_takes_later_runs(job, capsys):
    data, spark = job.data, job.session.frames
    days = order_days(data)[:3]
    spark.sql("DROP TABLE IF EXISTS spark_catalog.default.r_log")
    try:
        job(TABLE_DAYS.format(data=data), days[0])
        first_written = WrittenStore(job.session.catalog).at("r_log").written_at
        while int(time.time()) == int(first_written):  # run 2 in a later second than run 1: --before tells them apart
            time.sleep(0.05)
        job(TABLE_DAYS.format(data=data), days[1])
        session, catalog = job.session, str(job.session.catalog.directory)
        directory = Path(spark.sql("DESCRIBE TABLE EXTENDED spark_catalog.default.r_log")
                         .where("col_name = 'Location'").first()["data_type"].removeprefix("file:"))
        files, rows = digest(directory), sorted(map(tuple, spark.read.table("spark_catalog.default.r_log").collect()))
        second = time_text(session.store.get("r_log_run2").created_at)
        code, said, _ = cli(capsys, "results", "prune", "r_log", "--before", second, "--catalog", catalog)
        assert code == 0 and "pruned the lineage of 1 run of r_log (run 1:" in said, said
        assert digest(directory) == files  # Spark's table as it was (the view over the runs: after the next run)
        assert sorted(map(tuple, spark.read.table("spark_catalog.default.r_log").collect())) == rows
        first = f"orders WHERE order_id = {order_of(data, days[0])}"
        code, shown, err = cli(capsys, "impact", "--source", first, "--result", "r_log", "--catalog", catalog)
        assert code == 0 and "(0 affected rows)" in shown
        assert f"{orders_on(data, days[:1])} rows of r_log (run 1) are past retention" in err
        job(TABLE_DAYS.format(data=data), days[2])
        in_spark = spark.read.table("spark_catalog.default.r_log").count()
        assert in_spark == spark.table("r_log").count() == orders_on(data, days)
        third = f"orders WHERE order_id = {order_of(data, days[2])}"
        with pytest.warns(UserWarning, match="rows of r_log \\(run 1\\) are past retention"):
            assert [run for run, _, _ in tagged(session, third, "r_log")] == [3]
    finally:
        spark.sql("DROP TABLE IF EXISTS spark_catalog.default.r_log")


def test_an_output_answers_for_the_rows_it_still_holds():
    """A run's partitions that a later run replaced are not the output's (``replaced_later``)."""
    from dltrace.dataframe.job_files import Run, Written
    from dltrace.dataframe.runs import replaced_later

    runs = [Run("d", 1.0, 1, ['["1"]', '["2"]']), Run("d_run2", 2.0, 2, ['["2"]'], replaces=True),
            Run("d_run3", 3.0, 3, ['["3"]'], replaces=True)]
    record = Written("d", "/out/d", "parquet", "overwrite", ["day"], runs=[vars(run) for run in runs])
    assert replaced_later(record) == {"d": ['["2"]']}


REPLACING = """
    import sys
    from pyspark.sql import SparkSession, functions as F
    spark = SparkSession.builder.getOrCreate()
    spark.conf.set("spark.sql.sources.partitionOverwriteMode", "dynamic")
    out, days = sys.argv[1], sys.argv[2].split(",")
    orders = spark.read.parquet("{data}/orders").where(F.to_date("order_ts").cast("string").isin(days))
    daily = orders.groupBy(F.to_date("order_ts").alias("day")).agg(F.count("*").alias("n"))
    daily.write.mode("overwrite").partitionBy("day").parquet(out + "/daily")
"""


def test_impact_over_an_output_skips_the_rows_a_later_run_replaced(job):
    """Run 1 writes days 1 and 2, run 2 replaces day 2: the output's answer for an order of
    day 2 is run 2's row alone (run 1's day-2 row is no longer in the files), for an order of
    day 1 run 1's row; the files say the same (DuckDB)."""
    data, out = job.data, job.data.parent / "out"
    days = order_days(data)[:2]
    job(REPLACING.format(data=data), str(out), ",".join(days))
    job(REPLACING.format(data=data), str(out), days[1])
    on_disk = sorted((str(day), n) for day, n in duckdb.sql(
        f"SELECT day, n FROM read_parquet('{out}/daily/*/*.parquet', hive_partitioning = true)").fetchall())
    assert on_disk == [(day, orders_on(data, [day])) for day in days]
    for day, run in ((days[0], 1), (days[1], 2)):
        source = f"orders WHERE order_id = {order_of(data, day)}"
        for from_files in (True, False):  # read from the saved files, and searched by Spark
            answer = records(impact(job.session, source, result="daily", from_files=from_files))
            assert [(row[RUN], str(row["day"]), row["n"]) for row in answer] == [(run, day, orders_on(data, [day]))]
        assert len(records(impact(job.session, source, result="daily", run=3 - run))) == 0
