"""The wheel ships the library alone: no test or benchmark modules in ``dltrace/``, and no
import there of what only the tests and benchmarks install (pyeda, matplotlib).

The wheel is built from a clean copy of the sources (an in-tree build keeps a ``build/``
directory whose stale files a later wheel would ship too).
"""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ("pyproject.toml", "README.md", "dltrace", "tpch", "tpcds", "walmart")
DEV_ONLY = {"pyeda", "matplotlib", "pytest", "hypothesis"}  # dev extras: the tests' and benchmarks'


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> zipfile.ZipFile:
    source, out = tmp_path_factory.mktemp("source"), tmp_path_factory.mktemp("wheel")
    for name in SOURCES:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, source / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy(ROOT / name, source / name)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
                    "-w", str(out), str(source)], check=True, capture_output=True)
    (built,) = out.glob("dltrace-*.whl")
    return zipfile.ZipFile(built)


def library_modules(wheel: zipfile.ZipFile) -> list[str]:
    return sorted(name for name in wheel.namelist() if name.startswith("dltrace/") and name.endswith(".py"))


def imported_roots(text: str) -> set[str]:
    roots = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            roots.add(node.module.split(".")[0])
    return roots


@pytest.mark.slow
def test_the_wheel_ships_every_library_module_and_no_test_or_benchmark(wheel):
    shipped = library_modules(wheel)
    in_repository = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "dltrace").rglob("*.py"))
    assert shipped == in_repository and "dltrace/session.py" in shipped
    assert not [name for name in shipped if any(part in Path(name).name for part in ("test", "bench", "pyeda"))]
    assert not [name for name in wheel.namelist() if name.startswith(("tests/", "dltrace/tests/"))]


@pytest.mark.slow
def test_the_library_in_the_wheel_imports_no_dev_only_package(wheel):
    found = {name: sorted(imported_roots(wheel.read(name).decode()) & DEV_ONLY) for name in library_modules(wheel)}
    assert not {name: roots for name, roots in found.items() if roots}


def test_imports_are_read_at_any_depth():
    text = "import os\ndef f():\n    from pyeda.boolalg import bdd\n    import matplotlib.pyplot as plt\n"
    assert imported_roots(text) == {"os", "pyeda", "matplotlib"}
