"""Column expressions of generated DataFrame programs (tests/program_generator.py), typed.

A type is a Spark type name (``"int"``, ``"decimal(10,2)"``) or a tuple for the nested ones:
``("array", element)`` and ``("struct", ((name, type), ...))``.  Each expression comes with its
type so that the next operation picks arguments Spark accepts; the model is approximate (a
sum's exact numeric type does not matter to the generator), and where it is wrong the program
fails in Spark, plain and traced alike, which is compared too.
"""

from __future__ import annotations

from dataclasses import dataclass

from tests.query_generator import Chooser

NUMBERS = ("int", "bigint", "double", "decimal(10,2)", "decimal(3,2)")
LITERALS = {
    "int": ("F.lit(3)", "F.lit(-1)", "F.lit(0)", "F.lit(None).cast('int')"),
    "bigint": ("F.lit(2 ** 40)", "F.lit(7).cast('bigint')"),
    "double": ("F.lit(1.5)", "F.lit(-0.25)", "F.lit(float('nan'))", "F.lit(None).cast('double')"),
    "decimal(3,2)": ("F.lit(Decimal('1.20'))", "F.lit(Decimal('-0.05'))"),
    "string": ("F.lit('x')", "F.lit('')", "F.lit('ünï')", "F.lit(None).cast('string')"),
    "boolean": ("F.lit(True)", "F.lit(False)"),
    "date": ("F.lit(datetime.date(2024, 2, 29))", "F.lit(datetime.date(1999, 12, 31))"),
    "timestamp": ("F.lit(datetime.datetime(2024, 1, 2, 3, 4, 5))",),
    "binary": ("F.lit(bytearray(b'ab'))",),
}


@dataclass
class Frame:
    """A DataFrame of the program: its variable, columns (name to type) and a unique non-null
    column if it has one (windows that number rows order by it)."""

    name: str
    columns: dict
    key: str | None


def scalar(kind) -> bool:
    return isinstance(kind, str)


def numeric(kind) -> bool:
    return kind in NUMBERS or (isinstance(kind, str) and kind.startswith("decimal"))


def ddl(kind) -> str:
    """Spark's name of ``kind``."""
    if scalar(kind):
        return kind
    if kind[0] == "array":
        return f"array<{ddl(kind[1])}>"
    return "struct<" + ",".join(f"{n}:{ddl(t)}" for n, t in kind[1]) + ">"


def arithmetic(a, b) -> str:
    if "double" in (a, b):
        return "double"
    if any(str(t).startswith("decimal") for t in (a, b)):
        return "decimal(10,2)"
    return "bigint" if "bigint" in (a, b) else "int"


class Expressions:
    """Typed expressions over a frame's columns, from ``chooser``'s choices."""

    def __init__(self, chooser: Chooser) -> None:
        self.c = chooser
        self.names = 0

    def name(self) -> str:
        self.names += 1
        return f"c{self.names}"

    # -- references --------------------------------------------------------------------------

    def references(self, frame: Frame) -> list[tuple[str, object]]:
        """Every column and nested struct field of ``frame``, as a Column expression."""
        found = []

        def walk(text: str, dotted: str | None, kind) -> None:
            found.append((text, kind))
            if not scalar(kind) and kind[0] == "struct":
                for name, inner in kind[1]:
                    if dotted is not None and self.c.chance(0.5):
                        walk(f"F.col('{dotted}.{name}')", f"{dotted}.{name}", inner)
                    else:
                        walk(f"{text}.getField('{name}')" if self.c.chance(0.5) else f"{text}['{name}']", None, inner)
            elif not scalar(kind) and kind[0] == "array" and not scalar(kind[1]) and self.c.chance(0.3):
                walk(f"F.get({text}, 0)" if self.c.chance(0.8) else f"{text}[0]", None, kind[1])

        for name, kind in frame.columns.items():
            walk(f"F.col('{name}')", name, kind)
        return found

    def of(self, frame: Frame, wanted) -> tuple[str, object]:
        """A column or literal whose type passes ``wanted``."""
        refs = [r for r in self.references(frame) if wanted(r[1])]
        literals = [(text, kind) for kind, texts in LITERALS.items() if wanted(kind) for text in texts]
        if refs and (not literals or self.c.chance(0.75)):
            return self.c.choice(refs)
        if literals:
            return self.c.choice(literals)
        return "F.lit(1)", "int"

    # -- expressions by kind -----------------------------------------------------------------

    def expression(self, frame: Frame, depth: int = 0) -> tuple[str, object]:
        kind = self.c.choice(["number", "number", "string", "string", "boolean", "date", "array", "struct",
                              "literal", "udf"])
        return getattr(self, kind)(frame, depth)

    def literal(self, frame: Frame, depth: int) -> tuple[str, object]:
        c = self.c
        kind = c.choice(sorted(LITERALS))
        if c.chance(0.3):
            return c.choice([("F.lit([1, 2, 3])", ("array", "int")),
                             ("F.array(F.lit('a'), F.lit(None))", ("array", "string")),
                             ("F.struct(F.lit(1).alias('a'), F.lit('b').alias('b'))",
                              ("struct", (("a", "int"), ("b", "string")))),
                             ("F.create_map(F.lit('k'), F.lit(1)).getItem('k')", "int"),
                             ("F.lit(None)", "void")])
        return c.choice(LITERALS[kind]), kind

    def number(self, frame: Frame, depth: int = 0) -> tuple[str, object]:
        c = self.c
        if depth > 1 or c.chance(0.3):
            return self.of(frame, numeric)
        form = c.choice(["binary", "binary", "function", "cast", "size", "when", "try", "nested"])
        if form == "binary":
            (a, ka), (b, kb) = self.number(frame, depth + 1), self.number(frame, depth + 1)
            op = c.choice(["+", "-", "*", "/", "%"])
            return f"({a} {op} {b})", "double" if op == "/" else arithmetic(ka, kb)
        if form == "function":
            a, kind = self.number(frame, depth + 1)
            return c.choice([(f"F.abs({a})", kind), (f"F.round({a}, 1)", kind), (f"F.coalesce({a}, F.lit(0))", kind),
                             (f"F.greatest({a}, F.lit(2))", kind), (f"F.negate({a})", kind),
                             (f"F.signum({a})", "double")])
        if form == "cast":
            a, _ = self.of(frame, lambda k: scalar(k) and k not in ("date", "timestamp", "binary", "void"))
            target = c.choice(["int", "bigint", "double", "decimal(8,3)"])
            method = c.choice(["cast", "try_cast", "try_cast"])
            return f"{a}.{method}('{target}')", target
        if form == "size":
            s, _ = self.of(frame, lambda k: k == "string")
            arrays = [r for r in self.references(frame) if not scalar(r[1]) and r[1][0] == "array"]
            if arrays and c.chance(0.6):
                return f"F.size({c.choice(arrays)[0]})", "int"
            return c.choice([(f"F.length({s})", "int"), (f"F.year({self.date(frame, 2)[0]})", "int"),
                             (f"F.datediff({self.date(frame, 2)[0]}, F.lit(datetime.date(2024, 1, 1)))", "int")])
        if form == "when":
            (a, ka), (b, kb) = self.number(frame, depth + 1), self.number(frame, depth + 1)
            return f"F.when({self.predicate(frame, depth + 1)}, {a}).otherwise({b})", arithmetic(ka, kb)
        if form == "try":
            (a, ka), (b, kb) = self.number(frame, depth + 1), self.number(frame, depth + 1)
            function = c.choice(["try_add", "try_subtract", "try_multiply", "try_divide"])
            return f"F.{function}({a}, {b})", "double" if function == "try_divide" else arithmetic(ka, kb)
        items = [r for r in self.references(frame) if r[1] == ("array", EVENT_ITEM)]
        if items:
            text = c.choice([f"F.aggregate(F.transform({items[0][0]}, lambda i: i['qty']), F.lit(0), "
                             f"lambda acc, q: acc + F.coalesce(q, F.lit(0)))",
                             f"F.element_at({items[0][0]}, 1)['qty']", f"F.array_max(F.transform({items[0][0]}, "
                             f"lambda i: i.qty))"])
            return text, "int"
        return self.of(frame, numeric)

    def string(self, frame: Frame, depth: int = 0) -> tuple[str, object]:
        c = self.c
        if depth > 1 or c.chance(0.3):
            return self.of(frame, lambda k: k == "string")
        s, _ = self.string(frame, depth + 1)
        any_scalar, _ = self.of(frame, lambda k: scalar(k) and k != "void")
        arrays = [r[0] for r in self.references(frame) if r[1] == ("array", "string")]
        forms = [f"F.upper({s})", f"F.concat({s}, F.lit('-'), {self.string(frame, depth + 1)[0]})",
                 f"F.substring({s}, 1, 2)", f"F.coalesce({s}, F.lit('none'))", f"{any_scalar}.cast('string')",
                 f"F.regexp_replace({s}, 'n', 'N')", f"F.lpad({s}, 4, '*')", f"F.trim({s})",
                 f"F.date_format({self.date(frame, 2)[0]}, 'yyyy-MM')",
                 f"F.when({self.predicate(frame, depth + 1)}, {s})", f"F.concat_ws('/', {s}, {any_scalar})"]
        if arrays:
            forms += [f"F.array_join({c.choice(arrays)}, '|')", f"F.concat_ws(',', {c.choice(arrays)})"]
        return c.choice(forms), "string"

    def boolean(self, frame: Frame, depth: int = 0) -> tuple[str, object]:
        return self.predicate(frame, depth), "boolean"

    def predicate(self, frame: Frame, depth: int = 0) -> str:
        c = self.c
        form = c.choice(["compare", "compare", "null", "in", "string", "and", "or", "not", "array", "between"])
        if depth > 1 and form in ("and", "or", "not"):
            form = "compare"
        if form == "compare":
            a, kind = self.of(frame, lambda k: scalar(k) and k not in ("binary", "void"))
            b, _ = self.of(frame, lambda k: k == kind or (numeric(k) and numeric(kind)))
            operator = c.choice(["==", "!=", "<", "<=", ">", ">="])
            return f"({a} {operator} {b})" if c.chance(0.9) else f"{a}.eqNullSafe({b})"
        if form == "null":
            a, _ = self.c.choice(self.references(frame))
            return f"{a}.{c.choice(['isNull', 'isNotNull'])}()"
        if form == "in":
            a, _ = self.of(frame, lambda k: k == "string")
            return f"{a}.isin('ann', 'bob', 'x')"
        if form == "string":
            a, _ = self.of(frame, lambda k: k == "string")
            return c.choice([f"{a}.startswith('a')", f"{a}.like('%n%')", f"{a}.rlike('^[a-c]')", f"{a}.contains('e')"])
        if form in ("and", "or"):
            joined = " & " if form == "and" else " | "
            return f"({self.predicate(frame, depth + 1)}{joined}{self.predicate(frame, depth + 1)})"
        if form == "not":
            return f"~{self.predicate(frame, depth + 1)}"
        if form == "between":
            a, _ = self.of(frame, numeric)
            return f"{a}.between(1, 5)"
        arrays = [r[0] for r in self.references(frame) if r[1] == ("array", "string")]
        if not arrays:
            return f"F.col('{c.choice(list(frame.columns))}').isNotNull()"
        return c.choice([f"F.array_contains({c.choice(arrays)}, 'a')",
                         f"F.exists({c.choice(arrays)}, lambda t: t.startswith('b'))",
                         f"F.forall({c.choice(arrays)}, lambda t: F.length(t) < 3)"])

    def date(self, frame: Frame, depth: int = 0) -> tuple[str, object]:
        c = self.c
        d, _ = self.of(frame, lambda k: k == "date")
        t, _ = self.of(frame, lambda k: k == "timestamp")
        if depth > 1 or c.chance(0.3):
            return d, "date"
        return c.choice([(f"F.date_add({d}, 3)", "date"), (f"F.to_date({t})", "date"), (f"F.last_day({d})", "date"),
                         (f"F.date_trunc('hour', {t})", "timestamp"), ("F.col('code').try_cast('date')", "date")
                         if "code" in frame.columns else (d, "date"),
                         ("F.make_date(F.lit(2024), F.lit(1), F.lit(31))", "date")])

    def array(self, frame: Frame, depth: int = 0) -> tuple[str, object]:
        c = self.c
        strings = [r[0] for r in self.references(frame) if r[1] == ("array", "string")]
        items = [r[0] for r in self.references(frame) if r[1] == ("array", EVENT_ITEM)]
        a, kind = self.of(frame, lambda k: k in ("int", "string", "bigint"))
        forms = [(f"F.array({a}, {a})", ("array", kind)), ("F.sequence(F.lit(1), F.lit(3))", ("array", "int")),
                 (f"F.split({self.of(frame, lambda k: k == 'string')[0]}, 'n')", ("array", "string"))]
        if strings:
            s = c.choice(strings)
            forms += [(f"F.transform({s}, lambda t: F.upper(t))", ("array", "string")),
                      (f"F.filter({s}, lambda t: t != 'a')", ("array", "string")),
                      (f"F.sort_array({s}, asc=False)", ("array", "string")),
                      (f"F.array_distinct({s})", ("array", "string")),
                      (f"F.array_union({s}, F.array(F.lit('z')))", ("array", "string")),
                      (f"F.slice({s}, 1, 2)", ("array", "string"))]
        if items:
            forms += [(f"F.transform({items[0]}, lambda i: i['qty'] + 1)", ("array", "int")),
                      (f"F.filter({items[0]}, lambda i: i.sku != 'b')", ("array", EVENT_ITEM))]
        return c.choice(forms)

    def struct(self, frame: Frame, depth: int = 0) -> tuple[str, object]:
        c = self.c
        (a, ka), (b, kb) = self.of(frame, scalar), self.of(frame, lambda k: not scalar(k) or k == "string")
        structs = [r for r in self.references(frame) if not scalar(r[1]) and r[1][0] == "struct"]
        forms = [(f"F.struct({a}.alias('a'), {b}.alias('b'))", ("struct", (("a", ka), ("b", kb))))]
        if structs:
            text, kind = c.choice(structs)
            forms.append((f"F.struct({text}.alias('s'), {a}.alias('a'))", ("struct", (("s", kind), ("a", ka)))))
        # not generated: Column.withField and dropFields, which dltrace refuses ("expressions of
        # kind update_fields are not supported by dltrace") where Spark runs them (issue 65)
        return c.choice(forms)

    def udf(self, frame: Frame, depth: int = 0) -> tuple[str, object]:
        if self.c.chance(0.5):
            return f"twice({self.of(frame, lambda k: k in ('int', 'bigint'))[0]})", "bigint"
        return f"label({self.of(frame, lambda k: k == 'string')[0]})", "string"

    def sql_expression(self, frame: Frame) -> tuple[str, object, str]:
        """A ``selectExpr``-style SQL string over top-level columns: its text, type and name."""
        c = self.c
        name = self.name()
        numbers = [n for n, t in frame.columns.items() if numeric(t)]
        strings = [n for n, t in frame.columns.items() if t == "string"]
        forms = [("1 + 1", "int"), ("current_date() IS NOT NULL", "boolean")]
        if numbers:
            n = c.choice(numbers)
            forms += [(f"{n} * 2", frame.columns[n]), (f"try_cast({n} AS STRING)", "string")]
        if strings:
            s = c.choice(strings)
            forms += [(f"upper({s})", "string"), (f"CAST({s} AS INT)", "int"), (f"try_cast({s} AS INT)", "int")]
        text, kind = c.choice(forms)
        return f"F.expr('{text} AS {name}')", kind, name

    # -- aggregates and windows --------------------------------------------------------------

    def aggregate(self, frame: Frame) -> tuple[str, object]:
        c = self.c
        n, kind = self.of(frame, numeric)
        s, skind = self.of(frame, lambda k: scalar(k) and k not in ("void",))
        forms = [("F.count('*')", "bigint"), (f"F.count({s})", "bigint"), (f"F.sum({n})", arithmetic(kind, "bigint")),
                 (f"F.avg({n})", "double"), (f"F.min({s})", skind), (f"F.max({n})", kind),
                 (f"F.countDistinct({s})", "bigint"), (f"F.sort_array(F.collect_list({s}))", ("array", skind)),
                 (f"F.sort_array(F.collect_set({s}))", ("array", skind)),
                 (f"F.count_if({self.predicate(frame, 1)})", "bigint"),
                 (f"F.sum(F.when({self.predicate(frame, 1)}, 1).otherwise(0))", "bigint")]
        if frame.key:
            forms.append((f"F.max_by({s}, '{frame.key}')", skind))
        return c.choice(forms)

    def window(self, frame: Frame) -> tuple[str, object]:
        c = self.c
        scalars = [n for n, t in frame.columns.items() if scalar(t) and t not in ("void", "binary")]
        parts = [n for n in scalars if n != frame.key and c.chance(0.3)][:2]
        order = [n for n in scalars if c.chance(0.3)][:2] or scalars[:1]
        spec = f"Window.partitionBy({', '.join(repr(p) for p in parts)})" if parts else "Window"
        ordered = f"{spec}.orderBy({', '.join(repr(o) for o in order)})"
        numbers = [n for n, t in frame.columns.items() if numeric(t)]
        measure = f"F.col('{c.choice(numbers)}')" if numbers else "F.lit(1)"
        forms = [("F.rank()", "int", ordered), ("F.dense_rank()", "int", ordered),
                 ("F.percent_rank()", "double", ordered),
                 ("F.cume_dist()", "double", ordered), (f"F.sum({measure})", "double", ordered),
                 (f"F.count({measure})", "bigint", spec if parts else "Window.partitionBy()"),
                 (f"F.max({measure})", "double",
                  f"{ordered}.rangeBetween(Window.unboundedPreceding, Window.currentRow)")]
        if frame.key:
            by_key = f"{spec}.orderBy({', '.join(repr(o) for o in [*order, frame.key])})"
            forms += [("F.row_number()", "int", by_key), ("F.ntile(3)", "int", by_key),
                      (f"F.lag({measure}, 1)", "double", by_key), (f"F.lead({measure}, 2, 0)", "double", by_key),
                      (f"F.sum({measure})", "double", f"{by_key}.rowsBetween(-1, 1)"),
                      (f"F.first({measure})", "double", f"{by_key}.rowsBetween(Window.unboundedPreceding, 0)")]
        function, kind, window = c.choice(forms)
        return f"{function}.over({window})", kind


EVENT_ITEM = ("struct", (("sku", "string"), ("qty", "int")))
