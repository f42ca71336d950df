"""Golden SQL: the lineage SQL of the 22 TPC-H queries and S1-S8, under set and bdd, control
and data, byte for byte as ``tests/fixtures/golden/<repr>-<semantics>/<query>.sql`` holds it.

It guards restructurings of the rewriter: a change of the generated SQL must be deliberate
(``python -m tests.test_golden_sql`` writes the current SQL; read the diff, and explain
every change).  The queries are rewritten as ``LineageSession.lineage_expression`` does for a
catalog of TPC-H at SF 1 (codes in registration order, the SF 1 row counts and the
registered keys), from a schema dict: no catalog, no data, no Spark.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from dltrace import rewriter
from dltrace.datasets import REGISTRATION, ROWS_SF1, SCHEMA, TABLES
from tests.sql_fixtures import FIXTURES
from tpch.queries import SPJ, TPCH, load

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = FIXTURES / "golden"
MODES = [(representation, semantics) for representation in ("set", "bdd") for semantics in ("control", "data")]
CODES = {table: code for code, table in enumerate(TABLES, 1)}  # as registration in TABLES order numbers them
KEYS = {table: list(plan.key) for table, plan in REGISTRATION.items()}


def lineage_sql(name: str, representation: str, semantics: str) -> str:
    expression = rewriter.rewrite(rewriter.parse(load(name)), SCHEMA, CODES, representation, semantics,
                                  table_rows=dict(ROWS_SF1), table_keys=KEYS)
    return expression.sql(dialect="spark") + "\n"


def golden_path(name: str, representation: str, semantics: str):
    return GOLDEN / f"{representation}-{semantics}" / f"{name}.sql"


@pytest.mark.parametrize("representation,semantics", MODES)
@pytest.mark.parametrize("name", TPCH + SPJ)
def test_golden_sql(name, representation, semantics):
    path = golden_path(name, representation, semantics)
    assert path.exists(), f"no golden SQL {path}: run python -m tests.test_golden_sql"
    assert lineage_sql(name, representation, semantics) == path.read_text(encoding="utf-8")


def test_schema_is_what_tpchgen_writes():
    """The schema dict above is the generated Parquet's, as registration reads it."""
    pq = pytest.importorskip("pyarrow.parquet")
    from dltrace.datasets import generate, table_paths

    arrow_types = {
        "int64": "bigint",
        "int32": "int",
        "date32[day]": "date",
        "string": "string",
        "string_view": "string",
    }
    paths = table_paths(generate(0.01, ROOT / "data"))
    for table in TABLES:
        columns = {f.name: arrow_types.get(str(f.type)) or str(f.type).replace("decimal128", "decimal").replace(" ", "")
                   for f in pq.read_schema(paths[table])}
        assert columns == SCHEMA[table], table


def write() -> None:
    for representation, semantics in MODES:
        for name in TPCH + SPJ:
            path = golden_path(name, representation, semantics)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(lineage_sql(name, representation, semantics), encoding="utf-8")
    print(f"wrote {len(MODES) * len(TPCH + SPJ)} files under {GOLDEN}", file=sys.stderr)


if __name__ == "__main__":
    write()
