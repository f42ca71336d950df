"""Base-row ids: ``(table_code << 48) | row_number`` (docs/semantics.md, "Ids").

>>> make_id(3, 41)
844424930132009
>>> split_id(844424930132009)
(3, 41)
"""

from __future__ import annotations

ROW_BITS = 48
ROW_MASK = (1 << ROW_BITS) - 1
MAX_TABLE_CODE = 16383  # table codes; the codes above name saved results' rows (REFERENCE_CODE)
# A result saved from other saved results names their rows instead of spelling out their
# lineage (dltrace/results.py, "References"): ``((REFERENCE_CODE + k) << 48) | _row`` is row
# ``_row`` of the k-th saved result it read.  Codes up to 32767 keep ids positive bigints.
REFERENCE_CODE = MAX_TABLE_CODE + 1
FIRST_REFERENCE_ID = REFERENCE_CODE << ROW_BITS


def make_id(code: int, row_number: int) -> int:
    """The id of row ``row_number`` of the table with ``code``."""
    return (code << ROW_BITS) | row_number


def split_id(dl_id: int) -> tuple[int, int]:
    """``(table_code, row_number)`` of an id."""
    return dl_id >> ROW_BITS, dl_id & ROW_MASK
