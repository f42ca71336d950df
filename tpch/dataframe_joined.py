"""Six TPC-H queries with their subqueries written as joins, as DataFrame programs were
written before Spark 4 had DataFrame subqueries (``tpch/dataframe_queries.py`` writes them as
subqueries, as the SQL does).

Each is a different query from its SQL under the paper's semantics: a joined row is a
contributing row under data semantics, a WHERE subquery's rows are not, and a semi join with
an aggregate differs from ``IN`` of a grouped subquery under control semantics.  So they give
the SQL's rows, not its ``DL`` bags; the tests check their rows against the SQL and their
lineage by the completeness oracle on their own translated query.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from decimal import Decimal

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from tpch.dataframe_queries import _revenue0

__all__ = ["JOINED"]

def q2(spark: SparkSession) -> DataFrame:
    # the correlated subquery min(ps_supplycost) is a join with partsupp's minimum cost per part
    # (over European suppliers), grouped by ps_partkey
    europe = (
        spark.table("region")
        .filter(F.col("r_name") == "EUROPE")
        .join(spark.table("nation"), F.col("n_regionkey") == F.col("r_regionkey"))
        .join(spark.table("supplier"), F.col("s_nationkey") == F.col("n_nationkey"))
    )
    europe_partsupp = spark.table("partsupp").join(europe, F.col("s_suppkey") == F.col("ps_suppkey"))
    min_cost = europe_partsupp.groupBy("ps_partkey").agg(F.min("ps_supplycost").alias("min_supplycost")).select(
        F.col("ps_partkey").alias("min_partkey"), "min_supplycost"
    )
    return (
        spark.table("part")
        .filter((F.col("p_size") == 15) & F.col("p_type").like("%BRASS"))
        .join(europe_partsupp, F.col("p_partkey") == F.col("ps_partkey"))
        .join(
            min_cost,
            (F.col("p_partkey") == F.col("min_partkey")) & (F.col("ps_supplycost") == F.col("min_supplycost")),
        )
        .select("s_acctbal", "s_name", "n_name", "p_partkey", "p_mfgr", "s_address", "s_phone", "s_comment")
        .orderBy(F.desc("s_acctbal"), "n_name", "s_name", "p_partkey")
    )


def q11(spark: SparkSession) -> DataFrame:
    # the HAVING clause's scalar subquery (German stock value * 0.0001) is a crossJoin with a
    # one-row aggregate, then a filter
    german_stock = (
        spark.table("nation")
        .filter(F.col("n_name") == "GERMANY")
        .join(spark.table("supplier"), F.col("s_nationkey") == F.col("n_nationkey"))
        .join(spark.table("partsupp"), F.col("ps_suppkey") == F.col("s_suppkey"))
    )
    stock_value = F.col("ps_supplycost") * F.col("ps_availqty")
    threshold = german_stock.agg((F.sum(stock_value) * F.lit(Decimal("0.0001"))).alias("threshold"))
    return (
        german_stock.groupBy("ps_partkey")
        .agg(F.sum(stock_value).alias("value"))
        .crossJoin(threshold)
        .filter(F.col("value") > F.col("threshold"))
        .select("ps_partkey", "value")
        .orderBy(F.desc("value"))
    )


def q15(spark: SparkSession) -> DataFrame:
    # the CTE revenue0 is a DataFrame used twice; the scalar subquery max(total_revenue) is a join
    # with its one-row aggregate
    revenue0 = _revenue0(spark)
    top = revenue0.agg(F.max("total_revenue").alias("max_revenue"))
    return (
        spark.table("supplier")
        .join(revenue0, F.col("s_suppkey") == F.col("supplier_no"))
        .join(top, F.col("total_revenue") == F.col("max_revenue"))
        .select("s_suppkey", "s_name", "s_address", "s_phone", "total_revenue")
        .orderBy("s_suppkey")
    )


def q18(spark: SparkSession) -> DataFrame:
    # IN (orders of more than 300 units: a GROUP BY ... HAVING) is a left semi join with the
    # aggregate, filtered
    large_orders = (
        spark.table("lineitem")
        .groupBy("l_orderkey")
        .agg(F.sum("l_quantity").alias("order_quantity"))
        .filter(F.col("order_quantity") > 300)
        .select(F.col("l_orderkey").alias("large_orderkey"))
    )
    return (
        spark.table("orders")
        .join(large_orders, F.col("o_orderkey") == F.col("large_orderkey"), how="left_semi")
        .join(spark.table("customer"), F.col("c_custkey") == F.col("o_custkey"))
        .join(spark.table("lineitem"), F.col("o_orderkey") == F.col("l_orderkey"))
        .groupBy("c_name", "c_custkey", "o_orderkey", "o_orderdate", "o_totalprice")
        .agg(F.sum("l_quantity").alias("sum_qty"))
        .orderBy(F.desc("o_totalprice"), "o_orderdate")
    )


def q20(spark: SparkSession) -> DataFrame:
    # the nested INs are left semi joins; the correlated subquery 0.5 * sum(l_quantity) is an inner
    # join with lineitem's 1994 quantity per (part, supplier) (no line items: the subquery's NULL
    # fails the comparison, as the inner join drops the row)
    shipped = (
        spark.table("lineitem")
        .filter(
            (F.col("l_shipdate") >= F.lit(datetime.date(1994, 1, 1)))
            & (F.col("l_shipdate") < F.lit(datetime.date(1995, 1, 1)))  # + interval '1' year
        )
        .groupBy("l_partkey", "l_suppkey")
        .agg((F.lit(Decimal("0.5")) * F.sum("l_quantity")).alias("half_quantity"))
    )
    forest = spark.table("part").filter(F.col("p_name").like("forest%"))
    excess = (
        spark.table("partsupp")
        .join(forest, F.col("ps_partkey") == F.col("p_partkey"), how="left_semi")
        .join(
            shipped,
            (F.col("l_partkey") == F.col("ps_partkey")) & (F.col("l_suppkey") == F.col("ps_suppkey")),
        )
        .filter(F.col("ps_availqty") > F.col("half_quantity"))
    )
    return (
        spark.table("supplier")
        .join(excess, F.col("s_suppkey") == F.col("ps_suppkey"), how="left_semi")
        .join(spark.table("nation"), F.col("s_nationkey") == F.col("n_nationkey"))
        .filter(F.col("n_name") == "CANADA")
        .select("s_name", "s_address")
        .orderBy("s_name")
    )


def q22(spark: SparkSession) -> DataFrame:
    # the scalar subquery avg(c_acctbal) is a crossJoin with a one-row aggregate; NOT EXISTS
    # (orders of the customer) is a left anti join
    codes = ("13", "31", "23", "29", "30", "18", "17")
    customers = spark.table("customer").withColumn("cntrycode", F.substring("c_phone", 1, 2))
    average = (
        customers.filter((F.col("c_acctbal") > F.lit(Decimal("0.00"))) & F.col("cntrycode").isin(*codes))
        .agg(F.avg("c_acctbal").alias("avg_acctbal"))
    )
    custsale = (
        customers.filter(F.col("cntrycode").isin(*codes))
        .crossJoin(average)
        .filter(F.col("c_acctbal") > F.col("avg_acctbal"))
        .join(spark.table("orders"), F.col("o_custkey") == F.col("c_custkey"), how="left_anti")
        .select("cntrycode", "c_acctbal")
    )
    return (
        custsale.groupBy("cntrycode")
        .agg(F.count("*").alias("numcust"), F.sum("c_acctbal").alias("totacctbal"))
        .orderBy("cntrycode")
    )


JOINED: dict[str, Callable[[SparkSession], DataFrame]] = {
    "q2": q2, "q11": q11, "q15": q15, "q18": q18, "q20": q20, "q22": q22,
}
