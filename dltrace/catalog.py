"""The lineage catalog (DESIGN §3): registered tables, their codes, and Parquet with ``_dl_id``.

Layout of a catalog directory::

    catalog.json                     {"format": 1, "version": N, "tables": {name: entry}}
    tables/<name>-v<k>.parquet/      the source's columns plus ``_dl_id`` (bigint)

Any Parquet reader can join ids back to rows without dltrace.  Every write goes to a
temporary name first and is renamed into place, so a failed registration leaves the
previous state intact.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from dltrace.errors import BadInput, CatalogError, UnknownTable
from dltrace.ids import MAX_TABLE_CODE, ROW_BITS, split_id

FORMAT = 1
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


class Catalog:
    """A catalog directory; reads ``catalog.json`` lazily and rewrites it atomically."""

    def __init__(self, directory: str | os.PathLike = ".dltrace") -> None:
        self.directory = Path(directory)
        self.version = 0
        self.tables: dict[str, TableEntry] = {}
        self._load()

    @property
    def file(self) -> Path:
        return self.directory / "catalog.json"

    def _load(self) -> None:
        if not self.file.exists():
            return
        try:
            data = json.loads(self.file.read_text())
        except (OSError, ValueError) as error:
            raise CatalogError(f"cannot read {self.file}: {error}") from None
        if data.get("format", 1) > FORMAT:
            raise CatalogError(
                f"{self.file} was written by a newer dltrace (catalog format {data['format']}, "
                f"this one reads {FORMAT}): upgrade dltrace"
            )
        self.version = int(data.get("version", 0))
        self.tables = {name: TableEntry(**entry) for name, entry in data.get("tables", {}).items()}

    def save(self) -> None:
        """Write ``catalog.json`` atomically with the version advanced by one."""
        self.directory.mkdir(parents=True, exist_ok=True)
        self.version += 1
        data = {
            "format": FORMAT,
            "version": self.version,
            "tables": {name: asdict(entry) for name, entry in sorted(self.tables.items())},
        }
        fd, tmp = tempfile.mkstemp(dir=self.directory, prefix=".catalog-", suffix=".json")
        with os.fdopen(fd, "w") as handle:
            json.dump(data, handle, indent=2)
        os.replace(tmp, self.file)

    def entry(self, name: str) -> TableEntry:
        try:
            return self.tables[name.lower()]
        except KeyError:
            raise UnknownTable(
                f"table '{name}' is not registered: run `dltrace register {name} PATH` first"
            ) from None

    def data_path(self, name: str) -> Path:
        """Absolute path of a table's Parquet with ``_dl_id``."""
        return (self.directory / self.entry(name).path).resolve()

    def schemas(self) -> dict[str, dict[str, str]]:
        """``{table: {column: spark_type}}`` for qualifying queries (``_dl_id`` not included)."""
        return {name: dict(entry.schema) for name, entry in self.tables.items()}

    def table_of_code(self, code: int) -> str:
        for name, entry in self.tables.items():
            if entry.code == code:
                return name
        raise CatalogError(f"no registered table has code {code}")

    def table_of_id(self, dl_id: int) -> str:
        return self.table_of_code(split_id(dl_id)[0])

    def next_code(self) -> int:
        used = {entry.code for entry in self.tables.values()}
        code = next((c for c in range(1, MAX_TABLE_CODE + 1) if c not in used), None)
        if code is None:
            raise CatalogError(f"the catalog is full ({MAX_TABLE_CODE} tables)")
        return code


def source_fingerprint(path: Path, fmt: str, options: dict) -> str:
    """A digest of the source files (names, sizes, modification times) and the options,
    so that registering the same source again is recognised and costs nothing."""
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    digest = hashlib.sha256(json.dumps([fmt, options], sort_keys=True).encode())
    for file in files:
        if file.name.startswith((".", "_")):
            continue
        stat = file.stat()
        digest.update(f"{file.relative_to(path) if file != path else file.name}|{stat.st_size}|{stat.st_mtime_ns}".encode())
    return digest.hexdigest()[:32]


def read_source(spark, path: Path, fmt: str):
    reader = spark.read
    if fmt == "csv":
        reader = reader.option("header", "true").option("inferSchema", "true")
    return reader.format(fmt).load(str(path))


def guess_format(path: Path) -> str:
    suffixes = {s.lower().lstrip(".") for s in path.suffixes}
    if path.is_dir():
        suffixes |= {p.suffix.lower().lstrip(".") for p in path.iterdir() if p.is_file()}
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
) -> TableEntry:
    """Register ``path`` as table ``name``: ids dense from 0 in ``order_by`` order (ties and
    the default follow the source's own row order), written as Parquet with ``_dl_id``."""
    from pyspark.sql import functions as F
    from pyspark.sql.utils import AnalysisException

    if not NAME_PATTERN.match(name):
        raise BadInput(f"'{name}' is not a valid table name: use letters, digits and _")
    name = name.lower()
    source = Path(path).expanduser().resolve()
    if not source.exists():
        raise BadInput(f"{path}: no such file or directory")
    fmt = (fmt or guess_format(source)).lower()
    if fmt not in FORMATS:
        raise BadInput(f"unknown format '{fmt}': use one of {', '.join(FORMATS)}")
    key = [k.strip() for k in key] if key else None
    order_by = [c.strip() for c in order_by] if order_by else None
    fingerprint = source_fingerprint(source, fmt, {"key": key, "order_by": order_by})
    previous = catalog.tables.get(name)
    if previous and previous.fingerprint == fingerprint and (catalog.directory / previous.path).exists():
        return previous

    try:
        frame = read_source(spark, source, fmt)
        columns = frame.columns
    except AnalysisException as error:
        raise BadInput(f"cannot read {path} as {fmt}: {str(error).splitlines()[0]}") from None
    lower = {c.lower(): c for c in columns}
    if ID_COLUMN in lower:
        raise BadInput(f"{path} already has a column named {ID_COLUMN}, which dltrace reserves")
    for option, cols in (("--key", key), ("--order-by", order_by)):
        missing = [c for c in cols or [] if c.lower() not in lower]
        if missing:
            raise BadInput(f"{option}: {path} has no column {', '.join(missing)} (it has {', '.join(columns)})")
    if key:
        duplicates = frame.count() - frame.select(*key).distinct().count()
        if duplicates:
            raise BadInput(f"--key {','.join(key)} is not unique in {path}: {duplicates} rows repeat a key")

    code = previous.code if previous else catalog.next_code()
    ordered = _with_dense_ids(frame, code, order_by or [], F)
    version = 1 + max(
        [int(m.group(1)) for p in (catalog.directory / "tables").glob(f"{name}-v*.parquet")
         if (m := re.match(rf"{re.escape(name)}-v(\d+)\.parquet$", p.name))] or [0]
    )
    relative = f"tables/{name}-v{version}.parquet"
    final = catalog.directory / relative
    tmp = catalog.directory / "tables" / f".tmp-{name}-{os.getpid()}-{time.time_ns()}"
    tmp.parent.mkdir(parents=True, exist_ok=True)
    try:
        ordered.write.mode("overwrite").parquet(str(tmp))
        rows = spark.read.parquet(str(tmp)).count()
        os.replace(tmp, final)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    entry = TableEntry(
        code=code,
        path=relative,
        source=str(source),
        key=key,
        order_by=order_by,
        rows=rows,
        schema={f.name: f.dataType.simpleString() for f in frame.schema.fields},
        format=fmt,
        fingerprint=fingerprint,
    )
    catalog.tables[name] = entry
    catalog.save()
    return entry


def _with_dense_ids(frame, code: int, order_by: list[str], F):
    """``frame`` sorted by ``order_by`` then source order, with ``_dl_id`` numbered densely.

    A global sort range-partitions the rows; each row's position is its partition's
    offset (the sizes of the partitions before it) plus its index inside the partition.
    This is what ``RDD.zipWithIndex`` does, kept in the JVM and distributed.
    """
    columns = frame.columns
    source_order = [F.col("_metadata.file_path"), F.monotonically_increasing_id()]
    staged = frame.select(
        *columns,
        source_order[0].alias("__file"),
        source_order[1].alias("__pos"),
    )
    ordered = staged.orderBy(*[F.col(c).asc_nulls_first() for c in order_by], "__file", "__pos")
    numbered = ordered.select(
        *columns,
        F.spark_partition_id().alias("__part"),
        F.monotonically_increasing_id().alias("__mono"),
    ).persist()
    sizes = dict(numbered.groupBy("__part").count().collect())
    offsets, running = {}, 0
    for part in sorted(sizes):
        offsets[part] = running
        running += sizes[part]
    offset_map = F.create_map(*[item for p, o in offsets.items() for item in (F.lit(p), F.lit(o))]) if offsets else None
    row_number = (
        F.element_at(offset_map, F.col("__part")) + (F.col("__mono") - F.shiftleft(F.col("__part").cast("long"), 33))
        if offset_map is not None
        else F.lit(0)
    )
    dl_id = F.lit(code << ROW_BITS).cast("long") + row_number.cast("long")
    return numbered.select(*columns, dl_id.alias(ID_COLUMN))
