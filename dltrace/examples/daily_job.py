"""A daily job, written as a team writes one (not for dltrace): run once a day with the day.

    spark-submit daily_job.py DATA OUT 2026-11-03     # plain Spark
    dltrace run daily_job.py DATA OUT 2026-11-03      # the same, and lineage for every output

It reads the events folder (a partition a day, ``daily_data.py``), the users file (several
versions per user: the latest by ``row_number``) and the products, then appends the day's
enriched orders to ``OUT/orders_log`` and each user's day to the table ``user_days``, and
writes the day's revenue per country and category to ``OUT/daily_revenue/date=DAY`` by a
dynamic partition overwrite (a rerun of a day replaces that day only).  ``daily_report.py``
reads ``OUT/daily_revenue`` whole and the table.

The table is defined over ``OUT/user_days`` (an external table: Spark's default in-memory
catalog forgets tables between runs, the files stay), and each run inserts into it by position.
"""

import sys

from pyspark.sql import SparkSession, Window
from pyspark.sql import functions as F


def main(data: str, out: str, day: str) -> None:
    spark = SparkSession.builder.appName("daily").getOrCreate()
    spark.conf.set("spark.sql.sources.partitionOverwriteMode", "dynamic")
    events = spark.read.parquet(f"{data}/events").where(F.col("date") == F.lit(day).cast("date"))
    users = spark.read.csv(f"{data}/users.csv", header=True, inferSchema=True)
    latest = (users.withColumn("version", F.row_number().over(
                  Window.partitionBy("user_id").orderBy(F.desc("updated_at"))))
              .where("version = 1").drop("version", "updated_at"))
    products = spark.read.parquet(f"{data}/products.parquet")
    orders = (events.join(latest, "user_id", "left").join(products, "product_id")
              .withColumn("amount", F.col("qty") * F.col("price")))
    orders.select("event_id", "date", "user_id", "country", "category", "amount") \
        .write.mode("append").parquet(f"{out}/orders_log")
    spark.sql(f"CREATE TABLE IF NOT EXISTS user_days (date DATE, user_id INT, country STRING, orders BIGINT, "
              f"amount DOUBLE) USING parquet LOCATION '{out}/user_days'")
    orders.groupBy("date", "user_id", "country").agg(F.count("*"), F.round(F.sum("amount"), 2)) \
        .write.insertInto("user_days")
    revenue = orders.groupBy("date", "country", "category").agg(F.round(F.sum("amount"), 2).alias("revenue"),
                                                                 F.count("*").alias("orders"))
    revenue.write.mode("overwrite").partitionBy("date").parquet(f"{out}/daily_revenue")
    print("orders", orders.count())


if __name__ == "__main__":
    main(*sys.argv[1:4])
