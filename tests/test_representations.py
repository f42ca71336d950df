"""Every representation gives exactly the lineage of ``set``, on every query of the suite
(the paper's constructs and all TPC-H queries), and the roBDD UDFs behave on edge cases."""

from __future__ import annotations

from collections import Counter

import pyarrow as pa
import pytest

from dltrace.bddsets import bytes_from_ids, ids_from_bytes
from dltrace.formatting import lineage_ids
from dltrace.udafs import ids_column, union_column
from tests.test_constructs import CONSTRUCTS
from tests.test_paper import Q1, Q4
from tpch.queries import SPJ, TPCH, load

OTHER_REPRESENTATIONS = ["bdd", "auto"]


@pytest.fixture(autouse=True)
def low_crossover(monkeypatch):
    """On test data no group comes near ``auto``'s real crossover, so ``auto`` would write
    ``set``'s SQL; a low one makes it build some aggregates as roBDDs and others as native
    sets in one query, which is what these tests must see keep the lineage."""
    from dltrace.rewriter.representation import AutoRepresentation

    monkeypatch.setattr(AutoRepresentation, "BDD_FROM_IDS", 50)


def lineage_bag(rows) -> Counter:
    return Counter((tuple(str(v) for k, v in r.asDict().items() if k != "DL"), tuple(lineage_ids(r.DL))) for r in rows)


SET_BAGS: dict[tuple[int, str, str], Counter] = {}


def set_bag(session, query: str, semantics: str = "control") -> Counter:
    """The lineage of ``set`` for ``query``, computed once for every representation compared to it."""
    key = (id(session), query, semantics)
    if key not in SET_BAGS:
        SET_BAGS[key] = lineage_bag(session.sql(query, semantics=semantics).collect())
    return SET_BAGS[key]


@pytest.mark.parametrize("representation", OTHER_REPRESENTATIONS)
@pytest.mark.parametrize("name", TPCH + SPJ)
def test_tpch_lineage_is_the_same(tpch, name, representation):
    query = load(name)
    assert lineage_bag(tpch.sql(query, representation=representation).collect()) == set_bag(tpch, query)


@pytest.mark.parametrize("representation", OTHER_REPRESENTATIONS)
@pytest.mark.parametrize("query", [Q1, Q4, *CONSTRUCTS.values()], ids=["q1", "q4", *CONSTRUCTS])
def test_paper_lineage_is_the_same(paper, query, representation):
    for semantics in ("control", "data"):
        assert lineage_bag(paper.sql(query, semantics=semantics, representation=representation).collect()) == \
            set_bag(paper, query, semantics)


def test_bdd_dl_is_binary(paper):
    (row,) = paper.sql("select count(*) as n from sales", representation="bdd").collect()
    assert isinstance(row.DL, (bytes, bytearray)) and len(ids_from_bytes(bytes(row.DL))) == 11


def test_repr_is_a_deprecated_alias_of_representation(paper):
    """``repr=`` (the builtin's name) was the keyword before ``representation=``: kept for a
    release, with a warning, and meaning the same."""
    query = "select count(*) as n from sales"
    with pytest.warns(DeprecationWarning, match=r"sql\(repr=...\) is deprecated: use representation="):
        (old,) = paper.sql(query, repr="bdd").collect()
    (new,) = paper.sql(query, representation="bdd").collect()
    assert bytes(old.DL) == bytes(new.DL)
    with pytest.warns(DeprecationWarning):
        assert paper.rewrite(query, repr="bdd") == paper.rewrite(query, representation="bdd")
    with pytest.raises(TypeError, match="not both"):
        paper.sql(query, repr="bdd", representation="set")


def test_union_udf_edge_cases():
    a, b = bytes_from_ids([5, 6, 7]), bytes_from_ids([7, 1 << 62])
    sets = pa.array([[a, None], [], None, [a, b], []], type=pa.list_(pa.binary()))
    ids = pa.array([[1, None], [None], [3], None, [(1 << 63) - 1]], type=pa.list_(pa.int64()))
    out = union_column(sets, ids)
    assert [ids_from_bytes(b).tolist() for b in out.to_pylist()] == [
        [1, 5, 6, 7], [], [3], [5, 6, 7, 1 << 62], [(1 << 63) - 1]]
    assert ids_column(out).to_pylist() == [[1, 5, 6, 7], [], [3], [5, 6, 7, 1 << 62], [(1 << 63) - 1]]
