"""``python -m tpch space``: what saved lineage costs, on disk and in time.

    python -m tpch space --sf 1 [--queries tpch] [--repeat 3] [--index] [--baseline]
        [--candidates] [--out DIR] [--catalog DIR]

Saves each TPC-H query's result with lineage (control semantics, ``--repr set``) as
``space_<query>`` and reports, per query:

* rows, and ids: the sum over rows of the size of each row's whole DL (its own ids and those
  of the shared sets it names, spelled out, as ``--format json`` prints them);
* bytes on disk now: ``rows.parquet`` plus ``shared.parquet`` (every file of the directories,
  as ``du`` counts them), and ``index.parquet`` apart when the save built one;
* the lineage's own share of them: the ``DL`` and ``DL_shared`` column chunks (from the
  Parquet footers) plus ``shared.parquet``;
* bytes as raw int64 (8 x ids), and in the previous format: every row's whole DL spelled out
  in ``rows.parquet``, written as format 2 wrote it (Spark's Parquet defaults: snappy, writer
  v1, dictionary on; 4 MiB row groups), in as many files as the save wrote;
* bytes per id (now, lineage only, previous), and a lower bound for comparison: the
  information in the ids for an encoding that treats each row's ids of one table as an
  arbitrary subset of the table, clustered or not (``subset_bound_bytes``);
* the save's time (query with lineage, numbering, writes), and
  the time of stored impact for one bad row: a lineitem row of the result's lineage (else
  partsupp, orders, ... in that order), named by its key as a user would, the median of
  ``--repeat`` runs after a warm-up (the key index it uses is built before).

``--baseline`` also saves each query in the same format with Spark's default Parquet writer
options (as saves were written before ``results.WRITE_OPTIONS``; ``space_defaults_<query>``),
the two saves one after the other in alternating order, and times stored impact on both,
interleaved: the before and after of the writer options, side by side in one session.

``--candidates`` then rewrites every saved result's ``rows.parquet`` and ``shared.parquet``
with each of ``CANDIDATES`` (Parquet writer options of Spark's writer), in as many files as
the save wrote, and reports bytes per id and the time to scan every DL, per candidate: the
measurements the saved format's writer options were chosen from.

Writes ``report.md``, ``space.csv`` and ``bytes-per-id.png`` under ``--out``; the saved results
are dropped at the end unless ``--keep``.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import shutil
import statistics
import sys
import time
from collections.abc import Callable
from contextlib import contextmanager, nullcontext
from dataclasses import asdict, dataclass, field
from pathlib import Path

from dltrace.errors import BadInput
from dltrace.results import DL, ROW, SHARED_ID, SHARED_REFS, SHARED_SET, ResultStore, SavedResult, directory_bytes
from tpch.harness import log, one_line, table

PREFIX = "space_"
BASELINE_PREFIX = "space_defaults_"
# --baseline: how format 3 was written before results.WRITE_OPTIONS, Spark's defaults
BASELINE_OPTIONS: dict[str, str] = {}
# how format 2 (every row's whole DL in rows.parquet) was written: Spark's Parquet defaults
PREVIOUS_OPTIONS = {"compression": "snappy", "parquet.block.size": str(4 << 20)}
# preference for the bad row of the impact timing: the fact tables first
BAD_TABLES = ["lineitem", "partsupp", "orders", "customer", "part", "supplier", "nation", "region"]
IDS_NO_DICTIONARY = {"parquet.enable.dictionary#DL.list.element": "false", "parquet.enable.dictionary#id": "false"}
CANDIDATES: dict[str, dict[str, str]] = {
    "snappy, v1": {"compression": "snappy"},
    "zstd, v1": {"compression": "zstd"},
    "zstd, v1, ids without dictionary": {"compression": "zstd", **IDS_NO_DICTIONARY},
    "snappy, v2": {"compression": "snappy", "parquet.writer.version": "v2"},
    "snappy, v2, ids without dictionary": {
        "compression": "snappy",
        "parquet.writer.version": "v2",
        **IDS_NO_DICTIONARY,
    },
    "zstd, v2": {"compression": "zstd", "parquet.writer.version": "v2"},
    "zstd, v2, ids without dictionary": {"compression": "zstd", "parquet.writer.version": "v2", **IDS_NO_DICTIONARY},
    "zstd, v2, no dictionary": {
        "compression": "zstd",
        "parquet.writer.version": "v2",
        "parquet.enable.dictionary": "false",
    },
    "zstd 9, v2, ids without dictionary": {
        "compression": "zstd",
        "parquet.compression.codec.zstd.level": "9",
        "parquet.writer.version": "v2",
        **IDS_NO_DICTIONARY,
    },
}


@dataclass
class Space:
    """One query's saved result: sizes and times."""

    query: str
    rows: int = 0
    ids: int = 0  # spelled out: sum over rows of the whole DL's size
    shared_ids: int = 0  # the shared sets' ids, each counted once
    files: int = 0  # rows.parquet's Parquet files
    rows_bytes: int = 0
    shared_bytes: int = 0
    index_bytes: int = 0
    lineage_bytes: int = 0  # DL and DL_shared column chunks, plus shared.parquet
    previous_bytes: int = 0
    bound_bytes: float = 0.0  # subset_bound_bytes
    baseline_bytes: int = 0  # --baseline: the same result saved with Spark's default writer options
    save_seconds: float = 0.0
    baseline_save_seconds: float | None = None
    impact_seconds: float | None = None
    baseline_impact_seconds: float | None = None
    impact_source: str = ""
    affected: int = 0
    note: str = ""
    candidates: dict[str, tuple[int, float]] = field(default_factory=dict)  # name -> (bytes, scan seconds)

    @property
    def now_bytes(self) -> int:
        return self.rows_bytes + self.shared_bytes

    @property
    def raw_bytes(self) -> int:
        return 8 * self.ids

    def per_id(self, size: int) -> float | None:
        return size / self.ids if self.ids else None


def parquet_files(path: Path) -> list[Path]:
    return sorted(p for p in path.glob("*.parquet") if p.is_file())


def lineage_column_bytes(path: Path) -> int:
    """The compressed bytes of the ``DL`` and ``DL_shared`` column chunks, from the footers."""
    import pyarrow.parquet as pq

    total = 0
    for file in parquet_files(path):
        metadata = pq.read_metadata(file)
        for group in range(metadata.num_row_groups):
            row_group = metadata.row_group(group)
            for column in range(row_group.num_columns):
                chunk = row_group.column(column)
                if chunk.path_in_schema.split(".")[0] in (DL, SHARED_REFS):
                    total += chunk.total_compressed_size
    return total


def subset_bound_bytes(session, saved: SavedResult) -> float:
    """The information in the saved ids, in bytes, for an encoding that knows the tables' sizes
    and treats a row's ids of one table as an arbitrary subset: for k ids of a table of n
    rows, log2 C(n, k) bits, or log2 C(span, k) plus the bits of the span's two ends (2 log2 n)
    when that is less (clustered ids), summed over the rows' own ids and the shared sets.
    Below it only structure the ids do not show helps (an orders id implied by its lineitems')."""
    import math

    import numpy as np

    from dltrace.ids import ROW_BITS

    store, spark = session.store, session.spark
    parts = []  # (set number per id, ids), each set sorted
    column = store.rows(spark, saved).select(DL).toArrow().column(0)
    done = 0
    for chunk in column.chunks:
        offsets = chunk.offsets.to_numpy()
        values = chunk.values.to_numpy()[offsets[0] : offsets[-1]]
        parts.append((np.repeat(np.arange(done, done + len(offsets) - 1), np.diff(offsets)), values))
        done += len(offsets) - 1
    sets = store.shared_sets(spark, saved)
    if sets is not None:
        shared = sets.orderBy(SHARED_SET, SHARED_ID).toArrow()
        parts.append((shared.column(0).to_numpy() + done, shared.column(1).to_numpy()))
    owner = np.concatenate([p[0] for p in parts]) if parts else np.empty(0, dtype=np.int64)
    ids = np.concatenate([p[1] for p in parts]).astype(np.int64) if parts else np.empty(0, dtype=np.int64)
    if not len(ids):
        return 0.0
    tables = ids >> ROW_BITS
    starts = np.flatnonzero(np.concatenate([[True], (np.diff(owner) != 0) | (np.diff(tables) != 0)]))
    ends = np.concatenate([starts[1:], [len(ids)]])
    sizes = {entry.code: max(entry.next_row, 1) for entry in session.catalog.tables.values()}

    def choose(n: int, k: int) -> float:  # log2 C(n, k)
        return (math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)) / math.log(2)

    bits = 0.0
    for k, span, code in zip((ends - starts).tolist(), (ids[ends - 1] - ids[starts] + 1).tolist(),
                             tables[starts].tolist()):
        n = max(sizes.get(code, span), span)
        bits += min(choose(n, k), choose(span, k) + 2 * math.log2(n))
    return bits / 8


def bad_source(session, store: ResultStore, saved: SavedResult) -> str | None:
    """A key predicate naming one base row in ``saved``'s lineage (own ids or shared sets),
    from the first table of ``BAD_TABLES`` the lineage reaches; None when it is empty."""
    from pyspark.sql import functions as F

    from dltrace.catalog import ID_COLUMN
    from dltrace.ids import ROW_BITS

    spark = session.spark
    ids = store.rows(spark, saved).select(F.explode(DL).alias("id"))
    sets = store.shared_sets(spark, saved)
    if sets is not None:
        ids = ids.unionByName(sets.select(F.col(SHARED_ID).alias("id")))
    first = {
        int(r.code): int(r.id)
        for r in ids.groupBy(F.shiftright("id", ROW_BITS).alias("code")).agg(F.min("id").alias("id")).collect()
    }
    codes = {entry.code: name for name, entry in session.catalog.tables.items()}
    reached = {codes[code]: dl_id for code, dl_id in first.items() if code in codes}
    table_name = next((t for t in BAD_TABLES if t in reached), None)
    if table_name is None:
        return None
    entry = session.catalog.entry(table_name)
    row = (
        spark.read.parquet(str(session.catalog.data_path(table_name)))
        .where(F.col(ID_COLUMN) == reached[table_name])
        .select(*entry.key)
        .first()
    )
    return f"{table_name} WHERE " + " AND ".join(f"{c} = {json.dumps(row[c])}".replace('"', "'") for c in entry.key)


@contextmanager
def writer_options(options: dict[str, str]):
    """Saves inside write their Parquet with ``options`` instead of ``results.WRITE_OPTIONS``."""
    from dltrace import results

    chosen = results.WRITE_OPTIONS
    results.WRITE_OPTIONS = options
    try:
        yield
    finally:
        results.WRITE_OPTIONS = chosen


def timed_save(session, name: str, query: str, index: bool | None, options: dict[str, str] | None = None):
    """``(saved result, seconds)``: ``query`` run with lineage and saved as ``name``."""
    start = time.perf_counter()
    with writer_options(options) if options is not None else nullcontext():
        saved = session.save(session.sql(query, semantics="control", representation="set"), name, index=index)
    return saved, time.perf_counter() - start


def measure(
    session,
    name: str,
    query: str,
    scratch: Path,
    repeat: int,
    index: bool | None,
    baseline: bool = False,
    order: int = 0,
) -> Space:
    """Save ``query`` with lineage and measure its result (see the module's docstring); with
    ``baseline``, also save it with Spark's default writer options (saves alternate in
    ``order``) and time stored impact on both, interleaved."""
    from pyspark.sql import functions as F

    from dltrace.impact.key_index import ensure_key_index

    spark, store = session.spark, session.store
    space = Space(name)
    saves = [(PREFIX + name, None), (BASELINE_PREFIX + name, BASELINE_OPTIONS)][: 2 if baseline else 1]
    timings = {}
    for result, options in saves if order % 2 == 0 else saves[::-1]:
        timings[result] = timed_save(session, result, query, index, options)
    saved, space.save_seconds = timings[PREFIX + name]
    rows_dir = store.path(saved.data)
    space.rows, space.shared_ids = saved.rows, saved.shared_ids
    space.files = len(parquet_files(rows_dir))
    space.rows_bytes = directory_bytes(rows_dir)
    space.shared_bytes = directory_bytes(store.path(saved.shared)) if saved.shared else 0
    space.index_bytes = directory_bytes(store.path(saved.index)) if saved.index else 0
    space.lineage_bytes = lineage_column_bytes(rows_dir) + space.shared_bytes
    space.bound_bytes = subset_bound_bytes(session, saved)
    if baseline:
        before, space.baseline_save_seconds = timings[BASELINE_PREFIX + name]
        space.baseline_bytes = directory_bytes(store.path(before.data)) + (
            directory_bytes(store.path(before.shared)) if before.shared else 0
        )
    log(f"{name}: saved {saved.rows} rows in {space.save_seconds:.1f} s; spelling out the previous format")
    previous = scratch / name
    spelled = store.lineage_rows(spark, saved)
    spelled.repartitionByRange(max(space.files, 1), ROW).sortWithinPartitions(ROW).write.options(
        **PREVIOUS_OPTIONS
    ).parquet(str(previous))
    space.previous_bytes = directory_bytes(previous)
    space.ids = int(spark.read.parquet(str(previous)).select(F.sum(F.size(DL))).first()[0] or 0)
    shutil.rmtree(previous, ignore_errors=True)
    source = bad_source(session, store, saved)
    if source is None:
        space.note = "no lineage"
        return space
    space.impact_source = source
    table_name = source.split()[0]
    if session.catalog.entry(table_name).rows >= 1_000_000:
        ensure_key_index(session, table_name)  # built once per table version, before timing
    times: dict[str, list[float]] = {result: [] for result, _ in saves}
    for run in range(repeat + 1):
        for result in list(times) if run % 2 == 0 else list(times)[::-1]:  # interleaved, order alternating
            start = time.perf_counter()
            affected = session.impact(source, result=result).collect()
            if run:
                times[result].append(time.perf_counter() - start)
            if result == saved.name:
                space.affected = len(affected)
    space.impact_seconds = statistics.median(times[saved.name])
    if baseline:
        space.baseline_impact_seconds = statistics.median(times[BASELINE_PREFIX + name])
    return space


def measure_candidates(session, spaces: list[Space], scratch: Path) -> None:
    """Rewrite every saved result's rows and shared sets with each candidate's writer options
    (as many files as the save wrote, rows in ``_pos`` order), record bytes and the seconds
    to scan every id."""
    from pyspark.sql import functions as F

    spark, store = session.spark, session.store
    for space in spaces:
        if not space.ids and not space.rows:
            continue
        saved = store.get(PREFIX + space.query)
        rows, sets = store.rows(spark, saved), store.shared_sets(spark, saved)
        for number, (candidate, options) in enumerate(CANDIDATES.items()):
            target = scratch / f"{space.query}-{number}"
            rows.repartitionByRange(max(space.files, 1), ROW).sortWithinPartitions(ROW).write.options(
                **options
            ).parquet(str(target / "rows.parquet"))
            if sets is not None:
                sets.coalesce(1).sortWithinPartitions(SHARED_SET, SHARED_ID).write.options(**options).parquet(
                    str(target / "shared.parquet")
                )
            size = directory_bytes(target)
            start = time.perf_counter()
            spark.read.parquet(str(target / "rows.parquet")).select(F.max(F.array_max(DL))).collect()
            if sets is not None:
                spark.read.parquet(str(target / "shared.parquet")).select(F.max(SHARED_ID)).collect()
            space.candidates[candidate] = (size, time.perf_counter() - start)
            shutil.rmtree(target, ignore_errors=True)
        log(
            f"{space.query}: candidates "
            + ", ".join(f"{c} {b / space.ids:.3f}" for c, (b, _) in space.candidates.items())
            if space.ids
            else f"{space.query}: no ids"
        )


# -- the report --------------------------------------------------------------------------


def per_id_cell(value: float | None) -> str:
    if value is None:
        return ""
    return f"{value:.4f}" if value < 0.1 else f"{value:.3f}" if value < 10 else f"{value:.1f}"


def thousands(value: int) -> str:
    return f"{value:,}" if value else ""


def median_of(values) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


@dataclass(frozen=True)
class Column:
    """A report column: its cell per query, and what its median and total rows show."""

    header: str
    cell: Callable[[Space], str]
    value: Callable[[Space], float | None] | None = None  # for the median row
    total: Callable[[list[Space]], str] | None = None  # for the "all queries" row
    fmt: str = "{:,.0f}"


def size_columns(baseline: bool) -> list[Column]:
    def count(attribute: str) -> Column:
        return Column(
            "",
            lambda s: thousands(getattr(s, attribute)),
            lambda s: getattr(s, attribute),
            lambda spaces: thousands(sum(getattr(s, attribute) for s in spaces)),
        )

    def named(header: str, column: Column) -> Column:
        return Column(header, column.cell, column.value, column.total, column.fmt)

    def per_id(header: str, attribute: str) -> Column:
        def total(spaces: list[Space]) -> str:
            ids = sum(s.ids for s in spaces)
            return per_id_cell(sum(getattr(s, attribute) for s in spaces) / ids) if ids else ""

        return Column(
            header,
            lambda s: per_id_cell(s.per_id(getattr(s, attribute))),
            lambda s: s.per_id(getattr(s, attribute)),
            total,
            "per id",
        )

    return [
        named("rows", count("rows")),
        named("ids", count("ids")),
        Column("shared ids", count("shared_ids").cell),
        named("bytes now", count("now_bytes")),
        named("of which lineage", count("lineage_bytes")),
        Column("index bytes", count("index_bytes").cell, total=count("index_bytes").total),
        *([named("bytes, Spark defaults", count("baseline_bytes"))] if baseline else []),
        named("previous format bytes", count("previous_bytes")),
        named("raw int64 bytes", count("raw_bytes")),
        per_id("bytes/id now", "now_bytes"),
        per_id("lineage bytes/id", "lineage_bytes"),
        *([per_id("bytes/id, Spark defaults", "baseline_bytes")] if baseline else []),
        per_id("bytes/id previous", "previous_bytes"),
        per_id("subset bound bytes/id", "bound_bytes"),
    ]


def time_columns(baseline: bool) -> list[Column]:
    def seconds(header: str, attribute: str, digits: int) -> Column:
        def cell(s: Space) -> str:
            value = getattr(s, attribute)
            return f"{value:.{digits}f}" if value is not None else s.note

        return Column(header, cell, lambda s: getattr(s, attribute), None, f"{{:.{digits}f}}")

    return [
        seconds("save s", "save_seconds", 1),
        *([seconds("save s, Spark defaults", "baseline_save_seconds", 1)] if baseline else []),
        seconds("impact s", "impact_seconds", 2),
        *([seconds("impact s, Spark defaults", "baseline_impact_seconds", 2)] if baseline else []),
        Column("bad row", lambda s: f"`{s.impact_source}`" if s.impact_source else ""),
        Column("affected rows", lambda s: f"{s.affected:,}" if s.impact_source else ""),
    ]


def column_table(spaces: list[Space], columns: list[Column]) -> list[str]:
    """One row per query, then the median over queries (and the total where it means something)."""
    body = [[s.query, *(c.cell(s) for c in columns)] for s in spaces]
    spaces = [s for s in spaces if not s.note.startswith("failed")]  # medians and totals of what was measured

    def median_cell(column: Column) -> str:
        if column.value is None:
            return ""
        value = median_of(column.value(s) for s in spaces)
        return "" if value is None else per_id_cell(value) if column.fmt == "per id" else column.fmt.format(value)

    body.append(["**median**", *(median_cell(c) for c in columns)])
    if any(c.total for c in columns):
        body.append(["**all queries**", *(c.total(spaces) if c.total else "" for c in columns)])
    return table(["query", *(c.header for c in columns)], body)


def paired_ratio(spaces: list[Space], attribute: str, baseline: str) -> str:
    """The geometric mean over queries of ``attribute / baseline``, as text."""
    ratios = [
        getattr(s, attribute) / getattr(s, baseline) for s in spaces if getattr(s, attribute) and getattr(s, baseline)
    ]
    return f"{math.exp(statistics.mean(map(math.log, ratios))):.2f}x over {len(ratios)} queries" if ratios else "n/a"


def markdown(spaces: list[Space], title: str, context: list[str]) -> str:
    baseline = any(s.baseline_bytes for s in spaces)
    lines = [f"# {title}", "", *context, "", "## Space", "", *column_table(spaces, size_columns(baseline)), ""]
    lines += [
        "* **ids**: the sum over rows of each row's whole DL (own ids and shared sets spelled out); "
        "**shared ids**: the ids of the sets all rows share, stored once in `shared.parquet`.",
        "* **bytes now**: `rows.parquet` + `shared.parquet` as saved (every file: Parquet, `.crc`, `_SUCCESS`), "
        "query columns and `_pos` included; **of which lineage**: the `DL` and `DL_shared` column chunks "
        "(Parquet footers) plus `shared.parquet`; **index bytes**: `index.parquet`, when the save built it.",
        *(
            [
                "* **Spark defaults**: the same query saved in the same format with Spark's default Parquet writer "
                "options (snappy, writer v1, dictionary on), as saves were written before `results.WRITE_OPTIONS`."
            ]
            if baseline
            else []
        ),
        "* **previous format**: every row's whole DL spelled out in `rows.parquet`, written as format 2 was "
        "(snappy, writer v1, dictionary on, 4 MiB row groups), as many files as the save wrote; "
        "**raw int64**: 8 bytes per id.",
        "* **subset bound**: the information in the ids for an encoding that knows the tables' sizes and treats "
        "the k ids of one table in a row's own DL (or in a shared set) as an arbitrary subset of the table's n "
        "rows: log2 C(n, k) bits, or log2 C(span, k) + 2 log2 n (span: last id - first + 1, the ends' bits) when "
        "the ids cluster, summed. An encoding below it must know more than the ids show (an orders id is implied "
        "by its lineitems' ids).",
        "",
        "## Time",
        "",
        *column_table(spaces, time_columns(baseline)),
        "",
        "* **save s**: `save(sql(query))`, the query with lineage included"
        + (
            "; the two saves of a query run one after the other, their order alternating from query to query"
            if baseline
            else ""
        )
        + ".",
        "* **impact s**: `impact(source=bad row, result=...).collect()`, median of the timed runs after a warm-up"
        + (", the two saved forms interleaved" if baseline else "")
        + "; the bad row is the first id of the first "
        "table of lineitem, partsupp, orders, ... that the result's lineage reaches, named by its key (lineitem's "
        "key index is built before the timing).",
        *(
            [
                f"* **now / Spark defaults**, geometric mean of the per-query ratios: save "
                f"{paired_ratio(spaces, 'save_seconds', 'baseline_save_seconds')}, stored impact "
                f"{paired_ratio(spaces, 'impact_seconds', 'baseline_impact_seconds')} (the first of "
                f"a query's two saves "
                "reads its tables cold; alternating the order evens that out over the queries)."
            ]
            if baseline
            else []
        ),
        "",
    ]
    candidates = [c for c in CANDIDATES if any(c in s.candidates for s in spaces)]
    if candidates:
        measured = [s for s in spaces if s.candidates and s.ids]
        q11 = next((s for s in measured if s.query == "q11"), None)
        rows = []
        for candidate in candidates:
            per_id = [s.candidates[candidate][0] / s.ids for s in measured]
            bytes_all = sum(s.candidates[candidate][0] for s in measured)
            rows.append(
                [
                    candidate,
                    json.dumps(CANDIDATES[candidate]).replace("|", "\\|"),
                    per_id_cell(statistics.median(per_id)),
                    per_id_cell(q11.candidates[candidate][0] / q11.ids) if q11 else "",
                    per_id_cell(max(per_id)),
                    f"{bytes_all:,}",
                    f"{sum(s.candidates[candidate][1] for s in measured):.1f}",
                ]
            )
        lines += [
            "## Writer options measured (`--candidates`)",
            "",
            "Every saved result's `rows.parquet` and `shared.parquet` rewritten with Spark's Parquet writer and "
            "these options (as many files as the save wrote); bytes per id over all files; scan s: reading every "
            "id once (`max(array_max(DL))`, and the shared sets), summed over the queries.",
            "",
            *table(
                [
                    "writer options",
                    "Spark write options",
                    "bytes/id median",
                    "bytes/id Q11",
                    "bytes/id worst",
                    "bytes, all queries",
                    "scan s",
                ],
                rows,
                numeric_from=2,
            ),
            "",
        ]
        per_query = [[s.query, *(per_id_cell(s.candidates[c][0] / s.ids) for c in candidates)] for s in measured]
        lines += ["Bytes per id per query and writer options:", "", *table(["query", *candidates], per_query), ""]
    lines += ["![bytes per id](bytes-per-id.png)", ""]
    return "\n".join(lines)


def draw(path: Path, spaces: list[Space], title: str) -> None:
    """Bytes per id per query: now, with Spark's default writer (``--baseline``), previous
    format, raw int64 (log scale)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    shown = [s for s in spaces if s.ids]
    series = [
        ("now (rows + shared)", lambda s: s.now_bytes, "tab:blue"),
        *(
            [("same format, Spark's default writer", lambda s: s.baseline_bytes, "tab:green")]
            if any(s.baseline_bytes for s in shown)
            else []
        ),
        ("previous format (whole DLs)", lambda s: s.previous_bytes, "tab:orange"),
        ("raw int64", lambda s: s.raw_bytes, "tab:gray"),
    ]
    fig, axis = plt.subplots(figsize=(max(7.0, 0.7 * len(shown) + 2), 4.2))
    width = 0.8 / len(series)
    for number, (label, size, color) in enumerate(series):
        xs = [i + (number - (len(series) - 1) / 2) * width for i in range(len(shown))]
        axis.bar(xs, [size(s) / s.ids for s in shown], width=width, label=label, color=color)
    axis.axhline(1.0, color="black", linestyle="--", linewidth=0.8)
    axis.set_yscale("log")
    axis.set_xticks(range(len(shown)), [s.query.upper() for s in shown], fontsize=8)
    axis.set_ylabel("bytes per id (log)")
    axis.set_title(title, fontsize=10)
    axis.grid(axis="y", alpha=0.3)
    axis.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.08), ncol=len(series), frameon=False)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def write_csv(path: Path, spaces: list[Space]) -> None:
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        fields = [f for f in asdict(spaces[0]) if f != "candidates"] if spaces else []
        writer.writerow([*fields, *CANDIDATES])
        for s in spaces:
            values = asdict(s)
            writer.writerow([values[f] for f in fields] + [s.candidates.get(c, ("",))[0] for c in CANDIDATES])


def add_parser(commands) -> None:
    """The ``space`` subcommand of ``python -m tpch``."""
    space = commands.add_parser("space", help="saved lineage on disk: bytes per id, save and stored-impact times")
    space.add_argument("--sf", type=float, default=1.0, help="TPC-H scale factor (default 1)")
    space.add_argument("--queries", default="tpch", help="q1..q22 or tpch (default: all 22)")
    space.add_argument(
        "--repeat", type=int, default=3, help="timed stored-impact runs after a warm-up, median reported"
    )
    space.add_argument(
        "--index", action="store_true", help="build every result's forward index (default: as save decides)"
    )
    space.add_argument(
        "--baseline",
        action="store_true",
        help="also save each query with Spark's default writer options and time stored impact on both",
    )
    space.add_argument("--candidates", action="store_true", help="also measure the writer options in CANDIDATES")
    space.add_argument(
        "--keep", action="store_true", help=f"keep the saved results ({PREFIX}<query>, {BASELINE_PREFIX}<query>)"
    )
    space.add_argument("--out", type=Path, default=Path("bench-results/space"), help="report directory")
    space.add_argument("--catalog", help="catalog directory (default data/catalog-tpch-sfSF)")


def main(args: argparse.Namespace, catalog: Path) -> int:
    """``python -m tpch space``: register TPC-H at ``--sf`` (cached), save and measure, report."""
    from dltrace import LineageSession
    from dltrace.datasets import register_tpch
    from tpch.bench import selected_queries

    queries = selected_queries(args.queries)
    if any(not name.startswith("q") for name in queries):
        raise BadInput("space measures TPC-H queries q1..q22")
    if args.repeat < 1:
        raise BadInput("--repeat must be at least 1")
    session = LineageSession(catalog)
    log(f"TPC-H SF {args.sf:g}: data and registration (cached after the first run)")
    register_tpch(session, args.sf, Path("data"), progress=log)
    out: Path = args.out
    scratch = out / "scratch"
    shutil.rmtree(scratch, ignore_errors=True)
    started, load_before = time.time(), os.getloadavg()
    spaces = []
    try:
        for name, query in queries.items():
            log(f"{name}: saving with lineage")
            try:
                space = measure(
                    session,
                    name,
                    query,
                    scratch,
                    args.repeat,
                    True if args.index else None,
                    args.baseline,
                    order=len(spaces),
                )
            except Exception as error:  # a query that fails is a finding to report, the others go on
                space = Space(name, note=f"failed: {one_line(error)}")
            spaces.append(space)
            log(
                f"{name}: {space.rows} rows, {space.ids:,} ids, {space.now_bytes:,} bytes now "
                f"({per_id_cell(space.per_id(space.now_bytes))}/id), "
                + (
                    f"Spark defaults {space.baseline_bytes:,} ({per_id_cell(space.per_id(space.baseline_bytes))}/id), "
                    if space.baseline_bytes
                    else ""
                )
                + f"previous {space.previous_bytes:,} "
                f"({per_id_cell(space.per_id(space.previous_bytes))}/id), save {space.save_seconds:.1f} s, impact "
                + (f"{space.impact_seconds:.2f} s" if space.impact_seconds is not None else space.note)
            )
        if args.candidates:
            measure_candidates(session, spaces, scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        if not args.keep:
            for result in (prefix + name for name in queries for prefix in (PREFIX, BASELINE_PREFIX)):
                if session.store.exists(result):
                    session.drop_result(result)
    spark = session.spark
    load_after = os.getloadavg()
    title = f"Saved lineage: space and time, TPC-H SF {args.sf:g}"
    from dltrace.results import WRITE_OPTIONS

    context = [
        f"`python -m tpch {' '.join(sys.argv[1:])}`: catalog `{catalog}`, {len(queries)} queries, control semantics, "
        f"`--repr set`; saved with writer options `{json.dumps(WRITE_OPTIONS)}`.",
        "",
        f"* ran {time.strftime('%Y-%m-%d %H:%M', time.localtime(started))} for {(time.time() - started) / 60:.1f} min; "
        f"machine: {os.cpu_count()} cores; load average (1/5/15 min) "
        f"before {'/'.join(f'{v:.2f}' for v in load_before)}, "
        f"after {'/'.join(f'{v:.2f}' for v in load_after)}",
        f"* Spark {spark.version}, master {spark.sparkContext.master}, "
        f"shuffle partitions {spark.conf.get('spark.sql.shuffle.partitions')}",
    ]
    out.mkdir(parents=True, exist_ok=True)
    write_csv(out / "space.csv", spaces)
    draw(out / "bytes-per-id.png", spaces, f"Saved lineage, bytes per id, TPC-H SF {args.sf:g} (control semantics)")
    report = out / "report.md"
    report.write_text(markdown(spaces, title, context))
    print(report.read_text())
    return 0
