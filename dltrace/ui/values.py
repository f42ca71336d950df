"""Values and page bounds as the explorer's JSON gives them: integers past 2^53 as text (what
JavaScript's numbers cannot hold exactly), and a page's offset and limit checked."""

from __future__ import annotations

from dltrace.errors import BadInput
from dltrace.formatting import plain_value

JS_SAFE = 2 ** 53  # JavaScript's numbers hold integers exactly up to here; ids and bigints go past it
MAX_PAGE = 5000  # rows per page at most: a page is read into the server's memory and the browser's


def value(v):
    """A value for the page: JSON-friendly (``plain_value``), an integer past 2^53 as text.

    >>> value(7), value(2 ** 60), value([1, 2 ** 60]), value({"n": 2 ** 60})
    (7, '1152921504606846976', [1, '1152921504606846976'], {'n': '1152921504606846976'})
    """
    v = plain_value(v)
    if isinstance(v, int) and not isinstance(v, bool) and abs(v) >= JS_SAFE:
        return str(v)
    if isinstance(v, list):
        return [value(x) for x in v]
    return {k: value(x) for k, x in v.items()} if isinstance(v, dict) else v


def page_bounds(offset: int, limit: int) -> tuple[int, int]:
    """A page's bounds, checked: bad ones are bad input.

    >>> page_bounds(0, 100)
    (0, 100)
    >>> page_bounds(-1, 10)
    Traceback (most recent call last):
    dltrace.errors.BadInput: offset must be 0 or more (got -1)
    """
    if offset < 0:
        raise BadInput(f"offset must be 0 or more (got {offset})")
    if not 1 <= limit <= MAX_PAGE:
        raise BadInput(f"limit must be between 1 and {MAX_PAGE} (got {limit})")
    return offset, limit
