"""Shape checks of the JSON files dltrace keeps (``catalog.json``, ``result.json``).

A file that parses but was damaged by hand or by a foreign tool must give one line naming
the file and the field, not a Python traceback from deep inside (docs/errors.md).  Fields are
those of the dataclass the file is read into: required are those without a default; the
types of the fields listed in ``TYPES`` are checked.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dltrace.errors import CatalogError
from dltrace.ids import MAX_TABLE_CODE

Check = Callable[[Any], bool]

NAME = re.compile(r"^[a-z_][a-z0-9_]*$")


def integer(low: int = 0, high: int | None = None) -> Check:
    return lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= low and (high is None or v <= high)


def text(v: Any) -> bool:
    return isinstance(v, str)


def number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def optional(check: Check) -> Check:
    return lambda v: v is None or check(v)


def list_of(check: Check) -> Check:
    return lambda v: isinstance(v, list) and all(check(item) for item in v)


def dict_of(check: Check) -> Check:
    return lambda v: isinstance(v, dict) and all(isinstance(k, str) and check(item) for k, item in v.items())


COLUMNS = list_of(text)
SCHEMA = dict_of(text)
PREVIOUS_VERSION = {"version": integer(1), "path": text, "rows": integer()}  # "schema" came later: optional

TABLE_TYPES: dict[str, Check] = {
    "code": integer(1, MAX_TABLE_CODE),
    "path": text,
    "source": text,
    "key": optional(COLUMNS),
    "order_by": optional(COLUMNS),
    "rows": integer(),
    "schema": SCHEMA,
    "format": text,
    "fingerprint": text,
    "registered_at": number,
    "version": integer(1),
    "next_row": integer(),
    "changes": dict_of(integer()),
    "files": optional(list_of(lambda f: isinstance(f, dict) and all(
        isinstance(f.get(name), kind) for name, kind in (("path", str), ("size", int), ("mtime_ns", int), ("rows", int),
                                                         ("first_row", int), ("uri", str))))),
    "delta": optional(lambda d: isinstance(d, dict) and integer()(d.get("version"))
                      and isinstance(d.get("pinned"), bool)),
    "spark_table": optional(text),
    "previous": list_of(lambda old: isinstance(old, dict) and optional(SCHEMA)(old.get("schema")) and all(
        name in old and check(old[name]) for name, check in PREVIOUS_VERSION.items())),
}

RESULT_TYPES: dict[str, Check] = {
    "name": text,
    "query": text,
    "semantics": lambda v: v in ("control", "data"),
    "representation": text,
    "catalog_version": integer(),
    "tables": dict_of(integer()),
    "created_at": number,
    "rows": integer(),
    "columns": COLUMNS,
    "data": text,
    "index": optional(text),
    "schema": SCHEMA,
    "format": integer(),
    "shared": optional(text),
    "shared_sets": integer(),
    "named_sets": integer(),
    "shared_ids": integer(),
    "references": dict_of(integer()),
    "pruned_at": optional(number),
    "positions": optional(list_of(lambda v: isinstance(v, list) and len(v) == 2 and all(map(integer(), v)))),
}


def damaged(file: Path, what: str) -> CatalogError:
    return CatalogError(f"{file} is damaged: {what}; restore it from a backup or remove it and register/save again")


def check_fields(record: Any, cls: type, types: dict[str, Check], file: Path, where: str) -> None:
    """``record`` has the fields of dataclass ``cls``, those in ``types`` of the right type."""
    if not isinstance(record, dict):
        raise damaged(file, f"{where} must be a JSON object, not {type(record).__name__}")
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(record) - set(fields))
    if unknown:
        raise damaged(file, f"{where} has unknown field {unknown[0]!r}")
    for name, field in fields.items():
        if name not in record:
            if field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING:
                raise damaged(file, f"{where} lacks the field {name!r}")
        elif name in types and not types[name](record[name]):
            raise damaged(file, f"{where}.{name} has a wrong value: {str(record[name])[:60]!r}")


def check_format(data: dict, file: Path, known: int, what: str) -> None:
    """A ``format`` newer than ``known`` is a newer dltrace's file: say to upgrade."""
    fmt = data.get("format", 1)
    if not integer(1)(fmt):
        raise damaged(file, f"format has a wrong value: {str(fmt)[:60]!r}")
    if fmt > known:
        raise CatalogError(
            f"{file} was written by a newer dltrace ({what} format {fmt}, this one reads {known}): upgrade dltrace"
        )


def check_catalog(data: Any, file: Path, known_format: int, entry: type) -> None:
    """``catalog.json``: ``{"format", "version", "tables": {name: entry}, "retired_codes"}`` (other
    top-level fields are left to whoever wrote them); ``entry`` is the dataclass a table's
    entry is read into (``catalog.TableEntry``: passed in, this module imports no reader)."""
    if not isinstance(data, dict):
        raise damaged(file, f"it must hold a JSON object, not {type(data).__name__}")
    check_format(data, file, known_format, "catalog")
    if not integer()(data.get("version", 0)):
        raise damaged(file, f"version has a wrong value: {str(data['version'])[:60]!r}")
    if not list_of(integer(1, MAX_TABLE_CODE))(data.get("retired_codes", [])):
        raise damaged(file, "retired_codes must be a list of table codes")
    tables = data.get("tables", {})
    if not isinstance(tables, dict):
        raise damaged(file, f"tables must be a JSON object, not {type(tables).__name__}")
    codes: dict[int, str] = {}
    for name, fields in tables.items():
        if not NAME.match(name):
            raise damaged(file, f"{name[:60]!r} is not a table name (lower-case letters, digits and _)")
        check_fields(fields, entry, TABLE_TYPES, file, f"tables.{name}")
        if fields["code"] in codes:
            raise damaged(file, f"tables {codes[fields['code']]} and {name} have the same code {fields['code']}")
        codes[fields["code"]] = name


def check_result(data: Any, file: Path, known_format: int, record: type) -> None:
    """A saved result's ``result.json``, read into the dataclass ``record`` (``results.SavedResult``)."""
    if not isinstance(data, dict):
        raise damaged(file, f"it must hold a JSON object, not {type(data).__name__}")
    check_format(data, file, known_format, "result")
    check_fields(data, record, RESULT_TYPES, file, "the result")
    positions = data.get("positions")
    if (data.get("format", 1) >= 5) != (positions is not None):  # before 5 a query column may be named _pos
        raise damaged(file, "positions must be given exactly when rows.parquet has _pos (format 5 on)")
    if positions is not None:
        partitions, firsts = [p for p, _ in positions], [f for _, f in positions]
        ascending = all(a < b for a, b in zip(partitions, partitions[1:])) and all(
            a < b for a, b in zip(firsts, firsts[1:])
        )
        if not ascending or firsts[:1] != ([0] if data["rows"] else []) or any(f >= data["rows"] for f in firsts):
            raise damaged(file, "positions must name partitions and their first rows in ascending order, from row 0")
