"""Augmented lineage (seed 000): the reasons of row-wise Python UDFs beside the source rows.

A *reason-capable* UDF is a vectorized Python function registered with dltrace together with
its *reasoning mode*.  Queries call it like any Spark UDF, and lineage passes through it as
through any row-wise expression; normal runs call only the normal mode (the same pandas UDF a
plain registration makes), so they pay nothing for reasons.

Reasons are derived lazily, for one output row of a saved result at a time: the base rows of
its DL are the only rows the UDF's query block is evaluated on again (each base table read
through a view restricted to the row's ids: the paper's semi-join push-down), which gives the
invocations that fed the row (its *intermediate lineage* at the UDF), and the reasoning mode
runs on exactly those, in Python.  ``Reasons.invocations`` counts them.

The contract of the two modes (``f`` and ``reasons`` below), both vectorized::

    f(*columns: pandas.Series) -> pandas.Series                      # one value per row
    reasons(*columns: pandas.Series) -> pandas.DataFrame             # columns "value", "reason"

``reason`` is a dict (attribute -> weight) or a short text per row.  A UDF given as
``"module:attribute"`` (both modes) is kept in the catalog (``udfs/<name>.json``), so every
later command (``dltrace sql``, ``explain --reasons``) has it; a Python callable lasts as
long as its ``LineageSession``.
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field

from sqlglot import exp

from dltrace.catalog import ID_COLUMN, NAME_PATTERN
from dltrace.errors import BadInput, DltraceError
from dltrace.ids import ROW_BITS
from dltrace.json_store import JsonStore
from dltrace.rewriter.dialect import SPARK
from dltrace.storage import Location

DIRECTORY = "udfs"
VALUE, REASON = "value", "reason"
RESTRICTED = "__dl_reason_rows_"  # the view of a base table restricted to one row's lineage


@dataclass
class UdfSpec:
    """A reason-capable UDF as kept in ``udfs/<name>.json``: where its two modes live."""

    name: str
    function: str  # "module:attribute"
    reasons: str | None
    returns: str  # its Spark SQL type


@dataclass
class ReasonUdf:
    """A registered reason-capable UDF."""

    name: str
    function: Callable
    reasons: Callable | None
    returns: str
    spec: UdfSpec | None = None  # set when kept in the catalog


@dataclass
class Reasons:
    """The reasoning lineage of one UDF call for one output row: its ``invocations`` (the
    rows of the row's lineage it ran on), as a pandas DataFrame of the base-row ids of the
    query block's tables, the call's inputs (``inputs``: their SQL), ``value`` and ``reason``."""

    udf: str
    call: str
    inputs: list[str]
    rows: object  # pandas.DataFrame
    invocations: int = field(default=0)


def load_callable(spec: str, what: str) -> Callable:
    """``module:attribute`` imported, as one line on failure."""
    module, _, attribute = spec.partition(":")
    if not module or not attribute:
        raise BadInput(f"{what} must be given as module:attribute, not {spec!r}")
    try:
        loaded = importlib.import_module(module)
        found = getattr(loaded, attribute)
    except (ImportError, AttributeError) as error:
        raise BadInput(f"cannot load {what} {spec}: {error}") from None
    if not module.startswith("dltrace."):
        from pyspark import cloudpickle

        # shipped to Spark's Python workers by value: they need not import the user's module
        cloudpickle.register_pickle_by_value(loaded)
    if not callable(found):
        raise BadInput(f"{what} {spec} is not a function")
    return found


class UdfStore(JsonStore[UdfSpec]):
    """The reason-capable UDFs kept in one catalog directory."""

    record = UdfSpec
    kind = "UDF"
    remedy = "; remove it and register the UDF again"

    def __init__(self, directory: Location) -> None:
        super().__init__(directory / DIRECTORY)


def make_udf(name: str, function: Callable | str, reasons: Callable | str | None, returns: str) -> ReasonUdf:
    """A ``ReasonUdf`` from callables or ``module:attribute`` texts (then with its spec)."""
    if not NAME_PATTERN.match(name):
        raise BadInput(f"'{name}' is not a valid UDF name: use letters, digits and _")
    spec = None
    if isinstance(function, str):
        if reasons is not None and not isinstance(reasons, str):
            raise BadInput("give both modes as module:attribute texts (kept in the catalog) or both as functions")
        spec = UdfSpec(name.lower(), function, reasons, returns)
        function = load_callable(function, f"UDF {name}")
        reasons = load_callable(reasons, f"the reasoning mode of UDF {name}") if reasons else None
    elif not callable(function) or (reasons is not None and not callable(reasons)):
        raise BadInput(f"UDF {name}: give functions (or module:attribute texts)")
    return ReasonUdf(name.lower(), function, reasons, returns, spec)


def register_in_spark(spark, udf: ReasonUdf) -> None:
    """The normal mode as a vectorized (pandas) UDF, exactly what a plain registration makes."""
    from pyspark.sql.functions import PandasUDFType, pandas_udf

    with warnings.catch_warnings():  # any arity: the UDF type is given, not read from type hints
        warnings.simplefilter("ignore", UserWarning)
        spark.udf.register(udf.name, pandas_udf(udf.function, udf.returns, PandasUDFType.SCALAR))


def udf_calls(expression: exp.Expression, udfs: dict[str, ReasonUdf]) -> list[exp.Anonymous]:
    """The calls of registered UDFs in a (qualified) query, each once per query block (``GROUP
    BY 1`` repeats the SELECT's call in GROUP BY: the same invocations)."""
    calls: dict[tuple[int, str], exp.Anonymous] = {}
    for call in expression.find_all(exp.Anonymous):
        if call.name.lower() in udfs:
            calls.setdefault((id(call.find_ancestor(exp.Select)), call.sql(dialect=SPARK).lower()), call)
    return list(calls.values())


class SessionUdfs:
    """The reason-capable UDFs of one session: the catalog's, and those registered in it."""

    def __init__(self, directory: Location) -> None:
        self.store = UdfStore(directory)
        self._udfs: dict[str, ReasonUdf] = {}  # registered in the session's Spark

    def register(self, spark, name: str, function, reasons, returns: str) -> None:
        """Register ``function`` in Spark as ``name``; one given as texts is kept in the catalog."""
        udf = make_udf(name, function, reasons, returns)
        register_in_spark(spark, udf)
        if udf.spec is not None:
            self.store.write(udf.spec)
        self._udfs[udf.name] = udf

    def register_all(self, spark) -> None:
        """Register every UDF of this session in ``spark`` (another session of the same JVM)."""
        for udf in self._udfs.values():
            register_in_spark(spark, udf)

    def all(self, spark) -> dict[str, ReasonUdf]:
        """Every UDF, the catalog's registered in Spark first (again when changed since)."""
        for name, spec in self.store.all().items():
            if name not in self._udfs or self._udfs[name].spec != spec:
                udf = make_udf(name, spec.function, spec.reasons, spec.returns)
                register_in_spark(spark, udf)
                self._udfs[name] = udf
        return dict(self._udfs)


def explain_reasons(session, result: str, row: int, udfs: dict[str, ReasonUdf]) -> list[Reasons]:
    """The reasoning lineage of row ``row`` of saved ``result``: per call of a reason-capable
    UDF in its query (saved results it read inlined), the invocations on the rows of the
    row's lineage, re-run in reasoning mode."""
    import pyarrow as pa
    from pyspark.sql import functions as F

    from dltrace.rewriter import parse
    from dltrace.rewriter.qualify import qualify_against_catalog

    saved = session.store.get(result)
    query = qualify_against_catalog(parse(session.expand(saved.query, inline_results=True)), session.catalog.schemas())
    calls = udf_calls(query, udfs)
    if not calls:
        known = ", ".join(sorted(udfs)) or "none registered"
        raise BadInput(f"the query of result {saved.name} calls no reason-capable UDF ({known})")
    for call in calls:
        if udfs[call.name.lower()].reasons is None:
            raise BadInput(f"UDF {call.name.lower()} has no reasoning mode: register it with reasons=")
    ids = session.store.row_ids(saved, row)
    tables = {t.name.lower() for t in query.find_all(exp.Table)} & set(session.catalog.tables)
    for table in tables:  # each base table restricted to the row's lineage (semi-join push-down)
        code = session.catalog.entry(table).code
        mine = ids[(ids >> ROW_BITS) == code]
        wanted = session.spark.createDataFrame(pa.table({ID_COLUMN: pa.array(mine, pa.int64())}))
        session.run(f"SELECT * FROM {table}").join(F.broadcast(wanted), ID_COLUMN, "left_semi") \
            .createOrReplaceTempView(RESTRICTED + table)
    return [_reasons_of_call(session, query, call, udfs[call.name.lower()], tables) for call in calls]


def _reasons_of_call(session, query: exp.Expression, call: exp.Anonymous, udf: ReasonUdf, tables: set[str]) -> Reasons:
    """The call's invocations on the restricted tables: its query block (FROM, joins, WHERE)
    with its inputs and its base tables' ids as the SELECT list, then the reasoning mode."""
    block = call.find_ancestor(exp.Select)
    if block is None or any(arg.find(exp.AggFunc) for arg in call.expressions):
        raise BadInput(f"reasons are derived for row-wise UDF calls in a SELECT, not {call.sql(dialect='spark')}")
    invocation = block.copy()
    for key in ("group", "having", "order", "limit", "offset", "distinct", "qualify", "windows"):
        invocation.set(key, None)
    sources = [
        t for t in invocation.find_all(exp.Table)
        if t.name.lower() in tables and t.find_ancestor(exp.Select) is invocation
    ]
    inputs = [arg.copy() for arg in call.expressions]
    invocation.set(
        "expressions",
        [exp.alias_(arg, f"__in{i}") for i, arg in enumerate(inputs)]
        + [
            exp.alias_(exp.column(ID_COLUMN, table=t.alias_or_name), f"{t.alias_or_name}.{ID_COLUMN}", quoted=True)
            for t in sources
        ],
    )
    if query.args.get("with_") is not None and invocation.args.get("with_") is None:
        invocation.set("with_", query.args["with_"].copy())  # the CTEs the block may read
    for table in invocation.find_all(exp.Table):
        if table.name.lower() in tables:
            table.set("this", exp.to_identifier(RESTRICTED + table.name.lower()))
    frame = session.run(invocation.sql(dialect=SPARK)).toPandas()
    frame = frame.sort_values([c for c in frame.columns if not c.startswith("__in")]).reset_index(drop=True)
    columns = [frame[f"__in{i}"] for i in range(len(inputs))]
    try:
        reasoned = udf.reasons(*columns)
    except DltraceError:
        raise
    except Exception as error:  # noqa: BLE001 - a user's model failing is one line
        raise DltraceError(f"the reasoning mode of UDF {udf.name} failed: {type(error).__name__}: {error}") from None
    _check_shape(udf, reasoned, len(frame))
    names = [arg.sql(dialect=SPARK) for arg in inputs]
    ids = frame[[c for c in frame.columns if not c.startswith("__in")]]
    rows = ids.assign(
        **{name: frame[f"__in{i}"] for i, name in enumerate(names)},
        **{VALUE: list(reasoned[VALUE]), REASON: list(reasoned[REASON])},
    )
    return Reasons(udf.name, f"{udf.name}({', '.join(names)})", names, rows, invocations=len(frame))


def _check_shape(udf: ReasonUdf, reasoned, rows: int) -> None:
    import pandas as pd

    if not isinstance(reasoned, pd.DataFrame) or not {VALUE, REASON} <= set(reasoned.columns) or len(reasoned) != rows:
        got = (
            f"a DataFrame of {len(reasoned)} rows and columns {list(reasoned.columns)}"
            if isinstance(reasoned, pd.DataFrame)
            else type(reasoned).__name__
        )
        raise BadInput(
            f"the reasoning mode of UDF {udf.name} must return a pandas DataFrame with columns "
            f"{VALUE!r} and {REASON!r}, one row per input row ({rows}); it returned {got}"
        )
