"""Augmented lineage (dltrace/reasons.py): the reasons of reason-capable UDFs beside the source
rows, derived lazily on the rows of one output row's lineage.

Oracles: the reasoning mode called directly on the listed inputs, and DuckDB reading the
catalog's Parquet for the rows of the lineage (no dltrace code).
"""

from __future__ import annotations

import sys
import textwrap

import pandas as pd
import pytest

from dltrace import LineageSession
from dltrace.errors import BadInput, DltraceError
from dltrace.examples import loans
from dltrace.results import DL
from tests.test_cli import cli, one_line
from tpch.duck import connect

COUNTS = (
    "select approve(income, debt, amount) as decision, count(*) as applicants from applicants group by 1 order by 1"
)


@pytest.fixture(scope="module")
def lending(spark, tmp_path_factory) -> LineageSession:
    """The README's loan example in a catalog of its own: applicants, the UDF kept in the
    catalog, and the decision counts saved."""
    directory = tmp_path_factory.mktemp("loans")
    session = LineageSession(directory / "catalog", spark=spark)
    loans.setup(session, directory / "data")
    session.save(session.sql(COUNTS), "decisions")
    return session


def lineage_rows(session: LineageSession, result: str, row: int) -> pd.DataFrame:
    """DuckDB: the applicants in the row's DL, read from the catalog's Parquet."""
    ids = session.result(result).where(f"_row = {row}").first()[DL]
    path = session.catalog.data_path("applicants")
    return (
        connect()
        .execute(
            f"SELECT _dl_id, income, debt, amount FROM read_parquet('{path}/*.parquet') "
            f"WHERE _dl_id IN ({', '.join(map(str, ids))}) ORDER BY _dl_id"
        )
        .df()
    )


@pytest.mark.parametrize("row", [0, 1])
def test_reasons_are_the_reasoning_mode_on_exactly_the_rows_of_the_lineage(lending, row):
    (found,) = lending.explain_reasons("decisions", row)
    listed = found.rows
    expected = lineage_rows(lending, "decisions", row)
    assert found.invocations == len(listed) == len(expected) > 0
    assert listed["applicants._dl_id"].tolist() == expected["_dl_id"].tolist()
    inputs = [listed[f"applicants.{c}"] for c in ("income", "debt", "amount")]
    assert [s.tolist() for s in inputs] == [expected[c].tolist() for c in ("income", "debt", "amount")]
    direct = loans.approve_reasons(*(s.reset_index(drop=True) for s in inputs))
    assert listed["value"].tolist() == direct["value"].tolist()
    assert listed["reason"].tolist() == direct["reason"].tolist()
    decision = lending.result("decisions").where(f"_row = {row}").first().decision
    assert set(listed["value"]) == {decision}  # every invocation behind the count gave its decision


def test_reasons_rerun_the_udf_on_the_lineage_only(spark, tmp_path):
    calls: list[int] = []

    def counted_reasons(income, debt, amount):
        calls.append(len(income))
        return loans.approve_reasons(income, debt, amount)

    session = LineageSession(tmp_path / "catalog", spark=spark)
    session.register("applicants", loans.generate(tmp_path / "data"), key=["applicant_id"], order_by=["applicant_id"])
    session.register_udf("approve_counted", loans.approve, reasons=counted_reasons)
    session.save(
        session.sql(
            "select approve_counted(income, debt, amount) as decision, count(*) as n "
            "from applicants where income > 60000 group by 1 order by 1"
        ),
        "rich",
    )
    (found,) = session.explain_reasons("rich", 0)
    lineage = len(session.result("rich").where("_row = 0").first()[DL])
    assert sum(calls) == found.invocations == lineage < loans.APPLICANTS


def test_reasons_through_a_saved_pipeline_step(lending):
    lending.run_script(
        "create or replace table scored as "
        "select applicant_id, approve(income, debt, amount) as decision from applicants;\n"
        "create or replace table scored_counts as select decision, count(*) as n from scored group by decision"
    )
    row = next(r._row for r in lending.result("scored_counts").collect() if r.decision == "Reject")
    (found,) = lending.explain_reasons("scored_counts", row)
    assert found.rows["applicants._dl_id"].tolist() == lineage_rows(lending, "scored_counts", row)["_dl_id"].tolist()
    assert set(found.rows["value"]) == {"Reject"}


def test_explain_reasons_on_the_command_line(capsys, lending):
    catalog = str(lending.catalog.directory)
    code, out, err = cli(
        capsys, "explain", "--result", "decisions", "--row", "1", "--reasons", "--catalog", catalog, "--limit", "2"
    )
    assert code == 0, err
    assert "reasons of approve(applicants.income, applicants.debt, applicants.amount):" in out
    assert "invocations, on the rows of row 1's lineage, re-run in reasoning mode" in out


@pytest.fixture()
def bad_udfs(tmp_path, monkeypatch):
    """A module of UDFs with a missing, a misshapen and a failing reasoning mode."""
    (tmp_path / "bad_reason_udfs.py").write_text(
        textwrap.dedent("""
        import pandas as pd

        def score(x):
            return x * 2

        def wrong_shape(x):
            return pd.Series(x * 2)

        def fails(x):
            raise ValueError("model file is corrupt")
    """)
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "bad_reason_udfs"
    sys.modules.pop("bad_reason_udfs", None)


@pytest.mark.parametrize(
    "reasons, code, message",
    [
        (None, 2, "UDF scorer has no reasoning mode: register it with reasons="),
        (
            "wrong_shape",
            2,
            "the reasoning mode of UDF scorer must return a pandas DataFrame with columns 'value' and 'reason'",
        ),
        ("fails", 1, "the reasoning mode of UDF scorer failed: ValueError: model file is corrupt"),
    ],
)
def test_bad_reasoning_modes_are_one_line(capsys, spark, tmp_path, bad_udfs, reasons, code, message):
    session = LineageSession(tmp_path / "catalog", spark=spark)
    session.register(
        "applicants", loans.generate(tmp_path / "data", rows=50), key=["applicant_id"], order_by=["applicant_id"]
    )
    session.register_udf(
        "scorer", f"{bad_udfs}:score", reasons=f"{bad_udfs}:{reasons}" if reasons else None, returns="double"
    )
    session.save(session.sql("select sum(scorer(income)) as total from applicants"), "totals")
    status, out, err = cli(
        capsys, "explain", "--result", "totals", "--row", "0", "--reasons", "--catalog", str(tmp_path / "catalog")
    )
    assert status == code and message in one_line(err)
    with pytest.raises(BadInput if code == 2 else DltraceError, match="scorer"):
        session.explain_reasons("totals", 0)


def test_registering_a_udf_that_cannot_be_loaded_is_one_line(spark, tmp_path):
    session = LineageSession(tmp_path / "catalog", spark=spark)
    with pytest.raises(BadInput, match="cannot load UDF nope no_such_module:f"):
        session.register_udf("nope", "no_such_module:f")
    with pytest.raises(BadInput, match="module:attribute"):
        session.register_udf("nope", "not a spec")
