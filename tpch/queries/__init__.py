"""The 22 TPC-H queries and the paper's SPJ queries S1-S8, as Spark SQL text.

The queries are package data (``*.sql`` next to this module) so that they ship
with the wheel and can be read by any tool, not only through Python. TPC-H
queries use the spec's validation parameters and carry no ``LIMIT``: the paper's
Table 7 counts result rows of the unlimited queries.
"""

from importlib import resources

TPCH = [f"q{number}" for number in range(1, 23)]
SPJ = [f"s{number}" for number in range(1, 9)]


def load(name: str) -> str:
    """Return the SQL text of query ``name`` ("q1".."q22", "s1".."s8")."""
    if name not in TPCH and name not in SPJ:
        raise ValueError(f"unknown TPC-H query {name!r}; expected one of {TPCH + SPJ}")
    return resources.files(__package__).joinpath(f"{name}.sql").read_text(encoding="utf-8")
