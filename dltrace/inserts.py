"""``INSERT INTO`` and ``INSERT OVERWRITE`` in a pipeline script: a saved step added to, as a
DataFrame job's appends add to a table (docs/pipelines.md, "Adding to a step").

``INSERT INTO name query`` saves the query's rows, in the step's columns and types (matched by
position as Spark matches them, by name with ``BY NAME``, or to the columns listed after the
name, the others NULL), as one more *run* of ``name``: ``name_run1``, ``name_run2``, ... each a
saved result holding the lineage computed in its run.  The name is then a view of the catalog
over the union of its runs, so a later statement, script or job reading ``name`` composes
down to the base rows, and impact, explain, ``dltrace results`` and retention know each row's
run (``dataframe/runs.py``): the runs are kept as a job's writes are (``written/<name>.json``,
format ``result``, no path and no files).  A step saved whole becomes run 1 at its first insert.
``INSERT OVERWRITE name query`` (and ``CREATE OR REPLACE TABLE name``) replaces every run: the
name is one saved result again.
"""

from __future__ import annotations

from dataclasses import dataclass

from dltrace.dataframe.job_files import Run, Written, WrittenStore, drop_runs, record_write, run_name
from dltrace.errors import BadInput, UnsupportedLineage
from dltrace.plain import names_read
from dltrace.result_format import DL, SavedResult
from dltrace.table_data import backquoted
from dltrace.views import ViewStore

FORMAT = "result"  # a record of runs of a saved step: no files, the runs are the rows


@dataclass(frozen=True)
class Insert:
    """A checked ``INSERT`` of a script (``pipeline.check_statement``)."""

    name: str
    query: str
    overwrite: bool
    columns: tuple[str, ...] = ()  # the columns listed after the name: the others are NULL
    by_name: bool = False


def runs_of(catalog, name: str, records: dict[str, Written] | None = None) -> Written | None:
    """The record of the runs of step ``name`` when a script inserted into it (``records``:
    the catalog's records of writes, when read already)."""
    record = (WrittenStore(catalog).all() if records is None else records).get(name.lower())
    return record if record is not None and record.format == FORMAT else None


def exists(session, name: str) -> bool:
    """Whether step ``name`` is there: saved whole, or as runs."""
    return session.store.exists(name) or runs_of(session.catalog, name) is not None


def insert(session, statement: Insert, semantics: str, representation: str) -> tuple[SavedResult, int | None]:
    """``statement`` carried out: the saved run and its number (None: an overwrite, saved whole)."""
    name = statement.name.lower()
    records = WrittenStore(session.catalog).all()  # read once: the jobs' writes and this step's runs
    check_not_a_jobs_output(name, records)
    record = runs_of(session.catalog, name, records)
    check_target(session, name)
    if record is None and not session.store.exists(name):
        raise BadInput(f"there is no step {name} to insert into (as Spark refuses an INSERT into a missing "
                       f"table): CREATE TABLE {name} AS query first")
    runs = record.run_list() if record else []
    newest = runs[-1].result if runs else name
    query = conformed(session, statement, session.store.get(newest).query_columns)
    if statement.overwrite:
        if names_read(session.expand(statement.query)) & {name, *(run.result for run in runs)}:
            raise BadInput(f"INSERT OVERWRITE {name} reads {name} (as Spark refuses to overwrite a table that is "
                           f"also being read from): save the query as a step of its own first")
        replace_runs(session, name)
        return session.create_table(name, query, semantics, representation, replace=True), None
    runs = runs or [as_first_run(session, name, semantics, representation)]
    number = max(run.number for run in runs) + 1
    saved = session.create_table(run_name(session, name, number), query, semantics, representation)
    keep_runs(session, name, [*runs, Run(saved.name, saved.created_at, number)])
    return saved, number


def check_target(session, name: str) -> None:
    """Refuse, before a script's first statement runs, an INSERT into a registered table."""
    if name.lower() in session.catalog.tables:
        raise BadInput(f"INSERT INTO {name}: {name} is a registered table, which dltrace does not change (register "
                       f"its source again when it grows): INSERT adds a run to a step, CREATE TABLE step AS query")


def check_not_a_jobs_output(name: str, records: dict[str, Written]) -> None:
    """A step whose rows a job wrote somewhere is added to by the job: the files would differ."""
    for record in records.values():
        if record.format != FORMAT and name in {record.name, *(run.result for run in record.run_list())}:
            raise UnsupportedLineage(f"INSERT INTO {name}: its rows are what a job wrote to {record.path}: add to "
                                     f"it from the job (mode 'append', insertInto), so that the files hold them too")


def conformed(session, statement: Insert, target: dict[str, str]) -> str:
    """The query's rows in the step's columns, order and types, matched as Spark matches
    an INSERT's (by position, by name, or to the columns listed); refused as Spark refuses
    a mismatch, before any work."""
    produced = [column for column in session.sql(statement.query).columns if column != DL]
    names = list(target)
    lowered = {column.lower(): column for column in names}
    if statement.columns:
        unknown = [column for column in statement.columns if column.lower() not in lowered]
        if unknown:
            raise BadInput(f"INSERT INTO {statement.name}: {unknown[0]} is not a column of {statement.name} "
                           f"(its columns: {', '.join(names)})")
        listed = [lowered[column.lower()] for column in statement.columns]
    else:
        listed = names
    if statement.by_name:
        given = {column.lower(): column for column in produced}
        missing = [column for column in listed if column.lower() not in given]
        if missing or len(given) != len(produced) or len(produced) != len(listed):
            raise BadInput(f"INSERT INTO {statement.name} BY NAME: the query's columns {', '.join(produced)} are "
                           f"not {', '.join(listed)} (as Spark refuses it)")
        sources = {column: given[column.lower()] for column in listed}
    else:
        if len(produced) != len(listed):
            raise BadInput(f"INSERT INTO {statement.name}: {statement.name} takes {len(listed)} columns, the query "
                           f"gives {len(produced)} (as Spark refuses it)")
        if len({column.lower() for column in produced}) != len(produced):
            raise BadInput(f"INSERT INTO {statement.name}: the query gives two columns of one name "
                           f"({', '.join(produced)}): name them apart")
        sources = dict(zip(listed, produced))
    selected = []
    for column in names:
        value = f"_inserted.{backquoted(sources[column])}" if column in sources else "NULL"
        selected.append(f"CAST({value} AS {target[column]}) AS {backquoted(column)}")
    return f"SELECT {', '.join(selected)} FROM ({statement.query}) AS _inserted"


def as_first_run(session, name: str, semantics: str, representation: str) -> Run:
    """Step ``name`` saved whole kept as run 1 (``name_run1``, its rows' lineage the same,
    named through the step's save), and the result ``name`` dropped: the name is the runs'
    view from now on."""
    step = session.store.get(name)
    columns = ", ".join(map(backquoted, step.query_columns))
    first = session.create_table(run_name(session, name, 1), f"SELECT {columns} FROM {name}", semantics,
                                 representation)
    session.drop_result(name)
    return Run(first.name, step.created_at, 1)


def keep_runs(session, name: str, runs: list[Run]) -> None:
    """The record of step ``name``'s runs and the view of its name over them."""
    record_write(session, name, "", FORMAT, "append", [], {}, runs=runs)
    union = " UNION ALL ".join(f"SELECT * FROM {run.result}" for run in runs)
    session.create_view(name, union, replace=True)


def replace_runs(session, name: str) -> None:
    """Before step ``name`` is saved whole again: its runs, their record and their view go."""
    record = runs_of(session.catalog, name)
    if record is None:
        return
    if name in ViewStore(session.catalog).all():
        ViewStore(session.catalog).drop(name)
    WrittenStore(session.catalog).file(name).unlink()
    drop_runs(session, record.run_list())
