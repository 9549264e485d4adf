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
 * For {@code metricMap()} and by-name lookups a rankbin view checks that key names are unique
 * (FORMAT.md); the cursor does not need to. Not thread-safe: one cursor per thread.
 */
public abstract class MetricCursor {
  MetricCursor() {}

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
