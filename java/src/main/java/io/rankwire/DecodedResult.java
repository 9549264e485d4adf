package io.rankwire;

import java.util.Collections;
import java.util.List;
import java.util.Map;

/**
 * A full decode ({@link ResultView#materialize()}): the key table (known keys, in the payload's
 * order for rankbin, by name for protobuf) and every item. Immutable.
 */
public final class DecodedResult {
  private final Map<String, MetricType> keys;
  private final List<DecodedItem> items;

  DecodedResult(Map<String, MetricType> keys, List<DecodedItem> items) {
    this.keys = Collections.unmodifiableMap(keys);
    this.items = Collections.unmodifiableList(items);
  }

  public Map<String, MetricType> keys() {
    return keys;
  }

  public List<DecodedItem> items() {
    return items;
  }
}
