"""Differential checks of generated valid queries, shared by ``tests/test_generated_queries.py``
(hypothesis, shrinking) and ``python -m tests.fuzz_queries`` (``make fuzz``: thousands, in
parallel processes, every failure listed).

A query is run plain and with lineage on a tiny slice of TPC-H: the lineage query gives the
plain query's rows as a bag, or it is refused in one line (``UnsupportedLineage``); the
DuckDB completeness oracle holds on sampled rows; when asked, ``set``, ``bdd`` and ``auto``
give the same lineage.
"""

from __future__ import annotations

import decimal
from collections import Counter
from pathlib import Path

from sqlglot import exp, parse_one

from dltrace import LineageSession
from dltrace.errors import DltraceError, UnsupportedLineage
from dltrace.formatting import lineage_ids
from tests.oracle import DuckOracle, check_completeness, lineage_bag
from tpch.duck import connect

ROOT = Path(__file__).resolve().parent.parent
# errors of the plain query that are not Spark rejecting it: a failed check, an interrupt, Spark gone
NOT_A_VERDICT = ("AssertionError", "KeyboardInterrupt", "Py4JNetworkError", "ConnectionRefusedError")

# the slice of TPC-H SF 0.01 the queries run on: a few rows per table, keys that still join
SLICE = {
    "region": "SELECT * FROM region",
    "nation": "SELECT * FROM nation",
    "supplier": "SELECT * FROM supplier WHERE s_suppkey <= 6",
    "customer": "SELECT * FROM customer WHERE c_custkey <= 12",
    "part": "SELECT * FROM part WHERE p_partkey <= 10",
    "partsupp": "SELECT * FROM partsupp WHERE ps_partkey <= 10",
    "orders": "SELECT * FROM orders WHERE o_custkey <= 12",
    "lineitem": "SELECT * FROM lineitem WHERE l_orderkey IN (SELECT o_orderkey FROM orders WHERE o_custkey <= 12) "
                "AND l_linenumber <= 3",
}


def tiny_tpch(directory: Path, spark=None) -> LineageSession:
    """TPC-H cut to a few rows per table (DuckDB over the generated SF 0.01 Parquet, cached in
    ./data as the ``tpch`` fixture's), registered in a catalog of its own under ``directory``."""
    from dltrace.datasets import REGISTRATION, generate, table_paths

    paths = table_paths(generate(0.01, ROOT / "data"))
    db = connect()
    for table in SLICE:
        db.execute(f"CREATE VIEW {table} AS SELECT * FROM read_parquet('{paths[table]}')")
    session = LineageSession(directory / "catalog", spark=spark)
    for table, query in SLICE.items():
        path = directory / f"{table}.parquet"
        db.execute(f"COPY ({query}) TO '{path}' (FORMAT parquet)")
        plan = REGISTRATION[table]
        session.register(table, path, key=list(plan.key), order_by=list(plan.order_by))
    return session


def normal(value: object) -> object:
    """A value as both runs must show it: a float's last bits depend on the order of a sum,
    and a set operation of a decimal and a double column is a double in Spark's plain plan
    where the lineage plan (EXCEPT as NOT EXISTS) keeps the left side's decimal."""
    if isinstance(value, (float, decimal.Decimal)):
        return float(f"{float(value):.9g}")
    return value


def bag(rows) -> Counter:
    return Counter(tuple(normal(v) for k, v in row.asDict().items() if k != "DL") for row in rows)


def ids_bag(rows) -> Counter:
    """(values, DL ids) pairs, whatever the representation of DL."""
    return Counter((tuple(normal(v) for k, v in r.asDict().items() if k != "DL"), tuple(lineage_ids(r.DL)))
                   for r in rows)


# the outcome of a query whose lineage is right by the rules but outside Theorem 5 (see below)
OUTSIDE_THEOREM = "traced, completeness not stated (a grand total under another operator)"
# a result past this many rows is not checked: a cross join of four slices (seed 2489, 9M
# rows) would hold its lineage in the checker's memory, and test no rule more than a smaller one
MOST_ROWS_CHECKED = 100_000
TOO_LARGE = f"not checked: more than {MOST_ROWS_CHECKED:,} rows"
REJECTED = "plain query rejected by Spark"  # the query as written fails in Spark itself


def top_blocks(tree: exp.Expression) -> list[exp.Select]:
    """The query's outermost SELECTs: the root, or the branches of its top UNION ALLs."""
    if isinstance(tree, exp.Union) and not tree.args.get("distinct"):
        return top_blocks(tree.left) + top_blocks(tree.right)
    return [tree] if isinstance(tree, exp.Select) else []


def in_from_position(select: exp.Select) -> bool:
    """A derived table, a CTE or a set operation's branch: a relation others read, not a scalar."""
    parent = select.parent
    if isinstance(parent, exp.Subquery):
        parent = parent.parent
    return isinstance(parent, (exp.From, exp.Join, exp.CTE, exp.SetOperation))


def grand_total_below_top(query: str) -> bool:
    """Whether a grand total (an empty grouping set of GROUPING SETS, ROLLUP or CUBE, or an
    ungrouped aggregate read as a relation) feeds another operator of the query.  A grand
    total is emitted over any input, so re-running the query on DL(t) emits one over the
    subset, with other values, that can join t's group: seed 752, where the inner grand
    total's sum becomes NULL over DL(t) and the outer GROUP BY counts it in t's NULL group.
    The paper states Theorem 5 (ASPJ completeness) for trees of grouping aggregates and
    elides its proof; a grand total read by another operator is outside it (docs/semantics.md)."""
    tree = parse_one(query, read="spark")
    top = {id(block) for block in top_blocks(tree)}
    for select in tree.find_all(exp.Select):
        if id(select) in top:
            continue
        group = select.args.get("group")
        if group:
            sets = [*group.find_all(exp.Rollup, exp.Cube), *(t for t in group.find_all(exp.Tuple) if not t.expressions)]
            if sets:
                return True
        elif in_from_position(select) and any(e.find(exp.AggFunc) for e in select.expressions):
            return True
    return False


def check_complete(session: LineageSession, oracle: DuckOracle, query: str, rows: list) -> bool:
    """Completeness on sampled rows.  First on the lineage users get, the ids untagged: the
    original query over the base rows in DL(t) gives t back.  Where a table occurs twice,
    that can fail without any id missing: another occurrence's ids (a scalar subquery over
    all of lineitem) enter this occurrence's relation in the re-run, and under an outer join,
    a window or NOT EXISTS extra rows change t.  The paper's theorem is about tree
    definitions, so then it is checked as the paper states it: ids tagged with their table
    occurrence, each occurrence re-run over its own ids, and the lineage users get must be
    that tree lineage untagged.  False when completeness fails in both forms for a query
    outside the theorem (``grand_total_below_top``): not a verdict on its lineage."""
    try:
        check_completeness(oracle, query, rows, tree=False, most=3)
    except AssertionError:
        tree = session.sql(query, tag_instances=True).collect()
        assert lineage_bag(rows) == lineage_bag(tree, strip=True), f"lineage differs from the tree lineage: {query}"
        try:
            check_completeness(oracle, query, tree, tree=False, most=3, instances=True)
        except AssertionError:
            if grand_total_below_top(query):
                return False
            raise
    return True


def check(session: LineageSession, oracle: DuckOracle, query: str, representations: bool = False) -> str:
    """The outcome of ``query``: ``traced and checked``, ``refused: <construct>``, ``plain
    query rejected by Spark`` or ``TOO_LARGE``; an assertion error when the lineage is wrong
    or fails."""
    try:
        plain = session.sql(query, lineage=False).limit(MOST_ROWS_CHECKED + 1).collect()
    except (DltraceError, Exception) as error:  # noqa: BLE001 - Spark's own verdict on the query, any class
        if type(error).__name__ in NOT_A_VERDICT:
            raise  # a failed check, or Spark gone: not Spark's verdict on the query
        return REJECTED
    if len(plain) > MOST_ROWS_CHECKED:
        return TOO_LARGE
    try:
        frame = session.sql(query)
    except UnsupportedLineage as error:
        assert "\n" not in str(error)
        return "refused: " + error.construct
    rows = frame.collect()
    assert bag(rows) == bag(plain), f"lineage rows differ from the plain query's: {query}"
    complete = not rows or check_complete(session, oracle, query, rows)
    if " OVER " in query.upper():  # windows read other rows under data semantics too
        data = session.sql(query, semantics="data").collect()
        assert bag(data) == bag(plain), f"data lineage rows differ from the plain query's: {query}"
        if representations and "LIMIT" not in query:  # saved, its windows' sets held apart: the same DLs
            for semantics, traced in (("control", rows), ("data", data)):
                session.save(session.sql(query, semantics=semantics), "generated_window")
                assert ids_bag(session.result("generated_window").drop("_row").collect()) == ids_bag(traced), \
                    f"saved {semantics} lineage differs: {query}"
                session.drop_result("generated_window")
    if representations and "LIMIT" not in query:  # under ties, LIMIT may keep rows of other lineage
        expected = ids_bag(rows)
        for representation in ("bdd", "auto"):
            other = session.sql(query, representation=representation).collect()
            assert ids_bag(other) == expected, f"{representation} differs from set: {query}"
    return "traced and checked" if complete else OUTSIDE_THEOREM


def generated_summary(outcomes: Counter) -> str:
    """``generated queries: N (traced and checked a, refused b (construct: n, ...), ..., failures f)``."""
    refused = {k.removeprefix("refused: "): n for k, n in outcomes.items() if k.startswith("refused: ")}
    constructs = " (" + ", ".join(f"{k}: {n}" for k, n in sorted(refused.items())) + ")" if refused else ""
    parts = [f"traced and checked {outcomes['traced and checked']}", f"refused {sum(refused.values())}{constructs}",
             f"{OUTSIDE_THEOREM.removeprefix('traced, ')} {outcomes[OUTSIDE_THEOREM]}",
             f"{REJECTED} {outcomes[REJECTED]}",
             f"{TOO_LARGE} {outcomes[TOO_LARGE]}",
             f"failures {outcomes['failures']}"]
    return f"generated queries: {sum(outcomes.values())} ({', '.join(parts)})"
