"""Pipelines: saved results read like tables, views, scripts, impact across every result.

* Oracle: materializing a step changes nothing.  Three TPC-H pipelines (an aggregate over
  an aggregate, two saved results joined, a saved result read twice and inside subqueries)
  give the same (row, DL) bag as the single query that inlines their steps as CTEs, under
  both semantics and with sets and roBDDs; every step's result passes the DuckDB
  completeness oracle against the base tables.
* Impact with no result searches every saved result, and agrees with stored impact per
  result and with re-evaluation of each result's query.
* Staleness follows inputs through other results; every bad input is one line, exit 2,
  with nothing saved by the failing step and earlier results unchanged.
"""

from __future__ import annotations

import json
from collections import Counter

import numpy as np
import pytest

from dltrace import LineageSession
from dltrace.errors import BadInput, CatalogError, DltraceError
from dltrace.formatting import lineage_ids
from dltrace.ids import split_id
from dltrace.impact import ImpactWarning
from dltrace.results import POSITION, ResultStore
from dltrace.spark import session_conf
from tests.conftest import stored_before_positions, tpch_copy
from tests.oracle import DuckOracle, check_completeness
from tests.test_cli import cli, one_line

# (name, [(step name, step query)], final query): each step reads base tables or earlier steps
PIPELINES = {
    "aggregate_of_aggregates": (
        [
            ("custrev", "select c_custkey, c_nationkey, sum(l_extendedprice * (1 - l_discount)) as revenue "
                        "from customer join orders on c_custkey = o_custkey join lineitem on l_orderkey = o_orderkey "
                        "where l_returnflag = 'R' group by c_custkey, c_nationkey"),
            ("natrev", "select n_regionkey, n_name, sum(revenue) as revenue, count(*) as customers "
                       "from custrev join nation on c_nationkey = n_nationkey group by n_regionkey, n_name"),
        ],
        "select r_name, sum(revenue) as revenue, sum(customers) as customers "
        "from natrev join region on n_regionkey = r_regionkey group by r_name",
    ),
    "two_results_joined": (
        [
            ("stock", "select s_nationkey as nationkey, sum(ps_supplycost * ps_availqty) as stock "
                      "from supplier join partsupp on s_suppkey = ps_suppkey where ps_availqty > 9000 "
                      "group by s_nationkey"),
            ("buyers", "select c_nationkey as nationkey, count(*) as customers from customer "
                       "where c_acctbal > 9000 group by c_nationkey"),
        ],
        "select s.nationkey, stock, customers from stock s left join buyers b on s.nationkey = b.nationkey "
        "where stock > 1000000",
    ),
    "read_twice_and_in_subqueries": (
        [
            ("ordqty", "select o_orderkey, o_custkey, o_orderpriority, sum(l_quantity) as qty "
                       "from orders join lineitem on o_orderkey = l_orderkey "
                       "where o_orderdate < date '1992-04-01' group by o_orderkey, o_custkey, o_orderpriority"),
        ],
        "select o_orderpriority, count(*) as n from ordqty v "
        "where qty > (select avg(qty) from ordqty) "
        "and exists (select 1 from ordqty w where w.o_custkey = v.o_custkey and w.o_orderkey <> v.o_orderkey) "
        "group by o_orderpriority",
    ),
}
VARIANTS = [("control", "set"), ("data", "set"), ("control", "bdd"), ("data", "bdd")]


@pytest.fixture(scope="module")
def pipelines(tpch, tmp_path_factory) -> LineageSession:
    """TPC-H SF 0.01 in a catalog of its own, so saved steps do not show up in other tests' results."""
    return tpch_copy(tpch, tmp_path_factory, "pipelines")


@pytest.fixture(scope="module")
def oracle(pipelines) -> DuckOracle:
    return DuckOracle(pipelines)


def inlined(steps: list[tuple[str, str]], final: str) -> str:
    """The pipeline as one query: its steps as CTEs (written here, without dltrace code)."""
    if not steps:
        return final
    return "with " + ", ".join(f"{name} as ({query})" for name, query in steps) + " " + final


def bag(rows) -> Counter:
    """(values, DL) pairs as a bag; ``_row`` ignored, decimals compared as text, DL as the
    sorted ids whatever the representation."""
    return Counter(
        (tuple(str(v) for k, v in r.asDict().items() if k not in ("DL", "_row")), tuple(lineage_ids(r.DL)))
        for r in rows
    )


def script_of(steps: list[tuple[str, str]], final: str, prefix: str) -> tuple[str, str]:
    """The pipeline as a script whose steps are saved as ``prefix + name``, and its final
    query with those names."""
    rename = lambda text: _renamed(text, [n for n, _ in steps], prefix)  # noqa: E731
    body = ";\n".join(f"create or replace table {prefix}{name} as\n  {rename(query)}" for name, query in steps)
    return body + ";\n", rename(final)


def _renamed(text: str, names: list[str], prefix: str) -> str:
    import re

    for name in names:
        text = re.sub(rf"\b(from|join)\s+{name}\b", rf"\1 {prefix}{name}", text)
    return text


@pytest.mark.parametrize("semantics, representation", VARIANTS)
@pytest.mark.parametrize("pipeline", list(PIPELINES))
def test_materializing_a_step_changes_nothing(pipelines, oracle, pipeline, semantics, representation):
    steps, final = PIPELINES[pipeline]
    prefix = f"{pipeline[:4]}_{semantics[0]}{representation[0]}_"
    script, final_query = script_of(steps, final, prefix)
    outcomes = pipelines.run_script(script + final_query, semantics=semantics, representation=representation)
    assert [o.kind for o in outcomes] == ["table"] * len(steps) + ["query"]
    through_steps = outcomes[-1].frame.collect()
    one_query = pipelines.sql(inlined(steps, final), semantics, representation).collect()
    assert through_steps, f"{pipeline} returns no rows at SF 0.01: pick other parameters"
    assert all(len(set(ids)) == len(ids) for ids in map(lineage_ids, (r.DL for r in through_steps))), "an id repeated"
    assert bag(through_steps) == bag(one_query)
    if representation == "set":
        for index, (name, _) in enumerate(steps):  # each step against the base tables
            saved = pipelines.result(prefix + name).drop("_row").collect()
            assert saved and bag(saved) == bag(
                pipelines.sql(inlined(steps[:index], steps[index][1]), semantics).collect()
            )
            if semantics == "control":
                check_completeness(oracle, inlined(steps[:index], steps[index][1]), saved, tree=False, most=5)
        if semantics == "control":
            check_completeness(oracle, inlined(steps, final), through_steps, tree=False, most=5)


def test_saved_lineage_and_row_numbers_are_not_query_columns(pipelines):
    pipelines.run_script("create or replace table cols_by_nation as "
                         "select c_nationkey, count(*) as n from customer group by c_nationkey")
    frame = pipelines.sql("select * from cols_by_nation")
    assert frame.columns == ["c_nationkey", "n", "DL"]
    assert pipelines.sql("select * from cols_by_nation", lineage=False).columns == ["c_nationkey", "n"]
    with pytest.raises(BadInput, match="column 'dl'"):
        pipelines.sql("select c_nationkey, DL from cols_by_nation")


@pytest.mark.parametrize("rows_per_file", [0, 1000])
def test_rows_over_several_partitions_are_numbered_in_result_order(pipelines, rows_per_file):
    """``_row`` follows the ORDER BY across the sorted partitions, densely from 0, when a
    save's rows are spread over several of them (derived from the positions written, each
    partition's first row read from the files), in one file each or in several
    (``maxRecordsPerFile``); a lookup by ``_row`` finds the same rows."""
    query = "select o_orderkey, o_totalprice from orders order by o_totalprice desc, o_orderkey"
    spark = pipelines.spark
    settings = {"spark.sql.adaptive.coalescePartitions.enabled": "false",  # the 4 range partitions
                "spark.sql.files.maxRecordsPerFile": str(rows_per_file)}
    with session_conf(spark, settings):
        frame = pipelines.sql(query)
        assert frame.rdd.getNumPartitions() > 1
        saved = pipelines.save(frame, "numbered_orders")
    assert len(saved.positions) > 1 and POSITION in saved.schema and "_row" not in saved.schema
    rows = pipelines.result("numbered_orders").collect()
    assert saved.rows == len(rows) == 15000
    assert [r._row for r in rows] == list(range(len(rows)))
    assert [(r.o_totalprice, r.o_orderkey) for r in rows] == sorted(((r.o_totalprice, r.o_orderkey) for r in rows),
                                                                    key=lambda v: (-v[0], v[1]))
    firsts = [first for _, first in saved.positions]
    wanted = np.array(sorted({0, *firsts, *(f - 1 for f in firsts if f), 14999, 7777}), dtype=np.int64)
    store = ResultStore(pipelines.catalog)
    found = store.rows_at(spark, saved, wanted).orderBy("_row").collect()
    assert [(r._row, r.o_orderkey, list(r.DL)) for r in found] == [
        (r._row, r.o_orderkey, list(r.DL)) for r in (rows[i] for i in wanted)
    ]


@pytest.mark.parametrize(("step", "shares"), [
    ("select c_nationkey, sum(revenue) as revenue from ref_custrev group by c_nationkey", False),
    ("select c_custkey, revenue from ref_custrev where c_nationkey = 1 "
     "and revenue > (select avg(revenue) from ref_custrev where c_nationkey = 1)", True),  # one nation: quick
])
def test_create_table_plans_a_step_as_it_is_stored(pipelines, referencing, step, shares):
    """``CREATE TABLE AS`` over saved results plans only the form a step stores (the rows it
    reads named); what it saves equals saving ``sql()``'s result, which is planned with the
    saved lineage spelled out first: rows, whole DLs, shared sets, the disjoint flag."""
    made = pipelines.create_table("ct_step", step, replace=True)
    saved = pipelines.save(pipelines.sql(step), "saved_step")
    try:
        assert bool(made.shared_sets) is shares and made.references
        for field in ("disjoint", "shared_sets", "shared_ids", "references", "rows", "schema", "results"):
            assert getattr(made, field) == getattr(saved, field), field
        assert bag(pipelines.result("ct_step").collect()) == bag(pipelines.result("saved_step").collect())
    finally:
        pipelines.drop_result("ct_step")
        pipelines.drop_result("saved_step")


def test_partition_positions_read_from_the_files(tmp_path):
    """Each partition's first ``_row`` from the files' footers (their column where a writer
    kept no statistics), whatever their names: an empty
    file skipped, a partition continued in a second file (``maxRecordsPerFile``); a file
    that is not a run of consecutive positions, or a partition's file that does not continue
    the one before, fails in one line instead of numbering rows wrongly."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from dltrace.results import PARTITION_BITS, partition_positions
    from dltrace.storage import location

    def written(files: dict[str, list[int]], statistics: bool = True):
        directory = tmp_path / f"rows{len(list(tmp_path.iterdir()))}.parquet"
        directory.mkdir()
        for name, positions in files.items():
            pq.write_table(pa.table({POSITION: pa.array(positions, pa.int64()), "n": pa.array(positions)}),
                           directory / name, row_group_size=2, write_statistics=statistics)
        return location(directory)

    p = 1 << PARTITION_BITS
    files = {"part-00000-c000.parquet": [], "part-00003-c000.parquet": [3 * p, 3 * p + 1],
             "part-00001-c001.parquet": [p + 3, p + 4], "part-00001-c000.parquet": [p, p + 1, p + 2]}
    assert partition_positions(written(files)) == ([[1, 0], [3, 5]], 7)
    assert partition_positions(written(files, statistics=False)) == ([[1, 0], [3, 5]], 7)  # read from the column
    assert partition_positions(written({"a.parquet": []})) == ([], 0)
    with pytest.raises(CatalogError, match="hold positions 0 to 3, not one each"):
        partition_positions(written({"a.parquet": [0, 1, 3]}))
    with pytest.raises(CatalogError, match=f"start at position {p + 4}, which no other file leads to"):
        partition_positions(written({"a.parquet": [p, p + 1], "b.parquet": [p + 4]}))


def test_a_result_before_format_5_may_have_a_column_named_pos(tmp_path):
    """Before format 5 ``_pos`` was not reserved: such a result's ``_pos`` is a query column,
    and its ``result.json`` without ``positions`` is whole."""
    from dltrace.results import FORMAT, SavedResult
    from dltrace.validation import check_result

    record = {"name": "old", "query": "select 1 as _pos", "semantics": "control", "representation": "set",
              "catalog_version": 1, "tables": {}, "created_at": 0.0, "rows": 1, "columns": ["_pos"],
              "data": "results/old/s/rows.parquet", "index": None, "format": 4,
              "schema": {"_row": "bigint", "_pos": "int", "DL": "array<bigint>"}}
    check_result(record, tmp_path / "result.json", FORMAT, SavedResult)
    assert SavedResult(**record).query_columns == {"_pos": "int"}


@pytest.mark.parametrize("damage, expected", [
    (lambda positions: None, "positions must be given exactly when rows.parquet has _pos"),
    (lambda positions: positions + [[positions[-1][0] + 1, 0]], "in ascending order, from row 0"),
    (lambda positions: [[p, f + 1] for p, f in positions], "in ascending order, from row 0"),
])
def test_damaged_positions_are_one_line(capsys, pipelines, referencing, damage, expected):
    """``positions`` number every row of a format 5 result: missing, out of order or not
    starting at row 0, the result.json is damaged, said in one line."""
    metadata = pipelines.store.directory / "ref_custrev" / "result.json"
    text = metadata.read_text()
    record = json.loads(text)
    metadata.write_text(json.dumps({**record, "positions": damage(record["positions"])}))
    try:
        code, _, err = cli(capsys, "results", "--catalog", str(pipelines.catalog.directory))
        assert code == 1 and "result.json is damaged" in one_line(err) and expected in err
    finally:
        metadata.write_text(text)


def test_results_that_store_row_numbers_still_load(pipelines, referencing):
    """A result saved before format 5 stores ``_row`` (no ``_pos``, no ``positions``): reading
    it, a lookup by ``_row``, impact, explain and a step reading it give what they gave."""
    store = pipelines.store
    source = "lineitem WHERE l_orderkey = 7"
    before = pipelines.result("ref_custrev").collect()
    hits, explained = pipelines.impact(source, result="ref_custrev").collect(), pipelines.explain("ref_custrev", 3)
    step = "select c_nationkey, count(*) as n from ref_custrev group by c_nationkey"
    downstream = bag(pipelines.sql(step).collect())
    with stored_before_positions(pipelines, "ref_custrev"):
        old = store.get("ref_custrev")
        assert old.positions is None and old.rows_sql() == ["*"] and "_row" in old.schema
        assert pipelines.result("ref_custrev").collect() == before
        found = store.rows_at(pipelines.spark, old, np.array([3, 5], dtype=np.int64)).orderBy("_row").collect()
        assert found == [before[3], before[5]]
        assert pipelines.impact(source, result="ref_custrev").collect() == hits
        assert {t: f.collect() for t, f in pipelines.explain("ref_custrev", 3).items()} == {
            t: f.collect() for t, f in explained.items()
        }
        assert bag(pipelines.sql(step).collect()) == downstream


@pytest.fixture()
def sorted_aggregates(monkeypatch) -> tuple[str, str]:
    """Many groups from 500 on (SF 0.01 has 1,500 customers); the setting ``executing`` makes
    for them and its value."""
    from importlib import import_module

    from dltrace.spark import SORTED_AGGREGATES

    aggregate_rule = import_module("dltrace.rewriter.aggregate")  # the package's `aggregate` is the rule
    monkeypatch.setattr(aggregate_rule, "MANY_GROUPS_FROM", 500)
    ((setting, value),) = SORTED_AGGREGATES.items()
    return setting, value


def test_a_step_with_many_groups_is_saved_by_sorted_aggregates(pipelines, monkeypatch, sorted_aggregates):
    """A step that groups by a key into many groups (one per customer; one per order, over a
    saved step) writes its rows with Spark's sort aggregate, and saves the DLs the query
    computes with its object hash aggregate; a step of few groups keeps the hash aggregate."""
    setting, sorted_ = sorted_aggregates
    in_force = {}
    store_save = ResultStore.save

    def save(store, rows, name, *args, **kwargs):
        in_force[name] = pipelines.spark.conf.get(setting, None)
        return store_save(store, rows, name, *args, **kwargs)

    monkeypatch.setattr(ResultStore, "save", save)
    per_customer = ("select c_custkey, c_nationkey, sum(l_extendedprice) as revenue from customer "
                    "join orders on c_custkey = o_custkey join lineitem on l_orderkey = o_orderkey "
                    "group by c_custkey, c_nationkey")
    per_nation = "select c_nationkey, sum(revenue) as revenue from sorted_custrev group by c_nationkey"
    per_order = ("select o_orderkey, sum(revenue) as revenue from sorted_custrev join orders "
                 "on c_custkey = o_custkey group by o_orderkey")  # planned again, naming sorted_custrev's rows
    pipelines.run_script(f"create or replace table sorted_custrev as {per_customer};\n"
                         f"create or replace table sorted_natrev as {per_nation};\n"
                         f"create or replace table sorted_ordrev as {per_order};")
    assert in_force == {"sorted_custrev": sorted_, "sorted_natrev": None, "sorted_ordrev": sorted_}
    assert pipelines.spark.conf.get(setting, None) is None  # the save's setting is gone
    for name, query in (("sorted_custrev", per_customer), ("sorted_ordrev", per_order)):
        saved = pipelines.result(name).drop("_row").collect()
        assert len(saved) > 500 and bag(saved) == bag(pipelines.sql(query).collect())


def test_the_cli_prints_rows_of_many_groups_by_sorted_aggregates(capsys, pipelines, monkeypatch, sorted_aggregates):
    """The CLI plans a query of many groups with Spark's sort aggregate too (its own action),
    one of few groups with Spark's default."""
    from dltrace.commands import output as cli_module

    setting, sorted_ = sorted_aggregates
    in_force = []
    write_rows = cli_module.write_rows

    def recording(session, frame, *args):
        in_force.append(session.spark.conf.get(setting, None))
        return write_rows(session, frame, *args)

    monkeypatch.setattr(cli_module, "write_rows", recording)
    catalog = str(pipelines.catalog.directory)
    per_customer = ("select c_custkey, count(*) as n from customer join orders on c_custkey = o_custkey "
                    "group by c_custkey")
    code, out, _ = cli(capsys, "sql", per_customer, "--catalog", catalog, "--format", "json", "--limit", "3")
    assert code == 0 and len(out.splitlines()) == 3
    code, _, _ = cli(capsys, "sql", "select c_nationkey, count(*) as n from customer group by c_nationkey",
                     "--catalog", catalog)
    assert code == 0 and in_force == [sorted_, None]
    assert pipelines.spark.conf.get(setting, None) is None


def test_a_step_is_disjoint_when_each_rows_group_is_pinned_by_keys():
    """Lineitems grouped by their customer: each order's and lineitem's row pins the group (by
    key equalities), so no id is in two rows' DLs, and a step reading them needs no
    deduplication.  Grouped by order, a customer's id is in several rows; ROLLUP puts every
    row into several groups."""
    from dltrace.rewriter import DISJOINT_ROWS, SavedLineage, parse, rewrite

    schemas = {"customer": {"c_custkey": "bigint", "c_nationkey": "bigint"},
               "orders": {"o_orderkey": "bigint", "o_custkey": "bigint"},
               "lineitem": {"l_orderkey": "bigint", "l_linenumber": "int", "l_quantity": "int"},
               "custqty": {"c_nationkey": "bigint", "qty": "bigint"}}
    codes = {"customer": 1, "orders": 2, "lineitem": 3}
    keys = {"customer": ["c_custkey"], "orders": ["o_orderkey"], "lineitem": ["l_orderkey", "l_linenumber"]}
    step = ("select {}, sum(l_quantity) as qty from customer join orders on c_custkey = o_custkey "
            "join lineitem on l_orderkey = o_orderkey group by {}")
    groups = ("c_custkey, c_nationkey", "c_nationkey", "o_orderkey", "l_quantity", "rollup(c_custkey)")
    disjoint = {group: rewrite(parse(step.format(group.removeprefix("rollup"), group)), schemas, codes,
                               table_keys=keys).meta[DISJOINT_ROWS] for group in groups}
    assert disjoint == {"c_custkey, c_nationkey": True, "c_nationkey": True, "o_orderkey": False, "l_quantity": False,
                        "rollup(c_custkey)": False}
    read = "select c_nationkey, sum(qty) as qty from custqty group by c_nationkey"
    for saved_disjoint, distinct in ((True, False), (False, True)):
        saved = {"custqty": SavedLineage(frozenset(codes), saved_disjoint)}
        text = rewrite(parse(read), schemas, codes, table_keys=keys, saved=saved).sql(dialect="spark")
        assert ("ARRAY_DISTINCT" in text) is distinct, text


def test_rollup_steps_keep_every_groups_lineage(pipelines):
    """A ROLLUP total row holds the ids of every row it sums (not one customer's id), and a
    step reading rows that share ids deduplicates them."""
    step = ("select c_custkey, count(*) as orders from customer join orders on c_custkey = o_custkey "
            "where c_nationkey = 3 group by rollup(c_custkey)")
    steps = [("custorders", step)]
    final = "select count(*) as n, sum(orders) as orders from custorders"
    script, final_query = script_of(steps, final, "rollup_")
    through_steps = pipelines.run_script(script + final_query)[-1].frame.collect()
    assert bag(through_steps) == bag(pipelines.sql(inlined(steps, final)).collect())
    assert not pipelines.store.get("rollup_custorders").disjoint
    rows = pipelines.result("rollup_custorders").collect()
    total = [r for r in rows if r.c_custkey is None]
    assert len(total) == 1 and sorted(total[0].DL) == sorted({i for r in rows if r.c_custkey is not None for i in r.DL})
    assert lineage_ids(through_steps[0].DL) == sorted(total[0].DL)


# --- impact across every result, explain through steps ------------------------------------


@pytest.fixture(scope="module")
def two_steps(pipelines) -> dict[str, list]:
    """A two-step pipeline saved (control, sets): ``{result: saved rows}``."""
    steps, _ = PIPELINES["aggregate_of_aggregates"]
    script, _ = script_of(steps, "", "imp_")
    pipelines.run_script(script)
    return {f"imp_{name}": pipelines.result(f"imp_{name}").collect() for name, _ in steps}


def test_impact_without_a_result_searches_every_result(pipelines, two_steps):
    lineitem = pipelines.catalog.entry("lineitem").code
    row = two_steps["imp_natrev"][0]
    bad_id = next(i for i in row.DL if split_id(i)[0] == lineitem)
    (key,) = pipelines.decode([bad_id])["lineitem"]
    source = f"lineitem WHERE l_orderkey = {key['l_orderkey']} AND l_linenumber = {key['l_linenumber']}"
    found = pipelines.impact(source=source)
    assert set(two_steps) <= set(found)
    others = sorted(set(found) - set(two_steps))[:2]  # the module's other results: a sample
    for name, frame in ((n, found[n]) for n in sorted(two_steps) + others):
        hits = {r._row: list(r.DL) for r in frame.collect()}
        saved = two_steps.get(name) or pipelines.result(name).collect()
        assert hits == {r._row: [bad_id] for r in saved if bad_id in r.DL}, name
        assert hits == {r._row: list(r.DL) for r in pipelines.impact(source, result=name).collect()}
        reevaluated = pipelines.impact(source, result=name, mode="reeval").collect()
        assert bag(reevaluated) == bag(frame.collect())
    assert len({r._row for r in found["imp_natrev"].collect()}) == 1  # one nation's row


def test_impact_cli_across_results(capsys, pipelines, two_steps):
    row = two_steps["imp_custrev"][0]
    customer = next(i for i in row.DL if split_id(i)[0] == pipelines.catalog.entry("customer").code)
    (key,) = pipelines.decode([customer])["customer"]
    catalog = str(pipelines.catalog.directory)
    code, out, _ = cli(capsys, "impact", "--source", f"customer WHERE c_custkey = {key['c_custkey']}",
                       "--format", "json", "--catalog", catalog)
    assert code == 0
    hits = [json.loads(line) for line in out.splitlines()]
    assert {h["result"] for h in hits} >= {"imp_custrev", "imp_natrev"}
    assert all(h["DL"] == [customer] for h in hits)
    code, out, _ = cli(
        capsys, "impact", "--source", f"customer WHERE c_custkey = {key['c_custkey']}", "--catalog", catalog
    )
    assert code == 0 and "imp_custrev: 1 affected rows" in out and "imp_natrev: 1 affected rows" in out


def test_explain_through_steps_names_them(capsys, pipelines, two_steps):
    row = two_steps["imp_natrev"][0]
    explained = pipelines.explain("imp_natrev", row._row)
    ids = sorted(r._dl_id for frame in explained.values() for r in frame.collect())
    assert ids == sorted(row.DL) and {"customer", "orders", "lineitem", "nation"} == set(explained)
    assert pipelines.store.upstream("imp_natrev") == ["imp_custrev"]
    code, out, _ = cli(capsys, "explain", "--result", "imp_natrev", "--row", str(row._row), "--limit", "1",
                       "--catalog", str(pipelines.catalog.directory))
    assert code == 0 and "computed through saved results: imp_custrev" in out
    # summaries and the lineage relation reach the base tables through the steps too
    summary = pipelines.summarize("imp_natrev", row._row, 2)
    assert {t.table for t in summary.tables} == set(explained)
    pipelines.lineage_views("imp_natrev")
    relation = pipelines.run(f"select base_id from lineage_imp_natrev where _row = {row._row}").collect()
    assert sorted(r.base_id for r in relation) == sorted(row.DL)


def test_lineage_on_traces_through_saved_results_to_attribute_values(pipelines, two_steps):
    on = "LINEAGE ON (n_name)"
    through = pipelines.sql(
        f"select n_regionkey, sum(revenue) as r from imp_natrev group by n_regionkey {on}"
    ).collect()
    steps, _ = PIPELINES["aggregate_of_aggregates"]
    direct = pipelines.sql(
        inlined(steps, f"select n_regionkey, sum(revenue) as r from natrev group by n_regionkey {on}")
    ).collect()
    assert bag(through) == bag(direct) and all(len(r.DL) == 5 for r in through)  # five nations per region


# --- scripts, views, the CLI ----------------------------------------------------------------


def test_run_a_script_from_the_cli(capsys, pipelines, tmp_path):
    script = tmp_path / "report.sql"
    script.write_text(
        "-- a two-step report\n"
        "create or replace table cli_ordcount as\n"
        "  select o_custkey, count(*) as orders from orders group by o_custkey;\n"
        "create temporary view cli_busy as select * from cli_ordcount where orders > 20;\n"
        "select count(*) as busy from cli_busy;\n"
    )
    catalog = str(pipelines.catalog.directory)
    code, out, err = cli(capsys, "run", str(script), "--format", "json", "--catalog", catalog)
    assert code == 0, err
    progress = [line for line in err.splitlines() if line.strip()]
    assert progress[0].startswith("dltrace: [1/3] line 2: saved result cli_ordcount:") and " rows in " in progress[0]
    assert progress[1] == "dltrace: [2/3] line 4: defined view cli_busy"
    (row,) = [json.loads(line) for line in out.splitlines()]
    expected = pipelines.sql("select count(*) as busy from (select o_custkey from orders group by o_custkey "
                             "having count(*) > 20)").collect()[0]
    assert row["busy"] == expected.busy and row["DL"] == sorted(expected.DL)
    code, out, _ = cli(capsys, "results", "--format", "json", "--catalog", catalog)
    listed = {json.loads(line)["name"]: json.loads(line) for line in out.splitlines()}
    assert listed["cli_ordcount"]["tables"] == {"orders": 1} and listed["cli_ordcount"]["stale"] is None


def test_sql_takes_one_create_statement_and_views_persist(capsys, pipelines):
    catalog = str(pipelines.catalog.directory)
    code, _, err = cli(capsys, "sql", "create or replace view asia as select * from nation where n_regionkey = 2",
                       "--catalog", catalog)
    assert code == 0 and "defined view asia" in err
    code, _, err = cli(capsys, "sql", "create or replace table asia_customers as "
                       "select n_name, count(*) as n from asia join customer on n_nationkey = c_nationkey "
                       "group by n_name",
                       "--catalog", catalog)
    assert code == 0 and "saved result asia_customers: 5 rows" in err
    code, out, _ = cli(capsys, "views", "--catalog", catalog)
    assert code == 0 and "asia" in out
    assert cli(capsys, "views", "drop", "asia", "--catalog", catalog)[0] == 0
    assert pipelines.result("asia_customers").count() == 5  # the saved step does not need the view


def test_staleness_follows_inputs_through_results(spark, tmp_path, paper):
    session = LineageSession(tmp_path / "catalog", spark=spark)
    store_csv = tmp_path / "store.csv"
    store_csv.write_text(open(paper.catalog.entry("store").source).read())
    session.register("store", store_csv, key=["s_id"])
    session.register("sales", paper.catalog.entry("sales").source, key=["t_id"])
    session.register("item", paper.catalog.entry("item").source, key=["i_id"])
    session.run_script(
        "create table by_store as select s_id, sum(num) as n from sales group by s_id;"
        "create table by_city as select city, sum(n) as n from store join by_store using (s_id) group by city;"
        "create table top_city as select city from by_city where n > 1000;"
        "create table by_item as select i_id, count(*) as sold from item join sales using (i_id) group by i_id;"
    )
    assert session.stale_results() == {}
    store_csv.write_text(store_csv.read_text().replace("Albany", "Albany Hills"))
    session.register("store", store_csv, key=["s_id"])
    stale = session.stale_results()
    assert set(stale) == {"by_city", "top_city"}
    assert stale["by_city"] == "table store changed (v1 -> v2)"
    assert stale["top_city"] == "through result by_city: table store changed (v1 -> v2)"
    session.run_script("create or replace table by_store as select s_id, sum(num) as n from sales group by s_id")
    assert session.stale_results()["by_city"] == "table store changed (v1 -> v2)"
    session.run_script("create or replace table by_city as "
                       "select city, sum(n) as n from store join by_store using (s_id) group by city")
    assert set(session.stale_results()) == {"top_city"}
    assert session.stale_results()["top_city"] == "result by_city was saved again"


# --- bad input: one line, exit 2, nothing saved by the failing step --------------------------


@pytest.fixture()
def bad_input_catalog(pipelines) -> str:
    pipelines.run_script("create or replace table keep_me as select n_name from nation where n_regionkey = 1;"
                         "create or replace table data_step as select n_name from nation")
    return str(pipelines.catalog.directory)


BAD_SCRIPTS = [
    ("create table orders as select 1 as x", "'orders' is already a table"),
    ("create table keep_me as select 1 as x", "CREATE OR REPLACE TABLE replaces it"),
    ("create or replace table keep_me as select n_name, missing from nation", "missing"),
    ("create or replace table keep_me as select count(*) as c from keep_me", "cannot be computed from itself"),
    ("insert into keep_me select 'x', 'y'", "keep_me takes 1 columns, the query gives 2"),
    ("merge into keep_me using nation on true when matched then delete", "MERGE statements are not supported"),
    ("drop table keep_me", "DROP statements are not supported"),
    ("delete from keep_me where true", "DELETE statements are not supported"),
    ("update keep_me set n_name = 'x'", "UPDATE statements are not supported"),
    ("create view v as select * from v", "a view cannot read itself"),
    ("create table if_bad as select n_name from nation lineage on (n_name)", "LINEAGE ON belongs to queries"),
    ("create view keep_me as select 1 as x", "'keep_me' is already a saved result"),
    ("select n_name, DL from keep_me", "column 'dl'"),
    ("create table t using parquet as select 1 as x", "options (USING PARQUET) are not supported"),
]


# what a script's check finds before any statement runs (no Spark needed)
CHECKED_BEFORE_RUNNING = ("statements are not supported", "LINEAGE ON belongs", "options (USING PARQUET)")


@pytest.mark.parametrize("script, expected", BAD_SCRIPTS)
def test_a_bad_statement_is_one_line_and_saves_nothing(
    capsys, pipelines, bad_input_catalog, tmp_path, script, expected
):
    before = {r.name: r for r in pipelines.results()}
    file = tmp_path / "bad.sql"
    file.write_text("create or replace table ok_first as select r_name from region;\n\n" + script + ";\n")
    code, _, err = cli(capsys, "run", str(file), "--catalog", bad_input_catalog)
    line = one_line("\n".join(e for e in err.splitlines() if not e.startswith("dltrace: [")))
    assert code == 2 and "statement 2 (line 3" in line and expected in line
    after = {r.name: r for r in pipelines.results()}
    if any(refused in expected for refused in CHECKED_BEFORE_RUNNING):
        assert after == before  # refused before step 1 ran: nothing saved or replaced
        return
    assert after.pop("ok_first").rows == 5  # the earlier step stays saved
    assert after == {n: r for n, r in before.items() if n != "ok_first"}


def test_semantics_of_saved_lineage_do_not_mix(capsys, pipelines, bad_input_catalog):
    pipelines.run_script("create or replace table data_only as select n_name from nation", semantics="data")
    code, _, err = cli(capsys, "sql", "select count(*) from data_only", "--catalog", bad_input_catalog)
    assert code == 2 and "holds data lineage and this query asks for control" in one_line(err)
    code, _, _ = cli(
        capsys, "sql", "select count(*) from data_only", "--semantics", "data", "--catalog", bad_input_catalog
    )
    assert code == 0


def test_names_are_one_namespace(capsys, pipelines, bad_input_catalog, paper):
    code, _, err = cli(
        capsys, "register", "keep_me", str(paper.catalog.entry("item").source), "--catalog", bad_input_catalog
    )
    assert code == 2 and "'keep_me' is already a saved result" in one_line(err)
    code, _, err = cli(capsys, "sql", "select * from nation", "--save", "region", "--catalog", bad_input_catalog)
    assert code == 2 and "'region' is already a table" in one_line(err)


def test_lineage_on_through_a_stale_result_is_refused(spark, tmp_path, paper):
    session = LineageSession(tmp_path / "catalog", spark=spark)
    store_csv = tmp_path / "store.csv"
    store_csv.write_text(open(paper.catalog.entry("store").source).read())
    session.register("store", store_csv, key=["s_id"])
    session.run_script("create table cities as select city, count(*) as n from store group by city")
    store_csv.write_text(store_csv.read_text().replace("Albany", "Troy"))
    session.register("store", store_csv, key=["s_id"])
    with pytest.raises(BadInput, match="it is stale"):
        session.sql("select count(*) from cities lineage on (state)")
    with pytest.warns(ImpactWarning, match="store v1 -> v2"):
        session.impact("store WHERE s_id = 1", result="cities")


# References: a step stores the names of the upstream rows it read, not their lineage again.

REFERENCE_STEPS = [
    ("ref_custrev", "select c_custkey, c_nationkey, sum(l_extendedprice) as revenue from customer "
                    "join orders on c_custkey = o_custkey join lineitem on l_orderkey = o_orderkey "
                    "where l_returnflag = 'R' group by c_custkey, c_nationkey"),
    ("ref_natrev", "select c_nationkey, sum(revenue) as revenue from ref_custrev group by c_nationkey"),
]


@pytest.fixture()
def referencing(pipelines):
    """A two-step pipeline: ``{step: whole DLs by _row}`` as first saved (step 2 names rows of step 1)."""
    for name, query in REFERENCE_STEPS:
        pipelines.create_table(name, query, replace=True)
    yield {name: {r._row: list(r.DL) for r in pipelines.result(name).collect()} for name, _ in REFERENCE_STEPS}
    for name, _ in reversed(REFERENCE_STEPS):
        if pipelines.store.exists(name):
            pipelines.drop_result(name)


def stored_ids(session, name: str) -> list[int]:
    return [i for r in session.store.rows(session.spark, session.store.get(name)).collect() for i in r.DL]


def test_a_step_names_the_upstream_rows_it_read(pipelines, referencing):
    from dltrace.ids import FIRST_REFERENCE_ID, ROW_MASK

    saved = pipelines.store.get("ref_natrev")
    assert saved.references == {"ref_custrev": 16384} and saved.disjoint
    named = stored_ids(pipelines, "ref_natrev")
    upstream = referencing["ref_custrev"]
    # one id per upstream row read, instead of every id of its DL
    assert all(i >= FIRST_REFERENCE_ID for i in named) and sorted(i & ROW_MASK for i in named) == sorted(upstream)
    inlined_rows = pipelines.sql(inlined(REFERENCE_STEPS[:1], REFERENCE_STEPS[1][1]))
    assert sorted((r.c_nationkey, list(r.DL)) for r in inlined_rows.collect()) == sorted(
        (r.c_nationkey, list(r.DL)) for r in pipelines.result("ref_natrev").collect()
    )
    # explain and the row's ids resolve the names
    row = next(iter(referencing["ref_natrev"]))
    assert list(pipelines.store.row_ids(saved, row)) == referencing["ref_natrev"][row]


def test_upstream_saved_again_or_dropped_keeps_the_rows_a_step_names(pipelines, referencing):
    first = pipelines.store.get("ref_custrev")
    pipelines.create_table("ref_custrev", REFERENCE_STEPS[0][1] + " having count(*) > 1", replace=True)
    assert "ref_custrev was saved again" in pipelines.stale_results()["ref_natrev"]
    kept = pipelines.store.path(first.data).parent
    assert kept.exists()
    # the step still reads as saved: its rows name the earlier save
    assert {r._row: list(r.DL) for r in pipelines.result("ref_natrev").collect()} == referencing["ref_natrev"]
    pipelines.drop_result("ref_custrev")
    assert kept.exists() and not pipelines.store.exists("ref_custrev")
    from dltrace.recovery import sweep

    sweep(pipelines.catalog.directory)
    assert kept.exists()
    row = next(iter(referencing["ref_natrev"]))
    explained = pipelines.explain("ref_natrev", row)
    assert sorted(r._dl_id for f in explained.values() for r in f.collect()) == referencing["ref_natrev"][row]
    # saved again, the step names no earlier save: its data goes
    pipelines.create_table("ref_custrev", REFERENCE_STEPS[0][1], replace=True)
    pipelines.create_table("ref_natrev", REFERENCE_STEPS[1][1], replace=True)
    assert not kept.exists()
    assert {r._row: list(r.DL) for r in pipelines.result("ref_natrev").collect()} == referencing["ref_natrev"]


def test_impact_through_named_rows_equals_impact_on_spelled_out_lineage(pipelines, referencing):
    lineitem = pipelines.catalog.entry("lineitem").code
    row, ids = next(iter(referencing["ref_natrev"].items()))
    bad = [i for i in ids if split_id(i)[0] == lineitem][:2]
    keys = pipelines.decode(bad)["lineitem"]
    source = "lineitem WHERE " + " OR ".join(
        f"(l_orderkey = {k['l_orderkey']} AND l_linenumber = {k['l_linenumber']})" for k in keys
    )
    found = pipelines.impact(source=source)
    for name in ("ref_custrev", "ref_natrev"):
        hits = {r._row: list(r.DL) for r in found[name].collect()}
        expected = {r: sorted(set(bad) & set(d)) for r, d in referencing[name].items() if set(bad) & set(d)}
        assert hits == expected, name
        stored = {r._row: list(r.DL) for r in pipelines.impact(source=source, result=name).collect()}
        assert stored == expected


def test_the_documented_duckdb_query_decodes_named_rows_without_dltrace(pipelines, referencing):
    import re
    from pathlib import Path

    import duckdb

    text = Path(__file__).parent.parent.joinpath("docs", "formats.md").read_text()
    query = re.search(r"```sql\n(-- a step saved from saved results.*?)```", text, re.S).group(1)
    saved = pipelines.store.get("ref_natrev")
    (upstream, code), = pipelines.store.referenced(saved)
    query = (query.replace("UPSTREAM", str(Path(str(pipelines.store.path(upstream.data))).parent))
             .replace("RESULT", str(Path(str(pipelines.store.path(saved.data))).parent)).replace("CODE", str(code)))
    decoded = {row: list(dl) for row, dl in duckdb.sql(query).fetchall()}
    assert decoded == referencing["ref_natrev"]


def test_rows_naming_distinct_upstream_rows_whose_lineage_overlaps_are_not_disjoint(pipelines):
    """Step 2's rows name distinct rows of step 1, but step 1's rows share customers: a
    query reading step 2 must still deduplicate its DLs (equal to the inlined query's)."""
    steps = [
        ("ov_natprio", "select c_nationkey, o_orderpriority, count(*) as n from customer "
                       "join orders on c_custkey = o_custkey where o_orderdate < date '1992-03-01' "
                       "group by c_nationkey, o_orderpriority"),
        ("ov_prio", "select o_orderpriority, sum(n) as n from ov_natprio group by o_orderpriority"),
    ]
    final = "select count(*) as priorities, sum(n) as n from ov_prio"
    for name, query in steps:
        pipelines.create_table(name, query, replace=True)
    assert not pipelines.store.get("ov_natprio").disjoint and not pipelines.store.get("ov_prio").disjoint
    (row,) = pipelines.sql(final).collect()
    (inlined_row,) = pipelines.sql(inlined(steps, final)).collect()
    assert list(row.DL) == list(inlined_row.DL) == sorted(set(row.DL))


def test_a_step_whose_subquery_reads_a_saved_result_stores_base_ids_in_its_shared_sets(pipelines, referencing):
    """Under control semantics an uncorrelated subquery's lineage is one set shared by every
    row, stored once: it holds base ids, never names of upstream rows."""
    from dltrace.ids import FIRST_REFERENCE_ID
    from dltrace.results import SHARED_ID

    step = "select n_name from nation where n_nationkey in (select c_nationkey from ref_custrev)"
    pipelines.create_table("rv_nat", step, replace=True)
    saved = pipelines.store.get("rv_nat")
    assert saved.shared_sets and all(
        r[SHARED_ID] < FIRST_REFERENCE_ID for r in pipelines.store.shared_sets(pipelines.spark, saved).collect()
    )
    inlined_rows = pipelines.sql(inlined(REFERENCE_STEPS[:1], step)).collect()
    assert sorted((r.n_name, list(r.DL)) for r in pipelines.result("rv_nat").collect()) == sorted(
        (r.n_name, list(r.DL)) for r in inlined_rows
    )
    pipelines.drop_result("rv_nat")


def test_a_step_over_a_save_without_a_metadata_copy_and_a_missing_upstream_save(pipelines, referencing, tmp_path):
    """A save made before references has no copy of its metadata beside its data: a step
    saved from it writes one.  When the save a step names is gone, only queries reading the
    step fail, in one line."""
    upstream = pipelines.store.get("ref_custrev")
    copy = pipelines.store.path(upstream.data).parent / "result.json"
    copy.unlink()
    pipelines.create_table("ref_natrev", REFERENCE_STEPS[1][1], replace=True)
    assert copy.exists()
    pipelines.create_table("ref_custrev", REFERENCE_STEPS[0][1] + " having count(*) > 1", replace=True)
    fresh = LineageSession(str(pipelines.catalog.directory), spark=pipelines.spark)
    assert {r._row: list(r.DL) for r in fresh.result("ref_natrev").collect()} == referencing["ref_natrev"]
    kept = pipelines.store.path(upstream.data).parent
    kept.remove()  # lost by hand
    from dltrace.spark_views import SparkViews

    SparkViews.forget(fresh.spark)
    assert fresh.sql("select count(*) as n from nation").collect()[0].n == 25
    with pytest.raises(DltraceError, match="names rows of result ref_custrev .* which are gone: save ref_natrev again"):
        fresh.sql("select count(*) from ref_natrev").collect()


def test_unreadable_metadata_keeps_every_earlier_save(pipelines, referencing):
    from dltrace.recovery import sweep

    first = pipelines.store.get("ref_custrev")
    pipelines.create_table("ref_custrev", REFERENCE_STEPS[0][1] + " having count(*) > 1", replace=True)
    kept = pipelines.store.path(first.data).parent
    metadata = pipelines.store.directory / "ref_natrev" / "result.json"
    text = metadata.read_text()
    metadata.write_text("{")
    try:
        sweep(pipelines.catalog.directory)
        assert kept.exists()
    finally:
        metadata.write_text(text)


def test_an_upstream_saved_again_while_a_step_is_computed_fails_the_step_in_one_line(pipelines, referencing,
                                                                                    monkeypatch):
    from dltrace import results

    before = pipelines.store.get("ref_natrev")
    written = results.partition_positions
    resaved = []

    def meanwhile(path):  # another process saves the upstream again while the step is written
        if not resaved:
            resaved.append(True)
            pipelines.create_table("ref_custrev", REFERENCE_STEPS[0][1] + " having count(*) > 1", replace=True)
            pipelines.drop_result("ref_natrev")  # the step's earlier save no longer keeps the old upstream
        return written(path)

    monkeypatch.setattr(results, "partition_positions", meanwhile)
    with pytest.raises(BadInput, match="result ref_custrev was saved again or dropped while ref_natrev was computed"):
        pipelines.create_table("ref_natrev", REFERENCE_STEPS[1][1], replace=True)
    assert not pipelines.store.exists("ref_natrev") and before.stamp


def test_an_upstream_saved_again_after_a_step_is_planned_fails_the_step_in_one_line(pipelines, referencing,
                                                                                      monkeypatch):
    """Another process saves the upstream result again between the step's plan and its save:
    the step's DLs name rows of the save its plan read, so recording the newer save would
    make them name the wrong rows; the step fails in one line and saves nothing."""
    from dltrace.session import LineageSession as Session

    planned = Session.row_lineage
    resaved = []

    def meanwhile(self, *args, **kwargs):
        frame = planned(self, *args, **kwargs)
        if not resaved:
            resaved.append(True)
            other = Session(self.catalog.directory, spark=self.spark)  # its views are the same Spark's
            other.store.save(other.sql(REFERENCE_STEPS[0][1] + " having count(*) > 1"), "ref_custrev",
                             REFERENCE_STEPS[0][1] + " having count(*) > 1", "control", "set")
        return frame

    monkeypatch.setattr(Session, "row_lineage", meanwhile)
    with pytest.raises(BadInput, match="result ref_custrev was saved again while ref_step was computed from it"):
        pipelines.create_table("ref_step", REFERENCE_STEPS[1][1])
    assert resaved and not pipelines.store.exists("ref_step")


def test_two_terms_over_one_table_are_not_disjoint(pipelines, referencing):
    """Grouped by order, each row holds its order's id and a step row's whole DL, which
    names other orders: an order's id can be in two rows, so the result is not disjoint."""
    step = ("select o_orderkey, count(*) as n from ref_custrev join orders on o_orderkey = c_custkey "
            "group by o_orderkey")
    pipelines.create_table("rv_ord", step, replace=True)
    assert not pipelines.store.get("rv_ord").disjoint
    final = "select count(*) as n from rv_ord"
    (row,) = pipelines.sql(final).collect()
    assert list(row.DL) == sorted(set(row.DL))
    pipelines.drop_result("rv_ord")


def test_views_are_made_for_what_a_query_reads(pipelines):
    """A query gets the views of the tables and results it reads when it runs, a CTE named
    as the table it reads included; the other views wait for a query that reads them."""
    from dltrace.spark_views import SparkViews

    pipelines.create_table("lazy_step", "select n_regionkey, count(*) as n from nation group by n_regionkey",
                           replace=True)
    for view in ("nation", "region", "lazy_step"):
        pipelines.spark.catalog.dropTempView(view)
    SparkViews.forget(pipelines.spark)
    shadowing = "with nation as (select * from nation where n_nationkey < 3) select count(*) as n from nation"
    assert [(r.n, len(r.DL)) for r in pipelines.sql(shadowing).collect()] == [(3, 3)]
    views = {t.name for t in pipelines.spark.catalog.listTables() if t.isTemporary}
    assert "nation" in views and "region" not in views and "lazy_step" not in views
    assert pipelines.sql("select sum(n) as n from lazy_step").collect()[0].n == 25
    pipelines.drop_result("lazy_step")


def test_a_step_over_named_rows_reads_them_unresolved_and_a_later_query_resolves_them(pipelines, referencing):
    """A step over a result whose DLs name upstream rows names those rows in turn: its view of
    the result has the rows alone.  A query that reads the result's lineage afterwards gets
    it resolved, and a step over it fails in one line once the save it names is gone."""
    from dltrace.spark_views import SparkViews

    SparkViews.forget(pipelines.spark)
    step = "select count(*) as nations, sum(revenue) as revenue from ref_natrev"
    pipelines.create_table("ref_total", step, replace=True)
    assert pipelines.spark_views.rows_only("ref_natrev")
    whole = sorted(i for ids in referencing["ref_natrev"].values() for i in ids)
    assert [list(r.DL) for r in pipelines.result("ref_total").collect()] == [whole]
    read = pipelines.sql("select c_nationkey, revenue from ref_natrev")
    spelled = {(r.c_nationkey, tuple(r.DL)) for r in read.collect()}
    assert spelled == {(r.c_nationkey, tuple(r.DL)) for r in pipelines.result("ref_natrev").collect()}
    assert not pipelines.spark_views.rows_only("ref_natrev")
    kept = pipelines.store.path(pipelines.store.get("ref_custrev").data).parent
    saved = pipelines.store.get("ref_total").stamp
    pipelines.create_table("ref_custrev", REFERENCE_STEPS[0][1] + " having count(*) > 1", replace=True)
    kept.remove()  # lost by hand
    SparkViews.forget(pipelines.spark)
    with pytest.raises(DltraceError, match="names rows of result ref_custrev .* which are gone: save ref_natrev again"):
        pipelines.create_table("ref_total", step, replace=True)
    assert pipelines.store.get("ref_total").stamp == saved
    pipelines.drop_result("ref_total")
