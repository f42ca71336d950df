"""The rewrite rules, one fixture file each: SQL in, lineage SQL out, over the paper's schema.

``tests/fixtures/rewriter/<module>.sql`` holds the cases of the rules in
``dltrace/rewriter/<module>.py`` (format: ``tests/sql_fixtures.py``).  A case runs the whole
rewriter (``rewriter.rewrite``) unless it says which rules to run.  Options of a case:

* ``semantics: control | data`` (default control), ``repr: set | bdd | auto`` (default set);
* ``keys: paper`` (store.s_id, item.i_id, sales.t_id) or ``keys: t=a+b, u=c``: declared keys;
* ``rows: store=10, sales=1000``: catalog row counts;
* ``ids: tagged``: ids carry the table occurrence's number (the tests' tree definition);
* ``saved: name(col type, ...) tables=a,b [disjoint] [shared=N]``: a saved result read like a table;
* ``view: name AS query``: a view, inlined as a CTE as ``LineageSession`` does;
* ``output: shared``: also the result with shared lineage held apart (``meta[SHARED]``: the
  rows' query, then each shared set) and ``meta[DISJOINT_ROWS]``;
* ``only: qualify, distinct``: run only these rules (each in its phase), to see what one
  rule does on its own; ``without: semi_join_reduction``: all rules but these;
* ``apart: windows``: planned as a save stores it (``windows_apart``): window partitions
  and RANGE frames as names of sets held apart; with ``output: shared`` the sets' query too;
* ``wrong: why``: the rewriter gets this case wrong today; the expected statements say what
  it should give (the case is a strict xfail, and writing fixtures leaves it alone).

No Spark, no data: ``python -m tests.test_rewriter_fixtures`` writes the current outputs.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from dltrace import rewriter
from dltrace.errors import DltraceError
from dltrace.rewriter import PAPER_CODES, PAPER_SCHEMA, parse
from dltrace.rewriter.base_table import tagged_row_ids
from dltrace.views import inline
from tests.sql_fixtures import FIXTURES, Case, read_cases, write_cases

DIRECTORY = FIXTURES / "rewriter"
OPTIONS = frozenset({"semantics", "repr", "keys", "rows", "ids", "saved", "view", "output", "only", "without", "wrong",
                     "apart"})
PAPER_KEYS = {"store": ["s_id"], "item": ["i_id"], "sales": ["t_id"]}
SAVED = re.compile(r"(\w+)\(([^)]*)\)\s+tables=([\w,]*)((?:\s+\w+(?:=\d+)?)*)$")
RULES = tuple(rule for phase in rewriter.RULES for rule in phase.rules)


def fixture_files() -> list[Path]:
    return sorted(DIRECTORY.glob("*.sql"))


def all_cases() -> list[Case]:
    return [case for path in fixture_files() for case in read_cases(path, OPTIONS)[1]]


def parameters() -> list:
    return [pytest.param(case, id=case.id(), marks=[pytest.mark.xfail(strict=True, reason=case.option("wrong"))]
                         if case.option("wrong") else []) for case in all_cases()]


def pairs(text: str | None) -> dict[str, str]:
    return dict(part.strip().split("=", 1) for part in (text or "").split(",") if part.strip())


def names(text: str) -> list[str]:
    return [name.strip() for name in text.split(",") if name.strip()]


def rewritten(case: Case) -> list[str]:
    """What the rewriter makes of the case's input: its statements, or the error's."""
    schemas = dict(PAPER_SCHEMA)
    saved = {}
    for text in case.options.get("saved", []):
        match = SAVED.match(text)
        assert match, f"{case.id()}: saved: NAME(col type, ...) tables=a,b [disjoint] [shared=N], not {text!r}"
        name, columns, tables, flags = match.groups()
        schemas[name] = dict(column.split() for column in columns.split(","))
        flag = pairs(",".join(flags.split())) if "=" in flags else {}
        saved[name] = rewriter.SavedLineage(frozenset(filter(None, tables.split(","))), "disjoint" in flags.split(),
                                            int(flag.get("shared", 0)))
    keys = (
        PAPER_KEYS
        if case.option("keys") == "paper"
        else {t: k.split("+") for t, k in pairs(case.option("keys")).items()}
    )
    rows = {t: int(n) for t, n in pairs(case.option("rows")).items()}
    views = {}
    for text in case.options.get("view", []):
        name, _, query = text.partition(" AS ")
        views[name.strip().lower()] = query
    rules = rewriter.RULES
    if case.option("only"):
        rules = rewriter.only(*names(case.option("only")))
    if case.option("without"):
        rules = rewriter.without(*names(case.option("without")), rules=rules)
    try:
        expression = inline(parse(case.input), views.get)
        result = rewriter.rewrite(
            expression, schemas, PAPER_CODES, case.option("repr", "set"), case.option("semantics", "control"),
            id_source=tagged_row_ids if case.option("ids") == "tagged" else None,
            table_rows=rows or None, table_keys=keys or None, saved=saved, rules=rules,
            windows_apart=case.option("apart") == "windows",
        )
    except DltraceError as error:
        return [f"ERROR {type(error).__name__}: {error}"]
    statements = [result.sql(dialect="spark")]
    if case.option("output") == "shared":
        shared = result.meta.get(rewriter.SHARED)
        statements.append(f"DISJOINT_ROWS {str(result.meta[rewriter.DISJOINT_ROWS]).lower()}")
        if shared is None:
            statements.append("NO SHARED LINEAGE")
        else:
            statements += [shared.rows.sql(dialect="spark"), *(s.sql(dialect="spark") for s in shared.sets)]
            if shared.named is not None:
                statements.append(shared.named.sql(dialect="spark"))
    return statements


@pytest.mark.parametrize("case", parameters())
def test_rule_fixture(case: Case):
    assert case.expected, f"{case.id()} has no expected statement: run python -m tests.test_rewriter_fixtures"
    assert rewritten(case) == case.expected, f"{case.id()}: {case.title}"


def test_every_rule_has_its_fixture_file():
    modules = {rule.__module__.rsplit(".", 1)[-1] for rule in RULES}
    files = {path.stem for path in fixture_files()}
    assert modules <= files, f"rules without fixtures: {sorted(modules - files)}"
    rewriter_modules = {path.stem for path in Path(rewriter.__file__).parent.glob("*.py")}
    assert files <= rewriter_modules, (
        f"fixture files named after no rewriter module: {sorted(files - rewriter_modules)}"
    )


def write() -> None:
    for path in fixture_files():
        headers, cases = read_cases(path, OPTIONS)
        write_cases(
            path,
            headers,
            cases,
            {index: rewritten(case) for index, case in enumerate(cases) if not case.option("wrong")},
        )
        print(f"wrote {path.relative_to(Path.cwd()) if path.is_relative_to(Path.cwd()) else path}", file=sys.stderr)


if __name__ == "__main__":
    write()
