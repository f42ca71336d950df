"""The constructs of a new user's trial job, each a script run plain (classic Spark, as
``spark-submit`` runs it: one process for all of them, ``PLAIN_RUNNER``) and traced
(``run_job``, in this process): the same printed output, the same Parquet schema
(nullability included), and for a script that fails, the same line, Spark's error class
and the exit status ``spark-submit`` gives an uncaught exception."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pyarrow.dataset as ds
import pytest

from dltrace.dataframe.jobs import JobError
from tests.test_jobs import python_env

pytestmark = pytest.mark.spark
HEAD = """\
from pyspark.sql import SparkSession, functions as F, types as T
spark = SparkSession.builder.getOrCreate()
"""
CASES = {
    # a value no number: try_cast gives NULL (a plain CAST fails under ANSI mode)
    "try_cast": HEAD + """\
ids = spark.read.option("header", True).csv("{data}/ids.csv")
parsed = ids.select(F.col("user_id").try_cast("bigint").alias("id"), F.try_add("v", F.lit(1)).alias("w"))
parsed.orderBy("w").show()
parsed.write.mode("overwrite").parquet("{out}/try_cast")
""",
    # the same nested struct in another field order, one read with a schema, one inferred
    "nested_union": HEAD + """\
items = T.ArrayType(T.StructType([T.StructField("sku", T.StringType()), T.StructField("qty", T.LongType()),
                                  T.StructField("price", T.DoubleType())]))
given = spark.read.schema(T.StructType([T.StructField("id", T.LongType()), T.StructField("items", items)])) \\
    .json("{data}/day1.json")
inferred = spark.read.json("{data}/day2.json")
both = given.unionByName(inferred, allowMissingColumns=True)
both.select("id", F.explode("items").alias("item")).select("id", "item.sku", "item.qty").orderBy("id", "sku").show()
both.write.mode("overwrite").parquet("{out}/nested_union")
""",
    # a misspelt column: the line that built the DataFrame, with Spark's suggestion
    "typo": HEAD + """\
orders = spark.read.parquet("{data}/orders")
bad = orders.select("statsu", "customer_id")
counted = bad.groupBy("customer_id").count()
counted.write.mode("overwrite").parquet("{out}/typo")
""",
    "missing_file": HEAD + """\
spark.read.parquet("{data}/no-such-folder").count()
""",
    # what is never NULL is written required
    "nullability": HEAD + """\
orders = spark.read.parquet("{data}/orders")
summary = orders.groupBy("status").agg(F.count("*").alias("n"), F.coalesce(F.max("qty"), F.lit(0)).alias("top"),
                                       F.collect_list("qty").alias("qtys"), F.max("qty").alias("most"))
summary.write.mode("overwrite").parquet("{out}/nullability")
""",
}
PLAIN_RUNNER = """\
import contextlib, io, json, os, runpy, sys, traceback
results = {}
for path in sys.argv[1:]:
    printed = io.StringIO()
    try:
        with contextlib.redirect_stdout(printed):
            runpy.run_path(path, run_name="__main__")
        error = None
    except Exception as failure:
        lines = [f.lineno for f in traceback.extract_tb(failure.__traceback__) if f.filename == path]
        condition = getattr(failure, "getCondition", lambda: None)()
        error = {"line": lines[-1], "class": condition, "text": str(failure).splitlines()[0]}
    results[os.path.basename(path)] = {"printed": printed.getvalue(), "error": error}
print(json.dumps(results))
"""


def schema(directory: Path) -> list[tuple[str, str, bool]]:
    return [(f.name, str(f.type), f.nullable) for f in ds.dataset(directory).schema]


def test_the_trial_constructs_run_plain_and_traced_alike(job, capsys, tmp_path):
    data = job.data
    (data / "ids.csv").write_text("user_id,v\n1,3\n2x,1\n3,2\n")
    (data / "day1.json").write_text('{"id": 1, "items": [{"sku": "a", "qty": 2, "price": 1.5}]}\n')
    (data / "day2.json").write_text('{"id": 2, "items": [{"price": 2.5, "qty": 1, "sku": "b"}]}\n')
    scripts = {}
    for kind in ("plain", "traced"):
        for name, text in CASES.items():
            path = tmp_path / kind / f"{name}.py"
            path.parent.mkdir(exist_ok=True)
            path.write_text(text.format(data=data, out=tmp_path / f"out-{kind}"))
            scripts[kind, name] = path
    done = subprocess.run([sys.executable, "-c", PLAIN_RUNNER, *(str(scripts["plain", n]) for n in CASES)],
                          capture_output=True, text=True, env=python_env(), cwd=tmp_path, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    plain = json.loads(done.stdout.splitlines()[-1])
    for name in CASES:
        expected = plain[f"{name}.py"]
        capsys.readouterr()
        try:
            job.run_file(scripts["traced", name])
            failed = None
        except JobError as error:
            failed = error
        printed = capsys.readouterr().out
        assert printed == expected["printed"], name
        if expected["error"] is None:
            assert failed is None, (name, str(failed))
            assert schema(tmp_path / "out-traced" / name) == schema(tmp_path / "out-plain" / name), name
            continue
        line, spark_class = expected["error"]["line"], expected["error"]["class"]
        assert failed is not None and failed.exit_code == 1, name  # spark-submit's status for an uncaught exception
        assert re.search(rf"{name}\.py line {line}: ", str(failed)), (name, line, str(failed))
        if spark_class:
            assert f"[{spark_class}]" in str(failed), (name, spark_class, str(failed))
    assert "Did you mean one of the following? [`status`" in plain["typo.py"]["error"]["text"]
    assert plain["nullability.py"]["error"] is None
