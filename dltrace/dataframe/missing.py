"""DataFrame ``na.fill`` and ``na.drop`` (``fillna``, ``dropna``) as the SQL Spark plans for
them: ``COALESCE`` (and ``NANVL`` for floating point) per filled column, a count of the
present values in WHERE."""

from __future__ import annotations

from sqlglot import exp

from dltrace.dataframe.expressions import cast_to, literal
from dltrace.dataframe.scope import Column, Frame, Scope


def fill_na(translator, fill) -> Frame:
    """``na.fill``: each filled column of a type the value fits, ``COALESCE``d (``translator``: a
    ``plan.PlanTranslator``)."""
    child = translator.relation(fill.input)
    translator.name_all(child, types=True)
    scope = Scope(translator, [child])
    values = [literal(v) for v in fill.values]
    kinds = [v.WhichOneof("literal_type") for v in fill.values]
    names = [n.lower() for n in fill.cols] or None
    items = []
    for (ref, column), type_name in zip(scope.all(), child.types):
        if names is not None and column.name.lower() not in names:
            items.append((ref, column))
            continue
        value, kind = (values[names.index(column.name.lower())], kinds[names.index(column.name.lower())]) \
            if names is not None and len(values) > 1 else (values[0], kinds[0])
        if not fills(kind, type_name):
            items.append((ref, column))
            continue
        filled = cast_to(value, type_name)
        if type_name.upper() in ("DOUBLE", "FLOAT"):
            ref = exp.Anonymous(this="NANVL", expressions=[ref, filled])
        items.append((exp.Coalesce(this=ref, expressions=[filled]), Column(column.name, "")))
    return translator.select(scope, items)


def drop_na(translator, drop) -> Frame:
    """``na.drop``: the rows with at least ``min_non_nulls`` present values among the checked."""
    child = translator.relation(drop.input)
    translator.name_all(child, types=True)
    scope = Scope(translator, [child])
    names = [n.lower() for n in drop.cols]
    items = scope.all()
    checked = [(ref, t) for (ref, c), t in zip(items, child.types) if not names or c.name.lower() in names]
    least = drop.min_non_nulls if drop.HasField("min_non_nulls") else len(checked)
    present = [exp.Not(this=exp.Is(this=ref, expression=exp.Null())) if t.upper() not in ("DOUBLE", "FLOAT")
               else exp.and_(exp.Not(this=exp.Is(this=ref, expression=exp.Null())),
                             exp.Not(this=exp.Anonymous(this="ISNAN", expressions=[ref])))
               for ref, t in checked]
    counted = [exp.Case(ifs=[exp.If(this=p, true=exp.Literal.number(1))], default=exp.Literal.number(0))
               for p in present]
    total = counted[0] if counted else exp.Literal.number(0)
    for term in counted[1:]:
        total = exp.Add(this=total, expression=term)
    frame = translator.select(scope, items)
    frame.query.where(exp.GTE(this=exp.Paren(this=total), expression=exp.Literal.number(least)), copy=False)
    return frame


def fills(kind: str | None, type_name: str) -> bool:
    """``na.fill(value)`` fills a column of ``type_name`` with a value of literal ``kind``."""
    upper = type_name.upper()
    numeric = upper.startswith(("TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE", "DECIMAL"))
    if kind in ("integer", "long", "double", "float", "decimal"):
        return numeric
    if kind == "string":
        return upper.startswith("STRING")
    if kind == "boolean":
        return upper == "BOOLEAN"
    return False
