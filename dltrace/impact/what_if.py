"""What a correction of source rows changes: ``dltrace impact --if-removed | --if-changed``.

``impact`` answers "which output rows were computed from these rows".  A team that found a
wrong row asks another question: which outputs are wrong because of it, and what would they
be.  A correction can change rows its source rows never reached: a user whose country is
corrected moves their orders into another country's group, a removed latest version makes an
older one the latest, a quantity raised pushes another product out of a top 10.  So the
answer is computed from the definition: every saved result whose lineage reaches the table,
and every result reading one of those, in pipeline order, is computed again over the
corrected source (the results it reads that changed as they would be), and compared with the
same query over the source as it is.  Rows are paired by the query's grouping key when its
outermost SELECT groups by output columns: a pair that differs is ``changed``; a row without
a partner ``vanished`` or ``appeared``.  Without a key the two bags are compared, and a row
that changed is one that vanished and one that appeared.  Nothing is saved or changed.

A step is recomputed whole, or only for what the correction reaches where its constructs allow
(``restricted.py``; ``WhatIf.recomputed`` says which).  The "before" side is recomputed by the
same plain query rather than read from the saved rows, so that a sum of doubles added in
another order by the lineage query is not reported as a change.  Results computed with a job's
Python UDFs (registered only in the job's process) and the runs of outputs a job or INSERT adds
to are not answered yet, with a warning naming them (and the results reading them).
"""

from __future__ import annotations

import hashlib
import warnings
from dataclasses import dataclass
from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

from dltrace.catalog import ID_COLUMN, quoted
from dltrace.dataframe import runs
from dltrace.engine import Engine
from dltrace.errors import BadInput, UnknownColumn, spark_error
from dltrace.impact.backward import rows_with_ids
from dltrace.impact.restricted import WHOLE, Delta, Sides, changed_input, recomputed, restricted_sides
from dltrace.impact.search import BAD_ID, ImpactWarning, bad_ids, bad_rows_view
from dltrace.impact.source import Source, checked_predicate, parse_source
from dltrace.plain import plain_sql
from dltrace.results import ResultStore, SavedResult
from dltrace.rewriter.dialect import SPARK
from dltrace.rewriter.qualify import parse
from dltrace.staleness import staleness
from dltrace.table_data import backquoted, table_rows

CHANGES = CHANGED, VANISHED, APPEARED = "changed", "vanished", "appeared"
CHANGE = "__dl_change"  # a bag comparison's rows: vanished or appeared
UDF_PREFIX = "dl_udf_"  # a job's Python UDF, as its steps' queries call it (dataframe/frames.py)


@dataclass
class WhatIf:
    """How one saved result's rows change: DataFrames of the rows that vanish and appear (the
    result's columns), and of the pairs that change (``before`` and ``after``, structs of them)."""

    result: str
    key: list[str]  # the columns pairing a row before with one after; [] when the query has none
    changed: Any
    vanished: Any
    appeared: Any
    recomputed: str = WHOLE  # or restricted.GROUPS, restricted.ROWS

    def rows(self) -> list[dict]:
        """Every change as a dict: ``change``, then the row's columns (``before``/``after`` for
        a changed row), ordered by change and columns."""
        listed = [{"change": CHANGED, "before": r["before"].asDict(True), "after": r["after"].asDict(True)}
                  for r in self.changed.orderBy("before").collect()]
        for change, frame in ((VANISHED, self.vanished), (APPEARED, self.appeared)):
            listed += [{"change": change, **r.asDict(True)} for r in frame.orderBy(*frame.columns).collect()]
        return listed


def what_if(session: Engine, source: str, removed: bool = False, changes: str | dict[str, str] | None = None,
            result: str | None = None) -> dict[str, WhatIf]:
    """``{saved result: WhatIf}``: how each saved result reaching ``source``'s table (or just
    ``result``) changes when the rows ``source`` names are removed (``removed``) or given the
    values ``changes`` ("col = SQL expression, ..." or ``{col: expression}``, reading the row's
    own columns)."""
    from pyspark.errors import PySparkException

    if removed == (changes is not None):
        raise BadInput("a what-if takes --if-removed or --if-changed \"col = expression, ...\" (one of them)")
    bad = parse_source(source, session.catalog)
    if bad.version is not None and bad.version != session.catalog.entry(bad.table).version:
        raise BadInput(f"--if-removed and --if-changed correct the current rows of {bad.table}: "
                       f"give the table without @v{bad.version}")
    values = parsed_changes(changes, bad.table, dict(session.catalog.entry(bad.table).schema)) if changes else {}
    saved_results = ResultStore(session.catalog).list()  # every result.json, read once
    ordered = reading_in_order(saved_results, bad.table)
    if result is not None:
        wanted = ResultStore(session.catalog).get(result)
        if wanted.name not in {r.name for r in ordered}:
            raise BadInput(f"{wanted.name} does not read {bad.table}, directly or through the results it reads: "
                           f"a correction of it changes nothing there")
    answerable = answered(session, ordered)
    schemas = session.catalog.schemas()
    schemas.update({r.name: r.query_columns for r in saved_results})
    replaced = {bad.table: corrected_view(session, bad, values)}
    deltas = {bad.table: source_delta(session, bad, values)}
    stale = staleness(session.catalog, saved_results)
    answers: dict[str, WhatIf] = {}
    for saved in answerable:
        try:
            view = f"__dl_whatif_{_digest(replaced[bad.table], saved.stamp)}"  # of this correction
            answer = answered_step(session, saved, plain_sql(saved.query, schemas), replaced, deltas, view,
                                   fresh=not stale.get(saved.name))
        except PySparkException as error:  # a value the correction makes fails in a step (an ANSI cast)
            raise spark_error(error, lineage_query=False) from None
        if result is None or saved.name == result.lower():
            answers[saved.name] = answer
    return answers


def answered_step(session: Engine, saved: SavedResult, plain: str, replaced: dict[str, str], deltas: dict[str, Delta],
                  view: str, fresh: bool) -> WhatIf:
    """``saved``'s answer, its rows after as ``replaced[saved.name]`` (the view ``view``, also a
    prefix for the views it makes) and its delta as ``deltas[saved.name]``, for the steps reading
    it.  Its rows after are its saved rows with the changed keys replaced where it has a key and
    its saved rows are its rows now (``fresh``)."""
    key = pairing_key(saved.query, list(saved.query_columns))
    read = changed_input(saved.query, set(deltas), key)
    if read is not None:
        sides = restricted_sides(session, saved, plain, read, key, replaced, deltas[read], view)
    else:
        after = recomputed(session, plain, replaced)
        sides = Sides(session.run(plain, lineage_query=False), after, after, WHOLE)
    answer = compared(saved, sides.before, sides.after, key, sides.how)
    if key and fresh:
        after_rows = applied(session, saved, answer)
    else:
        after_rows = sides.whole_after if sides.whole_after is not None else recomputed(session, plain, replaced)
    after_rows.createOrReplaceTempView(view)
    replaced[saved.name] = view
    deltas[saved.name] = Delta(answer.changed.select("before.*").unionByName(answer.vanished),
                               answer.changed.select("after.*").unionByName(answer.appeared))
    return answer


def parsed_changes(changes: str | dict[str, str], table: str, schema: dict[str, str]) -> dict[str, exp.Expression]:
    """``{column: value}`` from "col = expression, ..." (or a dict of them), each column one of
    ``table``'s and each value an expression over its own columns, cast to the column's type."""
    pairs = changes.items() if isinstance(changes, dict) else _assignments(changes)
    columns = [*schema, ID_COLUMN]
    values: dict[str, exp.Expression] = {}
    for column, text in pairs:
        known = {c.lower(): c for c in schema}
        name = known.get(str(column).strip().strip("`").lower())
        if name is None:
            raise UnknownColumn(f"--if-changed: {table} has no column {column} (it has {', '.join(schema)})")
        value = checked_predicate(str(text), table, columns, "--if-changed")
        if value.find(exp.Query):
            raise BadInput(f"--if-changed: the value of {name} reads a subquery; give an expression over "
                           f"{table}'s own columns")
        values[name] = exp.cast(value, exp.DataType.build(schema[name], dialect="spark"))
    return values


def _assignments(text: str) -> list[tuple[str, str]]:
    try:
        update = sqlglot.parse_one(f"UPDATE __t SET {text}", read="spark")
    except (ParseError, TokenError) as error:
        raise BadInput(f"--if-changed must be \"col = expression, ...\": {str(error).splitlines()[0]}") from None
    pairs = [(e.this.name, e.expression.sql(dialect=SPARK)) for e in update.expressions
             if isinstance(e, exp.EQ) and isinstance(e.this, exp.Column)]
    if not pairs or len(pairs) != len(update.expressions) or update.args.get("where"):
        raise BadInput(f"--if-changed must be \"col = expression, ...\", got {text!r}")
    return pairs


def reading_in_order(saved_results: list[SavedResult], table: str) -> list[SavedResult]:
    """The saved results that read ``table`` or whose lineage reaches it, and those reading
    them, each after the results it reads (pipeline order).  A query reading the table is one
    even where its lineage holds none of its ids (the right side of an anti join, data semantics)."""
    saved = {r.name: r for r in saved_results}
    reading = {name for name, r in saved.items() if table in r.lineage_tables or table in r.tables}
    while more := {n for n, r in saved.items() if n not in reading and set(r.results) & reading}:
        reading |= more
    ordered: list[SavedResult] = []

    def visit(name: str) -> None:
        if name in reading and saved[name] not in ordered:
            for upstream in sorted(saved[name].results):
                visit(upstream)
            ordered.append(saved[name])

    for name in sorted(reading, key=lambda n: (saved[n].created_at, n)):
        visit(name)
    return ordered


def answered(session: Engine, ordered: list[SavedResult]) -> list[SavedResult]:
    """``ordered`` without the results not answered yet (the runs of outputs, results of a job's
    Python UDFs) and those reading them, which a warning names."""
    of_run = runs.runs_by_result(session.catalog)
    left_out: set[str] = set()
    for saved in ordered:
        if saved.name in of_run or UDF_PREFIX in saved.query.lower() or set(saved.results) & left_out:
            left_out.add(saved.name)
    if left_out:
        warnings.warn(ImpactWarning(f"not answered yet: {', '.join(sorted(left_out))} (runs of an output a job or "
                                    f"INSERT adds to, a job's Python UDFs, or results reading them)"), stacklevel=3)
    return [saved for saved in ordered if saved.name not in left_out]


def corrected_view(session: Engine, source: Source, values: dict[str, exp.Expression]) -> str:
    """A view of the source table as corrected: without the bad rows, or (``values``) with
    those columns of the bad rows set; every other row as it is, with its id."""
    rows = bad_rows_view(session, source)  # the table's rows and __dl_bad: the id of a bad row, else NULL
    schema = session.catalog.entry(source.table).schema
    is_bad = exp.column(BAD_ID, table=source.table).is_(exp.null()).not_()
    columns = [exp.column(c, table=source.table, quoted=True) for c in schema]
    if values:
        columns = [exp.alias_(exp.Case().when(is_bad, values[c.name]).else_(c), c.name, quoted=True)
                   if c.name in values else c for c in columns]
    select = exp.select(*columns, exp.column(ID_COLUMN, table=source.table)).from_(
        exp.to_table(rows).as_(source.table))
    if not values:
        select = select.where(exp.column(BAD_ID, table=source.table).is_(exp.null()))
    name = f"__dl_whatif_{_digest(source.text, repr(sorted((k, v.sql()) for k, v in values.items())))}"
    session.run(select.sql(dialect=SPARK), reads=set(), lineage_query=False).createOrReplaceTempView(name)
    return name


def source_delta(session: Engine, source: Source, values: dict[str, exp.Expression]) -> Delta:
    """The correction as a delta of the source table: its bad rows as they are, and as
    corrected (none for a removal), each computed once (found by the table's key index where
    the predicate names keys, read by id)."""
    from pyspark.errors import PySparkException

    table = table_rows(session.spark, session.catalog, source.table)
    rows = rows_with_ids(session.spark, table, bad_ids(session, source))
    view = f"__dl_whatif_bad_{_digest(source.text)}"
    rows.createOrReplaceTempView(view)
    schema = session.catalog.entry(source.table).schema
    columns = [exp.column(c, table=source.table, quoted=True) for c in schema]
    corrected = [exp.alias_(values[c.name], c.name, quoted=True) if c.name in values else c for c in columns]
    listed = [", ".join(e.sql(dialect=SPARK) for e in [*cs, exp.column(ID_COLUMN, table=source.table)])
              for cs in (columns, corrected)]
    removed = session.run(f"SELECT {listed[0]} FROM {view} AS {source.table}", reads=set(), lineage_query=False)
    added = session.run(f"SELECT {listed[1]} FROM {view} AS {source.table}" + ("" if values else " WHERE FALSE"),
                        reads=set(), lineage_query=False)
    try:
        return Delta(removed.localCheckpoint(), added.localCheckpoint())
    except PySparkException as error:  # a value that fails only when it runs (a cast of bad text)
        raise BadInput(f"{'--if-changed' if values else '--if-removed'}: {spark_error(error)}") from None


def pairing_key(query: str, columns: list[str]) -> list[str]:
    """The output columns the outermost SELECT groups by, when it groups by output columns
    only (one row per key), else ``[]``."""
    select = parse(query)
    group = select.args.get("group") if isinstance(select, exp.Select) else None
    if group is None or not group.expressions or any(group.args.get(k) for k in ("rollup", "cube", "grouping_sets")):
        return []
    outputs = {e.unalias().name.lower(): e.alias_or_name for e in select.expressions
               if isinstance(e.unalias(), exp.Column)}
    key = [outputs.get(g.name.lower()) if isinstance(g, exp.Column) else None for g in group.expressions]
    return key if all(k in columns for k in key) else []


def compared(saved: SavedResult, before, after, key: list[str], how: str) -> WhatIf:
    """The changes from ``before`` to ``after`` (the same columns), paired by ``key``
    (``pairing_key``), computed once (a local checkpoint: the answer is read three times, and
    the steps reading the result read it again as their delta); ``how``: what of the result
    was recomputed."""
    from pyspark.sql import functions as F

    columns = list(saved.query_columns)
    after = after.toDF(*columns).select(*[quoted(c).cast(before.schema[c].dataType) for c in columns])
    if not key:
        bags = before.exceptAll(after).withColumn(CHANGE, F.lit(VANISHED)).unionByName(
            after.exceptAll(before).withColumn(CHANGE, F.lit(APPEARED))).localCheckpoint()
        empty = before.limit(0).select(F.struct(*map(quoted, columns)).alias("before"),
                                       F.struct(*map(quoted, columns)).alias("after"))
        return WhatIf(saved.name, [], empty, *[bags.where(F.col(CHANGE) == change).drop(CHANGE)
                                               for change in (VANISHED, APPEARED)], how)
    sides = [frame.select(*[quoted(k).alias(f"__k{i}") for i, k in enumerate(key)],
                          F.struct(*map(quoted, columns)).alias(side))
             for frame, side in ((before, "before"), (after, "after"))]
    on = [sides[0][f"__k{i}"].eqNullSafe(sides[1][f"__k{i}"]) for i in range(len(key))]
    differing = sides[0].join(sides[1], on, "full_outer").select("before", "after").where(
        ~F.col("before").eqNullSafe(F.col("after"))).localCheckpoint()
    both = F.col("before").isNotNull() & F.col("after").isNotNull()
    return WhatIf(saved.name, key, differing.where(both), differing.where(F.col("after").isNull()).select("before.*"),
                  differing.where(F.col("before").isNull()).select("after.*"), how)


def applied(session: Engine, saved: SavedResult, answer: WhatIf):
    """The rows of ``saved`` (keyed) after the correction: its saved rows with those of the keys
    ``answer`` names (changed, vanished, appeared) replaced by the rows after, for the steps
    reading it (none recomputes the result's unchanged rows)."""
    from pyspark.sql import functions as F

    columns = [quoted(c) for c in saved.query_columns]
    rows = session.run(f"SELECT * FROM {backquoted(saved.name)}", reads={saved.name}, lineage_query=False)
    rows = rows.select(*columns)
    touched = answer.changed.select("before.*").unionByName(answer.vanished).unionByName(answer.appeared).select(
        *[quoted(k).alias(f"__k{i}") for i, k in enumerate(answer.key)])
    kept = rows.join(F.broadcast(touched), [rows[backquoted(k)].eqNullSafe(touched[f"__k{i}"])
                                            for i, k in enumerate(answer.key)], "left_anti")
    return kept.unionByName(answer.changed.select("after.*")).unionByName(answer.appeared)


def _digest(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:12]
