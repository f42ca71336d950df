"""Pipeline scripts (``dltrace run FILE.sql``, ``LineageSession.run_script``): statements run
in order, each step's result saved with its lineage for the next to read.

A script is ``;``-separated statements:

* ``CREATE [OR REPLACE] TABLE name AS query`` — a *step*: the query runs with lineage and is
  saved as result ``name`` (``IF NOT EXISTS`` skips a step whose result exists);
* ``INSERT INTO step query`` — one more run of a step, its rows the query's (``INSERT
  OVERWRITE`` replaces them all): dltrace/inserts.py;
* ``CREATE [OR REPLACE] [TEMP|TEMPORARY] VIEW name AS query`` — a view that later statements
  read as if inlined (nothing is computed or stored; without TEMP it is kept in the catalog);
* a query (optionally ending in ``LINEAGE ON (...)``) — its rows with lineage.

Later statements read earlier steps by name, and a step's lineage is the saved lineage of
the rows it reads, so lineage reaches the base rows through every step.  A failing statement
stops the script with one line naming it and its line; results saved by earlier steps stay,
and a step replaces its old result only once the new one is complete (results.py).

>>> [(s.number, s.line, s.text) for s in split_statements("-- prepare\\nSELECT 1;\\n\\nCREATE VIEW v AS\\n  SELECT 2;;")]
[(1, 2, 'SELECT 1'), (2, 4, 'CREATE VIEW v AS\\n  SELECT 2')]
"""  # noqa: E501

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from enum import Enum

from sqlglot import exp
from sqlglot.errors import TokenError
from sqlglot.tokens import TokenType

from dltrace import inserts, openlineage
from dltrace.errors import BadInput, DltraceError, SqlSyntaxError
from dltrace.granularity import split_lineage_on
from dltrace.inserts import Insert
from dltrace.rewriter.dialect import SPARK
from dltrace.views import check_result_name

SUPPORTED = ("a script runs CREATE [OR REPLACE] TABLE name AS query (a saved step), INSERT INTO | OVERWRITE "
             "step query (a run added to a step, or its rows replaced), CREATE [OR REPLACE] [TEMP] VIEW name AS "
             "query, and queries")


@dataclass(frozen=True)
class Statement:
    """One statement of a script: its text, the line it starts on, its number (from 1)."""

    text: str
    line: int
    number: int

    @property
    def head(self) -> str:
        """The statement's first words, to name it in messages."""
        words = " ".join(self.text.split())
        return words if len(words) <= 40 else words[:37] + "..."


class OutcomeKind(str, Enum):
    """What kind of statement an ``Outcome`` reports (a ``str``: equal to its value)."""

    TABLE = "table"  # CREATE TABLE AS: a saved step
    INSERT = "insert"  # INSERT INTO | OVERWRITE: a run added to a step, or its rows replaced
    VIEW = "view"
    QUERY = "query"


@dataclass
class Outcome:
    """What a statement did."""

    statement: Statement
    kind: OutcomeKind
    name: str | None = None
    rows: int | None = None
    seconds: float = 0.0
    frame: object | None = None  # a query's rows (a Spark DataFrame), not yet computed
    lineage_on: object | None = None  # a query's LINEAGE ON, for decoding its DL
    skipped: bool = False  # CREATE TABLE IF NOT EXISTS over an existing result
    run: int | None = None  # INSERT INTO: the run's number among the step's runs


def split_statements(text: str) -> list[Statement]:
    """The script's statements, split at ``;`` outside strings and comments."""
    from sqlglot.dialects.spark import Spark

    try:
        tokens = Spark().tokenize(text)
    except TokenError as error:
        raise SqlSyntaxError(f"syntax error: {error}") from None
    statements, current = [], []
    for token in [*tokens, None]:
        if token is not None and token.token_type is not TokenType.SEMICOLON:
            current.append(token)
            continue
        if current:
            body = text[current[0].start : current[-1].end + 1]
            statements.append(Statement(body, current[0].line, len(statements) + 1))
        current = []
    return statements


def _has_lineage_on(text: str) -> bool:
    """True when ``LINEAGE ON`` appears outside strings (a CREATE statement parses it as an
    ``ON`` property, so the query's own clause detection does not see it)."""
    from sqlglot.dialects.spark import Spark

    tokens = Spark().tokenize(text)
    return any(a.token_type is TokenType.VAR and a.text.upper() == "LINEAGE" and b.token_type is TokenType.ON
               for a, b in zip(tokens, tokens[1:]))


def run_script(session, text: str, semantics: str = "control", representation: str = "set",
               on_outcome: Callable[[Outcome], None] | None = None) -> list[Outcome]:
    """Run every statement of ``text`` in order; ``on_outcome`` sees each as it completes.
    Every statement is checked (its kind, its names, its options) before the first runs, so
    that a script wrong on its last line does not run and save its first steps."""
    statements = split_statements(text)
    if not statements:
        raise BadInput(f"the script has no statements: {SUPPORTED}")
    for statement in statements:
        with naming(statement):
            if (checked := check_statement(statement)).insert is not None:
                inserts.check_target(session, checked.insert.name)
    outcomes = []
    with openlineage.script_run(None, text):  # the parent run of its steps' (a named one if the CLI began it)
        for statement in statements:
            with naming(statement):
                outcome = run_statement(session, statement, semantics, representation)
            outcomes.append(outcome)
            if on_outcome is not None:
                on_outcome(outcome)
    return outcomes


@contextmanager
def naming(statement: Statement) -> Iterator[None]:
    """An error of ``statement`` names it and its line."""
    try:
        yield
    except DltraceError as error:
        raise type(error)(f"statement {statement.number} (line {statement.line}, {statement.head}): {error}") from None


@dataclass(frozen=True)
class Checked:
    """A statement checked without Spark: a query, or a CREATE of ``kind`` with its parts."""

    text: str
    lineage_on: object | None
    kind: str = "query"  # or "TABLE", "VIEW", "INSERT"
    name: str = ""
    body: str = ""
    temporary: bool = False
    replace: bool = False
    if_not_exists: bool = False
    insert: Insert | None = None


def check_statement(statement: Statement) -> Checked:
    """Parse ``statement`` and check what a script may hold, without Spark."""
    from dltrace.rewriter.qualify import parse_statement

    text, lineage_on = split_lineage_on(statement.text, None)
    parsed = parse_statement(text)
    if isinstance(parsed, exp.Query):
        return Checked(text, lineage_on)
    if isinstance(parsed, exp.Insert):
        if lineage_on is not None or _has_lineage_on(text):
            raise BadInput("LINEAGE ON belongs to queries: INSERT keeps base-row lineage")
        return Checked(text, None, "INSERT", insert=checked_insert(parsed))
    kind = str(parsed.args.get("kind") or "").upper() if isinstance(parsed, exp.Create) else ""
    if kind not in ("TABLE", "VIEW"):
        what = f"CREATE {kind}" if isinstance(parsed, exp.Create) else parsed.key.upper()
        raise BadInput(f"{what} statements are not supported: {SUPPORTED}")
    target, query = parsed.this, parsed.expression
    if not isinstance(target, exp.Table) or target.args.get("db") or not isinstance(query, exp.Query):
        raise BadInput(f"CREATE {kind} needs a plain name and AS query: {SUPPORTED}")
    if lineage_on is not None or _has_lineage_on(text):
        raise BadInput(f"LINEAGE ON belongs to queries: CREATE {kind} keeps base-row lineage")
    properties = list((parsed.args.get("properties") or exp.Properties()).expressions)
    temporary = any(isinstance(p, exp.TemporaryProperty) for p in properties)
    options = [p for p in properties if not (kind == "VIEW" and isinstance(p, exp.TemporaryProperty))]
    if options:
        raise BadInput(f"CREATE {kind} options ({options[0].sql(dialect='spark')}) are not supported: "
                       "a step is saved as a result in the catalog")
    check_result_name(target.name, "result" if kind == "TABLE" else "view")
    return Checked(text, None, kind, target.name, query.sql(dialect=SPARK), temporary,
                   bool(parsed.args.get("replace")), bool(parsed.args.get("exists")))


def checked_insert(parsed: exp.Insert) -> Insert:
    """An ``INSERT INTO | OVERWRITE [TABLE] step [(columns)] [BY NAME] query`` (or ``VALUES``)."""
    target, query = parsed.this, parsed.expression
    columns: tuple[str, ...] = ()
    if isinstance(target, exp.Schema):
        target, columns = target.this, tuple(column.name for column in target.expressions)
    if not isinstance(target, exp.Table) or target.args.get("db") or target.args.get("catalog"):
        raise BadInput(f"INSERT needs the plain name of a step, not {target.sql(dialect=SPARK)}: {SUPPORTED}")
    if target.args.get("partition") or parsed.args.get("partition") or parsed.args.get("where"):
        raise BadInput(f"INSERT into {target.name} with a PARTITION or REPLACE WHERE clause: a step's runs are "
                       f"added or replaced whole (INSERT INTO, INSERT OVERWRITE)")
    if isinstance(query, exp.Values):
        query = exp.select("*").from_(query)
    if not isinstance(query, exp.Query):
        raise BadInput(f"INSERT into {target.name} needs a query or VALUES: {SUPPORTED}")
    check_result_name(target.name, "result")
    return Insert(target.name, query.sql(dialect=SPARK), bool(parsed.args.get("overwrite")), columns,
                  bool(parsed.args.get("by_name")))


def run_statement(session, statement: Statement, semantics: str = "control", representation: str = "set") -> Outcome:
    """Run one statement: save a step, define a view, or return a query's rows."""
    started = time.perf_counter()
    checked = check_statement(statement)
    if checked.kind == "query":
        frame = session.sql(checked.text, semantics, representation, lineage_on=checked.lineage_on)
        return Outcome(statement, OutcomeKind.QUERY, frame=frame, lineage_on=checked.lineage_on,
                       seconds=time.perf_counter() - started)
    if checked.kind == "INSERT":
        saved, run = inserts.insert(session, checked.insert, semantics, representation)
        return Outcome(statement, OutcomeKind.INSERT, name=checked.insert.name.lower(), rows=saved.rows,
                       seconds=time.perf_counter() - started, run=run)
    name = checked.name
    if checked.kind == "VIEW":
        session.create_view(name, checked.body, temporary=checked.temporary, replace=checked.replace)
        return Outcome(statement, OutcomeKind.VIEW, name=name.lower(), seconds=time.perf_counter() - started)
    if checked.if_not_exists and inserts.exists(session, name):
        return Outcome(statement, OutcomeKind.TABLE, name=name.lower(), skipped=True,
                       rows=session.store.get(name).rows if session.store.exists(name) else None)
    if checked.replace:
        inserts.replace_runs(session, name)  # a step added to by INSERTs is saved whole again
    saved = session.create_table(name, checked.body, semantics, representation, replace=checked.replace)
    return Outcome(statement, OutcomeKind.TABLE, name=saved.name, rows=saved.rows,
                   seconds=time.perf_counter() - started)
