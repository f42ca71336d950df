"""dltrace's native DLUNION for the JVM: ``jvm/SortedIds.scala``, built once per Spark version.

The rewriter writes a group's lineage set as ``sort_array(collect_list(id))`` (or
``collect_set`` where a row can be met twice).  Spark collects those ids as boxed objects and
sorts them afterwards.  ``SortedIds`` collects them into a ``long[]`` and sorts once; an
optimizer rule puts it in place of exactly those two shapes, so the SQL dltrace writes does
not change and gives the same sets without it (``docs/architecture.md``, "Native id sets").

Spark ships the Scala compiler in its own ``jars/`` directory, so the jar is compiled here,
on first use, against the Spark that will load it, and kept under ``~/.cache/dltrace`` (a
few seconds, once per source and Spark version).  Where it cannot be built (no ``java``, a
Spark whose API differs) sessions run without it, and say so in the JVM's log.
``DLTRACE_NATIVE=0`` turns it off; in a running session the SQL conf ``ENABLED`` does.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
import zipfile
from pathlib import Path

SOURCE = Path(__file__).with_name("jvm") / "SortedIds.scala"
EXTENSION = "dltrace.spark.Extensions"
ENABLED = "spark.dltrace.nativeIdSets"  # "false" plans the same SQL with Spark's own collect
BUILD_TIMEOUT = 300


def java_executable() -> str | None:
    """The ``java`` Spark would start (``JAVA_HOME``'s, else the one on the path), or None."""
    home = os.environ.get("JAVA_HOME")
    java = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    return java if java and Path(java).exists() else None


def spark_jars() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent / "jars"


def cache_directory() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "dltrace"


def jar_path() -> Path:
    """Where the jar for this source and this Spark is kept."""
    import pyspark

    digest = hashlib.sha256(SOURCE.read_bytes() + pyspark.__version__.encode()).hexdigest()[:16]
    return cache_directory() / f"dltrace-native-{pyspark.__version__}-{digest}.jar"


def extension_jar(java: str) -> tuple[Path | None, str | None]:
    """``(the jar, None)``, built with ``java`` if it is not there yet, or ``(None, why not)``."""
    if os.environ.get("DLTRACE_NATIVE", "1") == "0":
        return None, "DLTRACE_NATIVE=0"
    target = jar_path()
    if target.exists():
        return target, None
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as scratch:
        classes = Path(scratch) / "classes"
        classes.mkdir()
        command = [java, "-cp", str(spark_jars() / "*"), "scala.tools.nsc.Main", "-usejavacp", "-nowarn",
                   "-d", str(classes), str(SOURCE)]
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=BUILD_TIMEOUT)
        except (OSError, subprocess.TimeoutExpired) as error:
            return None, f"the Scala compiler did not run: {error}"
        if done.returncode != 0:
            return None, f"{SOURCE.name} did not compile: {(done.stdout + done.stderr).strip()[:2000]}"
        built = Path(scratch) / target.name
        with zipfile.ZipFile(built, "w", zipfile.ZIP_DEFLATED) as jar:
            for file in sorted(classes.rglob("*.class")):
                jar.write(file, file.relative_to(classes).as_posix())
        os.replace(built, target)  # whole or not at all, also when two processes build at once
    return target, None


def session_settings(settings: dict[str, str], jar: Path) -> dict[str, str]:
    """``settings`` with the jar on the classpath (driver and executors) and the extension
    loaded, after any jars and extensions already set."""
    def joined(key: str, value: str) -> str:
        return f"{settings[key]},{value}" if settings.get(key) else value

    return {**settings, "spark.jars": joined("spark.jars", str(jar)),
            "spark.sql.extensions": joined("spark.sql.extensions", EXTENSION)}


def main() -> int:
    """``python -m dltrace.udafs.native``: build the jar if needed and print its path (to start a
    Spark Connect server or a cluster with it)."""
    import sys

    jar, why_not = extension_jar(java_executable() or "java")
    if jar is None:
        print(f"dltrace.udafs.native: error: {why_not}", file=sys.stderr)
        return 1
    print(jar)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
