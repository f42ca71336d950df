"""A flights ETL, written as a data engineer writes one (not for dltrace).

    spark-submit flights_job.py DATA OUT     # plain Spark
    dltrace run flights_job.py DATA OUT      # the same, and lineage for every output

It reads the files ``flights_data.py`` writes (Parquet, CSV with a header, JSON lines), joins
the flights to their airline, destination and plane, and writes three outputs: the enriched
flights (a Parquet directory), each airport's activity (departures and arrivals unioned and
deduplicated, then grouped; a table) and a daily mart per carrier (a running count over the
years, then a rank per day over it; a Parquet directory), of which it prints the leaders.
"""

import sys

from pyspark.sql import SparkSession, Window
from pyspark.sql import functions as F


def main(data: str, out: str) -> None:
    spark = SparkSession.builder.appName("flights-etl").getOrCreate()
    flights = spark.read.parquet(f"{data}/flights")
    airlines = spark.read.csv(f"{data}/airlines.csv", header=True, inferSchema=True)
    airports = spark.read.json(f"{data}/airports.json")
    planes = spark.read.parquet(f"{data}/planes.parquet")

    destinations = airports.select(F.col("faa").alias("dest"), F.col("name").alias("dest_name"), "tz")
    enriched = (flights.join(airlines, "carrier", "left")
                .join(destinations, "dest", "left")
                .join(planes.select("tailnum", "seats", "year_built"), "tailnum", "left")
                .withColumn("delayed", F.col("arr_delay") > 15)
                .withColumn("seat_km", F.round(F.col("seats") * F.col("distance") * 1.609, 1)))
    enriched.write.mode("overwrite").parquet(f"{out}/flights_enriched")

    departures = enriched.select(F.col("origin").alias("airport"), "day", "carrier", "flight_no")
    arrivals = enriched.select(F.col("dest").alias("airport"), "day", "carrier", "flight_no")
    movements = departures.unionByName(arrivals).dropDuplicates(["airport", "day", "carrier", "flight_no"])
    activity = movements.groupBy("airport").agg(F.count("*").alias("movements"),
                                                F.countDistinct("carrier").alias("carriers"))
    activity.write.mode("overwrite").saveAsTable("airport_activity")

    daily = enriched.groupBy("carrier", "name", "day").agg(F.count("*").alias("flights"),
                                                           F.round(F.avg("arr_delay"), 2).alias("avg_delay"))
    so_far = Window.partitionBy("carrier").orderBy("day")
    carrier_daily = (daily.withColumn("running_flights", F.sum("flights").over(so_far))
                     .withColumn("place", F.rank().over(Window.partitionBy("day").orderBy(F.desc("running_flights")))))
    carrier_daily.write.mode("overwrite").parquet(f"{out}/carrier_daily")

    leaders = spark.read.parquet(f"{out}/carrier_daily").where("place = 1").groupBy("carrier").count()
    for row in leaders.orderBy("carrier").collect():
        print(row["carrier"], row["count"])
    print("airports:", spark.table("airport_activity").count())


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
