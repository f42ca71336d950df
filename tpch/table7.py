"""The paper's Table 7 (characteristics of lineage) and Table 9 (space), measured with Spark.

* cardinality: result rows (no LIMIT);
* average lineage size: mean |DL| per result row;
* replication factor: how many result rows an id of the lineage appears in, on average
  (total lineage size / distinct ids);
* clustering factor: percentage of lineage ids within distance < 3 of a neighbour in
  their (sorted) lineage set;
* space: bytes to store all DLs with 4-byte ids, as the paper counted (and 8-byte ids, ours).

With ``--check``, each query without subqueries is also traced independently of dltrace's
rewriter and of Spark: DuckDB runs Perm's provenance query (:mod:`tpch.baselines`) over the
catalog's Parquet and averages the number of contributing base rows per result row.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from dltrace.errors import DltraceError

TABLE7_QUERIES = ["q3", "q5", "q6", "q7", "q9", "q10", "q11", "q15", "q16"]

# The paper's Table 7 (docs/targets.md): (result rows, average lineage size)
PAPER_TABLE7 = {
    "q3": (11620, 4.6), "q5": (5, 4285.8), "q6": (1, 114160), "q7": (4, 4397), "q9": (175, 6738.1),
    "q10": (37967, 6.3), "q11": (1048, 32077), "q15": (1, 225955), "q16": (18308, 12.06),
}

CHARACTERISTICS = """
SELECT sum(size(DL)) AS total_lineage,
       sum(size(filter(sequence(0, size(DL) - 1), i ->
             (i > 0 AND DL[i] - DL[i - 1] < 3) OR (i < size(DL) - 1 AND DL[i + 1] - DL[i] < 3)))) AS clustered
FROM lineage WHERE size(DL) > 0
"""


@dataclass
class Characteristics:
    query: str
    cardinality: int
    avg_lineage: float
    replication: float
    clustering: float
    total_lineage: int
    seconds: float
    note: str = ""
    checked_avg: float | None = None  # DuckDB's average lineage (--check), None if not checked


def characteristics(session, name: str, query: str, semantics: str = "control") -> Characteristics:
    """Table 7's columns for one query, computed natively in Spark over its DL column."""
    started = time.perf_counter()
    try:
        frame = session.sql(query, semantics=semantics)
    except DltraceError as error:
        return Characteristics(name, 0, 0.0, 0.0, 0.0, 0, 0.0, note=str(error))
    frame.select("DL").persist().createOrReplaceTempView("lineage")
    spark = session.spark
    cardinality = spark.table("lineage").count()  # the persisted DLs: the query runs once
    stats = spark.sql(CHARACTERISTICS).first()
    distinct = spark.sql("SELECT count(DISTINCT id) FROM lineage LATERAL VIEW explode(DL) t AS id").first()[0]
    spark.table("lineage").unpersist()
    total = int(stats.total_lineage or 0)
    return Characteristics(
        query=name,
        cardinality=cardinality,
        avg_lineage=float(total) / cardinality if cardinality else 0.0,
        replication=total / distinct if distinct else 0.0,
        clustering=100.0 * float(stats.clustered or 0) / total if total else 0.0,
        total_lineage=total,
        seconds=time.perf_counter() - started,
    )


def independent_average(session, query: str) -> float | None:
    """The average number of contributing base rows per result row, as DuckDB finds them with
    Perm's provenance query; None for a query with subqueries, which that query cannot trace."""
    from dltrace.table_data import duckdb_rows_sql
    from tpch.baselines import contributing_ids_duckdb, shape_of
    from tpch.duck import connect
    from tpch.harness import CannotRun

    try:
        shape = shape_of(session, query)
    except CannotRun:
        return None
    db = connect()
    for name in session.catalog.tables:
        db.execute(f"CREATE VIEW dl_{name} AS {duckdb_rows_sql(session.catalog, name)}")
    text = contributing_ids_duckdb(shape, "dl_")
    (average,) = db.execute(f"SELECT avg(len(__ids)) FROM ({text})").fetchone()
    return float(average or 0.0)


def markdown(rows: list[Characteristics], sf: float) -> str:
    """Table 7 side by side with the paper's figures, plus Table 9's space; with a DuckDB
    column when any row was checked (``--check``)."""
    checked = any(r.checked_avg is not None for r in rows)
    header = ["query", "rows", "paper rows", "avg lineage", "paper avg", *(["DuckDB avg"] if checked else []),
              "replication", "clustering %", "space (4-byte ids)", "seconds"]
    lines = [
        f"## Table 7 at TPC-H SF {sf:g} (control semantics, no LIMIT)",
        "",
        "| " + " | ".join(header) + " |",
        "|---|" + "---:|" * (len(header) - 1),
    ]
    for r in rows:
        paper_rows, paper_avg = PAPER_TABLE7.get(r.query, ("", ""))
        duck = [] if not checked else ["n/a (subqueries)" if r.checked_avg is None else f"{r.checked_avg:.2f}"]
        if r.note:
            cells = [r.query, r.note, paper_rows, "", paper_avg, *[""] * len(duck), "", "", "", ""]
        else:
            cells = [r.query, r.cardinality, paper_rows, f"{r.avg_lineage:.2f}", paper_avg, *duck,
                     f"{r.replication:.2f}", f"{r.clustering:.2f}", 4 * r.total_lineage, f"{r.seconds:.1f}"]
        lines.append("|" + "|".join(f" {cell} " if cell != "" else " " for cell in cells) + "|")
    if checked:
        lines += ["", "DuckDB avg: the same figure found without dltrace (Perm's provenance query on DuckDB "
                      "over the catalog's Parquet), for the queries without subqueries."]
    return "\n".join(lines) + "\n"
