"""The README is executable: its examples run against the demo data and must print what
the README says they print, so that the README cannot drift from the code.

Which blocks run:

* ```` ```console ```` blocks are shell sessions: ``$ `` starts a command (``> `` continues
  it), the lines up to the next command are its expected output (stdout, then stderr).
  Commands are ``dltrace ...`` (run in-process through ``main()``), optionally ending in
  ``> FILE``, or ``python -m dltrace.examples.shop_data DIR``; comments (``# ...``) are ignored.
* ```` ```pycon ```` blocks are Python sessions (``>>> ``, ``... ``), checked like doctests.
* Other blocks (``sh``, ``python``, ``sql``, ...) are illustrations and do not run.

Expected output may use ``...`` for any text (doctest's ELLIPSIS), and whitespace runs
compare equal.  A block that needs SF 1 data or runs long is marked on the line before its
fence with ``<!-- readme-test: skip REASON -->``.  Blocks run in README order in one
working directory, as after ``make demo``: ``data/`` (TPC-H SF 0.01), ``tpch/`` (the
queries), ``.dltrace`` (every TPC-H table registered as the demo does), and share one Python
namespace, so a later block may use what an earlier one made.
"""

from __future__ import annotations

import contextlib
import doctest
import io
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from dltrace.cli import main
from dltrace.spark import CONNECT_API

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```\s*$", re.MULTILINE | re.DOTALL)
SKIP = re.compile(r"<!--\s*readme-test:\s*skip\s*(.*?)\s*-->\s*$")
RUN = {"console", "pycon"}
CHECKER = doctest.OutputChecker()
OPTIONS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


@dataclass
class Block:
    language: str
    text: str
    line: int  # of the opening fence
    skip: str | None

    @property
    def id(self) -> str:
        return f"line{self.line}-{self.language}"


def blocks(markdown: str) -> list[Block]:
    """The README's runnable blocks, with their skip markers."""
    found = []
    for match in FENCE.finditer(markdown):
        if match.group(1) not in RUN:
            continue
        before = markdown[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        skip = SKIP.search(before)
        found.append(Block(match.group(1), match.group(2), markdown.count("\n", 0, match.start()) + 1,
                           skip.group(1) or "marked" if skip else None))
    return found


def commands(block: str) -> list[tuple[str, str]]:
    """``(command, expected output)`` pairs of a console block."""
    pairs: list[tuple[str, list[str]]] = []
    for line in block.splitlines():
        if line.startswith("$ "):
            pairs.append((line[2:], []))
        elif line.startswith("> ") and pairs and not pairs[-1][1]:
            pairs[-1] = (pairs[-1][0] + "\n" + line[2:], [])
        elif pairs:
            pairs[-1][1].append(line)
        elif line.strip():
            raise ValueError(f"a console block starts with a command ($ ...), not {line!r}")
    return [(command, "\n".join(expected).strip() + "\n") for command, expected in pairs]


def run_command(command: str) -> str:
    """One ``dltrace ...`` command line, as a shell would split it; its stdout and stderr."""
    words = shlex.split(command, comments=True)
    target = None
    if len(words) >= 2 and words[-2] == ">":
        words, target = words[:-2], words[-1]
    if words[:3] == ["python", "-m", "dltrace.examples.shop_data"]:  # the shop job's files
        done = subprocess.run([sys.executable, *words[1:]], capture_output=True, text=True, check=True)
        return done.stdout
    if not words or words[0] != "dltrace":
        raise ValueError(f"README commands run here are dltrace commands, not {command!r}: "
                         "mark the block <!-- readme-test: skip REASON -->")
    if words[1:2] == ["run"] and any(word.endswith(".py") for word in words[2:]):
        return run_job(words)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(words[1:])
    if target:
        Path(target).write_text(out.getvalue())
        out = io.StringIO()
    assert code == 0, f"{command!r} exited with {code}: {err.getvalue()}"
    return out.getvalue() + err.getvalue()


def run_job(words: list[str]) -> str:
    """``dltrace run job.py`` in a process of its own: a PySpark job runs Spark in Connect mode,
    which a process whose Spark started classic cannot switch to.  Its stdout and its
    ``dltrace:`` lines on stderr (Spark's own warnings aside)."""
    env = {k: v for k, v in os.environ.items() if k not in CONNECT_API}
    done = subprocess.run([sys.executable, "-m", "dltrace", *words[1:]], capture_output=True, text=True, env=env,
                          timeout=900)
    assert done.returncode == 0, f"{' '.join(words)} exited with {done.returncode}: {done.stderr}"
    return done.stdout + "".join(line + "\n" for line in done.stderr.splitlines() if line.startswith("dltrace"))


def check_console(block: Block) -> None:
    for command, expected in commands(block.text):
        got = run_command(command)
        if not CHECKER.check_output(expected, got, OPTIONS):
            raise AssertionError(
                f"README line {block.line}: `{command}` printed\n{got}\nbut the README says\n{expected}"
            )


def check_pycon(block: Block, namespace: dict) -> None:
    test = doctest.DocTestParser().get_doctest(
        block.text, namespace, f"README line {block.line}", str(README), block.line
    )
    runner = doctest.DocTestRunner(optionflags=OPTIONS)
    report = io.StringIO()
    result = runner.run(test, out=report.write, clear_globs=False)
    namespace.update(test.globs)
    assert result.failed == 0, report.getvalue()


BLOCKS = blocks(README.read_text())


@pytest.fixture(scope="module")
def workdir(tpch, tmp_path_factory) -> Path:
    """As after ``make demo``: the data, the queries, the catalog with every table."""
    home = tmp_path_factory.mktemp("readme")
    (home / "data").symlink_to(ROOT / "data")
    (home / "tpch").symlink_to(ROOT / "tpch")
    (home / "dltrace").symlink_to(ROOT / "dltrace")  # its examples (a PySpark job)
    shutil.copytree(tpch.catalog.directory, home / ".dltrace", ignore=shutil.ignore_patterns("indexes", "results"))
    return home


@pytest.fixture(scope="module")
def namespace() -> dict:
    return {}


def test_the_readme_has_runnable_examples():
    assert sum(b.skip is None for b in BLOCKS) >= 4 and {b.language for b in BLOCKS} == RUN


@pytest.mark.parametrize("block", BLOCKS, ids=[b.id for b in BLOCKS])
def test_readme_example(block, workdir, namespace, monkeypatch):
    if block.skip:
        pytest.skip(block.skip)
    monkeypatch.chdir(workdir)
    monkeypatch.delenv("DLTRACE_CATALOG", raising=False)
    if block.language == "console":
        check_console(block)
    else:
        check_pycon(block, namespace)


def test_console_blocks_are_parsed_as_written():
    block = "$ dltrace sql \"select 1\n> as x\" --format json\n{\"x\": 1, ...}\n$ dltrace results\n"
    assert commands(block) == [
        ('dltrace sql "select 1\nas x" --format json', '{"x": 1, ...}\n'),
        ("dltrace results", "\n"),
    ]
    assert blocks("<!-- readme-test: skip needs SF 1 -->\n```console\n$ dltrace x\n```\n")[0].skip == "needs SF 1"
    assert not CHECKER.check_output("(3 rows)\n", "(4 rows)\n", OPTIONS)
