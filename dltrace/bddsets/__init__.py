"""Lineage-set values: sorted id arrays and roBDDs (CUDD via dd).

A lineage set is a set of int64 base-row ids, ``id = (table_code << 48) |
row_number``. The representations share one interface (:class:`LineageSet`)
and one versioned byte encoding (:mod:`dltrace.bddsets.encoding`):

* :class:`SortedIdSet`: sorted unique numpy int64 array; best for small sets.
* :class:`BddSet`: reduced ordered BDD over the 64 id bits in CUDD; best for
  large clustered and overlapping sets (paper section 4).

The Spark UDF layer works on bytes (:mod:`dltrace.bddsets.bulk`): whole Arrow
batches with :func:`~dltrace.bddsets.bulk.union_by_row` and
:func:`~dltrace.bddsets.bulk.ids_by_row`, single values with :func:`union_bytes`,
:func:`bytes_from_ids`, :func:`ids_from_bytes`, :func:`contains_any_bytes` and friends.

>>> from dltrace.bddsets import BddSet, SortedIdSet, decode
>>> lineage = BddSet.from_ids([(1 << 48) + n for n in range(1000)])
>>> len(lineage), lineage.node_count, (1 << 48) + 999 in lineage
(1000, 61, True)
>>> decode(lineage.to_bytes()) == SortedIdSet.from_ids(lineage.to_numpy())
True
"""

from .base import LineageDecodeError, LineageSet
from .bdd import BddSet, bdd_backend
from .bulk import (
    bytes_from_ids,
    contains_any_batch,
    contains_any_bytes,
    count_bytes,
    decode,
    ids_from_bytes,
    singleton_bytes,
    union_bytes,
)
from .sorted_set import SortedIdSet

__all__ = [
    "BddSet",
    "LineageDecodeError",
    "LineageSet",
    "SortedIdSet",
    "bdd_backend",
    "bytes_from_ids",
    "contains_any_batch",
    "contains_any_bytes",
    "count_bytes",
    "decode",
    "ids_from_bytes",
    "singleton_bytes",
    "union_bytes",
]
