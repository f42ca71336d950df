"""What tests/test_cluster.py compares between embedded Spark and the other ways to run it.

``outcomes(session, scratch)`` runs the same work on any Spark: an SPJ query, an aggregate
and a correlated subquery, an roBDD aggregate, a save with stored and re-evaluated impact and
explain; with ``everything``, also each representation of the aggregate and the subquery,
``LINEAGE ON``, a two-step pipeline and a revision of a registered table.  It returns what
came out, lineage included, as JSON-able values.  The tests run it in-process on the embedded
session, and as ``python -m tests.cluster_checks CATALOG SCRATCH [--everything] [--master
MASTER]`` (one process per Spark: a Spark Connect client and a classic session cannot share
one) under ``SPARK_REMOTE`` or on a ``local-cluster`` master; the outputs must be equal.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from dltrace.formatting import plain_value, row_dicts

QUERIES = {
    "spj": "select o_orderkey, c_name, o_totalprice from orders join customer on o_custkey = c_custkey "
    "where o_totalprice > 350000",
    "aggregate": "select o_orderpriority, count(*) as n, sum(l_quantity) as q from orders join lineitem "
    "on o_orderkey = l_orderkey where l_shipdate >= date '1995-01-01' and l_shipdate < date '1995-02-01' "
    "group by o_orderpriority",
    # TPC-H Q4: a correlated EXISTS
    "correlated": "select o_orderpriority, count(*) as order_count from orders where o_orderdate >= date '1993-07-01' "
    "and o_orderdate < date '1993-10-01' and exists (select * from lineitem where l_orderkey = o_orderkey "
    "and l_commitdate < l_receiptdate) group by o_orderpriority",
}
CASES = [("spj", "set"), ("aggregate", "set"), ("aggregate", "bdd"), ("correlated", "set")]
MORE_CASES = [("aggregate", "auto"), ("correlated", "bdd")]
BAD = "lineitem WHERE l_shipdate = date '1995-01-15'"  # inside the aggregate's month
PIPELINE = """
create table big_orders as select o_orderkey, o_custkey, o_totalprice from orders where o_totalprice > 300000;
create table by_segment as select c_mktsegment, count(*) as n from big_orders join customer on o_custkey = c_custkey
group by c_mktsegment;
"""


def rows(frame) -> list[str]:
    """A DataFrame's rows (``DL`` as sorted ids) as sorted JSON texts: a bag, whatever the order."""
    return sorted(json.dumps({k: plain_value(v) for k, v in row.items()}) for row in row_dicts(frame.collect()))


def outcomes(session, scratch: Path, everything: bool = False) -> dict:
    """What dltrace computes here, which must not depend on where Spark runs."""
    out: dict = {}
    for name, representation in CASES + (MORE_CASES if everything else []):
        out[f"{name}/{representation}"] = rows(session.sql(QUERIES[name], representation=representation))
    session.save(session.sql(QUERIES["aggregate"]), "agg")
    out["impact/stored"] = rows(session.impact(BAD, result="agg"))
    out["impact/reeval"] = rows(session.impact(BAD, result="agg", mode="reeval"))
    out["explain"] = {table: rows(frame) for table, frame in sorted(session.explain("agg", 0).items())}
    if everything:
        out["lineage_on"] = rows(session.sql(QUERIES["aggregate"], lineage_on=["l_shipmode"]))
        session.run_script(PIPELINE)
        out["pipeline"] = rows(session.result("by_segment"))
        out["revision"] = revision(session, scratch)
    return out


def revision(session, scratch: Path) -> dict:
    """A table registered, then revised with one row changed and one added: unchanged rows keep
    their ids (docs/semantics.md, "Ids")."""
    scratch.mkdir(parents=True, exist_ok=True)
    first, second = scratch / "v1.csv", scratch / "v2.csv"
    first.write_text("k,v\n1,a\n2,b\n3,c\n")
    second.write_text("k,v\n1,a\n2,B\n3,c\n4,d\n")
    session.register("rev", str(first), key=["k"], order_by=["k"])
    entry = session.register("rev", str(second), key=["k"], order_by=["k"])
    return {"changes": entry.changes, "version": entry.version, "rows": rows(session.sql("select k, v from rev"))}


def main(argv: list[str]) -> int:
    """The outcomes as one JSON object on stdout (Spark Connect when ``SPARK_REMOTE`` is set)."""
    import argparse

    from dltrace import LineageSession
    from dltrace.spark import get_spark

    parser = argparse.ArgumentParser(prog="python -m tests.cluster_checks")
    parser.add_argument("catalog")
    parser.add_argument("scratch", type=Path)
    parser.add_argument("--everything", action="store_true")
    parser.add_argument("--master")
    args = parser.parse_args(argv)
    spark = get_spark(args.master, {"spark.driver.memory": "1g", "spark.sql.shuffle.partitions": "4"})
    print(json.dumps(outcomes(LineageSession(args.catalog, spark=spark), args.scratch, args.everything)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
