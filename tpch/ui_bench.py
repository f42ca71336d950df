"""``python -m tpch.ui_bench``: page loads of the lineage explorer (``dltrace ui``) on the demo
catalog (``make demo`` leaves it in ./.dltrace, with the saved steps custrev and natrev).

    python -m tpch.ui_bench [--catalog .dltrace] [--result custrev] [--repeat 5] [--no-browser]

The explorer runs in this process (uvicorn in a thread, embedded Spark started and warmed
first, as ``dltrace ui`` does in the background).  Over HTTP it times what the page asks for:
the pipeline view (the page, its script, ``/api/pipeline``) and a 1,000-row page of
``--result``, once per offset not asked before (read from the saved files, by pyarrow or, for
columns only Spark shows right, by Spark) and again (kept by the save's stamp), "why" of a
row (its source rows, a page per table) and the impact of the demo's bad row in every saved
result (read from the files by pyarrow where they answer, else by Spark).  With Chromium
and Playwright (the browser tests' set-up) it also times the page in the browser until the
view is drawn (for the result page: its 1,000 rows in hand and those in view drawn, the
others drawn as they scroll into view) and the scroll to its last row.  Target: under 300 ms each.  Prints medians.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import threading
import time
from pathlib import Path
from urllib.parse import quote

from dltrace.demo import DEMO_BAD_ROW

TARGET = 0.300
PAGE = 1000


def serve(catalog: str):
    """The explorer on a free port of 127.0.0.1: (its URL, the uvicorn server)."""
    import uvicorn

    from dltrace.ui.app import create_app

    app = create_app(catalog)
    app.state.explorer.warm_up()  # as `dltrace ui` starts Spark before the first question needs it
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="off"))
    threading.Thread(target=server.run, daemon=True).start()
    while not server.started:
        time.sleep(0.05)
    port = server.servers[0].sockets[0].getsockname()[1]
    return f"http://127.0.0.1:{port}", server


def timed(client, *paths: str) -> float:
    """Seconds to GET ``paths`` one after the other, as the page does; each must answer 200."""
    started = time.perf_counter()
    for path in paths:
        response = client.get(path)
        if response.status_code != 200:
            raise SystemExit(f"ui_bench: GET {path}: {response.status_code} {response.text[:300]}")
    return time.perf_counter() - started


# Installed in every page before its own script: for each selector, when the first element
# matching it is in the document, the time (ms from the navigation's start) of the next frame
# drawn after it: the view as the user sees it, not Playwright's round trips to ask.
DRAWN = """
window.__drawn = {};
window.__watch = selector => new Promise(done => {
  const check = () => {
    if (!document.querySelector(selector)) return false;
    requestAnimationFrame(() => requestAnimationFrame(() => done(window.__drawn[selector] = performance.now())));
    return true;
  };
  if (check()) return;
  const observer = new MutationObserver(() => { if (check()) observer.disconnect(); });
  observer.observe(document, {childList: true, subtree: true});
});
for (const selector of %s) window.__watch(selector);
"""
# the rows drawn down to the last: no gap left below them (app.js: drawInView)
THE_END_DRAWN = "table.rows tbody tr.gap:last-child > td[style*='height: 0px']"
LAST_ROW = ("[...document.querySelectorAll('table.rows tbody tr:not(.gap)')]"
            f".find(tr => tr.firstChild.textContent === '{PAGE - 1}')")


def browser_times(url: str, result: str, repeat: int) -> dict[str, float] | None:
    """Medians of the views drawn in Chromium, or None when the browser tests' set-up is missing."""
    try:
        from tests.test_ui_browser import CHROMIUM, CHROMIUM_ARGS
    except BaseException as missing:  # noqa: BLE001 - pytest's skip (no Chromium or Playwright) is a BaseException
        print(f"no browser times: {missing} (run from the repository's root)", file=sys.stderr)
        return None
    from playwright.sync_api import sync_playwright

    loaded, scrolled = f"browser: {PAGE} rows of {result}", f"browser: scrolled to its row {PAGE}"
    views = {loaded: (f"#/result/{result}?offset=0&limit={PAGE}",
                      # the page's rows in hand, those in view drawn (app.js: drawInView)
                      f"table.rows[data-rows='{PAGE}'] tbody tr:not(.gap)"),
             "browser: pipeline view": ("#/", "svg#graph g.node")}
    times: dict[str, list[float]] = {name: [] for name in (*views, scrolled)}
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        page = chromium.new_page()
        page.add_init_script(DRAWN % json.dumps([ready for _, ready in views.values()]))
        for run in range(repeat):
            for number, (name, (view, ready)) in enumerate(views.items()):
                page.goto(f"{url}/?r={run}.{number}{view}")  # a new document (not a hash change): loaded from its start
                times[name].append(page.evaluate(f"window.__watch({json.dumps(ready)})") / 1000)
                if name == loaded:
                    page.wait_for_timeout(100)  # the first frame has measured the rows (drawInView)
                    times[scrolled].append(page.evaluate(
                        f"""() => {{ const started = performance.now();
                              const drawn = window.__watch({json.dumps(THE_END_DRAWN)});
                              scrollTo(0, document.body.scrollHeight);
                              return drawn.then(() => performance.now() - started); }}""") / 1000)
                    assert page.evaluate(LAST_ROW), "the last row was not drawn at the page's end"
        chromium.close()
    return {name: statistics.median(t) for name, t in times.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tpch.ui_bench", description=__doc__.splitlines()[0])
    parser.add_argument("--catalog", default=".dltrace")
    parser.add_argument("--result", default="custrev", help=f"a saved result of {PAGE}+ rows")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--no-browser", action="store_true", help="HTTP only, even with Chromium here")
    args = parser.parse_args(argv)
    import httpx

    from dltrace.session import LineageSession

    saved = LineageSession(args.catalog).saved_results().get(args.result)
    if saved is None or saved.rows < PAGE:
        raise SystemExit(f"ui_bench: {args.catalog} has no saved result {args.result} of {PAGE}+ rows: run `make demo`")
    url, server = serve(str(Path(args.catalog).resolve()))
    medians: dict[str, float] = {}
    with httpx.Client(base_url=url, timeout=600) as client:
        started = time.perf_counter()
        timed(client, f"/api/results/{args.result}?offset={saved.rows - 1}&limit=1")  # warm
        print(f"the explorer answered a first page in {time.perf_counter() - started:.1f} s", file=sys.stderr)
        pipeline = [timed(client, "/", "/app.js", "/api/pipeline") for _ in range(args.repeat)]
        first = [timed(client, f"/api/results/{args.result}?offset={run}&limit={PAGE}") for run in range(args.repeat)]
        again = [timed(client, f"/api/results/{args.result}?offset=0&limit={PAGE}") for _ in range(args.repeat)]
        why = [timed(client, f"/api/results/{args.result}/{run}/why?limit=50") for run in range(args.repeat)]
        impact = [timed(client, f"/api/impact?source={quote(DEMO_BAD_ROW)}") for _ in range(args.repeat)]
    medians["pipeline view (page, script, /api/pipeline)"] = statistics.median(pipeline)
    medians[f"{PAGE} rows of {args.result}, first time (read from its files)"] = statistics.median(first)
    medians[f"{PAGE} rows of {args.result}, again (kept by its save stamp)"] = statistics.median(again)
    medians[f"why a row of {args.result} is what it is"] = statistics.median(why)
    medians["impact of the demo's bad row on every result"] = statistics.median(impact)
    if not args.no_browser:
        medians.update(browser_times(url, args.result, args.repeat) or {})
    server.should_exit = True
    print(f"page loads on {args.catalog}, medians of {args.repeat} (target under {TARGET * 1000:.0f} ms):")
    for name, seconds in medians.items():
        print(f"  {name:62} {seconds * 1000:7.1f} ms  {'ok' if seconds < TARGET else 'OVER'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
