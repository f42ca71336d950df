"""``explain --summary``: a saved row's lineage described by at most K patterns per base table.

Per table in the row's DL, two Spark jobs whatever the lineage size:

1. one scan of the table fetches a uniform sample of the lineage rows (at most ``sample``
   ids drawn from DL) and, in the same pass, a Bernoulli sample of about ``TABLE_SAMPLE``
   table rows (the whole table when it is smaller); patterns are learned locally on those
   (``patterns.learn_patterns``), precision of every candidate estimated from the table
   sample;
2. one aggregation over the table counts, exactly, the rows each chosen pattern matches and
   the rows any of them matches (skipped when the table sample was the whole table).

Recall (the share of the lineage rows a pattern matches) is measured on the lineage sample:
exact when the sample is the whole lineage, else with a 95% Wilson interval (finite
population corrected).  Precision is the estimated lineage rows matching over the exact
table rows matching, with the same interval.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from dltrace.catalog import ID_COLUMN
from dltrace.errors import BadInput
from dltrace.ids import ROW_BITS
from dltrace.results import read_parquet
from dltrace.summary.patterns import Column, LearnedPattern, learn_patterns
from dltrace.summary.stored import row_ids

DEFAULT_PATTERNS = 3
LINEAGE_SAMPLE = 4000  # lineage rows per table the patterns are learned on: recall within ±1.6%
TABLE_SAMPLE = 50_000  # table rows precision is estimated on while searching
SEED = 17
Z95 = 1.959964
RANGE_TYPES = ("tinyint", "smallint", "int", "bigint", "float", "double", "date")
IN_SAMPLE = "__dl_in_table_sample"


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
        tables.append(_summarize_table(session, table, saved.tables.get(table), ids[codes == code], k, sample, rng))
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
        quoted = "`" + name.replace("`", "``") + "`"
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
    from pyspark.sql import functions as F

    catalog = session.catalog
    entry = catalog.entry(table)
    known_rows = next((old.get("rows") for old in entry.previous if old.get("version") == version), None) or entry.rows
    data = read_parquet(session.spark, catalog.data_path(table, version), entry.version_schema(version))
    columns, fetch = _columns(session, table, version)
    sampled = ids if len(ids) <= sample else np.sort(rng.choice(ids, sample, replace=False))
    fraction = min(1.0, TABLE_SAMPLE / max(known_rows, 1))
    in_table_sample = F.rand(SEED) < fraction if fraction < 1 else F.lit(True)
    wanted = F.expr(f"{ID_COLUMN} IN ({', '.join(map(str, sampled.tolist()))})")  # one string, not a py4j call per id
    fetched = (data.select(ID_COLUMN, in_table_sample.alias(IN_SAMPLE), *(F.expr(e).alias(n) for n, e in fetch.items()))
               .where(F.col(IN_SAMPLE) | wanted).toArrow())
    in_lineage = np.isin(fetched.column(ID_COLUMN).to_numpy(), sampled)
    in_population = fetched.column(IN_SAMPLE).to_numpy(zero_copy_only=False).astype(bool)
    arrays = {c.name: _values(fetched.column(c.name), c) for c in columns}
    positives = {name: values[in_lineage] for name, values in arrays.items()}
    population = {name: values[in_population] for name, values in arrays.items()}
    usable = [c for c in columns if c.kind == "range" or _categorical(population[c.name])]
    table_rows = int(in_population.sum()) if fraction >= 1 else known_rows
    learned = learn_patterns(usable, positives, population, len(ids), table_rows, k)
    if fraction >= 1:  # the table sample is the table: its counts are exact
        counts = [int(_matching(p, population).sum()) for p in learned]
    else:
        table_rows, counts = _exact_counts(data, learned)
    size = int(in_lineage.sum())  # the sampled ids found (all of them, unless the data was removed)
    if not size:
        raise BadInput(f"the lineage ids of {table} are not in its data version {version}: was its Parquet replaced?")
    summary = TableSummary(table, version, len(ids), table_rows, size, int(in_population.sum()))
    for pattern, count in zip(learned, counts):
        summary.patterns.append(_measured(pattern, size, len(ids), count))
    covered = int(np.any([p.matches for p in learned], axis=0).sum()) if learned else 0
    summary.covered = covered / size
    summary.covered_interval = interval(covered, size, len(ids))
    return summary


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


def _exact_counts(data, learned: list[LearnedPattern]) -> tuple[int, list[int]]:
    """The table's rows and the rows each pattern matches: one aggregation job."""
    from pyspark.sql import functions as F

    counts = [F.count_if(F.expr(p.sql())).alias(f"p{i}") for i, p in enumerate(learned)]
    row = data.agg(F.count(F.lit(1)).alias("rows"), *counts).first()
    return int(row["rows"]), [int(row[f"p{i}"]) for i in range(len(learned))]


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
