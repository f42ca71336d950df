"""DataFrame programs have the lineage of the same query written in SQL (README, "PySpark
DataFrame pipelines"): rows and DL bags equal, both semantics, both representations; the 22
TPC-H queries written in the DataFrame API against their SQL; the completeness oracle on
the SQL a program is translated to; refused operators; saved steps and PySpark jobs.

The DataFrames are built on Spark Connect, served by the test run's own JVM
(``dltrace.spark.serve_connect``); the process uses Connect's API only while these tests run
(``connect_api``), as ``dltrace run job.py`` does for a whole process.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path

import pytest

from dltrace import LineageSession
from dltrace.errors import BadInput, UnsupportedLineage
from dltrace.spark import CONNECT_API, connect_session, serve_connect
from tests.conftest import ROOT, tpch_copy
from tests.oracle import DuckOracle, check_completeness
from tests.test_representations import lineage_bag
from tpch.queries import load

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def frames_session(spark, tpch, tmp_path_factory) -> LineageSession:
    """A LineageSession over a copy of TPC-H SF 0.01 whose engine is a Spark Connect session
    on this run's JVM; ``.frames`` is where DataFrames are built."""
    engine = connect_session(serve_connect(spark))
    return LineageSession(tpch_copy(tpch, tmp_path_factory, "frames").catalog.directory, spark=engine)


@pytest.fixture
def frames(frames_session, monkeypatch) -> LineageSession:
    """``frames_session`` with this process on Spark Connect's API for the test (pyspark's
    functions build Connect columns), as ``dltrace run job.py`` runs a whole process."""
    for key, value in CONNECT_API.items():
        monkeypatch.setenv(key, value)
    return frames_session


def bag(frame) -> Counter:
    """Rows with their DL, as a bag (order aside)."""
    return lineage_bag(frame.collect())


def check_same(session: LineageSession, frame, sql: str, semantics: str = "control", representation: str = "set"):
    traced = session.trace(frame, semantics, representation)
    written = session.sql(sql, semantics, representation)
    assert traced.columns == written.columns
    assert bag(traced) == bag(written)
    return traced


def programs(spark):
    """DataFrame programs over TPC-H and the same queries in SQL, one per operator family."""
    from pyspark.sql import functions as F
    from pyspark.sql.window import Window

    orders, customer, nation = spark.table("orders"), spark.table("customer"), spark.table("nation")
    region = spark.table("region")
    lineitem = spark.table("lineitem")
    recent = Window.partitionBy("o_custkey").orderBy(F.desc("o_orderdate"), "o_orderkey")
    by_customer = Window.partitionBy("o_custkey").orderBy("o_orderdate", "o_orderkey")
    return {
        "filter-select": (
            orders.where(F.col("o_totalprice") > 400000).select("o_orderkey", (F.col("o_totalprice") / 2).alias("h")),
            "select o_orderkey, o_totalprice / 2 as h from orders where o_totalprice > 400000"),
        "sql-strings": (
            orders.filter("o_orderpriority = '1-URGENT' and o_totalprice > 350000")
                  .selectExpr("o_orderkey", "o_custkey + 1 as k"),
            "select o_orderkey, o_custkey + 1 as k from orders "
            "where o_orderpriority = '1-URGENT' and o_totalprice > 350000"),
        "withColumn-rename-drop": (
            nation.withColumn("n2", F.col("n_nationkey") * 2).withColumnRenamed("n_name", "name")
                  .drop("n_comment"),
            "select n_nationkey, n_name as name, n_regionkey, n_nationkey * 2 as n2 from nation"),
        "join-group": (
            customer.join(orders, customer["c_custkey"] == orders["o_custkey"])
                    .groupBy("c_nationkey").agg(F.count("*").alias("n"), F.countDistinct("c_custkey").alias("d"),
                                                F.sum("o_totalprice").alias("s")),
            "select c_nationkey, count(*) as n, count(distinct c_custkey) as d, sum(o_totalprice) as s "
            "from customer join orders on c_custkey = o_custkey group by c_nationkey"),
        "join-using-left": (
            nation.join(customer.withColumnRenamed("c_nationkey", "n_nationkey"), ["n_nationkey"], "left")
                  .groupBy("n_name").agg(F.count("c_custkey").alias("customers")),
            "select n_name, count(c_custkey) as customers from nation left join "
            "(select c_custkey, c_nationkey as n_nationkey from customer) c using (n_nationkey) group by n_name"),
        "semi-anti": (
            customer.join(orders.where(F.col("o_orderpriority") == "1-URGENT"),
                          F.col("c_custkey") == F.col("o_custkey"), "left_semi")
                    .join(orders.where(F.col("o_totalprice") > 400000), F.col("c_custkey") == F.col("o_custkey"),
                          "left_anti").select("c_custkey", "c_name"),
            "select c_custkey, c_name from customer where exists (select * from orders where o_custkey = c_custkey "
            "and o_orderpriority = '1-URGENT') and not exists (select * from orders where o_custkey = c_custkey "
            "and o_totalprice > 400000)"),
        "self-join-alias": (
            nation.alias("a").join(nation.alias("b"), F.col("a.n_regionkey") == F.col("b.n_regionkey"))
                  .where(F.col("a.n_nationkey") < F.col("b.n_nationkey"))
                  .select(F.col("a.n_name").alias("x"), F.col("b.n_name").alias("y")),
            "select a.n_name as x, b.n_name as y from nation a join nation b on a.n_regionkey = b.n_regionkey "
            "where a.n_nationkey < b.n_nationkey"),
        "distinct-dropDuplicates": (
            orders.select("o_orderpriority", "o_orderstatus").distinct()
                  .union(orders.select("o_orderpriority", "o_orderstatus").dropDuplicates(["o_orderpriority"])),
            "select distinct o_orderpriority, o_orderstatus from orders union all "
            "select o_orderpriority, first(o_orderstatus) as o_orderstatus from orders group by o_orderpriority"),
        "set-operations": (
            customer.select("c_nationkey").intersect(nation.select("n_nationkey"))
                    .unionByName(nation.select(F.col("n_regionkey").alias("c_nationkey")).subtract(
                        customer.select("c_nationkey"))),
            "(select c_nationkey from customer intersect select n_nationkey from nation) union all "
            "(select n_regionkey as c_nationkey from nation except select c_nationkey from customer)"),
        "window-orderBy-limit": (
            orders.withColumn("rn", F.row_number().over(recent)).where(F.col("rn") == 1)
                  .orderBy(F.desc("o_totalprice"), "o_orderkey").limit(7).select("o_orderkey", "o_custkey", "rn"),
            "select o_orderkey, o_custkey, rn from (select *, row_number() over (partition by o_custkey order by "
            "o_orderdate desc, o_orderkey) as rn from orders) t where rn = 1 "
            "order by o_totalprice desc, o_orderkey limit 7"),
        "window-frames": (
            orders.select("o_orderkey", "o_custkey",
                          F.sum("o_totalprice").over(by_customer.rowsBetween(Window.unboundedPreceding,
                                                                             Window.currentRow)).alias("running"),
                          F.lag("o_totalprice").over(by_customer).alias("prev"),
                          F.avg("o_totalprice").over(by_customer.rowsBetween(-1, 1)).alias("smooth"),
                          F.rank().over(Window.partitionBy("o_custkey").orderBy("o_orderpriority")).alias("r")),
            "select o_orderkey, o_custkey, sum(o_totalprice) over (partition by o_custkey order by o_orderdate, "
            "o_orderkey rows between unbounded preceding and current row) as running, lag(o_totalprice) over "
            "(partition by o_custkey order by o_orderdate, o_orderkey) as prev, avg(o_totalprice) over (partition by "
            "o_custkey order by o_orderdate, o_orderkey rows between 1 preceding and 1 following) as smooth, "
            "rank() over (partition by o_custkey order by o_orderpriority) as r from orders"),
        "when-cast-isin-na": (
            lineitem.where(F.col("l_shipmode").isin("MAIL", "SHIP"))
                    .groupBy("l_shipmode")
                    .agg(F.sum(F.when(F.col("l_linenumber") == 1, 1).otherwise(0)).alias("first_lines"),
                         F.max(F.col("l_quantity").cast("int")).alias("q"))
                    .na.fill(0),
            "select l_shipmode, coalesce(sum(case when l_linenumber = 1 then 1 else 0 end), 0) as first_lines, "
            "coalesce(max(cast(l_quantity as int)), 0) as q from lineitem where l_shipmode in ('MAIL', 'SHIP') "
            "group by l_shipmode"),
        "spark-sql-inside": (
            spark.sql("select c_custkey, c_nationkey from customer where c_acctbal > 9000")
                 .join(nation, F.col("c_nationkey") == F.col("n_nationkey")).select("c_custkey", "n_name"),
            "select c_custkey, n_name from customer join nation on c_nationkey = n_nationkey "
            "where c_acctbal > 9000"),
        "subqueries": (
            nation.where(~orders.where(F.col("o_custkey") == F.col("n_nationkey").outer()).exists()
                         & F.col("n_regionkey").isin(nation.where(F.col("n_name") < "F").select("n_regionkey")))
                  .select("n_name", customer.where(F.col("c_nationkey") == F.col("n_nationkey").outer())
                          .select(F.count("*")).scalar().alias("customers")),
            "select n_name, (select count(*) from customer where c_nationkey = n_nationkey) as customers "
            "from nation where not exists (select * from orders where o_custkey = n_nationkey) "
            "and n_regionkey in (select n_regionkey from nation where n_name < 'F')"),
        "crossJoin-one-row-agg": (  # its lineage a shared copy (rewriter/one_row_join.py)
            orders.crossJoin(orders.agg(F.avg("o_totalprice").alias("a")))
                  .where(F.col("o_totalprice") > F.col("a") * 2)
                  .groupBy("o_orderpriority").agg(F.count("*").alias("n")),
            "select o_orderpriority, count(*) as n from orders cross join "
            "(select avg(o_totalprice) as a from orders) t where o_totalprice > t.a * 2 group by o_orderpriority"),
        # rows the program writes carry no ids: a lookup joined to a table, a range grouped with one
        "local-rows": (
            nation.join(spark.createDataFrame([(0, "zero"), (1, "one"), (4, None)], "k int, label string"),
                        F.col("n_regionkey") == F.col("k")).select("n_name", "label"),
            "select n_name, label from nation join values (0, 'zero'), (1, 'one'), (4, cast(null as string)) "
            "as v(k, label) on n_regionkey = k"),
        "range": (
            spark.range(1, 6, 2).join(nation, F.col("id") == F.col("n_regionkey"), "left")
                 .groupBy("id").agg(F.count("n_name").alias("n")),
            "select id, count(n_name) as n from range(1, 6, 2) left join nation on id = n_regionkey group by id"),
        # a generated row's lineage is its input row's: generators in select and withColumn
        "explode-split-grouped": (
            nation.select("n_name", F.explode(F.split("n_comment", " ")).alias("word")).groupBy("word").count(),
            "select word, count(*) as count from nation lateral view explode(split(n_comment, ' ')) g as word "
            "group by word"),
        "explode-selectExpr": (
            nation.selectExpr("n_name", "explode(array(n_nationkey, n_regionkey)) as k").where("k > 2"),
            "select n_name, k from (select n_name, explode(array(n_nationkey, n_regionkey)) as k from nation) "
            "where k > 2"),
        "posexplode-named-and-not": (
            region.select("r_name", F.posexplode(F.array("r_regionkey", F.length("r_name"))).alias("p", "v"))
                  .select("r_name", "p", "v", F.posexplode(F.array("p", "v"))),
            "select r_name, p, v, posexplode(array(p, v)) from (select r_name, p, v from region lateral view "
            "posexplode(array(r_regionkey, length(r_name))) g as p, v)"),
        "explode-outer-inline-json": (
            region.withColumn("w", F.explode_outer(F.filter(F.array("r_regionkey"), lambda x: x > 2)))
                  .select("r_name", "w", F.inline(F.array(F.struct(F.col("w").alias("a"), F.lit("x").alias("b")))))
                  .select("r_name", "w", "a", F.json_tuple(F.concat(F.lit('{"k": "'), "b", F.lit('"}')), "k")),
            "select r_name, w, a, json_tuple(concat('{\"k\": \"', b, '\"}'), 'k') from (select r_name, w, a, b "
            "from region lateral view outer explode(filter(array(r_regionkey), x -> x > 2)) g as w lateral view "
            "inline(array(named_struct('a', w, 'b', 'x'))) h as a, b)"),
        # each unpivoted row comes from one input row; Dataset.unpivot keeps NULL values
        "unpivot": (
            region.unpivot(["r_regionkey"], ["r_name", "r_comment"], "k", "v"),
            "select r_regionkey, k, v from region unpivot include nulls (v for k in (r_name, r_comment))"),
        "melt-nulls-grouped": (
            nation.select("n_nationkey", "n_name", F.when(F.col("n_regionkey") > 2, F.col("n_name")).alias("big"))
                  .melt("n_nationkey", None, "k", "v").groupBy("k").agg(F.count("v").alias("n")),
            "select k, count(v) as n from (select n_nationkey, n_name, case when n_regionkey > 2 then n_name end "
            "as big from nation) unpivot include nulls (v for k in (n_name, big)) group by k"),
        # a pivoted row is a group: its pivoted values' rows (data), all its rows (control)
        "pivot": (
            orders.groupBy("o_orderpriority").pivot("o_orderstatus", ["F", "P"]).sum("o_totalprice"),
            "select * from (select o_orderpriority, o_orderstatus, o_totalprice from orders) "
            "pivot (sum(o_totalprice) for o_orderstatus in ('F', 'P'))"),
        "pivot-two-aggregates": (
            nation.groupBy("n_regionkey").pivot("n_name", ["ALGERIA", "BRAZIL", "CHINA"])
                  .agg(F.count("n_nationkey").alias("c"), F.max("n_regionkey")),
            "select * from (select n_regionkey, n_name, n_nationkey, n_regionkey as r from nation) "
            "pivot (count(n_nationkey) as c, max(r) as `max(n_regionkey)` for n_name in ('ALGERIA', 'BRAZIL', "
            "'CHINA'))"),
        # without values Spark pivots on the column's sorted distinct values: the PIVOT it then runs
        "pivot-without-values": (
            orders.where(F.col("o_orderkey") < 2000).groupBy("o_orderpriority").pivot("o_orderstatus")
                  .agg(F.count("o_orderkey")),
            "select * from (select o_orderpriority, o_orderstatus, o_orderkey from orders where o_orderkey < 2000) "
            "pivot (count(o_orderkey) for o_orderstatus in ('F', 'O', 'P'))"),
    }


PROGRAMS = ["filter-select", "sql-strings", "withColumn-rename-drop", "join-group", "join-using-left", "semi-anti",
            "self-join-alias", "distinct-dropDuplicates", "set-operations", "window-orderBy-limit", "window-frames",
            "when-cast-isin-na", "spark-sql-inside", "subqueries", "local-rows", "range", "explode-split-grouped",
            "explode-selectExpr", "posexplode-named-and-not", "explode-outer-inline-json", "unpivot",
            "melt-nulls-grouped", "pivot", "pivot-two-aggregates", "pivot-without-values",
            "crossJoin-one-row-agg"]


@pytest.mark.parametrize("name", ["explode-outer-inline-json", "unpivot", "melt-nulls-grouped", "local-rows", "pivot",
                                  "pivot-two-aggregates", "pivot-without-values"])
def test_a_reshaping_program_keeps_its_rows(frames, name):
    """Generators, unpivot and local rows traced give the program's own rows (Spark's NULL
    handling included)."""
    frame, _ = programs(frames.frames)[name]
    assert values_bag(frames.trace(frame).collect()) == values_bag(frame.collect())


def test_a_struct_names_its_fields_as_spark_does(frames):
    """``F.struct(col.alias("k"), F.lit(1), "r_name")``: fields k, col2, r_name (issue 65: the
    aliases were dropped and the fields named col1, col2, ... in what dltrace saved and wrote)."""
    from pyspark.sql import functions as F

    region = frames.frames.table("region")
    frame = region.select("r_name", F.struct(F.col("r_regionkey").alias("k"), F.lit(1), "r_name").alias("s"))
    assert [f.name for f in frame.schema["s"].dataType.fields] == ["k", "col2", "r_name"]
    assert frames.trace(frame).drop("DL").schema == frame.schema


def test_union_by_name_matches_nested_fields_by_name_as_spark_does(frames):
    """``unionByName`` of structs (and arrays of structs) whose fields come in another order,
    and with ``allowMissingColumns`` a field only one side has (issue 65: refused with
    INCOMPATIBLE_COLUMN_TYPE): Spark's rows and types, each row's lineage its region row."""
    from pyspark.sql import functions as F

    region = frames.frames.table("region")
    key, name = F.col("r_regionkey"), F.col("r_name")
    first = region.select(key, F.array(F.struct(name.alias("sku"), F.lit(1).alias("qty"), F.lit(2.0).alias("price")))
                          .alias("items"), F.struct(F.lit(1).alias("x"), key.alias("y")).alias("s"))
    other = region.select(key, F.array(F.struct(F.lit(3.0).alias("price"), key.alias("qty"), name.alias("sku")))
                          .alias("items"), F.struct(key.alias("y"), F.lit(6).alias("x")).alias("s"))
    fewer = region.select(key, F.array(F.struct(F.lit(3.0).alias("price"), name.alias("sku"))).alias("items"),
                          F.struct(F.lit(5).alias("y"), F.lit("z").alias("z")).alias("s"))
    for union in (first.unionByName(other), first.unionByName(fewer, allowMissingColumns=True)):
        traced = frames.trace(union)
        assert traced.drop("DL").schema.simpleString() == union.schema.simpleString()
        assert sorted(map(str, traced.drop("DL").collect())) == sorted(map(str, union.collect()))
        ids = {r.r_regionkey: r._dl_id for r in frames.run("SELECT r_regionkey, _dl_id FROM region").collect()}
        assert all(list(r.DL) == [ids[r.r_regionkey]] for r in traced.collect())
    with pytest.raises(Exception, match="INCOMPATIBLE|FIELD"):  # a nested field one side lacks: Spark refuses
        first.unionByName(fewer).collect()
    with pytest.raises(BadInput, match="INCOMPATIBLE|FIELD"):  # and so does the traced union, not NULL-filled
        frames.trace(first.unionByName(fewer)).collect()


@pytest.mark.parametrize("name", PROGRAMS)
def test_a_program_has_the_lineage_of_its_sql(frames, name):
    frame, sql = programs(frames.frames)[name]
    check_same(frames, frame, sql)
    check_same(frames, frame, sql, "data")


@pytest.mark.parametrize("name", ["join-group", "semi-anti", "set-operations"])
def test_a_program_in_bdd_gives_the_same_sets(frames, name):
    frame, sql = programs(frames.frames)[name]
    check_same(frames, frame, sql, "control", "bdd")


def tpch_query(number: int) -> str:
    return load(f"q{number}")


# every query under both semantics, a sample of them with BDDs
TPCH_CASES = [(n, semantics) for semantics in ("control", "data") for n in range(1, 23)]


@pytest.mark.parametrize("number, semantics", TPCH_CASES, ids=[f"q{n}-{s}" for n, s in TPCH_CASES])
def test_tpch_in_the_dataframe_api_equals_sql(frames, number, semantics):
    from tpch.dataframe_queries import QUERIES

    frame = QUERIES[f"q{number}"](frames.frames)
    traced = check_same(frames, frame, tpch_query(number), semantics, "bdd" if number % 5 == 0 else "set")
    if semantics == "control":  # tracing never changes a value: the program's own rows and types
        assert traced.drop("DL").schema == frame.schema
        assert Counter(traced.drop("DL").collect()) == Counter(frame.collect())


def check_complete(session: LineageSession, frame, most: int = 3) -> None:
    """The paper's completeness theorem on the SQL a program is translated to, in its tree
    form (each table occurrence a relation of its own, as tests/test_tpch.py checks SQL): DuckDB
    runs the query on the base rows of a row's DL and gives back exactly that row."""
    sql = session.dataframe_sql(frame)
    tree = session.sql(sql, tag_instances=True).collect()
    check_completeness(DuckOracle(session), sql, tree, tree=True, most=most, instances=True)


@pytest.mark.parametrize("name", ["q2", "q11", "q15", "q18", "q20", "q22"])
def test_tpch_subqueries_written_as_joins(frames, name):
    """The same queries with their subqueries written as joins (tpch/dataframe_joined.py) are
    other queries under the paper's semantics: they give the SQL's rows, and lineage complete
    for their own SQL."""
    from tpch.dataframe_joined import JOINED

    frame = JOINED[name](frames.frames)
    assert values_bag(frames.trace(frame).collect()) == values_bag(frames.sql(load(name), lineage=False).collect())
    check_complete(frames, frame)


@pytest.mark.parametrize("number", [1, 2, 3, 10, 13, 16, 20, 21, 22])
def test_tpch_dataframe_lineage_is_complete(frames, number):
    from tpch.dataframe_queries import QUERIES

    check_complete(frames, QUERIES[f"q{number}"](frames.frames))


def values_bag(rows) -> Counter:
    return Counter(tuple(str(v) for k, v in r.asDict().items() if k != "DL") for r in rows)


@pytest.mark.parametrize("operator, build", [
    ("sample", lambda s: s.table("orders").sample(0.5)),
    ("mapInPandas", lambda s: s.table("nation").mapInPandas(lambda it: it, "n_nationkey long")),
    ("spark.read", lambda s: s.read.parquet(str(ROOT / "data" / "tpch-sf0.01" / "nation.parquet"))),
])
def test_operators_without_exact_lineage_are_refused(frames, operator, build):
    with pytest.raises(BadInput) as refused:
        frames.trace(build(frames.frames))
    assert operator.split(".")[-1].lower() in str(refused.value).lower() or isinstance(refused.value,
                                                                                   UnsupportedLineage)
    assert "\n" not in str(refused.value)


def test_local_rows_keep_their_values_and_types_and_carry_no_ids(frames):
    """createDataFrame of local data of every kind of column: the traced rows are the
    program's, with its types, and each DL is empty (rows of the program, not of a source)."""
    import datetime as dt
    from decimal import Decimal

    schema = ("i int, b bigint, d double, m decimal(12,3), s string, f boolean, day date, at timestamp, "
              "bytes binary, xs array<int>, st struct<a:int,`b c`:string>, kv map<string,int>")
    rows = [(1, 2**40, float("nan"), Decimal("-12.345"), "it's \\ \"q\"", True, dt.date(1969, 12, 31),
             dt.datetime(2024, 2, 29, 23, 59, 58, 123456), b"\x00\xff", [1, None], (1, "x"), {"k": 1}),
            (None, None, float("-inf"), None, None, None, None, None, None, [], None, {})]
    frame = frames.frames.createDataFrame(rows, schema)
    traced = frames.trace(frame)
    assert traced.drop("DL").schema.simpleString() == frame.schema.simpleString()  # (VALUES infers nullability)
    assert [repr(r) for r in traced.drop("DL").collect()] == [repr(r) for r in frame.collect()]  # NaN too
    assert [list(r.DL) for r in traced.collect()] == [[], []]
    empty = frames.frames.createDataFrame([], "x int, y string")
    assert frames.trace(empty).drop("DL").schema.simpleString() == empty.schema.simpleString()
    assert frames.trace(empty).count() == 0


def test_a_saved_dataframe_step_composes_like_a_sql_pipeline(frames):
    from pyspark.sql import functions as F

    spark = frames.frames
    step1 = (spark.table("customer").join(spark.table("orders"), F.col("c_custkey") == F.col("o_custkey"))
             .groupBy("c_custkey", "c_nationkey").agg(F.sum("o_totalprice").alias("revenue")))
    frames.save(step1, "df_custrev")
    step2 = (spark.table("df_custrev").join(spark.table("nation"), F.col("c_nationkey") == F.col("n_nationkey"))
             .groupBy("n_name").agg(F.sum("revenue").alias("revenue")))
    frames.save(step2, "df_natrev")
    inlined = frames.sql(
        "with custrev as (select c_custkey, c_nationkey, sum(o_totalprice) as revenue from customer join orders "
        "on c_custkey = o_custkey group by c_custkey, c_nationkey) select n_name, sum(revenue) as revenue "
        "from custrev join nation on c_nationkey = n_nationkey group by n_name")
    assert bag(frames.result("df_natrev").drop("_row")) == bag(inlined)
    assert spark.table("df_natrev").count() == 25  # the users' session reads saved results as tables


def test_a_dataframe_step_is_explained_summarized_staled_and_reasoned_as_a_sql_step(frames):
    """Explain, summaries, staleness and reasons read a saved step, not how it was written:
    the same query saved from a DataFrame and from SQL gives the same answers."""
    from pyspark.sql import functions as F

    module = "dltrace.examples.loans"
    frames.register_udf("approve_df", f"{module}:approve", reasons=f"{module}:approve_reasons")
    spark = frames.frames
    decided = (spark.table("customer")
               .select(F.call_function("approve_df", F.col("c_acctbal") * 20, F.col("c_acctbal"), F.lit(5000))
                       .alias("decision"), "c_nationkey")
               .where(F.col("c_nationkey") < 3).groupBy("decision").agg(F.count("*").alias("n")))
    frames.save(decided, "df_decided")
    frames.save(frames.sql("select approve_df(c_acctbal * 20, c_acctbal, 5000) as decision, count(*) as n "
                           "from customer where c_nationkey < 3 group by 1"), "sql_decided")
    rows = {name: {r.decision: r._row for r in frames.result(name).collect()} for name in ("df_decided", "sql_decided")}
    assert rows["df_decided"].keys() == rows["sql_decided"].keys()
    for decision, row in rows["df_decided"].items():
        other = rows["sql_decided"][decision]
        assert {t: sorted(map(tuple, f.collect())) for t, f in frames.explain("df_decided", row).items()} == \
               {t: sorted(map(tuple, f.collect())) for t, f in frames.explain("sql_decided", other).items()}
        (mine,), (theirs,) = frames.explain_reasons("df_decided", row), frames.explain_reasons("sql_decided", other)
        assert mine.rows.drop(columns="_row", errors="ignore").equals(theirs.rows.drop(columns="_row", errors="ignore"))
        assert frames.summarize("df_decided", row).tables == frames.summarize("sql_decided", other).tables
    frames.save(spark.table("nation").where(F.col("n_regionkey") == 1), "df_up")
    frames.save(spark.table("df_up").groupBy("n_regionkey").agg(F.count("*").alias("n")), "df_down")
    frames.save(frames.sql("select n_regionkey, count(*) as n from df_up group by n_regionkey"), "sql_down")
    frames.save(spark.table("nation").where(F.col("n_regionkey") == 2), "df_up")  # what both read changed
    stale = frames.stale_results()
    assert "df_down" in stale and stale["df_down"] == stale["sql_down"]


def test_a_classic_dataframe_is_refused_in_one_line(tpch, spark):
    with pytest.raises(BadInput, match="Spark Connect"):
        tpch.trace(spark.range(3))


JOB = textwrap.dedent("""\
    from pyspark.sql import SparkSession, functions as F

    spark = SparkSession.builder.appName("custrev").getOrCreate()
    orders = spark.table("orders")
    custrev = (spark.table("customer").join(orders, F.col("c_custkey") == F.col("o_custkey"))
               .groupBy("c_custkey", "c_nationkey").agg(F.sum("o_totalprice").alias("revenue")))
    custrev.write.mode("overwrite").saveAsTable("custrev")
    natrev = (spark.table("custrev").join(spark.table("nation"), F.col("c_nationkey") == F.col("n_nationkey"))
              .groupBy("n_name").agg(F.sum("revenue").alias("revenue")))
    natrev.write.mode("overwrite").saveAsTable("natrev")
""")
SQL_PIPELINE = """
create or replace table custrev as select c_custkey, c_nationkey, sum(o_totalprice) as revenue
  from customer join orders on c_custkey = o_custkey group by c_custkey, c_nationkey;
create or replace table natrev as select n_name, sum(revenue) as revenue
  from custrev join nation on c_nationkey = n_nationkey group by n_name;
"""


def dltrace_cli(*args: str, catalog: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    environment = {**os.environ, "SPARK_DRIVER_MEMORY": "1g", **(env or {})}
    for key in CONNECT_API:
        environment.pop(key, None)
    return subprocess.run([sys.executable, "-m", "dltrace", *args, "--catalog", str(catalog)], capture_output=True,
                          text=True, env=environment, cwd=Path(catalog).parent, timeout=900)


def saved_bag(session: LineageSession, name: str) -> Counter:
    return bag(session.result(name).drop("_row"))


@pytest.fixture(scope="module")
def job_catalogs(tpch, tmp_path_factory):
    """The demo's two-step pipeline saved twice, as SQL (in this process) and as a PySpark job
    (``dltrace run job.py`` in a process of its own), each in its own copy of TPC-H."""
    sql_side = tpch_copy(tpch, tmp_path_factory, "sql-pipeline")
    sql_side.run_script(SQL_PIPELINE)
    job_side = tpch_copy(tpch, tmp_path_factory, "job-pipeline")
    script = tmp_path_factory.mktemp("job") / "job.py"
    script.write_text(JOB)
    done = dltrace_cli("run", str(script), catalog=job_side.catalog.directory)
    return sql_side, job_side, script, done


def test_a_pyspark_job_saves_its_steps_with_the_sql_pipelines_lineage(job_catalogs):
    sql_side, job_side, _, done = job_catalogs
    assert done.returncode == 0, done.stderr
    assert "saved result custrev" in done.stderr and "saved result natrev" in done.stderr
    for name in ("custrev", "natrev"):
        assert saved_bag(job_side, name) == saved_bag(sql_side, name)
    source = "orders WHERE o_orderkey = 1"
    assert {n: r.count() for n, r in job_side.impact(source).items()} == \
           {n: r.count() for n, r in sql_side.impact(source).items()}


def test_an_append_to_a_table_is_a_run_in_every_process(job_catalogs, tmp_path):
    """The job appending to natrev2 run twice, each ``dltrace run`` a process (and a JVM) of
    its own: Spark's in-memory catalog forgot the table, dltrace's record of it defines it
    again; each run is a saved result with the SQL pipeline's lineage, the name the union."""
    sql_side, job_side, _, _ = job_catalogs
    script = tmp_path / "append.py"
    script.write_text(JOB.replace('mode("overwrite").saveAsTable("natrev")', 'mode("append").saveAsTable("natrev2")')
                      .replace('saveAsTable("custrev")', 'saveAsTable("custrev2")')
                      .replace('spark.table("custrev")', 'spark.table("custrev2")'))
    for run in (1, 2):
        done = dltrace_cli("run", str(script), catalog=job_side.catalog.directory)
        assert done.returncode == 0 and f"saved result natrev2_run{run}" in done.stderr, done.stderr
    assert saved_bag(job_side, "natrev2_run2") == saved_bag(job_side, "natrev2_run1") == saved_bag(sql_side, "natrev")
    both = job_side.sql("SELECT n_name, revenue FROM natrev2").collect()
    assert len(both) == 2 * sql_side.result("natrev").count()
    hit = job_side.impact("orders WHERE o_orderkey = 1")
    assert hit["natrev2_run1"].count() == hit["natrev2_run2"].count() == 1


@pytest.mark.heavy  # a Spark Connect server's JVM and the job's
def test_a_pyspark_job_on_a_spark_connect_server(job_catalogs, connect_server, tpch, tmp_path_factory):
    sql_side, _, script, _ = job_catalogs
    remote = tpch_copy(tpch, tmp_path_factory, "remote-job")
    done = dltrace_cli("run", str(script), catalog=remote.catalog.directory, env={"SPARK_REMOTE": connect_server})
    assert done.returncode == 0, done.stderr
    for name in ("custrev", "natrev"):
        assert saved_bag(remote, name) == saved_bag(sql_side, name)


def physical_plan(frame) -> str:
    """The physical plan Spark chose for ``frame`` (a Spark Connect DataFrame)."""
    return frame._explain_string(mode="formatted")


def test_q21_semi_and_anti_joins_keep_the_plain_plans_equi_joins(frames):
    """Q21's EXISTS and NOT EXISTS as DataFrame semi and anti joins with a ``<>`` condition:
    the lineage plan has no nested-loop join where the plain plan has none (the right sides
    are derived tables that rename lineitem's columns; read as lineitem, rewriter/semi_anti_join.py)."""
    from tpch.dataframe_queries import QUERIES

    frame = QUERIES["q21"](frames.frames)
    assert "NestedLoopJoin" not in physical_plan(frame)
    for semantics in ("control", "data"):
        assert "NestedLoopJoin" not in physical_plan(frames.trace(frame, semantics)), semantics


def test_q21_semi_join_in_a_derived_table_is_joined_after_the_other_joins(frames):
    """Merged into the SELECT that joins it (rewriter/filtered_tables.py), Q21's semi join is
    joined by ``exists_join`` where the other joins have kept only their rows, as the SQL
    form's EXISTS is: one SELECT reads nation, supplier, orders and lineitem twice."""
    from sqlglot import exp

    from tpch.dataframe_queries import QUERIES

    lineage = frames.lineage_expression(frames.dataframe_sql(QUERIES["q21"](frames.frames)))
    (grouped,) = [s for s in lineage.find_all(exp.Select) if s.parent and s.parent.alias_or_name == "__dlexists"]
    read = sorted(t.name for t in grouped.find_all(exp.Table) if t.find_ancestor(exp.Select) is grouped)
    assert read == ["lineitem", "lineitem", "lineitem", "nation", "orders", "supplier"]
