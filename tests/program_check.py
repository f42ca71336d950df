"""Generated DataFrame programs run plain and under ``dltrace run``, and compared (issue 65).

Plain is the script as ``spark-submit`` runs it: classic Spark in this process, its builder
returning the classic session.  Traced is ``run_job`` on Spark Connect, every read a source
and every write a saved result.  Both run the same programs in batches (one script of many
programs, each after a marker line ``print('@@ N')``; the sources are read and registered once
per script): a program that fails ends its batch, which then goes on from the next program,
and its line is counted from its own start, as in the program alone
(``python -m tests.program_generator --seed N``).  For each program: the Parquet rows written
(a bag; doubles to 12 significant digits, since a traced plan may add them in another order),
the files' schema with nullability, the printed output, and the error class and line.
"""

from __future__ import annotations

import contextlib
import datetime
import io
import json
import math
import os
import re
import runpy
import traceback
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

from tests.program_generator import PREAMBLE, Program

BATCH = 25  # programs per script: one read of the sources, one registration check


@dataclass
class Outcome:
    """What one program did: printed text, and its error (class, line) or its written files."""

    printed: str = ""
    error: str | None = None
    line: int | None = None
    rows: Counter | None = None
    schema: list | None = None


def write_sources(directory: Path) -> Path:
    """``events`` (Parquet: nested structs, arrays, NULLs, malformed numbers in ``code``) and
    ``users.json`` (its schema inferred), a few dozen rows: the programs' inputs."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    users = ["ann", "bob", "cy", "dee", None]
    rows = []
    for i in range(24):
        rows.append({
            "id": i, "user": users[i % 5], "qty": None if i % 7 == 3 else i % 6, "amount": None if i % 9 == 4 else
            (i * 13 % 17) / 4 - 1, "price": None if i % 11 == 5 else Decimal(f"{i * 37 % 100}.{i % 10}5"),
            "day": datetime.date(2024, 1 + i % 3, 1 + i * 5 % 28),
            "ts": datetime.datetime(2024, 1, 1 + i % 5, i % 24, i * 7 % 60, tzinfo=datetime.timezone.utc),
            "flag": None if i % 8 == 2 else i % 2 == 0, "code": [str(i), f"x{i}", None, f" {i}", "1e3"][i % 5]
            if i % 4 else str(i * 3), "tags": None if i % 10 == 9 else ["a", "b", "cy", "dd"][: i % 5],
            "items": [{"sku": "abc"[(i + k) % 3], "qty": None if k == 2 else i + k} for k in range(i % 4)],
            "info": None if i % 12 == 7 else {"city": ["nice", "lyon", None][i % 3], "zip": 1000 + i,
                                                "geo": None if i % 6 == 1 else {"lat": i / 2, "lon": -i / 4}}})
    item = pa.struct([("sku", pa.string()), ("qty", pa.int32())])
    schema = pa.schema([
        pa.field("id", pa.int64(), nullable=False), ("user", pa.string()), ("qty", pa.int32()),
        ("amount", pa.float64()),
        ("price", pa.decimal128(10, 2)), ("day", pa.date32()), ("ts", pa.timestamp("us", tz="UTC")),
        ("flag", pa.bool_()), ("code", pa.string()), ("tags", pa.list_(pa.string())), ("items", pa.list_(item)),
        ("info", pa.struct([("city", pa.string()), ("zip", pa.int32()),
                            ("geo", pa.struct([("lat", pa.float64()), ("lon", pa.float64())]))]))])
    (directory / "events").mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows, schema), directory / "events" / "part-0.parquet")
    people = [{"user": u, "age": 20 + 7 * n if n != 2 else None, "country": ["fr", "de", None][n % 3],
               "prefs": {"color": ["red", "blue"][n % 2], "langs": ["fr", "en"][: n % 3]}}
              for n, u in enumerate(["ann", "bob", "cy", "eve", "zed", "ann2"])]
    (directory / "users.json").write_text("".join(json.dumps(p) + "\n" for p in people))
    return directory


def batch_script(programs: list[Program]) -> tuple[str, list[int]]:
    """One script of ``programs`` and the line each program's body starts at."""
    lines, starts = list(PREAMBLE), []
    for program in programs:
        lines.append(f"print('@@ {program.seed}')")
        starts.append(len(lines) + 1)
        lines += program.body_for(f"p{program.seed}")
    return "\n".join(lines) + "\n", starts


def run_batches(programs: list[Program], script: Path, run: Callable[[Path], None],
                failure: Callable[[BaseException], tuple[str, int]]) -> dict[int, Outcome]:
    """Each program's outcome (printed text and error; files are read afterwards), by seed."""
    outcomes: dict[int, Outcome] = {}
    waiting = list(programs)
    while waiting:
        batch = waiting[:BATCH]
        text, starts = batch_script(batch)
        script.write_text(text)
        printed = io.StringIO()
        failed = None
        with contextlib.redirect_stdout(printed):
            try:
                run(script)
            except BaseException as error:  # noqa: BLE001 - a program's failure is an outcome to compare
                if isinstance(error, KeyboardInterrupt):
                    raise
                failed = failure(error)
        texts = split_printed(printed.getvalue())
        done = len(batch)
        if failed is not None:
            kind, line = failed
            index = max([i for i, start in enumerate(starts) if start <= line] or [0])
            done = index + 1
            outcomes[batch[index].seed] = Outcome(error=kind, line=line - starts[index] + len(PREAMBLE) + 1)
        for program in batch[:done]:
            outcome = outcomes.setdefault(program.seed, Outcome())
            outcome.printed = texts.get(program.seed, "")
        waiting = waiting[done:]
    return outcomes


def split_printed(text: str) -> dict[int, str]:
    found: dict[int, str] = {}
    for part in text.split("@@ ")[1:]:
        seed, _, rest = part.partition("\n")
        found[int(seed)] = rest
    return found


SPARK_CONDITION = re.compile(r"\[([A-Z][A-Z0-9_]*(?:\.[A-Z0-9_]+)*)\]")
STAGES_FAILED = "STAGE_MATERIALIZATION_MULTIPLE_FAILURES"


def plain_failure(script: Path) -> Callable[[BaseException], tuple[str, int]]:
    def failure(error: BaseException) -> tuple[str, int]:
        from pyspark.errors import PySparkException

        kind = error.getCondition() if isinstance(error, PySparkException) else None
        named = SPARK_CONDITION.findall(str(error))
        if kind is None and type(error).__name__ == "Py4JJavaError":  # a task's failure classic PySpark
            kind = named[0] if named else None  # leaves unconverted: its condition, as dltrace's line names it
        if kind == STAGES_FAILED and len(named) > 1:  # several stages failed at once, as adaptive execution
            kind = named[1]  # may find them or not: the first failure, as dltrace names it (errors.py)
        frames = [f.lineno for f in traceback.extract_tb(error.__traceback__) if Path(f.filename) == script]
        return kind or type(error).__name__, frames[-1] if frames else 0
    return failure


def traced_failure(error: BaseException) -> tuple[str, int]:
    """(class, line) of dltrace's one-line JobError: Spark's ``[CLASS]``, else the Python
    exception's name, else the whole text (a refusal)."""
    text = str(error)
    found = re.search(r" line (\d+): (.*)", text)
    if not found:
        return f"{type(error).__name__}: {text[:200]}", 0
    line, said = int(found.group(1)), found.group(2)
    spark = SPARK_CONDITION.search(said)
    if spark:
        return spark.group(1), line
    python = re.match(r"([A-Za-z]*(?:Error|Exception)):", said)
    return (python.group(1) if python else said[:200]), line


@contextlib.contextmanager
def api(connect: bool) -> Iterator[None]:
    """This process on Spark Connect's API (traced) or classic Spark's (plain)."""
    from dltrace.spark import CONNECT_API

    earlier = {key: os.environ.get(key) for key in CONNECT_API}
    for key, value in CONNECT_API.items():
        if connect:
            os.environ[key] = value
        else:
            os.environ.pop(key, None)
    try:
        yield
    finally:
        for key, value in earlier.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def run_plain(classic, programs: list[Program], data: Path, work: Path) -> dict[int, Outcome]:
    """The programs as ``spark-submit`` runs them, on the classic session ``classic``."""
    from dltrace.dataframe.jobs import script_argv

    script = work / "plain.py"
    out = work / "plain"

    def run(path: Path) -> None:
        with api(connect=False), script_argv([str(path), str(data), str(out)]):
            runpy.run_path(str(path), run_name="__main__")

    return with_files(run_batches(programs, script, run, plain_failure(script)), out)


def run_traced(lineage, programs: list[Program], data: Path, work: Path) -> dict[int, Outcome]:
    """The programs under ``dltrace run`` (``run_job``) with catalog ``lineage``."""
    from dltrace.dataframe import jobs

    script = work / "traced.py"
    out = work / "traced"

    def run(path: Path) -> None:
        with api(connect=True):
            jobs.run_job(lineage, str(path), "control", argv=[str(data), str(out)])

    return with_files(run_batches(programs, script, run, traced_failure), out)


def with_files(outcomes: dict[int, Outcome], out: Path) -> dict[int, Outcome]:
    import pyarrow.dataset as ds

    for seed, outcome in outcomes.items():
        written = out / f"p{seed}"
        if outcome.error is None and written.exists():
            dataset = ds.dataset(written, format="parquet")
            outcome.schema = [(f.name, str(f.type), f.nullable) for f in dataset.schema]
            outcome.rows = Counter(repr(normal(row)) for row in dataset.to_table().to_pylist())
    return outcomes


def normal(value):
    """A written value compared across runs: doubles to 12 significant digits, NaN by name."""
    if isinstance(value, float):
        return "nan" if math.isnan(value) else float(f"{value:.12g}")
    if isinstance(value, dict):
        return tuple((k, normal(v)) for k, v in value.items())
    if isinstance(value, list):
        return [normal(v) for v in value]
    return value


def differences(plain: dict[int, Outcome], traced: dict[int, Outcome]) -> dict[int, str]:
    """Each program whose traced run differs from its plain run: what differs."""
    found = {}
    for seed, was in plain.items():
        got = traced.get(seed, Outcome(error="not run"))
        if was.error != got.error:
            found[seed] = f"error: plain {was.error} (line {was.line}), traced {got.error} (line {got.line})"
        elif not same_schema(was.schema, got.schema):
            found[seed] = f"schema: plain {was.schema}, traced {got.schema}"
        elif was.rows != got.rows:
            extra, missing = got.rows - was.rows, was.rows - got.rows
            found[seed] = f"rows: traced has {list(extra)[:3]} more, {list(missing)[:3]} fewer"
        elif was.printed != got.printed:
            found[seed] = f"printed: plain {was.printed[:400]!r}, traced {got.printed[:400]!r}"
    return found


def same_schema(plain: list | None, traced: list | None) -> bool:
    """Names, types and nullability equal, nested fields' and elements' included: dltrace
    writes with the nullability of the job's optimized plan, as plain Spark does."""
    return plain == traced


def line_differences(plain: dict[int, Outcome], traced: dict[int, Outcome]) -> dict[int, str]:
    """Programs failing alike whose error is reported at another line (issue 65, item 3)."""
    return {seed: f"{was.error}: plain line {was.line}, traced line {traced[seed].line}"
            for seed, was in plain.items() if was.error and seed in traced
            and traced[seed].error == was.error and traced[seed].line != was.line}
