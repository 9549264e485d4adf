package io.rankwire;

/**
 * Walks an item's metrics in order, reading each value without boxing it:
 *
 * <pre>{@code
 * MetricCursor c = item.metrics();
 * while (c.next()) {              // decodes the next value (FormatException if it is damaged)
 *   switch (c.type()) {
 *     case DOUBLE: use(c.key(), c.doubleValue()); break;
 *     ...
 *   }
 * }
 * }</pre>
 *
 * {@link #key()} is the metric's index in {@link ResultView#keys()}; {@link #name()} its name.
 * {@link #reset(Item)} moves the cursor to another item of the same view, so that one cursor
 * walks many items without allocating:
 *
 * <pre>{@code
 * MetricCursor c = null;
 * for (Item item : view.top(10)) {
 *   c = c == null ? item.metrics() : c.reset(item);
 *   while (c.next()) { ... }
 * }
 * }</pre>
 *
 * For {@code metricMap()} and by-name lookups a rankbin view checks that key names are unique
 * (FORMAT.md); the cursor does not need to. Not thread-safe: one cursor per thread.
 */
public abstract class MetricCursor {
  MetricCursor() {}

  /**
   * Moves this cursor to the start of {@code item}'s metrics (an item of the view this cursor
   * came from; IllegalArgumentException otherwise) and returns it. FormatException when the
   * item's shape or block is damaged, as {@link Item#metrics()} throws.
   */
  public abstract MetricCursor reset(Item item);

  /** Moves to the next metric; false after the last. */
  public abstract boolean next();

  /** The current metric's index in the view's key table ({@link ResultView#keys()} order). */
  public abstract int key();

  public abstract String name();

  public abstract MetricType type();

  /** An INT's value. */
  public abstract long longValue();

  /** A FLOAT's value. */
  public abstract float floatValue();

  /** A DOUBLE's value (or a FLOAT's, widened). */
  public abstract double doubleValue();

  /** A STRING's value. */
  public abstract String stringValue();

  /** The value boxed: Long, Float, Double or String. */
  public Object value() {
    switch (type()) {
      case INT:
        return longValue();
      case FLOAT:
        return floatValue();
      case DOUBLE:
        return doubleValue();
      default:
        return stringValue();
    }
  }
}
