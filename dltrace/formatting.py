"""Printing results with lineage: an aligned table for people, JSON lines and CSV for tools.

In JSON, ``DL`` is the sorted list of ids as integers, whatever the representation.
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import decimal
import json
from collections.abc import Callable, Iterable, Iterator
from typing import IO

import numpy as np

from dltrace.bddsets import ids_from_bytes
from dltrace.catalog import Catalog
from dltrace.errors import BadInput
from dltrace.ids import ROW_BITS, split_id

DL = "DL"
DL_VALUES = "DL_values"  # with LINEAGE ON: each granule id's decoded values, in DL order
TABLE_DEFAULT_LIMIT = 50


def output_limit(args: argparse.Namespace) -> int | None:
    """How many rows to print: --limit, or a screenful for the table format; never negative."""
    limit = args.limit if args.limit is not None else (TABLE_DEFAULT_LIMIT if args.format == "table" else None)
    if limit is not None and limit < 0:
        raise BadInput("--limit must be 0 or more")
    return limit


def check_distinct_columns(columns: list[str]) -> None:
    """Refuse to print output columns of one name (``select *`` over a join of tables that
    share column names): each format keys values by name, so one column's values would show
    under the other's.  Spark's own ``Row.asDict()`` keeps the last of them, and saving
    refuses such a result; naming them apart with ``AS`` is the fix.

    >>> check_distinct_columns(["year", "origin", "year"])
    Traceback (most recent call last):
      ...
    dltrace.errors.BadInput: the query outputs 2 columns named year (columns 1 and 3): name them apart with AS (e.g. t.year AS t_year) to print its rows
    """  # noqa: E501
    seen: dict[str, list[int]] = {}
    for i, name in enumerate(columns, 1):
        seen.setdefault(name.lower(), []).append(i)
    for name, positions in seen.items():
        if len(positions) > 1:
            where = ", ".join(map(str, positions[:-1])) + f" and {positions[-1]}"
            raise BadInput(f"the query outputs {len(positions)} columns named {name} (columns {where}): name them "
                           f"apart with AS (e.g. t.{name} AS t_{name}) to print its rows")


def plain_value(value):
    """A JSON-friendly value: dates as ISO text, decimals as numbers."""
    if isinstance(value, decimal.Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, (dt.date, dt.datetime)):
        return value.isoformat()
    if isinstance(value, (bytes, bytearray)):
        return value.hex()
    if isinstance(value, list):
        return [plain_value(v) for v in value]
    if isinstance(value, dict):
        return {k: plain_value(v) for k, v in value.items()}
    return value


def lineage_ids(value) -> list[int]:
    """A DL value of any representation (array of ids, roBDD bytes) as sorted ids."""
    if isinstance(value, (bytes, bytearray)):
        return ids_from_bytes(bytes(value)).tolist()
    return sorted(int(i) for i in value)


def row_dicts(rows: Iterable) -> Iterator[dict]:
    """Spark rows as dicts, ``DL`` as a sorted list of ints."""
    for row in rows:
        record = row.asDict(recursive=False) if hasattr(row, "asDict") else dict(row)
        if DL in record and record[DL] is not None:
            record[DL] = lineage_ids(record[DL])
        yield record


def describe_lineage(ids, catalog: Catalog, shown: int = 4) -> str:
    """A short human description of sorted ids (a list or a numpy array): ``store#0 item#0
    sales#0`` or ``4285 ids: lineitem 4200, …``."""
    if len(ids) <= shown:
        return " ".join(f"{catalog.table_of_code(code)}#{row}" for code, row in map(split_id, map(int, ids))) or "∅"
    codes, counts = np.unique(np.asarray(ids, dtype=np.int64) >> ROW_BITS, return_counts=True)
    parts = ", ".join(f"{catalog.table_of_code(int(code))} {n}" for code, n in zip(codes, counts))
    return f"{len(ids)} ids: {parts}"


def write_json(records: Iterable[dict], out: IO[str]) -> int:
    count = 0
    for record in records:
        out.write(json.dumps({k: plain_value(v) for k, v in record.items()}) + "\n")
        count += 1
    return count


def write_csv(records: Iterable[dict], columns: list[str], out: IO[str]) -> int:
    writer = csv.writer(out)
    writer.writerow(columns)
    count = 0
    for record in records:
        writer.writerow(
            [json.dumps(plain_value(record[c])) if c in (DL, DL_VALUES) else plain_value(record[c]) for c in columns]
        )
        count += 1
    return count


def write_table(
    records: list[dict],
    columns: list[str],
    catalog: Catalog,
    out: IO[str],
    describe: Callable[[list[int]], str] | None = None,
) -> None:
    """An aligned text table; ``DL`` shown decoded to tables and row numbers, or by
    ``describe`` (LINEAGE ON: granule values)."""
    describe = describe or (lambda ids: describe_lineage(ids, catalog))
    cells = [
        [describe(r[c]) if c == DL and r[c] is not None else _text(plain_value(r[c])) for c in columns]
        for r in records
    ]
    widths = [max([len(c)] + [len(row[i]) for row in cells]) for i, c in enumerate(columns)]
    widths = [min(w, 60) for w in widths]
    line = lambda values: "  ".join(v[:w].ljust(w) for v, w in zip(values, widths)).rstrip()  # noqa: E731
    out.write(line(columns) + "\n")
    out.write(line(["-" * w for w in widths]) + "\n")
    for row in cells:
        out.write(line(row) + "\n")


def _text(value) -> str:
    return "NULL" if value is None else str(value)


def table_footer(shown: int, total: int | None = None, noun: str = "rows") -> str:
    """The line under a table: how many rows it shows, and of how many when it shows fewer.

    >>> table_footer(0, 7)
    '(0 of 7 rows: raise --limit to see more)'
    >>> table_footer(3)
    '(3 rows)'
    """
    if total is not None and total > shown:
        return f"({shown} of {total} {noun}: raise --limit to see more)"
    return f"({shown} {noun})"
