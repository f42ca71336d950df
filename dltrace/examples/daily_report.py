"""The second job of the daily pipeline: it reads every day ``daily_job.py`` wrote.

    spark-submit daily_report.py OUT      # plain Spark
    dltrace run daily_report.py OUT       # lineage composes through OUT/daily_revenue

Revenue per country over all days so far, the top category per country, and the users and
orders per country from the table ``user_days`` the daily job appends to.
"""

import sys

from pyspark.sql import SparkSession, Window
from pyspark.sql import functions as F


def main(out: str) -> None:
    spark = SparkSession.builder.appName("daily-report").getOrCreate()
    daily = spark.read.parquet(f"{out}/daily_revenue")
    totals = daily.groupBy("country").agg(F.round(F.sum("revenue"), 2).alias("revenue"),
                                          F.countDistinct("date").alias("days"))
    totals.write.mode("overwrite").parquet(f"{out}/country_totals")
    by_category = daily.groupBy("country", "category").agg(F.round(F.sum("revenue"), 2).alias("revenue"))
    rank = F.row_number().over(Window.partitionBy("country").orderBy(F.desc("revenue"), "category"))
    by_category.withColumn("rank", rank).where("rank = 1").drop("rank") \
        .write.mode("overwrite").parquet(f"{out}/top_category")
    users = spark.table("user_days").groupBy("country").agg(F.countDistinct("user_id").alias("users"),
                                                            F.sum("orders").alias("orders"))
    users.write.mode("overwrite").parquet(f"{out}/country_users")


if __name__ == "__main__":
    main(sys.argv[1])
