"""The warm command line (dltrace/server.py): a real ``dltrace server`` (an embedded Spark
serving Connect on 127.0.0.1), started, used and stopped through the CLI as a user does, in
a state directory of the test's own.

That a command used the server, and started no JVM, is shown by running it where no Java
can be found (``JAVA_HOME`` naming nothing): cold, that command fails with "Java not
found"; warm, it gives the embedded run's output.  Idleness is made, not waited for: the
``used`` file's time is set an hour back and the server must stop at its next look.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from dltrace import __version__, server
from dltrace.cli import main
from dltrace.errors import DltraceError
from tests.test_cluster import COMMANDS, environment

pytestmark = pytest.mark.spark
NO_JAVA = {"JAVA_HOME": "/nonexistent-java"}


def dltrace(*args: str, env: dict[str, str], cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dltrace", *args], capture_output=True, text=True, env=env, cwd=cwd,
                          timeout=600)


def wait_until_gone(pid: int, seconds: float = 120) -> bool:
    deadline = time.monotonic() + seconds
    while server.alive(pid) and time.monotonic() < deadline:
        time.sleep(0.5)
    return not server.alive(pid)


@pytest.fixture(scope="module")
def warm(tmp_path_factory):
    """A running server's environment (``DLTRACE_SERVER_DIR``), stopped by its process id at the end."""
    env = environment(DLTRACE_SERVER_DIR=str(tmp_path_factory.mktemp("server")), DLTRACE_SERVER="on")
    started = dltrace("server", "start", "--memory", "1g", env=env)
    assert started.returncode == 0 and started.stdout.startswith("started Spark Connect at sc://localhost:"), \
        started.stderr
    state = json.loads((Path(env["DLTRACE_SERVER_DIR"]) / "state.json").read_text())
    yield env
    server.stop_process(state["pid"])


def test_start_status_stop(tmp_path_factory) -> None:
    env = environment(DLTRACE_SERVER_DIR=str(tmp_path_factory.mktemp("lifecycle")))
    assert dltrace("server", "status", env=env).stdout.startswith("not running")
    first = dltrace("server", "start", "--memory", "1g", "--idle-minutes", "5", env=env)
    assert first.returncode == 0, first.stderr
    again = dltrace("server", "start", env=env)
    assert again.stdout.startswith("already running: Spark Connect at sc://localhost:")
    status = dltrace("server", "status", env=env).stdout
    assert "stops after 5 idle minutes" in status and f"log: {env['DLTRACE_SERVER_DIR']}" in status
    pid = json.loads((Path(env["DLTRACE_SERVER_DIR"]) / "state.json").read_text())["pid"]
    stopped = dltrace("server", "stop", env=env)
    assert stopped.stdout.strip() == f"stopped the server (pid {pid})" and not server.alive(pid)
    assert dltrace("server", "stop", env=env).stdout.strip() == "no server was running"
    assert not (Path(env["DLTRACE_SERVER_DIR"]) / "state.json").exists()


def test_commands_use_the_running_server(warm, spark, tmp_path, capsys, monkeypatch) -> None:
    """The README's tour on the warm server, with no Java to start: the embedded run's output."""
    through, embedded = tmp_path / "warm", tmp_path / "embedded"
    through.mkdir()
    embedded.mkdir()
    monkeypatch.delenv("DLTRACE_CATALOG", raising=False)
    used = Path(warm["DLTRACE_SERVER_DIR"]) / "used"
    for args in COMMANDS:
        before = used.stat().st_mtime
        time.sleep(0.01)
        done = dltrace(*args, env={**warm, **NO_JAVA}, cwd=through)
        assert done.returncode == 0, done.stderr
        assert used.stat().st_mtime > before
        monkeypatch.chdir(embedded)
        assert main(args) == 0
        expected = capsys.readouterr()
        assert sorted(done.stdout.splitlines()) == sorted(expected.out.splitlines()) and expected.out.strip()
        assert done.stderr == expected.err
    cold = dltrace(*COMMANDS[-1], env={**warm, **NO_JAVA, "DLTRACE_SERVER": "off"}, cwd=through)
    assert cold.returncode == 1 and cold.stderr.startswith("dltrace: error: Java not found"), cold.stderr
    chosen = dltrace(*COMMANDS[-1], "--master", "local[1]", env={**warm, **NO_JAVA}, cwd=through)
    assert chosen.returncode == 1 and "Java not found" in chosen.stderr  # --master names another Spark


def test_only_a_client_with_its_token_is_served(warm, tmp_path) -> None:
    """Another local user's process knows the port, not the token (in a file only we read)."""
    directory = Path(warm["DLTRACE_SERVER_DIR"])
    state = json.loads((directory / "state.json").read_text())
    assert (directory / "state.json").stat().st_mode & 0o077 == 0 and directory.stat().st_mode & 0o077 == 0
    for token in ({}, {"SPARK_CONNECT_AUTHENTICATE_TOKEN": "guessed"}):
        done = dltrace("sql", "select 1 as one", env={**warm, **NO_JAVA, "SPARK_REMOTE": state["url"], **token},
                       cwd=tmp_path)
        assert done.returncode == 1 and len(done.stderr.splitlines()) == 1, done.stderr
        assert "the Connect server refused the call: UNAUTHENTICATED" in done.stderr


def test_auto_starts_it_and_idleness_stops_it(tmp_path_factory) -> None:
    env = environment(DLTRACE_SERVER_DIR=str(tmp_path_factory.mktemp("auto")), DLTRACE_SERVER="auto",
                      SPARK_DRIVER_MEMORY="1g")
    catalog = str(tmp_path_factory.mktemp("auto-catalog"))
    done = dltrace("results", "--catalog", catalog, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stderr.startswith("dltrace: starting a warm Spark server for the next commands")
    directory = Path(env["DLTRACE_SERVER_DIR"])
    pid = json.loads((directory / "state.json").read_text())["pid"]
    assert server.alive(pid)
    again = dltrace("results", "--catalog", catalog, env={**env, **NO_JAVA})
    assert again.returncode == 0 and again.stderr == "", again.stderr
    hour_ago = time.time() - 3600
    os.utime(directory / "used", (hour_ago, hour_ago))
    assert wait_until_gone(pid), "the server did not stop when idle"
    assert not (directory / "state.json").exists()
    assert "idle for 30 minutes, stopping" in (directory / "server.log").read_text()


def test_a_server_of_another_dltrace_is_not_used(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("DLTRACE_SERVER_DIR", str(tmp_path))
    monkeypatch.setenv("DLTRACE_SERVER", "on")
    for name in ("SPARK_REMOTE", "SPARK_MASTER", "SPARK_CONNECT_AUTHENTICATE_TOKEN"):
        monkeypatch.setenv(name, "")  # recorded as unset first, so what use_if_running sets is undone
        monkeypatch.delenv(name)
    state = {"pid": os.getpid(), "url": "sc://localhost:1", "token": "t", "started": time.time(), "idle_minutes": 30,
             "version": "0.0.0", "python": sys.executable}
    (tmp_path / "state.json").write_text(json.dumps(state))
    assert server.use_if_running(None) is None and "SPARK_REMOTE" not in os.environ
    status = dltrace("server", "status", env=os.environ.copy()).stdout
    assert f"not used by this dltrace: it runs dltrace 0.0.0 with {sys.executable}" in status
    (tmp_path / "state.json").write_text(json.dumps({**state, "version": __version__}))
    assert server.use_if_running("local[1]") is None  # --master chooses another Spark


def test_a_server_not_its_own_or_not_answering_is_passed_over_and_said(tmp_path, monkeypatch, capsys) -> None:
    """The state names a process of another program (its id reused), or a dltrace server
    that holds its port and never answers (a hung JVM): the command runs on its own Spark,
    saying why in one line."""
    monkeypatch.setenv("DLTRACE_SERVER_DIR", str(tmp_path))
    monkeypatch.setenv("DLTRACE_SERVER", "on")
    monkeypatch.setattr(server, "HEALTH_SECONDS", 1.0)
    for name in ("SPARK_REMOTE", "SPARK_MASTER"):
        monkeypatch.delenv(name, raising=False)
    state = {"pid": os.getpid(), "url": "sc://localhost:1", "token": "t", "started": time.time(), "idle_minutes": 30,
             "version": __version__, "python": sys.executable}
    (tmp_path / "state.json").write_text(json.dumps(state))
    assert server.use_if_running(None) is None and "SPARK_REMOTE" not in os.environ
    assert capsys.readouterr().err == (f"dltrace: not using the warm server (pid {os.getpid()}): its process id "
                                       f"belongs to another program now; this command starts its own Spark\n")
    hung = subprocess.Popen([sys.executable, "-c", "import socket, sys, time; s = socket.socket(); "
                             "s.bind(('127.0.0.1', 0)); s.listen(); print(s.getsockname()[1], flush=True); "
                             "time.sleep(600)", "dltrace.server"], stdout=subprocess.PIPE, text=True)
    try:
        port = int(hung.stdout.readline())
        (tmp_path / "state.json").write_text(json.dumps({**state, "pid": hung.pid, "url": f"sc://localhost:{port}"}))
        assert server.use_if_running(None) is None and "SPARK_REMOTE" not in os.environ
        assert capsys.readouterr().err == (f"dltrace: not using the warm server (pid {hung.pid}): it did not answer "
                                           f"within 1 s (`dltrace server stop` ends it); this command starts its "
                                           f"own Spark\n")
    finally:
        hung.kill()
        hung.wait()


def test_a_job_says_its_server_and_one_dying_under_it_is_said_then_resumed(tmp_path_factory, spark) -> None:
    """``dltrace run`` says it runs on the warm server; the job kills the server after its
    first write (the point is the script's own line, not a time): the failure says the
    server stopped under the run and what the run wrote, and ``--resume`` on the command's
    own Spark completes it, the first write skipped."""
    work = tmp_path_factory.mktemp("dying")
    env = environment(DLTRACE_SERVER_DIR=str(work / "server"), DLTRACE_SERVER="on")
    assert dltrace("server", "start", "--memory", "1g", env=env).returncode == 0
    state = json.loads((work / "server" / "state.json").read_text())
    spark.range(5).write.mode("overwrite").parquet(str(work / "numbers"))
    (work / "job.py").write_text(textwrap.dedent(f"""
        import json, os, signal, sys
        from pyspark.sql import SparkSession
        spark = SparkSession.builder.getOrCreate()
        numbers = spark.read.parquet("{work}/numbers")
        numbers.where("id > 1").write.mode("overwrite").parquet("{work}/out/big")
        if "--kill" in sys.argv:
            os.kill(json.load(open("{work}/server/state.json"))["pid"], signal.SIGKILL)
        numbers.where("id < 2").write.mode("overwrite").parquet("{work}/out/small")
    """))
    try:
        died = dltrace("run", "job.py", "--", "--kill", env=env, cwd=work)
    finally:
        server.stop_process(state["pid"])
    said = died.stderr.splitlines()
    assert died.returncode == 1 and said[0] == f"dltrace: on the warm server at {state['url']} (pid {state['pid']}; " \
        "DLTRACE_SERVER=off runs without it)", died.stderr
    assert said[-1].startswith(f"dltrace: error: the warm server (pid {state['pid']}) this command ran on stopped "
                               f"during it: run the command again"), died.stderr
    assert f"this run wrote {work}/out/big before it" in said[-1]
    resumed = dltrace("run", "job.py", "--resume", env=env, cwd=work)
    assert resumed.returncode == 0 and "on the warm server" not in resumed.stderr, resumed.stderr
    assert "saved result big: saved before, skipped" in resumed.stderr, resumed.stderr
    assert sorted(spark.read.parquet(str(work / "out" / "small")).toPandas()["id"]) == [0, 1]


def test_a_dead_servers_state_is_dropped(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("DLTRACE_SERVER_DIR", str(tmp_path))
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    (tmp_path / "state.json").write_text(json.dumps({"pid": int(gone.stdout), "url": "sc://127.0.0.1:1"}))
    assert server.read_state() is None and not (tmp_path / "state.json").exists()


def test_the_state_directory_is_private(tmp_path, monkeypatch) -> None:
    """Another user's directory, or one in a parent others may rename in, is refused."""
    directory = tmp_path / "mine"
    monkeypatch.setenv("DLTRACE_SERVER_DIR", str(directory))
    directory.mkdir(mode=0o777)
    directory.chmod(0o777)
    server.state_dir()
    assert directory.stat().st_mode & 0o777 == 0o700  # made private again
    tmp_path.chmod(0o777)  # writable by others, no sticky bit
    with pytest.raises(DltraceError, match="is writable by others"):
        server.state_dir()
    tmp_path.chmod(0o1777)  # as /tmp: others cannot rename what is not theirs
    server.state_dir()
    tmp_path.chmod(0o700)
    if os.getuid() == 0:  # only root can give a directory to another user
        os.chown(directory, 12345, 12345)
        with pytest.raises(DltraceError, match="belongs to another user"):
            server.state_dir()


@pytest.mark.parametrize(("args", "env", "line"), [
    (["server", "start", "--idle-minutes", "0"], {}, "dltrace: error: --idle-minutes 0: give a number of minutes"),
    (["results"], {"DLTRACE_SERVER": "sometimes"}, "dltrace: error: DLTRACE_SERVER=sometimes: use one of on, off"),
    (["server", "start"], NO_JAVA, "dltrace: error: the dltrace server did not start: Java not found"),
])
def test_bad_input_is_one_line(args, env, line, tmp_path) -> None:
    done = dltrace(*args, env=environment(DLTRACE_SERVER_DIR=str(tmp_path), **env), cwd=tmp_path)
    assert done.returncode == (1 if "did not start" in line else 2), done.stderr
    assert len(done.stderr.splitlines()) == 1 and done.stderr.startswith(line), done.stderr
