"""A fuzzed front door: mutated SQL, LINEAGE ON lists, impact sources, catalog.json and
result.json fed to the CLI (``main()`` in-process) and the Python API.  Every outcome is a
result, or one line on stderr with exit status 2 (bad input) or 1 (failure): never a
traceback.

Most cases rewrite without Spark, against a catalog of the TPC-H and paper schemas written
by hand (no data needed); a few run on Spark.  ``DLTRACE_FUZZ_SCALE`` multiplies the number
of cases (``make fuzz``); the count is printed at the end of the run.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dltrace import LineageSession
from dltrace.cli import main
from dltrace.datasets import TABLES, generate
from dltrace.errors import DltraceError
from dltrace.impact.source import parse_source
from tpch.queries import SPJ, TPCH, load

ROOT = Path(__file__).resolve().parent.parent
SCALE = float(os.environ.get("DLTRACE_FUZZ_SCALE", "1"))
ARROW_TYPES = {"int64": "bigint", "int32": "int", "date32[day]": "date", "string": "string", "string_view": "string"}
PAPER_QUERIES = [
    "select s_name, sum(num) as n from store natural join sales group by s_name",
    "select i_name, category from item where i_id in (select i_id from sales where price > 3)",
    "select distinct city from store order by city",
    "select s.s_name, count(*) from store s join sales t on s.s_id = t.s_id group by s.s_name having count(*) > 1",
    "select category from item union select city from store",
    "with big as (select * from sales where num > 1) select i_id, max(price) from big group by i_id",
    "select s_id, rank() over (partition by state order by s_id) from store",
    "select * from item where exists (select 1 from sales where sales.i_id = item.i_id)",
]
CORPUS = PAPER_QUERIES + [load(q) for q in TPCH + SPJ]
KEYWORDS = ["SELECT", "FROM", "WHERE", "GROUP BY", "ORDER BY", "JOIN", "ON", "(", ")", ",", "*", ";", "UNION", "AS",
            "LINEAGE ON (", "DISTINCT", "NULL", "--", "/*", "'", '"', "`", "CASE", "END", "IN", "EXISTS", "LIMIT",
            "OVER"]
ODD_LITERALS = ["10" * 40, "-0", "1e309", "NaN", "0x1F", "'\u00e9\u4e2d\U0001F600'", "''", "'a''b'",
                "date '2024-02-30'", "9223372036854775808", "-9223372036854775809", "1.0e-400", "'\\x00'",
                "CAST('x' AS INT)", "X'0G'", "interval 3 fortnights", "1/0", "array(1, 'a')", "'" + "x" * 5000 + "'"]
TOKEN = re.compile(r"'(?:[^']|'')*'|\w+|\S")


def text() -> st.SearchStrategy[str]:
    """Names and snippets: ASCII words, unicode, control and combining characters."""
    return st.one_of(
        st.from_regex(r"[a-z_][a-z0-9_]{0,12}", fullmatch=True),
        st.text(min_size=1, max_size=12),
        st.sampled_from(["nope", "DL", "_dl_id", "dl", "__dl_x", "s_id", "o_orderkey", "L_SHIPDATE", "😀", "é",
                         "x" * 300]),
    )


@st.composite
def mutated_sql(draw, corpus: list[str] = CORPUS) -> str:
    """A query of the corpus with one to three mutations: truncation, swapped, deleted or
    inserted tokens, unknown names, odd literals, unicode."""
    tokens = TOKEN.findall(draw(st.sampled_from(corpus)))
    for _ in range(draw(st.integers(1, 3))):
        if not tokens:
            break
        i = draw(st.integers(0, len(tokens) - 1))
        kind = draw(st.sampled_from(["truncate", "swap", "delete", "insert", "name", "literal", "unicode"]))
        if kind == "truncate":
            tokens = tokens[:i]
        elif kind == "swap":
            j = draw(st.integers(0, len(tokens) - 1))
            tokens[i], tokens[j] = tokens[j], tokens[i]
        elif kind == "delete":
            del tokens[i]
        elif kind == "insert":
            tokens.insert(i, draw(st.sampled_from(KEYWORDS)))
        elif kind == "name":
            names = [k for k, t in enumerate(tokens) if re.fullmatch(r"[A-Za-z_]\w*", t)]
            if names:
                tokens[draw(st.sampled_from(names))] = draw(text())
        elif kind == "literal":
            literals = [k for k, t in enumerate(tokens) if re.fullmatch(r"\d+|'.*'", t)] or [i]
            tokens[draw(st.sampled_from(literals))] = draw(st.sampled_from(ODD_LITERALS))
        else:
            tokens.insert(i, draw(st.text(min_size=1, max_size=4)))
    return " ".join(tokens)


def lineage_on_lists() -> st.SearchStrategy[str]:
    """``LINEAGE ON`` lists, mostly malformed."""
    item = st.one_of(st.sampled_from(["l_shipmode", "year(l_shipdate)", "o_orderdate", "orders.o_orderkey",
                                      "sum(l_quantity)", "rank() over (order by l_shipdate)", "(select 1)", "nope",
                                      "l_shipmode + o_orderkey", "x.l_shipmode", "1", "", "(", ")", "'a'", "*"]),
                     text())
    return st.lists(item, max_size=4).map(lambda items: ", ".join(items))


def sources() -> st.SearchStrategy[str]:
    """Impact sources: ``TABLE WHERE PREDICATE``, mutated."""
    table = st.sampled_from(
        ["orders", "lineitem", "store", "nope", "orders@v1", "orders@v0", "orders@v99999999999", ""]
    )
    predicate = st.one_of(
        st.sampled_from(["o_orderkey = 42", "o_orderkey =", "_dl_id = 1", "sum(o_totalprice) > 1",
                         "o_orderkey in (select 1)", "lineitem.l_orderkey = 1", "o_orderdate = date '1995-03-15'",
                         "", "1", "o_orderkey = 1; drop table x", "o_orderkey = 1 group by o_orderkey",
                         "o_comment like '%\u00e9%'", "o_orderkey = " + "9" * 50]),
        mutated_sql(["o_orderkey = 42 and o_orderdate < date '1995-01-01' or o_comment = 'x'"]),
    )
    joiner = st.sampled_from([" WHERE ", " where ", " ", " WHERE WHERE ", "\nWHERE\n"])
    return st.tuples(table, joiner, predicate).map("".join)


def json_values(leaves: st.SearchStrategy | None = None) -> st.SearchStrategy:
    leaves = leaves or st.one_of(st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(allow_nan=False),
                                 st.text(max_size=8))
    return st.recursive(leaves, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                         st.dictionaries(st.text(max_size=6), inner, max_size=3)),
                        max_leaves=6)


@st.composite
def mutated_json(draw, valid: dict) -> str:
    """``valid`` with a few fields removed, replaced by odd JSON values, or renamed; sometimes
    not a JSON object at all."""
    if draw(st.integers(0, 9)) == 0:
        return json.dumps(draw(json_values()))
    data = json.loads(json.dumps(valid))
    for _ in range(draw(st.integers(1, 3))):
        path = [data]
        node = data
        while isinstance(node, dict) and node and draw(st.booleans()):
            key = draw(st.sampled_from(sorted(node)))
            path.append(key)
            node = node[key]
        parent = data
        for key in path[1:-1]:
            parent = parent[key]
        if len(path) < 2 or not isinstance(parent, dict):
            continue
        key = path[-1]
        action = draw(st.sampled_from(["delete", "replace", "rename"]))
        if action == "delete":
            del parent[key]
        elif action == "replace":
            parent[key] = draw(json_values())
        else:
            parent[key + draw(st.sampled_from(["_", "X", " "]))] = parent.pop(key)
    return json.dumps(data)


# --- the check ---------------------------------------------------------------------------

def front_door(args: list[str], counter) -> tuple[int, str, str]:
    """Run the CLI in-process: a result (exit 0), or one ``dltrace: error:`` line with exit 1
    or 2.  An exception escaping ``main`` fails the test with its traceback."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(args)
        except SystemExit as exit_:  # argparse: a usage error
            code = exit_.code
    counter[args[0]] += 1
    errors = [line for line in err.getvalue().splitlines() if line.strip() and not line.startswith("dltrace: warning:")]
    if code == 0:
        assert not errors, f"{args!r}: exit 0 with {err.getvalue()!r}"
    else:
        assert code in (1, 2), f"{args!r}: exit {code}"
        assert len(errors) == 1 and errors[0].startswith("dltrace: error: "), f"{args!r}: {err.getvalue()!r}"
        assert "Traceback" not in errors[0] and "sqlglot" not in errors[0], errors[0]
    return code, out.getvalue(), err.getvalue()


def examples(n: int) -> settings:
    return settings(max_examples=max(1, int(n * SCALE)), deadline=None, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.function_scoped_fixture])


# --- a catalog without data: schemas are enough to rewrite -----------------------------

def table_entry(code: int, schema: dict[str, str]) -> dict:
    return {"code": code, "path": f"tables/t{code}-v1.parquet", "source": "/nowhere", "key": None, "order_by": None,
            "rows": 1000, "schema": schema}


@pytest.fixture(scope="module")
def schema_catalog(tmp_path_factory) -> Path:
    """TPC-H's schemas (from the generated Parquet's footers) and the paper's, in a catalog
    that has no table data: rewriting never reads it."""
    directory = tmp_path_factory.mktemp("fuzz-catalog")
    data = generate(0.01, ROOT / "data")
    tables = {}
    for code, name in enumerate(TABLES, 1):
        schema = {f.name: ARROW_TYPES.get(str(f.type)) or str(f.type).replace("decimal128", "decimal")
                  for f in pq.read_schema(data / f"{name}.parquet")}
        tables[name] = table_entry(code, schema)
    paper = {"store": {"s_id": "int", "s_name": "string", "city": "string", "state": "string"},
             "item": {"i_id": "int", "i_name": "string", "category": "string"},
             "sales": {"t_id": "int", "s_id": "int", "i_id": "int", "price": "int", "num": "int"}}
    for code, (name, schema) in enumerate(paper.items(), len(TABLES) + 1):
        tables[name] = table_entry(code, schema)
    (directory / "catalog.json").write_text(json.dumps({"format": 1, "version": 1, "tables": tables}))
    return directory


# --- the fuzz tests ----------------------------------------------------------------------

def test_fuzz_rewrite(schema_catalog, fuzz_cases):
    @examples(1100)
    @given(mutated_sql(), st.sampled_from([[], ["--semantics", "data"], ["--repr", "bdd"], ["--repr", "auto"]]))
    def check(query, options):
        front_door(["rewrite", query, *options, "--catalog", str(schema_catalog)], fuzz_cases)

    check()


def test_fuzz_python_api(schema_catalog, fuzz_cases):
    session = LineageSession(schema_catalog)

    @examples(300)
    @given(mutated_sql(), st.sampled_from(["control", "data", "nope"]), st.sampled_from(["set", "bdd", "auto", "x"]))
    def check(query, semantics, representation):
        fuzz_cases["api"] += 1
        with contextlib.suppress(DltraceError):
            assert "DL" in session.rewrite(query, semantics, representation)
        with contextlib.suppress(DltraceError):
            session.plain(query)

    check()


def test_fuzz_lineage_on(schema_catalog, fuzz_cases):
    query = (
        "select l_shipmode, sum(l_quantity) from lineitem join orders on l_orderkey = o_orderkey group by l_shipmode"
    )

    @examples(250)
    @given(lineage_on_lists(), st.booleans())
    def check(items, as_clause):
        args = ["rewrite", f"{query} LINEAGE ON ({items})"] if as_clause else ["rewrite", query, "--lineage-on", items]
        front_door([*args, "--catalog", str(schema_catalog)], fuzz_cases)

    check()


def test_fuzz_impact_sources(schema_catalog, fuzz_cases):
    """Sources are checked before the result is looked up: a good one ends at the unknown result."""
    @examples(250)
    @given(sources())
    def check(source):
        code, _, err = front_door(["impact", "--source", source, "--result", "none", "--catalog", str(schema_catalog)],
                                  fuzz_cases)
        assert code == 2

    check()


def test_fuzz_catalog_json(schema_catalog, tmp_path, fuzz_cases):
    valid = json.loads((schema_catalog / "catalog.json").read_text())
    valid["tables"] = {name: valid["tables"][name] for name in ("orders", "store")}

    @examples(150)
    @given(mutated_json(valid), st.sampled_from(["rewrite", "tables"]))
    def check(content, command):
        (tmp_path / "catalog.json").write_text(content)
        args = ["rewrite", "select o_orderkey from orders"] if command == "rewrite" else ["tables"]
        code, _, _ = front_door([*args, "--catalog", str(tmp_path)], fuzz_cases)
        assert code in (0, 1, 2)

    check()


def test_fuzz_result_metadata(schema_catalog, tmp_path, fuzz_cases):
    (tmp_path / "catalog.json").write_text((schema_catalog / "catalog.json").read_text())
    home = tmp_path / "results" / "r"
    home.mkdir(parents=True)
    valid = {"name": "r", "query": "select s_name from store", "semantics": "control", "representation": "set",
             "catalog_version": 1, "tables": {"store": 1}, "created_at": 1.5e9, "rows": 4, "columns": ["s_name"],
             "data": "results/r/x/rows.parquet", "index": None, "schema": {"_row": "bigint", "s_name": "string"},
             "format": 1}

    @examples(100)
    @given(mutated_json(valid), st.sampled_from([["results"], ["results", "--format", "json"],
                                                ["impact", "--source", "store WHERE nope = 1", "--result", "r"]]))
    def check(content, args):
        (home / "result.json").write_text(content)
        front_door([*args, "--catalog", str(tmp_path)], fuzz_cases)

    check()


def test_fuzz_parse_source_api(schema_catalog, fuzz_cases):
    session = LineageSession(schema_catalog)

    @examples(100)
    @given(sources())
    def check(source):
        fuzz_cases["api"] += 1
        with contextlib.suppress(DltraceError):
            parse_source(source, session.catalog)

    check()


def test_fuzz_on_spark(paper, fuzz_cases):
    """Mutated queries that get past the rewriter run on Spark: its errors are one line too."""
    catalog = str(paper.catalog.directory)

    @examples(25)
    @given(mutated_sql(PAPER_QUERIES), st.sampled_from([[], ["--lineage-on", ""], ["--lineage-on", "city"]]))
    def check(query, options):
        front_door(["sql", query, *options, "--format", "json", "--limit", "3", "--catalog", catalog], fuzz_cases)

    check()
