"""OpenLineage events of saves and scripts (the optional extra ``dltrace[openlineage]``).

Every save (``ls.save``, ``--save``, a script's ``CREATE TABLE ... AS``, a DataFrame job's
``saveAsTable``) is a run of the job named for its result; a script run from ``dltrace run``
or ``run_script`` is a run of its own, the parent of its steps' runs.  Each run emits START,
then COMPLETE or FAIL (with the one-line error).  Inputs are the registered tables the query
reads, named as OpenLineage's Spark integration names their sources (a file by ``file`` and
its path, an HDFS or object-store path by ``scheme://authority`` and its path), and the saved
results it reads; the output is the saved result (the catalog's ``results/<name>``, the save's
stamp its version) with ``schema``, ``outputStatistics``, ``columnLineage`` from the query and
``dltrace_rowLineage``: where its row-level lineage is and how many ids it holds, never the
ids themselves.

Configured as OpenLineage's client is (``openlineage.yml``, ``OPENLINEAGE_CONFIG``,
``OPENLINEAGE_URL``, ``OPENLINEAGE__TRANSPORT__...``); off when none of them is set, when
``OPENLINEAGE_DISABLED=true`` or when the client is not installed.  An event that cannot be
sent is a warning on stderr, never a failed save.
"""

from __future__ import annotations

import contextvars
import hashlib
import logging
import os
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import lru_cache
from urllib.parse import urlparse

from sqlglot import exp
from sqlglot.lineage import Node, lineage
from sqlglot.optimizer.qualify import qualify
from sqlglot.optimizer.scope import traverse_scope

PRODUCER = "https://pypi.org/project/dltrace/"
ROW_LINEAGE_FACET = "dltrace_rowLineage"
# the facet's JSON schema ships in the package: dltrace/schemas/RowLineageDatasetFacet.json
ROW_LINEAGE_SCHEMA = ("https://github.com/dltrace/dltrace/blob/main/dltrace/schemas/RowLineageDatasetFacet.json"
                      "#/$defs/RowLineageDatasetFacet")
DEFAULT_NAMESPACE = "dltrace"
# the clauses whose columns touch every output row (columnLineage's dataset-wide INDIRECT
# fields), by the subtype OpenLineage names them with
INDIRECT_CLAUSES = {"where": "FILTER", "having": "FILTER", "qualify": "FILTER", "group": "GROUP_BY",
                    "order": "SORT"}

_parent: contextvars.ContextVar[tuple[str, str] | None] = contextvars.ContextVar("dltrace_openlineage_parent",
                                                                                  default=None)


_unreachable: list[str] = []  # the first send that failed: later events are not tried (each would wait)


@lru_cache(maxsize=1)
def client():
    """The OpenLineage client when it is installed and configured; None otherwise."""
    try:
        from openlineage.client import OpenLineageClient
    except ImportError:
        return None
    if os.getenv("OPENLINEAGE_DISABLED", "").strip().lower() == "true":
        return None
    _unreachable.clear()  # a client configured anew is tried anew
    logger = logging.getLogger("openlineage.client.client")
    level = logger.level
    logger.setLevel(logging.ERROR)  # unconfigured, it warns that it falls back to the console
    try:
        configured = OpenLineageClient()
        transport = (configured.config.transport or {}).get("type")
    except Exception as error:  # noqa: BLE001 - a bad configuration: no events, said once
        print(f"dltrace: warning: OpenLineage is configured wrongly, no events are sent: {first_line(error)}",
              file=sys.stderr)
        return None
    finally:
        logger.setLevel(level)
    return configured if transport or os.environ.get("OPENLINEAGE_URL") else None


def namespace() -> str:
    return os.environ.get("OPENLINEAGE_NAMESPACE", DEFAULT_NAMESPACE)


def dataset_id(uri: str) -> tuple[str, str]:
    """(namespace, name) of a file or directory, as OpenLineage's Spark integration names it.

    >>> dataset_id("/data/orders.parquet")
    ('file', '/data/orders.parquet')
    >>> dataset_id("hdfs://nn:8020/warehouse/orders/")
    ('hdfs://nn:8020', '/warehouse/orders')
    >>> dataset_id("s3a://bucket/lake/orders")
    ('s3://bucket', 'lake/orders')
    """
    parsed = urlparse(str(uri))
    if parsed.scheme in ("", "file"):
        return "file", os.path.abspath(parsed.path).rstrip("/") or "/"
    scheme = "s3" if parsed.scheme in ("s3a", "s3n") else parsed.scheme
    path = parsed.path.rstrip("/")
    return f"{scheme}://{parsed.netloc}", path.lstrip("/") if scheme in ("s3", "gs") else path


@dataclass
class Datasets:
    """The datasets a query reads, by the name it reads them under."""

    ids: dict[str, tuple[str, str]] = field(default_factory=dict)
    inputs: list = field(default_factory=list)


def input_datasets(ls, query: str) -> Datasets:
    """The registered tables and saved results ``query`` (views inlined) reads."""
    from openlineage.client.event_v2 import InputDataset
    from openlineage.client.facet_v2 import symlinks_dataset

    from dltrace.plain import names_read

    read = names_read(query)
    found = Datasets()
    for name in sorted(read & set(ls.catalog.tables)):
        entry = ls.catalog.tables[name]
        ids = found.ids[name] = dataset_id(entry.source)
        facets = {"schema": schema_facet(entry.schema)}
        if entry.spark_table:
            facets["symlinks"] = symlinks_dataset.SymlinksDatasetFacet(identifiers=[
                symlinks_dataset.Identifier(namespace=ids[0], name=entry.spark_table, type="TABLE")])
        found.inputs.append(InputDataset(namespace=ids[0], name=ids[1], facets=facets))
    for name, saved in sorted(ls.results_read(query).items()):
        ids = found.ids[name] = result_id(ls, name)
        found.inputs.append(InputDataset(namespace=ids[0], name=ids[1],
                                         facets={"schema": schema_facet(saved.query_columns),
                                                 "version": version_facet(saved.stamp)}))
    return found


def result_id(ls, name: str) -> tuple[str, str]:
    """A saved result's dataset: its directory in the catalog, the same for every save of it."""
    return dataset_id(str(ls.store.directory / name))


def schema_facet(columns: dict[str, str]):
    from openlineage.client.facet_v2 import schema_dataset

    return schema_dataset.SchemaDatasetFacet(fields=[
        schema_dataset.SchemaDatasetFacetFields(name=c, type=t, ordinal_position=i)
        for i, (c, t) in enumerate(columns.items(), 1)])


def version_facet(stamp: str):
    from openlineage.client.facet_v2 import dataset_version_dataset

    return dataset_version_dataset.DatasetVersionDatasetFacet(datasetVersion=stamp)


def column_lineage(query: str, schemas: dict[str, dict[str, str]], ids: dict[str, tuple[str, str]],
                   columns: list[str]):
    """``columnLineage``: for each output column the input columns it derives from (DIRECT:
    IDENTITY, TRANSFORMATION or AGGREGATION), and the input columns of filters, joins,
    groups and sorts, which touch every row (INDIRECT).  What sqlglot cannot trace is left out."""
    from openlineage.client.facet_v2 import column_lineage_dataset as cl

    spelled = {(t, c.lower()): c for t, table in schemas.items() for c in table}  # sqlglot lowers names

    def field_of(table: str, column: str, kind: str, subtype: str):
        return cl.InputField(namespace=ids[table][0], name=ids[table][1], field=spelled.get((table, column), column),
                             transformations=[cl.Transformation(type=kind, subtype=subtype)])

    try:
        nodes = lineage(None, query, schema=schemas, dialect="spark")  # every output column in one walk
    except Exception:  # noqa: BLE001 - sqlglot's lineage does not follow every construct: left out
        nodes = {}
    by_name = {name.lower(): node for name, node in nodes.items()}
    fields = {}
    for column in columns:
        node = by_name.get(column.lower())
        inputs = {(t, c): subtype for t, c, subtype in direct_inputs(node) if t in ids} if node else {}
        if inputs:
            fields[column] = cl.Fields(inputFields=[field_of(t, c, "DIRECT", subtype)
                                                    for (t, c), subtype in sorted(inputs.items())])
    dataset = [field_of(t, c, "INDIRECT", s) for t, c, s in sorted(indirect_inputs(query, schemas)) if t in ids]
    return cl.ColumnLineageDatasetFacet(fields=fields, dataset=dataset)


def direct_inputs(node: Node, path_kind: str = "IDENTITY") -> Iterator[tuple[str, str, str]]:
    """(table, column, subtype) of the base columns ``node`` (sqlglot's lineage) reaches."""
    expression = node.expression.unalias() if isinstance(node.expression, exp.Alias) else node.expression
    if isinstance(expression, (exp.Table, exp.Query)):  # a source, or a set operation's branches
        pass
    elif expression.find(exp.AggFunc):
        path_kind = "AGGREGATION"
    elif not isinstance(expression, exp.Column) and path_kind == "IDENTITY":
        path_kind = "TRANSFORMATION"
    if not node.downstream and isinstance(node.source, exp.Table):
        yield node.source.name.lower(), node.name.split(".")[-1], path_kind
    for child in node.downstream:
        yield from direct_inputs(child, path_kind)


def indirect_inputs(query: str, schemas: dict[str, dict[str, str]]) -> set[tuple[str, str, str]]:
    """(table, column, subtype) of the base-table columns in filters, joins, groups, sorts and
    window specifications, in every SELECT of ``query``."""
    try:
        expression = qualify(exp.maybe_parse(query, dialect="spark"), schema=schemas, dialect="spark")
        scopes = traverse_scope(expression)
    except Exception:  # noqa: BLE001 - a query sqlglot cannot qualify: no dataset-wide fields
        return set()
    found = set()
    for scope in scopes:
        select = scope.expression
        clauses = [(select.args.get(k), subtype) for k, subtype in INDIRECT_CLAUSES.items()]
        clauses += [(join.args.get("on"), "JOIN") for join in select.args.get("joins") or []]
        clauses += [(part, "WINDOW") for window in select.find_all(exp.Window)
                    for part in (*(window.args.get("partition_by") or []), window.args.get("order"))]
        for clause, subtype in clauses:
            for column in clause.find_all(exp.Column) if clause is not None else ():
                source = scope.sources.get(column.table)
                if isinstance(source, exp.Table):
                    found.add((source.name.lower(), column.name, subtype))
    return found


def row_lineage_facet(ls, saved):
    """Where the result's row-level lineage is and how large it is, never the ids."""
    from openlineage.client.generated.base import DatasetFacet

    facet = DatasetFacet().with_additional_properties(
        catalog=str(ls.catalog.directory), result=saved.name, stamp=saved.stamp, formatVersion=saved.format,
        rows=saved.rows, semantics=saved.semantics, representation=saved.representation,
        lineageTables=sorted(saved.lineage_tables), sharedSets=saved.shared_sets, sharedIds=saved.shared_ids,
        namesRowsOf=sorted(saved.references))
    facet._schemaURL = ROW_LINEAGE_SCHEMA  # a custom facet names its own schema
    return facet


def output_dataset(ls, saved, query: str, read: Datasets):
    from openlineage.client.event_v2 import OutputDataset
    from openlineage.client.facet_v2 import output_statistics_output_dataset as statistics

    ns, name = result_id(ls, saved.name)
    size = safe(lambda: (ls.catalog.directory / saved.data).parent.size(), None)
    facets = {"schema": schema_facet(saved.query_columns), "version": version_facet(saved.stamp),
              "columnLineage": column_lineage(query, ls.schemas(), read.ids, list(saved.query_columns)),
              ROW_LINEAGE_FACET: row_lineage_facet(ls, saved)}
    return OutputDataset(namespace=ns, name=name, facets=facets, outputFacets={
        "outputStatistics": statistics.OutputStatisticsOutputDatasetFacet(rowCount=saved.rows, size=size)})


def emit(make_event) -> None:
    """Send the event ``make_event()`` builds; a failure is a warning, and the last one tried."""
    if _unreachable:
        return
    try:
        event = make_event()
        for facet in facets_of(event):
            facet._producer = PRODUCER
        client().emit(event)
    except Exception as error:  # noqa: BLE001 - lineage events never fail the work they describe
        _unreachable.append(first_line(error))
        print(f"dltrace: warning: an OpenLineage event was not sent, none more will be: {first_line(error)}",
              file=sys.stderr)


def facets_of(event) -> list:
    """Every facet of ``event``: its run's, its job's and its datasets'."""
    facets = [*(event.run.facets or {}).values(), *(event.job.facets or {}).values()]
    for dataset in [*(event.inputs or []), *(event.outputs or [])]:
        facets += [*(dataset.facets or {}).values(), *(getattr(dataset, "outputFacets", None) or {}).values()]
    return facets


def first_line(error: BaseException) -> str:
    return (str(error).strip().splitlines() or [type(error).__name__])[0]


def run_event(kind: str, run_id: str, job: str, inputs=(), outputs=(), error: BaseException | None = None,
              sql: str | None = None):
    from openlineage.client.event_v2 import Job, Run, RunEvent, RunState
    from openlineage.client.facet_v2 import error_message_run, parent_run, sql_job

    run_facets = {}
    if (parent := _parent.get()) is not None:
        run_facets["parent"] = parent_run.ParentRunFacet(
            run=parent_run.Run(runId=parent[0]), job=parent_run.Job(namespace=namespace(), name=parent[1]))
    if error is not None:
        run_facets["errorMessage"] = error_message_run.ErrorMessageRunFacet(
            message=first_line(error), programmingLanguage="python")
    job_facets = {"sql": sql_job.SQLJobFacet(query=sql)} if sql else {}
    return RunEvent(eventType=getattr(RunState, kind), eventTime=datetime.now(timezone.utc).isoformat(),
                    run=Run(runId=run_id, facets=run_facets),
                    job=Job(namespace=namespace(), name=job, facets=job_facets),
                    inputs=list(inputs), outputs=list(outputs), producer=PRODUCER)


@contextmanager
def save_run(ls, name: str, query: str) -> Iterator[list]:
    """A save's run: START now, then COMPLETE with the saved result (the ``with`` block
    appends it to the list it is given) or FAIL with the error."""
    outcome: list = []
    if client() is None:
        yield outcome
        return
    run_id, job = str(uuid.uuid4()), f"{job_prefix()}{name.lower()}"
    read = safe(lambda: input_datasets(ls, query), Datasets())
    emit(lambda: run_event("START", run_id, job, read.inputs, sql=query))
    try:
        yield outcome
    except BaseException as error:
        emit(lambda failed=error: run_event("FAIL", run_id, job, read.inputs, error=failed, sql=query))
        raise
    outputs = [safe(lambda saved=saved: output_dataset(ls, saved, query, read), None) for saved in outcome]
    emit(lambda: run_event("COMPLETE", run_id, job, read.inputs, [o for o in outputs if o is not None], sql=query))


@contextmanager
def script_run(label: str | None, text: str = "") -> Iterator[None]:
    """A script's run (``label``: its file name; a hash of ``text`` without one): the parent
    of the runs of the steps it saves."""
    if client() is None or _parent.get() is not None:
        yield
        return
    job = label or f"script-{hashlib.sha1(text.encode()).hexdigest()[:10]}"
    run_id = str(uuid.uuid4())
    emit(lambda: run_event("START", run_id, job))
    token = _parent.set((run_id, job))
    try:
        yield
    except BaseException as error:
        emit(lambda failed=error: run_event("FAIL", run_id, job, error=failed))
        raise
    finally:
        _parent.reset(token)
    emit(lambda: run_event("COMPLETE", run_id, job))


def job_prefix() -> str:
    """Steps of a script are jobs ``<script>.<result>``; other saves are named for their result."""
    parent = _parent.get()
    return f"{parent[1]}." if parent else ""


def safe(make, default):
    """``make()``, or ``default`` with a warning: describing the work never fails it."""
    try:
        return make()
    except Exception as error:  # noqa: BLE001 - a DltraceError or any other
        print(f"dltrace: warning: OpenLineage facets left out: {first_line(error)}", file=sys.stderr)
        return default
