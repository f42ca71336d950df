"""``dltrace demo``: TPC-H generated, registered with chronological ids, one query traced,
its lineage decoded back to the base rows' keys."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from dltrace.datasets import is_generated, register_tpch
from dltrace.formatting import describe_lineage
from dltrace.ids import split_id
from dltrace.session import LineageSession
from dltrace.spark import CONNECT_API

DEMO_QUERY = """select l_orderkey, sum(l_extendedprice * (1 - l_discount)) as revenue,
       o_orderdate, o_shippriority
from customer, orders, lineitem
where c_mktsegment = 'BUILDING' and c_custkey = o_custkey and l_orderkey = o_orderkey
  and o_orderdate < date '1995-03-15' and l_shipdate > date '1995-03-15'
group by l_orderkey, o_orderdate, o_shippriority
order by revenue desc, o_orderdate
limit 5"""


SHOWN_PER_TABLE = 4

# A two-step pipeline (README, "Pipelines: lineage through saved steps"): revenue per
# customer, then per nation, read from the saved first step; lineage reaches the base rows through both.
DEMO_PIPELINE = """create or replace table custrev as
  select c_custkey, c_nationkey, sum(o_totalprice) as revenue
  from customer join orders on c_custkey = o_custkey
  group by c_custkey, c_nationkey;
create or replace table natrev as
  select n_name, sum(revenue) as revenue, count(*) as customers
  from custrev join nation on c_nationkey = n_nationkey
  group by n_name;"""
DEMO_BAD_ROW = "orders WHERE o_orderkey = 1"
# the same two steps as an unmodified PySpark job (README, "PySpark DataFrame pipelines")
DEMO_JOB = Path(__file__).with_name("examples") / "revenue_job.py"


def step(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def data_step(sf: float, data: Path) -> str:
    """What the demo does for data: a first run generates it, later runs reuse it.

    >>> data_step(0.01, Path("/nonexistent"))
    'generating TPC-H SF 0.01 into /nonexistent/ (kept for later runs)'
    """
    if is_generated(sf, data):
        return f"using TPC-H SF {sf} generated earlier in {data}/"
    return f"generating TPC-H SF {sf} into {data}/ (kept for later runs)"


def demo(catalog: str | None, data: Path, sf: float, master: str | None) -> int:
    session = LineageSession(catalog, master=master)
    step(f"{data_step(sf, data)} and registering it in {session.catalog.directory}/")
    register_tpch(session, sf, data, progress=lambda m: step("  " + m))
    step("running TPC-H Q3 (top 5 orders by revenue) with lineage:")
    print("\n" + DEMO_QUERY + "\n")
    started = time.perf_counter()
    rows = session.sql(DEMO_QUERY).collect()
    elapsed = time.perf_counter() - started
    for rank, row in enumerate(rows, 1):
        print(f"#{rank}  l_orderkey={row.l_orderkey}  revenue={row.revenue}  o_orderdate={row.o_orderdate}")
        print(f"    DL = {describe_lineage(row.DL, session.catalog)}")
        for table, base_rows in session.decode(row.DL).items():
            for r in base_rows[:SHOWN_PER_TABLE]:
                key = ", ".join(f"{k}={v}" for k, v in r.items() if k != "_dl_id")
                print(f"      {table:9} #{split_id(r['_dl_id'])[1]:<7} {key}")
            if len(base_rows) > SHOWN_PER_TABLE:
                print(f"      {table:9} ... and {len(base_rows) - SHOWN_PER_TABLE} more")
    pipeline(session)
    print(
        f"""
What you just saw ({elapsed:.1f} s for Q3 on Spark):
  * dltrace rewrote Q3 so that every result row carries DL, the ids of the base rows it
    was computed from: one customer, one order and that order's qualifying line items.
  * Ids are (table code << 48) | row number, numbered in ship/order-date order, so a
    row's lineage clusters; `#n` above is the row number inside its table.
  * The lineage was computed during normal execution (no reverse queries).  Try:
      dltrace sql "select ..." --format json          # rows with DL as sorted ids
      dltrace rewrite "select ..."                    # the lineage SQL, for spark-sql -f
  * A pipeline of two saved steps: natrev read custrev, not the base tables, and its DLs
    still name base rows, so one impact question found the bad order in both results.
      dltrace results                                 # saved results, their inputs, staleness
      dltrace impact --source "{DEMO_BAD_ROW}"   # every saved result
"""
    )
    print(f"Try next, in the browser: {ui_command(catalog)}   (pip install 'dltrace[ui]'; it prints the URL)")
    return 0


def ui_command(catalog: str | None) -> str:
    """The lineage explorer over the demo's catalog, as a command to type.

    >>> ui_command(None), ui_command("/tmp/my catalog")
    ('dltrace ui', "dltrace ui --catalog '/tmp/my catalog'")
    """
    return "dltrace ui" + (f" --catalog {shlex.quote(str(catalog))}" if catalog else "")


def pipeline(session: LineageSession) -> None:
    """Run the two-step pipeline, then ask which rows of both results one order affected."""
    step("a pipeline of two saved steps (dltrace run):")
    print("\n" + DEMO_PIPELINE + "\n")
    for outcome in session.run_script(DEMO_PIPELINE):
        step(f"  saved result {outcome.name}: {outcome.rows} rows in {outcome.seconds:.1f} s")
    dataframe_job(session)
    step(f"impact of a bad source row across every saved result: {DEMO_BAD_ROW}")
    for name, frame in session.impact(DEMO_BAD_ROW).items():
        rows = frame.collect()
        print(f"  {name}: {len(rows)} affected rows")
        for row in rows[:SHOWN_PER_TABLE]:
            values = ", ".join(f"{k}={v}" for k, v in row.asDict().items() if k not in ("DL", "_row"))
            print(f"    _row {row._row}: {values}   (DL narrowed to the bad ids: {list(row.DL)})")


def saved_lineage(session: LineageSession, name: str) -> Counter:
    """A saved result's rows with their DLs, as a bag."""
    return Counter((tuple(str(v) for k, v in row.asDict().items() if k not in ("DL", "_row")), tuple(row.DL))
                   for row in session.result(name).collect())


def dataframe_job(session: LineageSession) -> None:
    """The same steps as a PySpark job, ``dltrace run`` in a process of its own (a job runs
    Spark in Connect mode); its saved results replace the SQL pipeline's, with the same DLs."""
    shown = os.path.relpath(DEMO_JOB) if DEMO_JOB.is_relative_to(Path.cwd()) else DEMO_JOB
    step(f"the same pipeline as a PySpark job: dltrace run {shown}")
    before = {name: saved_lineage(session, name) for name in ("custrev", "natrev")}
    env = {k: v for k, v in os.environ.items() if k not in CONNECT_API}
    done = subprocess.run([sys.executable, "-m", "dltrace", "run", str(DEMO_JOB), "--catalog",
                           str(session.catalog.directory)], capture_output=True, text=True, env=env)
    for line in done.stderr.splitlines():
        if line.startswith("dltrace"):
            step("  " + line.removeprefix("dltrace: "))
    if done.returncode != 0:
        step("  the job failed (above); the SQL pipeline's results stay")
        return
    same = all(saved_lineage(session, name) == rows for name, rows in before.items())
    step(f"  its rows and DLs equal the SQL pipeline's: {'yes' if same else 'NO'}")

