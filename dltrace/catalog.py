"""The lineage catalog (its format: docs/formats.md): registered tables, their codes, and Parquet with ``_dl_id``.

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

import hashlib
import json
import operator
import os
import posixpath
import random
import re
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from functools import reduce
from pathlib import PurePosixPath
from typing import TypeVar

from dltrace import commits, faults
from dltrace.errors import BadInput, CatalogError, UnknownTable
from dltrace.ids import MAX_TABLE_CODE, make_id, split_id
from dltrace.recovery import WRITER_FILE, sweep, sweep_tables, temporary_name, writer
from dltrace.storage import Location, glob, is_glob, location
from dltrace.table_data import backquoted, file_records, listed_files
from dltrace.validation import check_catalog

FORMAT = 2  # 2: versions committed to log/ (catalog.json a copy of the newest); 1 loads
COMMIT_ATTEMPTS = 100  # a commit that finds a newer version re-reads and tries again, this many times
T = TypeVar("T")
ID_COLUMN = "_dl_id"
FORMATS = ("parquet", "csv", "json", "orc")
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

    def version_schema(self, version: int | None) -> dict[str, str] | None:
        """The columns and types of data ``version`` (None: current), with ``_dl_id``; None
        when an old catalog did not record them."""
        old = next((o for o in self.previous if o["version"] == version), None)
        schema = old.get("schema") if old is not None else self.schema
        return {**schema, ID_COLUMN: "bigint"} if schema else None

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
            "tables": {name: asdict(entry) for name, entry in sorted(self.tables.items())},
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


def source_fingerprint(source: Location, fmt: str, options: dict) -> str:
    """A digest of the source files (names, sizes, modification times) and the options,
    so that registering the same source again is recognised and costs nothing."""
    if is_glob(source) and not source.exists():
        # a glob's files by their whole path
        files = [(str(match), info) for match in glob(source) if (info := match.info()).is_file]
    elif source.is_file():
        files = [(source.name, source.info())]  # a file by its name
    else:  # a directory's files by their path in it, in pathlib's order
        infos = sorted(source.files(), key=lambda info: info.path.split("/"))
        files = [(posixpath.relpath(info.path, source.path), info) for info in infos]
    digest = hashlib.sha256(json.dumps([fmt, options], sort_keys=True).encode())
    for named, info in files:
        if not info.base_name.startswith((".", "_")):
            digest.update(f"{named}|{info.size}|{info.mtime_ns}".encode())
    return digest.hexdigest()[:32]


def read_source(spark, path: Location, fmt: str, header: bool = True):
    """The source as a DataFrame; a CSV's first row gives the column names when ``header``
    (else Spark names them ``_c0``, ``_c1``, ...), and its types are inferred."""
    reader = spark.read
    if fmt == "csv":
        reader = reader.option("header", str(header).lower()).option("inferSchema", "true")
    return reader.format(fmt).load(str(path))


DATA_LIKE = re.compile(r"^\s*([-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?|\d{4}-\d{2}-\d{2}.*)\s*$")


def check_header(path: str | os.PathLike, columns: list[str], header: bool | None) -> None:
    """Refuse a CSV whose first row, taken as column names by default, looks like data (a
    number or a date among the names): a headerless file would silently lose its first row.

    >>> check_header("n.csv", ["00", "ALGERIA", "0"], None)
    Traceback (most recent call last):
    dltrace.errors.BadInput: n.csv: the first row looks like data, not column names (00, 0): register with --no-header (columns _c0, _c1, ...), or --header to take it as names
    """  # noqa: E501
    data_like = [c for c in columns if DATA_LIKE.match(c)]
    if header is None and data_like:
        raise BadInput(
            f"{path}: the first row looks like data, not column names ({', '.join(data_like[:3])}): "
            "register with --no-header (columns _c0, _c1, ...), or --header to take it as names"
        )


def guess_format(path: Location) -> str:
    suffixes = {s.lower().lstrip(".") for s in PurePosixPath(path.name).suffixes}
    if path.is_dir():
        suffixes |= {PurePosixPath(p.name).suffix.lower().lstrip(".") for p in path.iterdir() if p.is_file()}
    for fmt in FORMATS:
        if fmt in suffixes:
            return fmt
    if "jsonl" in suffixes or "ndjson" in suffixes:
        return "json"
    return "parquet"


def register(
    spark,
    catalog: Catalog,
    name: str,
    path: str | os.PathLike,
    key: list[str] | None = None,
    order_by: list[str] | None = None,
    fmt: str | None = None,
    header: bool | None = None,
    copy: bool = False,
) -> TableEntry:
    """Register ``path`` as table ``name``: ids dense from 0 in ``order_by`` order (ties and
    the default follow the source's own row order), written as Parquet with ``_dl_id``.

    A Parquet source (a file, a directory, a glob) without ``order_by`` is registered in
    place unless ``copy``: nothing is written, ids follow the files sorted by path and the
    rows' order in each (dltrace/table_data.py); a directory with subdirectories (a
    partitioned layout) and a revision of a copied table with the same key (whose unchanged
    rows keep their ids) are copied.

    ``header`` (CSV only): whether the first row holds the column names.  By default it
    does, unless it looks like data (``check_header``), which is refused: say which.
    A source with no rows is a table with its schema and no ids; one without columns (an
    empty file) is refused.

    Registering a revised source (docs/semantics.md, "Ids"): with the same key as before, unchanged rows keep
    their ids and new or changed rows get new ones, numbered in ``order_by`` order after the
    highest row number the table ever had, so an old id never names a different row.  The
    new data is a new version; the old version's Parquet stays for impact on old rows.

    The entry is committed to the catalog (``Catalog.commit``) against its newest version:
    registrations in other processes meanwhile are kept, and one of the same table makes
    this one fail with nothing written.
    """
    from pyspark.sql.utils import AnalysisException

    if not NAME_PATTERN.match(name):
        raise BadInput(f"'{name}' is not a valid table name: use letters, digits and _")
    name = name.lower()
    source = location(path, "source")
    fmt, key, order_by, options = _options(source, path, fmt, header, key, order_by, copy)
    fingerprint = source_fingerprint(source, fmt, options)
    previous = catalog.tables.get(name)
    if (
        previous
        and previous.fingerprint == fingerprint
        and (previous.files or (catalog.directory / previous.path).exists())
    ):
        return previous
    try:
        frame = read_source(spark, source, fmt, header is not False)
        columns = frame.columns
    except AnalysisException as error:
        raise BadInput(f"cannot read {path} as {fmt}: {str(error).splitlines()[0]}") from None
    _check_columns(frame, path, fmt, header, key, order_by)
    version = 1 + max(
        [
            int(m.group(1))
            for p in (catalog.directory / "tables").glob(f"{name}-v*.parquet")
            if (m := re.match(rf"{re.escape(name)}-v(\d+)\.parquet$", p.name))
        ]
        + list(previous.version_paths() if previous else [0])
    )
    new = Registration(name, previous, version, str(source), fmt, key, order_by, fingerprint,
                       {f.name: f.dataType.simpleString() for f in frame.schema.fields})
    keeps_ids = key and previous and previous.key == key and not previous.files
    files = listed_files(source) if fmt == "parquet" and not order_by and not copy and not keeps_ids else None
    if files:
        records = file_records(spark, files, new.first_row)
        rows = sum(record["rows"] for record in records)
        entry = new.entry(rows, rows, {"unchanged": 0, "new": rows}, order_by=None, files=records)
        return catalog.commit(new.committed(entry))
    reserved = None if previous else catalog.reserve_code()
    try:
        return _register_copy(spark, catalog, new, frame, columns, previous.code if previous else reserved)
    except BaseException:
        if reserved is not None:
            catalog.release_code(reserved)
        raise


def _options(source: Location, path, fmt: str | None, header: bool | None, key: list[str] | None,
             order_by: list[str] | None, copy: bool) -> tuple[str, list[str] | None, list[str] | None, dict]:
    """The source's format, the key and order columns stripped, and the options that make
    another source of the same files (part of the fingerprint)."""
    if not source.exists() and not (is_glob(source) and glob(source)):
        raise BadInput(f"{path}: no such file or directory")
    fmt = (fmt or guess_format(source)).lower()
    if fmt not in FORMATS:
        raise BadInput(f"unknown format '{fmt}': use one of {', '.join(FORMATS)}")
    if header is not None and fmt != "csv":
        raise BadInput(f"--header/--no-header apply to CSV sources, and {path} is read as {fmt}")
    key = [k.strip() for k in key] if key else None
    order_by = [c.strip() for c in order_by] if order_by else None
    # a CSV read without a header is another source; with one, as before this option existed
    options = {
        "key": key,
        "order_by": order_by,
        **({"header": False} if fmt == "csv" and header is False else {}),
        **({"copy": True} if copy else {}),
    }
    return fmt, key, order_by, options


def _check_columns(frame, path, fmt: str, header: bool | None, key: list[str] | None,
                   order_by: list[str] | None) -> None:
    """Refuse a source without columns, with ``_dl_id``, without the named columns, or whose
    key repeats."""
    from pyspark.sql import functions as F

    columns = frame.columns
    if not columns:
        raise BadInput(f"{path} has no columns (an empty file?): there is nothing to register")
    if fmt == "csv":
        check_header(path, columns, header)
    lower = {c.lower(): c for c in columns}
    if ID_COLUMN in lower:
        raise BadInput(f"{path} already has a column named {ID_COLUMN}, which dltrace reserves")
    for option, cols in (("--key", key), ("--order-by", order_by)):
        missing = [c for c in cols or [] if c.lower() not in lower]
        if missing:
            raise BadInput(f"{option}: {path} has no column {', '.join(missing)} (it has {', '.join(columns)})")
    if key:
        # one aggregation job: rows beyond the first of each key
        repeats = frame.groupBy(*map(quoted, key)).count().where(F.col("count") > 1)
        duplicates = repeats.agg(F.coalesce(F.sum(F.col("count") - 1), F.lit(0))).first()[0]
        if duplicates:
            raise BadInput(f"--key {','.join(key)} is not unique in {path}: {duplicates} rows repeat a key")


@dataclass(frozen=True)
class Registration:
    """What a registration knows before it counts rows: the table, the entry it replaces
    (``previous``) and the new entry's fields."""

    name: str
    previous: TableEntry | None
    version: int
    source: str
    format: str
    key: list[str] | None
    order_by: list[str] | None
    fingerprint: str
    schema: dict[str, str]

    @property
    def first_row(self) -> int:
        """The row number of the first new id: one past every number the table gave out."""
        return self.previous.next_row if self.previous else 0

    @property
    def relative(self) -> str:
        return f"tables/{self.name}-v{self.version}.parquet"

    def entry(self, rows: int, new_rows: int, changes: dict[str, int], code: int = 0, **fields) -> TableEntry:
        """The new entry: a new data version of ``rows`` rows, ``new_rows`` of them with new
        ids; ``code`` 0 is given when committed (``committed``)."""
        previous = self.previous
        fields = {"order_by": self.order_by, **fields}
        return TableEntry(
            code=previous.code if previous else code,
            path=self.relative,
            source=self.source,
            key=self.key,
            rows=rows,
            schema=self.schema,
            format=self.format,
            fingerprint=self.fingerprint,
            version=self.version,
            next_row=self.first_row + new_rows,
            changes={**changes, "removed": previous.rows - changes["unchanged"]} if previous else {},
            previous=[*previous.previous, _version_record(previous)] if previous else [],
            **fields,
        )

    def committed(self, entry: TableEntry) -> Callable[[Catalog], TableEntry]:
        """The change ``Catalog.commit`` applies: ``entry`` replaces ``previous``, which must
        still be the newest version's (else another process registered the table meanwhile);
        a new table takes its reserved code, or the first free one when it has none yet."""
        def change(catalog: Catalog) -> TableEntry:
            if catalog.tables.get(self.name) != self.previous:
                raise CatalogError(f"table {self.name} was registered by another process while this registration "
                                   f"ran; nothing was changed: register it again to register this source")
            code = entry.code
            if code in catalog.retired_codes:
                catalog.retired_codes.remove(code)  # reserved for it
            elif not code:
                code = catalog.next_code()
            catalog.tables[self.name] = replace(entry, code=code)
            return catalog.tables[self.name]
        return change


def _register_copy(spark, catalog: Catalog, new: Registration, frame, columns: list[str], code: int) -> TableEntry:
    """Write the table's Parquet with ids of ``code`` (aside, then renamed into place) and
    commit its entry; the unchanged rows of a revision with the same key keep their ids."""
    from pyspark.sql import functions as F

    previous = new.previous
    staged = _in_source_order(frame, F)
    matched = _match_previous(catalog, previous, staged, new.key, new.schema, F) if previous else None
    fresh = staged if matched is None else matched.where(F.col("__old").isNull()).drop("__old")
    first_new_id = make_id(code, new.first_row)
    table, cached, _ = with_positions(
        fresh.orderBy(*[F.col(c).asc_nulls_first() for c in new.order_by or []], "__file", "__pos")
        .drop("__file", "__pos"),
        ID_COLUMN,
        start=first_new_id,
    )
    if matched is not None:
        kept = matched.where(F.col("__old").isNotNull()).select(*map(quoted, columns), F.col("__old").alias(ID_COLUMN))
        table = kept.unionByName(table).orderBy(ID_COLUMN)  # files in id order: lookups by id skip row groups
    final = catalog.directory / new.relative
    # written aside and renamed into place; where renames are not atomic (object stores),
    # written in place: only the commit makes it part of the catalog
    staging = catalog.directory / "tables" / temporary_name(f".tmp-{new.name}") if final.atomic_rename else final
    staging.parent.mkdir()
    interrupted = kept = False
    try:
        table.write.mode("overwrite").parquet(str(staging))
        (staging / WRITER_FILE).write_text(writer())  # for the sweep, should this writer die before its commit
        faults.point("register.after-data")
        rows, new_rows = (
            spark.read.parquet(str(staging))
            .agg(F.count(F.lit(1)), F.coalesce(F.sum((F.col(ID_COLUMN) >= first_new_id).cast("long")), F.lit(0)))
            .first()
        )
        entry = new.entry(rows, new_rows, {"unchanged": rows - new_rows, "new": new_rows}, code)
        if previous and not new_rows and entry.changes["removed"] == 0:
            # the same rows with the same ids: no new data version, only the new fingerprint
            entry = replace(previous, source=new.source, order_by=new.order_by, format=new.format,
                            fingerprint=new.fingerprint, registered_at=time.time(), changes=entry.changes)
        elif staging != final:
            staging.rename(final)
            staging = final  # removed unless the commit succeeds
        faults.point("register.after-rename")
        entry = catalog.commit(new.committed(entry))
        kept = entry.path == new.relative
    except KeyboardInterrupt:
        interrupted = True  # the JVM call it cut short leaves Py4J unable to answer
        raise
    finally:
        if not kept:
            staging.remove()
        if not interrupted:
            cached.unpersist()
    return entry


def _with_revision_fields(entry: dict) -> dict:
    """A ``catalog.json`` entry, completed if it was written before revisions existed
    (its ids were dense then, so no row number at or above ``rows`` was given out)."""
    match = re.search(r"-v(\d+)\.parquet$", entry["path"])
    return {"version": int(match.group(1)) if match else 1, "next_row": entry["rows"], **entry}


def _version_record(entry: TableEntry) -> dict:
    """What ``previous`` keeps of a version a revision replaces."""
    return {
        "version": entry.version,
        "path": entry.path,
        "rows": entry.rows,
        "schema": entry.schema,
        "source": entry.source,
        "fingerprint": entry.fingerprint,
        "registered_at": entry.registered_at,
        **({"files": entry.files} if entry.files else {}),
    }


def quoted(name: str):
    """A column by its exact name (dots and spaces in source column names stay literal)."""
    from pyspark.sql import functions as F

    return F.col(backquoted(name))


def _in_source_order(frame, F):
    """``frame`` with ``__file`` and ``__pos``: the source's own row order, for ties."""
    return frame.select(
        *map(quoted, frame.columns),
        F.col("_metadata.file_path").alias("__file"),
        F.monotonically_increasing_id().alias("__pos"),
    )


def _match_previous(catalog: Catalog, previous: TableEntry, staged, key: list[str] | None, schema: dict[str, str], F):
    """``staged`` plus ``__old``: the id the row had in the previous version if it is unchanged
    there (a row with the same key and null-safely equal values in every column), else NULL.

    None when rows cannot be matched (no key, another key or schema than before, or the old
    data is gone): then every row is new.  Keys are unique in both versions, so a row
    matches at most one old row.
    """
    old_path = catalog.directory / previous.path
    if not key or previous.key != key or previous.schema != schema or not old_path.exists():
        return None
    columns = list(schema)
    old = staged.sparkSession.read.parquet(str(old_path)).select(
        *[quoted(c).alias(f"__o{i}") for i, c in enumerate(columns)], F.col(ID_COLUMN).alias("__old")
    )
    same_row = reduce(operator.and_, [quoted(c).eqNullSafe(F.col(f"__o{i}")) for i, c in enumerate(columns)])
    return staged.join(old, same_row, "left").select(*map(quoted, staged.columns), "__old")


def with_positions(ordered, name: str, start: int = 0):
    """``(ordered plus column name, cached, rows)``: each row's position in ``ordered``,
    densely from ``start``, and the number of rows.

    A sorted frame is range-partitioned in order, so a row's position is the sizes of the
    partitions before it plus its index inside its own: what ``RDD.zipWithIndex`` does, kept
    in the JVM and distributed.  The rows are cached so that both passes (sizes, then rows)
    see the same partitions; unpersist ``cached`` once the result is written.
    """
    from pyspark.sql import functions as F

    columns = [quoted(c) for c in ordered.columns]
    cached = ordered.select(
        *columns,
        F.spark_partition_id().alias("__part"),
        F.monotonically_increasing_id().alias("__mono"),
    ).persist()
    sizes = dict(cached.groupBy("__part").count().collect())
    offsets, running = {}, start
    for part in sorted(sizes):
        offsets[part] = running
        running += sizes[part]
    if not offsets:
        return cached.select(*columns, F.lit(start).cast("long").alias(name)), cached, 0
    offset_map = F.create_map(*[item for p, o in offsets.items() for item in (F.lit(p), F.lit(o).cast("long"))])
    position = F.element_at(offset_map, F.col("__part")) + (
        F.col("__mono") - F.shiftleft(F.col("__part").cast("long"), 33)
    )
    return cached.select(*columns, position.alias(name)), cached, running - start
