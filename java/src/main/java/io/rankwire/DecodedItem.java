package io.rankwire;

import java.util.Collections;
import java.util.Map;

/**
 * One item of a full decode. Metric values are {@code Long} (INT), {@code Float} (FLOAT),
 * {@code Double} (DOUBLE) or {@code String} (STRING); the map keeps the item's own order (its
 * shape's, for rankbin). Immutable.
 */
public final class DecodedItem {
  private final String id;
  private final double score;
  private final long position;
  private final Map<String, Object> metrics;
  private final String log;

  DecodedItem(String id, double score, long position, Map<String, Object> metrics, String log) {
    this.id = id;
    this.score = score;
    this.position = position;
    this.metrics = metrics instanceof MetricMap ? metrics : Collections.unmodifiableMap(metrics);
    this.log = log;
  }

  public String id() {
    return id;
  }

  public double score() {
    return score;
  }

  /** The 1-based rank the server gave (an unsigned 32-bit value). */
  public long position() {
    return position;
  }

  public Map<String, Object> metrics() {
    return metrics;
  }

  public String log() {
    return log;
  }
}
