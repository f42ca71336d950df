"""Variable-granularity lineage: ``LINEAGE ON (expr, ...)`` (paper §4.3; docs/semantics.md).

Lineage is computed w.r.t. combinations of L values instead of base rows: the rewriter's
base-table rule is given an id source that hands each row of a table providing some of L
its granule id (``granules``), and tables providing none contribute ∅.  Everything else,
semantics and representations included, is the ordinary rewriter.  ``LINEAGE ON ()``
turns lineage off: the plain query, its rows and no ``DL`` column.  The granule
dictionary (``dictionary``) decodes ids back to values.

>>> from dltrace.rewriter import PAPER_CODES, PAPER_SCHEMA, parse
>>> query, lineage_on = split_lineage_on("SELECT category, sum(num) AS n FROM item JOIN sales USING (i_id) "
...                                      "GROUP BY category LINEAGE ON (category)")
>>> granularity = resolve(lineage_on, parse(query), PAPER_SCHEMA)
>>> print(rewriter.rewrite(parse(query), PAPER_SCHEMA, PAPER_CODES, id_source=granularity.id_source,
...                        ids_ordered_by_table=False).sql("spark"))
SELECT item.category AS category, SUM(sales.num) AS n, SORT_ARRAY(COLLECT_SET(IF(item._dl_id IS NULL, NULL, XXHASH64('item(category)', item.category)))) AS DL FROM item AS item JOIN sales AS sales ON item.i_id = sales.i_id GROUP BY item.category
"""  # noqa: E501

from __future__ import annotations

from dltrace import rewriter
from dltrace.engine import Engine
from dltrace.granularity.clause import LineageOn, LineageOnArgument, lineage_on_sql, parse_lineage_on, split_lineage_on
from dltrace.granularity.dictionary import DL_VALUES, GranuleDecoder
from dltrace.granularity.granules import Granularity, Provider, resolve
from dltrace.rewriter.dialect import SPARK

__all__ = [
    "DL_VALUES",
    "GranuleDecoder",
    "Granularity",
    "LineageOn",
    "LineageOnArgument",
    "Provider",
    "granular_sql",
    "lineage_on_sql",
    "parse_lineage_on",
    "resolve",
    "split_lineage_on",
]


def granular_sql(
    session: Engine, query: str, lineage_on: LineageOn, semantics: str = "control", representation: str = "set"
) -> str:
    """Spark SQL for ``query`` (without its clause, saved results inlined) with lineage on
    ``lineage_on`` (not empty) over ``session``'s catalog."""
    granularity = resolve(lineage_on, rewriter.parse(query), session.catalog.schemas())
    expression = session.lineage_expression(query, semantics, representation, granularity.id_source,
                                            ids_ordered_by_table=False)
    return expression.sql(dialect=SPARK)
