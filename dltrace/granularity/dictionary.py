"""The granule dictionary: granule id -> the L values it stands for.

For each providing table it is ``SELECT DISTINCT <granule id>, e1, ..., en FROM table``,
computed with Spark once per (registered table version, expressions) and kept in memory
for the life of the process: granules are coarse by design, so the dictionary is small
(TPC-H SF1 lineitem by year, ISO week and ship mode: 2,541 entries).  A table re-registered
under a new version gets a new dictionary.

A decoded granule is a dict ``{L name: value}`` holding its table's expressions, e.g.
``{"YEAR(l_shipdate)": 1995, "WEEKOFYEAR(l_shipdate)": 12, "l_shipmode": "MAIL"}``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from dltrace.engine import Engine
from dltrace.errors import BadInput, DltraceError
from dltrace.formatting import DL, DL_VALUES, lineage_ids, plain_value
from dltrace.granularity.clause import LineageOnArgument, lineage_on_sql, split_lineage_on
from dltrace.granularity.granules import Granularity, Provider, resolve
from dltrace.rewriter import parse
from dltrace.rewriter.dialect import SPARK

DESCRIPTION_WIDTH = 60  # the table output's widest column

Granule = dict[str, Any]

# (catalog directory, table data path, granule tag) -> {granule id: values}
_DICTIONARIES: dict[tuple[str, str, str], dict[int, tuple]] = {}


class GranuleDecoder:
    """Decodes the granule ids of one query's ``LINEAGE ON`` results."""

    def __init__(self, session: Engine, query: str, lineage_on: LineageOnArgument = None) -> None:
        query, parsed = split_lineage_on(query, lineage_on)
        if not parsed:
            raise BadInput("decoding granules needs a non-empty LINEAGE ON (expr, ...)")
        self.session = session
        self.label = lineage_on_sql(parsed)
        self.granularity: Granularity = resolve(
            parsed, parse(session.traceable_on_values(query)), session.catalog.schemas()
        )
        self._granules: dict[int, tuple[Provider, Granule]] | None = None

    def decode(self, ids: Iterable[int] | bytes) -> list[Granule]:
        """The values of each granule id, in the order given (a roBDD ``DL``: in id order)."""
        if isinstance(ids, (bytes, bytearray)):
            ids = lineage_ids(ids)
        return [self._lookup(granule_id)[1] for granule_id in ids]

    def with_values(self, records: Iterable[dict]) -> Iterator[dict]:
        """Result rows with ``DL_values`` added next to ``DL``."""
        for record in records:
            yield {**record, DL_VALUES: None if record.get(DL) is None else self.decode(record[DL])}

    def describe(self, ids: list[int]) -> str:
        """A short human view in the values' order, e.g. ``364 granules: (1994, 1, 'AIR') …``;
        the table is named too when L spans several tables."""
        with_table = len(self.granularity.providers) > 1
        granules = sorted((self._lookup(granule_id) for granule_id in ids), key=_display_order)
        shown = [self._text(provider, granule, with_table) for provider, granule in granules]
        everything = " ".join(shown)
        if len(everything) <= DESCRIPTION_WIDTH:
            return everything or "∅"
        text = f"{len(shown)} granules:"
        for granule in shown:
            if len(text) + len(granule) + 3 > DESCRIPTION_WIDTH:
                break
            text += " " + granule
        return text + " …"

    @staticmethod
    def _text(provider: Provider, granule: Granule, with_table: bool) -> str:
        values = ", ".join(repr(v) if isinstance(v, str) else str(v) for v in map(plain_value, granule.values()))
        return f"{provider.table if with_table else ''}({values})"

    def _lookup(self, granule_id: int) -> tuple[Provider, Granule]:
        if self._granules is None:
            self._granules = {
                int(granule_id): (provider, dict(zip(provider.names, values)))
                for provider in self.granularity.providers.values()
                for granule_id, values in _provider_dictionary(self.session, provider).items()
            }
        found = self._granules.get(int(granule_id))
        if found is None:
            raise BadInput(f"{granule_id} is not a granule id of {self.label} over the current catalog")
        return found


def _display_order(found: tuple[Provider, Granule]) -> tuple:
    """By table, then by values (NULLs last)."""
    provider, granule = found
    return provider.table, [(value is None, value) for value in granule.values()]


def _provider_dictionary(session: Engine, provider: Provider) -> dict[int, tuple]:
    """One table's granules, from the cache or computed with Spark."""
    entry = session.catalog.entry(provider.table)
    key = (str(session.catalog.directory), entry.path, provider.tag)
    if key not in _DICTIONARIES:
        alias = provider.table
        values = ", ".join(f"{v.sql(dialect=SPARK)} AS v{i}" for i, v in enumerate(provider.values(alias)))
        query = (f"SELECT DISTINCT {provider.granule_id(alias).sql(dialect=SPARK)} AS granule, "
                 f"{values} FROM {alias} AS {alias}")
        dictionary: dict[int, tuple] = {}
        for row in session.run(query).collect():
            granule_id, *granule_values = row
            if dictionary.setdefault(granule_id, tuple(granule_values)) != tuple(granule_values):
                raise DltraceError(
                    f"granule id collision in {provider.tag}: {dictionary[granule_id]} and {tuple(granule_values)}"
                )
        _DICTIONARIES[key] = dictionary
    return _DICTIONARIES[key]
