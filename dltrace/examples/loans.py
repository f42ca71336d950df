"""A loan-approval example of augmented lineage (README and docs/reasons.md).

``applicants`` is generated (seeded), and ``approve`` is a logistic-regression model trained
with numpy when this module is imported, on a seeded history of past loans, so every process
gets the same model without a download or a pickle.  Its reasoning mode gives, per applicant,
each attribute's contribution to the log-odds of default (weight × standardized value): for a
linear model these are the exact Shapley values of the features.

    python -m dltrace.examples.loans [--catalog DIR] [--data DIR]

generates the table, registers it and the UDF (kept in the catalog as module:attribute),
and prints the commands to try.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

FEATURES = ("income", "debt", "amount")
APPLICANTS = 2000
UDF = "approve"


def _people(rows: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    income = rng.lognormal(mean=10.6, sigma=0.45, size=rows).round(-2)
    debt = (income * rng.beta(2, 5, size=rows) * 1.5).round(-1)
    amount = (income * rng.uniform(0.1, 2.5, size=rows)).round(-2)
    return pd.DataFrame({"income": income, "debt": debt, "amount": amount})


def _train() -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """``(means, scales, weights, bias)`` of a logistic regression of default on a seeded
    history: default grows with debt and amount against income."""
    history = _people(5000, seed=1)
    rng = np.random.default_rng(2)
    risk = 3.0 * history.debt / history.income + 1.2 * history.amount / history.income - 3.5
    defaulted = (rng.random(len(history)) < 1 / (1 + np.exp(-risk))).astype(float)
    x = history[list(FEATURES)].to_numpy()
    means, scales = x.mean(axis=0), x.std(axis=0)
    z = (x - means) / scales
    weights, bias = np.zeros(z.shape[1]), 0.0
    for _ in range(500):  # plain gradient descent: a few milliseconds
        p = 1 / (1 + np.exp(-(z @ weights + bias)))
        weights -= 0.5 * z.T @ (p - defaulted) / len(z)
        bias -= 0.5 * float(np.mean(p - defaulted))
    return means, scales, weights, bias


MEANS, SCALES, WEIGHTS, BIAS = _train()


def _contributions(income: pd.Series, debt: pd.Series, amount: pd.Series) -> np.ndarray:
    x = np.column_stack([income.to_numpy(float), debt.to_numpy(float), amount.to_numpy(float)])
    return (x - MEANS) / SCALES * WEIGHTS


def approve(income: pd.Series, debt: pd.Series, amount: pd.Series) -> pd.Series:
    """The model's decision per applicant: Reject when the odds of default are above even."""
    log_odds = _contributions(income, debt, amount).sum(axis=1) + BIAS
    return pd.Series(np.where(log_odds > 0, "Reject", "Approve"))


def approve_reasons(income: pd.Series, debt: pd.Series, amount: pd.Series) -> pd.DataFrame:
    """The decision and its reason: each attribute's contribution to the log-odds of default
    (positive pushes towards Reject), rounded to two decimals."""
    contributions = _contributions(income, debt, amount)
    return pd.DataFrame({
        "value": approve(income, debt, amount),
        "reason": [{f: round(float(c), 2) for f, c in zip(FEATURES, row)} for row in contributions],
    })


def generate(directory: Path, rows: int = APPLICANTS) -> Path:
    """``directory/applicants.parquet``: id, name, income, debt, amount (seeded)."""
    directory.mkdir(parents=True, exist_ok=True)
    people = _people(rows, seed=7)
    people.insert(0, "name", [f"applicant {i}" for i in range(rows)])
    people.insert(0, "applicant_id", np.arange(rows))
    path = directory / "applicants.parquet"
    people.to_parquet(path, index=False)
    return path


def setup(session, data: Path = Path("data") / "loans") -> None:
    """Generate the applicants, register them (ids in applicant order) and the UDF with its
    reasoning mode, kept in the catalog so that every later ``dltrace`` command has it."""
    session.register("applicants", generate(data), key=["applicant_id"], order_by=["applicant_id"])
    module = "dltrace.examples.loans"  # not __name__: "__main__" under python -m
    session.register_udf(UDF, f"{module}:approve", reasons=f"{module}:approve_reasons", returns="string")


def main(argv: list[str] | None = None) -> int:
    from dltrace import LineageSession

    parser = argparse.ArgumentParser(prog="python -m dltrace.examples.loans", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--catalog", help="catalog directory (default .dltrace)")
    parser.add_argument("--data", default="data/loans", help="where to write applicants.parquet")
    args = parser.parse_args(argv)
    setup(LineageSession(args.catalog), Path(args.data))
    print(f"registered table applicants ({APPLICANTS} rows) and UDF {UDF} with its reasoning mode; try:\n"
          f"  dltrace sql \"select approve(income, debt, amount) as decision, count(*) as applicants "
          f"from applicants group by 1 order by 1\" --save decisions\n"
          f"  dltrace explain --result decisions --row 1 --reasons")
    return 0


if __name__ == "__main__":
    sys.exit(main())
