"""A new user's findings on real-shaped data: each case fails without its fix.

The paper's store/item/sales tables stand in for nycflights13's flights, planes, airports
and weather: the same shapes (joins of tables sharing column names, an outer join whose
padded side is traced ``LINEAGE ON``)."""

from __future__ import annotations

import json

import pytest

from dltrace.cli import main

# store and sales both have s_id: `select *` prints two columns of one name
DUPLICATE_NAMES = "select * from store d join sales s on s.s_id = d.s_id"
# items without a sale over 2000 are padded: their sales columns are NULL
PADDED = "select i.i_name, s.t_id from item i left join sales s on s.i_id = i.i_id and s.num > 2000"


@pytest.mark.parametrize("output", ["table", "json", "csv"])
def test_duplicate_column_names_are_refused_in_every_format(capsys, paper, output):
    """Printing never shows one column's values under another's name (the table format showed
    the last duplicate's values; JSON kept one key; CSV repeated the header)."""
    code = main(["sql", DUPLICATE_NAMES, "--format", output, "--catalog", str(paper.catalog.directory)])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert lines == ["dltrace: error: the query outputs 2 columns named s_id (columns 1 and 6): name them apart "
                     "with AS (e.g. t.s_id AS t_s_id) to print its rows"]


def test_distinct_names_print(capsys, paper):
    query = DUPLICATE_NAMES.replace("*", "d.s_id, s.s_id as sale_store, s.t_id")
    assert main(["sql", query, "--format", "json", "--catalog", str(paper.catalog.directory)]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert len(rows) == 11 and all(r["s_id"] == r["sale_store"] for r in rows)


def test_lineage_on_padded_side_contributes_nothing(paper):
    """LINEAGE ON over the padded side of an outer join: padded rows have no granule of it
    (no made-up granule hashed from NULL), and every granule shown decodes."""
    rows = paper.sql(PADDED, lineage_on="s.price").collect()
    padded = [r for r in rows if r.t_id is None]
    matched = [r for r in rows if r.t_id is not None]
    assert padded and matched
    assert all(list(r.DL) == [] for r in padded)
    for row in matched:
        decoded = paper.decode_granules(list(row.DL), PADDED, "s.price")
        assert len(decoded) == 1 and list(decoded[0].values())[0] is not None


@pytest.mark.parametrize("second", [
    "insert into store select * from store",
    "create table my.planes as select * from item",
    "create view `reports/by_carrier` as select * from item",
])
def test_a_script_is_checked_before_its_first_step_runs(paper, second):
    """A statement wrong on line 2 stops the script before step 1 runs and saves its result."""
    from dltrace.errors import BadInput

    script = f"create table first_step as select s_name from store;\n{second};"
    with pytest.raises(BadInput, match=r"^statement 2 \(line 2,"):
        paper.run_script(script)
    assert not paper.store.exists("first_step")


def test_a_bad_save_name_is_refused_before_spark_runs(capsys, paper):
    """The name is checked first: before the query is even rewritten (its unknown table)."""
    code = main(["sql", "select s_name from stor", "--save", "reports/by_carrier",
                 "--catalog", str(paper.catalog.directory)])
    err = capsys.readouterr().err
    assert code == 2 and "'reports/by_carrier' is not a valid result name" in err
    assert not paper.store.exists("reports")
