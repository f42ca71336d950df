"""Names in a DataFrame's plan, resolved as Spark's analyzer resolves them.

A translated relation (``Frame``) is a query whose output columns (``Column``) carry what a
later name may refer to them by: Spark's name (case-insensitive), the plan ids of the
DataFrames they pass through unchanged (``df["x"]``), and their qualifiers (a table name or
``df.alias``).  ``Scope`` is the inputs of one SELECT and resolves names in them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from sqlglot import exp

from dltrace.dataframe.expressions import ExpressionTranslator, split_identifier
from dltrace.errors import UnknownColumn

SIMPLE_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*")
RESERVED = re.compile(r"_*dl", re.IGNORECASE)  # the rewriter's own columns: _dl_id, __dl0, DL


@dataclass(frozen=True)
class Column:
    """A column of a translated relation: ``name`` is Spark's (None: an expression Spark names
    itself, looked up when needed), ``sql`` its name in the relation's query."""

    name: str | None
    sql: str
    plan_ids: frozenset[int] = frozenset()
    qualifiers: frozenset[str] = frozenset()


@dataclass
class Frame:
    """A relation as a query whose output columns are ``columns``, in order, named ``sql``."""

    query: exp.Query
    columns: list[Column]
    relation: object  # the Relation message, to ask Spark for its schema
    table: str | None = None  # a registered table or saved result read as it is
    types: list[str] | None = field(default=None)


def unique_name(name: str | None, used: set[str]) -> str:
    """A name for an output column of a query dltrace writes: Spark's when it is a plain,
    unused identifier (readable SQL), else ``_cN``."""
    candidate = name if name and SIMPLE_NAME.fullmatch(name) and not RESERVED.match(name) else None
    number = len(used)
    while candidate is None or candidate.lower() in used:
        candidate = f"_c{number}"
        number += 1
    used.add(candidate.lower())
    return candidate



class Scope:
    """The inputs of one SELECT (one or two frames, each under an alias) and how names resolve
    in them; ``translator`` (``plan.PlanTranslator``) gives aliases and asks Spark for names."""

    def __init__(self, translator, frames: list[Frame]) -> None:
        self.translator = translator
        self.frames = frames
        self.aliases = [translator.alias() for _ in frames]
        self.outer: Scope | None = translator.outer[-1] if translator.outer else None  # a subquery's
        self.expressions = ExpressionTranslator(self)

    def sources(self) -> list[exp.Expression]:
        out = []
        for frame, alias in zip(self.frames, self.aliases):
            if frame.table is not None:
                out.append(exp.to_table(frame.table).as_(alias))
            else:
                out.append(frame.query.subquery(alias, copy=False))  # each frame is used once
        return out

    def ref(self, index: int, column: Column) -> exp.Column:
        return exp.column(column.sql, table=self.aliases[index], quoted=not SIMPLE_NAME.fullmatch(column.sql))

    def all(self, index: int | None = None) -> list[tuple[exp.Expression, Column]]:
        """Every column of the inputs (or of input ``index``), passed through."""
        indexes = range(len(self.frames)) if index is None else [index]
        return [(self.ref(i, c), c) for i in indexes for c in self.frames[i].columns]

    def column_of(self, ref: exp.Expression) -> Column | None:
        if isinstance(ref, exp.Column) and ref.table in self.aliases:
            frame = self.frames[self.aliases.index(ref.table)]
            return next((c for c in frame.columns if c.sql == ref.name), None)
        return None

    # -- names --------------------------------------------------------------------------------

    def column(self, identifier: str, plan_id: int | None) -> exp.Expression:
        parts = split_identifier(identifier)
        candidates = []
        for index, frame in enumerate(self.frames):
            if plan_id is not None and not any(plan_id in c.plan_ids for c in frame.columns):
                continue
            if any(c.name is None for c in frame.columns) and not any(
                    c.name is not None and c.name.lower() == parts[0].lower() for c in frame.columns):
                self.translator.name_all(frame)
            for column in frame.columns:
                if plan_id is not None and plan_id not in column.plan_ids:
                    continue
                if len(parts) > 1 and parts[0].lower() in column.qualifiers and column.name.lower() == parts[1].lower():
                    candidates.append((index, column, parts[2:]))
                elif column.name is not None and column.name.lower() == parts[0].lower():
                    candidates.append((index, column, parts[1:]))
        qualified = [c for c in candidates if len(c[2]) < len(parts) - 1] or candidates
        if not qualified and self.outer is not None:  # a correlated name: the enclosing query's
            return self.outer.column(identifier, plan_id)
        if not qualified:
            known = ", ".join(c.name or "?" for f in self.frames for c in f.columns)
            raise UnknownColumn(f"DataFrame: column {identifier} is not among the columns here ({known})")
        if len(qualified) > 1 and len({(i, c.sql) for i, c, _ in qualified}) > 1:
            raise UnknownColumn(f"DataFrame: column {identifier} is ambiguous here: take it from its DataFrame "
                                f"(df[\"{identifier}\"]) or an alias (df.alias(\"a\"), then \"a.{identifier}\")")
        index, column, fields = qualified[0]
        node: exp.Expression = self.ref(index, column)
        for name in fields:
            node = exp.Dot(this=node, expression=exp.to_identifier(name))
        return node

    def star(self, target: str | None, plan_id: int | None) -> list[tuple[exp.Expression, Column]]:
        items = self.all()
        if plan_id is not None:
            items = [(r, c) for r, c in items if plan_id in c.plan_ids]
        if target:
            qualifier = split_identifier(target.removesuffix(".*"))[0].lower()
            items = [(r, c) for r, c in items if qualifier in c.qualifiers]
            if not items:
                raise UnknownColumn(f"DataFrame: {target} names no DataFrame alias or table here")
        return items

    def named_star(self, star) -> list[tuple[exp.Expression, Column]]:
        """``*`` among a call's arguments (Connect's ``UnresolvedStar``): its columns, named as Spark names them."""
        for frame in self.frames:
            self.translator.name_all(frame)
        return self.star(star.unparsed_target if star.HasField("unparsed_target") else None,
                         star.plan_id if star.HasField("plan_id") else None)

    def resolve_sql(self, expression: exp.Expression) -> exp.Expression:
        """A parsed SQL expression (``F.expr``, ``selectExpr``) with its columns resolved here."""
        for column in list(expression.find_all(exp.Column)):
            identifier = ".".join(f"`{p.name}`" for p in column.parts)
            resolved = self.column(identifier, None)
            if column is expression:
                return resolved
            column.replace(resolved)
        return expression

    def python_udf(self, udf) -> str:
        return self.translator.catalog.python_udf(udf)

    def subquery(self, plan_id: int) -> exp.Query:
        return self.translator.subquery(plan_id, self)

    # -- expressions --------------------------------------------------------------------------

    def expression(self, message) -> exp.Expression:
        return self.expressions(message)

    def select_item(self, message) -> list[tuple[exp.Expression, Column]]:
        """What one entry of a select list contributes: ``*`` its columns, an alias a named
        column, a column passed through itself, anything else a column Spark names."""
        kind = message.WhichOneof("expr_type")
        if kind == "unresolved_star":
            star = message.unresolved_star
            return self.star(star.unparsed_target if star.HasField("unparsed_target") else None,
                             star.plan_id if star.HasField("plan_id") else None)
        if kind == "alias":
            if len(message.alias.name) != 1:  # a generator's columns: Spark names them (generators.py)
                names = [exp.to_identifier(name) for name in message.alias.name]
                return [(exp.Aliases(this=self.expression(message.alias.expr), expressions=names), Column(None, ""))]
            return [(self.expression(message.alias.expr), Column(message.alias.name[0], ""))]
        if kind == "expression_string":
            parsed = self.expressions(message)
            if isinstance(parsed, exp.Alias):
                return [(parsed.this, Column(parsed.alias, ""))]
            if isinstance(parsed, exp.Star):
                return self.star(None, None)
            message_column = self.column_of(parsed)
            return [(parsed, message_column if message_column is not None else Column(None, ""))]
        value = self.expression(message)
        passed = self.column_of(value)
        return [(value, passed if passed is not None else Column(None, ""))]
