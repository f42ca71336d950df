"""The lineage explorer's page in a real headless Chromium (Debian's, driven by Playwright), on the
demo's two-step pipeline: the pipeline view, a result's rows, why a row (source rows checked
against ``explain``), an impact question (counts checked against ``impact``) and bad input as one
line.  Skipped, in one line naming it, when Chromium or Playwright is missing (.ci/run installs
both).  ``DLTRACE_UI_SCREENSHOTS=docs`` writes the screenshots the README shows."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import threading
import time
from pathlib import Path

import pytest

CHROMIUM = os.environ.get("DLTRACE_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def missing() -> str | None:
    """What the browser tests need and this machine lacks, in one line."""
    for module, install in (("playwright", "pip install playwright"), ("starlette", "pip install 'dltrace[ui]'"),
                            ("uvicorn", "pip install 'dltrace[ui]'")):
        if importlib.util.find_spec(module) is None:
            return f"browser tests: {module} is missing ({install})"
    if not Path(CHROMIUM).exists():
        return f"browser tests: Chromium is missing at {CHROMIUM} (apt-get install chromium)"
    return None


if missing():
    pytest.skip(missing(), allow_module_level=True)

import uvicorn  # noqa: E402
from playwright.sync_api import expect, sync_playwright  # noqa: E402

from dltrace.demo import DEMO_BAD_ROW  # noqa: E402
from dltrace.ui.app import create_app  # noqa: E402
from tests.conftest import demo_copy, free_port  # noqa: E402

expect.set_options(timeout=120_000)  # a first answer may wait for Spark


@pytest.fixture(scope="module")
def demo(tpch, tmp_path_factory):
    return demo_copy(tpch, tmp_path_factory, "ui-browser")


@pytest.fixture(scope="module")
def url(demo):
    """The explorer served by uvicorn in a thread of this process, on the tests' Spark."""
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(create_app(demo.catalog.directory, spark=demo.spark), host="127.0.0.1",
                                           port=port, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}/"
    server.should_exit = True
    thread.join(10)


@pytest.fixture(scope="module")
def browser():
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 820})
    page = context.new_page()
    page.set_default_timeout(120_000)
    yield page
    context.close()


@pytest.fixture(scope="module")
def shots(tmp_path_factory) -> Path:
    return Path(os.environ.get("DLTRACE_UI_SCREENSHOTS") or tmp_path_factory.mktemp("ui-screenshots"))


def test_the_pipeline_view_shows_tables_results_and_inputs(page, url, demo, shots):
    page.goto(url)
    expect(page.locator("svg#graph g.node")).to_have_count(len(demo.catalog.tables) + 2)
    for name in ("custrev", "natrev"):
        expect(page.locator(f"svg#graph g.node.result[data-name={name}]")).to_be_visible()
    assert page.locator("svg#graph path.edge").count() >= 4
    expect(page.locator("#catalog")).to_contain_text(str(demo.catalog.directory))
    page.screenshot(path=str(shots / "ui-pipeline.png"), full_page=True)


def test_a_result_then_why_one_of_its_rows(page, url, demo, shots):
    page.goto(url)
    page.locator("svg#graph g.node[data-name=natrev]").click()
    rows = page.locator("table.rows tbody tr")
    expect(rows).to_have_count(demo.saved_results()["natrev"].rows)
    expect(rows.first).to_contain_text("ids:")
    page.screenshot(path=str(shots / "ui-result.png"), full_page=True)
    rows.first.locator("button.why").click()
    expect(page.locator("#summary .summary-table").first).to_be_visible()
    expect(page.locator("#through")).to_contain_text("custrev")
    explained = demo.explain("natrev", 0)
    expect(page.locator(".source-table")).to_have_count(len(explained))
    for table, frame in explained.items():
        box = page.locator(f".source-table[data-table={table}]")
        expect(box.locator("h3")).to_have_text(f"{table}: {explained.ids[table]} rows")
        shown = [int(t) for t in box.locator("tbody tr td:first-child").all_inner_texts()]
        assert shown == [r["_dl_id"] for r in frame.limit(20).collect()]  # its first page
    page.screenshot(path=str(shots / "ui-why.png"), full_page=True)
    page.locator(".source-table[data-table=orders] .pager button", has_text="next").click()
    second = page.locator(".source-table[data-table=orders] tbody tr td:first-child")
    expect(second.first).to_have_text(str(explained["orders"].collect()[20]["_dl_id"]))


def test_a_long_page_draws_its_rows_as_they_come_into_view(page, url, demo):
    total = demo.saved_results()["custrev"].rows
    size = min(total, 1000)
    assert size > 200, "custrev must be longer than a table drawn at once (app.js: DRAWN_AT_ONCE)"
    page.goto(url + f"#/result/custrev?offset=0&limit={size}")
    expect(page.locator(f"table.rows[data-rows='{size}']")).to_be_visible()
    expect(page.locator(".pager span").first).to_have_text(f"rows 1–{size} of {total}")
    drawn = page.locator("table.rows tbody tr:not(.gap) td:first-child")
    first = [int(t) for t in drawn.all_inner_texts()]
    assert first[0] == 0 and first == list(range(len(first))) and len(first) < size
    page.evaluate("scrollTo(0, document.body.scrollHeight)")
    last = page.locator("table.rows tbody tr:not(.gap)", has=page.locator(f"td:first-child:text-is('{size - 1}')"))
    expect(last).to_have_count(1)
    ends = [int(t) for t in drawn.all_inner_texts()]
    assert ends == list(range(ends[0], size)) and len(ends) < size
    last.locator("button.why").click()
    expect(page.locator("h2").first).to_contain_text(f"Why row {size - 1} of")


def test_an_impact_question_is_counted_and_highlighted(page, url, demo, shots):
    page.goto(url)
    page.fill("#source", DEMO_BAD_ROW)
    page.click("#impact-run")
    expected = {name: frame.count() for name, frame in demo.impact(DEMO_BAD_ROW).items()}
    for name, count in expected.items():
        expect(page.locator(f".impact-result[data-result={name}] h3")).to_contain_text(f"{name}: {count} affected rows")
        expect(page.locator(f"svg#graph g.node.hit[data-name={name}]")).to_contain_text(f"{count} hit")
    expect(page.locator("svg#graph g.node.hit")).to_have_count(sum(1 for c in expected.values() if c))
    with page.expect_download() as download:
        page.click("#export-csv")
    assert len(Path(download.value.path()).read_text().splitlines()) == 1 + sum(expected.values())
    page.screenshot(path=str(shots / "ui-impact.png"), full_page=True)


def test_bad_input_is_one_line_in_the_page(page, url, shots):
    page.goto(url)
    page.fill("#source", "orders WHERE nosuch = 1")
    page.click("#impact-run")
    error = page.locator("#error")
    expect(error).to_be_visible()
    expect(error).to_contain_text("no column nosuch")
    assert "\n" not in error.inner_text() and error.evaluate("e => e.getClientRects().length") == 1
    box = error.bounding_box()
    assert box is not None and box["height"] < 40  # one line, not a stack trace
    page.screenshot(path=str(shots / "ui-error.png"))
    page.goto(url + "#/result/nosuch")
    expect(error).to_contain_text("no saved result 'nosuch'")


def first_cells(page) -> list[int]:
    return [int(t) for t in page.locator("table.rows tbody tr:not(.gap) td:first-child").all_inner_texts()]


def test_a_filter_finds_rows_and_a_header_sorts_them(page, url, demo):
    """``column = value`` without quotes finds the rows; a header click sorts them, again the other way."""
    page.goto(url + "#/result/custrev")
    expect(page.locator("table.rows tbody tr")).to_have_count(100)
    assert re.fullmatch(r"\w+ = \S+", page.locator("#filter").get_attribute("placeholder"))
    page.fill("#filter", "c_nationkey = 7")
    page.click("#filter-run")
    rows = demo.result("custrev").where("c_nationkey = 7")
    expected = [r["_row"] for r in rows.orderBy("_row").collect()]
    expect(page.locator("#matched")).to_have_text(f"{len(expected)} of 1000 rows match")
    expect(page.locator("table.rows tbody tr")).to_have_count(len(expected))
    assert first_cells(page) == expected
    for descending in (False, True):
        page.locator("th.sortable[data-column=revenue]").click()
        expect(page.locator("th.sortable[data-column=revenue]")).to_contain_text("▼" if descending else "▲")
        order = rows.orderBy(rows.revenue.desc() if descending else rows.revenue.asc(), "_row")
        expect(page.locator("table.rows tbody tr td:first-child").first).to_have_text(str(order.first()["_row"]))
        assert first_cells(page) == [r["_row"] for r in order.collect()]
    expect(page.locator("#filter")).to_have_value("c_nationkey = 7")  # the filter stays while sorting
    page.fill("#filter", "c_custkey = = 1")
    page.click("#filter-run")
    expect(page.locator("#error")).to_contain_text("filter: the predicate does not parse")


def test_a_tables_rows_are_found_and_lead_to_an_impact(page, url, demo):
    page.goto(url)
    page.locator("svg#graph g.node[data-name=nation]").click()
    expect(page.locator("h2").first).to_contain_text("Table nation")
    expect(page.locator("table.rows tbody tr")).to_have_count(25)
    assert page.locator("#filter").get_attribute("placeholder") == "n_nationkey = 0"  # its key, its first row
    page.fill("#filter", "n_name = GERMANY")
    page.click("#filter-run")
    expect(page.locator("table.rows tbody tr")).to_have_count(1)
    page.locator("table.rows button.touched").click()
    expect(page.locator("#source")).to_have_value(re.compile(r"nation WHERE _dl_id = \d+"))
    expect(page.locator(".impact-result[data-result=natrev] h3")).to_contain_text("natrev: 1 affected rows")


def test_examples_come_from_the_catalog_and_wide_tables_scroll_in_their_frame(page, url, demo):
    page.set_viewport_size({"width": 700, "height": 800})
    page.goto(url)
    expect(page.locator("svg#graph g.node")).to_have_count(len(demo.catalog.tables) + 2)
    assert page.locator("#source").get_attribute("placeholder") == "customer WHERE c_custkey = 1"
    page.goto(url + "#/table/orders")
    frame = page.locator(".frame").first
    expect(frame.locator("table.rows tbody tr")).to_have_count(100)
    assert page.evaluate("document.documentElement.scrollWidth <= innerWidth")  # the page is as wide as the window
    assert frame.evaluate("f => f.scrollWidth > f.clientWidth")  # the table scrolls inside its frame
    page.goto(url + "#/why/natrev/0")
    expect(page.locator(".source-table").first).to_be_visible()
    expect(page.locator("#lineage-on")).to_have_attribute("placeholder", "year(o_orderdate), o_orderstatus")


def test_a_result_of_huge_dls_loads_as_fast_as_any_other(page, url, demo):
    """Counts per table on its page, source rows a page at a time: the page reads no more than
    any other's (the ids themselves stay on the server until a page of source rows asks)."""
    demo.save(demo.sql("select count(*) as n from lineitem join orders on l_orderkey = o_orderkey"), "alllines")
    try:
        ids = {t: demo.catalog.tables[t].rows for t in ("lineitem", "orders")}
        order = sorted(ids, key=lambda t: demo.catalog.tables[t].code)
        started = time.monotonic()
        page.goto(url + "#/result/alllines")
        expect(page.locator("table.rows tbody tr span.dl").first).to_have_text(
            f"{sum(ids.values())} ids: " + ", ".join(f"{t} {ids[t]}" for t in order))
        assert time.monotonic() - started < 5
        page.locator("button.why").first.click()
        box = page.locator(".source-table[data-table=lineitem]")
        expect(box.locator("h3")).to_have_text(f"lineitem: {ids['lineitem']} rows")
        expect(box.locator("tbody tr")).to_have_count(20)
        box.locator(".pager button", has_text="next").click()
        first = demo.explain("alllines", 0)["lineitem"].orderBy("_dl_id").offset(20).first()["_dl_id"]
        expect(box.locator("tbody tr td:first-child").first).to_have_text(str(first))
    finally:
        demo.drop_result("alllines")


SLOW_SOURCE = ("orders WHERE o_orderkey IN (SELECT a.l_orderkey FROM lineitem a JOIN lineitem b "
               "ON a.l_linenumber = b.l_linenumber WHERE a.l_quantity + b.l_quantity < 0)")


def test_an_impact_shows_its_progress_and_is_cancelled(page, url, demo):
    """Result after result with a progress bar; its Cancel stops the Spark work (a join of
    half a billion rows), and the next question that needs Spark is answered at once."""
    page.goto(url)
    page.fill("#source", DEMO_BAD_ROW)
    page.click("#impact-run")
    expect(page.locator("#impact-status")).to_have_text("all 2 results searched")
    expect(page.locator("#impact-progress progress")).to_have_attribute("value", "2")
    page.fill("#source", SLOW_SOURCE)
    page.click("#impact-run")
    expect(page.locator("#impact-status")).to_have_text(re.compile(r"searching \w+: 0 of 2 results searched"))
    page.wait_for_timeout(3000)  # its Spark job runs
    page.click("#impact-cancel")
    expect(page.locator("#impact-status")).to_have_text("cancelled: 0 of 2 results searched")
    expect(page.locator("#error")).to_contain_text("cancelled")
    started = time.monotonic()
    page.goto(url + "#/result/custrev?offset=0&limit=100&filter=revenue%20%3E%2010")  # a decimal: Spark's filter
    expect(page.locator("table.rows tbody tr")).to_have_count(100)
    assert time.monotonic() - started < 60


CROSSINGS = """graph => {
  // the points of each drawn edge (every 2 px) inside a box other than its two ends
  const svg = graph ? drawGraph(graph, null) : document.querySelector("svg#graph");
  if (graph) document.body.append(svg);
  const boxes = [...svg.querySelectorAll("g.node")].map(g => {
    const m = g.transform.baseVal[0].matrix, r = g.querySelector("rect");
    return {name: g.dataset.name, x: m.e, y: m.f, w: +r.getAttribute("width"), h: +r.getAttribute("height")};
  });
  const found = [];
  for (const p of svg.querySelectorAll("path.edge")) {
    for (let t = 0; t <= p.getTotalLength(); t += 2) {
      const q = p.getPointAtLength(t);
      for (const b of boxes) {
        if (b.name !== p.dataset.from && b.name !== p.dataset.to && q.x > b.x + 1 && q.x < b.x + b.w - 1 &&
            q.y > b.y + 1 && q.y < b.y + b.h - 1) found.push(`${p.dataset.from}->${p.dataset.to} behind ${b.name}`);
      }
    }
  }
  if (graph) svg.remove();
  return [...new Set(found)];
}"""


def test_no_edge_passes_behind_a_box(page, url):
    """An edge that skips layers takes a lane of its own in each (issue 56: airports seemed to
    feed the wrong step); checked on the demo's graph and on one where a straight curve would
    cross three boxes."""
    page.goto(url)
    expect(page.locator("svg#graph g.node").first).to_be_visible()
    assert page.evaluate(CROSSINGS, None) == []
    tables = ["a", "b", "c", "d", "e", "f"]
    reads = {"r1": ["a"], "r2": ["b"], "r3": ["c"], "r4": ["d"], "s": ["r1", "f"], "t": ["s", "e", "r3"]}
    graph = {"nodes": [{"id": t, "kind": "table", "rows": 1, "version": 1, "columns": ["x"]} for t in tables]
             + [{"id": r, "kind": "result", "rows": 1, "created_at": 0} for r in reads],
             "edges": [{"from": f, "to": r} for r, froms in reads.items() for f in froms]}
    assert page.evaluate(CROSSINGS, graph) == []
    drawn = page.evaluate("graph => drawGraph(graph, null).querySelectorAll('path.edge').length", graph)
    assert drawn == sum(map(len, reads.values()))
