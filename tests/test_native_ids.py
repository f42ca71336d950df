"""dltrace's native id sets (``dltrace/udafs/native.py``): the test session loads them, they
replace Spark's collects of bigint ids only where their order cannot show, and every query's lineage is
the same with them as with Spark's own ``collect_list``/``collect_set`` (the conf turned off in
the same session).  Every other test runs with them, the DuckDB oracles included; the Spark
Connect server of ``test_cluster`` runs without them and must give the embedded lineage."""

from __future__ import annotations

import pytest

from dltrace.spark import session_conf
from dltrace.udafs import native
from tests.test_constructs import CONSTRUCTS
from tests.test_representations import lineage_bag  # DLs compared as sorted id tuples: order counts
from tpch.queries import SPJ, TPCH, load

OFF = {native.ENABLED: "false"}


def executed_plan(frame) -> str:
    frame.collect()
    return frame._jdf.queryExecution().executedPlan().toString()


def test_the_session_loads_them_and_they_replace_sorted_collects(tpch) -> None:
    plan = executed_plan(tpch.sql(load("q10")))
    assert "sorted_ids" in plan and "collect_list" not in plan
    with session_conf(tpch.spark, OFF):
        plan = executed_plan(tpch.sql(load("q10")))
    assert "sorted_ids" not in plan and "collect_list" in plan


@pytest.mark.parametrize("name", TPCH + SPJ)
def test_tpch_lineage_is_the_same_without_them(tpch, name) -> None:
    query = load(name)
    native_rows = tpch.sql(query).collect()
    with session_conf(tpch.spark, OFF):
        spark_rows = tpch.sql(query).collect()
    assert lineage_bag(native_rows) == lineage_bag(spark_rows)


@pytest.mark.parametrize("query", CONSTRUCTS.values(), ids=CONSTRUCTS)
def test_construct_lineage_is_the_same_without_them(paper, query) -> None:
    for semantics in ("control", "data"):
        native_rows = paper.sql(query, semantics=semantics).collect()
        with session_conf(paper.spark, OFF):
            spark_rows = paper.sql(query, semantics=semantics).collect()
        assert lineage_bag(native_rows) == lineage_bag(spark_rows), semantics


EDGE_CASES = {
    # a set whose buffer fills with repeats (it drops them to make room) across 4 input
    # partitions (partial buffers serialized, then merged), NULL ids skipped
    "set": "SELECT k, SORT_ARRAY(COLLECT_SET(IF(id % 97 = 0, NULL, id % 1000))) AS s "
           "FROM (SELECT id, id % 3 AS k FROM RANGE(0, 200000, 1, 4)) GROUP BY k",
    # repeats that come in a row (an id for each of ten rows in turn), some NULL between them
    "set of runs": "SELECT k, SORT_ARRAY(COLLECT_SET(IF(id % 31 = 0, NULL, id DIV 10))) AS s "
                   "FROM (SELECT id, id % 2 AS k FROM RANGE(0, 20000, 1, 4)) GROUP BY k",
    "list": "SELECT k, SORT_ARRAY(COLLECT_LIST(IF(id % 97 = 0, NULL, -id))) AS s "
            "FROM (SELECT id, id % 3 AS k FROM RANGE(0, 50000, 1, 4)) GROUP BY k",
    # more groups than the object hash aggregate keeps before it sorts the rest
    "many groups": "SELECT k, SORT_ARRAY(COLLECT_LIST(id)) AS s "
                   "FROM (SELECT id, id % 5000 AS k FROM RANGE(0, 40000, 1, 4)) GROUP BY k",
    "empty global": "SELECT SORT_ARRAY(COLLECT_LIST(id)) AS s, SORT_ARRAY(COLLECT_SET(id)) AS t FROM RANGE(0) ",
    "all null": "SELECT SORT_ARRAY(COLLECT_SET(CAST(NULL AS BIGINT))) AS s FROM RANGE(10)",
    # inside the sort, through concat, array_distinct, coalesce; flatten(collect_list(ids))
    "concat": "SELECT k, SORT_ARRAY(CONCAT(COLLECT_LIST(id), COALESCE(COLLECT_SET(id % 7), ARRAY()), ARRAY(k))) AS s "
              "FROM (SELECT id, id % 3 AS k FROM RANGE(0, 3000, 1, 4)) GROUP BY k",
    "flatten": "SELECT k, SORT_ARRAY(ARRAY_DISTINCT(FLATTEN(COLLECT_LIST(ARRAY(id, id * 2))))) AS s "
               "FROM (SELECT id, id % 3 AS k FROM RANGE(0, 3000, 1, 4)) GROUP BY k",
    "filter": "SELECT id % 3 AS k, SORT_ARRAY(COLLECT_LIST(id) FILTER (WHERE id % 2 = 0)) AS s "
              "FROM RANGE(0, 30, 1, 2) GROUP BY id % 3",
    # Spark's optimizer writes an aggregate over no rows as its default result ([]) here:
    # outer rows without a match in a correlated scalar subquery, and the DISTINCT rewrite
    "no match": "SELECT o.id, (SELECT SORT_ARRAY(COLLECT_LIST(i.id)) FROM RANGE(0, 10, 3) AS i WHERE i.id = o.id) AS s "
                "FROM RANGE(5) AS o",
    "distinct rewrite": "SELECT COUNT(DISTINCT id), COUNT(DISTINCT id % 2), SORT_ARRAY(COLLECT_SET(id)) AS s "
                        "FROM RANGE(0)",
}
NOT_REPLACED = {
    "descending": "SELECT SORT_ARRAY(COLLECT_LIST(id), false) AS s FROM RANGE(5)",
    "int ids": "SELECT SORT_ARRAY(COLLECT_LIST(CAST(id AS INT))) AS s FROM RANGE(5)",
    "distinct": "SELECT SORT_ARRAY(COLLECT_LIST(DISTINCT id % 2)) AS s FROM RANGE(5)",
    "window": "SELECT id, SORT_ARRAY(COLLECT_LIST(id * 7 % 11) OVER (PARTITION BY id % 4)) AS s "
              "FROM RANGE(0, 40, 1, 2)",
    "order shows": "SELECT SORT_ARRAY(SLICE(COLLECT_LIST(id), 1, 2)) AS s FROM RANGE(5)",
    "respect nulls": "SELECT SORT_ARRAY(COLLECT_LIST(IF(id = 2, NULL, id)) RESPECT NULLS) AS s FROM RANGE(5)",
}


def optimized_schema(frame) -> str:
    return frame._jdf.queryExecution().optimizedPlan().schema().json()


@pytest.mark.parametrize("sql", EDGE_CASES.values(), ids=EDGE_CASES)
def test_edge_cases_give_spark_own_answer(spark, sql) -> None:
    frame = spark.sql(sql)
    assert "sorted_id" in executed_plan(frame)
    native_rows = sorted(map(str, frame.collect()))
    with session_conf(spark, OFF):
        spark_frame = spark.sql(sql)
        assert sorted(map(str, spark_frame.collect())) == native_rows
        assert optimized_schema(spark_frame) == optimized_schema(frame)


@pytest.mark.parametrize("sql", NOT_REPLACED.values(), ids=NOT_REPLACED)
def test_other_collects_are_left_to_spark(spark, sql) -> None:
    assert "sorted_id" not in executed_plan(spark.sql(sql))


def test_a_conf_value_other_than_false_leaves_them_on(spark) -> None:
    with session_conf(spark, {native.ENABLED: "0"}):
        assert "sorted_id" in executed_plan(spark.sql(EDGE_CASES["list"]))


def test_a_jar_that_cannot_be_built_is_a_reason_not_an_error(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    jar, why_not = native.extension_jar(str(tmp_path / "no-java"))
    assert jar is None and "did not run" in why_not
    assert native.extension_jar("java") == (None, why_not)  # a failed build is not tried again
    assert native.extension_jar(None) == (None, "no java to run the Scala compiler")
    unwritable = tmp_path / "file"
    unwritable.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(unwritable))  # the cache directory cannot be made
    jar, why_not = native.extension_jar("java")
    assert jar is None and why_not.startswith("cannot build")
    monkeypatch.setenv("DLTRACE_NATIVE", "0")
    assert native.extension_jar("java") == (None, "DLTRACE_NATIVE=0")
    assert not list(tmp_path.rglob("*.jar"))


@pytest.mark.spark  # the Scala compiler is a JVM
def test_the_command_prints_the_jar_a_server_is_started_with(capsys) -> None:
    assert native.main() == 0
    jar = capsys.readouterr().out.strip()
    assert jar == str(native.jar_path()) and jar.endswith(".jar")


def test_jars_untouched_for_a_month_are_pruned_when_another_is_built(tmp_path) -> None:
    import os
    import time

    old, recent, failed, other = (tmp_path / name for name in (
        "dltrace-native-old.jar", "dltrace-native-recent.jar", "dltrace-native-old.failed", "unrelated.jar"))
    for file in (old, recent, failed, other):
        file.write_text("")
    month_ago = time.time() - (native.UNUSED_DAYS + 1) * 86400
    for file in (old, failed, other):
        os.utime(file, (month_ago, month_ago))
    kept = tmp_path / "dltrace-native-kept.jar"
    kept.write_text("")
    os.utime(kept, (month_ago, month_ago))
    native.prune_unused(tmp_path, keep=(kept,))
    assert sorted(f.name for f in tmp_path.iterdir()) == sorted(f.name for f in (recent, other, kept))
