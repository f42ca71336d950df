"""Granule ids: which table provides which L expressions, and the id each base row gets.

Each L expression is resolved against the tables the query reads and must use the
columns of exactly one table.  A table providing some expressions gives each of its rows
the granule id

    xxhash64('<table>(<its expressions>)', e1, ..., en[, isnull(e1), ..., isnull(en)])

Spark's native 64-bit hash (a bigint, so the representations need nothing new).  The first
argument, the table name with the expression text, keeps granules of different tables
and of different L apart: ``l_shipmode = 'MAIL'`` and ``o_orderpriority = 'MAIL'`` are
different granules, and a result's ids never mean something else under another L.
Spark's hash skips NULL arguments, so with two or more expressions the NULL flags are
hashed too: ``(NULL, 'x')`` and ``('x', NULL)`` stay apart.  Every occurrence of a table
(self-joins) gets the same granules, so a qualifier (table name or alias) only says which
table an expression is over; tables providing none contribute ∅.

>>> from dltrace.granularity.clause import parse_lineage_on
>>> from dltrace.rewriter import PAPER_SCHEMA, parse
>>> query = parse("SELECT s_name FROM store s JOIN sales t ON s.s_id = t.s_id")
>>> granularity = resolve(parse_lineage_on("s.city, price * num AS amount"), query, PAPER_SCHEMA)
>>> print(granularity.providers["sales"].granule_id("t").sql("spark"))
XXHASH64('sales(price * num)', t.price * t.num)
>>> print(granularity.providers["store"].granule_id("s").sql("spark"))
XXHASH64('store(city)', s.city)
>>> granularity.names
('s.city', 'amount')
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from dltrace.catalog import ID_COLUMN
from dltrace.errors import BadInput, UnknownColumn
from dltrace.granularity.clause import LineageOn
from dltrace.rewriter.dialect import SPARK
from dltrace.rewriter.representation import call


@dataclass(frozen=True)
class Provider:
    """A table providing some of L: its expressions (columns unqualified) and their names."""

    table: str
    expressions: tuple[exp.Expression, ...]
    names: tuple[str, ...]

    @property
    def tag(self) -> str:
        """The first hash argument: which table and which expressions the granule is of."""
        return f"{self.table}({', '.join(e.sql(dialect='spark') for e in self.expressions)})"

    def values(self, alias: str) -> list[exp.Expression]:
        """The expressions over the table occurrence ``alias``."""
        return [_qualified(expression, alias) for expression in self.expressions]

    def granule_id(self, alias: str) -> exp.Expression:
        values = self.values(alias)
        null_flags = [call("isnull", v.copy()) for v in values] if len(values) > 1 else []
        return call("xxhash64", exp.Literal.string(self.tag), *values, *null_flags)


@dataclass(frozen=True)
class Granularity:
    """A resolved L: the providing tables, and L's names (an alias, else the expression as
    written) in clause order."""

    providers: dict[str, Provider]
    names: tuple[str, ...]

    def id_source(self, table: exp.Table) -> tuple[exp.Expression, bool] | None:
        """The rewriter's ``IdSource``: granule ids for providing tables, ∅ for the others."""
        provider = self.providers.get(table.name.lower())
        if provider is None:
            return None
        alias = table.alias_or_name
        # a row an outer join pads (no row of the table: NULL ``_dl_id``) contributes no granule
        padded = exp.column(ID_COLUMN, alias).is_(exp.null())
        return exp.If(this=padded, true=exp.null(), false=provider.granule_id(alias)), False


def resolve(lineage_on: LineageOn, query: exp.Expression, schemas: dict[str, dict[str, str]]) -> Granularity:
    """Resolve each L expression to the one table of ``query`` whose columns it uses."""
    ctes = {cte.alias_or_name.lower() for cte in query.find_all(exp.CTE)}
    read = [t for t in query.find_all(exp.Table) if t.name.lower() in schemas and t.name.lower() not in ctes]
    tables = sorted({t.name.lower() for t in read})
    aliases = {t.alias_or_name.lower(): t.name.lower() for t in read} | {name: name for name in tables}
    columns = {name: {c.lower(): c for c in schemas[name]} for name in tables}
    by_table: dict[str, list[tuple[exp.Expression, str]]] = {}
    names = []
    for item in lineage_on:
        expression = item.this if isinstance(item, exp.Alias) else item
        text = expression.sql(dialect=SPARK)
        unqualified = expression.copy()
        owners = set()
        for column in list(unqualified.find_all(exp.Column)):
            owner = _owner(column, text, aliases, columns, tables)
            owners.add(owner)
            # the schema's spelling and no qualifier: the tag (so the id) is the same however L is written
            column.set("this", exp.to_identifier(columns[owner][column.name.lower()]))
            column.set("table", None)
        if not owners:
            raise BadInput(f"LINEAGE ON ({text}) uses no column: each expression must read a table of the query")
        if len(owners) > 1:
            first, second = sorted(owners)[:2]
            raise BadInput(
                f"LINEAGE ON ({text}) mixes columns of {first} and {second}: "
                "each expression must use the columns of one table"
            )
        name = item.alias if isinstance(item, exp.Alias) else text
        by_table.setdefault(owners.pop(), []).append((unqualified, name))
        names.append(name)
    providers = {
        table: Provider(table, tuple(e for e, _ in items), tuple(n for _, n in items))
        for table, items in by_table.items()
    }
    return Granularity(providers, tuple(names))


def _owner(
    column: exp.Column, text: str, aliases: dict[str, str], columns: dict[str, dict[str, str]], tables: list[str]
) -> str:
    """The table of the query that ``column`` of L expression ``text`` belongs to."""
    name = column.name.lower()
    if column.table:
        table = aliases.get(column.table.lower())
        if table is None:
            raise UnknownColumn(f"LINEAGE ON ({text}): '{column.table}' is not a table or alias of the query")
        candidates = [table] if name in columns[table] else []
    else:
        candidates = [t for t in tables if name in columns[t]]
    if not candidates:
        raise UnknownColumn(
            f"LINEAGE ON ({text}): no table the query reads has a column '{column.sql(dialect='spark')}' "
            f"(it reads {', '.join(tables) or 'no registered table'})"
        )
    if len(candidates) > 1:
        raise UnknownColumn(
            f"LINEAGE ON ({text}): column '{column.name}' is in {' and '.join(candidates)}: "
            f"qualify it, e.g. {candidates[0]}.{column.name}"
        )
    return candidates[0]


def _qualified(expression: exp.Expression, alias: str) -> exp.Expression:
    qualified = expression.copy()
    for column in qualified.find_all(exp.Column):
        column.set("table", exp.to_identifier(alias))
    return qualified
