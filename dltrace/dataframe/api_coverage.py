"""What dltrace does with each construct of PySpark's DataFrame API, stated in one place.

The translation refuses a plan's relation or expression by its kind (``plan.py``,
``expressions.py``) and a job's run refuses some sinks (``jobs.py``): those refusals read
their reasons from here, and the table of docs/dataframe-api.md is generated from here and
from PySpark itself (every ``pyspark.sql.functions`` function, ``Column``, ``DataFrame``,
``GroupedData``, ``na`` and ``stat`` method, reader and writer method and keyword), so a
construct PySpark adds shows up in the table, and a test fails until the table lists it.
A function is traced unless named here: functions reach the plan as calls by Spark's name,
translated generically.  Methods are classified one by one (``api_table.py`` renders them).

``python -m dltrace.dataframe.api_table --write docs/dataframe-api.md`` regenerates the table.
"""

from __future__ import annotations

from dltrace.errors import UnsupportedLineage

TRACED, EAGER, REFUSED, SPARK_REFUSES = "traced", "eager", "refused", "Spark refuses"
STATUS_TEXT = {
    TRACED: "traced",
    EAGER: "run by Spark itself, as under `spark-submit` (an action or a property: no plan of its own to trace)",
    REFUSED: "refused by name before any work (`UnsupportedLineage`, exit status 2 under `dltrace run`)",
    SPARK_REFUSES: "refused by PySpark or Spark Connect itself, as under `spark-submit`",
}

# relations without exact lineage, and the DataFrame API call that makes each (plan.py)
CACHED_LOCAL = "createDataFrame of data Spark caches on the server (register it as a table)"
REFUSED_RELATIONS = {
    "cached_local_relation": CACHED_LOCAL, "chunked_cached_local_relation": CACHED_LOCAL,
    "sample": "sample / randomSplit",
    "map_partitions": "mapInPandas / mapInArrow", "group_map": "applyInPandas / applyInArrow",
    "co_group_map": "cogroup", "apply_in_pandas_with_state": "applyInPandasWithState",
    "tail": "tail", "to_schema": "to(schema)", "collect_metrics": "observe", "with_watermark": "withWatermark",
    "parse": "from_json/from_csv of a DataFrame", "as_of_join": "asOfJoin", "lateral_join": "lateralJoin",
    "transpose": "transpose", "unresolved_table_valued_function": "a table-valued function",
    "replace": "na.replace", "sample_by": "sampleBy", "summary": "summary", "describe": "describe",
    "crosstab": "crosstab", "freq_items": "freqItems", "approx_quantile": "approxQuantile", "cov": "cov",
    "corr": "corr", "zip": "zip", "nearest_by_join": "a nearest join", "catalog": "a catalog listing",
    "cached_remote_relation": "a cached remote DataFrame (checkpoint / localCheckpoint)",
    "show_string": "show", "html_string": "show",
    "common_inline_user_defined_table_function": "a Python UDTF (F.udtf)",
    "common_inline_user_defined_data_source": "a Python data source", "relation_changes": "spark.read.changes",
}
# expressions without a translation, and the API call that makes each (expressions.py)
REFUSED_EXPRESSIONS = {
    "unresolved_regex": "DataFrame.colRegex", "update_fields": "Column.withField / Column.dropFields",
    "named_argument_expression": "a named argument (F.call_function with keywords)",
    "merge_action": "DataFrame.mergeInto", "typed_aggregate_expression": "a typed aggregate",
    "direct_shuffle_partition_id": "repartitionById", "extension": "an extension expression",
}


def refused_relation(kind: str) -> str:
    """The one line refusing relation ``kind``, named by the API call that makes it."""
    if kind not in REFUSED_RELATIONS:
        return f"DataFrame: the operator {kind} is not supported by dltrace"
    return f"DataFrame: {REFUSED_RELATIONS[kind]} has no exact lineage: dltrace refuses it"


def refused_expression(kind: str) -> str:
    """The one line refusing expression ``kind``, named by the API call that makes it."""
    what = REFUSED_EXPRESSIONS.get(kind, f"expressions of kind {kind}")
    return f"DataFrame: {what} is not supported by dltrace"


FILE_LOCATION = ("the file a row was read from: dltrace's query reads the registered table (a copy for CSV and JSON) "
                 "or a saved result, not the job's file")
METADATA_COLUMN = "a file's metadata column: dltrace's query reads the registered table, not the job's files"
PARTITION_TRANSFORMS = ("years", "months", "days", "hours", "bucket")
PARTITION_TRANSFORM = "a partition transform, only for writeTo(...).partitionedBy, which dltrace refuses"
# functions dltrace refuses (expressions.py), by Spark's name, and why
REFUSED_FUNCTIONS = {
    "input_file_name": FILE_LOCATION, "input_file_block_start": FILE_LOCATION,
    "input_file_block_length": FILE_LOCATION,
    "distributed_sequence_id": "zipWithIndex: an index in the order of the partitions of the job's own plan",
    **{name: PARTITION_TRANSFORM for name in PARTITION_TRANSFORMS},
    "shuffle": "sqlglot (which dltrace's queries go through) takes one argument, where PySpark sends the seed too",
    "current_catalog": "sqlglot (which dltrace's queries go through) reads CURRENT_CATALOG() as a column name",
    "localtimestamp": "sqlglot (which dltrace's queries go through) reads LOCALTIMESTAMP() as a column name",
}


def refused_function(name: str) -> str:
    """The one line refusing Spark function ``name``."""
    return f"DataFrame: {name} is not supported by dltrace: {REFUSED_FUNCTIONS[name.lower()]}"
# pyspark.sql.functions that make no column expression, or one only a refused call takes
FUNCTION_STATUS = {
    **{name: (REFUSED, REFUSED_RELATIONS["common_inline_user_defined_table_function"])
       for name in ("udtf", "arrow_udtf")},
    **{f"partitioning.{name}": (REFUSED, PARTITION_TRANSFORM) for name in PARTITION_TRANSFORMS},
    **{name: (REFUSED, why) for name, why in REFUSED_FUNCTIONS.items() if name != "distributed_sequence_id"},
}
GENERATOR_FUNCTIONS = ("explode", "explode_outer", "posexplode", "posexplode_outer", "inline", "inline_outer",
                       "json_tuple", "stack")
NONDETERMINISTIC = ("rand", "randn", "random", "uuid", "shuffle", "monotonically_increasing_id",
                    "spark_partition_id", "randstr", "uniform")

AS_SQL = "an expression of the query it becomes"
COLUMN_METHODS: dict[str, tuple[str, str]] = {
    **{name: (TRACED, AS_SQL) for name in (
        "alias name astype cast try_cast asc asc_nulls_first asc_nulls_last desc desc_nulls_first desc_nulls_last "
        "between bitwiseAND bitwiseOR bitwiseXOR contains endswith startswith like ilike rlike eqNullSafe getField "
        "getItem isNaN isNotNull isNull isin otherwise when outer over substr transform").split()},
    "withField": (REFUSED, REFUSED_EXPRESSIONS["update_fields"]),
    "dropFields": (REFUSED, REFUSED_EXPRESSIONS["update_fields"]),
    **{name: (TRACED, "an operator of the query it becomes") for name in (
        "__neg__ __add__ __sub__ __mul__ __div__ __truediv__ __mod__ __radd__ __rsub__ __rmul__ __rdiv__ "
        "__rtruediv__ __rmod__ __pow__ __rpow__ __eq__ __ne__ __lt__ __le__ __ge__ __gt__ __and__ __or__ "
        "__invert__ __rand__ __ror__ __getattr__ __getitem__").split()},
    **{name: (SPARK_REFUSES, "a Column is no Python value") for name in
       ("__contains__", "__iter__", "__nonzero__", "__bool__")},
}
COLUMN_SKIPPED = ("__module__", "__doc__", "__new__", "__repr__", "__hash__", "__init__", "__dict__",
                  "__weakref__", "__annotations__", "__abstractmethods__", "__firstlineno__", "__static_attributes__")

RELATIONAL = "the SQL it becomes (docs/dataframes.md, What is traced)"
SAME_PLAN = "the DataFrame's plan unchanged (caching changes no row)"
AN_ACTION = "an action: Spark computes it over the DataFrame as written"
NO_LINEAGE = "no exact lineage"
DATAFRAME_METHODS: dict[str, tuple[str, str]] = {
    **{name: (TRACED, RELATIONAL) for name in (
        "agg alias coalesce crossJoin cube distinct drop dropDuplicates drop_duplicates dropna exceptAll exists "
        "fillna filter groupBy groupby groupingSets hint intersect intersectAll join limit melt offset orderBy "
        "repartition repartitionByRange repartitionById rollup scalar select selectExpr sort sortWithinPartitions "
        "subtract toDF toJSON transform union unionAll unionByName unpivot where withColumn withColumnRenamed "
        "withColumns withColumnsRenamed withMetadata").split()},
    **{name: (TRACED, SAME_PLAN) for name in ("cache", "persist", "unpersist")},
    **{name: (TRACED, "the view's plan is kept and traced where the view is read (temp_views.py)") for name in
       ("createTempView", "createOrReplaceTempView", "createGlobalTempView", "createOrReplaceGlobalTempView",
        "registerTempTable")},
    **{name: (EAGER, AN_ACTION) for name in (
        "collect count first head take tail show toPandas toArrow toLocalIterator isEmpty foreach foreachPartition "
        "cov corr approxQuantile").split()},
    **{name: (EAGER, "metadata of the plan") for name in (
        "columns dtypes schema printSchema explain isLocal isStreaming inputFiles sameSemantics semanticHash "
        "storageLevel executionInfo sparkSession").split()},
    **{name: (EAGER, "an accessor: its methods are listed apart") for name in ("na", "stat", "write", "writeTo")},
    **{name: (EAGER, "Spark computes and stores the rows; the DataFrame it returns is refused: "
               + REFUSED_RELATIONS["cached_remote_relation"]) for name in ("checkpoint", "localCheckpoint")},
    **{name: (EAGER, "pandas-on-Spark and plots compute over the DataFrame as written")
       for name in ("pandas_api", "plot")},
    "rdd": (SPARK_REFUSES, "Spark Connect has no RDDs"),
    "colRegex": (REFUSED, REFUSED_EXPRESSIONS["unresolved_regex"]),
    "metadataColumn": (REFUSED, METADATA_COLUMN),
    "asTable": (REFUSED, "a table argument, taken by UDTFs and table-valued functions, which dltrace refuses"),
    "mergeInto": (REFUSED, "MERGE INTO changes a table's rows by a condition"),
    "writeStream": (REFUSED, "a streaming write: dltrace traces batch jobs"),
    **{name: (REFUSED, NO_LINEAGE + ": " + REFUSED_RELATIONS[kind]) for name, kind in (
        ("sample", "sample"), ("randomSplit", "sample"), ("mapInPandas", "map_partitions"),
        ("mapInArrow", "map_partitions"), ("to", "to_schema"), ("observe", "collect_metrics"),
        ("withWatermark", "with_watermark"), ("lateralJoin", "lateral_join"), ("transpose", "transpose"),
        ("replace", "replace"), ("sampleBy", "sample_by"), ("summary", "summary"), ("describe", "describe"),
        ("crosstab", "crosstab"), ("freqItems", "freq_items"), ("zip", "zip"), ("nearestByJoin", "nearest_by_join"),
        )},
    "zipWithIndex": (REFUSED, REFUSED_FUNCTIONS["distributed_sequence_id"]),
    "dropDuplicatesWithinWatermark": (REFUSED, "a streaming deduplication"),
}
GROUPED_METHODS: dict[str, tuple[str, str]] = {
    **{name: (TRACED, "GROUP BY") for name in ("agg", "avg", "count", "max", "mean", "min", "sum")},
    "pivot": (TRACED, "PIVOT"),
    **{name: (REFUSED, NO_LINEAGE + ": " + REFUSED_RELATIONS[kind]) for name, kind in (
        ("apply", "group_map"), ("applyInPandas", "group_map"), ("applyInArrow", "group_map"),
        ("cogroup", "co_group_map"), ("applyInPandasWithState", "apply_in_pandas_with_state"),
        ("transformWithState", "apply_in_pandas_with_state"),
        ("transformWithStateInPandas", "apply_in_pandas_with_state"))},
}
NA_METHODS = {"drop": (TRACED, "WHERE"), "fill": (TRACED, "COALESCE"),
              "replace": (REFUSED, NO_LINEAGE + ": " + REFUSED_RELATIONS["replace"])}
STAT_METHODS = {**{name: (EAGER, AN_ACTION) for name in ("approxQuantile", "corr", "cov")},
                **{name: (REFUSED, NO_LINEAGE + ": " + REFUSED_RELATIONS[kind]) for name, kind in (
                    ("crosstab", "crosstab"), ("freqItems", "freq_items"), ("sampleBy", "sample_by"))}}

FILE_FORMATS = ("parquet", "csv", "json", "orc", "delta")  # what dltrace registers and writes (job_files.py)
OTHER_FORMAT = "dltrace reads and writes Parquet, CSV, JSON, ORC and Delta files only"
TABLE_SETTINGS = "dltrace writes tables with Spark's defaults"
READ = "under `dltrace run`: the path registered as a source, read with the reader's options (jobs.py)"
WRITTEN = "under `dltrace run`: a saved step, then Spark's writer writes its rows there with the job's settings"
PASSED = "passed to Spark's reader or writer"
READER_METHODS: dict[str, tuple[str, str]] = {
    **{name: (TRACED, READ) for name in ("csv", "json", "orc", "parquet", "load")},
    "table": (TRACED, "a registered table, saved result, view or the program's temporary view"),
    **{name: (TRACED, PASSED) for name in ("option", "options", "schema")},
    "format": (TRACED, "one of " + ", ".join(FILE_FORMATS) + "; any other is refused"),
    **{name: (REFUSED, OTHER_FORMAT) for name in ("text", "xml", "jdbc")},
    "changes": (REFUSED, REFUSED_RELATIONS["relation_changes"]),
}
WRITER_METHODS: dict[str, tuple[str, str]] = {
    **{name: (TRACED, WRITTEN) for name in ("csv", "json", "orc", "parquet", "save")},
    "saveAsTable": (TRACED, "a saved step, then Spark's table of its rows; an append is a run (table_runs.py)"),
    "insertInto": (TRACED, "a run of the table (table_runs.py)"),
    **{name: (TRACED, PASSED) for name in ("mode", "option", "options", "partitionBy")},
    "format": (TRACED, "one of " + ", ".join(FILE_FORMATS) + "; any other is refused"),
    **{name: (REFUSED, OTHER_FORMAT) for name in ("text", "xml", "jdbc")},
    **{name: (REFUSED, "Spark takes them with tables only, and " + TABLE_SETTINGS)
       for name in ("bucketBy", "sortBy", "clusterBy")},
}
WRITER_V2_METHODS: dict[str, tuple[str, str]] = {
    **{name: (TRACED, "a saved step, then Spark's table of its rows") for name in
       ("create", "replace", "createOrReplace", "using")},
    **{name: (TRACED, "a run of the table (table_runs.py)") for name in ("append", "overwritePartitions")},
    "overwrite": (REFUSED, "dltrace keeps earlier runs' rows by the partitions a run writes, not by a condition"),
    **{name: (REFUSED, TABLE_SETTINGS) for name in
       ("partitionedBy", "clusterBy", "option", "options", "tableProperty")},
}
# keyword parameters of the methods above that are not passed to Spark as they are
REFUSED_PARAMETERS = {"saveAsTable": {"options": "saveAsTable with options: " + TABLE_SETTINGS}}
# option keys (``option(k, v)``, ``options(k=v)``) dltrace reads or refuses; every other is passed to Spark
OPTION_KEYS: dict[str, tuple[str, str]] = {
    "path": (TRACED, "the path read or written"),
    "versionAsOf": (TRACED, "the Delta version registered"),
    "timestampAsOf": (REFUSED, "Delta by timestamp: read it with versionAsOf, which dltrace registers"),
    "replaceWhere": (REFUSED, "earlier runs' rows are kept by the partitions a run writes, not by a condition"),
    "partitionOverwriteMode": (TRACED, "dynamic: the partitions written replace only their own (a run)"),
}


def refusing_sinks() -> dict:
    """Connect's DataFrame sinks dltrace cannot trace, each refusing by name when called, for
    ``jobs.io_as_steps`` to patch in for a job's run (a MERGE or a stream would write rows
    with no lineage)."""
    from pyspark.sql.connect.dataframe import DataFrame

    def refuse(name: str):
        def refused(frame, *args, **kwargs):
            raise UnsupportedLineage(f"DataFrame.{name}: {DATAFRAME_METHODS[name][1]}: dltrace refuses it")
        return refused

    return {(DataFrame, "mergeInto"): refuse("mergeInto"), (DataFrame, "writeStream"): property(refuse("writeStream"))}
