"""The table of docs/dataframe-api.md: every construct of the installed PySpark's DataFrame
API, read from PySpark itself, with what dltrace does with it (``api_coverage``).

Reading the constructs from PySpark (not from a list of ours) is what makes the table
complete: a function, method or keyword PySpark adds appears here, and the test comparing
the table in the docs with this one fails until the docs are regenerated; a method of a class
``api_coverage`` has not classified is ``unclassified`` and fails a test of its own.

    python -m dltrace.dataframe.api_table --write docs/dataframe-api.md
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable

from dltrace.dataframe import api_coverage as coverage

UNCLASSIFIED = "unclassified"
START, END = "<!-- api-table:start -->", "<!-- api-table:end -->"
Entry = tuple[str, str, str]  # (name, status, why)


def functions() -> list[Entry]:
    """Every public function of ``pyspark.sql.functions`` (aliases and ``partitioning.*`` too)."""
    import pyspark.sql.functions as F

    def public(module, prefix: str) -> list[str]:
        return [prefix + name for name in dir(module) if not name.startswith("_")
                and inspect.isfunction(getattr(module, name))
                and getattr(module, name).__module__.startswith("pyspark.sql")]

    names = sorted(public(F, "") + public(F.partitioning, "partitioning."))
    return [(name, *coverage.FUNCTION_STATUS.get(name, (coverage.TRACED, ""))) for name in names]


def methods(cls, statuses: dict[str, tuple[str, str]], dunders: bool = False) -> list[Entry]:
    """Every public method and property of ``cls`` (with ``dunders``, its operators too)."""
    names = [name for name in dir(cls) if not name.startswith("_")]
    if dunders:
        names += [name for name in vars(cls) if name.startswith("__") and name not in coverage.COLUMN_SKIPPED]
    return [(name, *statuses.get(name, (UNCLASSIFIED, ""))) for name in sorted(set(names))]


def classes() -> list[tuple[str, list[Entry]]]:
    """The API's classes and their methods' entries, as the table shows them."""
    from pyspark.sql import Column, DataFrame, DataFrameNaFunctions, DataFrameStatFunctions, GroupedData
    from pyspark.sql.readwriter import DataFrameReader, DataFrameWriter, DataFrameWriterV2

    return [
        ("Column", methods(Column, coverage.COLUMN_METHODS, dunders=True)),
        ("DataFrame", methods(DataFrame, coverage.DATAFRAME_METHODS)),
        ("GroupedData", methods(GroupedData, coverage.GROUPED_METHODS)),
        ("DataFrameNaFunctions", methods(DataFrameNaFunctions, coverage.NA_METHODS)),
        ("DataFrameStatFunctions", methods(DataFrameStatFunctions, coverage.STAT_METHODS)),
        ("DataFrameReader", methods(DataFrameReader, coverage.READER_METHODS)),
        ("DataFrameWriter", methods(DataFrameWriter, coverage.WRITER_METHODS)),
        ("DataFrameWriterV2", methods(DataFrameWriterV2, coverage.WRITER_V2_METHODS)),
    ]


def keywords(cls_name: str, name: str) -> list[str]:
    """The keyword parameters of method ``name`` of reader or writer class ``cls_name``."""
    from pyspark.sql import readwriter

    signature = inspect.signature(getattr(getattr(readwriter, cls_name), name))
    return [p.name for p in list(signature.parameters.values())[1:]]


def names(entries: Iterable[Entry], prefix: str = "") -> str:
    return ", ".join(f"`{prefix}{name}`" for name, _, _ in entries) or "none"


def section(title: str, entries: list[Entry], prefix: str = "") -> list[str]:
    """A class's (or the functions') entries: the traced and eager ones listed by name, the
    refused ones each with its reason."""
    lines = [f"### {title}", ""]
    for status in (coverage.TRACED, coverage.EAGER, UNCLASSIFIED):
        chosen = [e for e in entries if e[1] == status]
        if chosen:
            lines += [f"**{coverage.STATUS_TEXT.get(status, status)}** ({len(chosen)}): {names(chosen, prefix)}", ""]
    refused = [e for e in entries if e[1] in (coverage.REFUSED, coverage.SPARK_REFUSES)]
    if refused:
        lines += ["| refused | by | why |", "|---|---|---|"]
        lines += [f"| `{prefix}{name}` | {'dltrace' if status == coverage.REFUSED else 'Spark'} | {why} |"
                  for name, status, why in refused]
        lines.append("")
    return lines


def reader_writer(cls_name: str, entries: list[Entry]) -> list[str]:
    """A reader or writer class: each method, what dltrace does with it and its keywords."""
    lines = [f"### {cls_name}", "", "| method | status | what dltrace does | keyword parameters |",
             "|---|---|---|---|"]
    for name, status, why in entries:
        params = keywords(cls_name, name)
        refused = coverage.REFUSED_PARAMETERS.get(name, {})
        passed = [p for p in params if p not in refused]
        text = ", ".join(f"`{p}`" for p in passed)
        if status == coverage.TRACED and passed:
            text += " (passed to Spark)"
        text += "".join(f"; `{p}` refused: {reason}" for p, reason in refused.items() if p in params)
        lines.append(f"| `{name}` | {status} | {why} | {text or '-'} |")
    return [*lines, ""]


def counts(kinds: list[tuple[str, list[Entry]]]) -> list[str]:
    statuses = (coverage.TRACED, coverage.EAGER, coverage.REFUSED, coverage.SPARK_REFUSES, UNCLASSIFIED)
    lines = ["| construct | " + " | ".join(statuses) + " |", "|---" * (len(statuses) + 1) + "|"]
    for title, entries in kinds:
        lines.append(f"| {title} | " + " | ".join(str(sum(e[1] == s for e in entries)) for s in statuses) + " |")
    return [*lines, ""]


def option_keys() -> list[str]:
    lines = ["### Option keys (`option(key, value)`, `options(**kw)`, a method's `**options`)", "",
             "Every key is passed to Spark's reader or writer as the job gives it, but these, which dltrace reads:",
             "", "| key | status | why |", "|---|---|---|"]
    lines += [f"| `{key}` | {status} | {why} |" for key, (status, why) in coverage.OPTION_KEYS.items()]
    return [*lines, ""]


def table() -> str:
    """The generated part of docs/dataframe-api.md, for the installed PySpark."""
    import pyspark

    kinds = [("functions", functions()), *classes()]
    lines = [f"Generated from PySpark {pyspark.__version__}.", "", *counts(kinds)]
    lines += section("pyspark.sql.functions", kinds[0][1], "F.")
    notes = [f"`F.{name}`" for name in coverage.GENERATOR_FUNCTIONS]
    lines += [f"Generators ({', '.join(notes)}) become the `LATERAL VIEW` Spark plans: each generated row has "
              "its input row's lineage. Non-deterministic functions (" +
              ", ".join(f"`F.{name}`" for name in coverage.NONDETERMINISTIC) +
              ") are traced with the values Spark computes in the traced query. `F.udf`, `F.pandas_udf` and "
              "`F.arrow_udf` are Python UDFs, traced as calls.", ""]
    for title, entries in kinds[1:]:
        if title.startswith("DataFrameReader") or title.startswith("DataFrameWriter"):
            lines += reader_writer(title, entries)
        else:
            lines += section(title, entries)
    lines += option_keys()
    return "\n".join(lines).strip("\n")


def replaced(document: str, generated: str) -> str:
    """``document`` with the text between the table's markers replaced by ``generated``."""
    before, rest = document.split(START, 1)
    _, after = rest.split(END, 1)
    return f"{before}{START}\n{generated}\n{END}{after}"


def between_markers(document: str) -> str:
    return document.split(START, 1)[1].split(END, 1)[0].strip("\n")


def main(argv: list[str] | None = None) -> int:
    """``--write PATH``: the table in PATH regenerated; without it, the table on stdout."""
    import argparse
    from pathlib import Path

    parser = argparse.ArgumentParser(description="The generated table of PySpark's DataFrame API and dltrace")
    parser.add_argument("--write", metavar="PATH", help="regenerate the table between the markers of PATH")
    args = parser.parse_args(argv)
    if args.write is None:
        print(table())
        return 0
    path = Path(args.write)
    path.write_text(replaced(path.read_text(), table()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
