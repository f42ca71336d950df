"""DuckDB, the independent engine the test oracles and the checks run on.

pyproject.toml pins DuckDB below 2: 2.0.0 dies with an internal error ("dict-surviving
join ... build pipeline is not single-source") on some TPC-H join shapes (S6, S8 at SF
0.02).  DuckDB 1.x (1.3 to 1.5 checked) in turn answers a correlated EXISTS with an
equality and two non-equality conditions wrongly, with no rows
(``EXISTS (SELECT 1 FROM b WHERE b.k = a.k AND b.t <> a.t AND b.n > a.n)``), when its
deliminator optimizer rewrites the delim join; without that optimizer the answer is right.
"""

from __future__ import annotations


def connect():
    """A DuckDB connection configured to give right answers (see above)."""
    import duckdb

    db = duckdb.connect()
    db.execute("SET disabled_optimizers = 'deliminator'")
    return db
