"""The package's import graph has no cycle, and the library never imports its benchmarks.

Imports are read with ``ast``, not by importing: every ``import`` and ``from ... import`` in a
module counts, at module level and inside functions alike.  An import inside a function is
deferred, not absent: the module still cannot work without the other, and deferring an import
is the usual way a cycle is hidden rather than removed, so it counts.  An edge goes to the
module an import names (``from dltrace.rewriter import parse``: ``dltrace.rewriter``;
``from dltrace import rewriter``: ``dltrace.rewriter``), not to the packages Python also
initialises on the way (every module would otherwise depend on ``dltrace/__init__.py``).
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = "dltrace"
ROOT = Path(__file__).resolve().parent.parent
OUTSIDE = ("tpch", "tpcds", "walmart", "tests")  # the repository's benchmarks and tests: never imported by the library


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(path): path for path in sorted((ROOT / PACKAGE).rglob("*.py"))}


def imported_names(path: Path, name: str, known: frozenset[str] = frozenset()) -> set[str]:
    """Every module name an import statement of ``path`` (module ``name``) names, resolved:
    ``from package import x`` names ``package.x`` when that is one of the ``known`` modules,
    else ``package``."""
    is_package = path.name == "__init__.py"
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".")
                base = base[: len(base) - node.level + (1 if is_package else 0)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            found.update(
                f"{target}.{alias.name}" if f"{target}.{alias.name}" in known else target for alias in node.names
            )
    return found


def import_graph() -> dict[str, set[str]]:
    known = modules()
    return {name: {target for target in imported_names(path, name, frozenset(known))
                   if target in known and target != name}
            for name, path in known.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return components


def a_cycle(graph: dict[str, set[str]], component: list[str]) -> list[str]:
    """One import path around ``component``, for the failure message."""
    members = set(component)
    path = [component[0]]
    while True:
        following = sorted(graph[path[-1]] & members)
        step = next((m for m in following if m == path[0]), None) or next((m for m in following if m not in path), None)
        if step is None or step == path[0]:
            return path + [path[0]]
        path.append(step)


def test_the_import_graph_has_no_cycle():
    graph = import_graph()
    assert len(graph) > 50 and "dltrace.rewriter.join" in graph["dltrace.rewriter"]
    found = [f"{' -> '.join(a_cycle(graph, component))} (all of {', '.join(component)})" for component in cycles(graph)]
    assert not found, "import cycles:\n" + "\n".join(found)


def test_the_library_imports_no_benchmark_or_test():
    offending = {
        name: sorted(t for t in imported_names(path, name) if t.split(".")[0] in OUTSIDE)
        for name, path in modules().items()
    }
    assert not {name: found for name, found in offending.items() if found}


def test_cycles_are_found():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]
    assert a_cycle(graph, ["a", "b", "c"]) == ["a", "b", "c", "a"]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_impact_and_granularity_stand_on_the_engine_interface_not_the_session():
    """``impact/`` and ``granularity/`` are written against ``engine.Engine``, which
    ``LineageSession`` provides; they never import the session (the command line over its
    public API, ``impact/commands.py``, takes the session it is given)."""
    import inspect

    from dltrace.engine import Engine
    from dltrace.session import LineageSession

    graph = import_graph()
    below = [name for name in graph if name.startswith(("dltrace.impact", "dltrace.granularity"))]
    assert below and not [name for name in below if "dltrace.session" in graph[name]]
    members = [name for name in vars(Engine) if not name.startswith("_")] + list(Engine.__annotations__)
    assert set(members) == {"catalog", "spark", "run", "expand", "traceable_on_values", "lineage_expression"}
    for name in members:
        if name == "catalog":
            continue  # an instance attribute
        provided = getattr(LineageSession, name)
        if isinstance(provided, property):
            continue
        wanted = inspect.signature(getattr(Engine, name)).parameters
        assert inspect.signature(provided).parameters.keys() == wanted.keys(), name
