"""One writer of tests/test_shared_catalog.py, in a process (and a JVM) of its own: registers
a TPC-H table and saves a result computed from it into a catalog other writers share.

    python -m tests.shared_writer CATALOG TABLE RESULT

A failure ends in one line on stderr and exit 1, as the CLI's do.
"""

from __future__ import annotations

import sys
from pathlib import Path

from dltrace import LineageSession
from dltrace.datasets import REGISTRATION, generate, table_paths
from dltrace.errors import DltraceError
from dltrace.spark import get_spark

ROOT = Path(__file__).resolve().parent.parent


# a column of each table with a few values, none of them its key
GROUPED_BY = {"region": "r_name", "nation": "n_regionkey", "supplier": "s_nationkey", "customer": "c_mktsegment",
              "part": "p_mfgr", "partsupp": "ps_supplycost > 500", "orders": "o_orderstatus",
              "lineitem": "l_returnflag"}


def result_query(table: str) -> str:
    """A grouped query over ``table`` whose groups each derive from their own rows."""
    return f"SELECT {GROUPED_BY[table]} AS k, count(*) AS n FROM {table} GROUP BY {GROUPED_BY[table]}"


def write(catalog: str, table: str, result: str, spark=None) -> None:
    """Register ``table`` (ids in its chronological order: a copy) and save ``result`` from it."""
    session = LineageSession(catalog, spark=spark or get_spark("local[1]", {
        "spark.sql.shuffle.partitions": "2", "spark.driver.memory": "1g", "spark.ui.enabled": "false"}))
    plan = REGISTRATION[table]
    path = table_paths(generate(0.01, ROOT / "data"))[table]
    session.register(table, path, key=list(plan.key), order_by=list(plan.order_by))
    session.save(session.sql(result_query(table)), result)


if __name__ == "__main__":
    try:
        write(*sys.argv[1:])
    except DltraceError as error:
        print(f"dltrace: {error}", file=sys.stderr)
        sys.exit(1)
