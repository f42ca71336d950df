"""``explain --summary``: a saved row's lineage described by at most K patterns per base table.

Per table in the row's DL, whatever the lineage size:

1. the *table sample*: about ``TABLE_SAMPLE`` uniformly drawn rows of the table (the whole
   table when it is that small), stored in the catalog once per table version
   (``samples/``) and read once per process;
2. the *lineage sample*: at most ``sample`` lineage rows, drawn uniformly.  The lineage
   rows the table sample holds are such a sample; when they are too few
   (``ENOUGH_IN_TABLE_SAMPLE``), ids drawn from DL are fetched in one job (table files are
   in id order, so row groups outside the ids' range are skipped);
3. patterns are learned locally (``patterns.learn_patterns``), the precision of every
   candidate estimated from the table sample;
4. one aggregation job over the table counts, exactly, the rows each chosen pattern matches
   (for a small table, the rows in memory already give those counts).

Recall (the share of the lineage rows a pattern matches) is measured on the lineage sample:
exact when the sample is the whole lineage, else with a 95% Wilson interval (finite
population corrected).  Precision is the estimated lineage rows matching over the exact
table rows matching, with the same interval.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from dltrace import table_data
from dltrace.catalog import ID_COLUMN
from dltrace.errors import BadInput
from dltrace.ids import ROW_BITS
from dltrace.recovery import build_once
from dltrace.storage import Location
from dltrace.summary.patterns import Column, LearnedPattern, key_constraints, learn_patterns, prefer_keys
from dltrace.summary.stored import row_ids
from dltrace.table_data import backquoted, read_parquet

DEFAULT_PATTERNS = 3
LINEAGE_SAMPLE = 4000  # lineage rows per table the patterns are learned on: recall within ±1.6%
TABLE_SAMPLE = 100_000  # table rows precision is estimated on while searching
ENOUGH_IN_TABLE_SAMPLE = 1000  # lineage rows in the table sample that spare fetching others (recall ±3%)
SEED = 17
Z95 = 1.959964
RANGE_TYPES = ("tinyint", "smallint", "int", "bigint", "float", "double", "date")
SAMPLES = "samples"  # stored table samples, inside the catalog directory


@dataclass
class PatternSummary:
    """One pattern: a Spark SQL condition over the table's columns, and how well it fits."""

    predicate: str
    columns: list[str]
    lineage_rows: int  # lineage rows it matches (estimated unless the sample is the lineage)
    recall: float
    recall_interval: tuple[float, float]
    table_rows: int  # table rows it matches (exact)
    precision: float
    precision_interval: tuple[float, float]


@dataclass
class TableSummary:
    """The patterns of one base table, and what they cover together."""

    table: str
    version: int | None
    lineage_rows: int
    table_rows: int
    sample: int  # lineage rows the patterns were learned on and measured with
    table_sample: int  # table rows precision was estimated on during the search
    patterns: list[PatternSummary] = field(default_factory=list)
    covered: float = 0.0
    covered_interval: tuple[float, float] = (0.0, 0.0)

    @property
    def exact(self) -> bool:
        return self.sample == self.lineage_rows


@dataclass
class Summary:
    result: str
    row: int
    tables: list[TableSummary]


def summarize(session, result: str, row: int, k: int = DEFAULT_PATTERNS, sample: int = LINEAGE_SAMPLE) -> Summary:
    """At most ``k`` patterns per base table describing the lineage of row ``row`` of saved
    ``result``, learned on at most ``sample`` lineage rows per table."""
    check_options(k, sample)
    saved, ids = row_ids(session, result, row)
    if not len(ids):
        raise BadInput(f"row {row} of result {saved.name} has no lineage (its DL is empty): nothing to summarize")
    codes = ids >> ROW_BITS
    rng = np.random.default_rng(SEED)
    tables = []
    for code in np.unique(codes):
        table = session.catalog.table_of_code(int(code))
        tables.append(
            _summarize_table(session, table, saved.base_versions.get(table), ids[codes == code], k, sample, rng)
        )
    return Summary(saved.name, row, tables)


def check_options(k: int, sample: int) -> None:
    """Bad ``--patterns``/``--sample`` values, refused before any Spark work."""
    if k < 1:
        raise BadInput(f"--patterns must be 1 or more (got {k})")
    if sample < 1:
        raise BadInput(f"--sample must be 1 or more (got {sample})")


def interval(hits: int, size: int, population: int) -> tuple[float, float]:
    """95% Wilson interval of the share ``hits/size`` of a sample drawn without replacement
    from ``population`` items; the share itself when the sample is everything.

    >>> interval(5, 10, 10)
    (0.5, 0.5)
    >>> [round(x, 3) for x in interval(4000, 4000, 114160)]
    [0.999, 1.0]
    """
    share = hits / size
    if size >= population:
        return share, share
    effective = size / ((population - size) / (population - 1))
    z2 = Z95 * Z95 / effective
    center = (share + z2 / 2) / (1 + z2)
    half = Z95 * math.sqrt(share * (1 - share) / effective + z2 / (4 * effective)) / (1 + z2)
    return max(0.0, center - half), min(1.0, center + half)


def _columns(session, table: str, version: int | None) -> tuple[list[Column], dict[str, str]]:
    """The columns patterns may use, keys first, and the Spark expression fetching each
    (ordered values as doubles: dates as days, timestamps as microseconds)."""
    entry = session.catalog.entry(table)
    schema = {name: kind for name, kind in entry.version_schema(version).items() if name != ID_COLUMN}
    order = [*(c for c in entry.key or [] if c in schema), *(c for c in schema if c not in (entry.key or []))]
    columns, fetch = [], {}
    for name in order:
        kind = schema[name]
        quoted = backquoted(name)
        if kind in RANGE_TYPES or kind.startswith(("decimal", "timestamp")):
            columns.append(Column(name, "range", kind))
            value = (f"unix_date({quoted})" if kind == "date"
                     else f"unix_micros({quoted})" if kind.startswith("timestamp") else quoted)
            fetch[name] = f"CAST({value} AS double)"
        elif kind in ("string", "boolean"):
            columns.append(Column(name, "equal", kind))
            fetch[name] = quoted
    return columns, fetch


def _summarize_table(session, table: str, version: int | None, ids: np.ndarray, k: int, sample: int,
                     rng: np.random.Generator) -> TableSummary:
    import pyarrow as pa
    import pyarrow.compute as pc
    from pyspark.sql import functions as F

    catalog = session.catalog
    entry = catalog.entry(table)
    known_rows = next((old.get("rows") for old in entry.previous if old.get("version") == version), None) or entry.rows
    data = table_data.table_rows(session.spark, catalog, table, version)
    columns, fetch = _columns(session, table, version)
    whole = known_rows <= TABLE_SAMPLE
    members = _population(session, table, version, fetch, whole)
    population = {c.name: _values(members.column(c.name), c) for c in columns}
    # near-unique text (names, comments) makes no patterns: not fetched for the lineage rows
    usable = [c for c in columns if c.kind == "range" or _categorical(population[c.name])]
    # the lineage rows in the table sample are a uniform sample of the lineage: enough of
    # them and no lineage row needs fetching
    in_members = pc.is_in(members.column(ID_COLUMN), value_set=pa_array(ids))
    if (pc.sum(in_members).as_py() or 0) >= min(sample, len(ids), ENOUGH_IN_TABLE_SAMPLE):
        found = members.filter(in_members)
        if found.num_rows > sample:
            found = found.take(np.sort(rng.choice(found.num_rows, sample, replace=False)))
    else:  # a broadcast semi-join; the range lets Parquet statistics skip row groups outside it
        sampled = ids if len(ids) <= sample else np.sort(rng.choice(ids, sample, replace=False))
        wanted = F.broadcast(session.spark.createDataFrame(pa.table({ID_COLUMN: pa_array(sampled)})))
        in_range = F.col(ID_COLUMN).between(int(sampled[0]), int(sampled[-1]))
        found = (data.where(in_range).join(wanted, ID_COLUMN, "left_semi")
                 .select(ID_COLUMN, *(F.expr(fetch[c.name]).alias(c.name) for c in usable)).toArrow())
    positives = {c.name: _values(found.column(c.name), c) for c in usable}
    size = found.num_rows  # the sampled ids found (all of them, unless the data was removed)
    if not size:
        raise BadInput(f"the lineage ids of {table} are not in its data version {version}: was its Parquet replaced?")
    table_rows = members.num_rows if whole else known_rows
    learned = learn_patterns(usable, positives, population, len(ids), table_rows, k)
    if whole:  # the table sample is the table: its counts are exact, and a key's pattern covers the same rows
        learned = prefer_keys(learned, _keys(columns, entry.key or [], population), population)
        counts = [int(_matching(p, population).sum()) for p in learned]
    else:
        learned = _on_the_declared_key(data, learned, [c for c in columns if c.name in (entry.key or [])], fetch)
        counts = _exact_counts(data, learned)
    summary = TableSummary(table, version, len(ids), table_rows, size, members.num_rows)
    for pattern, count in zip(learned, counts):
        summary.patterns.append(_measured(pattern, size, len(ids), count))
    covered = int(np.any([p.matches for p in learned], axis=0).sum()) if learned else 0
    summary.covered = covered / size
    summary.covered_interval = interval(covered, size, len(ids))
    return summary


def pa_array(values: np.ndarray):
    import pyarrow as pa

    return pa.array(values, type=pa.int64())


_POPULATIONS: dict[tuple[str, tuple], object] = {}  # (Parquet path, fetched columns) -> Arrow table


def _population(session, table: str, version: int | None, fetch: dict[str, str], whole: bool):
    """The table's rows precision is estimated on, as Arrow (``_dl_id`` and ``fetch``'s
    columns): the whole table when small, else its stored sample.  A table version never
    changes, so they are read once per process."""
    from pyspark.sql import functions as F

    catalog = session.catalog
    path = catalog.data_path(table, version) if whole else ensure_table_sample(session, table, version)
    key = (str(path), tuple(fetch.items()))
    if key not in _POPULATIONS:
        schema = catalog.entry(table).version_schema(version)
        rows = (
            table_data.table_rows(session.spark, catalog, table, version)
            if whole
            else read_parquet(session.spark, path, schema)
        )
        _POPULATIONS[key] = rows.select(ID_COLUMN, *(F.expr(e).alias(n) for n, e in fetch.items())).toArrow()
    return _POPULATIONS[key]


def ensure_table_sample(session, table: str, version: int | None) -> Location:
    """A uniform sample of about ``TABLE_SAMPLE`` rows of ``table`` at data ``version``,
    built on first use and kept at ``samples/<table>-v<k>-<size>.parquet`` (written aside,
    renamed into place), so that a summary never scans the whole table for it."""
    entry = session.catalog.entry(table)
    target = session.catalog.directory / SAMPLES / f"{table}-v{version or entry.version}-{TABLE_SAMPLE}.parquet"
    if target.complete():
        return target
    rows = next((old.get("rows") for old in entry.previous if old.get("version") == version), None) or entry.rows
    data = table_data.table_rows(session.spark, session.catalog, table, version)
    return build_once(target, lambda tmp: data.where(sampled(TABLE_SAMPLE / max(rows, 1))).coalesce(1)
                      .write.parquet(str(tmp)))


def sampled(fraction: float):
    """Rows taken with probability ``fraction`` by a hash of their id: the same rows however
    Spark splits the table into tasks (``sample(fraction, seed)`` draws per partition, so
    its rows change with the partitioning a session's earlier work leaves)."""
    from pyspark.sql import functions as F

    buckets = 1 << 30
    return F.pmod(F.xxhash64(F.col(ID_COLUMN), F.lit(SEED)), F.lit(buckets)) < F.lit(int(min(1.0, fraction) * buckets))


def _keys(columns: list[Column], key: list[str], rows: dict[str, np.ndarray]) -> list[list[Column]]:
    """The table's key (its columns patterns may use), then each column unique in ``rows``
    (the whole table): what ``prefer_keys`` rewrites patterns on."""
    by_name = {c.name: c for c in columns}
    keys = [[by_name[name] for name in key]] if key and all(name in by_name for name in key) else []
    for column in columns:
        values = rows[column.name]
        present = values[~np.isnan(values)] if column.kind == "range" else [v for v in values if v is not None]
        if [column.name] != key and len(present) == len(values) and len(set(present)) == len(values):
            keys.append([column])
    return keys


def _values(column, spec: Column) -> np.ndarray:
    """A fetched Arrow column as numpy: doubles with NaN for NULL, or objects with None."""
    if spec.kind == "range":
        return column.to_numpy(zero_copy_only=False).astype(np.float64)
    return column.to_numpy(zero_copy_only=False).astype(object)


def _categorical(values: np.ndarray) -> bool:
    """Equalities are informative on columns with repeated values, not on names, phones or
    comments, which are nearly unique: at most one distinct value per two rows."""
    present = [v for v in values if v is not None]
    return bool(present) and len(set(present)) * 2 <= len(values)


def _matching(pattern: LearnedPattern, rows: dict[str, np.ndarray]) -> np.ndarray:
    size = len(next(iter(rows.values())))
    matches = np.ones(size, dtype=bool)
    for constraint in pattern.constraints:
        matches &= constraint.holds(rows[constraint.column.name])
    return matches


def _exact_counts(data, learned: list[LearnedPattern]) -> list[int]:
    """The rows each pattern matches, in one aggregation job over the rows any matches: that
    filter reaches Parquet, whose statistics skip row groups outside the patterns' ranges
    (table files are in id order, often chronological: Q6's year is a seventh of lineitem)."""
    from pyspark.sql import functions as F

    if not learned:
        return []
    counts = [F.count_if(F.expr(p.sql())).alias(f"p{i}") for i, p in enumerate(learned)]
    row = data.where(" OR ".join(f"({p.sql()})" for p in learned)).agg(*counts).first()
    return [int(row[f"p{i}"]) for i in range(len(learned))]


def _on_the_declared_key(data, learned: list[LearnedPattern], key: list[Column],
                         fetch: dict[str, str]) -> list[LearnedPattern]:
    """On a sampled table, each pattern replaced by one on the table's declared key where
    Spark counts the same rows (``prefer_keys`` on a whole table): the key's range over the
    pattern's rows (a key of one ordered column), or the key of its one row.  Either holds
    every row the pattern holds, so equal counts are the same rows.  Two aggregation jobs."""
    from pyspark.sql import functions as F

    names = {c.name for c in key}
    open_ = [i for i, p in enumerate(learned) if key and not {c.column.name for c in p.constraints} <= names]
    if not open_:
        return learned
    found = []
    for i in open_:
        condition = F.expr(learned[i].sql())
        found += [F.count_if(condition).alias(f"n{i}"),
                  *(F.min(F.when(condition, F.expr(fetch[c.name]))).alias(f"lo{i}_{c.name}") for c in key),
                  *(F.max(F.when(condition, F.expr(fetch[c.name]))).alias(f"hi{i}_{c.name}") for c in key)]
    row = data.where(" OR ".join(f"({learned[i].sql()})" for i in open_)).agg(*found).first()
    candidates = {}
    for i in open_:
        low, high = ({c.name: row[f"{end}{i}_{c.name}"] for c in key} for end in ("lo", "hi"))
        if None in low.values():
            continue
        constraints = key_constraints(key, low, high, row[f"n{i}"])
        if constraints is not None:
            candidates[i] = constraints
    counts = _exact_counts(data, [LearnedPattern(c, learned[i].matches) for i, c in candidates.items()])
    same = {i: c for (i, c), n in zip(candidates.items(), counts) if n == row[f"n{i}"]}
    return [LearnedPattern(same[i], p.matches) if i in same else p for i, p in enumerate(learned)]


def _measured(pattern: LearnedPattern, size: int, lineage_rows: int, table_rows: int) -> PatternSummary:
    hits = int(pattern.matches.sum())
    recall = hits / size
    low, high = interval(hits, size, lineage_rows)
    estimate = round(recall * lineage_rows)
    denominator = max(table_rows, estimate, 1)  # lineage rows are table rows
    return PatternSummary(
        predicate=pattern.sql(),
        columns=[c.column.name for c in pattern.constraints],
        lineage_rows=estimate,
        recall=recall,
        recall_interval=(low, high),
        table_rows=table_rows,
        precision=estimate / denominator,
        precision_interval=(min(1.0, low * lineage_rows / denominator), min(1.0, high * lineage_rows / denominator)),
    )
