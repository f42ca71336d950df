"""The runs of a job's output as impact, explain, ``dltrace results`` and the explorer show
them, and retention: ``dltrace results prune NAME --keep-runs N`` / ``--before DATE``.

An output a job adds to (docs/dataframes.md, "Daily runs") is the union of its runs, each a
saved result of its own (``daily``, ``daily_run2``, ... for a path; ``t_run1``, ... for a
table) that ``written/`` lists with its number and time (``job_files.Run``).  A row of the
output knows its run by the result it is in, so nothing is stored per row: an answer over the
output is each run's answer with ``_run`` (the run's number) and ``_run_at`` (when it was
written, local ISO time) put first, and ``(_run, _row)`` names an output row.

Retention drops a run's lineage, never its rows: the job's files (or table) still hold them,
and a later read of the output must have them.  The run's saved result is written again with
every ``DL`` empty, no shared sets and no index, and ``pruned_at`` set (result format 7, which
a dltrace that does not know retention refuses rather than take for rows without lineage).
Impact over the output counts the pruned rows as past retention instead of searching them,
explain refuses their rows, and a later read that composes through them says where lineage
stops.  A saved step that named a pruned run's rows before the prune keeps the save it named,
lineage and all, as a step keeps any upstream save it names (``result_cleanup``).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import time
from dataclasses import dataclass

from dltrace.dataframe.job_files import Run, Written, WrittenStore, outside
from dltrace.errors import BadInput
from dltrace.recovery import writer
from dltrace.result_format import DL, FORMAT, SHARED_REFS, SavedResult, time_text

RUN, RUN_AT = "_run", "_run_at"  # the columns an answer over an output's runs puts first


@dataclass(frozen=True)
class RunOf:
    """The run a saved result holds the rows of: its output, number and time."""

    output: str
    number: int
    written_at: float

    def label(self) -> str:
        return f"run {self.number} of {self.output}, written {time_text(self.written_at)}"


def runs_by_result(catalog) -> dict[str, RunOf]:
    """``{saved result: its run}`` for every result that is a run of an output written in runs."""
    return {run.result: RunOf(record.name, run.number, run.written_at)
            for record in WrittenStore(catalog).all().values() if record.runs for run in record.run_list()}


def output(catalog, name: str) -> Written | None:
    """The record of output ``name`` when it was written in runs (appends, partition overwrites)."""
    record = WrittenStore(catalog).all().get(name.lower())
    return record if record is not None and record.runs else None


def moment(text: str, flag: str) -> float:
    """``YYYY-MM-DD`` or ``YYYY-MM-DDTHH:MM[:SS]`` (local time) as seconds since the epoch.

    >>> moment("1970-01-02", "--since") == dt.datetime(1970, 1, 2).timestamp()
    True
    """
    try:
        return dt.datetime.fromisoformat(text).timestamp()
    except ValueError:
        raise BadInput(f"{flag} {text!r} is not a date: give YYYY-MM-DD or YYYY-MM-DDTHH:MM[:SS] (local time)") \
            from None


def chosen(record: Written, run: int | None, since: float | None) -> list[Run]:
    """The output's runs ``--run`` and ``--since`` choose, oldest first."""
    runs = record.run_list()
    if run is None:
        return [r for r in runs if since is None or r.written_at >= since]
    picked = [r for r in runs if r.number == run and (since is None or r.written_at >= since)]
    if not picked and not any(r.number == run for r in runs):
        raise BadInput(f"output {record.name} has no run {run}: its runs are {numbers(runs)}")
    return picked


def replaced_later(record: Written) -> dict[str, list[str]]:
    """``{run's result: its partitions a later run replaced}`` (the output no longer holds
    their rows), for the runs that have some."""
    runs, found = record.run_list(), {}
    for number, run in enumerate(runs):
        replaced = sorted({p for later in runs[number + 1:] if later.replaces for p in later.partitions or []}
                          & set(run.partitions or []))
        if replaced:
            found[run.result] = replaced
    return found


def still_held(frame, record: Written, replaced: list[str] | None):
    """``frame`` (a Spark DataFrame of a run's rows) less the ``replaced`` partitions' rows."""
    return frame.where(outside(record.partition_by, replaced)) if replaced else frame


def numbers(runs: list[Run]) -> str:
    return ", ".join(str(run.number) for run in runs)


def result_of(catalog, name: str, run: int | None) -> str:
    """The saved result ``explain --result NAME [--run K]`` names: run K's of output NAME."""
    record = output(catalog, name)
    if run is None:
        if record is not None and not any(r.result == name.lower() for r in record.run_list()):
            raise BadInput(f"{name} is an output of {len(record.runs)} runs ({numbers(record.run_list())}): "
                           f"give --run K, with the row's _row in that run")
        return name
    if record is None:
        raise BadInput(f"--run {run}: {name} is not an output written in runs (appends under `dltrace run`)")
    return chosen(record, run, None)[0].result


def tagged(answer, of: RunOf):
    """``answer`` (a pyarrow Table or a Spark DataFrame) with ``_run`` and ``_run_at`` first."""
    import pyarrow as pa

    if isinstance(answer, pa.Table):
        rows = answer.num_rows
        answer = answer.add_column(0, RUN, pa.array([of.number] * rows, pa.int64()))
        return answer.add_column(1, RUN_AT, pa.array([time_text(of.written_at)] * rows, pa.string()))
    from pyspark.sql import functions as F

    return answer.select(F.lit(of.number).cast("bigint").alias(RUN), F.lit(time_text(of.written_at)).alias(RUN_AT),
                         *(F.col(f"`{column}`") for column in answer.columns))


def union(answers: list):
    """The runs' tagged answers as one: pyarrow Tables concatenated, DataFrames unioned by name."""
    import pyarrow as pa

    if all(isinstance(answer, pa.Table) for answer in answers):
        return pa.concat_tables(answers, promote_options="default")
    whole = answers[0]
    for answer in answers[1:]:
        whole = whole.unionByName(answer, allowMissingColumns=True)
    return whole


def past_retention(name: str, rows: int, runs: list[Run]) -> str:
    """The warning of an answer over an output whose chosen runs include pruned ones (``rows``:
    theirs the output holds)."""
    return (f"{rows} rows of {name} (run{'s' if len(runs) > 1 else ''} {numbers(runs)}) are past retention: their "
            f"lineage was dropped (`dltrace results prune`), so whether they are affected is not known; they are "
            f"not listed")


def pruned_upstream(store, saved: SavedResult) -> list[SavedResult]:
    """The pruned saves whose rows ``saved`` names, directly or through other steps: lineage
    stops at them."""
    found, pending, seen = [], [saved], set()
    while pending:
        for upstream, _ in store.referenced(pending.pop()):
            if (upstream.name, upstream.stamp) not in seen:
                seen.add((upstream.name, upstream.stamp))
                (found if upstream.pruned_at is not None else pending).append(upstream)
    return sorted(found, key=lambda result: result.name)


def stops_at(pruned: list[SavedResult]) -> str:
    """Where lineage stops, for a warning or a read's line."""
    return ", ".join(f"{result.name} ({result.rows} rows)" for result in pruned)


def prune(lineage, name: str, keep: int | None, before: float | None) -> tuple[Written, list[Run]]:
    """Drop the lineage of output ``name``'s runs outside its ``keep`` newest and written
    ``before`` (each given rule keeps what it keeps); the record and the runs pruned now."""
    if keep is None and before is None:
        raise BadInput("results prune NAME needs --keep-runs N or --before DATE (or both)")
    if keep is not None and keep < 1:
        raise BadInput(f"--keep-runs {keep}: keep at least 1 run's lineage (--before DATE prunes by time alone)")
    record = output(lineage.catalog, name) or refuse(lineage, name)
    runs, store = record.run_list(), lineage.store
    newest = {run.number for run in runs[-keep:]} if keep is not None else set()
    pruned = [run for run in runs if run.number not in newest and (before is None or run.written_at < before)
              and store.get(run.result).pruned_at is None]
    for run in pruned:
        drop_lineage(store, store.get(run.result))
    return record, pruned


def refuse(lineage, name: str):
    """The line for a NAME that is no output written in runs."""
    for record in WrittenStore(lineage.catalog).all().values():
        run = next((r for r in record.run_list() if r.result == name.lower() and record.runs), None)
        if run is not None:
            raise BadInput(f"{name} is run {run.number} of output {record.name}: prune the output "
                           f"(`dltrace results prune {record.name} --keep-runs N`)")
    if lineage.store.exists(name):
        raise BadInput(f"result {name.lower()} has no runs: retention prunes the old runs of an output a job adds to "
                       f"under `dltrace run` (appends, insertInto, partition overwrites); `dltrace results drop "
                       f"{name.lower()}` removes a result")
    outputs = sorted(r.name for r in WrittenStore(lineage.catalog).all().values() if r.runs)
    raise BadInput(f"no output '{name}' written in runs (outputs with runs: {', '.join(outputs) or 'none'}): "
                   f"`dltrace results` lists them")


def drop_lineage(store, saved: SavedResult) -> SavedResult:
    """``saved`` written again with its rows and every DL empty (module docstring), one part
    file for each of its own with the same ``_pos``, a row group at a time: its ``_row``
    numbers stay."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    stamp = f"{time.strftime('%Y%m%dT%H%M%S')}-{time.time_ns() % 1_000_000_000:09d}-p{writer()}"
    data_dir = store.directory / saved.name / stamp
    (data_dir / "rows.parquet").mkdir()
    schema = {column: kind for column, kind in saved.schema.items() if column != SHARED_REFS}
    empty = pa.list_(pa.int64())
    try:
        for info in store.path(saved.data).files():
            if not info.base_name.endswith(".parquet"):
                continue
            source = pq.ParquetFile(store.path(saved.data).fs.open_input_file(info.path))
            columns = [column for column in schema if column != DL]
            target = data_dir / "rows.parquet" / info.base_name
            arrow = pa.schema([pa.field(DL, empty) if column == DL else source.schema_arrow.field(column)
                               for column in schema])
            with target.fs.open_output_stream(target.path) as out, \
                    pq.ParquetWriter(out, arrow, compression="zstd") as written:
                for batch in source.iter_batches(columns=columns):
                    lists = pa.ListArray.from_arrays(pa.array([0] * (batch.num_rows + 1), pa.int32()),
                                                     pa.array([], pa.int64()))
                    table = pa.Table.from_batches([batch]).append_column(pa.field(DL, empty), lists)
                    written.write_table(table.select(list(schema)).cast(arrow))
    except BaseException:
        data_dir.remove()
        raise
    relative = data_dir.relative_to(store.catalog.directory)
    result = dataclasses.replace(saved, stamp=stamp, data=f"{relative}/rows.parquet", index=None, schema=schema,
                                 shared=None, shared_sets=0, named_sets=0, shared_ids=0, references={},
                                 disjoint=True, format=FORMAT, pruned_at=time.time())
    store.publish(result, data_dir, {})
    return result
