"""``unionByName`` of struct columns whose fields come in another order, as Spark resolves it.

Spark matches a struct's fields by name in ``unionByName`` (arrays of structs too), and with
``allowMissingColumns=True`` fills a field only one side has with NULL.  The SQL a DataFrame
is traced as unions by position, so each side's struct is rebuilt in the merged type's field
order first: ``named_struct`` of its fields (``transform`` inside arrays), NULL for a field it
lacks, a NULL struct kept NULL.

>>> want = merged("struct<x:int,y:int>", "struct<y:int,x:int>", False)
>>> print(aligned(exp.column("s"), "struct<y:int,x:int>", want).sql("spark"))
IF(s IS NULL, NULL, NAMED_STRUCT('x', s.x, 'y', s.y))
"""

from __future__ import annotations

from sqlglot import exp

from dltrace.rewriter.dialect import SPARK


def data_type(text: str) -> exp.DataType:
    return exp.DataType.build(text, dialect=SPARK)


def struct_fields(kind: exp.DataType) -> list[tuple[str, exp.DataType]] | None:
    if not kind.is_type(exp.DataType.Type.STRUCT):
        return None
    return [(field.name, field.args["kind"]) for field in kind.expressions]


def array_element(kind: exp.DataType) -> exp.DataType | None:
    return kind.expressions[0] if kind.is_type(exp.DataType.Type.ARRAY) and kind.expressions else None


def merged(left: str, right: str, allow_missing: bool) -> str:
    """The type of a column Spark's ``unionByName`` gives: the left side's fields in its
    order, with the right side's fields only it has after them when ``allow_missing``."""
    return merged_type(data_type(left), data_type(right), allow_missing).sql(SPARK)


def merged_type(left: exp.DataType, right: exp.DataType, allow_missing: bool) -> exp.DataType:
    left_fields, right_fields = struct_fields(left), struct_fields(right)
    if left_fields is not None and right_fields is not None:
        theirs = {name.lower(): kind for name, kind in right_fields}
        fields = [(name, merged_type(kind, theirs[name.lower()], allow_missing) if name.lower() in theirs else kind)
                  for name, kind in left_fields]
        ours = {name.lower() for name, _ in left_fields}
        if allow_missing:
            fields += [(name, kind) for name, kind in right_fields if name.lower() not in ours]
        return exp.DataType(this=exp.DataType.Type.STRUCT, nested=True, expressions=[
            exp.ColumnDef(this=exp.to_identifier(name), kind=kind) for name, kind in fields])
    left_element, right_element = array_element(left), array_element(right)
    if left_element is not None and right_element is not None:
        return exp.DataType(this=exp.DataType.Type.ARRAY, nested=True,
                            expressions=[merged_type(left_element, right_element, allow_missing)])
    return left


def aligned(reference: exp.Expression, have: str, want: str) -> exp.Expression:
    """``reference`` (a value of type ``have``) rebuilt in type ``want``'s field order; itself
    when it already is."""
    have_type, want_type = data_type(have), data_type(want)
    if have_type == want_type:
        return reference
    return rebuilt(reference, have_type, want_type, 0) or reference


def rebuilt(value: exp.Expression, have: exp.DataType, want: exp.DataType, depth: int) -> exp.Expression | None:
    """``value`` as ``want``'s fields, by name (None: nothing to rebuild)."""
    have_fields, want_fields = struct_fields(have), struct_fields(want)
    if have_fields is not None and want_fields is not None:
        kinds = {name.lower(): (name, kind) for name, kind in have_fields}
        pairs: list[exp.Expression] = []
        for name, kind in want_fields:
            if name.lower() in kinds:
                own, own_kind = kinds[name.lower()]
                field = exp.Dot(this=value.copy(), expression=exp.to_identifier(own))
                field = rebuilt(field, own_kind, kind, depth) or field
            else:
                field = exp.Cast(this=exp.Null(), to=kind.copy())
            pairs += [exp.Literal.string(name), field]
        struct = exp.Anonymous(this="NAMED_STRUCT", expressions=pairs)
        return exp.If(this=exp.Is(this=value.copy(), expression=exp.Null()), true=exp.Null(), false=struct)
    have_element, want_element = array_element(have), array_element(want)
    if have_element is not None and want_element is not None:
        variable = exp.to_identifier(f"x{depth}")
        element = rebuilt(variable, have_element, want_element, depth + 1)
        if element is None:
            return None
        return exp.Anonymous(this="TRANSFORM", expressions=[
            value.copy(), exp.Lambda(this=element, expressions=[variable.copy()])])
    return None


def aligned_items(left_types: dict[str, str], right_types: dict[str, str], left_items: list, right_items: list,
                  allow_missing: bool) -> tuple[list, list]:
    """The select items of both sides of a ``unionByName`` (paired by position, each a
    ``(reference, Column)``), their struct columns rebuilt in the merged field order."""
    left_out, right_out = list(left_items), list(right_items)
    for number, ((left_ref, left_col), (right_ref, right_col)) in enumerate(zip(left_items, right_items)):
        have_left, have_right = left_types.get(left_col.name.lower()), right_types.get(right_col.name.lower())
        if not have_left or not have_right or "struct<" not in have_left or "struct<" not in have_right \
                or isinstance(left_ref, exp.Null) or isinstance(right_ref, exp.Null):
            continue
        if not allow_missing and not same_fields(data_type(have_left), data_type(have_right)):
            continue  # Spark refuses a nested field only one side has: the union fails as it does
        want = merged(have_left, have_right, allow_missing)
        left_out[number] = (aligned(left_ref, have_left, want), left_col)
        right_out[number] = (aligned(right_ref, have_right, want), right_col)
    return left_out, right_out


def same_fields(left: exp.DataType, right: exp.DataType) -> bool:
    """Whether both types have the same struct fields by name, at every depth."""
    left_fields, right_fields = struct_fields(left), struct_fields(right)
    if left_fields is not None and right_fields is not None:
        theirs = {name.lower(): kind for name, kind in right_fields}
        return len(left_fields) == len(right_fields) and all(
            name.lower() in theirs and same_fields(kind, theirs[name.lower()]) for name, kind in left_fields)
    left_element, right_element = array_element(left), array_element(right)
    if left_element is not None and right_element is not None:
        return same_fields(left_element, right_element)
    return True
