"""``dltrace ui`` as a user runs it, without a JVM: it prints its URL and serves the pipeline
view (catalog files only); another address needs the token the URL carries; bad options are
one line with exit status 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

pytest.importorskip("starlette", reason="dltrace[ui] is not installed (pip install 'dltrace[ui]')")
pytest.importorskip("uvicorn", reason="dltrace[ui] is not installed (pip install 'dltrace[ui]')")

from tests.conftest import free_port, stop_process_group

# Spark, which the explorer starts in the background, must fail at once here: no JVM
NO_JAVA = {**os.environ, "JAVA_HOME": "/nonexistent/no-jvm-for-this-test", "SPARK_REMOTE": ""}


@pytest.fixture
def catalog(tmp_path) -> Path:
    directory = tmp_path / "catalog"
    directory.mkdir()
    (directory / "catalog.json").write_text(json.dumps({"version": 1, "tables": {}}))
    return directory


def dltrace(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dltrace", "ui", *args], capture_output=True, text=True, env=NO_JAVA,
                          timeout=120)


@pytest.mark.parametrize("args, says", [
    (["--catalog", "/nonexistent/catalog"], "no catalog at /nonexistent/catalog"),
    (["--port", "70000"], "--port must be between 0 and 65535"),
    (["--token", " "], "--token must not be empty"),
])
def test_bad_options_are_one_line_and_exit_2(catalog, args, says):
    done = dltrace("--catalog", str(catalog), *args) if args[0] != "--catalog" else dltrace(*args)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and says in done.stderr and "Traceback" not in done.stderr


def test_a_port_in_use_is_one_line(catalog):
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        done = dltrace("--catalog", str(catalog), "--port", str(taken.getsockname()[1]))
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "cannot listen on 127.0.0.1" in done.stderr


def serving(catalog: Path, *args: str) -> tuple[subprocess.Popen, str]:
    """``dltrace ui`` started in a process group of its own, and the URL it printed."""
    server = subprocess.Popen([sys.executable, "-m", "dltrace", "ui", "--catalog", str(catalog), *args],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=NO_JAVA,
                              start_new_session=True)
    line = server.stdout.readline()
    assert " at http://" in line, line + server.stderr.read()
    return server, line.split(" at ", 1)[1].strip()


def fetch(url: str, **headers: str) -> tuple[int, dict]:
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_it_prints_its_url_and_serves_the_pipeline_on_loopback(catalog):
    server, url = serving(catalog, "--port", str(free_port()))
    try:
        assert url.startswith("http://127.0.0.1:") and "token" not in url
        status, graph = fetch(url + "api/pipeline")
        assert status == 200 and graph["nodes"] == [] and graph["catalog"] == str(catalog)
        # a DNS name pointed at 127.0.0.1 by someone else's page is not answered
        assert fetch(url + "api/pipeline", Host="attacker.example")[0] == 400
    finally:
        stop_process_group(server)


def test_another_address_needs_the_token_its_url_carries(catalog):
    server, url = serving(catalog, "--host", "0.0.0.0", "--port", "0")
    try:
        assert "?token=" in url
        base, token = url.split("?token=")
        local = base.replace("0.0.0.0", "127.0.0.1")
        status, body = fetch(local + "api/pipeline")
        assert status == 401 and "token" in body["error"]
        assert fetch(local + "api/pipeline", **{"X-Dltrace-Token": token})[0] == 200
        assert fetch(f"{local}api/pipeline?token={token}")[0] == 200
    finally:
        stop_process_group(server)
