"""Errors that tell the truth: a Spark failure with Spark's error class and first line, a dead
JVM only when it is dead, a lineage query Spark rejects as a dltrace bug, ``save`` checking
what it is given.  All against a real Spark JVM."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from py4j.protocol import Py4JJavaError

from dltrace.errors import BadInput, DltraceError, SparkInternalError, jvm_alive, spark_error, unexpected_error


def java_error(spark, exception) -> Py4JJavaError:
    """py4j's error for a real Java exception object, as a failing call would raise it."""
    return Py4JJavaError("An error occurred while calling o1.collectToPython.\n", exception)


def test_java_exception_is_a_spark_failure_not_a_dead_jvm(spark, tmp_path):
    """A Java exception comes from a JVM that answered: never "stopped unexpectedly", never
    out of memory, whatever an old log holds."""
    with pytest.raises(Py4JJavaError) as raised:
        spark._jvm.java.util.ArrayList().get(5)
    log = tmp_path / "spark.log"
    log.write_text("java.lang.OutOfMemoryError: Java heap space (an earlier run)\n")
    error = unexpected_error(raised.value, str(log))
    assert jvm_alive()
    assert str(error).startswith("Spark: ") and "Index 5 out of bounds" in str(error)
    assert "JVM" not in str(error) and "memory" not in str(error) and error.exit_code == 1


def test_spark_internal_error_is_a_dltrace_bug_with_its_class(spark):
    """Spark's internal errors (SQLSTATE XX...) are reported as a dltrace bug, with Spark's class."""
    exception = spark._jvm.org.apache.spark.SparkException.internalError("plan became unresolved")
    error = spark_error(java_error(spark, exception))
    assert "[INTERNAL_ERROR]" in str(error) and "a bug in dltrace" in str(error) and "dltrace rewrite" in str(error)
    assert not isinstance(error, BadInput) and error.exit_code == 1


def test_spark_internal_error_on_the_query_as_written_is_sparks_bug(spark):
    exception = spark._jvm.org.apache.spark.SparkException.internalError("plan became unresolved")
    error = spark_error(java_error(spark, exception), lineage_query=False)
    assert "[INTERNAL_ERROR]" in str(error) and "a bug in Spark, not in dltrace" in str(error)
    assert "a bug in dltrace" not in str(error) and error.exit_code == 1


# a valid query Spark 4.x's analyzer fails on by itself (found by tests/fuzz_queries.py, seed 1185):
# an attribute of lineitem "missing" under DISTINCT over a ROLLUP with HAVING, lineitem read twice
SPARKS_OWN_FAILURE = (
    "SELECT count(DISTINCT t1.p_retailprice) AS c0, t1.p_retailprice AS c1 FROM part t1 WHERE ((NOT EXISTS "
    "(SELECT t2.l_returnflag FROM lineitem t2) OR t1.p_retailprice > 25) OR t1.p_brand NOT IN ('F', 'F')) "
    "GROUP BY t1.p_retailprice INTERSECT SELECT avg(d6.c1) AS c0, t4.o_totalprice AS c1 FROM (SELECT count(*) "
    "AS c0 FROM supplier) d3 LEFT JOIN orders t4 ON d3.c0 = t4.o_orderkey JOIN (SELECT DISTINCT t5.l_orderkey "
    "AS c0, t5.l_extendedprice AS c1 FROM lineitem t5 GROUP BY ROLLUP(t5.l_orderkey, t5.l_extendedprice) "
    "HAVING sum(t5.l_partkey) < 2) d6 ON t4.o_custkey = d6.c0 AND d6.c0 > d6.c1 WHERE NOT EXISTS (SELECT "
    "t7.o_orderstatus FROM orders t7 WHERE t7.o_orderstatus = t4.o_orderstatus) GROUP BY t4.o_totalprice")


def test_a_query_spark_fails_on_by_itself_is_not_called_a_dltrace_bug(tpch):
    """The query as written, without lineage, failing inside Spark's analyzer is Spark's bug.
    (Its lineage query, written otherwise, runs.)"""
    try:
        tpch.sql(SPARKS_OWN_FAILURE, lineage=False)
    except SparkInternalError as error:
        plain = str(error)
    else:
        pytest.skip("this Spark runs the query: its analyzer's bug is fixed")
    assert "a bug in Spark, not in dltrace" in plain and "MISSING_ATTRIBUTES" in plain
    assert "a bug in dltrace" not in plain and "dltrace rewrite" not in plain


def test_an_internal_error_of_the_lineage_query_alone_is_a_dltrace_bug_with_the_query(paper, monkeypatch):
    """Spark failing inside its planner on the lineage query of a query it runs: dltrace's
    bug, reported with the lineage query in a file and Spark's own line."""
    exception = paper.spark._jvm.org.apache.spark.SparkException.internalError("plan became unresolved")
    run = paper.run

    def lineage_fails(spark_sql: str, reads=None, lineage_query: bool = True):
        if lineage_query:
            raise spark_error(java_error(paper.spark, exception))
        return run(spark_sql, reads, lineage_query)

    monkeypatch.setattr(paper, "run", lineage_fails)
    with pytest.raises(DltraceError) as raised:
        paper._run_lineage("select s_name, 1 as DL from store", "select s_name from store")
    message = str(raised.value)
    assert message.startswith("Spark rejected dltrace's lineage query") and "a bug in dltrace" in message
    assert "[INTERNAL_ERROR]" in message and "plan became unresolved" in message
    assert "dltrace rewrite" not in message  # Spark's own line, not the first report of it again


def test_analysis_error_keeps_its_class(paper):
    with pytest.raises(BadInput, match=r"^Spark: \[UNRESOLVED_COLUMN"):
        paper.run("select nope from store")


def test_lineage_query_rejected_is_a_bug_with_the_query(paper):
    """Spark refusing a lineage query of a query it runs is dltrace's fault: exit 1 and the
    lineage query in a file to report; a query Spark refuses itself stays bad input."""
    lineage_sql = "select s_name, nope as DL from store"
    with pytest.raises(DltraceError) as raised:
        paper._run_lineage(lineage_sql, "select s_name from store")
    assert raised.value.exit_code == 1 and "a bug in dltrace" in str(raised.value)
    path = re.search(r"/\S+\.sql", str(raised.value)).group()
    assert Path(path).read_text().strip() == lineage_sql
    with pytest.raises(BadInput):
        paper._run_lineage(lineage_sql, "select nope from store")


def test_save_says_what_it_takes(paper):
    query = "select s_name from store"
    with pytest.raises(BadInput, match=r"save\(frame, name\) takes the DataFrame sql\(\) or trace\(\) returned"):
        paper.save("q14", query)


def test_lineage_larger_than_the_driver_takes_is_one_line_and_the_jvm_lives(tpch, tmp_path):
    """Rows each spelling out a large shared set (every lineitem, through an uncorrelated
    subquery) printed as JSON: past ``spark.driver.maxResultSize`` Spark stops the job, and
    the command says what to do instead in one line (exit 1), not a dead JVM or a trace."""
    import os
    import subprocess
    import sys

    query = "select l_orderkey from lineitem where l_quantity > (select avg(l_quantity) from lineitem)"
    env = {**os.environ, "SPARK_DRIVER_MAX_RESULT_SIZE": "1m", "DLTRACE_CATALOG": str(tpch.catalog.directory)}
    done = subprocess.run([sys.executable, "-m", "dltrace", "sql", query, "--format", "json", "--limit", "40"],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 1, done.stderr[-2000:]
    assert lines[-1].startswith("dltrace: error: the rows asked for are more than Spark brings to the driver at once")
    assert "--save" in lines[-1] and "SPARK_DRIVER_MAX_RESULT_SIZE" in lines[-1]
    assert "Traceback" not in done.stderr and "JVM" not in lines[-1]


def test_stages_failing_at_once_are_the_first_failure_not_an_internal_error():
    """Adaptive execution wraps failures of several stages of one query in
    STAGE_MATERIALIZATION_MULTIPLE_FAILURES (SQLSTATE XX000); plain Spark, whose plan has one
    stage there, raises the failure itself (generator seed 1610: INVALID_ARRAY_INDEX)."""

    class Failure(Exception):
        def getMessage(self) -> str:
            return ("[STAGE_MATERIALIZATION_MULTIPLE_FAILURES] Multiple failures (2) in stage materialization: \n"
                    "  1. SparkArrayIndexOutOfBoundsException: [INVALID_ARRAY_INDEX] The index 0 is out of "
                    "bounds. The array has 0 elements. SQLSTATE: 22003\n== SQL (line 1, position 7) ==\n"
                    "  2. SparkArrayIndexOutOfBoundsException: [INVALID_ARRAY_INDEX] The index 0 is out of "
                    "bounds. The array has 0 elements. SQLSTATE: 22003\n SQLSTATE: XX000")

        def getSqlState(self) -> str:
            return "XX000"

    error = spark_error(Failure())
    assert not isinstance(error, SparkInternalError)
    assert str(error).startswith("Spark: [INVALID_ARRAY_INDEX] The index 0 is out of bounds.")
