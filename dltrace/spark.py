"""Getting a Spark session: embedded ``local[*]`` by default, a cluster or Spark Connect on request.

Starting a JVM costs seconds, so one session per process is created and reused.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from dltrace.errors import DltraceError, JavaMissing

MIN_JAVA = 17
JAVA_HELP = (
    "install a Java 17+ runtime (Debian/Ubuntu: apt-get install openjdk-17-jre-headless; "
    "macOS: brew install openjdk@17) and point JAVA_HOME at it"
)
DEFAULT_CONF = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "8",
    "spark.sql.adaptive.enabled": "true",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    # embedded Spark runs its tasks in the driver's JVM: this heap holds every lineage set in flight
    "spark.driver.memory": os.environ.get("SPARK_DRIVER_MEMORY") or "8g",
}


def java_major_version() -> int | None:
    """The major version of the ``java`` Spark would start, or None when there is none."""
    home = os.environ.get("JAVA_HOME")
    java = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    if not java or not Path(java).exists():
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
_session = None


def jvm_log_path() -> Path:
    """Where the embedded JVM's own output goes, so it never mixes with dltrace's."""
    path = Path(
        os.environ.get("DLTRACE_SPARK_LOG") or Path(tempfile.gettempdir()) / f"dltrace-{os.getuid()}" / "spark.log"
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists() and path.stat().st_size > LOG_LIMIT:
        path.unlink()
    return path


def get_spark(master: str | None = None, conf: dict[str, str] | None = None):
    """The process's Spark session: ``SPARK_REMOTE`` (Spark Connect), else ``master``,
    ``SPARK_MASTER`` or embedded ``local[*]``."""
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
        _session = SparkSession.builder.appName("dltrace").remote(remote).getOrCreate()
        return _session
    _session = _embedded(master or os.environ.get("SPARK_MASTER") or "local[*]", {**DEFAULT_CONF, **(conf or {})})
    return _session


def _embedded(master: str, settings: dict[str, str]):
    """A JVM whose stdout/stderr go to a log file; its tail is shown if it fails to start."""
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway
    from pyspark.sql import SparkSession

    check_java()
    # Python workers (the roBDD UDFs) must run this interpreter, with dltrace installed
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    log4j = Path(__file__).with_name("log4j2.properties")
    conf = SparkConf().setAppName("dltrace").setMaster(master)
    conf.set("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile=file:{log4j}")
    for key, value in settings.items():
        conf.set(key, value)
    log_path = jvm_log_path()
    with open(log_path, "ab") as log:
        try:
            gateway = launch_gateway(conf, popen_kwargs={"stdout": log, "stderr": log})
        except Exception as error:
            tail = log_path.read_text(errors="replace").strip().splitlines()[-1:] or [str(error)]
            raise DltraceError(f"Spark did not start: {tail[0]} (full log: {log_path})") from None
    context = SparkContext(conf=conf, gateway=gateway)
    context.setLogLevel("ERROR")
    return SparkSession(context)
