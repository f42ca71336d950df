"""Impact and explain over lineage (docs/architecture.md, "Impact and explain"): forward from
bad source rows to the output rows they affected, backward from an output row to the base
rows that made it."""

from dltrace.impact.backward import explain
from dltrace.impact.search import MODES, ImpactWarning, impact, matches_nothing
from dltrace.impact.source import Source, parse_source

__all__ = ["MODES", "ImpactWarning", "Source", "explain", "impact", "matches_nothing", "parse_source"]
