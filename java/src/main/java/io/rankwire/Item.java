package io.rankwire;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * One item of a {@link ResultView}: a light (view, index) pair, as a pyarrow row is. Every
 * accessor asks the view, which reads the item's record (checked when the view made the item)
 * or its metrics and log, so an item read only for its score costs its record, and nothing is
 * kept: {@link #id()} makes a new String each time it is called. A damaged metric or log throws
 * FormatException from that read only.
 *
 * <p>Typed accessors: {@link #doubleMetric} (a DOUBLE, or a FLOAT widened exactly),
 * {@link #floatMetric}, {@link #longMetric} (an INT) and {@link #stringMetric} (a STRING); they
 * throw IllegalArgumentException for a metric of another type and, except for
 * {@code stringMetric} (null), NoSuchElementException for a metric the item does not have.
 * {@link #metrics()} walks every metric without boxing.
 *
 * <p>Thread safety: as its view's (immutable itself).
 */
public final class Item {
  final ResultView view;
  final int index;
  // rankbin: where the item's record starts in the payload's array.
  final int record;

  Item(ResultView view, int index, int record) {
    this.view = view;
    this.index = index;
    this.record = record;
  }

  /** The 0-based index in rank order. */
  public int index() {
    return index;
  }

  /** The item id (UTF-8 as the server wrote it; malformed bytes decode to U+FFFD). */
  public String id() {
    return view.id(this);
  }

  public double score() {
    return view.score(this);
  }

  /** The 1-based rank the server gave (FORMAT.md's varint32, so up to 2^32 - 1). */
  public long position() {
    return view.position(this);
  }

  /**
   * The value of metric {@code name}: a Long (INT), Float (FLOAT), Double (DOUBLE) or String
   * (STRING); null when the item does not have it.
   */
  public Object metric(String name) {
    return view.metric(this, name);
  }

  public double doubleMetric(String name) {
    Object v = present(name);
    if (v instanceof Double) {
      return (Double) v;
    }
    if (v instanceof Float) {
      return (Float) v;
    }
    throw wrongType(name, "double", v);
  }

  public float floatMetric(String name) {
    Object v = present(name);
    if (v instanceof Float) {
      return (Float) v;
    }
    throw wrongType(name, "float", v);
  }

  public long longMetric(String name) {
    Object v = present(name);
    if (v instanceof Long) {
      return (Long) v;
    }
    throw wrongType(name, "int", v);
  }

  /** A STRING metric's value, or null when the item does not have the metric. */
  public String stringMetric(String name) {
    Object v = metric(name);
    if (v == null || v instanceof String) {
      return (String) v;
    }
    throw wrongType(name, "string", v);
  }

  /**
   * A new cursor over every metric of the item, in the payload's order, that reads each value
   * without boxing it (see {@link MetricCursor}; {@link MetricCursor#reset} moves one cursor
   * from item to item).
   */
  public MetricCursor metrics() {
    return view.metrics(this);
  }

  /** Every metric by name (a map of the boxed values, in the payload's order). */
  public Map<String, Object> metricMap() {
    Map<String, Object> out = new LinkedHashMap<>();
    MetricCursor c = metrics();
    while (c.next()) {
      out.put(c.name(), c.value());
    }
    return out;
  }

  /** The item's log line; "" when logs were not inline (fetch them with FetchLogs). */
  public String log() {
    return view.log(this);
  }

  private Object present(String name) {
    Object v = metric(name);
    if (v == null) {
      throw new java.util.NoSuchElementException(
          "item " + index + " has no metric \"" + name + "\"");
    }
    return v;
  }

  private IllegalArgumentException wrongType(String name, String wanted, Object v) {
    return new IllegalArgumentException("metric \"" + name + "\" is a "
        + v.getClass().getSimpleName() + ", not a " + wanted);
  }
}
