"""Forward impact (docs/architecture.md, "Impact and explain"): which output rows did some bad source rows affect?

Both modes answer with the affected output rows, their columns, and ``DL`` narrowed to the
bad ids each one derives from, so their answers can be compared row for row:

* **stored**: search a saved result for rows whose DL overlaps the bad rows' ids.  Up to
  ``LITERAL_IDS`` bad ids travel as a literal array (``arrays_overlap``); the forward index
  (id -> ``_row``) then names the hit rows, which are read by ``_row`` from a few row groups.
  More bad ids are joined, broadcast, against the (id, _row) pairs: no per-row loop.
* **reeval** (the paper's §2.3): rerun the query with lineage for the bad rows only ("all
  other base tuples have null lineage"): the bad table's ids become
  ``CASE WHEN predicate THEN _dl_id END`` and every other table contributes nothing.  The
  predicate is evaluated in the query's own scan of the table, so nothing is computed
  beforehand and the cost stays that of the query.  Output rows with non-empty lineage are
  the affected ones.
"""

from __future__ import annotations

import hashlib
import warnings

import numpy as np
from sqlglot import exp

from dltrace.catalog import ID_COLUMN
from dltrace.dataframe import runs
from dltrace.engine import Engine
from dltrace.errors import BadInput, spark_error
from dltrace.ids import ROW_BITS
from dltrace.impact import files
from dltrace.impact.key_index import rows_to_search
from dltrace.impact.source import Source, parse_source
from dltrace.result_pages import from_files as from_files_of
from dltrace.result_pages import readable_without_spark
from dltrace.results import DL, INDEX_ID, ROW, SHARED_ID, SHARED_REFS, SHARED_SET, ResultStore, SavedResult
from dltrace.rewriter.dialect import SPARK
from dltrace.table_data import table_rows

MODES = ("stored", "reeval")
LITERAL_IDS = 1000  # bad ids inlined as a literal; beyond, a broadcast join
LITERAL_ROWS = 10000  # index hits read by a literal list of _row values; beyond, a scan
BROADCAST_IDS = 5_000_000  # bad ids broadcast to every task; beyond, a shuffle join
BAD_ID = "__dl_bad"  # re-evaluation: the bad rows' ids, NULL for every other row


class ImpactWarning(UserWarning):
    """Something the user should know about an answer that is still given (the CLI prints
    it as one line on stderr): a source that matches no rows, a result older than its data."""


def impact(session: Engine, source: str, result: str | None = None, query: str | None = None,
           mode: str | None = None, semantics: str = "control", use_index: bool = True, from_files: bool = False,
           run: int | None = None, since: float | None = None):
    """The output rows affected by the rows ``source`` names, from saved ``result`` or ``query``.

    ``mode`` defaults to ``stored`` for a result and ``reeval`` for a query; ``reeval`` with a
    result reruns its saved query on the current data (saved results it reads inlined).
    With neither: ``{name: rows}`` for every saved result, from stored lineage.  With
    ``from_files``, stored answers come as pyarrow Tables read from the saved files where the
    result's columns allow (``impact.files``; the command line), else as Spark DataFrames.
    ``result`` may be an output a job wrote in runs: the union of its runs' answers, each row
    with its ``_run`` and ``_run_at`` (``run``: that run only; ``since``: runs written then or later).
    """
    if result is not None and query is not None:
        raise BadInput("impact takes a saved result (--result NAME) or a query (--query QUERY), not both")
    mode = mode or ("stored" if query is None else "reeval")
    if mode not in MODES:
        raise BadInput(f"unknown impact mode '{mode}': use stored or reeval")
    bad = parse_source(source, session.catalog)
    if result is None and query is None:
        return impact_everywhere(session, bad, mode, use_index, from_files)
    record = runs.output(session.catalog, result) if result is not None and mode == "stored" else None
    if record is not None:
        return output_impact(session, bad, record, run, since, use_index, from_files)
    if run is not None or since is not None:
        raise BadInput(f"--run and --since choose runs of an output a job adds to under `dltrace run`: "
                       f"{result or 'a query'} is none")
    saved = ResultStore(session.catalog).get(result) if result is not None else None
    if saved is not None:
        warn_if_stale(session, saved, bad, mode)
        warn_if_past_retention(ResultStore(session.catalog), [saved])
    if mode == "stored":
        if saved is None:
            raise BadInput(
                "--mode stored searches a saved result: give --result NAME, or use --mode reeval with --query"
            )
        return stored_impact(session, bad, saved, use_index, from_files)
    if saved is not None:
        query, semantics = saved.query, saved.semantics
    return reeval_impact(session, bad, query, semantics)


def impact_everywhere(session: Engine, source: Source, mode: str = "stored", use_index: bool = True,
                      from_files: bool = False) -> dict:
    """``{result name: affected rows}`` for every saved result whose lineage can hold ids of
    the source's table: the bad ids are read once, and each result is searched with them
    (its forward index when it has one), one lookup per result, not per id."""
    store = ResultStore(session.catalog)
    candidates = [r for r in store.list() if source.table in r.lineage_tables]
    stale = {name: why for name, why in store.staleness().items() if why}
    if stale and mode == "stored":
        warnings.warn(ImpactWarning(f"{len(stale)} saved results are stale ({', '.join(sorted(stale))}): rows new or "
                                    f"changed since they were saved are not in their lineage"), stacklevel=3)
    if mode == "reeval":
        return {r.name: reeval_impact(session, source, r.query, r.semantics) for r in candidates}
    ids = bad_ids(session, source, from_files)
    if not len(ids):
        warnings.warn(ImpactWarning(f"no rows match {source.text}: nothing is affected"), stacklevel=3)
    searched: dict = {}  # an upstream save that several results reference is searched once
    read: dict = {}  # the same, read from the files
    warn_if_past_retention(store, candidates)
    return {r.name: answer(session, store, r, ids, use_index, from_files, searched, read) for r in candidates
            if r.pruned_at is None}


def output_impact(session: Engine, source: Source, record, run: int | None, since: float | None,
                  use_index: bool, from_files: bool):
    """The affected rows of an output written in runs: each chosen run's answer with its
    ``_run`` and ``_run_at``, in one; the runs past retention counted in a warning."""
    store = ResultStore(session.catalog)
    chosen = [(r, store.get(r.result)) for r in runs.chosen(record, run, since)]
    replaced = runs.replaced_later(record)  # rows the output no longer holds: Spark filters them out
    pruned = [(r, saved) for r, saved in chosen if saved.pruned_at is not None]
    if pruned:
        held = sum(saved.rows if saved.name not in replaced else
                   runs.still_held(store.rows(session.spark, saved), record, replaced[saved.name]).count()
                   for _, saved in pruned)
        warnings.warn(ImpactWarning(runs.past_retention(record.name, held, [r for r, _ in pruned])), stacklevel=3)
    kept = [(r, saved) for r, saved in chosen if saved.pruned_at is None]
    warn_if_past_retention(store, [saved for _, saved in kept])
    ids = bad_ids(session, source, from_files) if kept else np.array([], np.int64)
    if kept and not len(ids):
        warnings.warn(ImpactWarning(f"no rows match the source '{source.text}': nothing is affected"), stacklevel=3)
    # no run chosen, or each past retention: an empty answer in the columns of the newest run
    asked = kept or [(r, store.get(r.result)) for r in record.run_list()[-1:]]
    answers = [answer(session, store, saved, ids, use_index, from_files and not replaced) for _, saved in asked]
    if from_files and not all(from_files_of(a) for a in answers):  # one kind of answer: Spark's, for all
        answers = [search_result(session, store, saved, ids, use_index) for _, saved in asked]
    return runs.union([runs.tagged(a if from_files_of(a) else runs.still_held(a, record, replaced.get(saved.name)),
                                   runs.RunOf(record.name, r.number, r.written_at))
                       for (r, saved), a in zip(asked, answers)])


def warn_if_past_retention(store: ResultStore, results: list[SavedResult]) -> None:
    """Say which results' lineage stops at rows past retention: their own rows (searched
    everywhere: skipped) or the rows of pruned runs they were computed from."""
    pruned = [r for r in results if r.pruned_at is not None]
    if pruned:
        warnings.warn(ImpactWarning(f"{sum(r.rows for r in pruned)} rows of {', '.join(r.name for r in pruned)} are "
                                    f"past retention (lineage dropped by `dltrace results prune`): not searched"),
                      stacklevel=4)
    for result in results:
        if result.pruned_at is None and (upstream := runs.pruned_upstream(store, result)):
            warnings.warn(ImpactWarning(f"the lineage of {result.name} stops at rows past retention: "
                                        f"{runs.stops_at(upstream)}; rows computed from them are not found"),
                          stacklevel=4)


def bad_rows(session: Engine, source: Source):
    """The ids of the bad rows, as a one-column DataFrame (``_dl_id``).

    The predicate runs as SQL over a view of the rows to search, named as the table, so that
    its subqueries can read the catalog's tables like any query.
    """
    path, rows = rows_to_search(session, source.table, source.version, source.columns)
    view = "__dl_source_" + hashlib.sha256(str(path).encode()).hexdigest()[:12]
    rows.createOrReplaceTempView(view)
    try:
        return session.run(
            f"SELECT {ID_COLUMN} FROM {view} AS {source.table} WHERE {source.predicate.sql(dialect=SPARK)}"
        )
    except BadInput as error:
        raise BadInput(f"--source {source.text}: {error}") from None


def bad_ids(session: Engine, source: Source, from_files: bool = False) -> np.ndarray:
    """The bad ids (sorted int64): read with pyarrow when ``from_files`` and the table and
    predicate allow it (``files.bad_ids``), else by Spark."""
    found = files.bad_ids(session.catalog, source) if from_files else None
    return found if found is not None else collect_bad_ids(session, source)


def collect_bad_ids(session: Engine, source: Source) -> np.ndarray:
    """The bad ids, read now (sorted, as int64); a predicate that fails only when it runs
    (e.g. a cast of bad text) is bad input too."""
    from pyspark.errors import PySparkException

    try:
        return np.unique(int_column(bad_rows(session, source)))
    except PySparkException as error:
        raise BadInput(f"--source {source.text}: {spark_error(error)}") from None


def matches_nothing(session: Engine, source: Source) -> bool:
    """True when no row matches the source (a scan: asked only when an answer came out empty)."""
    return bad_rows(session, source).isEmpty()


def int_column(frame) -> np.ndarray:
    """A one-column integer DataFrame as a numpy array, through Arrow in one job (a
    ``limit`` would run one job after another while it finds too few rows)."""
    return frame.toArrow().column(0).to_numpy().astype(np.int64, copy=False)


def stored_impact(session: Engine, source: Source, saved: SavedResult, use_index: bool = True,
                  from_files: bool = False, ids: np.ndarray | None = None):
    """The rows of ``saved`` whose DL overlaps the bad ids, ``DL`` narrowed to those ids
    (``ids``: the bad ids when already known, as the explorer asks result after result)."""
    ids = bad_ids(session, source, from_files) if ids is None else ids
    if not len(ids):
        warnings.warn(ImpactWarning(f"no rows match the source '{source.text}': nothing is affected"), stacklevel=3)
    store = ResultStore(session.catalog)
    return answer(session, store, saved, ids, use_index, from_files)


def answer(session: Engine, store: ResultStore, saved: SavedResult, ids: np.ndarray, use_index: bool,
           from_files: bool, searched: dict | None = None, read: dict | None = None):
    """``search_result``'s answer; read from the files instead (a pyarrow Table) when
    ``from_files`` and they give what Spark would (``files.affected_rows``)."""
    if from_files and readable_without_spark(saved):
        found = files.affected_rows(store, saved, ids, use_index, read)
        if found is not None:
            return found
    return search_result(session, store, saved, ids, use_index, searched)


def search_result(session: Engine, store: ResultStore, saved: SavedResult, ids: np.ndarray, use_index: bool = True,
                  searched: dict | None = None):
    """The rows of ``saved`` whose DL holds one of ``ids`` (sorted), ``DL`` narrowed to them.

    A row's DL is its own ids, the shared sets it names and the upstream rows it names (a
    step saved from other results, dltrace/results.py): each shared set is searched once, and
    a hit in it affects every row that names the set; the upstream results are searched first
    (each save once, ``searched``), and their hit rows' names are looked up like ids.
    """
    from pyspark.sql import functions as F

    spark = session.spark
    rows = store.rows(spark, saved)
    index = store.index(spark, saved) if use_index else None
    shared_hits = _shared_hits(spark, store, saved, ids) if len(ids) else None
    named_hits = _named_hits(session, store, saved, ids, use_index, {} if searched is None else searched)
    if not len(ids):
        return rows.limit(0).drop(SHARED_REFS)
    if len(ids) > LITERAL_IDS or shared_hits is not None or named_hits is not None:
        return _joined_impact(spark, rows, index, ids, shared_hits, named_hits)
    candidates = rows
    if index is not None:
        hit_rows = np.unique(int_column(index.where(f"{INDEX_ID} IN ({_numbers(ids)})").select(ROW)))
        if not len(hit_rows):
            return rows.limit(0).drop(SHARED_REFS)
        if len(hit_rows) <= LITERAL_ROWS:
            candidates = store.rows_at(spark, saved, hit_rows)
    literal = f"array({_numbers(ids)})"
    hits = candidates.where(F.expr(f"arrays_overlap({DL}, {literal})")).withColumn(
        DL, F.expr(f"array_intersect({DL}, {literal})")
    )
    # few rows: sorted in one partition, in the job that finds them (a global sort would
    # sample its input in a job of its own, a repartition add a shuffle stage)
    return hits.drop(SHARED_REFS).coalesce(1).sortWithinPartitions(ROW)


def _bad_frame(spark, ids: np.ndarray):
    """The bad ids as a one-column DataFrame, broadcast while they fit."""
    import pyarrow as pa
    from pyspark.sql import functions as F

    bad = spark.createDataFrame(pa.table({INDEX_ID: ids}))
    return F.broadcast(bad) if len(ids) <= BROADCAST_IDS else bad


def _shared_hits(spark, store: ResultStore, saved: SavedResult, ids: np.ndarray):
    """The bad ids in ``saved``'s shared sets, ``(set_id, id)``, or None when they hold none:
    every shared set is searched once, whatever the number of rows naming it."""
    import pyarrow as pa

    sets = store.shared_sets(spark, saved)
    if sets is None:
        return None
    if len(ids) <= LITERAL_IDS:
        found = sets.where(f"{SHARED_ID} IN ({_numbers(ids)})")
    else:
        found = sets.join(_bad_frame(spark, ids).withColumnRenamed(INDEX_ID, SHARED_ID), SHARED_ID, "left_semi")
    table = found.toArrow()
    return (
        spark.createDataFrame(pa.table({SHARED_SET: table.column(SHARED_SET), INDEX_ID: table.column(SHARED_ID)}))
        if table.num_rows
        else None
    )


def _named_hits(session: Engine, store: ResultStore, saved: SavedResult, ids: np.ndarray, use_index: bool,
                searched: dict):
    """The hit rows of the upstream saves ``saved`` names, as ``(id: the row's name in
    saved's DLs, __bad: a bad id it holds)``, or None when none is hit."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if not (saved.references and len(ids)):
        return None
    names, bad = [], []
    for upstream, code in store.referenced(saved):
        key = (upstream.name, upstream.stamp)
        if key not in searched:
            found = search_result(session, store, upstream, ids, use_index, searched).select(ROW, DL).toArrow()
            rows = found.column(ROW).to_numpy()
            lengths = pc.list_value_length(found.column(DL)).to_numpy(zero_copy_only=False)
            searched[key] = (np.repeat(rows, lengths), pc.list_flatten(found.column(DL)).to_numpy())
        rows, hits = searched[key]
        names.append(rows.astype(np.int64) + (code << ROW_BITS))
        bad.append(hits.astype(np.int64))
    if not sum(map(len, names)):
        return None
    return session.spark.createDataFrame(pa.table({INDEX_ID: np.concatenate(names), "__bad": np.concatenate(bad)}))


def _joined_impact(spark, rows, index, ids: np.ndarray, shared_hits=None, named_hits=None):
    """Many bad ids (or hits in shared sets or upstream rows): joined against the (id, _row)
    pairs, from the forward index or from the saved DLs exploded; a shared set's hits reach
    every row naming it, an upstream row's bad ids every row naming the upstream row."""
    from pyspark.sql import functions as F

    pairs = index if index is not None else rows.select(F.explode(DL).alias(INDEX_ID), ROW)
    matched = pairs.join(_bad_frame(spark, ids), INDEX_ID).select(INDEX_ID, ROW)
    if named_hits is not None:
        named = pairs.join(F.broadcast(named_hits), INDEX_ID).select(F.col("__bad").alias(INDEX_ID), ROW)
        matched = matched.unionByName(named)
    if shared_hits is not None:
        naming = rows.select(ROW, F.explode(SHARED_REFS).alias(SHARED_SET))
        matched = matched.unionByName(naming.join(F.broadcast(shared_hits), SHARED_SET).select(INDEX_ID, ROW))
    narrowed = matched.groupBy(ROW).agg(F.sort_array(F.collect_set(INDEX_ID)).alias(DL))
    columns = [c for c in rows.columns if c != SHARED_REFS]
    return rows.drop(DL).join(narrowed, ROW).select(*columns).orderBy(ROW)


def reeval_impact(session: Engine, source: Source, query: str, semantics: str = "control"):
    """Rerun ``query`` with lineage for the bad rows only; the rows it reaches are affected.

    The bad table is read through a view with one more column, ``__dl_bad``: the row's id
    when it is bad, else NULL.  Computed where the table is scanned, it replaces the
    predicate's columns and ``_dl_id`` in every shuffle of the query (mostly NULLs), which
    keeps re-evaluation at the cost of the query itself.
    """
    from pyspark.sql import functions as F

    def bad_ids_only(table: exp.Table) -> tuple[exp.Expression, bool] | None:
        # other tables contribute nothing (a subquery reading only them gets no lineage copy)
        if table.name.lower() != source.table:
            return None
        return exp.column(BAD_ID, table=table.alias_or_name), True

    # saved results the query reads are inlined: their lineage would name every row
    expression = session.lineage_expression(session.expand(query, inline_results=True), semantics, "set", bad_ids_only)
    view = bad_rows_view(session, source)
    for node in expression.find_all(exp.Table):
        if node.name.lower() == source.table:
            node.set("this", exp.to_identifier(view))
    return session.run(expression.sql(dialect=SPARK)).where(F.size(DL) > 0)


def bad_rows_view(session: Engine, source: Source) -> str:
    """A view of the source table (at its data version) plus ``__dl_bad``: ``_dl_id`` for
    the bad rows, NULL for the others.  A predicate with a subquery is evaluated to ids first
    (Spark takes subqueries in filters only, not in a projection's CASE)."""
    catalog = session.catalog
    version = source.version if source.version is not None else catalog.entry(source.table).version
    name = f"__dl_bad_{hashlib.sha256(f'{source.text}@{version}'.encode()).hexdigest()[:12]}"
    base = f"{name}_rows"
    table_rows(session.spark, catalog, source.table, version).createOrReplaceTempView(base)
    if source.has_subquery:
        ids = collect_bad_ids(session, source)
        is_bad = f"{ID_COLUMN} IN ({_numbers(ids)})" if len(ids) else "FALSE"
    else:
        is_bad = source.predicate.sql(dialect=SPARK)
    try:
        bad_rows = f"SELECT *, CASE WHEN {is_bad} THEN {ID_COLUMN} END AS {BAD_ID} FROM {base} AS {source.table}"
        # it reads the view made above alone (a subquery's ids are literals by now)
        session.run(bad_rows, reads=set()).createOrReplaceTempView(name)
    except BadInput as error:
        raise BadInput(f"--source {source.text}: {error}") from None
    return name


def warn_if_stale(session: Engine, saved: SavedResult, source: Source, mode: str) -> None:
    """Warn when tables ``saved`` read have been revised since it was computed.

    The answer is still given: rows unchanged since keep their ids, so the saved lineage
    finds them; rows new or changed since were never part of the result.
    """
    catalog = session.catalog
    changed = {t: (v, catalog.entry(t).version) for t, v in saved.tables.items()
               if t in catalog.tables and catalog.entry(t).version != v}
    if not changed:
        why = ResultStore(catalog).staleness().get(saved.name)
        if why:
            warnings.warn(ImpactWarning(f"result {saved.name} is stale ({why}): rows new or changed since are not "
                                        f"in its lineage"), stacklevel=3)
        return
    what = ", ".join(f"{t} v{old} -> v{new}" for t, (old, new) in sorted(changed.items()))
    if mode == "reeval":
        advice = "re-evaluation runs its query on the current data"
    elif source.table in changed and source.version != changed[source.table][0]:
        advice = (f"its lineage has the ids of {source.table} v{changed[source.table][0]}: ask about the rows it was "
                  f"computed from with the source '{source.table}@v{changed[source.table][0]} WHERE ...'")
    else:
        advice = "rows new or changed since are not in its lineage"
    warnings.warn(ImpactWarning(
        f"result {saved.name} was saved at catalog version {saved.catalog_version} (now {catalog.version}) "
        f"and its data changed since ({what}); {advice}"
    ), stacklevel=3)


def _numbers(values) -> str:
    return ", ".join(str(int(v)) for v in values)
