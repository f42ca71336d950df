"""The lineage explorer's web app: a Starlette app of read-only JSON endpoints and one page.

Why this shape (docs/ui.md): every answer is a call of the Python API (``answers.py``) in a
worker thread, so the event loop only moves bytes and the page never waits on another
request's Spark work.  A question the catalog's files can answer (a result's page, why a row
is what it is, an impact) is first asked of a session without Spark, read by pyarrow; where
it meets Spark work (``NeedsSpark``), it is asked again with Spark.  Spark work is done one
request at a time (dltrace's per-Spark views are not made for concurrent writers) under a
Spark tag of its own, and a request whose client went away (the page's Cancel, a closed tab)
has its Spark jobs interrupted by that tag.
Each request opens the catalog anew, so a catalog changed while the page is open is what the
next answer reads.  There is no route that saves, drops or registers anything.
"""

from __future__ import annotations

import asyncio
import secrets
import sys
import threading
import uuid
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Route

from dltrace.dataframe import runs
from dltrace.errors import BadInput, DltraceError, spark_error
from dltrace.result_format import UnknownResult
from dltrace.session import LineageSession
from dltrace.ui import answers, pages
from dltrace.ui.values import page_bounds

T = TypeVar("T")
STATIC = Path(__file__).with_name("static")
TOKEN_HEADER = "x-dltrace-token"
TOKEN_COOKIE = "dltrace_token"
LOOPBACK_HOSTS = ["127.0.0.1", "localhost", "::1"]
DISCONNECT_POLL = 0.2  # seconds between checks that the client still waits for an answer
INTERRUPT_AGAIN = 0.5  # seconds between interruptions of a cancelled request's Spark work until it ends
CACHED_PAGES = 64  # result pages and row orders kept: a save never changes (a new save has a new stamp)
CACHED_BYTES = 256 << 20  # at most this much in numpy arrays kept (row orders, bad ids: 8 bytes a row)


class Cancelled(Exception):
    """The client went away before the answer was ready."""


class NeedsSpark(Exception):
    """A question asked without Spark met Spark work: it is asked again with Spark."""


class WithoutSpark(LineageSession):
    """The catalog opened for one question answered from its files alone: where the answer
    would start or use Spark, it raises ``NeedsSpark`` instead."""

    @property
    def spark(self):
        raise NeedsSpark

    @property
    def frames(self):
        raise NeedsSpark


class Explorer:
    """The app's state: the catalog's directory, Spark (started on first use, or given), the
    lock that runs Spark work one request at a time, and the result pages already read."""

    def __init__(self, catalog: str | Path, spark=None, master: str | None = None) -> None:
        self.catalog = catalog
        self.master = master
        self._spark = spark
        self._start = threading.Lock()
        self.work = threading.Lock()
        self._pages_lock = threading.Lock()
        self.pages: OrderedDict[tuple, object] = OrderedDict()

    @property
    def spark(self):
        with self._start:
            if self._spark is None:
                from dltrace.spark import get_spark

                self._spark = get_spark(self.master)
            return self._spark

    def warm_up(self) -> None:
        """Start Spark before the first question needs it; a failure is left for that question
        to report (one line), not printed here."""
        try:
            self.spark  # noqa: B018 - starting it is the point
        except Exception:  # noqa: BLE001 - the next request that needs Spark says why
            pass

    def interrupt(self, tag: str) -> None:
        """Cancel the running Spark jobs of the request tagged ``tag`` (nothing before Spark started)."""
        if self._spark is None:
            return
        if connected(self._spark):
            self._spark.interruptTag(tag)
        else:
            self._spark.sparkContext.cancelJobsWithTag(tag)

    def session(self, spark: bool) -> LineageSession:
        """The catalog opened for one request (its newest version, its results as on disk now),
        with Spark or without (``WithoutSpark``)."""
        return LineageSession(self.catalog, spark=self.spark) if spark else WithoutSpark(self.catalog)

    def cached_page(self, key: tuple, compute: Callable[[], T]) -> T:
        """The page (or a page's row order, ``ui.pages``) kept for ``key``, else computed
        (outside the lock: pages pyarrow reads are computed by several requests at once) and kept."""
        with self._pages_lock:
            page = self.pages.get(key)
            if page is not None:
                self.pages.move_to_end(key)
                return page
        page = compute()
        with self._pages_lock:
            self.pages[key] = page
            while len(self.pages) > CACHED_PAGES or (
                    len(self.pages) > 1 and sum(getattr(p, "nbytes", 0) for p in self.pages.values()) > CACHED_BYTES):
                self.pages.popitem(last=False)
        return page


def connected(spark) -> bool:
    """Whether ``spark`` is a Spark Connect session (else classic, with a SparkContext)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


@contextmanager
def tagged(spark, tag: str) -> Iterator[None]:
    """The Spark jobs this thread starts meanwhile carry ``tag``: Spark Connect's operation tag,
    or on classic Spark the SparkContext's job tag (the session's own ``addTag`` does not reach
    classic jobs: ``interruptTag`` finds none of them, Spark 4.0 to 4.3)."""
    if connected(spark):
        spark.addTag(tag)
        try:
            yield
        finally:
            spark.removeTag(tag)
        return
    spark.sparkContext.addJobTag(tag)
    try:
        yield
    finally:
        spark.sparkContext.removeJobTag(tag)


def error_response(error: Exception) -> JSONResponse:
    """One line of JSON: 404 for an unknown result, 400 for other bad input, 500 for a failure."""
    from pyspark.errors import PySparkException

    if isinstance(error, PySparkException):
        error = spark_error(error)
    if isinstance(error, DltraceError):
        status = 404 if isinstance(error, UnknownResult) else 400 if isinstance(error, BadInput) else 500
        message = str(error)
    else:
        status, message = 500, DltraceError(f"internal error ({type(error).__name__}): {error}").args[0]
        print(f"dltrace ui: {message}", file=sys.stderr)
    return JSONResponse({"error": message}, status_code=status)


async def answer(request: Request, work: Callable[[LineageSession], object], files_first: bool = False) -> Response:
    """``work`` on a session opened for this request, in a worker thread: first without Spark
    when ``files_first`` (and again with Spark if it needs it); Spark work tagged and done
    under the app's lock, and interrupted when the client stops waiting."""
    explorer: Explorer = request.app.state.explorer
    tag = f"dltrace-ui-{uuid.uuid4().hex}"
    gone = threading.Event()

    def run():
        if files_first:
            try:
                return work(explorer.session(spark=False))
            except NeedsSpark:
                pass  # asked again below, with Spark
        with explorer.work:
            if gone.is_set():
                raise Cancelled
            session = explorer.session(spark=True)
            with tagged(session.spark, tag):
                return work(session)

    task = asyncio.ensure_future(run_in_threadpool(run))
    while not task.done():
        await asyncio.wait({task}, timeout=DISCONNECT_POLL)
        if not task.done() and await request.is_disconnected():
            gone.set()
            while not task.done():  # again and again: a job the work starts later is cancelled too
                await run_in_threadpool(explorer.interrupt, tag)
                await asyncio.wait({task}, timeout=INTERRUPT_AGAIN)
            await asyncio.wait({task})
            task.exception()  # retrieved: its end (the interruption) is nobody's answer
            return Response(status_code=499)  # nginx's "client closed request": nobody reads it
    try:
        result = task.result()
    except Exception as error:  # noqa: BLE001 - every failure is one line of JSON, never a stack trace
        return error_response(error)
    return result if isinstance(result, Response) else JSONResponse(result)


def whole_number(request: Request, name: str, default: int) -> int:
    """A query parameter that must be a whole number."""
    text = request.query_params.get(name)
    if text is None or text == "":
        return default
    try:
        return int(text)
    except ValueError:
        raise BadInput(f"{name} must be a whole number (got '{text}')") from None


def row_number(request: Request) -> int:
    text = request.path_params["row"]
    try:
        return int(text)
    except ValueError:
        raise BadInput(f"the row must be a _row number (got '{text}')") from None


def checked(handler: Callable[[Request], object]):
    """``handler`` with its own bad input (a parameter) answered as one line too."""

    async def endpoint(request: Request) -> Response:
        try:
            return await handler(request)
        except DltraceError as error:
            return error_response(error)

    return endpoint


@checked
async def pipeline(request: Request) -> Response:
    return await answer(request, answers.pipeline, files_first=True)


def page_params(request: Request) -> tuple[str, int, int, str, str, bool]:
    """A page's name, ``offset``, ``limit``, ``filter``, ``sort`` and ``desc`` (1: descending)."""
    params = request.query_params
    offset, limit = page_bounds(whole_number(request, "offset", 0), whole_number(request, "limit", 100))
    return (request.path_params["name"], offset, limit, params.get("filter", ""), params.get("sort", ""),
            params.get("desc", "") in ("1", "true"))


@checked
async def result_rows(request: Request) -> Response:
    name, offset, limit, text, sort, descending = page_params(request)
    explorer: Explorer = request.app.state.explorer

    def work(session: LineageSession) -> dict:
        saved = session.store.get(name)
        key = (saved.name, saved.stamp, offset, limit, text, sort, descending)
        page = explorer.cached_page(key, lambda: pages.result_rows(session, saved.name, offset, limit, text, sort,
                                                                   descending, explorer.cached_page))
        run = runs.runs_by_result(session.catalog).get(saved.name)
        return {**page, "stale": session.stale_results().get(saved.name), "run": run and run.label(),
                "pruned_at": saved.pruned_at}

    # a page pyarrow reads (result_pages) neither waits for Spark work nor starts Spark
    return await answer(request, work, files_first=True)


@checked
async def table_rows(request: Request) -> Response:
    name, offset, limit, text, sort, descending = page_params(request)
    explorer: Explorer = request.app.state.explorer
    return await answer(request, lambda s: pages.table_page(s, name, offset, limit, text, sort, descending,
                                                            explorer.cached_page), files_first=True)


@checked
async def why(request: Request) -> Response:
    name, row, limit = request.path_params["name"], row_number(request), whole_number(request, "limit", 50)
    page_bounds(0, limit)
    return await answer(request, lambda s: answers.why(s, name, row, limit), files_first=True)


@checked
async def sources(request: Request) -> Response:
    name, row, table = request.path_params["name"], row_number(request), request.path_params["table"]
    offset, limit = whole_number(request, "offset", 0), whole_number(request, "limit", 50)
    return await answer(request, lambda s: answers.sources(s, name, row, table, offset, limit), files_first=True)


@checked
async def summary(request: Request) -> Response:
    name, row, k = request.path_params["name"], row_number(request), whole_number(request, "patterns", 3)
    return await answer(request, lambda s: answers.summary(s, name, row, k))


@checked
async def reasons(request: Request) -> Response:
    name, row, limit = request.path_params["name"], row_number(request), whole_number(request, "limit", 50)
    page_bounds(0, limit)
    return await answer(request, lambda s: {"reasons": answers.reasons(s, name, row, limit)})


@checked
async def granules(request: Request) -> Response:
    name, row, on = request.path_params["name"], row_number(request), request.query_params.get("on", "")
    return await answer(request, lambda s: answers.granules(s, name, row, on))


@checked
async def impact(request: Request) -> Response:
    source, result = request.query_params.get("source", ""), request.query_params.get("result")
    explorer: Explorer = request.app.state.explorer
    return await answer(request, lambda s: answers.affected_rows(s, source, result, remember=explorer.cached_page),
                        files_first=True)


@checked
async def impact_export(request: Request) -> Response:
    source, result = request.query_params.get("source", ""), request.query_params.get("result")
    fmt = request.query_params.get("format", "csv")
    media = {"csv": "text/csv", "json": "application/x-ndjson"}

    def work(session: LineageSession) -> Response:
        text = answers.impact_export(session, source, result, fmt)
        name = f"impact.{'csv' if fmt == 'csv' else 'jsonl'}"
        return Response(text, media_type=media[fmt], headers={"content-disposition": f'attachment; filename="{name}"'})

    return await answer(request, work, files_first=True)


async def page(request: Request) -> Response:
    """The one page; with a token in its URL, also a cookie that later requests carry."""
    response = FileResponse(STATIC / "index.html", headers={"cache-control": "no-cache"})
    token = request.app.state.token
    if token:
        response.set_cookie(TOKEN_COOKIE, token, httponly=True, samesite="strict")
    return response


async def script(request: Request) -> Response:
    return FileResponse(STATIC / "app.js", media_type="text/javascript", headers={"cache-control": "no-cache"})


async def not_found(request: Request, error: HTTPException) -> Response:
    """Unknown paths and methods (there is no POST, PUT or DELETE) as one line too."""
    what = "no such page" if error.status_code == 404 else f"{request.method} is not allowed here (read only)"
    return JSONResponse({"error": f"{what}: {request.url.path}"}, status_code=error.status_code)


class TokenGuard:
    """Every request must present the token: header ``X-Dltrace-Token``, ``?token=`` or the
    page's cookie.  Plain ASGI (not BaseHTTPMiddleware), so a disconnect still reaches the
    endpoint that waits for Spark."""

    def __init__(self, app, token: str) -> None:
        self.app = app
        self.token = token

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "http" and not self.presented(Request(scope)):
            response = JSONResponse({"error": "this explorer needs its token: open the URL `dltrace ui` printed"},
                                    status_code=401)
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)

    def presented(self, request: Request) -> bool:
        given = (request.headers.get(TOKEN_HEADER) or request.query_params.get("token")
                 or request.cookies.get(TOKEN_COOKIE) or "")
        return secrets.compare_digest(given.encode(), self.token.encode())


class HostGuard:
    """Without a token: only requests addressed to one of ``hosts`` (loopback names, the
    ``--host`` given), so that a page elsewhere cannot reach the explorer through a DNS name
    of its own pointed at 127.0.0.1 (DNS rebinding)."""

    def __init__(self, app, hosts: list[str]) -> None:
        self.app = app
        self.hosts = {h.lower().strip("[]") for h in hosts}

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "http":
            host = Headers(scope=scope).get("host", "").lower()
            name = host.rpartition("]")[0].lstrip("[") if host.startswith("[") else host.partition(":")[0]
            if name not in self.hosts:
                response = JSONResponse({"error": f"this explorer answers requests to {', '.join(sorted(self.hosts))} "
                                                  f"only, not to {host or 'no host'}"}, status_code=400)
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


def create_app(catalog: str | Path, spark=None, master: str | None = None, token: str | None = None,
               allowed_hosts: list[str] | None = None) -> Starlette:
    """The explorer over ``catalog``.  Without a token it answers only requests addressed to a
    loopback name or one of ``allowed_hosts`` (``HostGuard``); with one, every request must
    present it (``TokenGuard``)."""
    routes = [
        Route("/", page),
        Route("/app.js", script),
        Route("/api/pipeline", pipeline),
        Route("/api/results/{name}", result_rows),
        Route("/api/tables/{name}", table_rows),
        Route("/api/results/{name}/{row}/why", why),
        Route("/api/results/{name}/{row}/sources/{table}", sources),
        Route("/api/results/{name}/{row}/summary", summary),
        Route("/api/results/{name}/{row}/reasons", reasons),
        Route("/api/results/{name}/{row}/granules", granules),
        Route("/api/impact", impact),
        Route("/api/impact/export", impact_export),
    ]
    middleware = [Middleware(TokenGuard, token=token) if token else
                  Middleware(HostGuard, hosts=[*LOOPBACK_HOSTS, *(allowed_hosts or [])])]
    app = Starlette(routes=routes, middleware=middleware, exception_handlers={HTTPException: not_found})
    app.state.explorer = Explorer(catalog, spark, master)
    app.state.token = token
    return app
