"""A team's PySpark job runs unchanged under ``dltrace run`` (issue: real jobs; README, "PySpark
DataFrame pipelines"; dltrace/dataframe/jobs.py and job_files.py).

The shop job (``dltrace/examples/shop_job.py``, written as a data engineer writes one: file
reads, an eager count, a temporary view with ``spark.sql``, windows, a table and a Parquet
directory written, read back) runs as ``python job.py`` (classic Spark, as ``spark-submit``)
and as ``dltrace run job.py``, each in a process of its own: the same printed output, the same
files and tables, and impact answers equal to an independent DuckDB computation over the
files.  The other tests run scripts in this process (``run_job``, on this run's JVM through
Spark Connect), one form of read, write, eager call or refusal each.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import duckdb
import pyarrow.parquet as pq
import pytest

from dltrace import LineageSession
from dltrace.catalog import Catalog
from dltrace.dataframe.jobs import JobError
from dltrace.examples import shop_data
from dltrace.spark import CONNECT_API
from tests.conftest import ROOT

pytestmark = pytest.mark.spark
SHOP_JOB = ROOT / "dltrace" / "examples" / "shop_job.py"


def python_env() -> dict:
    environment = {**os.environ, "SPARK_DRIVER_MEMORY": "1g"}
    for key in CONNECT_API:
        environment.pop(key, None)
    return environment


@pytest.fixture(scope="module")
def shop_runs(tmp_path_factory):
    """The shop job over 600 generated orders, run plain and under ``dltrace run`` (twice:
    the second run must register nothing new), each in a directory of its own."""
    data = shop_data.write(tmp_path_factory.mktemp("shop-data"), orders=600)
    runs = {}
    for kind in ("plain", "dltrace", "again"):
        work = tmp_path_factory.mktemp(f"shop-{kind}") if kind != "again" else runs["dltrace"]["work"]
        out = work / ("out-again" if kind == "again" else "out")
        command = [sys.executable, str(SHOP_JOB), str(data), str(out)]
        if kind != "plain":
            profiled = ["--profile-json", str(work / "profile.json")] if kind == "again" else []
            command = [sys.executable, "-m", "dltrace", "run", "--catalog", str(work / "catalog"), *profiled,
                       *command[1:]]
        done = subprocess.run(command, capture_output=True, text=True, env=python_env(), cwd=work, timeout=900)
        assert done.returncode == 0, done.stderr[-3000:]
        runs[kind] = {"work": work, "out": out, "stdout": done.stdout, "stderr": done.stderr}
        if kind != "plain":
            runs[kind]["tables"] = dict(Catalog(work / "catalog").tables)
    return data, runs


def parquet_rows(directory: Path) -> list[tuple]:
    """The rows of the Parquet files Spark wrote in ``directory``, sorted."""
    return sorted(duckdb.sql(f"SELECT * FROM read_parquet('{directory}/*.parquet')").fetchall(),
                  key=lambda row: json.dumps(row, default=str))


def test_the_shop_job_prints_and_writes_what_plain_spark_does(shop_runs):
    _, runs = shop_runs
    plain, traced = runs["plain"], runs["dltrace"]
    assert traced["stdout"] == plain["stdout"]  # the eager count, the count of the saved table, the rows read back
    assert "decimal" not in traced["stdout"] and "3" in traced["stdout"]
    for output in (Path("out") / "category_weekly", Path("spark-warehouse") / "country_daily"):
        assert parquet_rows(traced["work"] / output) == parquet_rows(plain["work"] / output), output
    schema = [pq.read_schema(next((run["work"] / "out" / "category_weekly").glob("*.parquet"))).types
              for run in (traced, plain)]
    assert schema[0] == schema[1]
    lines = traced["stderr"]
    for expected in ("line 21: read", "registered as table orders", "in place", "line 40: saving result country_daily",
                     "saved result category_weekly", "written to"):
        assert expected in lines


def test_the_second_run_registers_nothing_and_keeps_the_ids(shop_runs):
    _, runs = shop_runs
    again = runs["again"]["stderr"]
    assert "registered as table" not in again and again.count("(registered, unchanged)") == 3
    # the same entries: codes, versions, files and row numbers, so every id names the same row
    assert runs["again"]["tables"] == runs["dltrace"]["tables"]
    assert {name: entry.version for name, entry in runs["again"]["tables"].items()} == \
           {"orders": 1, "customers": 1, "products": 1}


def test_a_profiled_run_times_each_read_and_step_in_phases_and_prints_what_it_prints(shop_runs):
    _, runs = shop_runs
    again = runs["again"]
    assert again["stdout"] == runs["plain"]["stdout"]  # the profile is on stderr only
    assert "dltrace: profile of" in again["stderr"] and "the script's own work" in again["stderr"]
    profile = json.loads((again["work"] / "profile.json").read_text())
    steps = {entry["name"]: entry for entry in profile["entries"] if entry["kind"] == "step"}
    reads = [entry for entry in profile["entries"] if entry["kind"] == "read"]
    # out-again is a path of its own: its result is category_weekly_2
    assert set(steps) == {"country_daily", "category_weekly_2"} and len(reads) >= 3
    for name, step in steps.items():
        assert step["rows"] > 0 and step["plain_seconds"] > 0 and step["lineage_ids"] > 0, name
        assert step["lineage_bytes"] > 0 and {"plan", "save", "write", "other"} <= set(step["seconds"]), name
        assert step["jobs"]["save"] >= 1 and step["jobs"]["write"] >= 1 and step["jobs"]["plain"] >= 1, name
        assert abs(sum(step["seconds"].values()) - step["total"]) < 0.01, name
    assert sum(entry["total"] for entry in profile["entries"]) < profile["seconds"]


def shop_oracle(data: Path, order_id: int) -> tuple[set, set]:
    """What order ``order_id`` touches, computed by DuckDB from the files and the rules of
    control semantics: ``country_daily`` rows whose day's rank partition holds a row of the
    order's country (its running window's partition), and ``category_weekly``'s row of its
    category; nothing when the order was cancelled."""
    con = duckdb.connect()
    con.execute(f"CREATE VIEW orders AS SELECT * FROM read_parquet('{data}/orders/*.parquet')")
    con.execute(f"CREATE VIEW customers AS SELECT * FROM read_csv_auto('{data}/customers.csv', header=true)")
    con.execute(f"CREATE VIEW products AS SELECT * FROM read_json_auto('{data}/products.json')")
    con.execute("""CREATE VIEW kept AS SELECT o.*, CAST(o.order_ts AS DATE) AS day, p.category, c.country
                   FROM orders o LEFT JOIN products p USING (product_id) LEFT JOIN customers c USING (customer_id)
                   WHERE o.status <> 'cancelled'""")
    row = con.execute(f"SELECT country, category FROM kept WHERE order_id = {order_id}").fetchall()
    if not row:
        return set(), set()
    country, category = row[0]
    days = {d for (d,) in con.execute("SELECT DISTINCT day FROM kept WHERE country IS NOT DISTINCT FROM ?",
                                      [country]).fetchall()}
    daily = {(c, d) for c, d in con.execute("SELECT DISTINCT country, day FROM kept").fetchall() if d in days}
    return daily, {category}


def test_impact_of_a_source_row_equals_duckdb_over_the_files(shop_runs, spark):
    data, runs = shop_runs
    session = LineageSession(runs["dltrace"]["work"] / "catalog", spark=spark)
    for order_id in (1, 17, 333):
        daily, categories = shop_oracle(data, order_id)
        hit = session.impact(f"orders WHERE order_id = {order_id}")
        got_daily = {(r["country"], r["day"]) for r in hit["country_daily"].collect()} if "country_daily" in hit \
            else set()
        got_categories = {r["category"] for r in hit["category_weekly"].collect()} if "category_weekly" in hit \
            else set()
        assert (got_daily, got_categories) == (daily, categories), order_id


# --- scripts run in this process ----------------------------------------------------------


def test_each_read_form_is_a_source_with_the_rows_spark_reads(job, spark):
    data = job.data
    (data / "semi.csv").write_text("a;b\n1;x\n2;y\n")
    pq_orc = data / "orders.orc"
    import pyarrow.orc as orc

    orc.write_table(pq.read_table(data / "orders" / "part-00000.parquet"), pq_orc)
    _, said = job(f"""
        from pyspark.sql import SparkSession
        spark = SparkSession.builder.getOrCreate()
        a = spark.read.parquet("{data}/orders")
        b = spark.read.format("csv").option("header", "true").load("{data}/customers.csv")
        c = spark.read.option("sep", ";").csv("{data}/semi.csv", header=True, inferSchema=True)
        d = spark.read.json("{data}/products.json")
        e = spark.read.orc("{pq_orc}")
        f = spark.read.format("parquet").load("{data}/orders")
        print(a.count(), b.count(), c.collect(), d.count(), e.count(), f.count())
    """)
    tables = job.session.catalog.tables
    assert set(tables) == {"orders", "customers", "semi", "products", "orders_2"}
    assert any("read" in line and "orders.orc" in line and "orders_2" in line for line in said)  # a name taken
    assert tables["orders"].files and tables["orders"].rows == 200
    # the CSV as the job's reader reads it: no inferSchema, so every column is a string
    assert set(tables["customers"].schema.values()) == {"string"}
    assert tables["semi"].schema == {"a": "int", "b": "string"}
    frames = job.session.frames
    assert sorted(frames.table("semi").collect()) == sorted(
        spark.read.option("sep", ";").csv(str(data / "semi.csv"), header=True, inferSchema=True).collect())


def test_refusals_name_the_line_and_do_no_work(job):
    data = job.data
    job(f"""
        from pyspark.sql import SparkSession
        SparkSession.builder.getOrCreate().read.parquet("{data}/orders").count()
    """)  # orders registered in place
    cases = {
        f'spark.read.text("{data}/customers.csv")': "text files",
        'spark.table("x").write.insertInto("x")': "no table x",
        f'spark.table("x").write.parquet("{data}/customers.csv")': "already exists",
        f'spark.table("x").write.mode("overwrite").parquet("{data}/orders")': "registered in place",
        'spark.read.format("jdbc").option("url", "jdbc:x").load()': "without a path",
        f'spark.table("x").write.mode("overwrite").option("replaceWhere", "category = 1")'
        f'.partitionBy("category").parquet("{data}/out")': "replaceWhere",
        'spark.table("x").write.bucketBy(2, "category").saveAsTable("b")': "bucketBy",
    }
    for call, said in cases.items():
        with pytest.raises(JobError) as refused:
            job(f"""
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                spark.read.json("{data}/products.json").createOrReplaceTempView("x")
                {call}
            """)
        assert "line 5" in str(refused.value) and said in str(refused.value), call
        assert "\n" not in str(refused.value)
    assert not job.session.store.list() and not (data / "out").exists()


def test_eager_calls_work_before_and_after_a_save(job, capsys):
    data = job.data
    _, said = job(f"""
        from pyspark.sql import SparkSession, functions as F
        spark = SparkSession.builder.getOrCreate()
        orders = spark.read.parquet("{data}/orders").cache()
        print("orders", orders.count(), len(orders.toPandas()), len(orders.collect()))
        orders.where("status = 'shipped'").createOrReplaceTempView("shipped")
        per_customer = spark.sql("SELECT customer_id, COUNT(*) AS n FROM shipped GROUP BY customer_id")
        per_customer.show(2)
        per_customer.write.mode("overwrite").saveAsTable("per_customer")
        print("saved", spark.table("per_customer").count(), spark.sql("SELECT SUM(n) FROM per_customer").first()[0])
        top = spark.table("per_customer").orderBy(F.desc("n"), "customer_id").limit(3)
        top.write.mode("overwrite").saveAsTable("top_customers")
        print("top", [tuple(r) for r in spark.table("top_customers").collect()])
    """)
    shipped = duckdb.sql(f"SELECT customer_id, COUNT(*) FROM read_parquet('{data}/orders/*.parquet') "
                         f"WHERE status = 'shipped' GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT 3").fetchall()
    result = job.session.result("top_customers").collect()
    assert [(r["customer_id"], r["n"]) for r in result] == [tuple(row) for row in shipped]
    printed = capsys.readouterr().out
    total = duckdb.sql(f"SELECT COUNT(*) FROM read_parquet('{data}/orders/*.parquet') WHERE status = 'shipped'")
    customers = duckdb.sql(f"SELECT COUNT(DISTINCT customer_id) FROM read_parquet('{data}/orders/*.parquet') "
                           f"WHERE status = 'shipped'")
    assert "orders 200 200 200" in printed
    assert f"saved {customers.fetchone()[0]} {total.fetchone()[0]}" in printed
    assert f"top {[tuple(row) for row in shipped]}" in printed
    assert all(r["DL"] for r in result)
    assert any("saving result per_customer" in line for line in said)


def test_path_writes_land_as_plain_spark_writes_them_and_reads_compose(job):
    data, out = job.data, job.data.parent / "out"
    steps, said = job(f"""
        import sys
        from pyspark.sql import SparkSession, functions as F
        spark = SparkSession.builder.getOrCreate()
        orders = spark.read.parquet("{data}/orders").withColumn("day", F.to_date("order_ts"))
        daily = orders.groupBy("status", "day").agg(F.count("*").alias("n"))
        daily.write.mode("overwrite").partitionBy("status").parquet(sys.argv[1] + "/daily")
        daily.write.mode("overwrite").option("header", True).csv(sys.argv[1] + "/daily_csv")
        daily.write.format("json").save(sys.argv[1] + "/daily_json")
        daily.write.mode("ignore").json(sys.argv[1] + "/daily_json")
        back = spark.read.parquet(sys.argv[1] + "/daily")
        back.groupBy("status").agg(F.sum("n").alias("n")).write.mode("overwrite").saveAsTable("per_status")
    """, str(out))
    assert [step.name for step in steps] == ["daily", "daily_csv", "daily_json", "per_status"]
    expected = duckdb.sql(f"SELECT status, CAST(order_ts AS DATE) AS day, COUNT(*) AS n "
                          f"FROM read_parquet('{data}/orders/*.parquet') GROUP BY ALL ORDER BY ALL").fetchall()
    written = duckdb.sql(f"SELECT status, day, n FROM read_parquet('{out}/daily/*/*.parquet', hive_partitioning=true) "
                         f"ORDER BY ALL").fetchall()
    assert written == expected
    assert duckdb.sql(f"SELECT COUNT(*) FROM read_csv_auto('{out}/daily_csv/*.csv', header=true)").fetchone()[0] == \
        len(expected)
    assert any("nothing written" in line for line in said)
    assert any("the saved result daily written there" in line for line in said)
    # the read of the written directory is the step's result: impact reaches through it
    hit = job.session.impact("orders WHERE order_id = 5", result="per_status").collect()
    status = duckdb.sql(f"SELECT status FROM read_parquet('{data}/orders/*.parquet') WHERE order_id = 5").fetchone()
    assert [r["status"] for r in hit] == [status[0]]


def test_a_resumed_run_skips_the_steps_saved_from_unchanged_inputs(job):
    text = f"""
        from pyspark.sql import SparkSession
        spark = SparkSession.builder.getOrCreate()
        o = spark.read.parquet("{job.data}/orders")
        o.groupBy("status").count().write.mode("overwrite").saveAsTable("by_status")
        o.groupBy("customer_id").count().write.mode("overwrite").saveAsTable("by_customer")
        o.groupBy("product_id").count().write.parquet("{job.data.parent}/by_product")  # mode error
    """
    job(text)
    steps, _ = job(text, resume=True)  # the default mode's write is skipped, not refused as existing
    assert [step.skipped for step in steps] == [True, True, True]
    steps, _ = job(text.replace('groupBy("customer_id")', 'groupBy("status", "customer_id")'), resume=True)
    assert [step.skipped for step in steps] == [True, False, True]
    (job.data / "orders" / "part-00001.parquet").unlink()  # an input changed: every step runs again
    overwriting = text.replace(".write.parquet(", ".write.mode('overwrite').parquet(")
    steps, _ = job(overwriting, resume=True)
    assert [step.skipped for step in steps] == [False, False, False]
    steps, _ = job(overwriting, resume=True, semantics="data")  # other semantics: saved again
    assert [step.skipped for step in steps] == [False, False, False]


def test_decimal_literals_keep_their_spark_types(job, capsys):
    from decimal import Decimal

    from pyspark.sql import functions as F

    frames = job.session.frames
    job.session.register("orders", job.data / "orders")
    per_status = frames.table("orders").groupBy("status").agg(
        (F.sum(F.col("qty").cast("decimal(15,2)")) / Decimal("7.0")).alias("q"))
    assert job.session.trace(per_status).schema["q"].dataType == per_status.schema["q"].dataType
    # under dltrace run, as spark-submit (classic Spark) types them
    steps, _ = job("""
        from decimal import Decimal
        from pyspark.sql import SparkSession, functions as F
        spark = SparkSession.builder.getOrCreate()
        print(spark.range(1).select(F.lit(Decimal("7.0")).alias("l")).schema.simpleString())
        spark.table("orders").groupBy("status").agg((F.sum("order_id") / Decimal("7.0")).alias("q")) \\
            .write.mode("overwrite").saveAsTable("q")
    """)
    assert job.session.store.get("q").schema["q"] == "decimal(27,6)"  # Connect: decimal(32,11)
    assert "struct<l:decimal(2,1)>" in capsys.readouterr().out


def test_register_then_frames_in_python(spark, tmp_path, monkeypatch):
    """The natural order in Python: register first (Spark starts classic), then build
    DataFrames in ``ls.frames``; a table registered later is visible at once."""
    for key in CONNECT_API:
        monkeypatch.setenv(key, os.environ.get(key, ""))  # restored after the test
        monkeypatch.delenv(key)
    data = shop_data.write(tmp_path / "data", orders=50)
    session = LineageSession(tmp_path / "catalog", spark=spark)
    session.register("orders", data / "orders")
    frames = session.frames
    assert frames.table("orders").count() == 50
    session.register("products", data / "products.json")
    assert frames.table("products").count() == 40
    assert session.trace(frames.table("orders").groupBy("status").count()).count() == 3


def test_table_writes_and_the_other_read_forms(job, spark):
    data, out = job.data, job.data.parent / "out"
    steps, _ = job(f"""
        from pyspark.sql import SparkSession, functions as F
        spark = SparkSession.builder.getOrCreate()
        spark.read.parquet("{data}/orders").groupBy("status").count().writeTo("status_counts").create()
        again = spark.read.table("status_counts").withColumn("twice", F.col("count") * 2)
        again.writeTo("status_twice").createOrReplace()
        again.write.format("orc").mode("overwrite").save("{out}/twice_orc")
        print(sorted(tuple(r) for r in spark.read.orc("{out}/twice_orc").collect()))
    """)
    assert [step.name for step in steps] == ["status_counts", "status_twice", "twice_orc"]
    expected = duckdb.sql(f"SELECT status, COUNT(*), 2 * COUNT(*) FROM read_parquet('{data}/orders/*.parquet') "
                          f"GROUP BY 1 ORDER BY 1").fetchall()
    assert sorted(tuple(r) for r in spark.read.orc(str(out / "twice_orc")).collect()) == expected
    assert sorted(tuple(r) for r in spark.table("spark_catalog.default.status_twice").collect()) == expected
    hit = job.session.impact("orders WHERE order_id = 3", result="twice_orc").collect()
    assert len(hit) == 1


def test_a_job_exploding_json_arrays_pivoting_and_joining_local_rows(job):
    """Issue 55's job: a JSON array column read from a file exploded, joined to a
    createDataFrame lookup and pivoted (by region without values, by sku with them); the
    impact of one source row is the pivoted rows of its items' groups, as DuckDB finds them
    over the file."""
    events = job.data / "events.json"
    rows = [{"order_no": n, "region": ["north", "south", "east"][n % 3],
             "items": [{"sku": "abc"[(n + k) % 3], "qty": n + k} for k in range(n % 4)]} for n in range(1, 31)]
    events.write_text("".join(json.dumps(row) + "\n" for row in rows))
    steps, _ = job(f"""
        from pyspark.sql import SparkSession, functions as F
        spark = SparkSession.builder.getOrCreate()
        lines = (spark.read.json("{events}").select("order_no", "region", F.explode("items").alias("item"))
                 .select("order_no", "region", "item.sku", "item.qty"))
        names = spark.createDataFrame([("a", "Apples"), ("b", "Bananas"), ("c", "Cherries")], "sku string, name string")
        named = lines.join(names, "sku")
        named.groupBy("name").pivot("region").agg(F.sum("qty")).write.mode("overwrite").saveAsTable("by_name")
        by_region = named.groupBy("region").pivot("name", ["Apples", "Bananas"]).agg(F.count("order_no"))
        by_region.write.saveAsTable("by_region")
    """)
    assert [step.name for step in steps] == ["by_name", "by_region"]
    names = {"a": "Apples", "b": "Bananas", "c": "Cherries"}
    for order_no in (2, 7, 29, 4):  # order 4 has no items: it made no row
        items = duckdb.sql(f"SELECT region, unnest(items).sku FROM read_json_auto('{events}') "
                           f"WHERE order_no = {order_no}").fetchall()
        hit = job.session.impact(f"events WHERE order_no = {order_no}")
        hit_names = {r["name"] for r in hit["by_name"].collect()} if "by_name" in hit else set()
        hit_regions = {r["region"] for r in hit["by_region"].collect()} if "by_region" in hit else set()
        assert hit_names == {names[sku] for _, sku in items}, order_no
        assert hit_regions == {region for region, _ in items}, order_no
