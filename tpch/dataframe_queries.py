"""The 22 TPC-H queries written in the PySpark DataFrame API.

Each ``qN(spark)`` builds the DataFrame counterpart of ``tpch/queries/qN.sql`` from the session's
tables (``spark.table("lineitem")`` etc.), the way a data engineer would write it: chains of
``filter``, ``join``, ``groupBy().agg()``, ``withColumn``, ``select``, ``orderBy``.  Tests and the
benchmark run them next to the SQL queries to compare the DataFrame front end with SQL, so each
query has the SQL query's substitution parameters, output columns (names, order), ``ORDER BY``
and (no) ``LIMIT``.  The functions use only ``pyspark.sql.functions`` and ``Window``, so they
build the same plan on classic Spark and on Spark Connect.

Literals keep the SQL's types: the money columns are ``DECIMAL(15,2)`` and a SQL literal such
as ``0.05`` is a DECIMAL, so the queries use ``F.lit(Decimal("0.05"))`` (``F.lit(0.05)`` would be
a DOUBLE and change the results' types and values).  Date arithmetic of the SQL
(``date '1998-12-01' - interval '90' day``) is a precomputed ``datetime.date``.

Subqueries are written both ways data engineers write them (a comment at each query says
which): with Spark 4's DataFrame subqueries where the SQL's meaning depends on it
(``df.scalar()``, ``df.exists()``, ``col.isin(df)``, correlated by ``Column.outer()``: q2, q11,
q15, q18, q20, q22), and as ``left_semi``/``left_anti`` joins where that is the same query
(``EXISTS``, ``NOT IN``, ``EXISTS``/``NOT EXISTS`` of q4, q16, q21) or a join with an
aggregate (q17); ``tpch/dataframe_joined.py`` has the first six written as joins.  A table read
twice under one name in the SQL (``nation n1, nation n2``, ``lineitem l1, l2, l3``) is read
with renamed columns so that every column name of a join is unambiguous.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from decimal import Decimal

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.window import Window  # noqa: F401  (the API's window functions; no TPC-H query needs one)

__all__ = ["QUERIES"]


def _revenue() -> Column:
    """``l_extendedprice * (1 - l_discount)``, the discounted price of a line item."""
    return F.col("l_extendedprice") * (1 - F.col("l_discount"))


def q1(spark: SparkSession) -> DataFrame:
    # date '1998-12-01' - interval '90' day
    return (
        spark.table("lineitem")
        .filter(F.col("l_shipdate") <= F.lit(datetime.date(1998, 9, 2)))
        .groupBy("l_returnflag", "l_linestatus")
        .agg(
            F.sum("l_quantity").alias("sum_qty"),
            F.sum("l_extendedprice").alias("sum_base_price"),
            F.sum(_revenue()).alias("sum_disc_price"),
            F.sum(_revenue() * (1 + F.col("l_tax"))).alias("sum_charge"),
            F.avg("l_quantity").alias("avg_qty"),
            F.avg("l_extendedprice").alias("avg_price"),
            F.avg("l_discount").alias("avg_disc"),
            F.count("*").alias("count_order"),
        )
        .orderBy("l_returnflag", "l_linestatus")
    )


def q2(spark: SparkSession) -> DataFrame:
    # the correlated scalar subquery: p_partkey is the outer query's (Column.outer())
    def european(partsupp: DataFrame) -> DataFrame:
        return (
            partsupp.join(spark.table("supplier"), F.col("s_suppkey") == F.col("ps_suppkey"))
            .join(spark.table("nation"), F.col("s_nationkey") == F.col("n_nationkey"))
            .join(spark.table("region"), F.col("n_regionkey") == F.col("r_regionkey"))
            .filter(F.col("r_name") == "EUROPE")
        )

    min_cost = (
        european(spark.table("partsupp"))
        .filter(F.col("p_partkey").outer() == F.col("ps_partkey"))
        .select(F.min("ps_supplycost"))
    )
    return (
        european(spark.table("part").join(spark.table("partsupp"), F.col("p_partkey") == F.col("ps_partkey")))
        .filter((F.col("p_size") == 15) & F.col("p_type").like("%BRASS"))
        .filter(F.col("ps_supplycost") == min_cost.scalar())
        .select("s_acctbal", "s_name", "n_name", "p_partkey", "p_mfgr", "s_address", "s_phone", "s_comment")
        .orderBy(F.desc("s_acctbal"), "n_name", "s_name", "p_partkey")
    )


def q3(spark: SparkSession) -> DataFrame:
    date = F.lit(datetime.date(1995, 3, 15))
    return (
        spark.table("customer")
        .filter(F.col("c_mktsegment") == "BUILDING")
        .join(spark.table("orders").filter(F.col("o_orderdate") < date), F.col("c_custkey") == F.col("o_custkey"))
        .join(spark.table("lineitem").filter(F.col("l_shipdate") > date), F.col("l_orderkey") == F.col("o_orderkey"))
        .groupBy("l_orderkey", "o_orderdate", "o_shippriority")
        .agg(F.sum(_revenue()).alias("revenue"))
        .select("l_orderkey", "revenue", "o_orderdate", "o_shippriority")
        .orderBy(F.desc("revenue"), "o_orderdate")
    )


def q4(spark: SparkSession) -> DataFrame:
    # EXISTS (late line items of the order) is a left semi join
    late = spark.table("lineitem").filter(F.col("l_commitdate") < F.col("l_receiptdate"))
    return (
        spark.table("orders")
        .filter(
            (F.col("o_orderdate") >= F.lit(datetime.date(1993, 7, 1)))
            & (F.col("o_orderdate") < F.lit(datetime.date(1993, 10, 1)))  # + interval '3' month
        )
        .join(late, F.col("l_orderkey") == F.col("o_orderkey"), how="left_semi")
        .groupBy("o_orderpriority")
        .agg(F.count("*").alias("order_count"))
        .orderBy("o_orderpriority")
    )


def q5(spark: SparkSession) -> DataFrame:
    return (
        spark.table("region")
        .filter(F.col("r_name") == "ASIA")
        .join(spark.table("nation"), F.col("n_regionkey") == F.col("r_regionkey"))
        .join(spark.table("supplier"), F.col("s_nationkey") == F.col("n_nationkey"))
        .join(spark.table("lineitem"), F.col("l_suppkey") == F.col("s_suppkey"))
        .join(
            spark.table("orders").filter(
                (F.col("o_orderdate") >= F.lit(datetime.date(1994, 1, 1)))
                & (F.col("o_orderdate") < F.lit(datetime.date(1995, 1, 1)))  # + interval '1' year
            ),
            F.col("l_orderkey") == F.col("o_orderkey"),
        )
        .join(
            spark.table("customer"),
            (F.col("c_custkey") == F.col("o_custkey")) & (F.col("c_nationkey") == F.col("s_nationkey")),
        )
        .groupBy("n_name")
        .agg(F.sum(_revenue()).alias("revenue"))
        .orderBy(F.desc("revenue"))
    )


def q6(spark: SparkSession) -> DataFrame:
    discount, delta = F.lit(Decimal("0.06")), F.lit(Decimal("0.01"))
    return (
        spark.table("lineitem")
        .filter(
            (F.col("l_shipdate") >= F.lit(datetime.date(1994, 1, 1)))
            & (F.col("l_shipdate") < F.lit(datetime.date(1995, 1, 1)))  # + interval '1' year
            & F.col("l_discount").between(discount - delta, discount + delta)
            & (F.col("l_quantity") < 24)
        )
        .agg(F.sum(F.col("l_extendedprice") * F.col("l_discount")).alias("revenue"))
    )


def q7(spark: SparkSession) -> DataFrame:
    # nation n1, nation n2 are two reads of nation with renamed columns
    supp_nation = spark.table("nation").select(
        F.col("n_nationkey").alias("supp_nationkey"), F.col("n_name").alias("supp_nation")
    )
    cust_nation = spark.table("nation").select(
        F.col("n_nationkey").alias("cust_nationkey"), F.col("n_name").alias("cust_nation")
    )
    shipping = (
        spark.table("supplier")
        .join(supp_nation, F.col("s_nationkey") == F.col("supp_nationkey"))
        .join(
            spark.table("lineitem").filter(
                F.col("l_shipdate").between(F.lit(datetime.date(1995, 1, 1)), F.lit(datetime.date(1996, 12, 31)))
            ),
            F.col("s_suppkey") == F.col("l_suppkey"),
        )
        .join(spark.table("orders"), F.col("o_orderkey") == F.col("l_orderkey"))
        .join(spark.table("customer"), F.col("c_custkey") == F.col("o_custkey"))
        .join(cust_nation, F.col("c_nationkey") == F.col("cust_nationkey"))
        .filter(
            ((F.col("supp_nation") == "FRANCE") & (F.col("cust_nation") == "GERMANY"))
            | ((F.col("supp_nation") == "GERMANY") & (F.col("cust_nation") == "FRANCE"))
        )
        .select(
            "supp_nation",
            "cust_nation",
            F.year("l_shipdate").alias("l_year"),
            _revenue().alias("volume"),
        )
    )
    return (
        shipping.groupBy("supp_nation", "cust_nation", "l_year")
        .agg(F.sum("volume").alias("revenue"))
        .orderBy("supp_nation", "cust_nation", "l_year")
    )


def q8(spark: SparkSession) -> DataFrame:
    # nation n1 (the customer's, in the region) and n2 (the supplier's) are two reads of nation
    # with renamed columns
    customer_nation = (
        spark.table("region")
        .filter(F.col("r_name") == "AMERICA")
        .join(spark.table("nation"), F.col("n_regionkey") == F.col("r_regionkey"))
        .select(F.col("n_nationkey").alias("cust_nationkey"))
    )
    supplier_nation = spark.table("nation").select(
        F.col("n_nationkey").alias("supp_nationkey"), F.col("n_name").alias("nation")
    )
    all_nations = (
        spark.table("part")
        .filter(F.col("p_type") == "ECONOMY ANODIZED STEEL")
        .join(spark.table("lineitem"), F.col("p_partkey") == F.col("l_partkey"))
        .join(spark.table("supplier"), F.col("s_suppkey") == F.col("l_suppkey"))
        .join(
            spark.table("orders").filter(
                F.col("o_orderdate").between(F.lit(datetime.date(1995, 1, 1)), F.lit(datetime.date(1996, 12, 31)))
            ),
            F.col("l_orderkey") == F.col("o_orderkey"),
        )
        .join(spark.table("customer"), F.col("o_custkey") == F.col("c_custkey"))
        .join(customer_nation, F.col("c_nationkey") == F.col("cust_nationkey"))
        .join(supplier_nation, F.col("s_nationkey") == F.col("supp_nationkey"))
        .select(F.year("o_orderdate").alias("o_year"), _revenue().alias("volume"), "nation")
    )
    return (
        all_nations.groupBy("o_year")
        .agg(
            (
                F.sum(F.when(F.col("nation") == "BRAZIL", F.col("volume")).otherwise(0)) / F.sum("volume")
            ).alias("mkt_share")
        )
        .orderBy("o_year")
    )


def q9(spark: SparkSession) -> DataFrame:
    profit = (
        spark.table("part")
        .filter(F.col("p_name").like("%green%"))
        .join(spark.table("lineitem"), F.col("p_partkey") == F.col("l_partkey"))
        .join(spark.table("supplier"), F.col("s_suppkey") == F.col("l_suppkey"))
        .join(
            spark.table("partsupp"),
            (F.col("ps_suppkey") == F.col("l_suppkey")) & (F.col("ps_partkey") == F.col("l_partkey")),
        )
        .join(spark.table("orders"), F.col("o_orderkey") == F.col("l_orderkey"))
        .join(spark.table("nation"), F.col("s_nationkey") == F.col("n_nationkey"))
        .select(
            F.col("n_name").alias("nation"),
            F.year("o_orderdate").alias("o_year"),
            (_revenue() - F.col("ps_supplycost") * F.col("l_quantity")).alias("amount"),
        )
    )
    return (
        profit.groupBy("nation", "o_year")
        .agg(F.sum("amount").alias("sum_profit"))
        .orderBy("nation", F.desc("o_year"))
    )


def q10(spark: SparkSession) -> DataFrame:
    return (
        spark.table("customer")
        .join(
            spark.table("orders").filter(
                (F.col("o_orderdate") >= F.lit(datetime.date(1993, 10, 1)))
                & (F.col("o_orderdate") < F.lit(datetime.date(1994, 1, 1)))  # + interval '3' month
            ),
            F.col("c_custkey") == F.col("o_custkey"),
        )
        .join(
            spark.table("lineitem").filter(F.col("l_returnflag") == "R"),
            F.col("l_orderkey") == F.col("o_orderkey"),
        )
        .join(spark.table("nation"), F.col("c_nationkey") == F.col("n_nationkey"))
        .groupBy("c_custkey", "c_name", "c_acctbal", "c_phone", "n_name", "c_address", "c_comment")
        .agg(F.sum(_revenue()).alias("revenue"))
        .select("c_custkey", "c_name", "revenue", "c_acctbal", "n_name", "c_address", "c_phone", "c_comment")
        .orderBy(F.desc("revenue"))
    )


def q11(spark: SparkSession) -> DataFrame:
    # the HAVING clause's scalar subquery is a filter after the aggregate
    def german_stock() -> DataFrame:
        return (
            spark.table("partsupp")
            .join(spark.table("supplier"), F.col("ps_suppkey") == F.col("s_suppkey"))
            .join(spark.table("nation"), F.col("s_nationkey") == F.col("n_nationkey"))
            .filter(F.col("n_name") == "GERMANY")
        )

    stock_value = F.col("ps_supplycost") * F.col("ps_availqty")
    threshold = german_stock().select(F.sum(stock_value) * F.lit(Decimal("0.0001")))
    return (
        german_stock()
        .groupBy("ps_partkey")
        .agg(F.sum(stock_value).alias("value"))
        .filter(F.col("value") > threshold.scalar())
        .orderBy(F.desc("value"))
    )


def q12(spark: SparkSession) -> DataFrame:
    high = (F.col("o_orderpriority") == "1-URGENT") | (F.col("o_orderpriority") == "2-HIGH")
    low = (F.col("o_orderpriority") != "1-URGENT") & (F.col("o_orderpriority") != "2-HIGH")
    return (
        spark.table("lineitem")
        .filter(
            F.col("l_shipmode").isin("MAIL", "SHIP")
            & (F.col("l_commitdate") < F.col("l_receiptdate"))
            & (F.col("l_shipdate") < F.col("l_commitdate"))
            & (F.col("l_receiptdate") >= F.lit(datetime.date(1994, 1, 1)))
            & (F.col("l_receiptdate") < F.lit(datetime.date(1995, 1, 1)))  # + interval '1' year
        )
        .join(spark.table("orders"), F.col("o_orderkey") == F.col("l_orderkey"))
        .groupBy("l_shipmode")
        .agg(
            F.sum(F.when(high, 1).otherwise(0)).alias("high_line_count"),
            F.sum(F.when(low, 1).otherwise(0)).alias("low_line_count"),
        )
        .orderBy("l_shipmode")
    )


def q13(spark: SparkSession) -> DataFrame:
    # the outer join's condition on orders alone (o_comment not like ...) filters orders before the
    # left join, which is equivalent
    orders = spark.table("orders").filter(~F.col("o_comment").like("%special%requests%"))
    c_orders = (
        spark.table("customer")
        .join(orders, F.col("c_custkey") == F.col("o_custkey"), how="left")
        .groupBy("c_custkey")
        .agg(F.count("o_orderkey").alias("c_count"))
    )
    return (
        c_orders.groupBy("c_count")
        .agg(F.count("*").alias("custdist"))
        .orderBy(F.desc("custdist"), F.desc("c_count"))
    )


def q14(spark: SparkSession) -> DataFrame:
    promo = F.when(F.col("p_type").like("PROMO%"), _revenue()).otherwise(0)
    return (
        spark.table("lineitem")
        .filter(
            (F.col("l_shipdate") >= F.lit(datetime.date(1995, 9, 1)))
            & (F.col("l_shipdate") < F.lit(datetime.date(1995, 10, 1)))  # + interval '1' month
        )
        .join(spark.table("part"), F.col("l_partkey") == F.col("p_partkey"))
        .agg((F.lit(Decimal("100.00")) * F.sum(promo) / F.sum(_revenue())).alias("promo_revenue"))
    )


def _revenue0(spark: SparkSession) -> DataFrame:
    """Q15's CTE revenue0: each supplier's revenue in the first quarter of 1996."""
    return (
        spark.table("lineitem")
        .filter(
            (F.col("l_shipdate") >= F.lit(datetime.date(1996, 1, 1)))
            & (F.col("l_shipdate") < F.lit(datetime.date(1996, 4, 1)))  # + interval '3' month
        )
        .groupBy("l_suppkey")
        .agg(F.sum(_revenue()).alias("total_revenue"))
        .withColumnRenamed("l_suppkey", "supplier_no")
    )


def q15(spark: SparkSession) -> DataFrame:
    # the CTE revenue0 is a DataFrame used twice, once in the scalar subquery
    revenue0 = _revenue0(spark)
    return (
        spark.table("supplier")
        .join(revenue0, F.col("s_suppkey") == F.col("supplier_no"))
        .filter(F.col("total_revenue") == revenue0.select(F.max("total_revenue")).scalar())
        .select("s_suppkey", "s_name", "s_address", "s_phone", "total_revenue")
        .orderBy("s_suppkey")
    )


def q16(spark: SparkSession) -> DataFrame:
    # NOT IN (suppliers with complaints) is a left anti join (s_suppkey is never NULL, so the
    # NOT IN's NULL semantics do not differ)
    complaints = spark.table("supplier").filter(F.col("s_comment").like("%Customer%Complaints%"))
    return (
        spark.table("part")
        .filter(
            (F.col("p_brand") != "Brand#45")
            & ~F.col("p_type").like("MEDIUM POLISHED%")
            & F.col("p_size").isin(49, 14, 23, 45, 19, 3, 36, 9)
        )
        .join(spark.table("partsupp"), F.col("p_partkey") == F.col("ps_partkey"))
        .join(complaints, F.col("ps_suppkey") == F.col("s_suppkey"), how="left_anti")
        .groupBy("p_brand", "p_type", "p_size")
        .agg(F.countDistinct("ps_suppkey").alias("supplier_cnt"))
        .orderBy(F.desc("supplier_cnt"), "p_brand", "p_type", "p_size")
    )


def q17(spark: SparkSession) -> DataFrame:
    # the correlated subquery 0.2 * avg(l_quantity) of the part is a join with lineitem's
    # per-part average, grouped by l_partkey
    small_quantity = (
        spark.table("lineitem")
        .groupBy("l_partkey")
        .agg((F.lit(Decimal("0.2")) * F.avg("l_quantity")).alias("small_quantity"))
        .withColumnRenamed("l_partkey", "avg_partkey")
    )
    return (
        spark.table("part")
        .filter((F.col("p_brand") == "Brand#23") & (F.col("p_container") == "MED BOX"))
        .join(spark.table("lineitem"), F.col("p_partkey") == F.col("l_partkey"))
        .join(small_quantity, F.col("avg_partkey") == F.col("p_partkey"))
        .filter(F.col("l_quantity") < F.col("small_quantity"))
        .agg((F.sum("l_extendedprice") / F.lit(Decimal("7.0"))).alias("avg_yearly"))
    )


def q18(spark: SparkSession) -> DataFrame:
    # IN (orders of more than 300 units) is Column.isin of a DataFrame
    large_orders = (
        spark.table("lineitem")
        .groupBy("l_orderkey")
        .agg(F.sum("l_quantity").alias("order_quantity"))
        .filter(F.col("order_quantity") > 300)
        .select("l_orderkey")
    )
    return (
        spark.table("customer")
        .join(spark.table("orders"), F.col("c_custkey") == F.col("o_custkey"))
        .join(spark.table("lineitem"), F.col("o_orderkey") == F.col("l_orderkey"))
        .filter(F.col("o_orderkey").isin(large_orders))
        .groupBy("c_name", "c_custkey", "o_orderkey", "o_orderdate", "o_totalprice")
        .agg(F.sum("l_quantity").alias("sum_qty"))
        .orderBy(F.desc("o_totalprice"), "o_orderdate")
    )


def q19(spark: SparkSession) -> DataFrame:
    # p_partkey = l_partkey, common to the three disjuncts, is the join condition
    def bracket(brand: str, containers: tuple[str, ...], quantity: int, size: int) -> Column:
        return (
            (F.col("p_brand") == brand)
            & F.col("p_container").isin(*containers)
            & (F.col("l_quantity") >= quantity)
            & (F.col("l_quantity") <= quantity + 10)
            & F.col("p_size").between(1, size)
            & F.col("l_shipmode").isin("AIR", "AIR REG")
            & (F.col("l_shipinstruct") == "DELIVER IN PERSON")
        )

    return (
        spark.table("lineitem")
        .join(spark.table("part"), F.col("p_partkey") == F.col("l_partkey"))
        .filter(
            bracket("Brand#12", ("SM CASE", "SM BOX", "SM PACK", "SM PKG"), 1, 5)
            | bracket("Brand#23", ("MED BAG", "MED BOX", "MED PKG", "MED PACK"), 10, 10)
            | bracket("Brand#34", ("LG CASE", "LG BOX", "LG PACK", "LG PKG"), 20, 15)
        )
        .agg(F.sum(_revenue()).alias("revenue"))
    )


def q20(spark: SparkSession) -> DataFrame:
    # nested IN subqueries (Column.isin of a DataFrame) and a correlated scalar subquery whose
    # ps_partkey and ps_suppkey are the enclosing query's (Column.outer())
    half_shipped = (
        spark.table("lineitem")
        .filter(
            (F.col("l_partkey") == F.col("ps_partkey").outer())
            & (F.col("l_suppkey") == F.col("ps_suppkey").outer())
            & (F.col("l_shipdate") >= F.lit(datetime.date(1994, 1, 1)))
            & (F.col("l_shipdate") < F.lit(datetime.date(1995, 1, 1)))  # + interval '1' year
        )
        .select(F.lit(Decimal("0.5")) * F.sum("l_quantity"))
    )
    forest = spark.table("part").filter(F.col("p_name").like("forest%")).select("p_partkey")
    excess = (
        spark.table("partsupp")
        .filter(F.col("ps_partkey").isin(forest) & (F.col("ps_availqty") > half_shipped.scalar()))
        .select("ps_suppkey")
    )
    return (
        spark.table("supplier")
        .join(spark.table("nation"), F.col("s_nationkey") == F.col("n_nationkey"))
        .filter(F.col("s_suppkey").isin(excess) & (F.col("n_name") == "CANADA"))
        .select("s_name", "s_address")
        .orderBy("s_name")
    )


def q21(spark: SparkSession) -> DataFrame:
    # EXISTS (another supplier's line item in the order) is a left semi join and NOT EXISTS
    # (another supplier's late line item) a left anti join, each with lineitem's columns renamed
    # (l2, l3) and a non-equi condition on the supplier
    others = spark.table("lineitem").select(
        F.col("l_orderkey").alias("l2_orderkey"), F.col("l_suppkey").alias("l2_suppkey")
    )
    others_late = (
        spark.table("lineitem")
        .filter(F.col("l_receiptdate") > F.col("l_commitdate"))
        .select(F.col("l_orderkey").alias("l3_orderkey"), F.col("l_suppkey").alias("l3_suppkey"))
    )
    late = (
        spark.table("lineitem")
        .filter(F.col("l_receiptdate") > F.col("l_commitdate"))
        .join(
            others,
            (F.col("l2_orderkey") == F.col("l_orderkey")) & (F.col("l2_suppkey") != F.col("l_suppkey")),
            how="left_semi",
        )
        .join(
            others_late,
            (F.col("l3_orderkey") == F.col("l_orderkey")) & (F.col("l3_suppkey") != F.col("l_suppkey")),
            how="left_anti",
        )
    )
    return (
        spark.table("nation")
        .filter(F.col("n_name") == "SAUDI ARABIA")
        .join(spark.table("supplier"), F.col("s_nationkey") == F.col("n_nationkey"))
        .join(late, F.col("s_suppkey") == F.col("l_suppkey"))
        .join(spark.table("orders").filter(F.col("o_orderstatus") == "F"), F.col("o_orderkey") == F.col("l_orderkey"))
        .groupBy("s_name")
        .agg(F.count("*").alias("numwait"))
        .orderBy(F.desc("numwait"), "s_name")
    )


def q22(spark: SparkSession) -> DataFrame:
    # a scalar subquery and NOT EXISTS (~DataFrame.exists(), correlated by Column.outer()) in
    # the derived table custsale
    codes = ("13", "31", "23", "29", "30", "18", "17")
    country = F.substring("c_phone", 1, 2)
    average = (
        spark.table("customer")
        .filter((F.col("c_acctbal") > F.lit(Decimal("0.00"))) & country.isin(*codes))
        .select(F.avg("c_acctbal"))
    )
    orders = spark.table("orders").filter(F.col("o_custkey") == F.col("c_custkey").outer())
    custsale = (
        spark.table("customer")
        .filter(country.isin(*codes) & (F.col("c_acctbal") > average.scalar()) & ~orders.exists())
        .select(country.alias("cntrycode"), "c_acctbal")
    )
    return (
        custsale.groupBy("cntrycode")
        .agg(F.count("*").alias("numcust"), F.sum("c_acctbal").alias("totacctbal"))
        .orderBy("cntrycode")
    )


QUERIES: dict[str, Callable[[SparkSession], DataFrame]] = {
    "q1": q1, "q2": q2, "q3": q3, "q4": q4, "q5": q5, "q6": q6, "q7": q7, "q8": q8, "q9": q9, "q10": q10, "q11": q11,
    "q12": q12, "q13": q13, "q14": q14, "q15": q15, "q16": q16, "q17": q17, "q18": q18, "q19": q19, "q20": q20,
    "q21": q21, "q22": q22,
}
