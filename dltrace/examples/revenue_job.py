"""The demo's two-step pipeline as a PySpark job: revenue per customer, then per nation.

It runs unchanged under ``spark-submit`` over tables of those names; under
``dltrace run dltrace/examples/revenue_job.py`` each ``saveAsTable`` is a saved step with
lineage (README, "PySpark DataFrame pipelines").
"""

from pyspark.sql import SparkSession
from pyspark.sql import functions as F


def main() -> None:
    spark = SparkSession.builder.appName("revenue").getOrCreate()
    custrev = (spark.table("customer").join(spark.table("orders"), F.col("c_custkey") == F.col("o_custkey"))
               .groupBy("c_custkey", "c_nationkey").agg(F.sum("o_totalprice").alias("revenue")))
    custrev.write.mode("overwrite").saveAsTable("custrev")
    natrev = (spark.table("custrev").join(spark.table("nation"), F.col("c_nationkey") == F.col("n_nationkey"))
              .groupBy("n_name").agg(F.sum("revenue").alias("revenue"), F.count("*").alias("customers")))
    natrev.write.mode("overwrite").saveAsTable("natrev")


if __name__ == "__main__":
    main()
