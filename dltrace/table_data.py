"""A table version's rows with ``_dl_id``, however it was registered (docs/formats.md,
``catalog.json`` and ``tables/<name>-v<k>.parquet``).

A *copied* table is Parquet dltrace wrote at registration, ``_dl_id`` stored.  An *in-place*
table (a Parquet source registered without ``--order-by``) is the user's own files, listed in
the catalog entry's ``files`` (absolute path, size, modification time, rows, the row number
of the file's first row and the URI Spark names it by), sorted by path; a row's id is computed
when it is read::

    _dl_id = (code << 48) + first_row of its file + _metadata.row_index

Every reader of a table's rows goes through ``table_rows`` (a DataFrame) or ``rows_sql``
(Spark SQL text, for the spark-sql scripts); DuckDB reads them with ``duckdb_rows_sql``.
Reading an in-place table whose files changed since registration stops with ``SourceChanged``.
"""

from __future__ import annotations

import os
import posixpath
from dataclasses import replace
from urllib.parse import unquote

from dltrace.errors import BadInput, SourceChanged
from dltrace.ids import make_id
from dltrace.storage import Location, glob, is_glob, location

ID_COLUMN = "_dl_id"


def backquoted(name: str) -> str:
    """``name`` as one Spark SQL identifier or path, whatever it holds (dots, spaces, backquotes).

    >>> backquoted("order date"), backquoted("a`b")
    ('`order date`', '`a``b`')
    """
    return "`" + name.replace("`", "``") + "`"


def listed_files(source: str | os.PathLike | Location) -> list[Location] | None:
    """The files a source names, as Spark lists them (a file; a directory's files without
    the hidden ``_``/``.`` ones, in ``column=value`` subdirectories too: a partitioned layout,
    whose partition columns Spark reads from the paths; a glob's matches), sorted by path;
    None when it holds other directories."""
    source = location(source, "source")
    if source.is_file():
        return [source]
    if source.is_dir():
        found = []
        for info in source.files():
            parts = posixpath.relpath(info.path, source.path).split("/")
            if any(part.startswith((".", "_")) for part in parts):
                continue
            if not all("=" in part.strip("=") for part in parts[:-1]):
                return None
            found.append(replace(source, path=info.path))
        return sorted(found, key=str)
    if is_glob(source):
        children = glob(source)
        return None if any(not p.is_file() for p in children) else sorted(children, key=str)
    return None


def partition_base(source: str, files: list[dict]) -> str | None:
    """The directory Spark reads partition columns below (``basePath``), when ``files`` lie in
    ``column=value`` subdirectories of ``source``; None otherwise."""
    root = location(source, "source").path.rstrip("/")
    if any(posixpath.dirname(location(f["path"], "source").path) != root for f in files) and \
            all(location(f["path"], "source").path.startswith(root + "/") for f in files):
        return source
    return None


def spark_uri_key(uri: str) -> str:
    """A file URI as Spark names it, reduced to compare with ``str`` of its ``Location``:
    ``file:/p`` and ``file:///p`` are the plain path ``/p`` (a local path is given to Spark
    as such), and escapes are undone.

    >>> spark_uri_key("file:/data/a%20b.parquet"), spark_uri_key("hdfs://nn:8020/d/x.parquet")
    ('/data/a b.parquet', 'hdfs://nn:8020/d/x.parquet')
    """
    uri = unquote(uri)
    if uri.startswith("file:"):
        return "/" + uri[len("file:"):].lstrip("/")
    return uri


def file_records(spark, files: list[Location], first_row: int) -> list[dict]:
    """What the catalog keeps of each in-place file: its row count from the footer (no data
    read), size and modification time (to notice a change) and the URI Spark's
    ``_metadata.file_path`` gives it (from Spark's file index, which reads no data; the index
    writes a local file ``file:///p``, ``_metadata`` ``file:/p``)."""
    import pyarrow.parquet as pq

    uris = {}
    for uri in spark.read.parquet(*map(str, files)).inputFiles():
        if uri.startswith("file:///"):
            uri = "file:/" + uri[len("file:///"):]
        uris[spark_uri_key(uri)] = uri
    records = []
    for file in files:
        try:
            with file.open() as handle:
                rows = pq.ParquetFile(handle).metadata.num_rows
        except Exception as error:  # noqa: BLE001 - pyarrow's errors have no common base
            raise BadInput(f"cannot read the Parquet footer of {file}: {str(error).splitlines()[0]}") from None
        info = file.info()
        key = spark_uri_key(str(file))
        records.append({"path": str(file), "size": info.size, "mtime_ns": info.mtime_ns, "rows": rows,
                        "first_row": first_row, "uri": uris.get(key, "file:" + key if file.local else str(file))})
        first_row += rows
    return records


def unchanged_files(before: list[dict] | None, files: list[Location]) -> tuple[list[dict], list[Location]]:
    """The records of ``before`` (an in-place version's files) whose files are among ``files``
    unchanged (path, size, modification time), in their order, and the files of ``files``
    that are new or changed."""
    known = {record["path"]: record for record in before or []}
    kept = [known[str(file)] for file in files if str(file) in known
            and (file.info().size, file.info().mtime_ns) == (known[str(file)]["size"], known[str(file)]["mtime_ns"])]
    paths = {record["path"] for record in kept}
    return sorted(kept, key=lambda record: record["first_row"]), [file for file in files if str(file) not in paths]


def version_files(entry, version: int | None = None) -> list[dict] | None:
    """The recorded files of data ``version`` (None: current) of an in-place table; None for a
    copied one."""
    if version is None or version == entry.version:
        return entry.files
    old = next((o for o in entry.previous if o["version"] == version), {})
    return old.get("files")


def check_unchanged(catalog, name: str, version: int | None = None, added: bool = True) -> None:
    """Stop, naming the file, when an in-place table's files changed since registration (a
    stat per file, and a listing of the source for the current version; ``added``: a file
    added to the source counts as a change)."""
    entry = catalog.entry(name)
    files = version_files(entry, version)
    if not files:
        return
    if version is None or version == entry.version:
        named = f"--table {entry.spark_table}" if entry.spark_table else entry.source
        again = f"register it again (`dltrace register {name} {named}`)"
    else:  # registering again makes a newer version: these rows' files are gone for good
        again = (f"the rows of its data version v{version} are gone, so what was computed from them must be computed "
                 f"again from the current version (v{entry.version})")
    for record in files:
        info = location(record["path"], "source").info()
        if not info.is_file:
            raise SourceChanged(
                f"table {name} is registered in place and its file {record['path']} is gone: {again}"
            )
        if (info.size, info.mtime_ns) != (record["size"], record["mtime_ns"]):
            raise SourceChanged(
                f"table {name} is registered in place and its file {record['path']} changed since: {again}"
            )
    if (version is None or version == entry.version) and entry.delta:
        from dltrace.delta import changed

        if (why := changed(name, entry.source, entry.delta)) is not None:
            raise SourceChanged(why)
    elif added and (version is None or version == entry.version):
        listed = listed_files(entry.source) or []
        added = sorted(set(map(str, listed)) - {record["path"] for record in files})
        if added:
            raise SourceChanged(f"table {name} is registered in place and {added[0]} was added to it since: {again}")


def id_sql(
    code: int,
    files: list[dict],
    path_column: str = "_metadata.file_path",
    row_column: str = "_metadata.row_index",
    key: str = "uri",
    bigint: str = "L",
    quote=None,
    unknown: str = "raise_error",
) -> str:
    """The id of an in-place row as an SQL expression over its file and row number in it
    (Spark SQL by default; the names and literal syntax can be another dialect's).  A file
    the catalog does not list fails the query rather than giving rows no id."""
    quote = quote or quote_string
    if len(files) == 1:
        return f"({make_id(code, files[0]['first_row'])}{bigint} + {row_column})"
    cases = " ".join(f"WHEN {quote(f[key])} THEN {make_id(code, f['first_row'])}{bigint}" for f in files)
    fail = f"{unknown}(concat('dltrace: a file not registered in place: ', {path_column}))"
    return f"(CASE {path_column} {cases} ELSE {fail} END + {row_column})"


def quote_string(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def checked_files(catalog, name: str, version: int | None = None) -> tuple:
    """``(entry, files)`` of table ``name`` at data ``version``; ``files`` (in place only;
    None for a copied table) checked unchanged since registration."""
    entry = catalog.entry(name)
    files = version_files(entry, version)
    if files:
        check_unchanged(catalog, name, version)
    return entry, files


def table_rows(spark, catalog, name: str, version: int | None = None):
    """Data ``version`` (None: current) of table ``name`` as a DataFrame: its columns and ``_dl_id``."""
    from pyspark.sql import functions as F


    entry, files = checked_files(catalog, name, version)
    if not files:
        return read_parquet(spark, catalog.data_path(name, version), entry.version_schema(version))
    schema = {c: t for c, t in (entry.version_schema(version) or {}).items() if c != ID_COLUMN}
    reader = spark.read
    if schema:
        reader = reader.schema(", ".join(f"{backquoted(c)} {t}" for c, t in schema.items()))
    base = partition_base(entry.version_source(version), files)
    if base is not None:
        reader = reader.option("basePath", base)
    frame = reader.parquet(*(f["path"] for f in files))
    return frame.select("*", F.expr(id_sql(entry.code, files)).alias(ID_COLUMN))


def rows_sql(catalog, name: str, version: int | None = None) -> str:
    """The same as ``table_rows``, as a Spark SQL query (for ``spark-sql`` scripts)."""
    entry, files = checked_files(catalog, name, version)
    if not files:
        return f"SELECT * FROM parquet.{backquoted(str(catalog.data_path(name, version)))}"
    old = next((o for o in entry.previous if o["version"] == version), {})
    if old.get("delta", entry.delta if not old else None):
        # a Delta table's directory also holds files its log removed: each live file read alone
        return " UNION ALL ".join(
            f"SELECT *, {id_sql(entry.code, [f])} AS {ID_COLUMN} FROM parquet.{backquoted(f['path'])}" for f in files)
    source = old.get("source", entry.source)  # lists the recorded files, as checked above
    return f"SELECT *, {id_sql(entry.code, files)} AS {ID_COLUMN} FROM parquet.{backquoted(source)}"


def duckdb_rows_sql(catalog, name: str, version: int | None = None) -> str:
    """The same as ``table_rows``, as a DuckDB query (no dltrace needed to read it)."""
    entry, files = checked_files(catalog, name, version)
    if not files:
        return f"SELECT * FROM read_parquet('{os.fspath(catalog.data_path(name, version))}/*.parquet')"

    def quote(text: str) -> str:
        return "'" + text.replace("'", "''") + "'"

    paths = ", ".join(quote(f["path"]) for f in files)
    ids = id_sql(entry.code, files, "filename", "file_row_number", "path", "", quote, "error")
    return (
        f"SELECT * EXCLUDE (filename, file_row_number), {ids} AS {ID_COLUMN} "
        f"FROM read_parquet([{paths}], filename = true, file_row_number = true)"
    )


def read_parquet(spark, path: Location, schema: dict[str, str] | None = None):
    """Parquet with a known schema: given one, Spark skips the job that infers it from the
    files' footers (a noticeable part of a sub-second lookup)."""
    reader = spark.read
    if schema:
        reader = reader.schema(", ".join(f"{backquoted(name)} {kind}" for name, kind in schema.items()))
    return reader.parquet(str(path))


def previous_ids(old_path: Location, previous, staged, key: list[str] | None, schema: dict[str, str]):
    """``staged`` (a revision of copied table ``previous``, its rows in source order by
    ``__file``, ``__pos``) plus ``__old``: the id the row had in the previous version if it is
    unchanged there, else NULL.  With a key: the row with the same key and null-safely equal
    values in every column (keys are unique in both versions).  Without one: the n-th of the
    rows equal in every column, in source order, is the n-th of them in the previous version
    (a CSV rewritten each day with rows added keeps the ids of the rows it had).

    None when rows cannot be matched (another key or schema than before, or the old data is
    gone): then every row is new.
    """
    from functools import reduce
    from operator import and_

    from pyspark.sql import Window
    from pyspark.sql import functions as F

    if previous.key != key or previous.schema != schema or not old_path.exists():
        return None
    columns = list(schema)
    old = staged.sparkSession.read.parquet(str(old_path)).select(
        *[F.col(backquoted(c)).alias(f"__o{i}") for i, c in enumerate(columns)], F.col(ID_COLUMN).alias("__old"))
    same_row = [F.col(backquoted(c)).eqNullSafe(F.col(f"__o{i}")) for i, c in enumerate(columns)]
    if not key:  # equal rows paired by their occurrence in each version
        old = old.withColumn("__on", F.row_number().over(
            Window.partitionBy(*[f"__o{i}" for i in range(len(columns))]).orderBy("__old")))
        staged = staged.withColumn("__n", F.row_number().over(
            Window.partitionBy(*[F.col(backquoted(c)) for c in columns]).orderBy("__file", "__pos")))
        same_row.append(F.col("__n") == F.col("__on"))
    return staged.join(old, reduce(and_, same_row), "left").select(
        *[F.col(backquoted(c)) for c in staged.columns if c != "__n"], "__old")
