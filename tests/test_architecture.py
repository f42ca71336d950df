"""docs/architecture.md's map of the package names modules that exist, and every module.

The map is the code block under "## Map of the package": each line's first column names
modules or packages of ``dltrace/`` (``a.py, b.py``; ``pkg/``).  The prose after it (the path
of a query) names modules as ``pkg/module.py`` or ``module.Attribute``; each must exist too.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "dltrace"
DOC = ROOT / "docs" / "architecture.md"


def map_section() -> str:
    text = DOC.read_text(encoding="utf-8")
    start = text.index("## Map of the package")
    end = text.index("\n## ", start + 1)
    return text[start:end]


def mapped_names(section: str) -> list[str]:
    """The first column of the map's code block: ``errors.py``, ``rewriter/``, ..."""
    block = re.search(r"```\n(.*?)```", section, re.S).group(1)
    names = []
    for line in block.splitlines():
        if line and not line.startswith(" "):
            first = re.split(r"\s{2,}", line.strip())[0]
            names += [name.strip() for name in first.split(",")]
    return names


def referenced_modules(section: str) -> set[str]:
    """``commands/sql.py`` and ``spark_views.SparkViews`` style references in backquotes."""
    prose = re.sub(r"```.*?```", "", section, flags=re.S)
    found = set()
    for quoted in re.findall(r"`([^`]+)`", prose):
        if re.fullmatch(r"[a-z_]+(/[a-z_]+)*\.py(:\w+)?", quoted) and not quoted.startswith("tests/"):
            found.add(quoted.split(":")[0])
        elif re.fullmatch(r"[a-z_]+(\.[A-Za-z_]+)+", quoted) and not quoted.endswith((".json", ".parquet")):
            module = quoted.split(".")[0]
            found.add(f"{module}/" if (PACKAGE / module).is_dir() else f"{module}.py")
    return found


def exists(name: str) -> bool:
    return (PACKAGE / name.rstrip("/")).is_dir() if name.endswith("/") else (PACKAGE / name).is_file()


def test_every_module_the_map_names_exists():
    section = map_section()
    names = mapped_names(section)
    assert len(names) > 30 and "session.py" in names and "commands/" in names
    assert [name for name in names if not exists(name)] == []


def test_every_module_the_path_of_a_query_names_exists():
    referenced = referenced_modules(map_section())
    assert {"commands/sql.py", "spark_views.py", "steps.py"} <= referenced
    assert sorted(name for name in referenced if not exists(name)) == []


def test_the_map_names_every_module_of_the_package():
    top_level = {p.name for p in PACKAGE.glob("*.py")} | {
        f"{p.name}/" for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert sorted(top_level - set(mapped_names(map_section())) - {"__init__.py"}) == []
