"""What a saved result is on disk: ``result.json`` (``SavedResult``) and how ``rows.parquet``
numbers its rows (the format: docs/formats.md, "Saved results").

``_row`` numbers the output rows densely from 0 in the result's own order (its ORDER BY),
so ``explain --row N`` names a row for good.  It is not stored but derived from ``_pos``,
Spark's ``monotonically_increasing_id`` given as the rows are written (the partition in the
bits above 33, the row within it below): ``_row`` is the rank of ``_pos``, the save records
the first ``_row`` of each partition (``positions``, read from the files after the write),
and a lookup by ``_row`` reads the row groups whose ``_pos`` statistics hold it.  Numbering
densely while writing took a job of its own, which counted every partition's rows first
(docs/performance.md, "`_row` without a numbering job").  Results saved before format 5 store
``_row`` itself.  The forward index is SMOKE's forward rid index
(id -> output rows) as a table: sorted by id in small row groups, a lookup of a few ids reads
a few row groups instead of every row's DL.  It is built at save time when the saved rows
are many and large enough for it to pay (``results.INDEX_MIN_ROWS``,
``results.INDEX_MIN_BYTES``), on request, or later (``ResultStore.build_index``).

References: a result saved from other saved results holds, for the rows it read, not their
lineage spelled out but their names: ``((REFERENCE_CODE + k) << 48) | _row`` for row ``_row``
of the k-th result in ``references`` (``dltrace.ids``), beside its own base-row ids in ``DL``.
Lineage is held once, in the step that computed it: a pipeline step over 100,000 upstream
rows holding millions of ids writes 100,000 small numbers, not the millions again.  A row's
whole DL is its own ids plus the whole DLs of the upstream rows it names, resolved when asked
(``lineage_rows``, ``row_ids``, stored impact, the views queries read).  The upstream save
they name is the one recorded in ``results`` (its stamp): saving the upstream result again,
or dropping it, keeps that save's data while a result references it
(``recovery.referenced_saves``), and the downstream result is stale until saved again.
"""

from __future__ import annotations

import datetime as dt
import json
import posixpath
from dataclasses import asdict, dataclass, field

from dltrace.errors import BadInput, CatalogError
from dltrace.storage import Location
from dltrace.table_data import backquoted

# 7: pruned_at (a run's lineage dropped by retention); 6: named sets (window partitions, frame
# blocks); 5: _pos for _row; 4: references; 3: shared sets; 2: inputs (results, lineage_tables,
# stamp); 1-6 load
FORMAT = 7
FORMAT_NAMED_SETS = 6  # what a save with named sets writes: dltrace before 7 reads it
FORMAT_WITHOUT_NAMED_SETS = 5  # what a save without named sets writes: dltrace before 6 reads it
ROW = "_row"
POSITION = "_pos"  # rows.parquet's row positions from format 5 on (module docstring)
PARTITION_BITS = 33  # monotonically_increasing_id: the partition above these bits, the row within it below
DL = "DL"
SHARED_REFS = "DL_shared"  # the shared sets a row's DL also holds (array<int> of their numbers)
SHARED_SET, SHARED_ID = "set_id", "id"
SHARED_SCHEMA = {SHARED_SET: "int", SHARED_ID: "bigint"}
INDEX_ID = "id"
INDEX_SCHEMA = {INDEX_ID: "bigint", ROW: "bigint"}
DIRECTORY = "results"
METADATA = "result.json"
ROWS_ROW_GROUP_BYTES = 4 << 20  # small row groups: a lookup by _row reads little
INDEX_ROW_GROUP_BYTES = 1 << 20

def time_text(seconds: float) -> str:
    """A time as ``dltrace results`` shows it: local, ISO, to the second."""
    return dt.datetime.fromtimestamp(seconds).isoformat(timespec="seconds")


class UnknownResult(BadInput):
    """A saved result name that the catalog does not have."""


@dataclass
class SavedResult:
    """One saved result, as stored in its ``result.json``."""

    name: str
    query: str
    semantics: str
    representation: str
    catalog_version: int
    tables: dict[str, int]  # the data version of every table the query reads
    created_at: float
    rows: int
    columns: list[str]  # the query's output columns, without _row and DL
    data: str  # rows.parquet, relative to the catalog directory
    index: str | None  # index.parquet, or None when not built
    schema: dict[str, str] = field(default_factory=dict)  # rows.parquet's columns and types
    format: int = FORMAT
    stamp: str = ""  # names this save: the data directory's name
    results: dict[str, str] = field(default_factory=dict)  # saved results read -> their stamps
    lineage_tables: dict[str, list[int]] = field(default_factory=dict)  # base tables in DL -> data versions
    disjoint: bool = False  # no own id is in the DLs of two rows (queries reading it need not deduplicate)
    shared: str | None = None  # shared.parquet, relative to the catalog directory, when sets are shared
    shared_sets: int = 0  # how many shared sets; every row names each of them in DL_shared
    # format 6: how many sets follow them (set_ids from shared_sets on), each named by some
    # rows: a window's partitions, the blocks of a partition's rows its frames are made of
    named_sets: int = 0
    shared_ids: int = 0  # the ids stored in shared.parquet (an id in several sets counted in each)
    # saved results whose rows DL names (module docstring, "References"): name -> code; the
    # save named is the one ``results`` records
    references: dict[str, int] = field(default_factory=dict)
    # format 5: [partition, its first _row] for each partition of rows.parquet with rows, which
    # stores _pos instead of _row (module docstring); None for results saved before
    positions: list[list[int]] | None = None
    # format 7: when retention dropped this run's lineage (dltrace/dataframe/runs.py): its rows
    # stay, each DL empty, so that a dltrace before 7 refuses it rather than read no lineage
    pruned_at: float | None = None

    def __post_init__(self) -> None:
        # format 1: the stamp was only in the data path, and the lineage reached just the
        # tables the query read
        self.stamp = self.stamp or posixpath.basename(posixpath.dirname(self.data))
        self.lineage_tables = self.lineage_tables or {t: [v] for t, v in self.tables.items()}

    @property
    def base_versions(self) -> dict[str, int]:
        """``{base table: data version}`` for every table the lineage reaches (through the
        results read too), the newest version where it holds ids of several."""
        return {table: max(versions) for table, versions in self.lineage_tables.items()}

    def check_lineage(self, what: str) -> None:
        """Refuse to read lineage the result no longer has (``pruned_at``): ``what`` names the ask."""
        if self.pruned_at is not None:
            raise BadInput(f"{what} of {self.name} is past retention: its lineage was dropped at "
                           f"{time_text(self.pruned_at)} (`dltrace results prune`); the row is still in the output")

    @property
    def numbering(self) -> str:
        """rows.parquet's column that orders the rows: ``_pos`` from format 5 on, ``_row`` before."""
        return POSITION if self.positions is not None else ROW

    @property
    def query_columns(self) -> dict[str, str]:
        """The columns a query reading this result sees: the saved query's own, not
        ``numbering`` or ``DL``."""
        return {c: t for c, t in self.schema.items() if c not in (self.numbering, DL, SHARED_REFS)}

    def rows_sql(self) -> list[str]:
        """The columns of ``ResultStore.rows`` as Spark SQL over rows.parquet's columns."""
        return rows_sql(self.positions, self.schema)

    def positions_of(self, rows):
        """The ``_pos`` (numpy int64) of the rows numbered ``rows`` (numpy int64)."""
        import numpy as np

        if self.positions is None:
            return rows
        if len(rows) and not (0 <= rows.min() and rows.max() < self.rows):
            raise BadInput(f"result {self.name} has rows 0..{self.rows - 1}, not {rows.min()}..{rows.max()}")
        partitions, firsts = np.array(self.positions, dtype=np.int64).reshape(-1, 2).T
        owner = np.searchsorted(firsts, rows, side="right") - 1
        return (partitions[owner] << PARTITION_BITS) + rows - firsts[owner]

def metadata_text(result: SavedResult) -> str:
    """``result.json``'s text; without ``positions`` for a result saved before format 5, nor
    ``pruned_at`` for one not past retention: the versions before them read it again."""
    record = asdict(result)
    for optional in ("positions", "pruned_at"):
        if record[optional] is None:
            del record[optional]
    return json.dumps(record, indent=2)


def rows_sql(positions: list[list[int]] | None, schema: dict[str, str]) -> list[str]:
    """The saved rows' columns as Spark SQL over rows.parquet's (``schema``): ``_row``, the
    query's columns, ``DL`` and, with shared sets, ``DL_shared``.  ``_row`` is ``_pos`` less
    its partition's offset (``_pos`` counts on from ``partition << 33``, ``_row`` from the
    partition's first row, ``positions``); stored as it is before format 5 (``positions`` None)."""
    if positions is None:
        return ["*"]
    offsets = {partition: (partition << PARTITION_BITS) - first for partition, first in positions}
    row = POSITION
    if set(offsets) - {0}:
        by_partition = ", ".join(str(offsets.get(p, 0)) for p in range(max(offsets) + 1))
        partition = f"CAST(shiftright({POSITION}, {PARTITION_BITS}) AS INT)"
        row = f"{POSITION} - element_at(array({by_partition}), {partition} + 1)"
    return [f"{row} AS {ROW}", *(backquoted(c) for c in schema if c != POSITION)]


def partition_positions(path: Location) -> tuple[list[list[int]], int]:
    """``[partition, its first _row]`` for each partition of the rows.parquet at ``path`` with
    rows, and the number of rows, from the files' footers: each file must hold a run of
    consecutive positions (its least and greatest ``_pos`` as many apart as it has rows), and
    a partition's rows one run in one file, or in several that continue each other
    (``maxRecordsPerFile``).  Anything else would number rows wrongly, so it fails."""
    runs = [_position_run(file) for file in path.glob("*.parquet") if not file.name.startswith((".", "_"))]
    positions, total, expected = [], 0, None
    for first, last in sorted(run for run in runs if run is not None):
        partition, offset = first >> PARTITION_BITS, first & ((1 << PARTITION_BITS) - 1)
        if offset == 0:
            positions.append([partition, total])
        elif expected != first:
            raise CatalogError(f"{path}: a file's rows start at position {first}, which no other file leads to; "
                               f"save the result again")
        total += last - first + 1
        expected = last + 1
    return positions, total


def _position_run(file: Location) -> tuple[int, int] | None:
    """The least and greatest ``_pos`` of a rows.parquet file, None when it has no rows: from
    its row groups' statistics (the column itself where they are missing), checked to be a
    run of consecutive positions, one a row."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    with file.open() as stream:
        parquet = pq.ParquetFile(stream)
        metadata = parquet.metadata
        if not metadata.num_rows:
            return None
        column = next(c for c in range(metadata.num_columns) if metadata.schema.column(c).path == POSITION)
        groups = [metadata.row_group(g) for g in range(metadata.num_row_groups)]
        stats = [g.column(column).statistics for g in groups if g.num_rows]
        if all(st is not None and st.has_min_max for st in stats):
            least, greatest = min(st.min for st in stats), max(st.max for st in stats)
        else:
            bounds = pc.min_max(parquet.read(columns=[POSITION]).column(0))
            least, greatest = bounds["min"].as_py(), bounds["max"].as_py()
    if greatest - least + 1 != metadata.num_rows:
        raise CatalogError(f"{file}: its {metadata.num_rows} rows hold positions {least} to {greatest}, not one "
                           f"each; save the result again")
    return least, greatest


def lineage_ids(frame):
    """``DL`` as sorted ids whatever the representation: saved results keep plain id arrays,
    which the forward index and ``arrays_overlap`` read natively (roBDDs decoded once here)."""
    from pyspark.sql import functions as F

    from dltrace import udafs

    kind = dict(frame.dtypes)[DL]
    if kind == "array<bigint>":
        return F.col(DL)
    if kind == "binary":
        udafs.register(frame.sparkSession)
        return F.expr(f"dl_ids({DL})")
    raise BadInput(f"cannot save lineage of type {kind}: DL must be an id set (array<bigint>) or an roBDD (binary)")
