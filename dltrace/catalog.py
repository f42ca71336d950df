"""The lineage catalog (its format: docs/formats.md): registered tables, their codes, and Parquet
with ``_dl_id``; registering a source is ``dltrace.registration``.

Layout of a catalog directory::

    catalog.json                     {"format": 1, "version": N, "tables": {name: entry}}
    tables/<name>-v<k>.parquet/      the source's columns plus ``_dl_id`` (bigint)

A Parquet source registered without ``--order-by`` is not copied: the entry lists its files
(``files``) and ``<name>-v<k>.parquet`` is never written (dltrace/table_data.py).

Any Parquet reader can join ids back to rows without dltrace.  Every write goes to a
temporary name first and is renamed into place (on an object store, which has no rename, it
is written in place and named by ``catalog.json`` once complete: ``dltrace.storage``), so a
failed registration leaves the previous state intact.  The catalog and the sources are
``dltrace.storage.Location``s: a local path or a filesystem URI (``hdfs://``, ``s3a://``).
A revision writes ``<name>-v<k+1>.parquet`` and keeps the earlier versions (listed in the
entry's ``previous``): saved results' lineage may name their ids.
"""

from __future__ import annotations

import difflib
import json
import os
import random
import re
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import TypeVar

from dltrace import commits, faults
from dltrace.errors import BadInput, CatalogError, UnknownTable
from dltrace.ids import MAX_TABLE_CODE, split_id
from dltrace.recovery import sweep, sweep_tables, temporary_name
from dltrace.storage import Location, location
from dltrace.table_data import backquoted
from dltrace.validation import check_catalog

FORMAT = 2  # 2: versions committed to log/ (catalog.json a copy of the newest); 1 loads
COMMIT_ATTEMPTS = 100  # a commit that finds a newer version re-reads and tries again, this many times
T = TypeVar("T")
ID_COLUMN = "_dl_id"
NAME_PATTERN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass
class TableEntry:
    """One registered table, as stored in ``catalog.json``."""

    code: int
    path: str
    source: str
    key: list[str] | None
    order_by: list[str] | None
    rows: int
    schema: dict[str, str]
    format: str = "parquet"
    fingerprint: str = ""
    registered_at: float = field(default_factory=time.time)
    # Revisions (docs/semantics.md, "Ids").  ``version`` numbers this table's data (``path`` ends in
    # ``-v<version>.parquet``); ``next_row`` is one past the highest row number ever given
    # out, so a revision's new ids never collide with old ones; ``changes`` counts rows
    # against the previous version; ``previous`` lists the earlier versions, oldest first,
    # whose Parquet is kept so that impact can still find results computed from them.
    version: int = 1
    next_row: int = 0
    changes: dict[str, int] = field(default_factory=dict)
    previous: list[dict] = field(default_factory=list)
    # In place (dltrace/table_data.py): the source's Parquet files, read where they are, ids
    # computed from each file's first row and the row's index in it; None: ``path`` holds a copy.
    files: list[dict] | None = None
    # A Delta table's (dltrace/delta.py): {"version": the log's version registered, "pinned":
    # whether --version chose it}; a Spark catalog table's name ([db.]table).  Written only when set.
    delta: dict | None = None
    spark_table: str | None = None

    def version_schema(self, version: int | None) -> dict[str, str] | None:
        """The columns and types of data ``version`` (None: current), with ``_dl_id``; None
        when an old catalog did not record them."""
        old = next((o for o in self.previous if o["version"] == version), None)
        schema = old.get("schema") if old is not None else self.schema
        return {**schema, ID_COLUMN: "bigint"} if schema else None

    def version_source(self, version: int | None) -> str:
        """The source path data ``version`` (None: current) was registered from."""
        old = next((o for o in self.previous if o["version"] == version), None)
        return old.get("source", self.source) if old is not None else self.source

    def only_grew_since(self, version: int) -> bool:
        """Whether every data version after ``version`` kept each row of the one before with
        its id (its ``changes`` count none removed or changed): only rows were added since."""
        later = [old.get("changes") for old in self.previous if old["version"] > version] + [self.changes]
        return self.version > version and all(changes and changes.get("removed") == 0 for changes in later)

    def version_paths(self) -> dict[int, str]:
        """``{data version: path}`` of every version this table has had, current included."""
        return {**{old["version"]: old["path"] for old in self.previous}, self.version: self.path}


class Schemas(dict):
    """``{table: {column: spark_type}}`` that knows which catalog it describes, so that the
    rewriter's "not registered" says where it looked."""

    location: str = ""


class Catalog:
    """A catalog directory; reads its newest version lazily and changes it by commits that
    never overwrite another writer's (``commit``).

    Opening one also removes what killed writes left behind (``dltrace.recovery``)."""

    def __init__(self, directory: str | os.PathLike | Location = ".dltrace") -> None:
        # absolute: Spark resolves relative paths against its own working directory (the
        # JVM's, where Spark started, whatever os.chdir did since; a Connect server's)
        self.directory = location(directory)
        sweep(self.directory)
        self._load()
        sweep_tables(self.directory, {p for entry in self.tables.values() for p in entry.version_paths().values()})

    @property
    def file(self) -> Location:
        return self.directory / "catalog.json"

    @property
    def log(self) -> Location:
        return self.directory / commits.DIRECTORY

    def _load(self) -> None:
        """Read the newest version: ``catalog.json``, or a newer entry of the log (a writer
        killed, or still running, between its commit and its rewrite of ``catalog.json``)."""
        self.version = 0
        self.tables: dict[str, TableEntry] = {}
        # codes never given out again: those of dropped tables (saved lineage may still hold
        # their ids) and those a registration reserved while it writes ids (``reserve_code``)
        self.retired_codes: list[int] = []
        data, file = self._read(self.file)
        newest = commits.latest(self.log)
        if newest is not None and newest[0] > (data or {}).get("version", 0):
            data, file = self._read(newest[1])
        if data is None:
            return
        check_catalog(data, file, FORMAT, TableEntry)
        self.version = data.get("version", 0)
        self.retired_codes = data.get("retired_codes", [])
        self.tables = {
            name: TableEntry(**_with_revision_fields(entry)) for name, entry in data.get("tables", {}).items()
        }

    @staticmethod
    def _read(file: Location) -> tuple[dict | None, Location]:
        try:
            return json.loads(file.read_text()), file
        except FileNotFoundError:
            return None, file
        except (OSError, ValueError) as error:
            raise CatalogError(f"cannot read {file}: {error}") from None

    def commit(self, change: Callable[[Catalog], T]) -> T:
        """Apply ``change`` to the newest version and commit it as the next one; when another
        writer committed that version first, read theirs and apply ``change`` again (it may
        raise, e.g. when the other writer registered the same table: nothing is written).
        What ``change`` returns is returned."""
        for attempt in range(COMMIT_ATTEMPTS):
            if attempt:
                time.sleep(random.uniform(0, 0.005 * attempt))  # spread writers that collide again
            self._load()
            outcome = change(self)
            text = json.dumps(self._record(self.version + 1), indent=2)
            if commits.publish(self.log, self.version + 1, text):
                self.version += 1
                faults.point("catalog.after-commit")
                self._rewrite_file(text)
                return outcome
        raise CatalogError(f"catalog {self.directory}: {COMMIT_ATTEMPTS} other commits came first; try again")

    def _record(self, version: int) -> dict:
        return {
            "format": FORMAT,
            "version": version,
            "tables": {name: _record_fields(entry) for name, entry in sorted(self.tables.items())},
            **({"retired_codes": sorted(self.retired_codes)} if self.retired_codes else {}),
        }

    def _rewrite_file(self, text: str) -> None:
        """``catalog.json`` holds the version just committed, for readers of the file alone
        (older dltrace, other tools); unless a newer one was committed meanwhile, whose writer
        rewrites it.  Then the log's old entries go."""
        if not (self.log / commits.entry_name(self.version + 1)).exists():
            self.file.write_atomically(text, temporary_name(".catalog", ".json"))
        commits.prune(self.log, self.version)

    def remove(self, name: str) -> TableEntry:
        """Commit the catalog without table ``name`` (its code retired); the entry removed, as
        the newest version had it."""
        def change(catalog: Catalog) -> TableEntry:
            entry = catalog.entry(name)
            del catalog.tables[name.lower()]
            catalog.retired_codes.append(entry.code)
            return entry
        return self.commit(change)

    def reserve_code(self) -> int:
        """A table code committed as taken before a registration writes ids with it, so that a
        concurrent registration cannot be given the same one (``release_code`` or the entry's
        commit takes it back out of ``retired_codes``)."""
        def reserve(catalog: Catalog) -> int:
            code = catalog.next_code()
            catalog.retired_codes.append(code)
            return code
        return self.commit(reserve)

    def release_code(self, code: int) -> None:
        """Give back a code ``reserve_code`` took for a registration that failed."""
        def release(catalog: Catalog) -> None:
            if code in catalog.retired_codes:
                catalog.retired_codes.remove(code)
        self.commit(release)

    def entry(self, name: str) -> TableEntry:
        try:
            return self.tables[name.lower()]
        except KeyError:
            close = difflib.get_close_matches(name.lower(), list(self.tables), n=1)
            if close:
                raise UnknownTable(f"table '{name}' is not registered in catalog {self.directory} (did you mean "
                                   f"{close[0]}?)") from None
            raise UnknownTable(
                f"table '{name}' is not registered in catalog {self.directory}: "
                f"run `dltrace register {name} PATH` first, or choose the catalog with --catalog DIR"
            ) from None

    def data_path(self, name: str, version: int | None = None) -> Location:
        """Where a table's Parquet with ``_dl_id`` is (``version``: an earlier data version)."""
        entry = self.entry(name)
        if version is None:
            return self.directory / entry.path
        paths = entry.version_paths()
        if version not in paths:
            known = ", ".join(f"v{v}" for v in sorted(paths))
            raise BadInput(f"table '{name}' has no data version v{version} (it has {known})")
        return self.directory / paths[version]

    def schemas(self) -> Schemas:
        """``{table: {column: spark_type}}`` for qualifying queries (``_dl_id`` not included)."""
        schemas = Schemas({name: dict(entry.schema) for name, entry in self.tables.items()})
        schemas.location = str(self.directory)
        return schemas

    def table_of_code(self, code: int) -> str:
        for name, entry in self.tables.items():
            if entry.code == code:
                return name
        raise CatalogError(f"no registered table has code {code}")

    def table_of_id(self, dl_id: int) -> str:
        return self.table_of_code(split_id(dl_id)[0])

    def next_code(self) -> int:
        used = {entry.code for entry in self.tables.values()} | set(self.retired_codes)
        code = next((c for c in range(1, MAX_TABLE_CODE + 1) if c not in used), None)
        if code is None:
            raise CatalogError(f"the catalog is full ({MAX_TABLE_CODE} tables)")
        return code


OPTIONAL_FIELDS = ("delta", "spark_table")  # left out when None: such catalogs read as before they existed


def _record_fields(entry: TableEntry) -> dict:
    return {k: v for k, v in asdict(entry).items() if v is not None or k not in OPTIONAL_FIELDS}


def _with_revision_fields(entry: dict) -> dict:
    """A ``catalog.json`` entry, completed if it was written before revisions existed
    (its ids were dense then, so no row number at or above ``rows`` was given out)."""
    match = re.search(r"-v(\d+)\.parquet$", entry["path"])
    return {"version": int(match.group(1)) if match else 1, "next_row": entry["rows"], **entry}


def quoted(name: str):
    """A column by its exact name (dots and spaces in source column names stay literal)."""
    from pyspark.sql import functions as F

    return F.col(backquoted(name))
