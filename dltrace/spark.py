"""Getting a Spark session: embedded ``local[*]`` by default, a cluster or Spark Connect on request.

Starting a JVM costs seconds, so one session per process is created and reused.

A session that cannot start fails in one line, within ``CONNECT_TIMEOUT`` (docs/cluster.md):
a Spark Connect server or a standalone master that is not there is found out before Spark's
own clients would retry for minutes (Connect's for 10, a standalone driver's for about one),
and a master URL Spark refuses is reported with Spark's reason, from the
JVM's log, as bad input.  Spark Connect needs only its Python client (``dltrace[connect]``):
no JVM runs here.
"""

from __future__ import annotations

import atexit
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from dltrace.errors import BadInput, DltraceError, JavaMissing

MIN_JAVA = 17
JAVA_HELP = (
    "install a Java 17+ runtime (Debian/Ubuntu: apt-get install openjdk-17-jre-headless; "
    "macOS: brew install openjdk@17) and point JAVA_HOME at it"
)
# G1's regions at their largest (the default for an 8 GB heap is 4 MB): an array of half a
# region or more is "humongous", allocated and collected apart, and a group's lineage set
# (TPC-H Q1 at SF 1: four arrays of ~1.5M ids, 12 MB each, and the buffers they grow through)
# is one.  Larger regions keep such arrays ordinary: lineage queries with large groups spend
# far less time in GC, and plain queries do not change (docs/performance.md, "Measurements behind design choices").
JVM_OPTIONS = "-XX:G1HeapRegionSize=32m"
DEFAULT_CONF = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "8",
    "spark.sql.adaptive.enabled": "true",
    # groups an object aggregate (the native DLUNION, SortedIds) keeps per task in a hash map
    # before it sorts the rest of its input (Spark's default 128): a group's ids are a long[],
    # not boxed objects, so thousands of groups per task cost no sort (the window bench's
    # daily groups at 10x nycflights13: 3.1 s -> 1.35 s; docs/performance.md, 2026-11-29
    # (8f8f8aa) "window sets named by numbers"); past 65,536 groups in a task it sorts the
    # rest, as before.  The
    # hash map's buffers are outside Spark's memory accounting: a task holds its own input's
    # ids at most (a split or a shuffle partition), which spark.driver.memory bounds
    "spark.sql.objectHashAggregate.sortBased.fallbackThreshold": "65536",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    # embedded Spark runs its tasks in the driver's JVM: this heap holds every lineage set in flight
    "spark.driver.memory": os.environ.get("SPARK_DRIVER_MEMORY") or "8g",
    # what one action may bring to the driver: past it Spark stops the job (the JVM lives on),
    # and dltrace says what to do instead (errors.RESULT_SIZE_HELP); Spark's own default
    "spark.driver.maxResultSize": os.environ.get("SPARK_DRIVER_MAX_RESULT_SIZE") or "1g",
    "spark.executor.extraJavaOptions": JVM_OPTIONS,  # a local cluster's executors (the driver's: _embedded)
}


def java_major_version() -> int | None:
    """The major version of the ``java`` Spark would start, or None when there is none."""
    from dltrace.udafs.native import java_executable

    java = java_executable()
    if java is None:
        return None
    try:
        out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30)
    except OSError:
        return None
    match = re.search(r'version "(\d+)(?:\.(\d+))?', out.stderr + out.stdout)
    if not match:
        return None
    major = int(match.group(1))
    return int(match.group(2) or 0) if major == 1 else major


def check_java() -> None:
    """Fail with one line that says how to get Java, before Spark fails with a stack trace."""
    version = java_major_version()
    if version is None:
        raise JavaMissing(f"Java not found: Spark needs Java {MIN_JAVA}+; {JAVA_HELP}")
    if version < MIN_JAVA:
        raise JavaMissing(f"Java {version} is too old: Spark needs Java {MIN_JAVA}+; {JAVA_HELP}")


LOG_LIMIT = 10 << 20
ABANDONED_TOLERANCE = "24h"
CONNECT_TIMEOUT = 15  # seconds to reach a Spark Connect server or a standalone master
STANDALONE_PORT = 7077
CONNECT_HELP = (
    "check that the server runs (for a try: start-connect-server.sh, docs/cluster.md) "
    "and that SPARK_REMOTE names its host and port"
)
MASTER_HELP = "check that the master runs (its web UI and its log show its spark:// URL) and the URL's host and port"
# a JVM exception's line in a log: 'Exception in thread "main" org.apache.spark.SparkException: <reason>'
JAVA_EXCEPTION = re.compile(r'^(?:Exception in thread "[^"]*" )?[\w$.]+(?:Exception|Error): (.+)$')
KILLED = re.compile(r"Application has been killed\. Reason: (.+)")
_session = None
_server = None  # an embedded session serving Spark Connect (serve_connect)
_log_level = "ERROR"  # what Spark logs to the JVM's log file: "WARN" under --verbose (log_spark_warnings)


def jvm_log_path() -> Path:
    """Where the embedded JVM's own output goes, so it never mixes with dltrace's."""
    path = Path(
        os.environ.get("DLTRACE_SPARK_LOG") or Path(tempfile.gettempdir()) / f"dltrace-{os.getuid()}" / "spark.log"
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists() and path.stat().st_size > LOG_LIMIT:
        path.unlink()
    return path


def get_spark(master: str | None = None, conf: dict[str, str] | None = None, connect: bool | None = None):
    """The process's Spark session: ``SPARK_REMOTE`` (Spark Connect), else ``master``,
    ``SPARK_MASTER`` or embedded ``local[*]``; with ``connect`` (default: pyspark's own
    ``SPARK_API_MODE=connect``) the embedded JVM serves Spark Connect on 127.0.0.1 and the
    session is its client (``serve_connect``), as DataFrame tracing needs."""
    global _session
    from pyspark.sql import SparkSession

    if _session is not None:
        return _session
    active = SparkSession.getActiveSession()
    if active is not None:
        _session = active
        return active
    remote = os.environ.get("SPARK_REMOTE")
    if remote:
        check_connect_client(remote)
        wait_for_connect_server(remote)
        _session = closed_at_exit(SparkSession.builder.appName("dltrace").remote(remote).getOrCreate())
        return _session
    classic = _embedded(master or os.environ.get("SPARK_MASTER") or "local[*]", {**DEFAULT_CONF, **(conf or {})})
    if connect is None:
        connect = os.environ.get("SPARK_API_MODE", "").lower() == "connect"
    if connect:
        url = serve_connect(classic)
        connect_api()
        _session = connect_session(url)
    else:
        _session = classic
    return _session


def serve_connect(classic, token: str | None = None) -> str:
    """Start Spark Connect inside the JVM of embedded session ``classic`` (once; on
    127.0.0.1, a free port; clients must present ``token`` when one is given); returns the
    server's URL."""
    global _server
    service = getattr(getattr(classic._jvm.org.apache.spark.sql.connect.service, "SparkConnectService$"), "MODULE$")
    if not service.started():
        conf = classic._jsc.sc().conf()  # the live conf the service reads its address from
        conf.set("spark.connect.grpc.binding.address", "127.0.0.1")
        conf.set("spark.connect.grpc.binding.port", "0")
        # a long step's operation is never taken for abandoned (Connect's default: 10 minutes)
        conf.set("spark.connect.execute.manager.abandonedTolerance", ABANDONED_TOLERANCE)
        if token:
            conf.set("spark.connect.authenticate.token", token)
        service.start(classic._jsc.sc())
    _server = classic  # the JVM lives as long as the process
    return f"sc://127.0.0.1:{service.localPort()}"


def optimized_schema(frame):
    """The schema Spark writes ``frame`` (a Spark Connect DataFrame) with: its optimized plan's,
    whose nullability the optimizer sharpens (a column it folds to a literal is never NULL)
    and the analyzed schema of ``frame.schema`` does not.  Read from the session's own plan in
    the JVM that serves it; ``frame.schema`` when that JVM is not this process's."""
    session = frame.sparkSession
    if _server is None or not hasattr(session, "client"):
        return frame.schema
    from pyspark.sql.types import StructType

    jvm = _server._jvm
    manager = getattr(getattr(jvm.org.apache.spark.sql.connect.service, "SparkConnectService$"),
                      "MODULE$").sessionManager()
    key = jvm.org.apache.spark.sql.connect.service.SessionKey(session.client._user_id or "", session.session_id)
    holder = manager.getIsolatedSessionIfPresent(key)
    if holder.isEmpty():  # a session of another server
        return frame.schema
    view = f"dltrace_written_{uuid.uuid4().hex}"
    frame.createOrReplaceTempView(view)
    try:
        plan = holder.get().session().table(view).queryExecution().optimizedPlan()
        return StructType.fromJson(json.loads(plan.schema().json()))
    finally:
        session.catalog.dropTempView(view)


CONNECT_API = {"SPARK_CONNECT_MODE_ENABLED": "1", "SPARK_LOCAL_REMOTE": "1"}


def connect_api() -> None:
    """Switch this process to Spark Connect's API, as pyspark's own ``spark.api.mode=connect``
    does: ``pyspark.sql.functions`` then build Connect columns, and a script's
    ``SparkSession.builder.getOrCreate()`` returns the active Connect session."""
    os.environ.update(CONNECT_API)


def connect_session(url: str):
    """A new Spark Connect session (temporary views of its own) on the server at ``url``."""
    from pyspark.sql.connect.session import SparkSession

    return closed_at_exit(SparkSession.builder.remote(url).create())


_connect_sessions: list = []
# set by dltrace.server while a command runs on the warm server: whether its process lives
server_alive: Callable[[], bool] | None = None


def closed_at_exit(session):
    """``session`` (Spark Connect), its channel closed when this process exits, before the
    embedded JVM serving it stops: closed later (by its ``__del__`` at the interpreter's
    end), gRPC waits for a server that is gone, and the process never exits.  On the warm
    server, a call it cannot make is retried only while the server's process lives
    (Connect's client retries an unreachable server for 10 minutes)."""
    if not _connect_sessions:
        atexit.register(close_connect_sessions)
    _connect_sessions.append(session)
    if server_alive is not None:
        session.client.set_retry_policies([while_alive(server_alive)])
    return session


def while_alive(alive: Callable[[], bool]):
    """Connect's default retries, given up as soon as ``alive()`` is false."""
    from pyspark.sql.connect.client.retries import DefaultPolicy

    class WhileAlive(DefaultPolicy):
        def can_retry(self, error: BaseException) -> bool:
            return alive() and super().can_retry(error)

    return WhileAlive()


def close_connect_sessions() -> None:
    for session in reversed(_connect_sessions):
        client = session.client
        if not client.is_closed:
            client.close()
    _connect_sessions.clear()


# Spark's sort aggregate in place of its object hash aggregate, for a query whose groups are
# many (dltrace.rewriter.aggregate.MANY_GROUPS_FROM): dltrace's own actions on it (a save, the
# CLI's output) are planned under it (LineageSession.executing)
SORTED_AGGREGATES = {"spark.sql.execution.useObjectHashAggregateExec": "false"}


@contextmanager
def session_conf(spark, settings: dict[str, str]) -> Iterator[None]:
    """``settings`` in force in ``spark``'s SQL conf for the ``with`` block, earlier values back after."""
    earlier = {key: spark.conf.get(key, None) for key in settings}
    for key, value in settings.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, value in earlier.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)


def check_connect_client(remote: str) -> None:
    """Spark Connect's Python client is an extra: without it, one line saying how to get it."""
    try:
        from pyspark.sql.connect import utils  # importing it checks the packages too

        for require in (utils.require_minimum_grpc_version, utils.require_minimum_grpcio_status_version,
                        utils.require_minimum_googleapis_common_protos_version,
                        utils.require_minimum_zstandard_version):
            require()
    except ImportError as error:  # pyspark's PySparkImportError
        raise DltraceError(f"SPARK_REMOTE={remote}: Spark Connect's Python client is missing ({error}): "
                           f"pip install 'dltrace[connect]'") from None


def wait_for_connect_server(remote: str, timeout: float = CONNECT_TIMEOUT) -> None:
    """Fail in one line unless the Spark Connect server at ``remote`` accepts a connection
    within ``timeout`` seconds: Connect's client retries an unreachable server for 10 minutes.

    The channel is pyspark's own for the URL (TLS and token included); a refused connection
    shows at once as gRPC's TRANSIENT_FAILURE, a host that does not answer at the timeout."""
    import grpc
    from pyspark.errors import PySparkException
    from pyspark.sql.connect.client import DefaultChannelBuilder

    try:
        channel = DefaultChannelBuilder(remote).toChannel()
    except (PySparkException, ValueError) as error:  # ValueError: urllib's, for a port that is no number
        message = error.getMessage() if isinstance(error, PySparkException) else str(error)
        raise BadInput(f"SPARK_REMOTE={remote} is not a Spark Connect URL ({message}): "
                       f"use sc://HOST:PORT (the server's port is 15002 by default)") from None
    states: list = []
    answered = threading.Event()

    def watch(state) -> None:
        if state in (grpc.ChannelConnectivity.READY, grpc.ChannelConnectivity.TRANSIENT_FAILURE):
            states.append(state)
            answered.set()

    channel.subscribe(watch, try_to_connect=True)
    try:
        answered.wait(timeout)
    finally:
        channel.unsubscribe(watch)
        channel.close()
    if not states:
        raise DltraceError(f"cannot reach the Spark Connect server at {remote} (no answer within {timeout:g} s): "
                           f"{CONNECT_HELP}")
    if states[0] != grpc.ChannelConnectivity.READY:
        raise DltraceError(f"cannot reach the Spark Connect server at {remote} (connection refused or failed): "
                           f"{CONNECT_HELP}")


def check_standalone_master(master: str, timeout: float = CONNECT_TIMEOUT) -> None:
    """Fail in one line unless a ``spark://`` master (``spark://h1:p1,h2:p2`` for standby
    masters) accepts a connection within ``timeout`` seconds: Spark's driver retries for a
    minute and then fails with a Py4J stack trace."""
    if not master.startswith("spark://"):
        return
    reasons = []
    for address in master[len("spark://"):].split(","):
        host, _, port = address.rpartition(":") if ":" in address else (address, "", str(STANDALONE_PORT))
        try:
            socket.create_connection((host, int(port)), timeout=timeout).close()
            return
        except ValueError:
            raise BadInput(f"--master {master}: '{port}' is not a port number") from None
        except TimeoutError:
            reasons.append(f"{address}: no answer within {timeout:g} s")
        except OSError as error:
            reasons.append(f"{address}: {error.strerror or error}")
    raise DltraceError(f"cannot reach the Spark master at {master} ({'; '.join(reasons)}): {MASTER_HELP}")


def launch_failure(log_text: str) -> str | None:
    r"""Spark's reason in what a JVM that failed to start wrote: the message of the last Java
    exception (``spark-submit`` prints it above its stack trace), else None.

    >>> launch_failure('WARNING: x\nException in thread "main" org.apache.spark.SparkException: Master must '
    ...                'either be yarn or start with spark, k8s, or local\n\tat org.apache.spark.deploy.X(X.scala)')
    'Master must either be yarn or start with spark, k8s, or local'
    """
    reasons = [m.group(1).strip() for line in log_text.splitlines() if (m := JAVA_EXCEPTION.match(line.strip()))]
    return reasons[-1] if reasons else None


def start_failure(reason: str, master: str, log_path: Path) -> DltraceError:
    """A session that did not start, in one line: bad input when Spark refused the master URL."""
    about_master = re.search(r"\bmaster\b", reason, re.IGNORECASE)
    cls = BadInput if about_master else DltraceError
    return cls(f"Spark did not start with master '{master}': {reason} (full log: {log_path})")


def _embedded(master: str, settings: dict[str, str]):
    """A JVM whose stdout/stderr go to a log file; Spark's reason is shown if it fails to start."""
    from py4j.protocol import Py4JJavaError
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway
    from pyspark.sql import SparkSession

    from dltrace.udafs import native

    check_java()
    check_standalone_master(master)
    log_path = jvm_log_path()
    jar, why_not = native.extension_jar(native.java_executable())
    if jar is not None:
        settings = native.session_settings(settings, jar)
    else:
        with open(log_path, "a") as log:
            log.write(f"dltrace: running without its native id sets ({native.SOURCE.name}): {why_not}\n")
    # Python workers (the roBDD UDFs) must run this interpreter, with dltrace installed
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    log4j = Path(__file__).with_name("log4j2.properties")
    conf = SparkConf().setAppName("dltrace").setMaster(master)
    conf.set("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile=file:{log4j} {JVM_OPTIONS}")
    for key, value in settings.items():
        conf.set(key, value)
    with open(log_path, "ab") as log:
        start = log.tell()
        try:
            gateway = launch_gateway(conf, popen_kwargs={"stdout": log, "stderr": log})
        except Exception as error:
            text = _written_since(log_path, start)
            tail = text.strip().splitlines()[-1:] or [str(error)]
            raise start_failure(launch_failure(text) or tail[0], master, log_path) from None
    try:
        context = SparkContext(conf=conf, gateway=gateway)
        context.setLogLevel(_log_level)
        return SparkSession(context)
    except Py4JJavaError as error:
        # a cluster that gave up on the application says why in the log, not in the exception
        killed = KILLED.findall(_written_since(log_path, start))
        message = str(error.java_exception.getMessage() or error.java_exception.toString()).strip()
        raise start_failure(killed[-1] if killed else message.splitlines()[0], master, log_path) from None


def log_spark_warnings() -> None:
    """Spark's warnings into the JVM's log from now on (``--verbose``, dltrace/progress.py):
    in the embedded session that runs, and in one that starts later."""
    global _log_level
    from pyspark import SparkContext

    _log_level = "WARN"
    context = SparkContext._active_spark_context
    if getattr(context, "_jsc", None) is not None:
        context.setLogLevel(_log_level)


def _written_since(log_path: Path, start: int) -> str:
    with open(log_path, "rb") as log:
        log.seek(start)
        return log.read().decode(errors="replace")
