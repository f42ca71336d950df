"""Fixture files of SQL in / SQL out, read and (re)written without Spark.

A fixture file is blocks separated by blank lines.  A block of comments only is the file's
header (kept first when the file is written again); any other block is a case: comment
lines (``--``), then its input statement, then the expected statements, each ending with
``;`` at the end of a line.  The first comment line describes the case; the others are
``-- key: value`` options the test knows, or explanations (which must not look like an
option).  An expected statement ``ERROR Class: message;`` means the input is refused with
that error.

``python -m tests.test_rewriter_fixtures`` (and ``tests.test_golden_sql``) write what the
code produces now in place of the expected statements, keeping inputs and comments: read
the diff before committing it, a fixture that freezes a wrong rewrite is a defect.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

FIXTURES = Path(__file__).resolve().parent / "fixtures"
OPTION = re.compile(r"--\s*([a-z_]+):\s*(.*)$")


@dataclass
class Case:
    path: Path
    line: int  # of the case's first line, 1-based
    comments: list[str]
    statements: list[str]  # the input, then the expected outputs
    options: dict[str, list[str]] = field(default_factory=dict)

    @property
    def title(self) -> str:
        return self.comments[0].removeprefix("--").strip() if self.comments else ""

    @property
    def input(self) -> str:
        return self.statements[0]

    @property
    def expected(self) -> list[str]:
        return self.statements[1:]

    def option(self, key: str, default: str | None = None) -> str | None:
        values = self.options.get(key)
        return values[-1] if values else default

    def id(self) -> str:
        return f"{self.path.stem}:{self.line}"


def read_cases(path: Path, known_options: frozenset[str]) -> tuple[list[str], list[Case]]:
    """The file's header blocks (comments only) and its cases."""
    blocks: list[tuple[int, list[str]]] = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            blocks.append((number + 1, []))
        elif not blocks:
            blocks.append((number, [line]))
        else:
            blocks[-1][1].append(line)
    headers: list[str] = []
    cases: list[Case] = []
    for first_line, lines in blocks:
        if not lines:
            continue
        comments = [line for line in lines if line.lstrip().startswith("--")]
        sql = [line for line in lines if not line.lstrip().startswith("--")]
        if not sql:
            headers.append("\n".join(lines))
            continue
        statements = [s.strip() for s in re.split(r";[ \t]*(?:\n|$)", "\n".join(sql)) if s.strip()]
        case = Case(path, first_line, comments, statements)
        for comment in comments[1:]:
            match = OPTION.match(comment.strip())
            if match is None:
                continue
            if match.group(1) not in known_options:
                raise ValueError(f"{path.name}:{first_line}: unknown option '{match.group(1)}' "
                                 f"(known: {', '.join(sorted(known_options))})")
            case.options.setdefault(match.group(1), []).append(match.group(2).strip())
        cases.append(case)
    return headers, cases


def write_cases(path: Path, headers: list[str], cases: list[Case], outputs: dict[int, list[str]]) -> None:
    """Write ``path`` again with each case's expected statements replaced by ``outputs[index]``."""
    blocks = list(headers)
    for index, case in enumerate(cases):
        statements = [case.input, *outputs.get(index, case.expected)]
        blocks.append("\n".join([*case.comments, *(s + ";" for s in statements)]))
    path.write_text("\n\n".join(blocks) + "\n", encoding="utf-8")
