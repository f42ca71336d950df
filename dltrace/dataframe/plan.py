"""A DataFrame's Spark Connect plan as one SQL query for the rewriter.

The client of Spark Connect holds a DataFrame's plan as a tree of ``Relation`` messages
(``df._plan.to_proto(client).root``, the message it sends the server), with unresolved
names.  Each relation becomes a SELECT over its input as a derived table, so that a
DataFrame program reaches the rewriter as the query a person would write in SQL with
subqueries in FROM, and gets the lineage of that query: one set of rules, one semantics.

Names are resolved here, as Spark's analyzer would: a column is found by its name (Spark's,
case-insensitive) or, for ``df["x"]``, by the plan id of the DataFrame it was taken from
(which survives the operators that pass it through unchanged); ``F.col("a.x")`` by an alias
or a table name.  A column Spark names itself (``sum(x)``) is named when something refers to
it, by asking Spark for the schema of the relation that made it (``Catalog.schema_of``).

An operator without exact lineage (``sample``, ``mapInPandas``, ...) is refused, named.  Rows
the program writes (``createDataFrame``, ``spark.range``) are literal rows (``local_rows.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from itertools import count

from sqlglot import exp

from dltrace.dataframe.api_coverage import REFUSED_RELATIONS, refused_relation
from dltrace.dataframe.as_written import as_written
from dltrace.dataframe.expressions import split_identifier
from dltrace.dataframe.generators import select_generating
from dltrace.dataframe.local_rows import local_rows, range_rows
from dltrace.dataframe.missing import drop_na, fill_na
from dltrace.dataframe.nested_union import aligned_items
from dltrace.dataframe.reshape import pivot_rows, unpivot_rows
from dltrace.dataframe.scope import SIMPLE_NAME, Column, Frame, Scope, unique_name
from dltrace.dataframe.temp_views import TempView, temp_view, with_temp_views
from dltrace.errors import BadInput, UnknownColumn, UnknownTable, UnsupportedLineage

JOINS = {  # Join.JoinType: (side, kind) of sqlglot's Join
    0: ("", "INNER"), 1: ("", "INNER"), 2: ("FULL", "OUTER"), 3: ("LEFT", "OUTER"), 4: ("RIGHT", "OUTER"),
    5: ("LEFT", "ANTI"), 6: ("LEFT", "SEMI"), 7: ("", "CROSS"),
}


@dataclass
class Catalog:
    """What the translation needs to know outside the plan."""

    schemas: dict[str, dict[str, str]]  # registered tables and saved results: columns and types
    views: set[str]  # the catalog's views, read by name (the rewriter inlines them)
    schema_of: Callable[[object], list[tuple[str, str]]]  # a Relation's (name, type) pairs, from Spark
    python_udf: Callable[[object], str]  # registers a Python UDF for the lineage query, returns its name
    temp_views: dict[str, TempView] = field(default_factory=dict)  # the program's own (temp_views.py)
    rows_of: Callable[[object], object] | None = None  # a Relation's rows (a pyarrow Table), run by Spark


def translate(relation, catalog: Catalog) -> exp.Query:
    """The SQL query of a DataFrame's plan, its output columns named as Spark names them.

    A relation per SELECT nests as deep as the program is long: ``as_written`` then makes it
    the query a person would write."""
    translator = PlanTranslator(catalog)
    frame = translator.relation(relation)
    translator.name_all(frame)
    return as_written(translator.finish(frame))


class PlanTranslator:
    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self._aliases = count()
        self.references: dict[int, object] = {}  # the subqueries' relations (df.scalar(), ...) by plan id
        self.outer: list[Scope] = []  # the scopes a subquery being translated stands in, innermost last

    # -- relations ---------------------------------------------------------------------------

    def relation(self, message) -> Frame:
        kind = message.WhichOneof("rel_type")
        handler = getattr(self, f"_{kind}", None)
        if kind in REFUSED_RELATIONS or handler is None:  # the API call that makes it, named (api_coverage.py)
            raise UnsupportedLineage(refused_relation(kind))
        frame = handler(getattr(message, kind), message)
        plan_id = message.common.plan_id if message.HasField("common") and message.common.HasField("plan_id") \
            else None
        if plan_id is not None:
            frame.columns = [replace(c, plan_ids=c.plan_ids | {plan_id}) for c in frame.columns]
        frame.relation = message
        return frame

    def _read(self, read, message) -> Frame:
        if read.WhichOneof("read_type") != "named_table":
            raise UnsupportedLineage("DataFrame: spark.read of files outside `dltrace run job.py` (which registers "
                                     "them): register them with `dltrace register NAME PATH`, read spark.table(NAME)")
        parts = split_identifier(read.named_table.unparsed_identifier)
        name = parts[-1].lower()
        view = temp_view(self.catalog.temp_views, parts)
        if view is not None:
            frame = self.relation_in_view(view)
            frame.columns = [replace(c, qualifiers=frozenset({name})) for c in frame.columns]
            return frame
        known = name in self.catalog.schemas or name in self.catalog.views
        if not known or (len(parts) > 1 and parts[-2].lower() not in ("default", "dltrace")):
            raise UnknownTable(f"DataFrame: table {'.'.join(parts)} is not registered: run `dltrace register "
                               f"{parts[-1]} PATH` first")
        schema = self.catalog.schemas.get(name) or dict(self.catalog.schema_of(message))
        columns = [Column(c, c, qualifiers=frozenset({name})) for c in schema]
        query = exp.select(*[exp.column(c, quoted=not SIMPLE_NAME.fullmatch(c)) for c in schema]).from_(name)
        return Frame(query, columns, message, table=name, types=list(schema.values()))

    def _local_relation(self, local, message) -> Frame:
        return local_rows(local, self.catalog.schema_of(message), message, self.alias())

    def _range(self, range_, message) -> Frame:
        return range_rows(range_, message)

    def _unpivot(self, unpivot, message) -> Frame:
        return unpivot_rows(self, unpivot)

    def _sql(self, sql, message) -> Frame:
        from dltrace.rewriter import parse
        from dltrace.rewriter.qualify import qualify_against_catalog

        if sql.args or sql.pos_args or sql.named_arguments or sql.pos_arguments:
            raise UnsupportedLineage("DataFrame: spark.sql with arguments is not supported by dltrace: write the "
                                     "values into the query")
        query = parse(sql.query)
        views = with_temp_views(query, self.catalog.temp_views,
                                lambda view: translate(view.relation, replace(self.catalog, temp_views=view.earlier)))
        qualified = qualify_against_catalog(query, self.catalog.schemas)  # refuses unknown names
        query = qualified if views else query  # the views' columns named where they are read
        names = [name for name, _ in self.catalog.schema_of(message)]
        outer = query.selects
        columns = []
        for number, (projection, name) in enumerate(zip(outer, names)):
            sql_name = f"_s{number}"
            columns.append(Column(name, sql_name))
            projection.replace(exp.alias_(projection.unalias() if isinstance(projection, exp.Alias) else projection,
                                          sql_name))
        if isinstance(query, exp.SetOperation):
            for branch in (query.left, query.right):
                for projection, column in zip(branch.selects, columns):
                    projection.replace(exp.alias_(projection.unalias(), column.sql))
        return Frame(query, columns, message)

    def relation_in_view(self, view: TempView) -> Frame:
        """The frame of ``view``'s plan, its names resolved against the views it was made over."""
        views = self.catalog.temp_views
        self.catalog = replace(self.catalog, temp_views=view.earlier)
        try:
            return self.relation(view.relation)
        finally:
            self.catalog = replace(self.catalog, temp_views=views)

    def _with_relations(self, with_relations, message) -> Frame:
        """A relation whose expressions hold subqueries (``df.scalar()``, ``df.exists()``,
        ``col.isin(df)``): the subqueries' relations come beside it, by plan id."""
        for reference in with_relations.references:
            self.references[reference.common.plan_id] = reference
        return self.relation(with_relations.root)

    def subquery(self, plan_id: int, scope: Scope) -> exp.Query:
        """The query of the subquery relation ``plan_id``, its outer names resolved in ``scope``."""
        if plan_id not in self.references:
            raise BadInput(f"DataFrame: a subquery refers to plan {plan_id}, which the plan does not hold")
        self.outer.append(scope)
        try:
            frame = self.relation(self.references[plan_id])
        finally:
            self.outer.pop()
        if isinstance(frame.query, exp.Select) and frame.table is None:
            return frame.query
        inner = Scope(self, [frame])
        return self.select(inner, inner.all()).query

    def _subquery_alias(self, alias, message) -> Frame:
        frame = self.relation(alias.input)
        name = alias.alias.lower()
        frame.columns = [replace(c, qualifiers=frozenset({name})) for c in frame.columns]
        return frame

    def _project(self, project, message) -> Frame:
        if not project.HasField("input"):
            raise UnsupportedLineage("DataFrame: a select without an input DataFrame has no base rows")
        child = self.relation(project.input)
        scope = Scope(self, [child])
        items = [item for e in project.expressions for item in scope.select_item(e)]
        return select_generating(self, scope, items, message)

    def _filter(self, filter_, message) -> Frame:
        child = self.relation(filter_.input)
        scope = Scope(self, [child])
        condition = scope.expression(filter_.condition)
        frame = self.select(scope, scope.all())
        frame.query.where(condition, copy=False)
        return frame

    def _with_columns(self, with_columns, message) -> Frame:
        child = self.relation(with_columns.input)
        scope = Scope(self, [child])
        items = scope.all()
        for alias in with_columns.aliases:
            name = alias.name[0]
            value = scope.expression(alias.expr)
            same = [i for i, (_, c) in enumerate(items) if c.name is not None and c.name.lower() == name.lower()]
            if same:
                items[same[0]] = (value, Column(name, ""))
            else:
                items.append((value, Column(name, "")))
        return select_generating(self, scope, items, message)

    def _with_columns_renamed(self, renamed, message) -> Frame:
        frame = self.relation(renamed.input)
        self.name_all(frame)
        renames = {r.col_name.lower(): r.new_col_name for r in renamed.renames}
        renames.update({k.lower(): v for k, v in renamed.rename_columns_map.items()})
        frame.columns = [replace(c, name=renames[c.name.lower()], plan_ids=frozenset())
                         if c.name.lower() in renames else c for c in frame.columns]
        return frame

    def _to_df(self, to_df, message) -> Frame:
        frame = self.relation(to_df.input)
        if len(to_df.column_names) != len(frame.columns):
            raise BadInput(f"DataFrame: toDF was given {len(to_df.column_names)} names for "
                           f"{len(frame.columns)} columns")
        frame.columns = [replace(c, name=n, plan_ids=frozenset()) for c, n in zip(frame.columns, to_df.column_names)]
        return frame

    def _drop(self, drop, message) -> Frame:
        child = self.relation(drop.input)
        scope = Scope(self, [child])
        dropped = {n.lower() for n in drop.column_names}
        by_expression = {getattr(scope.column_of(scope.expression(e)), "sql", None) for e in drop.columns}
        self.name_all(child)
        kept = [(ref, c) for ref, c in scope.all() if c.name.lower() not in dropped and c.sql not in by_expression]
        return self.select(scope, kept)

    def _hint(self, hint, message) -> Frame:  # hints and repartitions change no row
        return self.relation(hint.input)

    _repartition = _repartition_by_expression = _hint

    def _sort(self, sort, message) -> Frame:
        child = self.relation(sort.input)
        scope = Scope(self, [child])
        orders = [scope.expressions._sort_order(o) for o in sort.order]
        frame = self.select(scope, scope.all())
        frame.query.order_by(*orders, copy=False)
        return frame

    def _limit(self, limit, message) -> Frame:
        child = self.relation(limit.input)
        query = child.query
        if not isinstance(query, exp.Select) or query.args.get("limit") or child.table:
            scope = Scope(self, [child])
            child = self.select(scope, scope.all())
            query = child.query
        query.limit(limit.limit, copy=False)
        child.table = None
        return child

    def _offset(self, offset, message) -> Frame:
        child = self.relation(offset.input)
        if not isinstance(child.query, exp.Select) or child.query.args.get("limit") \
                or child.query.args.get("offset") or child.table:
            scope = Scope(self, [child])
            child = self.select(scope, scope.all())
        child.query.offset(offset.offset, copy=False)
        child.table = None
        return child

    def _deduplicate(self, dedup, message) -> Frame:
        if dedup.within_watermark:
            raise UnsupportedLineage("DataFrame: dropDuplicatesWithinWatermark is not supported by dltrace")
        child = self.relation(dedup.input)
        scope = Scope(self, [child])
        items = scope.all()
        if dedup.all_columns_as_keys or not dedup.column_names:
            frame = self.select(scope, items)
            frame.query.distinct(copy=False)
            return frame
        self.name_all(child)
        keys = {n.lower() for n in dedup.column_names}
        missing = keys - {c.name.lower() for _, c in items}
        if missing:
            raise UnknownColumn(f"DataFrame: dropDuplicates names column {sorted(missing)[0]}, which is not one of "
                                f"{', '.join(c.name for _, c in items)}")
        # as Spark plans it: one row per key, its other columns the first of the key's rows
        grouped = [(ref if c.name.lower() in keys else exp.First(this=ref), c) for ref, c in items]
        frame = self.select(scope, grouped)
        frame.query.group_by(*[ref for ref, c in items if c.name.lower() in keys], copy=False)
        return frame

    def _aggregate(self, aggregate, message) -> Frame:
        if aggregate.group_type == 4:  # GROUP_TYPE_PIVOT
            return pivot_rows(self, aggregate, message)
        child = self.relation(aggregate.input)
        scope = Scope(self, [child])
        keys = [item for e in aggregate.grouping_expressions for item in scope.select_item(e)]
        values = [item for e in aggregate.aggregate_expressions for item in scope.select_item(e)]
        frame = self.select(scope, keys + values)
        key_expressions = [expression for expression, _ in keys]
        if aggregate.group_type == 2:
            frame.query.set("group", exp.Group(rollup=[exp.Rollup(expressions=key_expressions)]))
        elif aggregate.group_type == 3:
            frame.query.set("group", exp.Group(cube=[exp.Cube(expressions=key_expressions)]))
        elif aggregate.group_type == 5:
            sets = [exp.Tuple(expressions=[scope.expression(e) for e in s.grouping_set])
                    for s in aggregate.grouping_sets]
            frame.query.set("group", exp.Group(expressions=key_expressions,
                                               grouping_sets=[exp.GroupingSets(expressions=sets)]))
        elif key_expressions:
            frame.query.group_by(*key_expressions, copy=False)
        return frame

    def _join(self, join, message) -> Frame:
        left, right = self.relation(join.left), self.relation(join.right)
        side, kind = JOINS[join.join_type]
        if join.using_columns:
            return self.join_using(left, right, list(join.using_columns), side, kind)
        scope = Scope(self, [left, right])
        condition = scope.expression(join.join_condition) if join.HasField("join_condition") else None
        if condition is None and kind == "INNER":
            kind = "CROSS"
        items = scope.all(0) if kind in ("SEMI", "ANTI") else scope.all()
        frame = self.select(scope, items, joins=[(side, kind, condition)])
        return frame

    def join_using(self, left: Frame, right: Frame, keys: list[str], side: str, kind: str) -> Frame:
        scope = Scope(self, [left, right])
        self.name_all(left)
        self.name_all(right)
        left_items, right_items = scope.all(0), scope.all(1)
        lowered = [k.lower() for k in keys]

        def find(items, key: str):
            found = [item for item in items if item[1].name.lower() == key]
            if not found:
                raise UnknownColumn(f"DataFrame: join column {key} is not a column of both sides")
            return found[0]

        condition = exp.and_(*[exp.EQ(this=find(left_items, k)[0], expression=find(right_items, k)[0])
                               for k in lowered])
        items = []
        for key in lowered:
            (left_ref, left_col), (right_ref, right_col) = find(left_items, key), find(right_items, key)
            if side == "RIGHT":
                items.append((right_ref, right_col))
            elif side == "FULL":
                items.append((exp.Coalesce(this=left_ref, expressions=[right_ref]), Column(left_col.name, "")))
            else:
                items.append((left_ref, left_col))
        items += [item for item in left_items if item[1].name.lower() not in lowered]
        if kind not in ("SEMI", "ANTI"):
            items += [item for item in right_items if item[1].name.lower() not in lowered]
        else:
            items = [item for item in items if any(item[1] is c for _, c in left_items)]
        return self.select(scope, items, joins=[(side, kind, condition)])

    def _set_op(self, set_op, message) -> Frame:
        left, right = self.relation(set_op.left_input), self.relation(set_op.right_input)
        left_scope, right_scope = Scope(self, [left]), Scope(self, [right])
        left_items, right_items = left_scope.all(), right_scope.all()
        if set_op.by_name:
            self.name_all(left)
            self.name_all(right)
            by_name = {c.name.lower(): (ref, c) for ref, c in right_items}
            missing = [c.name for _, c in left_items if c.name.lower() not in by_name]
            if missing and not set_op.allow_missing_columns:
                raise UnknownColumn(f"DataFrame: unionByName: column {missing[0]} is missing on the right side "
                                    f"(allowMissingColumns=True fills it with NULL)")
            ordered = [by_name.get(c.name.lower(), (exp.Null(), c)) for _, c in left_items]
            names = {c.name.lower() for _, c in left_items}
            extra = [c.name for _, c in right_items if c.name.lower() not in names]
            if extra and not set_op.allow_missing_columns:
                raise UnknownColumn(f"DataFrame: unionByName: column {extra[0]} is missing on the left side "
                                    f"(allowMissingColumns=True fills it with NULL)")
            if set_op.allow_missing_columns:
                names = {c.name.lower() for _, c in left_items}
                extra = [(ref, c) for ref, c in right_items if c.name.lower() not in names]
                left_items = left_items + [(exp.Null(), c) for _, c in extra]
                ordered += extra
            types = [{name.lower(): kind for name, kind in self.catalog.schema_of(side)}
                     for side in (set_op.left_input, set_op.right_input)]
            left_items, right_items = aligned_items(*types, left_items, ordered, set_op.allow_missing_columns)
        elif len(left_items) != len(right_items):
            raise BadInput(f"DataFrame: a set operation of {len(left_items)} and {len(right_items)} columns: "
                           f"both sides need the same number")
        left_frame = self.select(left_scope, left_items)
        right_frame = self.select(right_scope, right_items)
        operation = {1: exp.Intersect, 2: exp.Union, 3: exp.Except}.get(set_op.set_op_type)
        if operation is None:
            raise BadInput("DataFrame: a set operation of unknown type")
        query = operation(this=left_frame.query, expression=right_frame.query, distinct=not set_op.is_all)
        return Frame(query, left_frame.columns, None)

    def _fill_na(self, fill, message) -> Frame:
        return fill_na(self, fill)

    def _drop_na(self, drop, message) -> Frame:
        return drop_na(self, drop)

    # -- building queries ----------------------------------------------------------------------

    def select(self, scope: Scope, items: list[tuple[exp.Expression, Column]], joins=()) -> Frame:
        """``SELECT items FROM scope's inputs [JOIN ...]``, each output under a fresh unique name."""
        sources = scope.sources()
        query = exp.select().from_(sources[0], copy=False)
        for source, (side, kind, condition) in zip(sources[1:], joins):
            query = query.join(source, on=condition, join_type=" ".join(p for p in (side, kind) if p), copy=False)
        used: set[str] = set()
        columns = []
        for expression, column in items:
            sql = unique_name(column.name, used)
            projection = expression.copy()
            if not (isinstance(projection, exp.Column) and projection.name == sql):
                projection = exp.alias_(projection, exp.to_identifier(sql))
            query.select(projection, copy=False)
            columns.append(replace(column, sql=sql))
        return Frame(query, columns, None)

    def alias(self) -> str:
        return f"_df{next(self._aliases)}"

    def name_all(self, frame: Frame, types: bool = False) -> None:
        """Give every column of ``frame`` Spark's name (and, with ``types``, its type), asking
        Spark for the relation's schema when the translation does not know them."""
        if all(c.name is not None for c in frame.columns) and (not types or frame.types is not None):
            return
        schema = self.catalog.schema_of(frame.relation)
        if len(schema) != len(frame.columns):
            raise BadInput(f"DataFrame: Spark gives {len(schema)} columns where dltrace made {len(frame.columns)}")
        frame.columns = [c if c.name is not None else replace(c, name=name)
                         for c, (name, _) in zip(frame.columns, schema)]
        frame.types = [type_name for _, type_name in schema]

    def finish(self, frame: Frame) -> exp.Query:
        """``frame``'s query with its outputs named as Spark names the DataFrame's columns."""
        query = frame.query
        if not isinstance(query, exp.Select):
            scope = Scope(self, [frame])
            query = self.select(scope, scope.all()).query
        for projection, column in zip(query.expressions, frame.columns):
            target = exp.to_identifier(column.name, quoted=not SIMPLE_NAME.fullmatch(column.name))
            if isinstance(projection, exp.Alias):
                projection.set("alias", target)
            else:
                projection.replace(exp.alias_(projection.copy(), target))
        return query
