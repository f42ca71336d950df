"""Key indexes: a table version's key columns and ids, sorted by key, built on first use.

An impact source names bad rows mostly by key (``orders WHERE o_orderkey = 42``).  Table
files are in id order, which is chronological, so their min/max statistics say nothing about
keys and a key predicate reads the whole table.  A key index holds ``(key columns, _dl_id)``
sorted by key in small row groups: a lookup reads one or two of them.  A table version never
changes, so its key index is built once (written aside, renamed into place) and kept, at
``indexes/<table>-v<k>-key-<digest of the key columns>.parquet``.  Tables under ``KEY_INDEX_MIN_ROWS`` rows are scanned
instead: there the scan costs no more than the lookup.
"""

from __future__ import annotations

import hashlib
import json

from dltrace.catalog import ID_COLUMN, quoted
from dltrace.engine import Engine
from dltrace.recovery import build_once
from dltrace.storage import Location
from dltrace.table_data import read_parquet, table_rows

KEY_INDEX_MIN_ROWS = 1_000_000
ROW_GROUP_BYTES = 1 << 20
DIRECTORY = "indexes"


def key_index_path(session: Engine, table: str, version: int | None = None) -> Location:
    entry = session.catalog.entry(table)
    digest = hashlib.sha256(json.dumps(entry.key).encode()).hexdigest()[:8]
    return session.catalog.directory / DIRECTORY / f"{table}-v{version or entry.version}-key-{digest}.parquet"


def ensure_key_index(session: Engine, table: str, version: int | None = None) -> Location:
    """The key index of ``table`` at data ``version`` (None: current), built if missing."""
    entry = session.catalog.entry(table)
    data = table_rows(session.spark, session.catalog, table, version)
    return build_once(key_index_path(session, table, version), lambda tmp: (
        data.select(*map(quoted, entry.key), ID_COLUMN).orderBy(*map(quoted, entry.key))
        .write.option("parquet.block.size", ROW_GROUP_BYTES).parquet(str(tmp))
    ))


def rows_to_search(session: Engine, table: str, version: int | None, columns: set[str]):
    """Where to evaluate a predicate over ``columns`` of ``table`` (at data ``version``), and
    its rows as a DataFrame: the key index when the predicate reads key columns only and the
    table is large, else the table's own rows (``dltrace.table_data``)."""
    catalog = session.catalog
    entry = catalog.entry(table)
    key = {c.lower() for c in entry.key or []}
    # an index sorts by the current key's columns, also for an earlier version: it is a
    # layout for lookups, not a uniqueness claim
    rows = next((old["rows"] for old in entry.previous if old["version"] == version), entry.rows)
    schema = entry.version_schema(version)
    if key and columns and columns <= key | {ID_COLUMN} and columns & key and rows >= KEY_INDEX_MIN_ROWS:
        index_schema = {c: t for c, t in schema.items() if c.lower() in key | {ID_COLUMN}} if schema else None
        index = ensure_key_index(session, table, version)
        return index, read_parquet(session.spark, index, index_schema)
    return catalog.data_path(table, version), table_rows(session.spark, catalog, table, version)
