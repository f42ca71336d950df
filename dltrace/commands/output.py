"""A query's rows with lineage on stdout, as ``--format`` says (``sql`` and ``run``), and the
first rows of an answer that is a Spark DataFrame or a pyarrow Table (``impact``, ``explain``)."""

from __future__ import annotations

import argparse
import sys

from dltrace.formatting import (
    DL,
    DL_VALUES,
    check_distinct_columns,
    row_dicts,
    table_footer,
    write_csv,
    write_json,
    write_table,
)
from dltrace.granularity import GranuleDecoder
from dltrace.result_pages import records


def print_rows(session, frame, args: argparse.Namespace, limit: int | None, granules: GranuleDecoder | None) -> None:
    """A query's rows with lineage on stdout, as ``--format`` says."""
    with session.executing(frame):
        write_rows(session, frame, args, limit, granules)


def write_rows(session, frame, args: argparse.Namespace, limit: int | None, granules: GranuleDecoder | None) -> None:
    """``print_rows``' work, every Spark action of it inside ``session.executing``."""
    columns = frame.columns
    check_distinct_columns(columns)
    if args.format == "table":
        rows = table_rows(session, frame, limit + 1)
        write_table(rows[:limit], columns, session.catalog, sys.stdout, granules.describe if granules else None)
        print(table_footer(min(len(rows), limit), frame.count() if len(rows) > limit else None))
        return
    rows = row_dicts((frame.limit(limit) if limit is not None else frame).toLocalIterator())
    if granules:
        rows, columns = granules.with_values(rows), [*columns, DL_VALUES]
    if args.format == "json":
        write_json(rows, sys.stdout)
    else:
        write_csv(rows, columns, sys.stdout)


def table_rows(session, frame, limit: int) -> list[dict]:
    """The first ``limit`` rows for the table format.  Sets the rows share are read once,
    not once per row, and joined to each row's own ids here (TPC-H Q11: each row's DL is a
    shared set of tens of thousands of ids at SF 1)."""
    import numpy as np

    own, sets = session.shared_lineage(frame)
    rows = list(row_dicts(own.limit(limit).collect()))
    if sets:
        shared = np.unique(
            np.concatenate([s.toArrow().column(0)[0].values.to_numpy(zero_copy_only=False) for s in sets])
        )
        for row in rows:
            row[DL] = np.union1d(np.asarray(row[DL], dtype=np.int64), shared)
    return rows


def first_rows(answer, limit: int | None) -> list[dict]:
    """The first ``limit`` + 1 rows (all without a limit) as dicts, ``DL`` a list of
    ids: from a Spark DataFrame, or from a pyarrow Table read from the saved files."""
    return list(row_dicts(records(answer, 0, None if limit is None else limit + 1)))
