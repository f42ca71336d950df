"""Rooms of a size a reader can hold: no function in ``dltrace/`` over 60 lines and no module
over 500, measured with ``ast`` (a function from its ``def`` to its last line, docstring
included).  Each exception is listed with the reason it stays."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "dltrace"
MAX_FUNCTION_LINES = 60
MAX_MODULE_LINES = 500

LONG_MODULES = {
    # the byte format's encoders and decoders for every kind, kept beside its specification
    # (the module docstring) so that a change to one side shows the other
    "dltrace/bddsets/encoding.py": "one byte format, specification and code together",
}
LONG_FUNCTIONS: dict[str, str] = {}


def functions(tree: ast.AST, prefix: str = ""):
    """``(qualified name, node)`` of every function, methods as ``Class.method``."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield prefix + node.name, node
            yield from functions(node, f"{prefix}{node.name}.")
        elif isinstance(node, ast.ClassDef):
            yield from functions(node, f"{prefix}{node.name}.")


def measured() -> tuple[dict[str, int], dict[str, int]]:
    modules, lengths = {}, {}
    for path in sorted(PACKAGE.rglob("*.py")):
        name = str(path.relative_to(ROOT))
        text = path.read_text(encoding="utf-8")
        modules[name] = len(text.splitlines())
        for qualified, node in functions(ast.parse(text)):
            lengths[f"{name}:{qualified}"] = node.end_lineno - node.lineno + 1
    return modules, lengths


def test_no_module_over_500_lines_but_the_listed():
    modules, _ = measured()
    long = {name for name, lines in modules.items() if lines > MAX_MODULE_LINES}
    assert long <= set(LONG_MODULES), {name: modules[name] for name in long - set(LONG_MODULES)}


def test_no_function_over_60_lines_but_the_listed():
    _, lengths = measured()
    long = {name for name, lines in lengths.items() if lines > MAX_FUNCTION_LINES}
    assert long <= set(LONG_FUNCTIONS), {name: lengths[name] for name in long - set(LONG_FUNCTIONS)}


def test_the_exceptions_are_still_needed():
    """An exception that has become short is removed from the lists, so that it cannot grow back."""
    modules, lengths = measured()
    assert [name for name in LONG_MODULES if modules.get(name, 0) <= MAX_MODULE_LINES] == []
    assert [name for name in LONG_FUNCTIONS if lengths.get(name, 0) <= MAX_FUNCTION_LINES] == []


def test_functions_are_measured_by_qualified_name():
    tree = ast.parse("class A:\n    def f(self):\n        def g():\n            pass\n\ndef h():\n    pass\n")
    assert [(name, node.end_lineno - node.lineno + 1) for name, node in functions(tree)] == [
        ("A.f", 3), ("A.f.g", 2), ("h", 2)]


def test_no_command_option_shadows_its_handler():
    """Each command's handler travels in ``args.handler``: an option of that name (``--handler``)
    would replace the handler by the option's value, as ``lineage-sql --run`` once replaced
    ``args.run``."""
    import argparse

    from dltrace.cli import parser

    top = parser()
    commands = next(action for action in top._actions if isinstance(action, argparse._SubParsersAction))
    for name, command in commands.choices.items():
        assert callable(command.get_default("handler")), name
        assert all(action.dest != "handler" for action in command._actions), name


README_MAX_LINES = 450  # a guide; the reference lives in docs/
ROOT_FILES = {".gitignore", "Makefile", "README.md", "pyproject.toml"}


def test_the_readme_is_a_guide_and_the_root_holds_no_strays():
    import subprocess

    root = Path(__file__).resolve().parent.parent
    assert len((root / "README.md").read_text().splitlines()) <= README_MAX_LINES
    tracked = subprocess.run(["git", "ls-files"], cwd=root, capture_output=True, text=True).stdout.splitlines()
    if tracked:  # a git checkout
        assert {name for name in tracked if "/" not in name} <= ROOT_FILES
