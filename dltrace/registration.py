"""Registration: a source becomes a catalog table, its rows given ids (``_dl_id``) in
``order_by`` order, either copied as Parquet with ids or, for Parquet without ``order_by``,
read in place (dltrace/table_data.py); a revision of a registered source keeps the ids of
its unchanged rows (docs/semantics.md, "Ids").  The entry is committed to the catalog
(``Catalog.commit``) against its newest version, so registrations in other processes are
never lost, and the code of a new copied table is reserved by a commit before any id is
written with it.
"""

from __future__ import annotations

import hashlib
import json
import os
import posixpath
import re
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import PurePosixPath

from dltrace import faults
from dltrace.catalog import ID_COLUMN, NAME_PATTERN, Catalog, TableEntry, quoted
from dltrace.delta import is_delta, live_files
from dltrace.errors import BadInput, CatalogError
from dltrace.ids import make_id
from dltrace.recovery import WRITER_FILE, temporary_name, writer
from dltrace.storage import Location, found, glob, is_glob, location
from dltrace.table_data import file_records, listed_files, previous_ids, unchanged_files

FORMATS = ("parquet", "csv", "json", "orc")


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


@dataclass(frozen=True)
class Reader:
    """A job's ``spark.read`` (``dltrace run``): options and schema ("" for none), used as they are."""

    options: dict[str, str]
    schema: str = ""


def read_source(spark, path: Location, fmt: str, header: bool = True, as_read: Reader | None = None):
    """The source as a DataFrame; a CSV's first row gives the column names when ``header``
    (else Spark names them ``_c0``, ``_c1``, ...), and its types are inferred; with
    ``as_read``, the source as that reader reads it."""
    reader = spark.read
    if as_read is not None:
        reader = reader.options(**as_read.options)
        return (reader.schema(as_read.schema) if as_read.schema else reader).format(fmt).load(str(path))
    if fmt == "csv":
        reader = reader.option("header", str(header).lower()).option("inferSchema", "true")
    return reader.format(fmt).load(str(path))


def csv_first_row(spark, path: Location) -> list[str | None]:
    """A CSV's first row as text, as Spark takes it for the column names (None for an empty value)."""
    row = spark.read.format("csv").option("header", "false").load(str(path)).first()
    return list(row) if row is not None else []


DATA_LIKE = re.compile(r"^\s*([-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?|\d{4}-\d{2}-\d{2}.*)\s*$")


def check_header(path: str | os.PathLike, row: list[str | None], header: bool | None) -> None:
    """Refuse a CSV whose first row, taken as column names by default, looks like data (a
    number or a date among its values): a headerless file would silently lose its first row.
    ``row`` is the first row as the file holds it (``csv_first_row``), not Spark's column
    names, which rename repeated values (1, 1 become 11, 12).

    >>> check_header("n.csv", ["00", "ALGERIA", "0", None], None)
    Traceback (most recent call last):
    dltrace.errors.BadInput: n.csv: the first row looks like data, not column names (00, 0): register with --no-header (columns _c0, _c1, ...), or --header to take it as names
    """  # noqa: E501
    data_like = [value for value in row if value is not None and DATA_LIKE.match(value)]
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
    delta_version: int | None = None,
    spark_table: str | None = None,
    as_read: Reader | None = None,
) -> TableEntry:
    """Register ``path`` as table ``name``: ids dense from 0 in ``order_by`` order (else the
    source's own row order), written as Parquet with ``_dl_id``.

    A Parquet source (a file, a directory, a glob) without ``order_by`` is registered in
    place unless ``copy``: ids follow the files sorted by path and the rows' order in each
    (dltrace/table_data.py), and a revision keeps the ids of its unchanged files; a revision
    of a copied table with the same key is copied.

    ``header`` (CSV only): whether the first row holds the column names; by default it does,
    unless it looks like data (``check_header``, refused: say which).  An empty file is refused.

    Registering a revised source (docs/semantics.md, "Ids"): with the same key as before, unchanged rows keep
    their ids and new or changed rows get new ones, numbered in ``order_by`` order after the
    highest row number the table ever had, so an old id never names a different row.  The
    new data is a new version; the old version's Parquet stays for impact on old rows.  The
    entry is committed against the catalog's newest version (module docstring).

    A Delta table (a directory with ``_delta_log``) is the live files of ``delta_version``
    (None: the newest) of its log.  ``as_read``: as a job's ``spark.read`` reads it, no guessing.
    """
    if not NAME_PATTERN.match(name):
        raise BadInput(f"'{name}' is not a valid table name: use letters, digits and _")
    name = name.lower()
    source = location(path, "source")
    if is_delta(source):
        if fmt not in (None, "parquet", "delta") or header is not None:
            raise BadInput(f"{path} is a Delta table: --format and --header do not apply to it")
        return _register_delta(spark, catalog, name, source, key, order_by, copy, delta_version)
    if delta_version is not None:
        raise BadInput(f"--version applies to Delta tables, and {path} has no _delta_log")
    fmt, key, order_by, options = _options(source, path, fmt, header, key, order_by, copy)
    fingerprint = source_fingerprint(source, fmt, {**options, **({"table": spark_table} if spark_table else {}),
                                                   **({"reader": asdict(as_read)} if as_read else {})})
    previous = catalog.tables.get(name)
    if previous and previous.fingerprint == fingerprint and (
            previous.files or (catalog.directory / previous.path).exists()):
        return previous  # the same source registered again: nothing to do
    frame = _checked_source(spark, source, path, fmt, header, key, order_by, as_read)
    new = Registration(name, previous, _next_version(catalog, name, previous), str(source), fmt, key, order_by,
                       fingerprint, {f.name: f.dataType.simpleString() for f in frame.schema.fields}, spark_table)
    keeps_ids = key and previous and previous.key == key and not previous.files
    files = listed_files(source) if fmt == "parquet" and not order_by and not copy and not keeps_ids else None
    if files:
        return _in_place(spark, catalog, new, files)
    return _copied(spark, catalog, new, frame)


def _in_place(spark, catalog: Catalog, new: Registration, files: list[Location], **fields) -> TableEntry:
    """Commit the entry of a table read in place from ``files``, ids in their order.  A source
    registered in place before (a folder that gains files every day) keeps the ids of its
    files that are unchanged (same path, size and modification time), in their order; only
    the files added or changed are read (their footers) and numbered after every id given."""
    kept, added = unchanged_files(new.previous.files if new.previous else None, files)
    records = kept + (file_records(spark, added, new.first_row) if added else [])
    rows, unchanged = sum(record["rows"] for record in records), sum(record["rows"] for record in kept)
    entry = new.entry(rows, rows - unchanged, {"unchanged": unchanged, "new": rows - unchanged}, order_by=None,
                      files=records, **fields)
    return catalog.commit(new.committed(entry))


def _copied(spark, catalog: Catalog, new: Registration, frame) -> TableEntry:
    """``_register_copy`` with the table's code, a new table's reserved for the copy first."""
    previous = new.previous
    reserved = None if previous else catalog.reserve_code()
    try:
        return _register_copy(spark, catalog, new, frame, frame.columns, previous.code if previous else reserved)
    except BaseException:
        if reserved is not None:
            catalog.release_code(reserved)
        raise


def _options(source: Location, path, fmt: str | None, header: bool | None, key: list[str] | None,
             order_by: list[str] | None, copy: bool) -> tuple[str, list[str] | None, list[str] | None, dict]:
    """The source's format, the key and order columns stripped, and the options that make
    another source of the same files (part of the fingerprint)."""
    if not found(source):
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


def _next_version(catalog: Catalog, name: str, previous: TableEntry | None) -> int:
    """One past every data version the table had, and every one found under ``tables/``."""
    return 1 + max(
        [
            int(m.group(1))
            for p in (catalog.directory / "tables").glob(f"{name}-v*.parquet")
            if (m := re.match(rf"{re.escape(name)}-v(\d+)\.parquet$", p.name))
        ]
        + list(previous.version_paths() if previous else [0])
    )


def _checked_source(spark, source: Location, path, fmt: str, header: bool | None, key: list[str] | None,
                    order_by: list[str] | None, as_read: Reader | None = None):
    """The source as a DataFrame; refused without columns, with ``_dl_id``, without the
    named columns, or when its key repeats."""
    from pyspark.sql.utils import AnalysisException

    guessing = fmt == "csv" and header is None and as_read is None  # whether the first row holds names
    try:
        frame = read_source(spark, source, fmt, header is not False, as_read)
        frame.columns  # noqa: B018 - reads the schema: an unreadable source fails here
    except AnalysisException as error:
        if guessing:  # a row of data as names can repeat a renamed one (1, 1 as 11, 12, and 11)
            check_header(path, csv_first_row(spark, source), header)
        raise BadInput(f"cannot read {path} as {fmt}: {str(error).splitlines()[0]}") from None
    if guessing and any(DATA_LIKE.match(c) for c in frame.columns):
        check_header(path, csv_first_row(spark, source), header)
    return _checked_frame(frame, path, key, order_by)


def _checked_frame(frame, path, key: list[str] | None, order_by: list[str] | None):
    """``frame`` (the source read), refused as ``_checked_source`` says."""
    from pyspark.sql import functions as F

    columns = frame.columns
    if not columns:
        raise BadInput(f"{path} has no columns (an empty file?): there is nothing to register")
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
    return frame


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
    spark_table: str | None = None  # registered with --table: the Spark catalog's name

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
            spark_table=self.spark_table,
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
    matched = previous_ids(catalog.directory / previous.path, previous, staged, new.key, new.schema) \
        if previous else None
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


def _register_delta(spark, catalog: Catalog, name: str, source: Location, key: list[str] | None,
                    order_by: list[str] | None, copy: bool, version: int | None) -> TableEntry:
    """A Delta table: the live files of ``version`` of its log (dltrace/delta.py), in place
    unless ``order_by`` or ``copy`` (then copied like any source, and a snapshot)."""
    key = [k.strip() for k in key] if key else None
    order_by = [c.strip() for c in order_by] if order_by else None
    at, files = live_files(str(source), version)
    if not files:
        raise BadInput(f"{source}: version {at} of this Delta table has no data files: there is nothing to register")
    delta = {"version": at, "pinned": version is not None}
    fingerprint = hashlib.sha256(json.dumps(
        ["delta", delta, [str(f) for f in files], key, order_by, copy]).encode()).hexdigest()[:32]
    previous = catalog.tables.get(name)
    if previous and previous.fingerprint == fingerprint:
        return previous  # the same version registered again: nothing to do
    frame = _checked_frame(spark.read.parquet(*map(str, files)), source, key, order_by)
    new = Registration(name, previous, _next_version(catalog, name, previous), str(source), "delta", key, order_by,
                       fingerprint, {f.name: f.dataType.simpleString() for f in frame.schema.fields})
    if order_by or copy:
        return _copied(spark, catalog, new, frame)
    return _in_place(spark, catalog, new, files, delta=delta)


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
        **({"delta": entry.delta} if entry.delta else {}),
        **({"changes": entry.changes} if entry.changes else {}),  # what it kept of the version before
    }

def _in_source_order(frame, F):
    """``frame`` with ``__file`` and ``__pos``: the source's own row order, for ties (a source
    without files, such as a view of the Spark catalog, has no ``_metadata``: its order alone)."""
    from pyspark.errors import AnalysisException

    try:
        frame.select(F.col("_metadata.file_path")).schema  # noqa: B018 - analysed here, also over Connect
        file = F.col("_metadata.file_path")
    except AnalysisException:
        file = F.lit(None).cast("string")
    return frame.select(
        *map(quoted, frame.columns),
        file.alias("__file"),
        F.monotonically_increasing_id().alias("__pos"),
    )


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
