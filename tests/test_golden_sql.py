"""Golden SQL: the lineage SQL of the 22 TPC-H queries and S1-S8, under set and bdd, control
and data, byte for byte as ``tests/fixtures/golden/<repr>-<semantics>/<query>.sql`` holds it.

It guards restructurings of the rewriter: a change of the generated SQL must be deliberate
(``python -m tests.test_golden_sql`` writes the current SQL; read the diff, and explain
every change).  The queries are rewritten by the function ``LineageSession.lineage_expression``
calls, ``engine.rewrite_over_catalog``, for a catalog of TPC-H at SF 1 (codes in registration
order, the SF 1 row counts and the registered keys), from a schema dict: no catalog, no
data, no Spark.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from dltrace import rewriter
from dltrace.datasets import REGISTRATION, ROWS_SF1, SCHEMA, TABLES
from dltrace.engine import rewrite_over_catalog
from tests.sql_fixtures import FIXTURES
from tpch.queries import SPJ, TPCH, load

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = FIXTURES / "golden"
MODES = [(representation, semantics) for representation in ("set", "bdd") for semantics in ("control", "data")]


@dataclass(frozen=True)
class Table:
    """What the catalog would record of a registered TPC-H table at SF 1."""

    code: int
    rows: int
    key: list[str] | None


# codes as registration in TABLES order numbers them
TPCH_SF1 = {table: Table(code, ROWS_SF1[table], list(REGISTRATION[table].key)) for code, table in enumerate(TABLES, 1)}


def lineage_sql(name: str, representation: str, semantics: str) -> str:
    expression = rewrite_over_catalog(rewriter.parse(load(name)), TPCH_SF1, SCHEMA, {}, semantics, representation)
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
