"""Spark's progress on a terminal (dltrace/progress.py): ``dltrace`` run with its stderr on a
real pseudo-terminal shows it, ``--quiet`` silences it, and a stderr that is not a terminal
gets nothing extra."""

from __future__ import annotations

import os
import pty
import re
import subprocess
import sys
from pathlib import Path

import pytest

from dltrace.cli import main
from tests.conftest import stop_process_group

pytestmark = pytest.mark.spark

DLTRACE = str(Path(sys.executable).parent / "dltrace")
QUERY = "select o_orderpriority, count(*) as n from orders group by o_orderpriority"
SUMMARY = re.compile(r"dltrace: \d+ Spark (jobs|Connect operations) in \d+\.\d s")


def on_a_terminal(argv: list[str], env: dict[str, str] | None = None) -> tuple[int, str, str]:
    """(exit status, stdout, what the terminal showed on stderr) of ``dltrace argv``."""
    controller, terminal = pty.openpty()
    process = subprocess.Popen([DLTRACE, *argv], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=terminal,
                               env={**os.environ, **(env or {})}, start_new_session=True)
    os.close(terminal)
    shown = b""
    try:
        while True:
            try:
                chunk = os.read(controller, 65536)
            except OSError:  # EIO: the process closed the terminal
                break
            if not chunk:
                break
            shown += chunk
        stdout = process.stdout.read().decode()
        process.wait(600)
    finally:
        os.close(controller)
        stop_process_group(process)
    return process.returncode, stdout, shown.decode(errors="replace")


def test_progress_on_a_terminal(tpch) -> None:
    catalog = str(tpch.catalog.directory)
    code, stdout, shown = on_a_terminal(["sql", QUERY, "--catalog", catalog])
    assert code == 0 and "1-URGENT" in stdout
    assert SUMMARY.search(shown), shown
    assert "Traceback" not in shown
    code, stdout, shown = on_a_terminal(["sql", QUERY, "--catalog", catalog, "--quiet"])
    assert code == 0 and "1-URGENT" in stdout
    assert shown.strip() == "", shown


def test_verbose_shows_sparks_warnings(tpch) -> None:
    """A window without PARTITION BY makes Spark warn (all rows in one partition): shown with
    --verbose, in the JVM's log file only without it."""
    window = "select o_orderkey, row_number() over (order by o_orderkey) as rn from orders"
    catalog = str(tpch.catalog.directory)
    warning = "No Partition Defined for Window operation"
    code, stdout, shown = on_a_terminal(["sql", window, "--catalog", catalog, "--verbose"])
    assert code == 0 and stdout.strip(), shown
    assert re.search(rf"^spark: .*WARN.*{warning}", shown, re.MULTILINE), shown
    code, stdout, shown = on_a_terminal(["sql", window, "--catalog", catalog])
    assert code == 0 and warning not in shown, shown


def test_nothing_extra_when_stderr_is_not_a_terminal(tpch, capsys) -> None:
    assert main(["sql", QUERY, "--catalog", str(tpch.catalog.directory)]) == 0
    captured = capsys.readouterr()
    assert "1-URGENT" in captured.out and captured.err == ""


@pytest.mark.heavy
def test_progress_of_a_connect_session(tpch, connect_server) -> None:
    code, stdout, shown = on_a_terminal(["sql", QUERY, "--catalog", str(tpch.catalog.directory)],
                                        {"SPARK_REMOTE": connect_server})
    assert code == 0 and "1-URGENT" in stdout
    assert SUMMARY.search(shown), shown
