"""Generated data sets, cached on disk: TPC-H, generated with tpchgen-cli and registered
with the paper's chronological ids, for ``dltrace demo`` and the benchmarks (``tpch/``,
``walmart/``, which import it from here: the library never imports its benchmarks).

A data set is written so that an interrupted run never leaves a half-written cache: its
files go into a temporary sibling directory that is renamed into place only when complete.

tpchgen-cli (tpchgen-rs) produces the same rows as the reference dbgen, so
result cardinalities and lineage sizes can be compared with the paper's Table 7.
Each table is one Parquet file ``<root>/tpch-sf<SF>/<table>.parquet`` (Snappy,
row groups of about 7 MiB, so Spark still splits large tables). Column types as
tpchgen-cli 4 writes them (checked with pyarrow and Spark):

* keys (``*_orderkey``, ``*_partkey``, ``*_suppkey``, ``*_custkey``,
  ``*_nationkey``, ``*_regionkey``): int64 (Spark ``bigint``);
* ``l_linenumber``, ``o_shippriority``, ``p_size``, ``ps_availqty``: int32;
* money and quantities (``l_quantity``, ``l_extendedprice``, ``l_discount``,
  ``l_tax``, ``o_totalprice``, ``c_acctbal``, ``s_acctbal``, ``p_retailprice``,
  ``ps_supplycost``): decimal(15,2), stored as Parquet INT64;
* dates (``l_shipdate``, ``l_commitdate``, ``l_receiptdate``, ``o_orderdate``):
  date32 (Spark ``date``);
* text, including the one-letter flags: Arrow ``string_view`` in the embedded
  Arrow schema, plain UTF-8 ``binary`` in Parquet (Spark ``string``).

All columns are written as required (non-null).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import pyarrow.parquet as pq

TABLES = ("region", "nation", "supplier", "customer", "part", "partsupp", "orders", "lineitem")


@dataclass(frozen=True)
class Registration:
    """How a table is registered for lineage: its key and the order of its ids.

    The paper assigns ids "in chronological order such as shipdate or orderdate;
    if not available, based on the key", so that lineage sets cluster. The key
    columns end every ``order_by`` to make the id order deterministic on ties.
    """

    key: tuple[str, ...]
    order_by: tuple[str, ...]


REGISTRATION: dict[str, Registration] = {
    "region": Registration(key=("r_regionkey",), order_by=("r_regionkey",)),
    "nation": Registration(key=("n_nationkey",), order_by=("n_nationkey",)),
    "supplier": Registration(key=("s_suppkey",), order_by=("s_suppkey",)),
    "customer": Registration(key=("c_custkey",), order_by=("c_custkey",)),
    "part": Registration(key=("p_partkey",), order_by=("p_partkey",)),
    "partsupp": Registration(
        key=("ps_partkey", "ps_suppkey"), order_by=("ps_partkey", "ps_suppkey")
    ),
    "orders": Registration(key=("o_orderkey",), order_by=("o_orderdate", "o_orderkey")),
    "lineitem": Registration(
        key=("l_orderkey", "l_linenumber"),
        order_by=("l_shipdate", "l_orderkey", "l_linenumber"),
    ),
}


# Each table's columns as a catalog registers them (Spark types, as listed above), and its
# rows at SF 1: enough to rewrite queries without data or a catalog (tests/test_golden_sql.py).
SCHEMA: dict[str, dict[str, str]] = {
    "region": {"r_regionkey": "bigint", "r_name": "string", "r_comment": "string"},
    "nation": {"n_nationkey": "bigint", "n_name": "string", "n_regionkey": "bigint", "n_comment": "string"},
    "supplier": {"s_suppkey": "bigint", "s_name": "string", "s_address": "string", "s_nationkey": "bigint",
                 "s_phone": "string", "s_acctbal": "decimal(15,2)", "s_comment": "string"},
    "customer": {"c_custkey": "bigint", "c_name": "string", "c_address": "string", "c_nationkey": "bigint",
                 "c_phone": "string", "c_acctbal": "decimal(15,2)", "c_mktsegment": "string", "c_comment": "string"},
    "part": {"p_partkey": "bigint", "p_name": "string", "p_mfgr": "string", "p_brand": "string", "p_type": "string",
             "p_size": "int", "p_container": "string", "p_retailprice": "decimal(15,2)", "p_comment": "string"},
    "partsupp": {"ps_partkey": "bigint", "ps_suppkey": "bigint", "ps_availqty": "int", "ps_supplycost": "decimal(15,2)",
                 "ps_comment": "string"},
    "orders": {"o_orderkey": "bigint", "o_custkey": "bigint", "o_orderstatus": "string",
               "o_totalprice": "decimal(15,2)", "o_orderdate": "date", "o_orderpriority": "string",
               "o_clerk": "string", "o_shippriority": "int", "o_comment": "string"},
    "lineitem": {"l_orderkey": "bigint", "l_partkey": "bigint", "l_suppkey": "bigint", "l_linenumber": "int",
                 "l_quantity": "decimal(15,2)", "l_extendedprice": "decimal(15,2)", "l_discount": "decimal(15,2)",
                 "l_tax": "decimal(15,2)", "l_returnflag": "string", "l_linestatus": "string", "l_shipdate": "date",
                 "l_commitdate": "date", "l_receiptdate": "date", "l_shipinstruct": "string", "l_shipmode": "string",
                 "l_comment": "string"},
}
ROWS_SF1: dict[str, int] = {"region": 5, "nation": 25, "supplier": 10_000, "customer": 150_000, "part": 200_000,
                            "partsupp": 800_000, "orders": 1_500_000, "lineitem": 6_001_215}


def parquet_readable(paths: Iterable[Path]) -> bool:
    """True when every Parquet file exists and has a readable footer (a complete cache)."""
    try:
        for path in paths:
            pq.read_metadata(path)
    except (OSError, ValueError):
        return False
    return True


def progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def cached_directory(target: Path, build: Callable[[Path], None], is_complete: Callable[[Path], bool]) -> Path:
    """``target`` if it is complete, else built by ``build(staging)`` and renamed into place."""
    if is_complete(target):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        started = time.monotonic()
        build(staging)
        staging.chmod(0o755)  # mkdtemp makes it private; the cache is shared data
        if is_complete(target):  # a concurrent run finished first; keep its files
            return target
        if target.exists():  # an incomplete leftover, e.g. a table deleted by hand
            shutil.rmtree(target)
        staging.rename(target)
        progress(f"wrote {target} in {time.monotonic() - started:.1f} s")
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


def scale_label(sf: float) -> str:
    """Spell a scale factor the way directory names and tpchgen-cli take it (1, 0.01, 10)."""
    return f"{sf:g}"


def table_paths(directory: Path) -> dict[str, Path]:
    """The Parquet file of each table in a directory written by :func:`generate`."""
    return {table: directory / f"{table}.parquet" for table in TABLES}


def generate(sf: float, root: Path = Path("data")) -> Path:
    """Generate TPC-H at scale factor ``sf`` under ``root`` and return its directory.

    The result is cached: a directory that already holds all eight tables is
    returned at once. Tables are written into a temporary sibling directory
    that is renamed into place only when complete, so an interrupted run never
    leaves a half-written cache behind.
    """
    if sf <= 0:
        raise ValueError(f"scale factor must be positive, got {sf}")
    target = Path(root) / f"tpch-sf{scale_label(sf)}"

    def build(staging: Path) -> None:
        executable = tpchgen_executable()
        progress(f"generating TPC-H SF {scale_label(sf)} with {executable} ...")
        _run_tpchgen(executable, sf, staging)
        for table, path in table_paths(staging).items():
            progress(f"{table}: {pq.read_metadata(path).num_rows:,} rows")

    return cached_directory(target, build, _is_complete)


def is_generated(sf: float, root: Path = Path("data")) -> bool:
    """Whether ``generate(sf, root)`` would find its data already there."""
    return _is_complete(Path(root) / f"tpch-sf{scale_label(sf)}")


def _is_complete(directory: Path) -> bool:
    return parquet_readable(table_paths(directory).values())


def tpchgen_executable() -> Path:
    """tpchgen-cli, the TPC-H generator (``generator_executable``)."""
    return generator_executable("tpchgen-cli")


def generator_executable(name: str) -> Path:
    """A data generator installed from PyPI (tpchgen-cli, tpcgen-cli): in this interpreter's
    bin directory first, then on PATH."""
    beside_python = Path(sys.executable).parent / name
    if beside_python.is_file():
        return beside_python
    on_path = shutil.which(name)
    if on_path:
        return Path(on_path)
    raise FileNotFoundError(f"{name} not found next to {sys.executable} or on PATH; "
                            f"install it with: pip install {name}")


def _run_tpchgen(executable: Path, sf: float, output_dir: Path) -> None:
    """Write every table as ``output_dir/<table>.parquet`` in one run (each run of the
    generator pays its start-up again)."""
    command = [
        str(executable), "parquet",
        "--scale-factor", scale_label(sf),
        "--output-dir", str(output_dir),
        "--no-progress", "--quiet",
    ]
    finished = subprocess.run(command, capture_output=True, text=True)
    if finished.returncode != 0 or not _is_complete(output_dir):
        raise RuntimeError(
            f"tpchgen-cli failed (exit {finished.returncode}): "
            f"{finished.stderr.strip() or finished.stdout.strip()}"
        )


def register_tpch(
    session,
    sf: float = 0.01,
    root: Path = Path("data"),
    progress: Callable[[str], None] = lambda _: None,
    in_place: bool = False,
) -> Path:
    """Generate (or reuse) TPC-H at ``sf`` and register its eight tables in ``session``'s catalog.

    Tables are copied with ids in chronological order (``--order-by``, which clusters
    lineage), or with ``in_place`` registered where they are (ids in file order; no copy,
    which is what makes SF 10 fit one small machine's disk and time).  Registration is
    idempotent, so a second call costs only a look at the files.
    """
    directory = generate(sf, root)
    paths = table_paths(directory)
    for table in TABLES:
        plan = REGISTRATION[table]
        order_by = None if in_place else list(plan.order_by)
        progress(f"registering {table} " + ("in place" if in_place else f"(ids ordered by {', '.join(plan.order_by)})"))
        session.register(table, paths[table], key=list(plan.key), order_by=order_by)
    return directory
