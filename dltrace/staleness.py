"""Whether a saved result is current: what it was computed from, and what changed since.

Pipelines (README, "Pipelines"): a query may read a saved result like a table, and the
rows' saved DLs are their lineage, so lineage composes down to base rows.  A result records
its inputs: the tables it read with their data versions (``tables``), the saved results it
read with their save stamps (``results``), and every base table its lineage reaches with the
data versions whose ids it may hold (``lineage_tables``, through the results it read).  It
is *stale* when an input changed since: a table revised, a result saved again or dropped, or
an input result itself stale.  A table registered in place has also changed when its files
did on disk (a file rewritten, gone or added), which shows at once, before anyone registers
it again.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cache

from dltrace.catalog import Catalog
from dltrace.dataframe.job_files import WrittenStore
from dltrace.errors import SourceChanged
from dltrace.plain import names_read
from dltrace.result_format import SavedResult
from dltrace.table_data import check_unchanged


def inputs(catalog: Catalog, saved: Callable[[str], SavedResult | None], query: str) -> dict:
    """What ``query`` is computed from, as ``SavedResult`` fields: the tables it reads
    (data versions), the saved results it reads (``saved``: a name's metadata, None when no
    result has it) with their save stamps, and the base tables its lineage reaches (with
    every data version whose ids it may hold)."""
    names = names_read(query)
    tables = {t: catalog.entry(t).version for t in sorted(names & set(catalog.tables))}
    upstream = [result for n in sorted(names - set(tables)) if (result := saved(n)) is not None]
    lineage = {t: {v} for t, v in tables.items()}
    for result in upstream:
        for table, versions in result.lineage_tables.items():
            lineage.setdefault(table, set()).update(versions)
    return {
        "tables": tables,
        "results": {r.name: r.stamp for r in upstream},
        "lineage_tables": {t: sorted(v) for t, v in sorted(lineage.items())},
    }


def staleness(catalog: Catalog, results: list[SavedResult]) -> dict[str, str | None]:
    """``{result: why it is stale, or None}``: an input changed since it was saved (a table
    revised or its files changed on disk, an input result saved again or dropped, or itself
    stale), or an output it read in runs has a run it did not read.

    A run of an output a job (or script) adds to (``dataframe/runs.py``) holds what that run
    wrote: rows added to its sources since belong to later runs, not to it, so a source that
    only grew (every row kept with its id) leaves it current; a row changed or removed does not."""
    saved = {r.name: r for r in results}
    reasons: dict[str, str | None] = {}
    outputs = {run.result: record for record in WrittenStore(catalog).all().values() if record.runs
               for run in record.run_list()}
    changed = _changed_on_disk(catalog, added=True)
    rewritten = _changed_on_disk(catalog, added=False)

    def reason(result: SavedResult) -> str | None:
        if result.name not in reasons:
            reasons[result.name] = None  # an input cycle cannot happen; guard anyway
            own = outputs[result.name].name if result.name in outputs else None  # the output it is a run of
            reasons[result.name] = _stale_reason(catalog, result, saved, reason, rewritten if own else changed,
                                                 own) or _runs_since(result, outputs, own)
        return reasons[result.name]

    for result in saved.values():
        reason(result)
    return reasons


def _changed_on_disk(catalog: Catalog, added: bool) -> Callable[[str], str | None]:
    """Per table, once: why its current files differ from those registered in place (naming
    the file; ``added``: a file added counts), or None (unchanged, or a copy)."""
    @cache
    def changed(table: str) -> str | None:
        try:
            check_unchanged(catalog, table, added=added)
        except SourceChanged as error:
            return str(error)
        return None
    return changed


def _stale_reason(catalog: Catalog, result: SavedResult, saved: dict[str, SavedResult],
                  reason: Callable[[SavedResult], str | None], changed: Callable[[str], str | None],
                  own: str | None) -> str | None:
    for table, version in sorted(result.tables.items()):
        entry = catalog.tables.get(table)
        if entry is None:
            return f"table {table} is no longer registered"
        if entry.version != version and not (own and entry.only_grew_since(version)):
            return f"table {table} changed (v{version} -> v{entry.version})"
        if (why := changed(table)) is not None:
            return why
    for name, stamp in sorted(result.results.items()):
        upstream = saved.get(name)
        if upstream is None and not (own and _of_output(name, own)):
            return f"result {name} was dropped"
        if upstream is None:  # a run that read its output's earlier runs, which it then replaced
            continue
        if upstream.stamp != stamp:
            return f"result {name} was saved again"
        if (inherited := reason(upstream)) is not None:
            return f"through result {name}: {inherited}"
    return None


def _of_output(name: str, output: str) -> bool:
    """Whether saved result ``name`` held rows of ``output``: the output saved whole, or one of
    its runs (``job_files.run_name``: ``output_run<k>``, ``_<n>`` when that was taken).

    >>> _of_output("log_run3", "log"), _of_output("log", "log"), _of_output("log_runs", "log")
    (True, True, False)
    """
    return re.fullmatch(rf"{re.escape(output)}(_run\d+(_\d+)?)?", name) is not None


def _runs_since(result: SavedResult, outputs: dict, own: str | None) -> str | None:
    """Why ``result``, which read an output's runs, is behind it: a run added since (not
    for a run of that output: it read the runs before it)."""
    read = {outputs[name].name: outputs[name] for name in result.results if name in outputs}
    for record in read.values():
        newer = [run for run in record.run_list() if run.result not in result.results]
        if newer and record.name != own:
            return f"output {record.name} has run {newer[-1].number} since"
    return None
