"""What a save records about its rows' lineage: a DataFrame's provenance, and a step's bookkeeping.

A result computed from saved results is a pipeline step: its DLs name the rows it read from
them (``references``) instead of spelling their lineage out again.  Before such a save
(``LineageSession.save``) dltrace checks that the saves its plan read are still the ones it
will record, and works out whether no id can be in two rows' whole DLs (``disjoint``),
which queries reading the result rely on.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from sqlglot import exp

from dltrace import granularity, openlineage, profile, rewriter
from dltrace.engine import reference_codes
from dltrace.errors import BadInput
from dltrace.plain import names_read
from dltrace.results import DL, ROW, SHARED_ID, SHARED_REFS, SHARED_SET, ResultStore, SavedResult
from dltrace.views import check_result_name


class MadeBy(NamedTuple):
    """What a DataFrame ``sql`` returned was computed from, for ``save`` and ``shared_lineage``."""

    query: str
    semantics: str
    representation: str
    lineage_on: granularity.LineageOnArgument
    disjoint: bool  # no id in two rows' DLs: a saved result remembers it for queries reading it
    shared: rewriter.SharedLineage | None  # the lineage with the sets all rows share held apart
    many_groups: bool  # its outermost SELECT groups by a key into many groups: ``executing`` sorts them
    references: bool = False  # planned as a saved step stores it: the rows it reads from saved results named


class StepLineage(NamedTuple):
    """What a save records of its rows' lineage besides the rows."""

    disjoint: bool  # with the rows' shared sets held apart
    shared_disjoint: bool  # with shared sets: the flag of the rows' whole DLs
    references: dict[str, int]  # the codes of the saved results whose rows the DLs name
    named: dict[str, SavedResult] | None  # those results, when there are any

    def disjoint_rows(self, shared_sets: bool) -> bool:
        """The saved flag: the whole DLs' when the rows share sets, else the rows' own."""
        return self.shared_disjoint if shared_sets else self.disjoint


def held_apart(store: ResultStore, spark, saved: SavedResult) -> tuple:
    """The rows of ``saved`` with their shared sets held apart, as ``shared_lineage`` gives
    them: ``(rows with their own ids in DL, [one-row DataFrame of each shared set])``."""
    from pyspark.sql import functions as F

    sets = store.shared_sets(spark, saved)
    rows = store.lineage_without_shared(spark, saved).drop(SHARED_REFS).orderBy(ROW)
    return rows, [sets.where(F.col(SHARED_SET) == number).agg(F.sort_array(F.collect_list(SHARED_ID)).alias(DL))
                  for number in range(saved.shared_sets)]


def held_apart_sets(ls, frame):
    """The sets held apart that some rows of ``frame`` each name in ``DL_names`` (window
    partitions and frame blocks, ``rewriter/window_sets.py``), as ``(__dlname, __dlids)`` rows, a set each;
    None unless ``frame`` was planned as a save stores it (``windows_apart``)."""
    made_by = ls.made_by(frame)
    if made_by is None or made_by.shared is None or made_by.shared.named is None:
        return None
    return ls.run(made_by.shared.named.sql(dialect=rewriter.SPARK))


def check_savable(lineage_on: granularity.LineageOnArgument) -> None:
    """Saved results hold base-row ids, which impact and explain look up: granule ids
    (``LINEAGE ON``) name no rows, so such a result cannot be saved."""
    if lineage_on is not None:
        raise BadInput("save keeps base-row lineage for impact and explain: run the query without LINEAGE ON")


def check_target(store: ResultStore, name: str, query: str) -> None:
    """A result cannot be computed from an existing result of its own name."""
    if name.lower() in names_read(query) and store.exists(name):
        raise BadInput(f"result {name.lower()} cannot be computed from itself: save it under another name")


def is_step(made_by: MadeBy | None) -> bool:
    """Whether a save of what ``made_by`` describes may name the rows of the results it reads."""
    return made_by is not None and made_by.lineage_on is None


def plain_lineage(made_by: MadeBy | None) -> StepLineage:
    """The lineage of a result that names no saved rows: the flags its plan worked out."""
    return StepLineage(bool(made_by and made_by.disjoint),
                       bool(made_by and made_by.shared and made_by.shared.disjoint), {}, None)


def step_lineage(name: str, made_by: MadeBy, read: dict[str, SavedResult], store: ResultStore,
                 view_path: Callable[[str], str | None], whole: Callable[[], dict]) -> StepLineage:
    """The lineage of a step over the saved results ``read``: their rows named.

    The disjoint flags describe the whole DLs, as the query planned with saved lineage spelled
    out sees them (``made_by``, or the meta of that plan, ``whole()``, when the frame was
    planned as the step stores it); rows naming distinct upstream rows have disjoint whole DLs
    only if those rows do, shared sets included.  The saves the DLs name are those the plan
    read (``view_path``: the files of a view): one saved again since the plan (another
    process) would be recorded in place of the one named, so the step fails.
    """
    if made_by.references:
        meta = whole()
        disjoint = meta.get(rewriter.DISJOINT_ROWS, False)
        shared_disjoint = bool(meta.get(rewriter.SHARED) and meta[rewriter.SHARED].disjoint)
    else:
        disjoint, shared_disjoint = plain_lineage(made_by)[:2]
    moved = sorted(n for n, r in read.items() if view_path(n) != str(store.path(r.data)))
    if moved:
        raise BadInput(f"result {moved[0]} was saved again while {name.lower()} was computed from it: "
                       f"run the step again")
    named_rows_disjoint = all(r.disjoint and not r.shared_sets for r in read.values())
    references = reference_codes(read)
    return StepLineage(disjoint and named_rows_disjoint, shared_disjoint and named_rows_disjoint, references,
                       read if references else None)


def save(ls, frame, name: str, query: str | None, semantics: str | None, representation: str | None,
         index: bool | None) -> SavedResult:
    """``LineageSession.save``: check what is saved, plan a step again as it is stored (the
    rows it reads named), and keep the rows with their shared sets held apart."""
    from dltrace.dataframe import is_connect_frame

    if isinstance(frame, str) or not isinstance(name, str):
        raise BadInput("save(frame, name) takes the DataFrame sql() or trace() returned, then the result's "
                       "name: ls.save(ls.sql(query), 'name')")
    if query is None and is_connect_frame(frame) and ls.made_by(frame) is None:
        with profile.phase("plan"):
            frame = ls.trace(frame, semantics or "control", representation or "set")
    made_by = ls.made_by(frame)
    if query is None and made_by is None:
        raise BadInput("save: this DataFrame was not returned by sql() with row lineage: pass query=")
    check_result_name(name)
    check_savable(made_by.lineage_on if made_by else None)
    if query is not None:
        check_savable(granularity.split_lineage_on(query, None)[1])
    query = ls.expand(query) if query is not None else made_by.query
    semantics = semantics or (made_by.semantics if made_by else "control")
    representation = representation or (made_by.representation if made_by else "set")
    ls.check_name_free(name, "a saved result")
    check_target(ls.store, name, query)
    with openlineage.save_run(ls, name, query) as saved:  # START, then COMPLETE with it or FAIL
        with profile.phase("plan"):
            lineage = plain_lineage(made_by)
            read = ls.results_read(query) if is_step(made_by) else {}
            # planned again as a save stores it: the rows read named, windows' sets held apart
            windows = is_step(made_by) and rewriter.parse(query).find(exp.Window) is not None
            if (read and not made_by.references) or windows:
                frame = ls.row_lineage(query, semantics, representation, references=bool(read),
                                       windows_apart=windows)
            if read:
                lineage = step_lineage(name, made_by, read, ls.store, ls.spark_views.path,
                                       lambda: ls.lineage_expression(query, semantics, representation).meta)
        with profile.phase("sets"):
            rows, sets = ls.shared_lineage(frame)  # shared sets are stored once, not in every row
            named_sets = held_apart_sets(ls, frame)  # and so are the sets of window partitions and frames
        with ls.executing(frame), profile.phase("save"):
            saved.append(ls.store.save(rows, name, query, semantics, representation, index,
                                       disjoint_rows=lineage.disjoint_rows(bool(sets)) and named_sets is None,
                                       shared_sets=sets, references=lineage.references, named=lineage.named,
                                       named_sets=named_sets))
    return saved[0]
