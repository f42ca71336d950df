"""``dltrace tables [list|drop NAME]``: the registered tables, and removing one.

A drop is refused while a saved result depends on the table (its ``result.json`` lists the
tables its lineage reaches, through the saved results it read too): that lineage names the
table's ids, and explain and impact would lose them.  ``--force`` drops anyway.  The table's
code is retired, never given to another table, so that ids in saved lineage can never name
another table's rows.  The catalog is
rewritten first (the commit), then the data of every version and its key indexes deleted
(renamed away first where renames are atomic, so that a killed drop leaves only what
``dltrace.recovery`` sweeps).
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
from dataclasses import asdict

from dltrace.catalog import Catalog, TableEntry
from dltrace.commands.common import Parents, open_session
from dltrace.errors import BadInput
from dltrace.formatting import write_json, write_table
from dltrace.ids import make_id
from dltrace.recovery import temporary_name


def add_parser(commands, parents: Parents) -> None:
    tables = commands.add_parser("tables", parents=[parents.common], help="list the registered tables, or drop one")
    tables.add_argument("action", nargs="?", choices=("list", "drop"), default="list")
    tables.add_argument("name", nargs="?", help="the table to drop")
    tables.add_argument("--force", action="store_true", help="drop even though saved results depend on the table")
    tables.add_argument("--format", choices=("table", "json"), default="table")
    tables.set_defaults(handler=run)


def id_range(entry: TableEntry) -> str:
    """``ids A..B`` of a table's rows, or ``no ids`` for a table without rows."""
    if not entry.rows:
        return "no ids"
    return f"ids {make_id(entry.code, 0)}..{make_id(entry.code, entry.next_row - 1)}"


def dependents(catalog: Catalog, name: str) -> list[str]:
    """The saved results whose lineage reaches table ``name`` (directly or through others)."""
    from dltrace.results import ResultStore

    return [result.name for result in ResultStore(catalog).list() if name in result.lineage_tables]


def drop_table(catalog: Catalog, name: str, force: bool = False) -> TableEntry:
    """Remove table ``name`` (every data version, its key indexes) from ``catalog``."""
    entry = catalog.entry(name)
    name = name.lower()
    users = dependents(catalog, name)
    if users and not force:
        raise BadInput(f"saved results {', '.join(users)} read table {name}: drop them first "
                       f"(`dltrace results drop NAME`), or drop the table with --force (their lineage keeps its ids)")
    entry = catalog.remove(name)
    trash = catalog.directory / "tables" / temporary_name(f".dropped-{name}")
    data = [catalog.directory / path for path in entry.version_paths().values()]
    for path in [*data, *(catalog.directory / "indexes").glob(f"{name}-v*-key-*.parquet")]:
        if not path.atomic_rename:
            path.remove()
        elif path.exists():
            trash.mkdir()
            path.rename(trash / f"{path.parent.name}-{path.name}")
    trash.remove()
    return entry


def run(args: argparse.Namespace) -> int:
    catalog = open_session(args).catalog
    if args.action == "drop":
        if not args.name:
            raise BadInput("tables drop needs the NAME of a registered table")
        entry = drop_table(catalog, args.name, args.force)
        print(f"dropped table {args.name.lower()} (code {entry.code}, {entry.rows} rows)")
        return 0
    if args.name:
        raise BadInput(f"tables list takes no name (got {args.name!r}): did you mean `tables drop {args.name}`?")
    if args.format == "json":
        write_json(({"name": name, **asdict(entry)} for name, entry in sorted(catalog.tables.items())), sys.stdout)
        return 0
    columns = ["name", "rows", "code", "version", "key", "order_by", "registered", "source"]
    records = [
        {
            "name": name,
            "rows": entry.rows,
            "code": entry.code,
            "version": f"v{entry.version}",
            "key": ",".join(entry.key or []),
            "order_by": ",".join(entry.order_by or []),
            "registered": dt.datetime.fromtimestamp(entry.registered_at).isoformat(timespec="seconds"),
            "source": entry.source,
        }
        for name, entry in sorted(catalog.tables.items())
    ]
    write_table(records, columns, catalog, sys.stdout)
    print(f"({len(records)} tables in catalog {catalog.directory})")
    return 0
