"""Jobs that read each other's folders (issue 64): what dltrace wrote composes in whatever form
it is read back, and a read that cannot compose says so; never a silent new source
(dltrace/dataframe/read_back.py).  Also the trial's try_cast (issue 65).

The scripts run in this process on the test run's JVM through Spark Connect (``job`` of
tests/test_jobs.py); each answer is checked against DuckDB over the same files.
"""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from dltrace.dataframe.jobs import JobError
from tests.conftest import ROOT

pytestmark = pytest.mark.spark

DAILY = """
    import sys
    from pyspark.sql import SparkSession, functions as F
    spark = SparkSession.builder.getOrCreate()
    day = sys.argv[2]
    orders = spark.read.parquet("{data}/orders").where(F.to_date("order_ts") == F.lit(day).cast("date"))
    summary = orders.groupBy("status").agg(F.count("*").alias("n"), F.sum("qty").alias("qty"))
    summary.write.mode("overwrite").parquet(sys.argv[1] + "/daily_summary/run=" + day)
"""


def order_days(data) -> list[str]:
    return [str(row[0]) for row in duckdb.sql(
        f"SELECT DISTINCT CAST(order_ts AS DATE) FROM read_parquet('{data}/orders/*.parquet') ORDER BY 1").fetchall()]


def test_a_folder_of_written_runs_read_whole_composes(job, capsys):
    """The trial's case: one job writes out/daily_summary/run=D1 and run=D2, a second job reads
    out/daily_summary: its rows are plain Spark's, and impact from an order reaches it."""
    data, out = job.data, job.data.parent / "out"
    first, second = order_days(data)[:2]
    for day in (first, second):
        job(DAILY.format(data=data), str(out), day)
    _, said = job(f"""
        from pyspark.sql import SparkSession, functions as F
        spark = SparkSession.builder.getOrCreate()
        runs = spark.read.parquet("{out}/daily_summary")
        print(sorted(runs.columns))
        runs.groupBy("run").agg(F.sum("n").alias("orders")).write.mode("overwrite").saveAsTable("orders_per_run")
    """)
    assert any("daily_summary" in line and "the saved results" in line for line in said), said
    assert not any("registered as table" in line for line in said), said
    result = {(str(r["run"]), r["orders"]) for r in job.session.result("orders_per_run").collect()}
    expected = duckdb.sql(f"SELECT CAST(run AS VARCHAR), SUM(n) FROM read_parquet('{out}/daily_summary/*/*.parquet', "
                          f"hive_partitioning = true) GROUP BY 1").fetchall()
    assert result == set(expected) and len(result) == 2
    order = duckdb.sql(f"SELECT order_id FROM read_parquet('{data}/orders/*.parquet') "
                       f"WHERE CAST(order_ts AS DATE) = DATE '{second}' LIMIT 1").fetchone()[0]
    hit = job.session.impact(f"orders WHERE order_id = {order}", result="orders_per_run").collect()
    assert [str(r["run"]) for r in hit] == [second]
    from dltrace.commands.register import say_if_written

    capsys.readouterr()
    say_if_written(job.session, str(out / "daily_summary"))  # `dltrace register` of it says lineage stops there
    assert "holds what a job wrote under dltrace run" in capsys.readouterr().err


def test_every_form_of_reading_written_files_back_composes(job):
    """A partition of a partitioned output, a glob over written directories, several written
    paths in one read, a saveAsTable's directory: the rows Spark reads, with lineage."""
    data, out = job.data, job.data.parent / "out"
    job(f"""
        from pyspark.sql import SparkSession, functions as F
        spark = SparkSession.builder.getOrCreate()
        orders = spark.read.parquet("{data}/orders").withColumn("day", F.to_date("order_ts"))
        daily = orders.groupBy("status", "day").agg(F.count("*").alias("n"))
        daily.write.mode("overwrite").partitionBy("status").parquet("{out}/daily")
        orders.groupBy("customer_id").count().write.mode("overwrite").parquet("{out}/a/per_customer")
        orders.groupBy("product_id").count().write.mode("overwrite").parquet("{out}/b/per_product")
        orders.groupBy("status").count().write.mode("overwrite").saveAsTable("per_status")
    """)
    location = job.session.spark.sql("DESCRIBE TABLE EXTENDED spark_catalog.default.per_status") \
        .where("col_name = 'Location'").first()[1]
    _, said = job(f"""
        from pyspark.sql import SparkSession, functions as F
        spark = SparkSession.builder.getOrCreate()
        spark.read.parquet("{out}/daily/status=shipped").write.mode("overwrite").saveAsTable("shipped_days")
        spark.read.parquet("{out}/daily/*").write.mode("overwrite").saveAsTable("glob_days")
        both = spark.read.parquet("{out}/a/per_customer", "{out}/b/per_product")
        both.write.mode("overwrite").saveAsTable("both")
        spark.read.parquet("{location}").write.mode("overwrite").saveAsTable("status_again")
    """)
    assert not any("registered as table" in line for line in said), said
    session = job.session
    shipped = duckdb.sql(f"SELECT day, n FROM read_parquet('{out}/daily/status=shipped/*.parquet')").fetchall()
    assert sorted(tuple(r) for r in session.result("shipped_days").select("day", "n").collect()) == sorted(shipped)
    assert [c for c in session.result("shipped_days").columns if c not in ("_row", "DL")] == ["day", "n"]
    assert session.result("glob_days").count() == duckdb.sql(
        f"SELECT COUNT(*) FROM read_parquet('{out}/daily/*/*.parquet')").fetchone()[0]
    assert session.result("both").count() == duckdb.sql(
        f"SELECT COUNT(*) FROM read_parquet(['{out}/a/per_customer/*.parquet', '{out}/b/per_product/*.parquet'])"
    ).fetchone()[0]
    order, status, day = duckdb.sql(f"SELECT order_id, status, CAST(order_ts AS DATE) FROM "
                                    f"read_parquet('{data}/orders/*.parquet') WHERE status = 'shipped' LIMIT 1"
                                    ).fetchone()
    hit = session.impact(f"orders WHERE order_id = {order}")
    assert [r["day"] for r in hit["shipped_days"].collect()] == [day]
    assert len(hit["glob_days"].collect()) == 1 and len(hit["both"].collect()) == 2
    assert [r["status"] for r in hit["status_again"].collect()] == [status]


def test_a_read_that_cannot_compose_says_so_in_one_line(job):
    """Written files beside other files are refused naming both; written files changed since,
    and a CSV output read back, are sources of their own, and the job is told lineage stops."""
    data, out = job.data, job.data.parent / "out"
    job(f"""
        from pyspark.sql import SparkSession
        spark = SparkSession.builder.getOrCreate()
        orders = spark.read.parquet("{data}/orders")
        orders.groupBy("status").count().write.mode("overwrite").parquet("{out}/x/run=1")
        orders.groupBy("status").count().write.mode("overwrite").option("header", True).csv("{out}/csv")
    """)
    (out / "x" / "run=2").mkdir()
    for part in (data / "orders").glob("*.parquet"):
        (out / "x" / "run=2" / part.name).write_bytes(b"")
    duckdb.sql(f"COPY (SELECT 'shipped' AS status, 1::BIGINT AS count) TO '{out}/x/run=2/part-0.parquet'")
    for part in (out / "x" / "run=2").glob("part-0000*"):
        part.unlink()
    with pytest.raises(JobError) as refused:
        job(f"""
            from pyspark.sql import SparkSession
            SparkSession.builder.getOrCreate().read.parquet("{out}/x").count()
        """)
    message = str(refused.value)
    assert "line 3" in message and "run=1" in message and "other files" in message and "\n" not in message
    _, said = job(f"""
        from pyspark.sql import SparkSession
        spark = SparkSession.builder.getOrCreate()
        print(spark.read.option("header", True).csv("{out}/csv").count())
    """)
    assert any("lineage stops there" in line and "step csv" in line for line in said), said
    duckdb.sql(f"COPY (SELECT 'shipped' AS status, 2::BIGINT AS count) TO '{out}/x/run=1/extra.parquet'")
    _, said = job(f"""
        from pyspark.sql import SparkSession
        print(SparkSession.builder.getOrCreate().read.parquet("{out}/x/run=1").count())
    """)
    assert any("changed since step" in line and "lineage stops there" in line for line in said), said


def test_several_source_paths_in_one_read_are_one_union(job):
    data = job.data
    (data / "more").mkdir()
    duckdb.sql(f"COPY (SELECT * FROM read_parquet('{data}/orders/part-00001.parquet')) "
               f"TO '{data}/more/part-0.parquet'")
    job(f"""
        from pyspark.sql import SparkSession
        spark = SparkSession.builder.getOrCreate()
        both = spark.read.parquet("{data}/orders", "{data}/more")
        both.groupBy("status").count().write.mode("overwrite").saveAsTable("two_paths")
    """)
    expected = duckdb.sql(f"SELECT status, COUNT(*) FROM read_parquet(['{data}/orders/*.parquet', "
                          f"'{data}/more/*.parquet']) GROUP BY 1").fetchall()
    assert sorted(tuple(r) for r in job.session.result("two_paths").select("status", "count").collect()) == \
        sorted(expected)
    order = duckdb.sql(f"SELECT order_id FROM read_parquet('{data}/more/*.parquet') LIMIT 1").fetchone()[0]
    hit = job.session.impact(f"more WHERE order_id = {order}", result="two_paths").collect()
    assert len(hit) == 1


def test_try_cast_gives_null_for_a_malformed_value_as_spark_does(job, spark):
    """The trial's try_cast: NULL where the text is no number, not a failed CAST."""
    data = job.data
    (data / "ids.csv").write_text("user_id,v\n1,a\n2x,b\n3,c\n")
    job(f"""
        from pyspark.sql import SparkSession, functions as F
        spark = SparkSession.builder.getOrCreate()
        ids = spark.read.option("header", True).csv("{data}/ids.csv")
        parsed = ids.select(F.col("user_id").try_cast("bigint").alias("id"), "v")
        parsed.write.mode("overwrite").saveAsTable("parsed_ids")
    """)
    plain = spark.read.option("header", True).csv(str(data / "ids.csv")) \
        .selectExpr("try_cast(user_id AS bigint) AS id", "v")
    traced = job.session.result("parsed_ids").select("id", "v").collect()
    assert sorted(map(tuple, traced), key=str) == sorted(map(tuple, plain.collect()), key=str)
    assert job.session.result("parsed_ids").where("id IS NULL").count() == 1


APPENDING = """
    import sys
    from pyspark.sql import SparkSession, functions as F
    spark = SparkSession.builder.getOrCreate()
    spark.conf.set("spark.sql.sources.partitionOverwriteMode", "dynamic")
    out, day = sys.argv[1], sys.argv[2]
    orders = spark.read.parquet("{data}/orders").where(F.to_date("order_ts") == F.lit(day).cast("date"))
    orders.select("order_id", "status", "qty").write.mode("append").parquet(out + "/log")
    daily = orders.groupBy(F.to_date("order_ts").alias("day"), "status").agg(F.count("*").alias("n"))
    daily.write.mode("overwrite").partitionBy("day").parquet(out + "/daily")
"""


def test_appends_and_dynamic_partition_overwrites_hold_every_run(job):
    """Days 1, 2, 3 then day 2 again: the appended log holds day 2 twice and the dynamically
    overwritten daily folder each day once, as plain Spark leaves them; a second job reading
    both folders has their rows, and impact of a day-2 order reaches both of its results."""
    data, out = job.data, job.data.parent / "out"
    days = order_days(data)[:3]
    steps = []
    for day in [*days, days[1]]:
        ran, _ = job(APPENDING.format(data=data), str(out), day)
        steps += [step.name for step in ran]
    assert steps == ["log", "daily", "log_run2", "daily_run2", "log_run3", "daily_run3", "log_run4", "daily_run4"]
    orders = f"read_parquet('{data}/orders/*.parquet')"
    log = duckdb.sql(f"SELECT COUNT(*) FROM {orders} WHERE CAST(order_ts AS DATE) IN "
                     f"('{days[0]}', '{days[1]}', '{days[2]}')").fetchone()[0] + duckdb.sql(
        f"SELECT COUNT(*) FROM {orders} WHERE CAST(order_ts AS DATE) = '{days[1]}'").fetchone()[0]
    assert duckdb.sql(f"SELECT COUNT(*) FROM read_parquet('{out}/log/*.parquet')").fetchone()[0] == log
    daily = sorted(duckdb.sql(f"SELECT CAST(order_ts AS DATE), status, COUNT(*) FROM {orders} WHERE "
                              f"CAST(order_ts AS DATE) IN ('{days[0]}', '{days[1]}', '{days[2]}') "
                              f"GROUP BY ALL").fetchall())
    on_disk = sorted(duckdb.sql(f"SELECT day, status, n FROM read_parquet('{out}/daily/*/*.parquet', "
                                f"hive_partitioning = true)").fetchall())
    assert [(str(d), s, n) for d, s, n in on_disk] == [(str(d), s, n) for d, s, n in daily]
    _, said = job(f"""
        from pyspark.sql import SparkSession, functions as F
        spark = SparkSession.builder.getOrCreate()
        spark.read.parquet("{out}/log").groupBy("status").count().write.mode("overwrite").saveAsTable("log_status")
        daily = spark.read.parquet("{out}/daily")
        daily.groupBy("day").agg(F.sum("n").alias("n")).write.mode("overwrite").saveAsTable("per_day")
    """)
    assert not any("registered as table" in line for line in said), said
    session = job.session
    assert sum(r["count"] for r in session.result("log_status").collect()) == log
    per_day = {str(r["day"]): r["n"] for r in session.result("per_day").collect()}
    assert per_day == {str(d): sum(n for e, _, n in daily if e == d) for d in {d for d, _, _ in daily}}
    order = duckdb.sql(f"SELECT order_id FROM {orders} WHERE CAST(order_ts AS DATE) = '{days[1]}' "
                       f"LIMIT 1").fetchone()[0]
    hit = session.impact(f"orders WHERE order_id = {order}")
    assert [str(r["day"]) for r in hit["per_day"].collect()] == [days[1]]
    assert len(hit["log_status"].collect()) == 1
    assert {"log_run2", "log_run4", "daily_run4"} <= set(hit) and "daily_run2" not in hit  # replaced by run 4
    assert not session.store.exists("daily_run2")


def test_a_failed_run_names_what_it_wrote_and_exits_as_spark_submit(job):
    """A missing file and an unknown column exit 1, as an uncaught exception under
    spark-submit; a refusal exits 2; each line names the outputs the run wrote before it."""
    data, out = job.data, job.data.parent / "out"
    head = f"""
        from pyspark.sql import SparkSession, functions as F
        spark = SparkSession.builder.getOrCreate()
        spark.read.parquet("{data}/orders").groupBy("status").count().write.mode("overwrite").parquet("{out}/a")
    """
    cases = {'spark.read.parquet("/no/such/folder").count()': 1,
             'spark.read.parquet("' + str(data) + '/orders").select("statsu").count()': 1,
             'spark.read.parquet("' + str(data) + '/orders").writeTo("t").overwrite(F.lit(True))': 2}
    for tail, status in cases.items():
        with pytest.raises(JobError) as failed:
            job(head + "    " + tail + "\n")
        assert failed.value.exit_code == status, (tail, str(failed.value))
        assert "line 5" in str(failed.value) and f"this run wrote {out}/a before it" in str(failed.value)


def test_a_read_of_some_partitions_has_just_their_rows(job):
    """The review's cases: two partitions by two paths, a glob over partitions, basePath over
    one partition (its column kept), an empty-string partition (Spark's NULL); a read of some
    of the files of a written directory (one run's of an appended log) is refused, not composed
    whole."""
    data, out = job.data, job.data.parent / "out"
    job(f"""
        from pyspark.sql import SparkSession, functions as F
        spark = SparkSession.builder.getOrCreate()
        orders = spark.read.parquet("{data}/orders")
        labelled = orders.withColumn("label", F.when(F.col("status") == "returned", "").otherwise(F.col("status")))
        labelled.groupBy("label", "customer_id").count().write.mode("overwrite").partitionBy("label").parquet("{out}/p")
    """)
    _, said = job(f"""
        from pyspark.sql import SparkSession
        spark = SparkSession.builder.getOrCreate()
        spark.read.parquet("{out}/p/label=shipped", "{out}/p/label=cancelled").write.saveAsTable("two")
        spark.read.parquet("{out}/p/label=s*").write.saveAsTable("globbed")
        spark.read.option("basePath", "{out}/p").parquet("{out}/p/label=shipped").write.saveAsTable("based")
        spark.read.parquet("{out}/p").write.saveAsTable("whole")
    """)
    assert not any("registered as table" in line for line in said), said
    files = f"read_parquet('{out}/p/*/*.parquet', hive_partitioning = true)"

    def rows(name: str, columns: str) -> list:
        return sorted(map(tuple, job.session.result(name).select(*columns.split(", ")).collect()), key=str)

    def expected(sql: str) -> list:
        return sorted(map(tuple, duckdb.sql(sql).fetchall()), key=str)

    assert rows("two", "customer_id, count") == expected(
        f"SELECT customer_id, count FROM {files} WHERE label IN ('shipped', 'cancelled')")
    assert rows("globbed", "customer_id, count") == expected(
        f"SELECT customer_id, count FROM {files} WHERE label = 'shipped'")
    assert rows("based", "customer_id, count, label") == expected(
        f"SELECT customer_id, count, label FROM {files} WHERE label = 'shipped'")
    whole = job.session.result("whole")
    assert whole.where("label IS NULL").count() == duckdb.sql(
        f"SELECT COUNT(*) FROM {files} WHERE label IS NULL OR label = '__HIVE_DEFAULT_PARTITION__'"
    ).fetchone()[0] > 0
    for _ in range(2):
        job(f"""
            from pyspark.sql import SparkSession
            spark = SparkSession.builder.getOrCreate()
            spark.read.parquet("{data}/orders").select("order_id").write.mode("append").parquet("{out}/log")
        """)
    one = next((out / "log").glob("part-*.parquet"))
    with pytest.raises(JobError) as refused:
        job(f"""
            from pyspark.sql import SparkSession
            SparkSession.builder.getOrCreate().read.parquet("{one}").count()
        """)
    assert "some of the files" in str(refused.value) and "\n" not in str(refused.value)


def write_day(events, day: str, first: int, rows: int) -> None:
    """A day's events as Spark lays a partitioned folder out: ``events/date=DAY/part-0.parquet``."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    (events / f"date={day}").mkdir(parents=True)
    pq.write_table(pa.table({"event_id": pa.array(range(first, first + rows), pa.int64()),
                             "kind": pa.array(["view", "buy", "view"][i % 3] for i in range(rows))}),
                   events / f"date={day}" / "part-0.parquet")


def test_a_partitioned_folder_that_gains_a_day_keeps_its_ids_and_reads_only_the_new_files(job):
    """A Hive-partitioned events folder registers in place (its date column from the paths);
    the next day's run registers a new version whose earlier files keep their ids, and impact
    of the new day's event reaches the output, as DuckDB computes it."""
    from dltrace.table_data import table_rows

    events = job.data / "events"
    script = f"""
        from pyspark.sql import SparkSession, functions as F
        spark = SparkSession.builder.getOrCreate()
        events = spark.read.parquet("{events}")
        events.groupBy("date", "kind").agg(F.count("*").alias("n")).write.mode("overwrite").saveAsTable("per_day")
    """
    write_day(events, "2026-11-01", 1, 30)
    job(script)
    session = job.session
    first = session.catalog.tables["events"]
    assert first.files and first.rows == 30 and first.schema["date"] == "date"

    def ids(version: int) -> dict:
        return {r["event_id"]: r["_dl_id"] for r in table_rows(session.spark, session.catalog, "events", version)
                .select("event_id", "_dl_id").collect()}

    before = ids(1)
    write_day(events, "2026-11-02", 31, 20)
    _, said = job(script)
    second = session.catalog.tables["events"]
    assert second.version == 2 and second.changes == {"unchanged": 30, "new": 20, "removed": 0}, said
    after = ids(2)
    assert all(after[event] == before[event] for event in before) and len(after) == 50
    expected = duckdb.sql(f"SELECT date, kind, COUNT(*) FROM read_parquet('{events}/*/*.parquet', "
                          f"hive_partitioning = true) GROUP BY ALL").fetchall()
    saved = session.result("per_day").select("date", "kind", "n").collect()
    assert sorted((str(d), k, n) for d, k, n in saved) == sorted((str(d), k, n) for d, k, n in expected)
    hit = session.impact("events WHERE event_id = 40", result="per_day").collect()
    assert [(str(r["date"]), r["kind"]) for r in hit] == [("2026-11-02", ["view", "buy", "view"][9 % 3])]


DAILY_OUTPUTS = ("orders_log", "daily_revenue", "user_days", "country_totals", "top_category", "country_users")


def run_plainly(engine, script: Path, *argv: str) -> None:
    """``script`` as ``spark-submit`` runs it (no dltrace): its builder returns ``engine``."""
    import runpy

    from dltrace.dataframe.jobs import script_argv, the_session

    with the_session(engine), script_argv([str(script), *argv]):
        runpy.run_path(str(script), run_name="__main__")


def parquet_schema(directory: Path) -> list[tuple[str, str, bool]]:
    import pyarrow.dataset as ds

    return [(f.name, str(f.type), f.nullable) for f in ds.dataset(directory, partitioning="hive").schema]


def test_a_run_is_current_while_its_sources_only_grow_and_a_reader_is_behind_a_new_run(job):
    """A run holds what it wrote: a day added to its events folder leaves it current (rows
    added belong to later runs), a rewritten file does not; a step that read the output's
    runs is stale once the output has a run it did not read."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    events, out = job.data / "events", job.data.parent / "out"
    day_job = f"""
        import sys
        from pyspark.sql import SparkSession, functions as F
        spark = SparkSession.builder.getOrCreate()
        events = spark.read.parquet("{events}").where(F.col("date") == F.lit(sys.argv[1]).cast("date"))
        events.groupBy("date", "kind").agg(F.count("*").alias("n")).write.mode("append").parquet("{out}/log")
    """
    reader = f"""
        from pyspark.sql import SparkSession
        spark = SparkSession.builder.getOrCreate()
        spark.read.parquet("{out}/log").groupBy("kind").sum("n").write.mode("overwrite").saveAsTable("kinds")
    """
    session = job.session
    write_day(events, "2026-11-01", 1, 30)
    job(day_job, "2026-11-01")
    job(reader)
    write_day(events, "2026-11-02", 31, 30)  # not registered yet: the folder gained a file
    assert session.stale_results() == {}
    job(day_job, "2026-11-02")  # registers the day: version 2, the first day's ids kept
    assert session.catalog.tables["events"].version == 2
    assert session.stale_results() == {"kinds": "output log has run 2 since"}
    job(reader)
    assert session.stale_results() == {}
    table = pq.read_table(events / "date=2026-11-01" / "part-0.parquet")
    pq.write_table(table.set_column(1, "kind", pa.array(["buy"] * table.num_rows)),
                   events / "date=2026-11-01" / "part-0.parquet")  # a day rewritten: its rows are not those of run 1
    stale = session.stale_results()
    assert set(stale) == {"log", "log_run2", "kinds"} and "changed since" in stale["log"]


@pytest.mark.parametrize("days", [(1, 2, 3, 4, 3), pytest.param((1, 2, 3, 4, 5, 6, 7, 3), marks=pytest.mark.heavy)],
                         ids=["four days and a rerun", "a week and a rerun"])
def test_the_daily_pipeline_day_by_day_and_a_rerun_leaves_what_plain_spark_would(job, engine, days):
    """The acceptance pipeline (dltrace/examples/daily_job.py, daily_report.py): a partitioned
    events folder that grows by a day, a users CSV rewritten with more versions, an append to
    a path, inserts into a table, a dynamic partition overwrite, and a report job reading the
    first job's whole output folder and its table.  Days 1-4 (1-7 in make test-heavy), then
    day 3 again (over the files of the last day: the users' latest versions have changed
    since): after every run
    each output holds what DuckDB computes over the files of that moment, with plain Spark's
    schema (nullability included); then impact of a day-3 event, a user and a product on every
    output of both jobs is the rows DuckDB says are computed from it."""
    from dltrace.examples import daily_data

    examples = ROOT / "dltrace" / "examples"
    data, out, plain = (job.data.parent / name for name in ("daily", "daily-out", "daily-plain"))
    engine.sql("DROP TABLE IF EXISTS spark_catalog.default.user_days")  # external: its files stay
    daily_data.write(data, 1)
    run_plainly(engine, examples / "daily_job.py", str(data), str(plain), daily_data.day_of(1).isoformat())
    run_plainly(engine, examples / "daily_report.py", str(plain))
    engine.sql("DROP TABLE spark_catalog.default.user_days")
    engine.conf.unset("spark.sql.sources.partitionOverwriteMode")  # the job set it in the session
    try:
        log, daily, user_days = [], {}, []
        for run, day in enumerate(days):
            if run == day - 1:  # a new day's files; the rerun of day 3 reads the files as they are on day 7
                daily_data.write(data, day)
            date = daily_data.day_of(day).isoformat()
            orders = duckdb.sql(
                f"SELECT e.event_id, e.date, e.user_id, u.country, p.category, e.qty * p.price AS amount, "
                f"e.product_id FROM read_parquet('{data}/events/*/*.parquet', hive_partitioning = true) e "
                f"LEFT JOIN (SELECT user_id, country FROM read_csv_auto('{data}/users.csv') QUALIFY row_number() "
                f"OVER (PARTITION BY user_id ORDER BY updated_at DESC) = 1) u USING (user_id) "
                f"JOIN read_parquet('{data}/products.parquet') p USING (product_id) WHERE e.date = '{date}'"
            ).fetchall()
            log += [(e, str(d), u, c, k, round(a, 6), p) for e, d, u, c, k, a, p in orders]
            today = log[len(log) - len(orders):]
            daily[date] = today  # the last run of a day is what its partition holds
            user_days += sorted({(d, u, c) for _, d, u, c, _, _, _ in today}, key=str)
            job.run_file(examples / "daily_job.py", str(data), str(out), date)
            job.run_file(examples / "daily_report.py", str(out))
            check_daily_outputs(out, log, daily, user_days, day)
        for name in DAILY_OUTPUTS:  # the files as plain Spark writes them, nullability included
            assert parquet_schema(out / name) == parquet_schema(plain / name), name
        check_daily_impact(job.session, data, log, daily, user_days)
    finally:
        engine.sql("DROP TABLE IF EXISTS spark_catalog.default.user_days")


def check_daily_outputs(out: Path, log: list, daily: dict, user_days: list, day: int) -> None:
    """Every output's files against what the runs so far give (DuckDB over their inputs)."""
    written = duckdb.sql(f"SELECT event_id, CAST(date AS VARCHAR), user_id, country, category, round(amount, 6) "
                         f"FROM read_parquet('{out}/orders_log/*.parquet')").fetchall()
    assert sorted(written, key=str) == sorted([row[:6] for row in log], key=str), day
    revenue = f"read_parquet('{out}/daily_revenue/*/*.parquet', hive_partitioning = true)"
    expected = [(d, c, k, round(sum(r[5] for r in rows if (r[3], r[4]) == (c, k)), 2),
                 sum(1 for r in rows if (r[3], r[4]) == (c, k)))
                for d, rows in daily.items() for c, k in {(r[3], r[4]) for r in rows}]
    on_disk = duckdb.sql(f"SELECT CAST(date AS VARCHAR), country, category, revenue, orders FROM {revenue}").fetchall()
    assert sorted(on_disk, key=str) == sorted(expected, key=str), day
    table = duckdb.sql(f"SELECT CAST(date AS VARCHAR), user_id, country FROM "
                       f"read_parquet('{out}/user_days/*.parquet')").fetchall()
    assert sorted(table, key=str) == sorted(user_days, key=str), day
    totals = duckdb.sql(f"SELECT country, round(SUM(revenue), 2), COUNT(DISTINCT date) FROM {revenue} "
                        f"GROUP BY ALL").fetchall()
    assert sorted(duckdb.sql(f"SELECT * FROM read_parquet('{out}/country_totals/*.parquet')").fetchall(),
                  key=str) == sorted(totals, key=str), day
    users = duckdb.sql(f"SELECT country, COUNT(DISTINCT user_id), SUM(orders) FROM "
                       f"read_parquet('{out}/user_days/*.parquet') GROUP BY ALL").fetchall()
    assert sorted(duckdb.sql(f"SELECT * FROM read_parquet('{out}/country_users/*.parquet')").fetchall(),
                  key=str) == sorted(users, key=str), day


def check_daily_impact(session, data: Path, log: list, daily: dict, user_days: list) -> None:
    """Impact of a day-3 event, a user and a product (control semantics: an order's row is
    computed from every version of its user, the latest-version window's partition)."""
    import warnings

    from dltrace.examples import daily_data

    current = [row for rows in daily.values() for row in rows]  # what daily_revenue holds
    third = daily_data.day_of(3).isoformat()
    event = min(row[0] for row in daily[third])
    user = next(row[2] for row in daily[third] if row[0] == event)
    product = next(row[6] for row in daily[third] if row[0] == event)
    cases = {f"events WHERE event_id = {event}": lambda row: row[0] == event,
             f"users WHERE user_id = {user}": lambda row: row[2] == user,
             f"products WHERE product_id = {product}": lambda row: row[6] == product}
    for source, hits_row in cases.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # results computed from earlier versions of users: said, not a failure
            hit = session.impact(source)
        found = {name: [tuple(r) for frame in [hit[n] for n in hit if n == name or n.startswith(f"{name}_run")]
                        for r in frame.drop("DL", "_row").collect()] for name in DAILY_OUTPUTS}
        assert sorted(r[0] for r in found["orders_log"]) == sorted(r[0] for r in log if hits_row(r)), source
        revenue_rows = {(r[1], r[3], r[4]) for r in current if hits_row(r)}
        assert {(str(r[0]), r[1], r[2]) for r in found["daily_revenue"]} == revenue_rows, source
        days_of = sorted(row for row in user_days if any(
            (r[1], r[2], r[3]) == row for r in log if hits_row(r)))
        assert sorted(((str(r[0]), r[1], r[2]) for r in found["user_days"]), key=str) == sorted(days_of, key=str), \
            source
        countries = {c for _, c, _ in revenue_rows}
        assert {r[0] for r in found["country_totals"]} >= countries and countries, source
        assert {r[0] for r in found["top_category"]} >= countries, source
        assert {r[0] for r in found["country_users"]} >= {c for _, _, c in days_of}, source


TABLE_APPENDS = """
    import sys
    from pyspark.sql import SparkSession, functions as F
    spark = SparkSession.builder.getOrCreate()
    spark.conf.set("spark.sql.sources.partitionOverwriteMode", "dynamic")
    day = sys.argv[1]
    orders = spark.read.parquet("{data}/orders").withColumn("day", F.to_date("order_ts")) \\
        .where(F.col("day") == F.lit(day).cast("date"))
    orders.select("order_id", "status", "qty").write.mode("append").saveAsTable("t_log")
    # created partitioned by its first column: Spark puts it last
    orders.select("day", "order_id", "status").write.mode("append").partitionBy("day").saveAsTable("t_parted")
    # by position, into the columns (id, state, quantity) the first run created
    orders.select(F.col("order_id").alias("id"), F.col("status").alias("state"), "qty").write.insertInto("t_pos") \\
        if spark.catalog.tableExists("t_pos") else \\
        orders.select(F.col("order_id").alias("id"), F.col("status").alias("state"), F.col("qty").alias("quantity")) \\
        .write.saveAsTable("t_pos")
    daily = orders.groupBy("day", "status").agg(F.count("*").alias("n"))
    if spark.catalog.tableExists("t_daily"):
        daily.select("status", "n", "day").write.insertInto("t_daily", overwrite=True)
    else:
        daily.write.partitionBy("day").saveAsTable("t_daily")
"""


def test_appends_to_tables_are_runs_and_the_table_composes(job):
    """saveAsTable in mode append, insertInto (by position; a dynamic overwrite of a
    partitioned table), writeTo().append() and overwritePartitions(): days 1, 2, 3 then day 2
    again.  Spark's tables hold what plain Spark leaves; the table's name reads the runs'
    rows, and a second job reading the tables composes down to the orders."""
    data, spark = job.data, job.session.frames
    days = order_days(data)[:3]
    tables = ("t_log", "t_pos", "t_daily", "t_v2", "t_parted")
    for table in tables:
        spark.sql(f"DROP TABLE IF EXISTS spark_catalog.default.{table}")
    try:
        steps = []
        for day in [*days, days[1]]:
            ran, _ = job(TABLE_APPENDS.format(data=data), day)
            steps += [step.name for step in ran]
        assert steps[:4] == ["t_log_run1", "t_parted_run1", "t_pos", "t_daily"]
        assert steps[4:8] == ["t_log_run2", "t_parted_run2", "t_pos_run2", "t_daily_run2"]
        orders = f"read_parquet('{data}/orders/*.parquet')"
        chosen = f"CAST(order_ts AS DATE) IN ('{days[0]}', '{days[1]}', '{days[2]}')"
        log = sorted(duckdb.sql(f"SELECT order_id, status, qty FROM {orders} WHERE {chosen} UNION ALL "
                                f"SELECT order_id, status, qty FROM {orders} WHERE CAST(order_ts AS DATE) = "
                                f"'{days[1]}'").fetchall())
        for table in ("t_log", "t_pos"):
            in_spark = spark.read.table(f"spark_catalog.default.{table}")
            assert sorted(tuple(r) for r in in_spark.collect()) == log, table
            assert sorted(tuple(r) for r in spark.table(table).collect()) == log, table
        assert [f.name for f in spark.read.table("spark_catalog.default.t_pos").schema] == ["id", "state", "quantity"]
        in_spark = spark.read.table("spark_catalog.default.t_parted")
        assert [f.name for f in in_spark.schema] == [f.name for f in spark.table("t_parted").schema]
        assert sorted(map(str, in_spark.collect())) == sorted(map(str, spark.table("t_parted").collect()))
        daily = sorted(duckdb.sql(f"SELECT status, COUNT(*), CAST(order_ts AS DATE) FROM {orders} WHERE {chosen} "
                                  f"GROUP BY ALL").fetchall())
        for frame in (spark.read.table("spark_catalog.default.t_daily"), spark.table("t_daily")):
            assert sorted((s, n, d) for s, n, d in frame.select("status", "n", "day").collect()) == daily
        job("""
            from pyspark.sql import SparkSession, functions as F
            spark = SparkSession.builder.getOrCreate()
            spark.table("t_log").groupBy("status").count().writeTo("t_v2").create()
            spark.table("t_pos").where("state = 'shipped'").select("id", "quantity").writeTo("t_v2b").create()
            spark.table("t_daily").groupBy("day").agg(F.sum("n").alias("n")).write.mode("overwrite") \\
                .saveAsTable("per_day")
            spark.table("t_log").where("status = 'shipped'").write.insertInto("t_log")
            spark.table("t_daily").where("status = 'shipped'").select("status", "n", "day").write \\
                .mode("overwrite").insertInto("t_daily")
        """)
        session = job.session
        order = duckdb.sql(f"SELECT order_id FROM {orders} WHERE CAST(order_ts AS DATE) = '{days[1]}' "
                           f"AND status = 'shipped' LIMIT 1").fetchone()[0]
        hit = session.impact(f"orders WHERE order_id = {order}")
        assert len(hit["t_v2"].collect()) == 1 and [str(r["day"]) for r in hit["per_day"].collect()] == [days[1]]
        assert [r["id"] for r in hit["t_v2b"].collect()] == [order, order]  # day 2 was appended twice
        assert {"t_log_run2", "t_log_run4", "t_log_run5", "t_pos_run2", "t_pos_run4"} <= set(hit)
        shipped = [r for r in log if r[1] == "shipped"]
        assert sorted(tuple(r) for r in spark.table("t_log").collect()) == sorted(log + shipped)
        assert sorted(tuple(r) for r in spark.read.table("spark_catalog.default.t_log").collect()) == \
            sorted(log + shipped)
        kept = sorted((s, n, d) for s, n, d in spark.table("t_daily").select("status", "n", "day").collect())
        assert kept == [row for row in daily if row[0] == "shipped"]
        assert kept == sorted(tuple(r) for r in spark.read.table("spark_catalog.default.t_daily")
                              .select("status", "n", "day").collect())
        whole = sorted(map(str, spark.table("per_day").collect()))
        job("""
            from pyspark.sql import SparkSession
            spark = SparkSession.builder.getOrCreate()
            spark.table("per_day").where("n > 0").write.insertInto("per_day")  # written whole, read, added to
        """)
        assert sorted(map(str, spark.table("per_day").collect())) == sorted(whole + whole)
        assert sorted(map(str, spark.read.table("spark_catalog.default.per_day").collect())) == sorted(whole + whole)
        assert {"per_day_run1", "per_day_run2"} <= set(session.impact(f"orders WHERE order_id = {order}"))
        for call in ('spark.table("t_log").writeTo("t_log").append()',
                     'spark.table("t_daily").writeTo("t_daily").overwritePartitions()'):
            with pytest.raises(JobError) as refused:  # as plain Spark refuses it, before any work
                job(f"""
                    from pyspark.sql import SparkSession
                    spark = SparkSession.builder.getOrCreate()
                    {call}
                """)
            assert refused.value.exit_code == 1 and "cannot write into v1 table" in str(refused.value)
        assert not session.store.exists("t_log_run6") and not session.store.exists("t_daily_run6")
    finally:
        for table in (*tables, "t_v2b", "per_day"):
            spark.sql(f"DROP TABLE IF EXISTS spark_catalog.default.{table}")


def test_written_files_have_plain_sparks_schema_nullability_included(job, engine):
    """Columns never NULL in the job's DataFrame (a count, a coalesce, a literal, a grouping
    key of non-null values) are ``required`` in the Parquet files, as plain Spark writes them;
    nullable ones stay optional (issue 65).  (Not covered: a column the DataFrame's schema says
    is nullable that Spark's optimizer finds never NULL, such as a coalesce with the cast of a
    literal: plain Spark writes it ``required``, dltrace optional.)"""
    import pyarrow.dataset as ds
    from pyspark.sql import functions as F

    data, out = job.data, job.data.parent / "out"

    def summary(spark):
        orders = spark.read.parquet(f"{data}/orders")
        return orders.groupBy("status", F.lit(1).alias("one")).agg(
            F.count("*").alias("n"), F.coalesce(F.max("qty"), F.lit(0)).alias("top"), F.max("qty").alias("most"),
            F.lit("x").alias("label"), F.coalesce(F.max("order_ts").cast("date"), F.expr("DATE'2026-01-01'"))
            .alias("last"), F.sum(F.lit(1.5)).alias("weight"), F.collect_list("qty").alias("qtys"),
            F.struct(F.lit(1).alias("a"), F.max("qty").alias("b")).alias("pair"))

    summary(engine).write.mode("overwrite").parquet(f"{out}/plain")
    job(f"""
        from pyspark.sql import SparkSession, functions as F
        spark = SparkSession.builder.getOrCreate()
        orders = spark.read.parquet("{data}/orders")
        summary = orders.groupBy("status", F.lit(1).alias("one")).agg(
            F.count("*").alias("n"), F.coalesce(F.max("qty"), F.lit(0)).alias("top"), F.max("qty").alias("most"),
            F.lit("x").alias("label"), F.coalesce(F.max("order_ts").cast("date"), F.expr("DATE'2026-01-01'"))
            .alias("last"), F.sum(F.lit(1.5)).alias("weight"), F.collect_list("qty").alias("qtys"),
            F.struct(F.lit(1).alias("a"), F.max("qty").alias("b")).alias("pair"))
        summary.write.mode("overwrite").parquet("{out}/traced")
        summary.write.mode("overwrite").partitionBy("status").parquet("{out}/parted")
    """)
    plain, traced = (ds.dataset(f"{out}/{name}").schema for name in ("plain", "traced"))
    assert [(f.name, str(f.type), f.nullable) for f in traced] == [(f.name, str(f.type), f.nullable) for f in plain]
    assert not plain.field("n").nullable and plain.field("most").nullable  # the case is one
    parted = ds.dataset(f"{out}/parted", partitioning="hive").schema
    assert [(f.name, f.nullable) for f in parted if f.name != "status"] == \
        [(f.name, f.nullable) for f in plain if f.name != "status"]
    assert sorted(map(str, engine.read.parquet(f"{out}/traced").collect())) == \
        sorted(map(str, engine.read.parquet(f"{out}/plain").collect()))


def test_a_write_spark_refuses_only_when_writing_leaves_no_saved_run(job):
    """Spark refuses an append in another format than the table's only as it writes: the
    run saved just before goes again, and the next run is numbered as if it had not been."""
    data, spark = job.data, job.session.frames
    spark.sql("DROP TABLE IF EXISTS spark_catalog.default.t_formats")
    append = f"""
        from pyspark.sql import SparkSession
        spark = SparkSession.builder.getOrCreate()
        orders = spark.read.parquet("{data}/orders").select("order_id", "qty")
        orders.write.mode("append"){{how}}.saveAsTable("t_formats")
    """
    try:
        job(append.format(how=""))
        job(append.format(how=""))
        before = sorted(saved.name for saved in job.session.results())
        with pytest.raises(JobError) as refused:
            job(append.format(how='.format("json")'))
        assert "t_formats" in str(refused.value) and refused.value.exit_code == 1, str(refused.value)
        assert sorted(saved.name for saved in job.session.results()) == before
        ran, _ = job(append.format(how=""))
        assert [step.name for step in ran] == ["t_formats_run3"]
    finally:
        spark.sql("DROP TABLE IF EXISTS spark_catalog.default.t_formats")


def test_a_path_write_spark_refuses_leaves_no_saved_result(job):
    """A write to a path by a partition column the rows lack fails as Spark writes: neither
    a first write nor an append leaves its saved result behind."""
    data, out = job.data, job.data.parent / "out"
    write = f"""
        from pyspark.sql import SparkSession
        spark = SparkSession.builder.getOrCreate()
        spark.read.parquet("{data}/orders").select("order_id", "qty").write.mode("append"){{how}}.parquet("{out}/p")
    """
    for existing in ([], ["p"]):
        with pytest.raises(JobError):
            job(write.format(how='.partitionBy("nowhere")'))
        assert sorted(saved.name for saved in job.session.results()) == existing
        if not existing:
            job(write.format(how=""))
