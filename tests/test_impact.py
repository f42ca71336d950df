"""Saved results, forward impact, backward explain and revisions (docs/formats.md,
docs/architecture.md, docs/errors.md).

* stored impact (forward index or scan; literal bad ids or a join) and re-evaluation agree
  with each other and with the saved DL, on TPC-H Q3, Q5 and Q18 at SF 0.01;
* explain returns exactly the base rows in a row's DL;
* a revised source keeps unchanged rows' ids and gives changed rows new ones, and impact on
  the old version finds the results computed from it;
* every bad input gets one line: exit 2, or a warning and exit 0 when there is an answer.
"""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pytest

from dltrace import LineageSession
from dltrace.catalog import ID_COLUMN
from dltrace.errors import BadInput
from dltrace.ids import split_id
from dltrace.impact import ImpactWarning, backward, search
from dltrace.results import ResultStore
from tests.test_cli import cli, one_line
from tpch.queries import load

PAPER = Path(__file__).resolve().parent / "data" / "paper"
# (query, table of the bad row): a lineitem row, a nation row, an order
CASES = [("q3", "lineitem"), ("q5", "nation"), ("q18", "orders")]
STORE_QUERY = (
    "select s_name, city, sum(num) as n from store natural join sales group by s_name, city order by s_name, city"
)


@pytest.fixture(scope="module")
def saved(tpch) -> dict[str, list]:
    """Q3, Q5, Q18 saved with a forward index: ``{query: rows with _row and DL}``."""
    for name, _ in CASES:
        tpch.save(tpch.sql(load(name)), f"t_{name}", index=True)
    return {name: tpch.result(f"t_{name}").collect() for name, _ in CASES}


def values(row) -> tuple:
    return tuple(str(v) for k, v in row.asDict().items() if k not in ("_row", "DL"))


def expected_hits(rows, bad_ids) -> dict[int, list[int]]:
    """``{_row: DL ∩ bad ids}`` for the saved rows whose DL holds a bad id (the oracle)."""
    bad = set(bad_ids)
    return {r._row: sorted(set(r.DL) & bad) for r in rows if set(r.DL) & bad}


def by_row(frame) -> dict[int, list[int]]:
    return {r._row: list(r.DL) for r in frame.collect()}


def as_bag(rows) -> Counter:
    """Output rows as a bag of (values, DL), whatever the mode (``_row`` ignored)."""
    return Counter((values(r), tuple(r.DL)) for r in rows)


def key_predicate(session: LineageSession, dl_id: int) -> str:
    """``k1 = v1 AND k2 = v2`` for the base row with ``dl_id``."""
    table = session.catalog.table_of_id(dl_id)
    (row,) = session.decode([dl_id])[table]
    return " AND ".join(f"{k} = {row[k]!r}" for k in session.catalog.entry(table).key)


def bad_ids_of(session: LineageSession, source: str) -> list[int]:
    table, predicate = source.split(" WHERE ", 1)
    return [r[0] for r in session.run(f"SELECT _dl_id FROM {table} WHERE {predicate}").collect()]


@pytest.mark.parametrize("name, table", CASES)
def test_stored_and_reeval_agree_with_the_saved_lineage(tpch, saved, name, table):
    rows = saved[name]
    code = tpch.catalog.entry(table).code
    dl_id = next(i for r in rows[len(rows) // 2:] for i in r.DL if split_id(i)[0] == code)
    source = f"{table} WHERE {key_predicate(tpch, dl_id)}"
    expected = expected_hits(rows, [dl_id])
    assert expected and all(dl == [dl_id] for dl in expected.values())
    assert by_row(tpch.impact(source, result=f"t_{name}")) == expected
    assert by_row(tpch.impact(source, result=f"t_{name}", use_index=False)) == expected
    stored = tpch.impact(source, result=f"t_{name}").collect()
    assert as_bag(tpch.impact(source, query=load(name)).collect()) == as_bag(stored)
    assert as_bag(tpch.impact(source, result=f"t_{name}", mode="reeval").collect()) == as_bag(stored)
    # the same row named by its id
    assert by_row(tpch.impact(f"{table} WHERE _dl_id = {dl_id}", result=f"t_{name}")) == expected


@pytest.mark.parametrize("literal_ids, literal_rows", [(1000, 10000), (5, 10000), (1000, 1)])
def test_many_bad_rows_at_once(tpch, saved, monkeypatch, literal_ids, literal_rows):
    """Literal ids with the index, literal ids past the index's row limit, and the broadcast
    join (more ids than the literal limit): all paths give the oracle's answer."""
    monkeypatch.setattr(search, "LITERAL_IDS", literal_ids)
    monkeypatch.setattr(search, "LITERAL_ROWS", literal_rows)
    source = "lineitem WHERE l_shipdate BETWEEN date '1995-03-16' AND date '1995-03-25' AND l_quantity > 40"
    bad = bad_ids_of(tpch, source)
    assert 5 < len(bad) < 1000
    expected = expected_hits(saved["q3"], bad)
    assert len(expected) > 5
    assert by_row(tpch.impact(source, result="t_q3")) == expected
    assert by_row(tpch.impact(source, result="t_q3", use_index=False)) == expected
    assert as_bag(tpch.impact(source, query=load("q3")).collect()) == as_bag(
        tpch.impact(source, result="t_q3").collect()
    )


def test_reeval_with_a_subquery_in_the_predicate(tpch, saved):
    """A predicate with a subquery (it reads another table by name) is evaluated to ids first."""
    source = "orders WHERE o_orderkey IN (SELECT l_orderkey FROM lineitem WHERE l_quantity = 50 AND l_discount = 0.1)"
    expected = expected_hits(saved["q18"], bad_ids_of(tpch, source))
    assert by_row(tpch.impact(source, result="t_q18")) == expected
    reeval = tpch.impact(source, query=load("q18")).collect()
    assert as_bag(reeval) == as_bag(tpch.impact(source, result="t_q18").collect())


def test_saved_rows_are_numbered_in_result_order(tpch, saved):
    rows = saved["q3"]
    assert [r._row for r in rows] == list(range(len(rows)))
    revenue = [r.revenue for r in rows]
    assert revenue == sorted(revenue, reverse=True)  # Q3's ORDER BY revenue DESC
    meta = ResultStore(tpch.catalog).get("t_q3")
    assert meta.rows == len(rows) and meta.semantics == "control" and meta.representation == "set"
    assert meta.catalog_version == tpch.catalog.version and meta.tables == {"customer": 1, "lineitem": 1, "orders": 1}
    assert (
        meta.query == load("q3")
        and meta.index
        and meta.columns == ["l_orderkey", "revenue", "o_orderdate", "o_shippriority"]
    )


@pytest.mark.parametrize("literal_ids", [1000, 2])
def test_explain_returns_exactly_the_base_rows_of_dl(tpch, saved, monkeypatch, literal_ids):
    monkeypatch.setattr(backward, "LITERAL_IDS", literal_ids)
    for name in ("q3", "q5", "q18"):
        row = len(saved[name]) // 2
        dl = saved[name][row].DL
        tables = tpch.explain(f"t_{name}", row)
        found = {t: [r[ID_COLUMN] for r in frame.collect()] for t, frame in tables.items()}
        assert sorted(i for ids in found.values() for i in ids) == sorted(dl)
        for table, ids in found.items():
            assert all(tpch.catalog.table_of_id(i) == table for i in ids)
            assert tables[table].columns == [ID_COLUMN, *tpch.catalog.entry(table).schema]


def test_explain_json_is_one_object_per_base_row(capsys, tpch, saved):
    code, out, _ = cli(capsys, "explain", "--result", "t_q3", "--row", "2", "--format", "json",
                       "--catalog", str(tpch.catalog.directory))
    assert code == 0
    objects = [json.loads(line) for line in out.splitlines()]
    assert sorted(o["_dl_id"] for o in objects) == sorted(saved["q3"][2].DL)
    lineitems = [o for o in objects if o["table"] == "lineitem"]
    assert lineitems and all(o["l_orderkey"] == saved["q3"][2].l_orderkey for o in lineitems)


def test_explain_says_how_many_ids_each_table_gave(capsys, tpch, saved):
    """Issue 40: explain without --summary said nothing of how many rows a table contributed."""
    dl = saved["q3"][2].DL
    counts = Counter(tpch.catalog.table_of_id(i) for i in dl)
    expected = ", ".join(f"{t} {counts[t]}" for t in ("customer", "orders", "lineitem"))
    catalog = str(tpch.catalog.directory)
    code, out, err = cli(capsys, "explain", "--result", "t_q3", "--row", "2", "--limit", "2", "--catalog", catalog)
    assert code == 0 and err == ""
    assert out.splitlines()[0] == f"row 2 of t_q3: {len(dl)} ids in its DL: {expected}", out
    headings = [line for line in out.splitlines() if line.split(":")[0] in counts]
    ids = lambda n: f"{n} id" if n == 1 else f"{n} ids (first 2: raise --limit)" if n > 2 else f"{n} ids"  # noqa: E731
    assert headings == [f"{t}: {ids(counts[t])}" for t in ("customer", "orders", "lineitem")], out
    code, out, err = cli(capsys, "explain", "--result", "t_q3", "--row", "2", "--format", "json", "--catalog", catalog)
    assert code == 0 and len([json.loads(line) for line in out.splitlines()]) == len(dl)  # stdout: rows only
    assert err == f"dltrace: row 2 of t_q3: {len(dl)} ids in its DL: {expected}\n"
    tpch.save(tpch.sql("select count(*) as n from nation where n_nationkey < 0"), "t_nothing")
    code, out, _ = cli(capsys, "explain", "--result", "t_nothing", "--row", "0", "--catalog", catalog)
    assert code == 0 and out.strip() == "row 0 of t_nothing: no ids in its DL (no base row made it)"
    tpch.drop_result("t_nothing")

def test_explain_reads_only_the_rows_it_prints_and_json_a_page_at_a_time(capsys, tpch, saved, monkeypatch):
    """Issue 56: explain read every base row of a DL before printing --limit of them; JSON
    reads a page of ids at a time (bounded memory for a DL of any size), same objects."""
    from dltrace.commands import explain as explain_command
    from dltrace.impact import files

    read_ids = []
    real = files.base_rows
    monkeypatch.setattr(files, "base_rows", lambda catalog, table, versions, ids: (
        read_ids.append(len(ids)), real(catalog, table, versions, ids))[1])
    catalog = str(tpch.catalog.directory)
    code, out, _ = cli(capsys, "explain", "--result", "t_q3", "--row", "2", "--limit", "2", "--catalog", catalog)
    assert code == 0 and read_ids and max(read_ids) <= 2, read_ids
    read_ids.clear()
    monkeypatch.setattr(explain_command, "JSON_PAGE_IDS", 3)
    code, out, _ = cli(capsys, "explain", "--result", "t_q3", "--row", "2", "--format", "json", "--catalog", catalog)
    assert code == 0 and max(read_ids) <= 3 and sum(read_ids) == len(saved["q3"][2].DL)
    assert sorted(json.loads(line)["_dl_id"] for line in out.splitlines()) == sorted(saved["q3"][2].DL)


def test_impact_cli_json(capsys, tpch, saved):
    row = saved["q3"][0]
    lineitem = next(i for i in row.DL if tpch.catalog.table_of_id(i) == "lineitem")
    for mode in ("stored", "reeval"):
        code, out, err = cli(capsys, "impact", "--source", f"lineitem WHERE _dl_id = {lineitem}", "--result", "t_q3",
                             "--mode", mode, "--format", "json", "--catalog", str(tpch.catalog.directory))
        assert code == 0 and err == ""
        (hit,) = [json.loads(line) for line in out.splitlines()]
        assert hit["l_orderkey"] == row.l_orderkey and hit["DL"] == [lineitem]


# --- saving, listing, dropping ------------------------------------------------------------


@pytest.fixture()
def paper_catalog(paper) -> str:
    return str(paper.catalog.directory)


def test_save_list_drop_from_the_cli(capsys, paper_catalog):
    code, out, err = cli(
        capsys, "sql", STORE_QUERY, "--save", "cli_by_city", "--format", "json", "--catalog", paper_catalog
    )
    assert code == 0 and "saved result cli_by_city: 4 rows" in one_line(err)
    rows = [json.loads(line) for line in out.splitlines()]
    assert [r["_row"] for r in rows] == [0, 1, 2, 3] and rows[0]["city"] == "New York City"
    code, out, _ = cli(capsys, "results", "--catalog", paper_catalog)
    assert code == 0 and "cli_by_city" in out
    code, out, _ = cli(capsys, "results", "list", "--format", "json", "--catalog", paper_catalog)
    listed = {json.loads(line)["name"]: json.loads(line) for line in out.splitlines()}
    assert listed["cli_by_city"]["rows"] == 4 and listed["cli_by_city"]["query"] == STORE_QUERY
    # saving again replaces the result; the older data goes
    assert cli(capsys, "sql", STORE_QUERY, "--save", "cli_by_city", "--catalog", paper_catalog)[0] == 0
    home = Path(paper_catalog) / "results" / "cli_by_city"
    assert len([p for p in home.iterdir() if p.is_dir()]) == 1
    code, out, _ = cli(capsys, "results", "index", "cli_by_city", "--catalog", paper_catalog)
    assert code == 0 and "forward index" in out
    code, out, _ = cli(capsys, "results", "drop", "cli_by_city", "--catalog", paper_catalog)
    assert code == 0 and not home.exists()
    code, _, err = cli(capsys, "results", "drop", "cli_by_city", "--catalog", paper_catalog)
    assert code == 2 and "no saved result 'cli_by_city'" in one_line(err)


def test_a_failed_save_leaves_the_previous_result(paper):
    paper.save(paper.sql(STORE_QUERY), "kept")
    before = ResultStore(paper.catalog).get("kept")
    with pytest.raises(BadInput, match="more than one column named"):
        paper.save(paper.sql("select s_id, s_name as S_ID from store"), "kept")
    assert ResultStore(paper.catalog).get("kept") == before
    assert paper.result("kept").count() == 4
    paper.drop_result("kept")


# --- revisions ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def revised(spark, tmp_path_factory):
    """store registered, a result saved, then store revised: s_id 2 changed (city), s_id 4
    removed, s_id 5 added, s_id 1 and 3 unchanged."""
    sources = tmp_path_factory.mktemp("revised-sources")
    shutil.copy(PAPER / "store.csv", sources / "store.csv")
    session = LineageSession(tmp_path_factory.mktemp("revised-catalog"), spark=spark)
    v1 = session.register("store", sources / "store.csv", key=["s_id"], order_by=["s_id"])
    session.register("sales", PAPER / "sales.csv", key=["t_id"], order_by=["t_id"])
    old_ids = {r.s_id: r._dl_id for r in session.run("select s_id, _dl_id from store").collect()}
    session.save(session.sql(STORE_QUERY), "by_city")
    version_before = session.catalog.version
    (sources / "store.csv").write_text(
        "s_id,s_name,city,state\n1,Target,Palo Alto,CA\n2,Target,Albany Hills,NY\n"
        "3,Macy's,San Francisco,CA\n5,Walmart,Austin,TX\n"
    )
    v2 = session.register("store", sources / "store.csv", key=["s_id"], order_by=["s_id"])
    new_ids = {r.s_id: r._dl_id for r in session.run("select s_id, _dl_id from store").collect()}
    return session, sources, v1, v2, old_ids, new_ids, version_before


def test_revision_keeps_unchanged_ids_and_gives_changed_rows_new_ones(revised):
    session, _, v1, v2, old_ids, new_ids, version_before = revised
    assert new_ids[1] == old_ids[1] and new_ids[3] == old_ids[3]
    assert new_ids[2] != old_ids[2] and new_ids[5] not in old_ids.values()
    # new ids come after every row number the table ever had, in order_by order
    assert sorted(split_id(new_ids[k])[1] for k in (2, 5)) == [v1.next_row, v1.next_row + 1]
    assert v2.version == 2 and v2.rows == 4 and v2.next_row == v1.next_row + 2
    assert v2.changes == {"unchanged": 2, "new": 2, "removed": 2}
    assert session.catalog.version > version_before
    assert [old["version"] for old in v2.previous] == [1]
    assert (session.catalog.directory / v2.previous[0]["path"]).exists()
    assert session.catalog.data_path("store", 1) != session.catalog.data_path("store")


def test_registering_the_same_rows_again_keeps_the_version(revised):
    session, sources, _, v2, _, new_ids, _ = revised
    (sources / "store.csv").write_text((sources / "store.csv").read_text())  # a new mtime only
    again = session.register("store", sources / "store.csv", key=["s_id"], order_by=["s_id"])
    assert (again.version, again.path, again.next_row) == (v2.version, v2.path, v2.next_row)
    assert again.changes == {"unchanged": 4, "new": 0, "removed": 0}
    assert {r.s_id: r._dl_id for r in session.run("select s_id, _dl_id from store").collect()} == new_ids


def test_impact_on_the_old_version_finds_results_computed_from_it(revised):
    session, _, _, _, old_ids, _, _ = revised
    with pytest.warns(ImpactWarning, match=r"store v1 -> v2"):
        stored = session.impact("store@v1 WHERE s_id = 2", result="by_city").collect()
    assert [(r.city, list(r.DL)) for r in stored] == [("Albany", [old_ids[2]])]
    with pytest.warns(ImpactWarning):
        by_id = session.impact(f"store@v1 WHERE _dl_id = {old_ids[2]}", result="by_city").collect()
    assert by_id == stored
    reeval = session.impact("store@v1 WHERE s_id = 2", query=STORE_QUERY).collect()
    assert as_bag(reeval) == as_bag(stored)
    # the corrected row has a new id: the old result was not computed from it
    with pytest.warns(ImpactWarning, match=r"the source 'store@v1 WHERE \.\.\.'"):
        assert session.impact("store WHERE s_id = 2", result="by_city").count() == 0
    # unchanged rows keep their ids: still found through the current version
    with pytest.warns(ImpactWarning):
        assert [r.city for r in session.impact("store WHERE s_id = 1", result="by_city").collect()] == ["Palo Alto"]


def test_explain_reads_the_version_the_result_was_computed_from(revised):
    session = revised[0]
    albany = next(r for r in session.result("by_city").collect() if r.city == "Albany")
    (store_row,) = session.explain("by_city", albany._row)["store"].collect()
    assert store_row.city == "Albany" and store_row.s_id == 2


def test_revision_without_a_key_keeps_the_ids_of_equal_rows(spark, tmp_path):
    """Without a key a row equal in every column to one of the previous version keeps its id
    (the n-th of equal rows the n-th of them before); a changed row is a new one."""
    session = LineageSession(tmp_path / "catalog", spark=spark)
    session.register("item", PAPER / "item.csv")
    ids = {tuple(r[1:]): r[0] for r in session.run("select _dl_id, * from item").collect()}
    copy = tmp_path / "item.csv"
    copy.write_text((PAPER / "item.csv").read_text())
    again = session.register("item", copy)  # the same rows: the same ids, no new data version
    assert again.changes["unchanged"] == 5 and again.version == 1
    header, first, *rest = (PAPER / "item.csv").read_text().splitlines()
    changed = first.replace(first.split(",")[-1], "999")
    copy.write_text("\n".join([header, changed, *rest, rest[0], rest[0]]) + "\n")  # rest[0] now three times
    revised = session.register("item", copy)
    assert revised.changes == {"unchanged": 4, "new": 3, "removed": 1}
    rows = session.run("select _dl_id, * from item").collect()
    kept = [r[0] for r in rows if ids.get(tuple(r[1:])) == r[0]]
    assert len(kept) == 4 and len({r[0] for r in rows}) == 7
    assert min(split_id(r[0])[1] for r in rows if r[0] not in kept) == again.next_row


# --- bad input (docs/errors.md) ---------------------------------------------------------------


@pytest.fixture(scope="module")
def paper_result(paper) -> str:
    paper.save(paper.sql(STORE_QUERY), "by_city")
    return str(paper.catalog.directory)


@pytest.mark.parametrize(
    "args, expected",
    [
        (["impact", "--source", "store WHERE s_id = 1", "--result", "nope"], "no saved result 'nope'"),
        (["explain", "--result", "nope", "--row", "0"], "no saved result 'nope'"),
        (["explain", "--result", "by_city", "--row", "4"], "has rows 0..3"),
        (["impact", "--source", "store WHERE s_id = = 1", "--result", "by_city"], "does not parse"),
        (["impact", "--source", "store WHERE s_nope = 1", "--result", "by_city"], "store has no column s_nope"),
        (["impact", "--source", "store WHERE item.i_id = 1", "--result", "by_city"], "only use columns of store"),
        (["impact", "--source", "store s_id = 1", "--result", "by_city"], "--source must be"),
        (["impact", "--source", "nope WHERE x = 1", "--result", "by_city"], "dltrace register nope"),
        (["impact", "--source", "stor WHERE x = 1", "--result", "by_city"], "(did you mean store?)"),
        (["impact", "--source", "store WHERE s_di = 1", "--result", "by_city"], "(did you mean s_id? It has"),
        (["impact", "--source", "store@v9 WHERE s_id = 1", "--result", "by_city"], "no data version v9"),
        (["impact", "--source", "store WHERE s_id = 'x'", "--result", "by_city"], "--source store WHERE"),
        (["impact", "--source", "store WHERE s_id = 'x'", "--query", STORE_QUERY], "CAST_INVALID_INPUT"),
        (["impact", "--source", "store WHERE sum(s_id) > 1", "--result", "by_city"], "without aggregate"),
        (["impact", "--source", "store WHERE s_id = 1", "--query", "select 1", "--mode", "stored"], "--result NAME"),
        (["impact", "--source", "store WHERE s_id = 1", "--query", "select s_nope from store"], "s_nope"),
        (["results", "drop"], "needs the NAME"),
        (["sql", STORE_QUERY, "--lineage-on", "city", "--save", "granular"], "without LINEAGE ON"),
        (["sql", STORE_QUERY, "--limit", "-1"], "--limit must be 0 or more"),
    ],
)
def test_bad_input_is_one_line_exit_2(capsys, paper_result, args, expected):
    code, out, err = cli(capsys, *args, "--catalog", paper_result)
    assert code == 2 and out == ""
    assert expected in one_line(err)


@pytest.mark.parametrize("target", [["--result", "by_city"], ["--query", STORE_QUERY]])
def test_a_source_matching_no_rows_says_so(capsys, paper_result, target):
    code, out, err = cli(capsys, "impact", "--source", "store WHERE s_id = 99", *target, "--catalog", paper_result)
    assert code == 0 and "(0 affected rows)" in out
    assert "no rows match the source 'store WHERE s_id = 99'" in one_line(err)
    code, out, err = cli(capsys, "impact", "--source", "store WHERE s_id = 99", *target, "--format", "json",
                         "--catalog", paper_result)
    assert code == 0 and out == "" and "nothing is affected" in one_line(err)


def test_a_result_older_than_its_data_warns_and_answers(capsys, revised):
    catalog = str(revised[0].catalog.directory)
    code, out, err = cli(capsys, "impact", "--source", "store@v1 WHERE s_id = 2", "--result", "by_city",
                         "--format", "json", "--catalog", catalog)
    assert code == 0 and json.loads(out)["city"] == "Albany"
    assert "was saved at catalog version" in one_line(err) and "store v1 -> v2" in err


def test_saving_needs_row_lineage(paper):
    with pytest.raises(BadInput, match="pass query="):
        paper.save(paper.sql(STORE_QUERY, lineage=False), "plain")
    with pytest.raises(BadInput, match="no DL column"):
        paper.save(paper.sql(STORE_QUERY, lineage=False), "plain", query=STORE_QUERY)
    with pytest.raises(BadInput, match="without LINEAGE ON"):  # granule ids name no base rows
        paper.save(paper.sql(STORE_QUERY, lineage_on=["city"]), "granular")
    with pytest.raises(BadInput, match="without LINEAGE ON"):
        paper.save(paper.sql(STORE_QUERY), "granular", query=STORE_QUERY + " LINEAGE ON (city)")


def test_robdd_lineage_is_saved_as_sorted_ids(paper):
    """Saved results keep id arrays whatever the representation: the index and arrays_overlap read them."""
    query = "select s_name, sum(num) as n from store natural join sales group by s_name"
    paper.save(paper.sql(query, representation="bdd"), "by_name_bdd")
    saved = {r.s_name: list(r.DL) for r in paper.result("by_name_bdd").collect()}
    assert saved == {r.s_name: list(r.DL) for r in paper.sql(query).collect()}
    assert ResultStore(paper.catalog).get("by_name_bdd").representation == "bdd"
    paper.drop_result("by_name_bdd")
