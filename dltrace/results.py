"""Saved results: a query's rows with their lineage, kept for impact and explain (the format:
docs/formats.md, "Saved results").

Layout inside the catalog directory::

    results/<name>/result.json              metadata; the result exists iff this file does
    results/<name>/<stamp>/rows.parquet/    _pos, the query's columns, DL (files in _row order)
    results/<name>/<stamp>/index.parquet/   id, _row: the forward index, sorted by id
    results/<name>/<stamp>/shared.parquet/  set_id, id: lineage sets shared by rows, each stored once
    results/<name>/<stamp>/result.json      a copy of this save's metadata (read while later saves reference it)

A row's full DL is its own ids (``DL``) plus the ids of every shared set it names in
``DL_shared`` (README, "Shared lineage"): an uncorrelated subquery's lineage belongs to every
row (TPC-H Q11's 1,048 rows share ~32,000 ids), and is stored and searched once.  Any
Parquet reader recovers a row's ids with plain SQL: ``unnest(DL)``, union the ``id`` of the
``shared.parquet`` rows whose ``set_id`` is in ``DL_shared``.

``result_format`` holds what ``result.json`` records, how rows are numbered and how a DL
names upstream rows ("References"); ``staleness`` what a result was computed from and
whether that changed; ``result_cleanup`` which earlier saves' data may go.

A save writes a fresh ``<stamp>`` directory (named for its writer, ``dltrace.recovery``),
then replaces ``result.json`` atomically, then deletes the data it replaced: a reader sees
the old result or the new one, never a mix, and a failed save leaves the old one intact.
Saves of one result in several processes at once each land, the last to replace
``result.json`` last; the data of a save another live process is writing is never deleted
(its own writer, or the sweep once it is gone, deletes it when no metadata names it).  A
save leaves the catalog version (the tables' data) as it is; the result records the one it read.
"""

from __future__ import annotations

import json
import os
import posixpath
import time
from collections.abc import Sequence
from dataclasses import dataclass

from dltrace import faults, staleness
from dltrace.catalog import NAME_PATTERN, Catalog, quoted
from dltrace.errors import BadInput, CatalogError
from dltrace.ids import FIRST_REFERENCE_ID, ROW_BITS
from dltrace.named_sets import numbered_sets, persisted
from dltrace.plain import names_read  # noqa: F401 - importable from here, as before
from dltrace.recovery import referenced_saves, temporary_name, writer
from dltrace.result_cleanup import remove_unreferenced, remove_unreferenced_upstream
from dltrace.result_format import (  # noqa: F401 - importable from here, as before the split
    DIRECTORY,
    DL,
    FORMAT,
    FORMAT_NAMED_SETS,
    FORMAT_WITHOUT_NAMED_SETS,
    INDEX_ID,
    INDEX_SCHEMA,
    METADATA,
    PARTITION_BITS,
    POSITION,
    ROW,
    SHARED_ID,
    SHARED_REFS,
    SHARED_SCHEMA,
    SHARED_SET,
    SavedResult,
    UnknownResult,
    lineage_ids,
    metadata_text,
    partition_positions,
    rows_sql,
)
from dltrace.rewriter.output import DL_NAMES
from dltrace.storage import Location, location
from dltrace.table_data import backquoted, read_parquet
from dltrace.validation import check_result

ROWS_ROW_GROUP_BYTES = 4 << 20  # small row groups: a lookup by _row reads little
INDEX_ROW_GROUP_BYTES = 1 << 20
# Parquet writer options of every file a save writes (rows, shared sets, forward index),
# chosen from measurements (README, "Where performance stands"; `python -m tpch space
# --candidates`): writer v2 stores a sorted id column DELTA_BINARY_PACKED when its dictionary
# is off (ids are distinct within a row: a dictionary rarely pays, and keeps the writer from
# the delta encoding), zstd compresses what is left.  Columns stay array<bigint> / bigint,
# which every Parquet reader decodes natively.  At TPC-H SF 1 (22 queries) the median query
# went from 4.2 to 1.36 bytes per id (rows.parquet and shared.parquet, every file).
WRITE_OPTIONS: dict[str, str] = {
    "compression": "zstd",
    "parquet.writer.version": "v2",
    f"parquet.enable.dictionary#{DL}.list.element": "false",  # rows.parquet's DL
    f"parquet.enable.dictionary#{SHARED_ID}": "false",  # shared.parquet's id, and index.parquet's (INDEX_ID)
    f"parquet.enable.dictionary#{POSITION}": "false",  # rows.parquet's _pos: runs of consecutive numbers
}
# a forward index by default from this many rows and bytes on: below, one scan of the saved
# DLs is as fast as an index lookup plus the fetch of the hit rows (README: measured at 11,620
# rows, where it does not pay, and at 1.5M rows, where it halves the time)
INDEX_MIN_BYTES = 8 << 20
INDEX_MIN_ROWS = 200_000


class ResultStore:
    """The saved results of one catalog."""

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self.directory = catalog.directory / DIRECTORY

    def _metadata_file(self, name: str) -> Location:
        return self.directory / name / METADATA

    def list(self) -> list[SavedResult]:
        """Every saved result, by name."""
        return [self._read(file) for file in self.directory.glob(f"*/{METADATA}")]

    def exists(self, name: str) -> bool:
        return bool(NAME_PATTERN.match(name)) and self._metadata_file(name.lower()).exists()

    def get(self, name: str) -> SavedResult:
        file = self._metadata_file(name.lower())
        if not NAME_PATTERN.match(name) or not file.exists():
            known = ", ".join(r.name for r in self.list()) or "none yet"
            raise UnknownResult(
                f"no saved result '{name}' (saved: {known}); save one with `dltrace sql QUERY --save {name}`"
            )
        return self._read(file)

    def _read(self, file: Location) -> SavedResult:
        try:
            data = json.loads(file.read_text())
        except (OSError, ValueError) as error:
            raise CatalogError(f"cannot read {file}: {error}") from None
        check_result(data, file, FORMAT, SavedResult)
        return SavedResult(**data)

    def path(self, relative: str) -> Location:
        return self.catalog.directory / relative

    def referenced(self, result: SavedResult) -> list[tuple[SavedResult, int]]:
        """The saves whose rows ``result`` names in its DLs, with their codes: each the save
        recorded when ``result`` was computed, the current one or an earlier one kept for it."""
        found = []
        for name, code in sorted(result.references.items(), key=lambda item: item[1]):
            stamp = result.results.get(name)
            if stamp is None:
                raise CatalogError(f"result {result.name} names rows of result {name} but not which save: "
                                   f"save {result.name} again")
            current = self._metadata_file(name)
            if current.exists() and (upstream := self._read(current)).stamp == stamp:
                found.append((upstream, code))
                continue
            kept = self.directory / name / stamp / METADATA
            if not kept.exists():
                raise CatalogError(f"result {result.name} names rows of result {name} as saved at {stamp}, which are "
                                   f"gone: save {result.name} again")
            found.append((self._read(kept), code))
        return found

    def check_referenced(self, result: SavedResult) -> None:
        """Raise ``CatalogError`` unless every save ``result`` names, and every save those
        name, is still there (their metadata alone is read)."""
        for upstream, _ in self.referenced(result):
            self.check_referenced(upstream)

    def rows(self, spark, result: SavedResult):
        """The saved rows as stored: ``_row``, the query's columns, ``DL`` (the row's own ids)
        and, when the result has shared sets, ``DL_shared``."""
        return self._stored_rows(spark, result).selectExpr(*result.rows_sql())

    def rows_at(self, spark, result: SavedResult, rows):
        """The saved rows (as ``rows``) numbered ``rows`` (numpy int64): Spark reads only the
        row groups whose statistics hold their positions."""
        from pyspark.sql import functions as F

        wanted = [int(p) for p in result.positions_of(rows)]
        return self._stored_rows(spark, result).where(F.col(result.numbering).isin(wanted)) \
            .selectExpr(*result.rows_sql())

    def ordered_sql(self, result: SavedResult, *more: str, ordered: bool = True) -> str:
        """Spark SQL of the result's query columns (and ``more``), in its row order if ``ordered``."""
        columns, order = ", ".join([*map(backquoted, result.query_columns), *more]), f" ORDER BY {result.numbering}"
        return f"SELECT {columns} FROM parquet.{backquoted(str(self.path(result.data)))}{order if ordered else ''}"

    def _stored_rows(self, spark, result: SavedResult):
        """rows.parquet's columns as written (``_pos`` from format 5 on, ``_row`` before)."""
        return read_parquet(spark, self.path(result.data), result.schema)

    def shared_sets(self, spark, result: SavedResult):
        """The shared sets as stored, ``(set_id, id)`` sorted, or None when the result has none."""
        return read_parquet(spark, self.path(result.shared), SHARED_SCHEMA) if result.shared else None

    def row_ids(self, result: SavedResult, row: int):
        """The sorted ids (numpy int64) of row ``row``'s whole DL: its own, those of the shared
        sets it names and those of the upstream rows it names, resolved.  Read with pyarrow,
        no Spark (``result_pages``): rows are stored in ``_row`` order in small row groups,
        the shared sets in set order."""
        import numpy as np

        from dltrace import result_pages

        if not 0 <= row < result.rows:
            raise BadInput(f"result {result.name} has rows 0..{result.rows - 1}, not {row}")
        result.check_lineage(f"row {row}")
        read = result_pages.rows_at(self, result, np.array([row]), result_pages.lineage_columns(result))
        return result_pages.whole_lineages(self, result, read)[0]

    def lineage_rows(self, spark, result: SavedResult):
        """The saved rows with each row's whole ``DL`` spelled out (sorted ids: its own and
        those of the shared sets it names), without ``DL_shared``."""
        rows = self.rows(spark, result)
        if not (result.references or result.shared):
            return rows
        return self._resolved(spark, result, rows, shared=True)

    def lineage_without_shared(self, spark, result: SavedResult):
        """The saved rows with the upstream rows and the sets held apart (``named_sets``) their
        DLs name resolved, the shared sets (every row's) still named in ``DL_shared``: what a
        query reading the result sees."""
        rows = self.rows(spark, result)
        return self._resolved(spark, result, rows, shared=False) if result.references or result.named_sets else rows

    def _resolved(self, spark, result: SavedResult, rows, shared: bool):
        """``rows`` with ``DL`` the sorted union of each row's own ids, the whole DLs of the
        upstream rows it names, the ids of the sets held apart it names and (``shared``)
        those of the shared sets every row names."""
        from functools import reduce

        from pyspark.sql import functions as F

        pairs = rows.select(ROW, F.explode(DL).alias("__id"))
        # ids at or past FIRST_REFERENCE_ID name upstream rows only in a result that has upstream saves
        parts = [pairs.where(F.col("__id") < FIRST_REFERENCE_ID) if result.references else pairs]
        for upstream, code in self.referenced(result):
            whole = self.lineage_rows(spark, upstream).select(
                (F.col(ROW) + F.lit(code << ROW_BITS)).alias("__id"), F.col(DL).alias("__ids")
            )
            parts.append(pairs.join(whole, "__id").select(ROW, F.explode("__ids").alias("__id")))
        if result.shared and (shared or result.named_sets):
            named = rows.select(ROW, F.explode(SHARED_REFS).alias(SHARED_SET))
            sets = self.shared_sets(spark, result).withColumnRenamed(SHARED_ID, "__id")
            if not shared:
                sets = sets.where(F.col(SHARED_SET) >= result.shared_sets)
            # the sets every row shares are few; sets held apart hold each id O(log n) times
            parts.append(named.join(sets if result.named_sets else F.broadcast(sets), SHARED_SET).select(ROW, "__id"))
        ids = reduce(lambda a, b: a.unionAll(b), parts)
        whole = ids.groupBy(ROW).agg(F.array_sort(F.array_distinct(F.collect_list("__id"))).alias("__whole"))
        spelled = F.coalesce("__whole", F.array().cast("array<bigint>"))
        columns = [c for c in rows.columns if not (shared and c == SHARED_REFS)]
        return rows.join(whole, ROW, "left").select(*(spelled.alias(DL) if c == DL else quoted(c) for c in columns))

    def index(self, spark, result: SavedResult):
        """The forward index ``(id, _row)``, or None when the result has none."""
        return read_parquet(spark, self.path(result.index), INDEX_SCHEMA) if result.index else None

    def save(
        self,
        frame,
        name: str,
        query: str,
        semantics: str,
        representation: str,
        index: bool | None = None,
        disjoint_rows: bool = False,
        shared_sets: Sequence = (),
        references: dict[str, int] | None = None,
        named: dict[str, SavedResult] | None = None,
        named_sets=None,
    ) -> SavedResult:
        """Write ``frame`` (query columns plus ``DL``) as result ``name``, replacing any older one.

        ``shared_sets``: one-row DataFrames, each a sorted id array that every row's DL also
        holds (``frame``'s ``DL`` then has the rows' own ids only); stored once each.
        ``named_sets``: ``(__dlname, __dlids)`` rows, sets held apart that some rows each
        hold (window partitions and frame blocks), named in ``frame``'s ``DL_names``; stored
        once each, after the shared sets, and named by number in the rows' ``DL_shared``.
        ``references``: the saved results whose rows ``frame``'s DLs name, with their codes
        (``result_format``, "References"); ``named``: their metadata when ``frame`` was
        planned, which says which of their saves it names.

        ``index``: build the forward index (True), don't (False), or only when the saved rows
        are many and large enough for it to pay (None): below ``INDEX_MIN_ROWS`` rows or
        ``INDEX_MIN_BYTES`` a scan of every DL is as fast as the index lookup plus the fetch
        of the hit rows.
        """
        name = name.lower() if NAME_PATTERN.match(name) else name
        frame, columns = _savable(frame, name, len(shared_sets))
        named = dict(named or {})
        self._keep_named(named)
        stamp = f"{time.strftime('%Y%m%dT%H%M%S')}-{time.time_ns() % 1_000_000_000:09d}-p{writer()}"
        data_dir = self.directory / name / stamp
        data_dir.mkdir()
        try:
            with persisted(named_sets) as kept:  # read for its names, then written
                frame, numbered, count = numbered_sets(frame, kept, len(shared_sets))
                written = _write_rows(frame, data_dir, index, shared_sets, numbered)
        except BaseException:
            data_dir.remove()
            raise
        faults.point("save.after-rows")
        relative = data_dir.relative_to(self.catalog.directory)
        inputs = self.inputs(query)
        inputs["results"].update({n: r.stamp for n, r in named.items()})  # the saves the rows name
        result = SavedResult(
            name=name, query=query, semantics=semantics, representation=representation,
            catalog_version=self.catalog.version, **inputs, created_at=time.time(), rows=written.rows,
            columns=columns, data=posixpath.join(relative, "rows.parquet"),
            index=posixpath.join(relative, "index.parquet") if written.index else None, schema=written.schema,
            stamp=stamp, disjoint=disjoint_rows, format=FORMAT_NAMED_SETS if count else FORMAT_WITHOUT_NAMED_SETS,
            shared=posixpath.join(relative, "shared.parquet") if shared_sets or numbered is not None else None,
            shared_sets=len(shared_sets), named_sets=count, shared_ids=written.shared_ids,
            references=dict(references or {}), positions=written.positions,
        )
        self.publish(result, data_dir, named)
        return result

    def _keep_named(self, named: dict[str, SavedResult]) -> None:
        """Give the saves ``named`` a copy of their metadata beside their data (a save made
        before references has none), which ``recovery.referenced_saves`` reads."""
        for upstream in named.values():
            kept = self.directory / upstream.name / upstream.stamp
            if kept.exists() and not (kept / METADATA).exists():
                (kept / METADATA).write_text(metadata_text(upstream))

    def publish(self, result: SavedResult, data_dir: Location, named: dict[str, SavedResult]) -> None:
        """Make ``result`` (its data in ``data_dir``) the saved result of its name, then delete
        what it replaced that nothing references; nothing of it stays when the saves its rows
        name are gone."""
        home = self.directory / result.name
        replaced = self._read(home / METADATA) if (home / METADATA).exists() else None
        try:
            gone = sorted(n for n, r in named.items() if not (self.directory / n / r.stamp).exists())
            if gone:
                raise BadInput(f"result {gone[0]} was saved again or dropped while {result.name} was computed from "
                               f"it: run the step again")
            (data_dir / METADATA).write_text(metadata_text(result))
        except BaseException:
            data_dir.remove()
            raise
        self._write_metadata(result)
        faults.point("save.after-metadata")
        referenced = referenced_saves(self.directory)
        remove_unreferenced(self.directory / result.name, result.stamp, referenced)
        if replaced is not None:
            remove_unreferenced_upstream(self.directory, replaced, referenced, self._read)

    def inputs(self, query: str) -> dict:
        """What ``query`` is computed from (``staleness.inputs``)."""
        return staleness.inputs(self.catalog, lambda n: self.get(n) if self.exists(n) else None, query)

    def staleness(self) -> dict[str, str | None]:
        """``{result: why it is stale, or None}`` (``staleness.staleness``)."""
        return staleness.staleness(self.catalog, self.list())

    def upstream(self, name: str) -> list[str]:
        """The saved results ``name`` was computed through, nearest first (each once)."""
        order: list[str] = []
        pending = list(self.get(name).results)
        while pending:
            current = pending.pop(0)
            if current in order:
                continue
            order.append(current)
            if self.exists(current):
                pending.extend(self.get(current).results)
        return order

    def build_index(self, name: str, spark) -> SavedResult:
        """Build the forward index of a result saved without one (written beside its rows,
        then recorded in its metadata)."""
        result = self.get(name)
        if result.index:
            return result
        target = self.path(result.data).parent / f"index-{time.time_ns()}.parquet"
        write_index(self.rows(spark, result), target)
        result.index = target.relative_to(self.catalog.directory)
        (target.parent / METADATA).write_text(metadata_text(result))  # the save's own copy
        self._write_metadata(result)
        return result

    def drop(self, name: str) -> None:
        """Remove result ``name``: renamed away first (atomic), then deleted; without an
        atomic rename (object stores), its ``result.json`` is deleted first (the result is
        gone) and then its data."""
        dropped = self.get(name)
        home = self.directory / name.lower()
        kept = referenced_saves(self.directory)
        if kept is None or any(save[0] == dropped.name for save in kept):
            # saves a result references stay (as after a new save); the result is gone
            (home / METADATA).unlink()
        elif not home.atomic_rename:
            (home / METADATA).unlink()
            home.remove()
        else:
            trash = self.directory / f".dropped-{name.lower()}-{time.time_ns()}"
            home.rename(trash)
            trash.remove()
        kept = referenced_saves(self.directory)  # without the dropped result's references
        if home.exists():
            remove_unreferenced(home, None, kept)
        remove_unreferenced_upstream(self.directory, dropped, kept, self._read)

    def _write_metadata(self, result: SavedResult) -> None:
        (self.directory / result.name / METADATA).write_atomically(
            metadata_text(result), temporary_name(".result", ".json")
        )


def _savable(frame, name: str, shared_sets: int) -> tuple:
    """``(frame, query columns)``: ``frame`` with ``DL`` as plain id arrays and, with shared
    sets, ``DL_shared`` naming all of them; refused when it cannot be saved."""
    from pyspark.sql import functions as F

    if not NAME_PATTERN.match(name):
        raise BadInput(f"'{name}' is not a valid result name: use letters, digits and _")
    if DL not in frame.columns:
        raise BadInput("only a result with lineage can be saved: it has no DL column")
    columns = [c for c in frame.columns if c not in (DL, DL_NAMES)]
    lowered = [c.lower() for c in columns]
    for reserved in (ROW, POSITION):
        if reserved in lowered:
            raise BadInput(f"the result has a column named {reserved}, which saved results use for row numbers: "
                           f"rename it")
    repeated = sorted({c for c in columns if lowered.count(c.lower()) > 1})
    if repeated:
        raise BadInput(
            f"the result has more than one column named {', '.join(repeated)}: give its columns distinct aliases"
        )
    frame = frame.withColumn(DL, lineage_ids(frame))
    if shared_sets:
        frame = frame.withColumn(SHARED_REFS, F.array(*map(F.lit, range(shared_sets))).cast("array<int>"))
    return frame, columns


@dataclass(frozen=True)
class Written:
    """What ``_write_rows`` wrote, for the metadata."""

    positions: list[list[int]]
    rows: int
    schema: dict[str, str]
    index: bool
    shared_ids: int


def _write_rows(frame, data_dir: Location, index: bool | None, shared_sets: Sequence, numbered=None) -> Written:
    """Write a save's files into ``data_dir``: rows.parquet, the forward index when ``index``
    (None: when it pays), the shared sets and the sets held apart (``numbered``)."""
    columns = [c for c in frame.columns if c not in (DL, SHARED_REFS)]
    lineage_columns = [DL, *([SHARED_REFS] if shared_sets or numbered is not None else [])]
    saved = frame.selectExpr(f"monotonically_increasing_id() AS {POSITION}", *map(backquoted, columns),
                             *lineage_columns)
    saved.write.options(**WRITE_OPTIONS).option("parquet.block.size", ROWS_ROW_GROUP_BYTES).parquet(
        str(data_dir / "rows.parquet")
    )
    positions, rows = partition_positions(data_dir / "rows.parquet")
    schema = {f.name: f.dataType.simpleString() for f in saved.schema.fields}
    if index is None:
        index = rows >= INDEX_MIN_ROWS and (data_dir / "rows.parquet").size() >= INDEX_MIN_BYTES
    if index:
        written = read_parquet(frame.sparkSession, data_dir / "rows.parquet", schema)
        write_index(written.selectExpr(*rows_sql(positions, schema)), data_dir / "index.parquet")
    shared_ids = (write_shared_sets(shared_sets, data_dir / "shared.parquet", numbered)
                  if shared_sets or numbered is not None else 0)
    return Written(positions, rows, schema, bool(index), shared_ids)


def directory_bytes(path: str | os.PathLike | Location) -> int:
    """Bytes of all files below ``path`` (on any filesystem ``dltrace.storage`` reaches)."""
    return location(path).size()


def write_index(rows_frame, target: Location) -> None:
    """The forward index ``(id, _row)``: one row per id of each row's DL, sorted by id.

    Range partitioning by id gives files over disjoint id ranges, each sorted, so Parquet's
    min/max statistics let a lookup of a few ids skip nearly every row group.
    """
    from pyspark.sql import functions as F

    pairs = rows_frame.select(F.explode(DL).alias(INDEX_ID), ROW)
    pairs.orderBy(INDEX_ID, ROW).write.options(**WRITE_OPTIONS).option(
        "parquet.block.size", INDEX_ROW_GROUP_BYTES
    ).parquet(str(target))


def write_shared_sets(sets: Sequence, target: Location, numbered=None) -> int:
    """Each shared set's ids as ``(set_id, id)`` rows, sorted by set then id, in one file (the
    sets are computed once each, as one sorted array), then the sets held apart
    (``numbered``: ``(set_id, ids)``, a set each, its ids sorted); the number of ids written."""
    from functools import reduce

    from pyspark.sql import functions as F

    exploded = [
        frame.select(F.lit(number).cast("int").alias(SHARED_SET), F.explode(frame.columns[0]).alias(SHARED_ID))
        for number, frame in enumerate(sets)
    ]
    if numbered is not None:
        # a set per row, its ids sorted: sorted by set, then spread (in order) a row per id
        exploded.append(numbered.orderBy(SHARED_SET).select(SHARED_SET, F.explode(SHARED_ID).alias(SHARED_ID)))
    rows = reduce(lambda a, b: a.unionAll(b), exploded).coalesce(1)
    rows.write.options(**WRITE_OPTIONS).option("parquet.block.size", INDEX_ROW_GROUP_BYTES).parquet(str(target))
    return read_parquet(rows.sparkSession, target, SHARED_SCHEMA).count()  # from the files' footers
