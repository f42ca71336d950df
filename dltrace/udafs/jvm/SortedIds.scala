/*
 * dltrace's native DLUNION for Spark (dltrace/udafs/native.py builds and loads it).
 *
 * The rewriter spells a group's lineage set as sort_array(collect_list(id)) or, where a row
 * can be met more than once, sort_array(collect_set(id)).  Spark collects those ids as boxed
 * objects (an ArrayBuffer or a HashSet of java.lang.Long), serializes them between its
 * partial and final aggregates, and sorts the array afterwards.  SortedIds does the same with
 * a growable long[]: no object per id, one Arrays.sort at the end, duplicates dropped as the
 * sorted ids are copied out.  The optimizer rule below puts it in place of Spark's collects of
 * bigint ids wherever their order cannot show (inside an ascending sort_array), so the SQL
 * stays plain Spark SQL and runs the same without it.
 */
package dltrace.spark

import java.nio.{ByteBuffer, ByteOrder}
import java.util.Arrays

import org.apache.spark.sql.{SparkSession, SparkSessionExtensions}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{ArrayDistinct, Coalesce, Concat, Expression, Flatten, Literal, SortArray, UnsafeArrayData}
import org.apache.spark.sql.catalyst.expressions.aggregate.{AggregateExpression, CollectList, CollectSet, TypedImperativeAggregate}
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.catalyst.trees.UnaryLike
import org.apache.spark.sql.catalyst.util.ArrayData
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.types.{ArrayType, DataType, LongType}

/** A group's ids so far, in a long[] that doubles as it fills. */
final class IdBuffer(var ids: Array[Long], var size: Int) {
  def this() = this(new Array[Long](4), 0)

  /** Room for ``more`` ids.  A full set first drops its repeats, and grows unless that leaves
   * it at least half empty: it holds at most about twice its distinct ids, and between two
   * sorts of its buffer come at least half as many additions as the buffer holds. */
  private def reserve(more: Int, distinct: Boolean): Unit = {
    if (size + more <= ids.length) return
    if (distinct && size > 0) {
      size = sortedUnique()
      if (size + more <= ids.length / 2) return
    }
    ids = Arrays.copyOf(ids, math.max(size + more, ids.length * 2))
  }

  def add(id: Long, distinct: Boolean): Unit = {
    // a set's repeats mostly come in a row (a group's input is sorted by its key, and a key's
    // rows come in the order they were joined): those are not stored
    if (distinct && size > 0 && ids(size - 1) == id) return
    reserve(1, distinct)
    ids(size) = id
    size += 1
  }

  def addAll(other: IdBuffer, distinct: Boolean): Unit = add(other.ids, other.size, distinct)

  def add(more: Array[Long], count: Int, distinct: Boolean): Unit = {
    reserve(count, distinct)
    System.arraycopy(more, 0, ids, size, count)
    size += count
  }

  /** Sorts the ids in place, moves the distinct ones to the front and returns their count. */
  private def sortedUnique(): Int = {
    Arrays.sort(ids, 0, size)
    var kept = 0
    var i = 0
    while (i < size) {
      if (kept == 0 || ids(kept - 1) != ids(i)) {
        ids(kept) = ids(i)
        kept += 1
      }
      i += 1
    }
    kept
  }

  /** The ids in ascending order, without duplicates when ``distinct``. */
  def sorted(distinct: Boolean): Array[Long] = {
    if (distinct) {
      size = sortedUnique()
    } else {
      Arrays.sort(ids, 0, size)
    }
    Arrays.copyOf(ids, size)
  }
}

/** ``sort_array(collect_list(id))`` (``distinct`` false) or ``sort_array(collect_set(id))``
 * (true) of a bigint ``id``: its non-null values in a group, ascending; with ``arrays``, of
 * the ids in ``id``'s arrays (``array<bigint>`` without NULL elements), as
 * ``sort_array(flatten(collect_list(ids)))``. */
case class SortedIds(
    child: Expression,
    distinct: Boolean,
    arrays: Boolean = false,
    mutableAggBufferOffset: Int = 0,
    inputAggBufferOffset: Int = 0)
  extends TypedImperativeAggregate[IdBuffer] with UnaryLike[Expression] {

  override def dataType: DataType = ArrayType(LongType, containsNull = false)
  override def nullable: Boolean = false
  // what Spark's optimizer gives an aggregate over no rows where it does not run it (a
  // correlated scalar subquery without a match, the DISTINCT aggregate rewrite): []
  override def defaultResult: Option[Literal] =
    Some(Literal(UnsafeArrayData.fromPrimitiveArray(Array.emptyLongArray), dataType))
  override def prettyName: String = (if (distinct) "sorted_id_set" else "sorted_ids") + (if (arrays) "_of_arrays" else "")
  override def createAggregationBuffer(): IdBuffer = new IdBuffer()

  override def update(buffer: IdBuffer, input: InternalRow): IdBuffer = {
    val value = child.eval(input)
    if (value != null) {
      if (arrays) {
        val more = value.asInstanceOf[ArrayData].toLongArray()
        buffer.add(more, more.length, distinct)
      } else {
        buffer.add(value.asInstanceOf[Long], distinct)
      }
    }
    buffer
  }

  override def merge(buffer: IdBuffer, other: IdBuffer): IdBuffer = {
    buffer.addAll(other, distinct)
    buffer
  }

  override def eval(buffer: IdBuffer): Any = UnsafeArrayData.fromPrimitiveArray(buffer.sorted(distinct))

  override def serialize(buffer: IdBuffer): Array[Byte] = {
    val bytes = ByteBuffer.allocate(buffer.size * 8).order(ByteOrder.LITTLE_ENDIAN)
    bytes.asLongBuffer().put(buffer.ids, 0, buffer.size)
    bytes.array()
  }

  override def deserialize(bytes: Array[Byte]): IdBuffer = {
    val ids = new Array[Long](bytes.length / 8)
    ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN).asLongBuffer().get(ids)
    new IdBuffer(ids, ids.length)
  }

  override def withNewMutableAggBufferOffset(offset: Int): SortedIds = copy(mutableAggBufferOffset = offset)
  override def withNewInputAggBufferOffset(offset: Int): SortedIds = copy(inputAggBufferOffset = offset)
  override protected def withNewChildInternal(newChild: Expression): SortedIds = copy(child = newChild)
}

/** Puts ``SortedIds`` in place of Spark's collects of bigint ids whose order does not matter,
 * unless ``spark.dltrace.nativeIdSets`` is false: inside an ascending ``sort_array``, through
 * ``concat``, ``array_distinct`` and ``coalesce`` (which keep every element), a
 * ``collect_list``/``collect_set`` of bigints and a ``flatten(collect_list(...))`` of bigint
 * arrays.  ``sort_array`` over one of them alone is dropped (the aggregate sorts).  Not
 * ``DISTINCT``, not ``RESPECT NULLS``, not over a window (``sort_array``'s argument is then a
 * window expression). */
object NativeIdSets extends Rule[LogicalPlan] {
  val ENABLED = "spark.dltrace.nativeIdSets"

  // NULL ids skipped (collect_list without RESPECT NULLS): a bigint result without NULL elements
  private val ids = ArrayType(LongType, containsNull = false)

  private def native(aggregate: AggregateExpression): Option[AggregateExpression] = aggregate.aggregateFunction match {
    case _ if aggregate.isDistinct => None
    case collect: CollectList if collect.dataType == ids => Some(sortedIds(aggregate, collect.child, false, false))
    case collect: CollectSet if collect.dataType == ids => Some(sortedIds(aggregate, collect.child, true, false))
    case _ => None
  }

  private def flattened(aggregate: AggregateExpression): Option[AggregateExpression] = aggregate.aggregateFunction match {
    case _ if aggregate.isDistinct => None
    case collect: CollectList if collect.dataType == ArrayType(ids, containsNull = false) =>
      Some(sortedIds(aggregate, collect.child, false, true))
    case _ => None
  }

  // a new result id: the replaced aggregate's, if still met elsewhere, must not name this one
  private def sortedIds(aggregate: AggregateExpression, id: Expression, distinct: Boolean,
                        arrays: Boolean): AggregateExpression =
    AggregateExpression(SortedIds(id, distinct, arrays), aggregate.mode, isDistinct = false, aggregate.filter)

  /** ``value`` with the collects in it replaced where their order cannot show. */
  private def unordered(value: Expression): Expression = value match {
    case aggregate: AggregateExpression => native(aggregate).getOrElse(aggregate)
    case flatten @ Flatten(aggregate: AggregateExpression) => flattened(aggregate).getOrElse(flatten)
    case _: Concat | _: ArrayDistinct | _: Coalesce => value.withNewChildren(value.children.map(unordered))
    case _ => value
  }

  private def ascending(sort: SortArray): Boolean = sort.ascendingOrder match {
    case Literal(true, _) => true
    case _ => false
  }

  override def apply(plan: LogicalPlan): LogicalPlan = {
    if (SQLConf.get.getConfString(ENABLED, "true").equalsIgnoreCase("false")) return plan
    try {
      plan.transformAllExpressions {
        case sort: SortArray if ascending(sort) => unordered(sort.base) match {
          case sorted: AggregateExpression if sorted.aggregateFunction.isInstanceOf[SortedIds] => sorted
          case base => sort.copy(base = base)
        }
      }
    } catch {
      case _: LinkageError => plan // compiled against another Spark than the one running: Spark's own
    }
  }
}

/** ``spark.sql.extensions=dltrace.spark.Extensions``: adds ``NativeIdSets`` to the optimizer. */
class Extensions extends (SparkSessionExtensions => Unit) {
  override def apply(extensions: SparkSessionExtensions): Unit = {
    extensions.injectOptimizerRule((_: SparkSession) => NativeIdSets)
  }
}
