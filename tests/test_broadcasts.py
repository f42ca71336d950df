"""A lineage query keeps the plain query's broadcast joins (dltrace/broadcasts.py)."""

from __future__ import annotations

import pytest
import sqlglot
from sqlglot import exp

from dltrace import broadcasts, rewriter, session
from dltrace.broadcasts import WidenedScan, in_spark_join_order, keep_broadcasts, with_broadcast_hints
from tests.oracle import lineage_bag

QUERY = """
SELECT p_brand, SUM(l_quantity) AS quantity
FROM part, lineitem
WHERE p_partkey = l_partkey AND p_type LIKE '%BRASS'
GROUP BY p_brand
"""
PART = {"p_partkey": "bigint", "p_brand": "string", "p_type": "string", "p_name": "string"}
SCAN = WidenedScan(frozenset(PART), frozenset({"p_partkey", "p_brand"}))


def hinted(sql: str, scans=(SCAN,)) -> str | None:
    found = with_broadcast_hints(sqlglot.parse_one(sql, read="spark"), list(scans), {"part": PART})
    return None if found is None else found.sql("spark")


def test_hint_goes_to_the_select_reading_the_scan_in_spark_join_order():
    sql = ("SELECT o.x FROM part AS p, supplier AS s, lineitem AS l, orders AS o "
           "WHERE p.p_partkey = l.l_partkey AND s.s_suppkey = l.l_suppkey AND o.k = l.k AND p.p_brand = 'b'")
    assert hinted(sql) == (
        "SELECT /*+ BROADCAST(p) */ o.x FROM part AS p INNER JOIN lineitem AS l INNER JOIN supplier AS s "
        "INNER JOIN orders AS o WHERE p.p_partkey = l.l_partkey AND s.s_suppkey = l.l_suppkey "
        "AND o.k = l.k AND p.p_brand = 'b'"
    )


def test_on_conditions_move_to_where_and_a_nested_select_gets_its_own_hint():
    sql = ("SELECT t.a FROM (SELECT p.p_brand AS a FROM lineitem AS l JOIN part AS p ON p.p_partkey = l.k "
           "AND p.p_type = 'x') AS t")
    assert hinted(sql) == (
        "SELECT t.a FROM (SELECT /*+ BROADCAST(p) */ p.p_brand AS a FROM lineitem AS l INNER JOIN part AS p "
        "WHERE p.p_partkey = l.k AND p.p_type = 'x') AS t"
    )


@pytest.mark.parametrize("sql", [
    "SELECT p.p_brand FROM lineitem AS l LEFT JOIN part AS p ON p.p_partkey = l.k",  # outer: not reordered
    "SELECT * FROM lineitem AS l, part AS p WHERE p.p_partkey = l.k AND p.p_brand = 'b'",  # FROM order is *'s
    "SELECT l.k FROM lineitem AS l JOIN part AS p USING (k)",
    "SELECT p.p_partkey FROM lineitem AS l, part AS p WHERE p.p_partkey = l.k",  # keeps fewer columns
    "SELECT p.p_brand, p.p_partkey FROM lineitem AS l, other AS p WHERE p.p_partkey = l.k",  # not the table
    "SELECT HASH(*), p.p_brand FROM lineitem AS l, part AS p WHERE p.p_partkey = l.k",  # * in FROM order
])
def test_no_hint_where_spark_would_not_join_the_same_way(sql):
    assert hinted(sql) is None


def test_join_order_starts_with_the_first_item_and_takes_the_first_linked_one():
    query = sqlglot.parse_one("SELECT a.x FROM a, b, c, d WHERE d.k = a.k AND c.j = b.j AND b.i = d.i", read="spark")
    in_spark_join_order(query)
    assert [t.alias_or_name for t in query.find_all(exp.Table)] == ["a", "d", "b", "c"]


def test_a_subquery_condition_does_not_link_the_from_items():
    query = sqlglot.parse_one("SELECT a.x FROM a, b, c WHERE c.k = a.k AND EXISTS (SELECT 1 FROM b AS b2 "
                              "WHERE b2.j = a.j) AND b.i = c.i", read="spark")
    in_spark_join_order(query)
    assert [t.alias_or_name for t in query.args["joins"][0].find_all(exp.Table)] == ["c"]


def test_the_rewriters_output_keeps_its_conditions_and_drops_true():
    from dltrace.datasets import SCHEMA

    lineage = sqlglot.parse_one(rewriter.rewrite_sql(QUERY, SCHEMA), read="spark")
    scan = WidenedScan(frozenset(SCHEMA["part"]), frozenset({"p_partkey", "p_brand"}))
    found = with_broadcast_hints(lineage, [scan], {"part": SCHEMA["part"]})
    assert found is not None
    select = next(s for s in found.find_all(exp.Select) if s.args.get("hint"))
    assert select.args["hint"].sql("spark") == "/*+ BROADCAST(part) */"
    assert "TRUE" not in select.sql("spark")
    assert sorted(c.sql("spark") for c in rewriter.clauses.conjuncts(select.args["where"])) == [
        "part.p_partkey = lineitem.l_partkey", "part.p_type LIKE '%BRASS'"]


def test_spark_connect_frames_run_as_written():
    frame = object()  # a Connect DataFrame has no JVM plan
    assert keep_broadcasts(frame, sqlglot.parse_one("SELECT 1"), None, lambda text: None) is frame


def broadcast_scans(frame) -> str:
    plan = frame._jdf.queryExecution().executedPlan().toString()
    return "\n".join(line for line in plan.splitlines() if "BroadcastExchange" in line or "BroadcastHashJoin" in line)


def test_a_side_widened_past_the_threshold_by_its_ids_is_broadcast_as_without_lineage(tpch, monkeypatch):
    spark = tpch.spark
    previous = spark.conf.get("spark.sql.autoBroadcastJoinThreshold")
    try:
        monkeypatch.setattr(session, "keep_broadcasts", lambda frame, *args: frame)
        unhinted = tpch.sql(QUERY)
        part_side = next(side for _, _, side in broadcasts._join_sides(unhinted._jdf.queryExecution().optimizedPlan())
                         if "p_partkey" in str(side.output().toString()))
        estimate, without_lineage = broadcasts.size_without_lineage(part_side)
        assert without_lineage < estimate
        spark.conf.set("spark.sql.autoBroadcastJoinThreshold", str((estimate + without_lineage) // 2))
        unhinted = tpch.sql(QUERY)
        plain = tpch.sql(QUERY, lineage=False)
        monkeypatch.setattr(session, "keep_broadcasts", keep_broadcasts)
        kept = tpch.sql(QUERY)
        assert "BroadcastHashJoin" in broadcast_scans(plain)
        assert "BroadcastHashJoin" not in broadcast_scans(unhinted)  # what the hint is for
        assert "BroadcastHashJoin" in broadcast_scans(kept)
        assert lineage_bag(kept.collect()) == lineage_bag(unhinted.collect())
        monkeypatch.setattr(broadcasts, "join_shape", iter([["a join"], ["another"]]).__next__)
        assert "BroadcastHashJoin" not in broadcast_scans(tpch.sql(QUERY))  # joins changed: as written
    finally:
        spark.conf.set("spark.sql.autoBroadcastJoinThreshold", previous)


def test_small_tables_are_not_planned_twice(tpch, monkeypatch):
    monkeypatch.setattr(broadcasts, "widened_scans", lambda *args: pytest.fail("looked at a plan"))
    assert tpch.sql(QUERY).count() > 0  # every SF 0.01 table is under Spark's 10 MB threshold
