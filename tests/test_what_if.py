"""What-if impact (``dltrace impact --if-removed | --if-changed``) against its definition: the
difference between a pipeline's outputs over the sources as they are and over the corrected
sources, each computed by DuckDB from the catalog's Parquet with the pipeline's steps inlined
as CTEs (no dltrace code), row for row.  The corrections are the trial's: a key moved (a
customer's nation: its orders leave one group and join another), a row removed (a customer's
latest order: the one before becomes the latest) and a measure raised (an order's price: a
customer enters the top 5 and another leaves)."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest
import sqlglot

from dltrace.errors import BadInput, UnknownColumn
from dltrace.impact.restricted import GROUPS, GROUPS_BY_ID, ROWS, WHOLE
from dltrace.table_data import duckdb_rows_sql
from tests.conftest import tpch_copy
from tests.test_cli import cli, one_line
from tests.test_pipelines import inlined, script_of
from tpch.duck import connect

pytestmark = pytest.mark.spark

STEPS = [
    ("custnation", "select c_custkey, c_nationkey, n_name from customer join nation on c_nationkey = n_nationkey"),
    ("nation_revenue", "select n_name, count(*) as orders, sum(o_totalprice) as revenue "
                       "from orders join custnation on o_custkey = c_custkey group by n_name"),
    ("top_customers", "select o_custkey, sum(o_totalprice) as spent from orders group by o_custkey "
                      "order by spent desc, o_custkey limit 5"),
    ("latest_order", "select o_custkey, o_orderkey, o_orderdate from (select o_custkey, o_orderkey, o_orderdate, "
                     "row_number() over (partition by o_custkey order by o_orderdate desc, o_orderkey desc) as rn "
                     "from orders) as ranked where rn = 1"),
    ("status_counts", "select * from (select o_orderpriority, o_orderstatus from orders) pivot "
                      "(count(*) for o_orderstatus in ('F' as f, 'O' as o))"),
    ("no_orders", "select c_custkey, c_name from customer left anti join orders on c_custkey = o_custkey"),
    ("customer_spend", "select c_custkey, c_nationkey, count(*) as orders, sum(o_totalprice) as spent "
                       "from customer join orders on c_custkey = o_custkey where o_orderstatus <> 'P' "
                       "group by c_custkey, c_nationkey"),
    ("frequent", "select o_custkey, count(*) as n from orders group by o_custkey having count(*) > 20"),
    ("price_rank", "select o_custkey, o_orderkey, rank() over (partition by o_custkey order by o_totalprice desc, "
                   "o_orderkey) as r from orders where o_custkey < 40"),
]
# DuckDB's own form of a step where it reads Spark's otherwise (a PIVOT with its grouping implied)
DUCKDB = {"status_counts": "select o_orderpriority, count(*) filter (where o_orderstatus = 'F') as f, "
                           "count(*) filter (where o_orderstatus = 'O') as o from orders group by o_orderpriority"}
KEYS = {"custnation": [], "nation_revenue": ["n_name"], "top_customers": ["o_custkey"], "latest_order": [],
        "status_counts": [], "no_orders": [], "customer_spend": ["c_custkey", "c_nationkey"], "frequent": ["o_custkey"],
        "price_rank": []}
# what of each step a what-if recomputes: only the rows or groups a correction reaches where the step is
# joins and filters with at most an outermost GROUP BY (impact/restricted.py), read by the ids their saved
# lineage names where the step reads tables only and has no HAVING, else the whole step
RECOMPUTED = {"custnation": ROWS, "nation_revenue": GROUPS, "customer_spend": GROUPS_BY_ID, "frequent": GROUPS}
DATA = "d_"  # the same steps saved in data semantics, under this prefix
EXERCISED: set[str] = set()  # the steps some correction changed (every one must be)


@pytest.fixture(scope="module")
def pipeline(tpch, tmp_path_factory):
    session = tpch_copy(tpch, tmp_path_factory, "what-if")
    session.run_script(";\n".join(f"create table {name} as {query}" for name, query in STEPS) + ";")
    session.run_script(script_of(STEPS, "select 1", DATA)[0], semantics="data")
    return session


def duck_outputs(session, table: str, corrected: str | None) -> dict[str, list[tuple]]:
    """Each step's rows by DuckDB, over the tables as they are or with ``table`` read through
    ``corrected`` (DuckDB SQL over ``base``, the table's rows)."""
    db = connect()
    for name in session.catalog.tables:
        db.execute(f"CREATE TABLE base_{name} AS {duckdb_rows_sql(session.catalog, name)}")
        body = corrected.replace("base", f"base_{name}") if name == table and corrected else \
            f"SELECT * FROM base_{name}"
        db.execute(f"CREATE VIEW {name} AS SELECT * EXCLUDE (_dl_id) FROM ({body})")
    return {name: [tuple(normal(v) for v in row) for row in db.execute(sqlglot.transpile(
        inlined(STEPS[:index], DUCKDB.get(name, query)), read="spark", write="duckdb")[0]).fetchall()]
        for index, (name, query) in enumerate(STEPS)}


def normal(value):
    return str(value.normalize()) if isinstance(value, Decimal) else value


def expected_changes(before: list[tuple], after: list[tuple], columns: list[str], key: list[str]) -> dict:
    """The definition: rows paired by ``key`` that differ, and the rows without a partner."""
    if not key:
        from collections import Counter

        b, a = Counter(before), Counter(after)
        return {"changed": [], "vanished": sorted((b - a).elements()), "appeared": sorted((a - b).elements())}
    at = [columns.index(k) for k in key]
    by_key = lambda rows: {tuple(r[i] for i in at): r for r in rows}  # noqa: E731
    b, a = by_key(before), by_key(after)
    return {"changed": sorted((b[k], a[k]) for k in b.keys() & a.keys() if b[k] != a[k]),
            "vanished": sorted(b[k] for k in b.keys() - a.keys()),
            "appeared": sorted(a[k] for k in a.keys() - b.keys())}


def answered_changes(answer) -> dict:
    listed = {"changed": [], "vanished": [], "appeared": []}
    for row in answer.rows():
        if row["change"] == "changed":
            listed["changed"].append((tuple(map(normal, row["before"].values())),
                                      tuple(map(normal, row["after"].values()))))
        else:
            listed[row["change"]].append(tuple(normal(v) for k, v in row.items() if k != "change"))
    return {change: sorted(rows) for change, rows in listed.items()}


def check_against_rerun(session, source: str, duck_correction: str, **correction) -> dict:
    table = source.split()[0]
    answers = session.what_if(source, **correction)
    before, after = duck_outputs(session, table, None), duck_outputs(session, table, duck_correction)
    for name, _ in STEPS:
        columns = session.store.get(name).columns
        expected = expected_changes(before[name], after[name], columns, KEYS[name])
        for saved in (name, DATA + name):  # the answer does not depend on the semantics
            if any(expected.values()):
                EXERCISED.add(name)
                assert saved in answers, f"{saved} changes under the correction"
            if saved in answers:
                assert answers[saved].key == KEYS[name]
                assert answers[saved].recomputed == RECOMPUTED.get(name, WHOLE), saved
                assert answered_changes(answers[saved]) == expected, saved
    return answers


def duck_set(column: str, value: str, where: str) -> str:
    """DuckDB's corrected table: ``column`` set to ``value`` in the rows ``where`` holds."""
    return f"SELECT * REPLACE (CASE WHEN {where} THEN {value} ELSE {column} END AS {column}) FROM base"


def latest_orders(session, count: int) -> list:
    """Customers' latest orders where the customer has another, the most recent first."""
    return session.run("select o_orderkey, o_custkey from (select o_orderkey, o_custkey, row_number() over (partition "
                       "by o_custkey order by o_orderdate desc, o_orderkey desc) as rn, count(*) over (partition by "
                       "o_custkey) as n from orders) where rn = 1 and n > 1 order by o_custkey").take(count)


def test_a_key_moved_changes_the_group_it_leaves_and_the_one_it_joins(pipeline):
    customer = pipeline.run("select c_custkey, c_nationkey from customer where c_custkey in "
                            "(select o_custkey from orders) order by c_custkey").first()
    answers = check_against_rerun(
        pipeline, f"customer WHERE c_custkey = {customer.c_custkey}",
        duck_set("c_nationkey", "(c_nationkey + 1) % 25", f"c_custkey = {customer.c_custkey}"),
        changes="c_nationkey = (c_nationkey + 1) % 25")
    changed = answers["nation_revenue"].rows()
    assert [row["change"] for row in changed] == ["changed", "changed"]  # the nation it left and the one it joined
    assert "top_customers" not in answers or not answers["top_customers"].rows()


def test_a_removed_latest_row_makes_the_one_before_it_the_latest(pipeline):
    order = latest_orders(pipeline, 1)[0]
    answers = check_against_rerun(pipeline, f"orders WHERE o_orderkey = {order.o_orderkey}",
                                  f"SELECT * FROM base WHERE o_orderkey <> {order.o_orderkey}", removed=True)
    latest = answers["latest_order"].rows()
    assert [row["change"] for row in latest] == ["vanished", "appeared"]
    assert latest[1]["o_custkey"] == order.o_custkey and latest[1]["o_orderkey"] != order.o_orderkey


def test_a_measure_raised_pushes_a_row_out_of_the_top(pipeline):
    outside = pipeline.run("select o_orderkey from orders where o_custkey < 40 and o_custkey not in "
                           "(select o_custkey from top_customers) order by o_orderkey").first()
    answers = check_against_rerun(
        pipeline, f"orders WHERE o_orderkey = {outside.o_orderkey}",
        duck_set("o_totalprice", "o_totalprice * 100", f"o_orderkey = {outside.o_orderkey}"),
        changes={"o_totalprice": "o_totalprice * 100"})
    top = {row["change"] for row in answers["top_customers"].rows()}
    assert top == {"appeared", "vanished"}  # one customer enters the top 5, the fifth leaves it


def test_a_row_moved_across_a_threshold_and_an_anti_join(pipeline):
    """One of a customer's 21 orders given to a customer without orders: the first falls under
    the HAVING threshold, the second leaves the customers without orders (the anti join)."""
    order = pipeline.run("select o_orderkey from orders where o_custkey in (select o_custkey from orders group by "
                         "o_custkey having count(*) = 21) order by o_orderkey").first()
    lonely = pipeline.run("select c_custkey from customer where c_custkey not in (select o_custkey from orders) "
                          "order by c_custkey").first().c_custkey
    answers = check_against_rerun(
        pipeline, f"orders WHERE o_orderkey = {order.o_orderkey}",
        duck_set("o_custkey", str(lonely), f"o_orderkey = {order.o_orderkey}"), changes=f"o_custkey = {lonely}")
    assert [row["change"] for row in answers["frequent"].rows()] == ["vanished"]
    assert [row["change"] for row in answers["no_orders"].rows()] == ["vanished"]


def test_a_row_moved_up_across_a_threshold(pipeline):
    """An order given to a customer with 20 orders: the customer enters ``frequent`` (HAVING
    count(*) > 20), a group with no saved row, so no saved DL names its 20 other orders (found in
    review: reading the groups' rows by id, the group was computed from the moved order alone)."""
    twenty = pipeline.run("select o_custkey from orders group by o_custkey having count(*) = 20 "
                          "order by o_custkey").first().o_custkey
    order = pipeline.run(f"select o_orderkey from orders where o_custkey <> {twenty} order by o_orderkey").first()
    answers = check_against_rerun(
        pipeline, f"orders WHERE o_orderkey = {order.o_orderkey}",
        duck_set("o_custkey", str(twenty), f"o_orderkey = {order.o_orderkey}"), changes=f"o_custkey = {twenty}")
    appeared = [(row["o_custkey"], row["n"]) for row in answers["frequent"].rows() if row["change"] == "appeared"]
    assert appeared == [(twenty, 21)]


def test_every_step_was_changed_by_some_correction():
    assert EXERCISED == {name for name, _ in STEPS}


def test_the_command_line_answers_and_refuses_in_one_line(pipeline, capsys):
    catalog = str(pipeline.catalog.directory)
    order = latest_orders(pipeline, 1)[0]
    code, out, _ = cli(capsys, "impact", "--catalog", catalog, "--source", f"orders WHERE o_orderkey = "
                       f"{order.o_orderkey}", "--if-removed", "--result", "latest_order", "--format", "json")
    assert code == 0
    rows = [json.loads(line) for line in out.splitlines()]
    assert [(r["result"], r["change"]) for r in rows] == [("latest_order", "vanished"), ("latest_order", "appeared")]
    code, out, _ = cli(capsys, "impact", "--catalog", catalog, "--source", f"orders WHERE o_orderkey = "
                       f"{order.o_orderkey}", "--if-changed", "o_totalprice = o_totalprice + 1")
    assert code == 0 and "nation_revenue: 1 changed, 0 vanished, 0 appeared" in out
    for args, said in [(["--if-changed", "o_price = 1"], "orders has no column o_price"),
                       (["--if-changed", "o_totalprice ="], "--if-changed must be"),
                       (["--if-removed", "--mode", "reeval"], "--if-removed and --if-changed take no --mode")]:
        code, _, err = cli(capsys, "impact", "--catalog", catalog, "--source", "orders WHERE o_orderkey = 1", *args)
        assert code == 2 and said in one_line(err), args
    with pytest.raises(UnknownColumn):
        pipeline.what_if("orders WHERE o_orderkey = 1", changes="nope = 1")
    with pytest.raises(BadInput, match="one of them"):
        pipeline.what_if("orders WHERE o_orderkey = 1")


def test_the_readme_example_finds_the_row_impact_cannot(tpch, tmp_path_factory):
    """The README's example on the demo pipeline: customer 320's nation corrected to 8 changes
    its old nation's natrev row and nation 8's, which no row of customer 320 reached."""
    from tests.conftest import demo_copy

    session = demo_copy(tpch, tmp_path_factory, "what-if-readme")
    old = session.run("select n_name from customer join nation on c_nationkey = n_nationkey "
                      "where c_custkey = 320").first().n_name
    answers = session.what_if("customer WHERE c_custkey = 320", changes="c_nationkey = 8")
    natrev = answers["natrev"].rows()
    assert sorted(row["before"]["n_name"] for row in natrev) == sorted([old, "INDIA"])
    assert all(row["change"] == "changed" for row in natrev)
    reached = {row.n_name for row in session.impact("customer WHERE c_custkey = 320", result="natrev").collect()}
    assert reached == {old}
