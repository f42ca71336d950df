"""The paper's eight Walmart queries (appendix B) as Spark SQL text.

Q1-Q4 are SPJ queries with 0-3 joins, Q5-Q8 aggregate with 0, 1, 1 and 2
joins. The text follows the paper; only obvious typos are fixed (noted at the
top of each file). The files are package data so that they ship with the wheel.
"""

from importlib import resources

QUERIES = [f"q{number}" for number in range(1, 9)]


def load(name: str) -> str:
    """Return the SQL text of Walmart query ``name`` ("q1".."q8")."""
    if name not in QUERIES:
        raise ValueError(f"unknown Walmart query {name!r}; expected one of {QUERIES}")
    return resources.files(__package__).joinpath(f"{name}.sql").read_text(encoding="utf-8")
