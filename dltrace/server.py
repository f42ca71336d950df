"""A warm Spark for the command line: ``dltrace server start|stop|status`` (README, "A warm
command line").

Every ``dltrace`` command is a new process, and an embedded Spark costs a JVM start (5 to 20
s) before any work.  The server is that JVM kept running: an embedded Spark with dltrace's
settings and its native id-set jar, serving Spark Connect on 127.0.0.1 at a free port.
While it runs, a command without ``--master``, ``SPARK_MASTER`` or ``SPARK_REMOTE`` is its
Connect client (``use_if_running``) and answers in about the time of its Spark work.  It
stops itself after ``--idle-minutes`` without a command and without a running Spark job.

Only this user's commands can use it: it listens on 127.0.0.1 and takes a client only with
the random token in its state, which only this user can read (Spark Connect's pre-shared key;
the token goes to the client in ``SPARK_CONNECT_AUTHENTICATE_TOKEN``, never on a command line).

Its state is a directory (``DLTRACE_SERVER_DIR``, default ``<tmp>/dltrace-<uid>/server``, mode
0700): ``state.json`` (process id, URL, token, the dltrace version and Python it runs), ``used`` (touched
by every command it serves, its mtime the last use), ``server.log`` (the JVM's output) and
``lock`` (one start at a time).  ``DLTRACE_SERVER=off`` keeps commands off the server,
``DLTRACE_SERVER=auto`` starts it on a command's first use.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import secrets
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from dltrace import __version__, spark
from dltrace.errors import BadInput, DltraceError

IDLE_MINUTES = 30.0
START_TIMEOUT = 300  # seconds for the server's JVM to start and serve
STOP_TIMEOUT = 60
HEALTH_SECONDS = 15.0  # for a running server to answer before a command uses it
POLL_SECONDS = 2.0  # how often the server looks at its idleness and a stop request
MODES = ("on", "off", "auto")


class Stopped(DltraceError):
    """The warm server a command ran on stopped under it (killed, out of memory, ``dltrace
    server stop``): not the command's own failure, and running it again is the remedy."""

    def __init__(self, state: dict, error: Exception) -> None:
        first = next((line.strip() for line in str(error).splitlines() if line.strip()), "")
        said = str(error) if isinstance(error, DltraceError) else f"{type(error).__name__}: {first}"
        super().__init__(f"the warm server (pid {state['pid']}) this command ran on stopped during it: run the "
                         f"command again (on its own Spark if no server runs; `dltrace run --resume` completes a "
                         f"job's run): {said}")


def state_dir() -> Path:
    directory = Path(os.environ.get("DLTRACE_SERVER_DIR")
                     or Path(tempfile.gettempdir()) / f"dltrace-{os.getuid()}" / "server")
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    check_private(directory)
    return directory


def check_private(directory: Path) -> None:
    """The state directory must be this user's alone, and its parent must not let others
    swap it: in a shared /tmp, another user could have made it first, and a state of theirs
    would send this user's commands (and the token) to their server."""
    mine = os.getuid()
    found = directory.stat()
    if found.st_uid != mine:
        raise DltraceError(f"{directory} belongs to another user: the server's state must be yours alone "
                           f"(set DLTRACE_SERVER_DIR to a directory of yours)")
    if found.st_mode & 0o077:
        directory.chmod(0o700)
    parent = directory.parent.stat()
    shared = parent.st_mode & 0o022 and not parent.st_mode & stat.S_ISVTX  # others may rename entries in it
    if parent.st_uid not in (0, mine) or shared:
        raise DltraceError(f"{directory.parent} is writable by others: the server's state must be where only you "
                           f"can change it (set DLTRACE_SERVER_DIR to a directory of yours)")


def mode() -> str:
    """``DLTRACE_SERVER``: on (use it when it runs, the default), off, auto (start it too)."""
    value = os.environ.get("DLTRACE_SERVER", "on").strip().lower() or "on"
    if value not in MODES:
        raise BadInput(f"DLTRACE_SERVER={value}: use one of {', '.join(MODES)}")
    return value


def alive(pid: int) -> bool:
    """Whether process ``pid`` runs: not gone, not another user's, and not a zombie (killed,
    its exit not yet collected by a parent that may never collect it, as PID 1 of a container)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process has the id now
        return False
    try:
        status = Path(f"/proc/{pid}/stat").read_text()
    except OSError:  # no /proc (not Linux): signal 0 is all there is to ask
        return True
    return status.rsplit(")", 1)[-1].split()[0] not in ("Z", "X")  # the state follows the command's name


def read_state() -> dict | None:
    """The running server's state, or None; a state its dead process left is removed."""
    path = state_dir() / "state.json"
    try:
        state = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not alive(int(state.get("pid", 0))):
        path.unlink(missing_ok=True)
        return None
    return state


def compatible(state: dict) -> bool:
    """A server of another dltrace or another Python would run other code than this command's."""
    return state.get("version") == __version__ and state.get("python") == sys.executable


def touch_used() -> None:
    (state_dir() / "used").touch()


def last_used(state: dict) -> float:
    """When a command last used the server (its start counts as a use)."""
    try:
        return (state_dir() / "used").stat().st_mtime
    except OSError:
        return state["started"]


@contextmanager
def start_lock() -> Iterator[None]:
    with open(state_dir() / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def start(idle_minutes: float = IDLE_MINUTES, memory: str | None = None) -> tuple[dict, bool]:
    """Start the server unless one runs: (its state, whether this call started it)."""
    if idle_minutes <= 0:
        raise BadInput(f"--idle-minutes {idle_minutes:g}: give a number of minutes above 0")
    with start_lock():
        state = read_state()
        if state is not None:
            return state, False
        directory = state_dir()
        log_path = directory / "server.log"
        command = [sys.executable, "-m", "dltrace.server", "--idle-minutes", str(idle_minutes)]
        if memory:
            command += ["--memory", memory]
        env = {k: v for k, v in os.environ.items() if k not in ("SPARK_REMOTE", "SPARK_API_MODE")}
        with open(log_path, "ab") as log:
            offset = log.tell()
            process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log, stderr=log, cwd=directory,
                                       env=env, start_new_session=True)
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            state = read_state()
            if state is not None and state["pid"] == process.pid:
                return state, True
            if process.poll() is not None:
                raise DltraceError(f"the dltrace server did not start: {last_line(log_path, offset)} "
                                   f"(log: {log_path})")
            time.sleep(0.2)
        stop_process(process.pid)
        raise DltraceError(f"the dltrace server did not start within {START_TIMEOUT} s (log: {log_path})")


def last_line(path: Path, offset: int) -> str:
    """The server's own one-line reason (``dltrace: error: ...``), else the log's last line."""
    with open(path, "rb") as log:
        log.seek(offset)
        lines = [line.strip() for line in log.read().decode(errors="replace").splitlines() if line.strip()]
    reasons = [line.removeprefix("dltrace: error: ") for line in lines if line.startswith("dltrace: error: ")]
    return (reasons or lines or ["it wrote nothing"])[-1]


def stop() -> dict | None:
    """Stop the running server and wait until it has gone; its state, or None when none ran."""
    state = read_state()
    if state is None:
        return None
    stop_process(state["pid"])
    (state_dir() / "state.json").unlink(missing_ok=True)
    return state


def stop_process(pid: int) -> None:
    """SIGTERM (the server stops Spark and exits), then SIGKILL to its process group."""
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + STOP_TIMEOUT
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    if alive(pid):
        try:
            os.killpg(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def use_if_running(master: str | None, say_used: bool = False) -> dict | None:
    """The server's state, its URL set as this command's ``SPARK_REMOTE``, when the command may use
    it: no Spark named (``--master``, ``SPARK_MASTER``, ``SPARK_REMOTE``), ``DLTRACE_SERVER``
    not off, and a server of this dltrace running (started here first under ``auto``), this
    user's and answering (``unusable``).  A server passed over is said on stderr, with why;
    with ``say_used`` (``dltrace run``) the server used is said too."""
    if master or os.environ.get("SPARK_MASTER") or os.environ.get("SPARK_REMOTE"):
        return None
    how = mode()
    if how == "off":
        return None
    state = read_state()
    if state is None and how == "auto":
        print("dltrace: starting a warm Spark server for the next commands "
              f"(it stops after {IDLE_MINUTES:g} idle minutes; `dltrace server stop`)", file=sys.stderr)
        state, _ = start()
    if state is None or not compatible(state):
        return None
    why = unusable(state)
    if why is not None:
        print(f"dltrace: not using the warm server (pid {state['pid']}): {why}; this command starts its own Spark",
              file=sys.stderr)
        return None
    touch_used()
    spark.server_alive = lambda: alive(int(state["pid"]))
    os.environ["SPARK_CONNECT_AUTHENTICATE_TOKEN"] = state["token"]
    os.environ["SPARK_REMOTE"] = state["url"]
    if say_used:
        print(f"dltrace: on the warm server at {state['url']} (pid {state['pid']}; DLTRACE_SERVER=off runs "
              f"without it)", file=sys.stderr)
    return state


def unusable(state: dict) -> str | None:
    """Why the server of ``state`` must not serve this command, or None: its process is not
    this user's, is not a dltrace server (its id reused since), or does not answer a Spark
    Connect request within ``HEALTH_SECONDS`` (a JVM hung, dying or out of memory)."""
    pid = int(state["pid"])
    process = Path(f"/proc/{pid}")
    if process.is_dir():  # Linux; elsewhere the signal check of ``alive`` is what there is
        try:
            owner, command = process.stat().st_uid, (process / "cmdline").read_bytes()
        except OSError:
            return "its process has gone"
        if owner != os.getuid():
            return "its process is another user's"
        if b"dltrace.server" not in command:
            return "its process id belongs to another program now"
    return None if answers(state["url"], state["token"]) else \
        f"it did not answer within {HEALTH_SECONDS:g} s (`dltrace server stop` ends it)"


def answers(url: str, token: str) -> bool:
    """Whether the Connect server at ``url`` tells its Spark version within
    ``HEALTH_SECONDS``: one call of the server's own, past its port and its token check."""
    import uuid

    import grpc
    from pyspark.sql.connect.client import DefaultChannelBuilder
    from pyspark.sql.connect.proto import base_pb2, base_pb2_grpc

    channel = DefaultChannelBuilder(f"{url}/;token={token}").toChannel()  # as the client's, token included
    request = base_pb2.AnalyzePlanRequest(session_id=str(uuid.uuid4()),
                                          spark_version=base_pb2.AnalyzePlanRequest.SparkVersion())
    request.user_context.user_id = "dltrace"
    try:
        base_pb2_grpc.SparkConnectServiceStub(channel).AnalyzePlan(request, timeout=HEALTH_SECONDS)
    except grpc.RpcError:
        return False
    finally:
        channel.close()
    return True


def serve(idle_minutes: float, memory: str | None) -> int:
    """The server process: an embedded Spark serving Connect until SIGTERM or idleness."""
    stopping = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopping.set())
    signal.signal(signal.SIGINT, lambda *_: stopping.set())
    settings = {**spark.DEFAULT_CONF, **({"spark.driver.memory": memory} if memory else {})}
    token = secrets.token_urlsafe(32)
    try:
        classic = spark._embedded("local[*]", settings)
        port = spark.serve_connect(classic, token).rsplit(":", 1)[1]
    except DltraceError as error:
        print(f"dltrace: error: {error}", file=sys.stderr, flush=True)
        return error.exit_code
    touch_used()
    started = time.time()
    url = f"sc://localhost:{port}"  # the client's token goes over gRPC's local credentials there
    state = {"pid": os.getpid(), "url": url, "token": token, "started": started, "idle_minutes": idle_minutes,
             "version": __version__, "python": sys.executable, "memory": settings["spark.driver.memory"]}
    path = state_dir() / "state.json"
    written = path.with_name(f".state-{os.getpid()}.json")
    with os.fdopen(os.open(written, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as file:
        file.write(json.dumps(state))
    os.replace(written, path)  # readers see the whole state or none
    print(f"dltrace server: serving Spark Connect at {url} (pid {os.getpid()})", file=sys.stderr, flush=True)
    tracker = classic.sparkContext.statusTracker()
    try:
        while not stopping.wait(POLL_SECONDS):
            if tracker.getActiveJobsIds():
                touch_used()  # a long job is use, however long ago its command started
            elif time.time() - last_used(state) > idle_minutes * 60:
                print(f"dltrace server: idle for {idle_minutes:g} minutes, stopping", file=sys.stderr, flush=True)
                break
    finally:
        if read_state() == state:
            path.unlink(missing_ok=True)
        classic.stop()
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m dltrace.server", description="the warm Spark server's process")
    parser.add_argument("--idle-minutes", type=float, default=IDLE_MINUTES)
    parser.add_argument("--memory")
    args = parser.parse_args(argv)
    return serve(args.idle_minutes, args.memory)


if __name__ == "__main__":
    sys.exit(main())
