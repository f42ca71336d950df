"""Reason-capable UDFs cost nothing without ``--reasons`` (docs/reasons.md, "Reasons of ML and Python
UDFs"): the loan example's model as a plain pandas UDF and as a reason-capable UDF, in the same
query over the same generated applicants, interleaved in one session.

    python -m tpch.reasons_bench [--rows 1000000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path

from dltrace import LineageSession
from dltrace.examples import loans
from tpch.harness import log

QUERY = "select {udf}(income, debt, amount) as decision, count(*) as n from applicants group by 1"


def main(argv: list[str] | None = None) -> int:
    from pyspark.sql.functions import PandasUDFType, pandas_udf

    parser = argparse.ArgumentParser(prog="python -m tpch.reasons_bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    scratch = Path(tempfile.mkdtemp(prefix="dltrace-reasons-bench-"))
    session = LineageSession(scratch / "catalog")
    log(f"generating and registering {args.rows:,} applicants")
    session.register("applicants", loans.generate(scratch / "data", rows=args.rows), key=["applicant_id"],
                     order_by=["applicant_id"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        session.spark.udf.register("approve_plain", pandas_udf(loans.approve, "string", PandasUDFType.SCALAR))
    session.register_udf("approve_reasoned", loans.approve, reasons=loans.approve_reasons)
    times: dict[str, list[float]] = {"plain pandas UDF": [], "reason-capable UDF": []}
    for round_number in range(args.repeat + 1):
        for label, udf in (("plain pandas UDF", "approve_plain"), ("reason-capable UDF", "approve_reasoned")):
            for lineage in (False, True):
                start = time.perf_counter()
                session.sql(QUERY.format(udf=udf), lineage=lineage).collect()
                seconds = time.perf_counter() - start
                if round_number and lineage:
                    times[label].append(seconds)
                log(f"round {round_number}: {label}, {'with' if lineage else 'without'} lineage: {seconds:.2f} s")
    print(f"{args.rows:,} applicants, the query with lineage, {args.repeat} rounds after a warm-up\n")
    print("| UDF | median s |")
    print("|---|---:|")
    for label, values in times.items():
        print(f"| {label} | {statistics.median(values):.2f} |")
    ratio = statistics.median(times["reason-capable UDF"]) / statistics.median(times["plain pandas UDF"])
    print(f"\nreason-capable / plain: {ratio:.3f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
