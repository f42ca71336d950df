"""PySpark DataFrame programs, generated from a stream of choices (issue 65, item 2).

The DataFrame counterpart of ``tests/query_generator.py``: a program is the text of a script
as a team writes one, one operation per line (so that an error's line names the operation),
over two small sources (``tests/program_check.py`` writes them): ``events``, Parquet with
nested structs and arrays, and ``users``, JSON.  Each program builds frames ``f1, f2, ...`` by
selects with expressions of every kind (nested fields, casts and ``try_cast``, literals of
every type, arrays and higher-order functions, structs, UDFs), filters, joins of every type,
aggregates, windows, generators, pivots, unions by name and set operations, then writes its
last frame to Parquet and prints it (``show`` of it in a total order, or its count).
``python -m tests.program_generator --seed 7`` prints program 7; choices come through a
``Chooser`` of tests/query_generator.py (a seed, or hypothesis' data to shrink).

Rows must not depend on Spark's plan: windows that number rows order by the unique ``id``,
collected lists are sorted, doubles are multiples of 1/4 (their sums exact in any order),
and ``dropDuplicates`` of a subset only keeps the key.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field

from tests.program_expressions import Expressions, Frame, ddl, scalar
from tests.query_generator import Chooser, RandomChooser

# the two sources: (name, how the script reads it, columns); ``id`` is events' unique key
EVENTS = {"id": "bigint", "user": "string", "qty": "int", "amount": "double", "price": "decimal(10,2)",
          "day": "date", "ts": "timestamp", "flag": "boolean", "code": "string", "tags": ("array", "string"),
          "items": ("array", ("struct", (("sku", "string"), ("qty", "int")))),
          "info": ("struct", (("city", "string"), ("zip", "int"),
                              ("geo", ("struct", (("lat", "double"), ("lon", "double"))))))}
USERS = {"age": "bigint", "country": "string",
         "prefs": ("struct", (("color", "string"), ("langs", ("array", "string")))),
         "user": "string"}  # a JSON read's inferred columns, in the order Spark infers them
PREAMBLE = (
    "import datetime",
    "import sys",
    "from decimal import Decimal",
    "from pyspark.sql import SparkSession, Window, functions as F",
    "spark = SparkSession.builder.appName('generated').getOrCreate()",
    "DATA, OUT = sys.argv[1], sys.argv[2]",
    "events = spark.read.parquet(DATA + '/events')",
    "users = spark.read.json(DATA + '/users.json')",
    "twice = F.udf(lambda v: None if v is None else 2 * v, 'bigint')",
    "label = F.udf(lambda s: None if s is None else s[:2].upper() + '!', 'string')",
)
JOIN_TYPES = ("inner", "left", "right", "full", "cross", "left_semi", "left_anti", "outer", "left_outer")
OPERATIONS = ("select", "select", "with_column", "filter", "join", "aggregate", "window", "explode", "union",
              "pivot", "reshape", "set_operation", "lookup")


@dataclass
class Program:
    """A generated program: its body's lines (after ``PREAMBLE``) and the frame it writes."""

    seed: int
    body: list[str]

    def text(self, out: str = "p") -> str:
        return "\n".join((*PREAMBLE, *self.body_for(out))) + "\n"

    def body_for(self, out: str) -> list[str]:
        return [line.replace("@OUT", out) for line in self.body]


@dataclass
class ProgramGenerator:
    """One program's worth of choices; ``program()`` is the entry point."""

    chooser: Chooser
    seed: int = 0
    lines: list[str] = field(default_factory=list)
    frames: int = 0
    windowed: bool = False

    def __post_init__(self) -> None:
        self.x = Expressions(self.chooser)

    def new(self, text: str, columns: dict, key: str | None) -> Frame:
        """A line ``fN = text``: the frame it makes."""
        self.frames += 1
        name = f"f{self.frames}"
        self.lines.append(f"{name} = {text}")
        return Frame(name, dict(columns), key)

    def program(self) -> Program:
        c = self.chooser
        frame = self.source()
        for _ in range(c.integer(1, 5)):
            frame = getattr(self, c.choice(OPERATIONS))(frame)
        # not generated: a typo'd column name, which dltrace reports as its own "column x is not
        # among the columns here" where Spark raises UNRESOLVED_COLUMN.WITH_SUGGESTION (issue 65,
        # item 3, in hand in jobs.py); errors are compared where Spark fails at run time
        self.lines.append(f"{frame.name}.write.mode('overwrite').parquet(OUT + '/@OUT')")
        self.printed(frame)
        return Program(self.seed, list(self.lines))

    def printed(self, frame: Frame) -> None:
        """``show`` in a total order of its columns (ties are equal rows), a count, or a collect."""
        c = self.chooser
        how = c.choice(["show", "show", "count", "collect", "none"])
        if how == "show" and frame.columns:
            order = ", ".join(f"F.col('{n}')" for n in frame.columns)
            self.lines.append(f"{frame.name}.orderBy({order}).show(30, truncate=False)")
        elif how == "count":
            self.lines.append(f"print('rows', {frame.name}.count())")
        elif how == "collect":
            self.lines.append(f"print(sorted(str(r) for r in {frame.name}.collect()))")

    # -- frames ------------------------------------------------------------------------------

    def source(self) -> Frame:
        c = self.chooser
        if c.chance(0.8):
            if c.chance(0.5):
                return Frame("events", dict(EVENTS), "id")
            return self.new(f"events.filter({self.x.predicate(Frame('events', EVENTS, 'id'))})", EVENTS, "id")
        return Frame("users", dict(USERS), "user")

    def select(self, frame: Frame) -> Frame:
        c = self.chooser
        kept = [n for n in frame.columns if c.chance(0.5)] or [c.choice(list(frame.columns))]
        items = [f"'{n}'" for n in kept]
        columns = {n: frame.columns[n] for n in kept}
        for _ in range(c.integer(1, 3)):
            text, kind = self.x.expression(frame)
            name = self.x.name()
            items.append(f"({text}).alias('{name}')")
            columns[name] = kind
        if c.chance(0.15):  # a SQL string
            text, kind, name = self.x.sql_expression(frame)
            items.append(text)
            columns[name] = kind
        key = frame.key if frame.key in kept else None
        return self.new(f"{frame.name}.select({', '.join(items)})", columns, key)

    def with_column(self, frame: Frame) -> Frame:
        c = self.chooser
        if c.chance(0.2) and len(frame.columns) > 2:
            old = c.choice([n for n in frame.columns if n != frame.key])
            new = self.x.name()
            columns = {new if n == old else n: t for n, t in frame.columns.items()}
            if c.chance(0.5):
                return self.new(f"{frame.name}.withColumnRenamed('{old}', '{new}')", columns, frame.key)
            del columns[new]
            return self.new(f"{frame.name}.drop('{old}')", columns, frame.key)
        text, kind = self.x.expression(frame)
        name = c.choice([self.x.name(), *[n for n in frame.columns if n != frame.key]])
        return self.new(f"{frame.name}.withColumn('{name}', {text})", {**frame.columns, name: kind}, frame.key)

    def filter(self, frame: Frame) -> Frame:
        if self.chooser.chance(0.2):
            return self.new(f"{frame.name}.na.drop(subset=['{self.chooser.choice(list(frame.columns))}'])",
                            frame.columns, frame.key)
        return self.new(f"{frame.name}.filter({self.x.predicate(frame)})", frame.columns, frame.key)

    def join(self, frame: Frame) -> Frame:
        """A join with users (renamed but ``user``) or another slice of events, on ``user``."""
        c = self.chooser
        how = c.choice(JOIN_TYPES)
        if "user" not in frame.columns or frame.columns["user"] != "string":
            return self.select(frame)
        if c.chance(0.6):
            right_columns = {"user": "string", "r_age": "bigint", "r_country": "string", "r_prefs": USERS["prefs"]}
            right = self.new("users.select('user', F.col('age').alias('r_age'), F.col('country').alias('r_country'), "
                             "F.col('prefs').alias('r_prefs'))", right_columns, "user")
        else:
            right_columns = {"user": "string", "r_id": "bigint", "r_tags": EVENTS["tags"]}
            right = self.new(f"events.filter({self.x.predicate(Frame('events', EVENTS, 'id'))})"
                             f".select('user', F.col('id').alias('r_id'), F.col('tags').alias('r_tags'))",
                             right_columns, None)
        clash = set(map(str.lower, frame.columns)) & set(right_columns) - {"user"}
        if clash:
            return self.select(frame)
        if how == "cross":
            right = self.new(f"{right.name}.withColumnRenamed('user', 'r_user')",
                             {("r_user" if n == "user" else n): t for n, t in right_columns.items()}, None)
            return self.new(f"{frame.name}.crossJoin({right.name})", {**frame.columns, **right.columns}, None)
        if how in ("left_semi", "left_anti"):
            return self.new(f"{frame.name}.join({right.name}, 'user', '{how}')", frame.columns, frame.key)
        on = "'user'" if c.chance(0.5) else "['user']"
        kept = frame.key if how in ("inner", "left", "left_outer") and right.key else None
        columns = {"user": "string", **{n: t for n, t in frame.columns.items() if n != "user"},
                   **{n: t for n, t in right.columns.items() if n != "user"}}
        return self.new(f"{frame.name}.join({right.name}, {on}, '{how}')", columns, kept)

    def aggregate(self, frame: Frame) -> Frame:
        c = self.chooser
        groupable = [n for n, t in frame.columns.items() if scalar(t)]
        keys = [n for n in groupable if n != frame.key and c.chance(0.3)][:2]
        aggregates, columns = [], {n: frame.columns[n] for n in keys}
        for _ in range(c.integer(1, 3)):
            text, kind = self.x.aggregate(frame)
            name = self.x.name()
            aggregates.append(f"({text}).alias('{name}')")
            columns[name] = kind
        grouping = c.choice(["groupBy", "groupBy", "groupBy", "rollup", "cube"]) if keys else "groupBy"
        listed = ", ".join(f"'{k}'" for k in keys)
        if not aggregates or c.chance(0.1):
            return self.new(f"{frame.name}.{grouping}({listed}).count()", {**columns_of(frame, keys),
                                                                             "count": "bigint"}, None)
        return self.new(f"{frame.name}.{grouping}({listed}).agg({', '.join(aggregates)})", columns, None)

    def window(self, frame: Frame) -> Frame:
        text, kind = self.x.window(frame)
        self.windowed = True
        name = self.x.name()
        return self.new(f"{frame.name}.withColumn('{name}', {text})", {**frame.columns, name: kind}, frame.key)

    def explode(self, frame: Frame) -> Frame:
        c = self.chooser
        arrays = [n for n, t in frame.columns.items() if isinstance(t, tuple) and t[0] == "array"]
        if not arrays:
            return self.with_column(frame)
        name = c.choice(arrays)
        element = frame.columns[name][1]
        rest = {n: t for n, t in frame.columns.items() if n != name}
        kept = "".join(f"'{n}', " for n in rest)
        function = c.choice(["explode", "explode_outer", "posexplode", "posexplode_outer", "inline", "inline_outer"])
        if function.startswith("inline"):
            fields = dict(element[1]) if isinstance(element, tuple) and element[0] == "struct" else {}
            if not fields:
                function = "explode"
            else:  # the struct's fields become columns: a column of the same name goes first
                rest = {n: t for n, t in rest.items() if n.lower() not in fields}
                kept = "".join(f"'{n}', " for n in rest)
                return self.new(f"{frame.name}.select({kept}F.{function}('{name}'))", {**rest, **fields}, None)
        if function.startswith("pos"):
            pos, value = self.x.name(), self.x.name()
            return self.new(f"{frame.name}.select({kept}F.{function}('{name}').alias('{pos}', '{value}'))",
                            {**rest, pos: "int", value: element}, None)
        value = self.x.name()
        return self.new(f"{frame.name}.select({kept}F.{function}('{name}').alias('{value}'))",
                        {**rest, value: element}, None)

    def union(self, frame: Frame) -> Frame:
        """The frame with a filtered copy of itself: by position, by name reordered, by name with
        a column missing (``allowMissingColumns``), or a struct column's fields in another order."""
        c = self.chooser
        names = list(frame.columns)
        other = self.new(f"{frame.name}.filter({self.x.predicate(frame)})", frame.columns, None)
        how = c.choice(["union", "unionByName", "missing", "struct"])
        if how == "union":
            return self.new(f"{frame.name}.{c.choice(['union', 'unionAll'])}({other.name})", frame.columns, None)
        if how == "missing" and len(names) > 1:
            dropped = c.choice(names)
            return self.new(f"{frame.name}.unionByName({other.name}.drop('{dropped}'), allowMissingColumns=True)",
                            frame.columns, None)
        scalars = [n for n in names if scalar(frame.columns[n])]
        if how == "struct" and len(scalars) >= 2:
            a, b = c.choice([(x, y) for x in scalars for y in scalars if x != y])
            s = self.x.name()
            left = self.new(f"{frame.name}.withColumn('{s}', F.struct('{a}', '{b}'))",
                            {**frame.columns, s: ("struct", ((a, frame.columns[a]), (b, frame.columns[b])))}, None)
            right = self.new(f"{other.name}.withColumn('{s}', F.struct('{b}', '{a}'))", left.columns, None)
            missing = c.choice([", allowMissingColumns=True", ", allowMissingColumns=True", ""])
            return self.new(f"{left.name}.unionByName({right.name}{missing})", left.columns, None)
        shuffled = list(reversed(names))
        reordered = self.new(f"{other.name}.select({', '.join(repr(n) for n in shuffled)})",
                             {n: frame.columns[n] for n in shuffled}, None)
        return self.new(f"{frame.name}.unionByName({reordered.name})", frame.columns, None)

    def pivot(self, frame: Frame) -> Frame:
        c = self.chooser
        strings = [n for n, t in frame.columns.items() if t == "string" and n in ("user", "r_country", "country")]
        if not strings:
            return self.aggregate(frame)
        pivot = c.choice(strings)
        keys = [n for n, t in frame.columns.items() if scalar(t) and n not in (pivot, frame.key)]
        key = c.choice(keys) if keys else None
        values = {"user": ["ann", "bob", "cy"], "r_country": ["fr", "de"], "country": ["fr", "de"]}[pivot]
        # without values only under a key: groupBy().pivot() of no rows is one row of no columns,
        # which dltrace refuses (a result has columns)
        chosen = c.choice([values, values[:1], []] if key else [values, values[:1]])
        aggregate, kind = self.x.aggregate(frame)
        listed = f", {chosen!r}" if chosen else ""
        columns = {key: frame.columns[key]} if key else {}
        # without values the columns are the data's (none over no rows): the next lines read the key only
        columns.update({v: kind for v in (chosen or [])})
        grouped = f"groupBy('{key}')" if key else "groupBy()"
        return self.new(f"{frame.name}.{grouped}.pivot('{pivot}'{listed}).agg({aggregate})", columns, None)

    def reshape(self, frame: Frame) -> Frame:
        c = self.chooser
        how = c.choice(["distinct", "drop_duplicates", "order_limit", "fill", "unpivot"])
        if self.windowed and how in ("distinct", "drop_duplicates"):
            how = "order_limit"  # dltrace refuses SELECT DISTINCT over a window function's column
        if how == "distinct":
            return self.new(f"{frame.name}.distinct()", frame.columns, frame.key)
        if how == "drop_duplicates":
            subset = f"['{frame.key}']" if frame.key and c.chance(0.5) else ""
            return self.new(f"{frame.name}.dropDuplicates({subset})", frame.columns, frame.key)
        if how == "order_limit":
            order = ", ".join(f"F.col('{n}').{c.choice(['asc', 'desc', 'asc_nulls_last'])}()" for n in frame.columns)
            return self.new(f"{frame.name}.orderBy({order}).limit({c.integer(0, 8)})", frame.columns, frame.key)
        if how == "fill":
            fills = {n: v for n, t in frame.columns.items() if (v := FILLS.get(t)) is not None and c.chance(0.5)}
            return self.new(f"{frame.name}.na.fill({fills!r})", frame.columns, frame.key)
        by_type: dict = {}
        for n, t in frame.columns.items():
            if scalar(t):
                by_type.setdefault(t, []).append(n)
        same = [names for names in by_type.values() if len(names) >= 2]
        if not same:
            return self.new(f"{frame.name}.distinct()", frame.columns, frame.key)
        values = c.choice(same)[:3]
        ids = [n for n in frame.columns if n not in values and scalar(frame.columns[n])][:2]
        kind = frame.columns[values[0]]
        return self.new(f"{frame.name}.unpivot({ids!r}, {values!r}, 'name', 'value')",
                        {**columns_of(frame, ids), "name": "string", "value": kind}, None)

    def set_operation(self, frame: Frame) -> Frame:
        c = self.chooser
        other = self.new(f"{frame.name}.filter({self.x.predicate(frame)})", frame.columns, None)
        operation = c.choice(["intersect", "subtract", "intersectAll", "exceptAll"])
        return self.new(f"{frame.name}.{operation}({other.name})", frame.columns, frame.key)

    def lookup(self, frame: Frame) -> Frame:
        """A join with rows made in the script (``createDataFrame``), as jobs make lookups."""
        if "user" not in frame.columns or frame.columns["user"] != "string" or "grade" in frame.columns:
            return self.filter(frame)
        rows = [("ann", 1, 0.5), ("bob", None, 2.25), ("zed", 3, None)][:self.chooser.integer(1, 3)]
        how = self.chooser.choice(["inner", "left", "full", "left_anti"])
        lookup = self.new(f"spark.createDataFrame({rows!r}, 'user string, grade int, weight double')",
                          {"user": "string", "grade": "int", "weight": "double"}, None)
        columns = frame.columns if how == "left_anti" else {**frame.columns, "grade": "int", "weight": "double"}
        return self.new(f"{frame.name}.join({lookup.name}, 'user', '{how}')", columns,
                        frame.key if how in ("inner", "left", "left_anti") else None)


FILLS = {"int": 0, "bigint": -1, "double": 0.5, "string": "none", "boolean": False}


def columns_of(frame: Frame, names: list[str]) -> dict:
    return {n: frame.columns[n] for n in names}


def generate(seed: int) -> Program:
    """The program of ``seed``."""
    return ProgramGenerator(RandomChooser(seed), seed).program()


def main() -> None:
    parser = argparse.ArgumentParser(description="print generated DataFrame programs")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("-n", type=int, default=1)
    args = parser.parse_args()
    for seed in range(args.seed, args.seed + args.n):
        print(f"# program {seed}\n{generate(seed).text()}")


if __name__ == "__main__":
    main()


__all__ = ["PREAMBLE", "Program", "ProgramGenerator", "generate", "ddl"]
