"""dltrace's native DLUNION for the JVM: ``jvm/SortedIds.scala``, built once per Spark version.

The rewriter writes a group's lineage set as ``sort_array(collect_list(id))`` (or
``collect_set`` where a row can be met twice).  Spark collects those ids as boxed objects and
sorts them afterwards.  ``SortedIds`` collects them into a ``long[]`` and sorts once; an
optimizer rule puts it in place of those collects wherever their order cannot show (inside
an ascending ``sort_array``), so the SQL dltrace writes does not change and gives the same
sets without it (``docs/architecture.md``, "Native id sets").

Spark ships the Scala compiler in its own ``jars/`` directory, so the jar is compiled here,
on first use, against the jars of the Spark a session here starts (``SPARK_HOME``'s, else
pyspark's), and kept under ``~/.cache/dltrace`` (compiled once per source and Spark).
A jar is touched when a session takes it; building one removes those (and failed builds'
reasons) untouched for ``UNUSED_DAYS``, which other sources or Sparks left behind.
Where it cannot be built (no ``java``, a Spark whose API differs) sessions run without it,
and say so in the JVM's log; a failed build is not tried again until the source or Spark
changes.
``DLTRACE_NATIVE=0`` turns it off; in a running session the SQL conf ``ENABLED`` does.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import subprocess
import tempfile
import time
import zipfile
from pathlib import Path

SOURCE = Path(__file__).with_name("jvm") / "SortedIds.scala"
EXTENSION = "dltrace.spark.Extensions"
ENABLED = "spark.dltrace.nativeIdSets"  # "false" plans the same SQL with Spark's own collect
BUILD_TIMEOUT = 300
UNUSED_DAYS = 30


def java_executable() -> str | None:
    """The ``java`` Spark would start (``JAVA_HOME``'s, else the one on the path), or None."""
    home = os.environ.get("JAVA_HOME")
    java = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    return java if java and Path(java).exists() else None


def spark_jars() -> Path:
    """The jars of the Spark a session here starts: ``SPARK_HOME``'s, else pyspark's own."""
    from pyspark.find_spark_home import _find_spark_home

    return Path(_find_spark_home()) / "jars"


def cache_directory() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "dltrace"


def jar_path() -> Path:
    """Where the jar for this source and these Spark jars is kept."""
    jars = spark_jars()
    catalyst = sorted(p.name for p in jars.glob("spark-catalyst_*.jar"))  # names Spark's version
    digest = hashlib.sha256(SOURCE.read_bytes() + str([str(jars), *catalyst]).encode()).hexdigest()[:16]
    return cache_directory() / f"dltrace-native-{digest}.jar"


def extension_jar(java: str | None) -> tuple[Path | None, str | None]:
    """``(the jar, None)``, built with ``java`` if it is not there yet, or ``(None, why not)``.
    A build that failed is not tried again (its reason is kept beside where the jar would be)."""
    if os.environ.get("DLTRACE_NATIVE", "1") == "0":
        return None, "DLTRACE_NATIVE=0"
    if java is None:
        return None, "no java to run the Scala compiler"
    try:
        target = jar_path()
        failed = target.with_suffix(".failed")
        if target.exists():
            with contextlib.suppress(OSError):  # a read-only cache still serves its jars
                os.utime(target)  # in use: not pruned (prune_unused)
            return target, None
        if failed.exists():
            return None, failed.read_text(errors="replace")
        jar, why_not = _build(java, target)
        if jar is None:
            failed.write_text(why_not)
        prune_unused(target.parent, keep=(target, failed))
        return jar, why_not
    except (OSError, RuntimeError) as error:  # a cache that cannot be written, no home directory
        return None, f"cannot build the jar: {error}"


def prune_unused(directory: Path, keep: tuple[Path, ...], days: float = UNUSED_DAYS) -> None:
    """Remove the jars and failed builds' reasons in ``directory`` untouched for ``days``
    (another process pruning at once, or files not ours to remove, are left alone)."""
    oldest = time.time() - days * 86400
    for file in [*directory.glob("dltrace-native-*.jar"), *directory.glob("dltrace-native-*.failed")]:
        with contextlib.suppress(OSError):
            if file not in keep and file.stat().st_mtime < oldest:
                file.unlink()


def _build(java: str, target: Path) -> tuple[Path | None, str | None]:
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as scratch:
        classes = Path(scratch) / "classes"
        classes.mkdir()
        command = [java, "-cp", str(spark_jars() / "*"), "scala.tools.nsc.Main", "-usejavacp", "-nowarn",
                   "-d", str(classes), str(SOURCE)]
        try:
            done = subprocess.run(command, capture_output=True, text=True, errors="replace", timeout=BUILD_TIMEOUT)
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

    jar, why_not = extension_jar(java_executable())
    if jar is None:
        print(f"dltrace.udafs.native: error: {why_not}", file=sys.stderr)
        return 1
    print(jar)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
