/*
 * dltrace's native DLUNION for Spark (dltrace/udafs/native.py builds and loads it).
 *
 * The rewriter spells a group's lineage set as sort_array(collect_list(id)) or, where a row
 * can be met more than once, sort_array(collect_set(id)).  Spark collects those ids as boxed
 * objects (an ArrayBuffer or a HashSet of java.lang.Long), serializes them between its
 * partial and final aggregates, and sorts the array afterwards.  SortedIds does the same with
 * a growable long[]: no object per id, one Arrays.sort at the end, duplicates dropped as the
 * sorted ids are copied out.  The optimizer rule below puts it in place of exactly those two
 * shapes over bigint ids, so the SQL stays plain Spark SQL and runs the same without it.
 */
package dltrace.spark

import java.nio.{ByteBuffer, ByteOrder}
import java.util.Arrays

import org.apache.spark.sql.{SparkSession, SparkSessionExtensions}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Expression, Literal, SortArray, UnsafeArrayData}
import org.apache.spark.sql.catalyst.expressions.aggregate.{AggregateExpression, CollectList, CollectSet, TypedImperativeAggregate}
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.catalyst.trees.UnaryLike
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
    reserve(1, distinct)
    ids(size) = id
    size += 1
  }

  def addAll(other: IdBuffer, distinct: Boolean): Unit = {
    reserve(other.size, distinct)
    System.arraycopy(other.ids, 0, ids, size, other.size)
    size += other.size
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
 * (true) of a bigint ``id``: its non-null values in a group, ascending. */
case class SortedIds(
    child: Expression,
    distinct: Boolean,
    mutableAggBufferOffset: Int = 0,
    inputAggBufferOffset: Int = 0)
  extends TypedImperativeAggregate[IdBuffer] with UnaryLike[Expression] {

  override def dataType: DataType = ArrayType(LongType, containsNull = false)
  override def nullable: Boolean = false
  // what Spark's optimizer gives an aggregate over no rows where it does not run it (a
  // correlated scalar subquery without a match, the DISTINCT aggregate rewrite): []
  override def defaultResult: Option[Literal] =
    Some(Literal(UnsafeArrayData.fromPrimitiveArray(Array.emptyLongArray), dataType))
  override def prettyName: String = if (distinct) "sorted_id_set" else "sorted_ids"
  override def createAggregationBuffer(): IdBuffer = new IdBuffer()

  override def update(buffer: IdBuffer, input: InternalRow): IdBuffer = {
    val id = child.eval(input)
    if (id != null) buffer.add(id.asInstanceOf[Long], distinct)
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

/** Puts ``SortedIds`` in place of ``sort_array(collect_list|collect_set(id))`` over a bigint
 * aggregate, unless ``spark.dltrace.nativeIdSets`` is false.  Not over a window, where
 * ``sort_array``'s argument is a window expression. */
object NativeIdSets extends Rule[LogicalPlan] {
  val ENABLED = "spark.dltrace.nativeIdSets"

  // NULL ids skipped (collect_list without RESPECT NULLS): a bigint result without NULL elements
  private val ids = ArrayType(LongType, containsNull = false)

  private def native(aggregate: AggregateExpression): Option[AggregateExpression] = aggregate.aggregateFunction match {
    case _ if aggregate.isDistinct => None
    case collect: CollectList if collect.dataType == ids => Some(sortedIds(aggregate, collect.child, false))
    case collect: CollectSet if collect.dataType == ids => Some(sortedIds(aggregate, collect.child, true))
    case _ => None
  }

  // a new result id: the replaced aggregate's, if still met elsewhere, must not name this one
  private def sortedIds(aggregate: AggregateExpression, id: Expression, distinct: Boolean): AggregateExpression =
    AggregateExpression(SortedIds(id, distinct), aggregate.mode, isDistinct = false, aggregate.filter)

  private def ascending(sort: SortArray): Boolean = sort.ascendingOrder match {
    case Literal(true, _) => true
    case _ => false
  }

  override def apply(plan: LogicalPlan): LogicalPlan = {
    if (SQLConf.get.getConfString(ENABLED, "true").equalsIgnoreCase("false")) return plan
    try {
      plan.transformAllExpressions {
        case sort: SortArray if ascending(sort) => sort.base match {
          case aggregate: AggregateExpression => native(aggregate).getOrElse(sort)
          case _ => sort
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
