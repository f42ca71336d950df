"""A shop's daily job, written as a data engineer writes one (not for dltrace).

    spark-submit shop_job.py DATA OUT        # plain Spark
    dltrace run shop_job.py DATA OUT         # the same, and lineage for every output

It reads files (Parquet, CSV with a header, JSON lines: ``shop_data.py`` writes them),
cleans with ``withColumn``/``when``/``coalesce``, counts eagerly, joins through a temporary
view and ``spark.sql``, computes windows, and writes one table and one Parquet directory,
which it reads back.
"""

import sys
from decimal import Decimal

from pyspark.sql import SparkSession, Window
from pyspark.sql import functions as F


def main(data: str, out: str) -> None:
    spark = SparkSession.builder.appName("shop-daily").getOrCreate()
    orders = spark.read.parquet(f"{data}/orders")
    customers = spark.read.csv(f"{data}/customers.csv", header=True, inferSchema=True)
    products = spark.read.json(f"{data}/products.json").withColumn("price", F.col("price").cast("decimal(10,2)"))

    clean = (orders.where(F.col("status") != "cancelled")
             .withColumn("qty", F.coalesce(F.col("qty"), F.lit(1)))
             .withColumn("day", F.to_date("order_ts"))
             .withColumn("returned", F.when(F.col("status") == "returned", 1).otherwise(0)))
    print("orders kept:", clean.count())

    enriched = (clean.join(products, "product_id", "left")
                .join(customers.select("customer_id", "country"), "customer_id", "left")
                .withColumn("amount", F.col("qty") * F.coalesce(F.col("price"), F.lit(Decimal("0.00")))))
    enriched.createOrReplaceTempView("enriched")
    daily = spark.sql("SELECT country, day, SUM(amount) AS revenue, COUNT(*) AS orders, SUM(returned) AS returns "
                      "FROM enriched GROUP BY country, day")
    by_country = Window.partitionBy("country").orderBy("day")
    daily = (daily.withColumn("running_revenue", F.sum("revenue").over(by_country))
             .withColumn("rank_of_day", F.rank().over(Window.partitionBy("day").orderBy(F.desc("revenue")))))
    daily.write.mode("overwrite").saveAsTable("country_daily")
    print("country_daily rows:", spark.table("country_daily").count())

    weekly = (enriched.groupBy("category")
              .agg((F.sum("amount") / Decimal("4.0")).alias("weekly_revenue"), F.count("*").alias("orders"))
              .dropDuplicates(["category"]))
    weekly.write.mode("overwrite").parquet(f"{out}/category_weekly")
    for row in spark.read.parquet(f"{out}/category_weekly").orderBy("category").collect():
        print(row["category"], row["weekly_revenue"], row["orders"])


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
