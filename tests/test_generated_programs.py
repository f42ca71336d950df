"""Generated DataFrame programs run plain and under ``dltrace run`` must agree.

``tests/program_generator.py`` writes the programs, ``tests/program_check.py`` runs them, plain
(classic Spark, as ``spark-submit``) and traced (``run_job`` on Spark Connect), and compares the
rows and schema (nullability included) of the Parquet each writes, the printed output and the
error class.  ``make test`` runs 100 programs (a program costs about 2.4 s plain and traced),
``make test-heavy`` 1,000 more; the tests after them are the differences the generator found,
each cut down to the construct.
"""

from __future__ import annotations

import sys

import pytest

from dltrace import LineageSession
from tests.program_check import differences, line_differences, run_plain, run_traced, write_sources
from tests.program_generator import JOIN_TYPES, Program, generate

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def programs_setup(spark, engine, tmp_path_factory):
    """The sources, written once, and a catalog the traced runs register them in once."""
    work = tmp_path_factory.mktemp("programs")
    return spark, LineageSession(work / "catalog", spark=engine), write_sources(work / "data"), work


def compare(setup, programs: list[Program]) -> tuple[dict, dict, dict]:
    spark, lineage, data, work = setup
    plain = run_plain(spark, programs, data, work)
    traced = run_traced(lineage, programs, data, work)
    return plain, differences(plain, traced), line_differences(plain, traced)


def check_generated(setup, seeds: range) -> None:
    plain, found, lines = compare(setup, [generate(seed) for seed in seeds])
    failing = sum(1 for outcome in plain.values() if outcome.error)
    print(f"generated programs: {len(plain)}, {failing} failing in Spark, {len(found)} differences, "
          f"{len(lines)} failing alike at another line: {lines}", file=sys.stderr)
    assert len(plain) == len(seeds)
    assert failing < len(seeds) / 3  # most programs run: their rows are compared, not only their errors
    assert not found, "\n".join(f"program {seed} (python -m tests.program_generator --seed {seed}): {what}"
                                for seed, what in sorted(found.items()))


def test_100_generated_programs_traced_as_plain_spark_runs_them(programs_setup):
    check_generated(programs_setup, range(100))


@pytest.mark.heavy
def test_1000_generated_programs_traced_as_plain_spark_runs_them(programs_setup):
    check_generated(programs_setup, range(1000, 2000))


def test_the_generator_covers_the_api_and_is_reproducible():
    """Every construct the generator is for occurs among 300 programs, and a seed is one program."""
    texts = "\n".join(generate(seed).text() for seed in range(300))
    assert generate(7).text() == generate(7).text() and generate(7).text() != generate(8).text()
    for seed in range(300):
        compile(generate(seed).text(), f"program {seed}", "exec")
    constructs = ["try_cast(", ".cast(", "unionByName(", "allowMissingColumns=True", ".over(", "F.explode(",
                  "F.posexplode_outer(", "F.inline(", ".pivot(", "twice(", "label(", "F.lit(Decimal(",
                  "F.lit(datetime.date(", "F.lit(datetime.datetime(", "F.lit(True)", "F.lit(bytearray(", "F.lit([",
                  "F.struct(", "F.transform(", "getField(", "F.col('info.", ".rollup(", ".cube(", ".unpivot(",
                  "spark.createDataFrame(", ".intersect(", ".subtract(", ".intersectAll(", ".exceptAll(", ".show(",
                  "F.expr(", "rowsBetween(",
                  *[f"'{how}')" for how in JOIN_TYPES if how != "cross"], ".crossJoin("]
    assert [c for c in constructs if c not in texts] == []


# -- the differences found, each cut down ---------------------------------------------------------

def cut_down(setup, *bodies: str) -> dict:
    """Each body (lines making ``f``) as a program writing ``f`` and showing it, plain and traced:
    the differences, after checking that each ran plainly (a test of a construct, not an error)."""
    programs = [Program(i, [*body.strip().splitlines(), "f.write.mode('overwrite').parquet(OUT + '/@OUT')",
                            "f.orderBy(*f.columns).show(truncate=False)"]) for i, body in enumerate(bodies)]
    plain, found, _ = compare(setup, programs)
    assert [seed for seed, outcome in plain.items() if outcome.error or outcome.rows is None] == []
    return found


def test_struct_fields_as_function_arguments(programs_setup):
    """Found by the generator (seed 2): ``F.slice(F.col('prefs').getField('langs'), 1, 2)`` was
    traced as a column of a table ``prefs`` (the function's text parsed again read
    ``_df0.prefs.langs`` as database.table.column): "the query has no table or alias named prefs"."""
    assert cut_down(programs_setup,
                    "f = users.select(F.slice(F.col('prefs').getField('langs'), 1, 2).alias('c'), "
                    "F.size(F.col('prefs.langs')).alias('n'))",
                    "f = events.select('id', F.upper(F.col('info')['city']).alias('c'), "
                    "F.coalesce(F.col('info.geo.lat'), F.lit(0.0)).alias('lat'))") == {}


def test_binary_literals(programs_setup):
    """Found by the generator (seed 18): ``F.lit(bytearray(b'ab'))`` was refused ("a literal of
    type binary is not supported"); it is ``X'6162'``, never NULL as Spark types it."""
    assert cut_down(programs_setup, "f = events.select('id', F.lit(bytearray(b'ab')).alias('b'), "
                                    "F.lit(bytearray(b'')).alias('e'))") == {}


def test_struct_fields_named_after_columns_merged_away(programs_setup):
    """Found by the generator (seed 109): ``F.struct('flag', 'qty')`` over a ``na.fill`` of
    ``qty`` became ``STRUCT(flag, COALESCE(qty, 0))`` once the query was merged, whose second
    field Spark names ``col2``: a union by name with ``F.struct('qty', 'flag')`` then failed with
    FIELD_NOT_FOUND.  A field read from a column is named after it (``STRUCT(... AS qty)``)."""
    assert cut_down(programs_setup, """
f1 = events.select('id', 'qty', 'flag').na.fill({'qty': 0})
f2 = f1.withColumn('s', F.struct('flag', 'qty'))
f = f2.unionByName(f1.withColumn('s', F.struct('qty', 'flag')), allowMissingColumns=True)
""", "f = events.withColumn('qty', F.col('qty') + 1)"
       ".select('id', F.struct('qty', F.col('info.city')).alias('s'))") == {}


def test_a_window_over_no_rows(programs_setup):
    """Found by the generator (seeds 25, 28, 33, 39, 85): a window over a frame with no rows
    failed the save with CANNOT_INFER_EMPTY_SCHEMA (the windows' sets held apart, none, were an
    untyped Arrow column); plain Spark writes the empty file."""
    found = cut_down(programs_setup, "f = events.filter(F.col('code').startswith('a'))"
                                     ".withColumn('r', F.rank().over(Window.orderBy('amount')))")
    assert found == {}


def test_a_pivot_without_values_over_no_rows(programs_setup):
    """Found by the generator (seed 61): ``groupBy(k).pivot(c)`` without values over a frame with
    no rows pivoted on no values, a PIVOT ``IN ()`` that Spark cannot parse; Spark gives the
    grouping columns alone (no rows).  With values of the data, NULL among them, as before."""
    assert cut_down(programs_setup,
                    "f = events.filter(F.col('code').startswith('zz')).groupBy('code').pivot('user')"
                    ".agg(F.sort_array(F.collect_list(F.col('info').getField('city'))))",
                    "f = events.groupBy('code').pivot('user').agg(F.max('qty'))") == {}


def test_intersect_all_and_except_all(programs_setup):
    """``intersectAll`` and ``exceptAll`` keep each row as many times as Spark does (they were
    refused: "INTERSECT ALL is not supported yet"), duplicates and NULLs among them."""
    assert cut_down(programs_setup,
                    "f = events.select('user', 'qty')"
                    ".intersectAll(events.filter(F.col('qty') > 1).select('user', 'qty'))",
                    "f = events.select('user', 'flag')"
                    ".exceptAll(events.filter(F.col('id') < 4).select('user', 'flag'))") == {}


def test_an_intersect_of_an_except_of_intersects(programs_setup):
    """Found by the generator (seed 1029): ``intersect`` over a ``subtract`` of two ``intersect``s
    failed in control semantics with Spark's ``Cannot generate code for expression: outer(id)``:
    each INTERSECT's lineage was a correlated subquery, one inside the other.  Under control
    semantics an INTERSECT is now a join with the right side's distinct rows."""
    both = "events.filter(F.col('qty') > 0).select('qty', 'day').intersect(events.select('qty', 'day'))"
    assert cut_down(programs_setup,
                    f"f = events.select('qty', 'day').intersect({both}.subtract({both}.filter(F.col('qty') < 3)))",
                    f"f = events.select('qty', 'day').intersectAll({both}.exceptAll({both}.filter(F.col('qty') < 3)))"
                    ) == {}


def test_a_failure_under_a_pivot_without_values_at_the_pivots_line(programs_setup):
    """Found by the generator (seed 1919): classic Spark finds a pivot's values when ``pivot`` is
    called, so an index out of bounds in its input fails at that line; under dltrace it failed
    at the later write (Connect defers the values to the query).  Both now fail at the pivot."""
    body = ["f1 = events.filter(F.col('amount') == F.col('items')[0].getField('qty'))",
            "f = f1.groupBy('flag').pivot('user').agg(F.sum('qty'))",
            "f.write.mode('overwrite').parquet(OUT + '/@OUT')"]
    plain, found, lines = compare(programs_setup, [Program(0, body)])
    assert plain[0].error == "INVALID_ARRAY_INDEX" and (found, lines) == ({}, {})


def test_a_filter_guarding_a_later_ones_expression(programs_setup):
    """Found by the generator (seed 2207): ``filter(size(tags) > 0)`` then a filter on ``qty %
    size(tags)`` failed with REMAINDER_BY_ZERO under dltrace (ANSI mode): merging the derived
    tables wrote the later filter first, where Spark tests the earlier one first."""
    assert cut_down(programs_setup,
                    "f = events.filter(F.size('tags') > 0).withColumn('m', F.col('qty') % F.size('tags'))"
                    ".filter(F.col('m') >= 0)",
                    "f = events.filter(F.col('qty') != 0).filter((F.col('id') / F.col('qty')) > 1)") == {}


def test_a_struct_of_a_pivots_columns(programs_setup):
    """Found by the generator (seed 2270): ``F.struct('ts', 'ann')`` over a pivot named its field
    after the column's SQL (``_p0``), not ``ann``; a ``unionByName`` with a struct of the fields
    in another order then failed with FIELD_NOT_FOUND."""
    pivot = "events.groupBy('day').pivot('user', ['ann']).agg(F.count('qty'))"
    assert cut_down(programs_setup,
                    f"p = {pivot}\nf = p.withColumn('c', F.struct('day', 'ann'))"
                    ".unionByName(p.withColumn('c', F.struct('ann', 'day')))") == {}


def test_two_lists_of_rows_joined(programs_setup):
    """Found by the generator (seed 96): a left anti join with rows of ``createDataFrame``, then
    an inner join with other rows, failed with a KeyError in sqlglot's merge of derived tables:
    both lists of rows were ``VALUES ... AS _local``.  Each now has an alias of its own."""
    rows = "[('ann', 1, 0.5), ('bob', None, 2.25)], 'user string, grade int, weight double'"
    more = "[('ann', 1, 0.5), ('zed', 3, None)], 'user string, grade int, weight double'"
    assert cut_down(programs_setup, f"f = events.join(spark.createDataFrame({rows}), 'user', 'left_anti')"
                                    f".join(spark.createDataFrame({more}), 'user', 'inner')") == {}


def test_values_computed_on_a_side_an_outer_join_pads(programs_setup):
    """Found by the generator (seed 1073): ``concat_ws`` of a column, computed before a full
    join, became ``''`` on the rows the join padded with NULLs, where Spark has NULL: the merge
    of derived tables computed it after the join (so would a literal, or a rename under a
    ROLLUP, seed 1075).  Such a derived table is kept whole (dataframe/as_written.py)."""
    users = "users.select('user', F.col('age').alias('r_age'))"
    assert cut_down(programs_setup,
                    f"f = events.select('user', F.concat_ws(',', F.col('tags')).alias('c1'), F.lit('x').alias('c2'))"
                    f".join({users}, ['user'], 'full')",
                    f"f = {users}.join(events.select('user', (F.col('qty') + 1).alias('q')), ['user'], 'left')",
                    "f = events.select('amount', F.col('amount').alias('c1')).na.drop(subset=['amount'])"
                    ".rollup('amount', 'c1').agg(F.count('*').alias('n'))") == {}


def test_a_fill_of_no_columns_and_a_rollup_of_a_computed_column(programs_setup):
    """Found by the generator (seeds 1152, 1192, 1378, 1102): ``na.fill({})`` is the frame
    itself in classic Spark, where Connect's client raises CANNOT_BE_EMPTY (dltrace run keeps
    classic's); ``rollup`` of a column computed before it (``flag != flag``) was merged into
    ``ROLLUP(flag <> flag)``, which the rewriter could not parse."""
    assert cut_down(programs_setup, "f = events.groupBy('user').count().na.fill({})",
                    "f = events.select('qty', (F.col('flag') != F.col('flag')).alias('c4')).na.drop(subset=['qty'])"
                    ".rollup('c4').agg(F.count('*').alias('n'))") == {}


def test_a_semi_join_then_a_full_join(programs_setup):
    """Found by the generator (seed 1164): a left semi join, then a full join of its rows, was
    merged into one SELECT, whose semi join before a FULL JOIN the rewriter refuses; the semi
    join's SELECT is kept whole."""
    rows = "[('ann', 1, 0.5), ('bob', None, 2.25)], 'user string, grade int, weight double'"
    assert cut_down(programs_setup, "f = events.join(events.filter(F.array_contains(F.col('tags'), 'a'))"
                                    ".select('user'), 'user', 'left_semi')"
                                    f".join(spark.createDataFrame({rows}), 'user', 'full')") == {}


def test_a_drop_of_nulls_in_a_between(programs_setup):
    """Found by the generator (seeds 1708, 1883): ``na.drop`` of a column computed as
    ``between`` (``a >= 1 AND a <= 5``) dropped every row: merged into ``NOT c IS NULL`` it
    was printed without parentheses, which Spark reads as another condition."""
    assert cut_down(programs_setup,
                    "f = events.select('qty', F.col('price').between(1, 5).alias('c1')).na.drop(subset=['c1'])",
                    "f = events.select('qty', (F.col('qty').isNull() | F.col('flag')).alias('c1'))"
                    ".select('qty', (~F.col('c1')).alias('c2'), F.col('c1').isNull().alias('c3'))") == {}


def test_columns_the_optimizer_finds_never_null(programs_setup):
    """Found by the generator (seeds 10, 1049, 1470, 1524): plain Spark writes a column its
    optimizer finds never NULL (an ``isin`` of literals OR-ed with a comparison, a ``date_trunc``
    of a literal) as required, where the DataFrame's analyzed schema says nullable; dltrace
    wrote every such column nullable.  It now writes with the optimized plan's nullability."""
    hour = "F.date_trunc('hour', F.lit(datetime.datetime(2024, 1, 2, 3, 4, 5)))"
    assert cut_down(programs_setup,
                    "f = events.select('id', (F.lit('x').isin('ann', 'bob', 'x') | (F.col('id') != F.col('price')))"
                    f".alias('c6'), {hour}.alias('c1'))") == {}


def test_a_union_of_a_table_with_itself_sorted(programs_setup):
    """Found by the generator (seeds 1197, 1618): with ``x.c AS c`` in every input of a UNION ALL
    over Parquet, an outer ``ORDER BY x.c`` over ``x.c AS c`` failed Spark 4's plan validation
    after its rule RemoveRedundantAliases; the inputs after the first no longer alias columns
    to their own names (their names are not the union's)."""
    assert cut_down(programs_setup,
                    "f = users.unionByName(users.filter(F.col('age') > 1)).unionByName(users)"
                    ".orderBy(F.col('age').asc(), F.col('user').asc()).limit(2)") == {}


def test_a_pivot_of_rows_kept_by_an_array_exists(programs_setup):
    """Found by the generator (seed 1166): a filter by the array function ``F.exists`` was taken
    for an EXISTS subquery and merged into the PIVOT over it, which lost the names its FOR and
    aggregate columns read (UNRESOLVED_COLUMN in the lineage query)."""
    assert cut_down(programs_setup,
                    "f = events.filter(F.exists(F.col('tags'), lambda t: t.startswith('b')))"
                    ".groupBy('flag').pivot('user', ['cy', 'dee']).agg(F.count_if(F.col('day').isNull()))") == {}


def test_a_global_aggregate_over_filtered_groups(programs_setup):
    """Found by the generator (seed 1577): a global aggregate over a grouped frame's filter was
    merged into the grouping (the filter as its HAVING), giving one row per group, and none
    when the filter keeps no group, where Spark gives one row over all of them."""
    assert cut_down(programs_setup,
                    "g = events.groupBy('day').agg(F.sum('qty').alias('q'))\n"
                    "f = g.filter(F.col('q') > 100000).groupBy().agg(F.count('*').alias('n'), F.max('q').alias('m'))",
                    "g = events.groupBy('day').agg(F.sum('qty').alias('q'))\n"
                    "f = g.filter(F.col('q') > 1).agg(F.count('*').alias('n'))") == {}


def test_a_union_of_pivots_sorted(programs_setup):
    """Found by the generator (seed 1952): an ORDER BY over a UNION ALL of two pivots' lineage
    queries failed Spark 4's plan validation (RemoveRedundantAliases) while the sort key was
    written ``x.c`` beside ``x.c AS c`` in the SELECT list."""
    assert cut_down(programs_setup, """
f1 = events.withColumn('c1', F.sum(F.col('amount')).over(Window.partitionBy('user', 'qty').orderBy('id', 'qty')))
f2 = f1.filter(F.col('day').isNull())
f3 = f1.unionByName(f2.drop('qty'), allowMissingColumns=True)
f4 = f3.groupBy('c1').pivot('user', ['ann']).agg(F.count_if(F.col('price') > F.col('info.geo.lon')))
f5 = f4.filter(F.col('ann') > 0)
f = f4.unionAll(f5).orderBy(F.col('c1').asc(), F.col('ann').desc()).limit(8)
""") == {}
