package io.rankwire;

import java.util.AbstractMap;
import java.util.AbstractSet;
import java.util.HashMap;
import java.util.Iterator;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.Set;
import java.util.function.BiConsumer;

/**
 * An item's metrics in a full decode ({@link DecodedItem#metrics()}): the values in an array, in
 * the item's shape's order, named by a key table that every item of that shape shares. A
 * LinkedHashMap per item would build an entry per metric; this builds one array. Immutable;
 * lookups by name go through the shared table's index (made on the first).
 */
final class MetricMap extends AbstractMap<String, Object> {
  /** A shape's known keys: their names (in order) and every key's type code (unknown too). */
  static final class Keys {
    final String[] names;
    final byte[] codes;
    final int[] keys; // KEYS indexes, per code
    private volatile Map<String, Integer> index;

    Keys(String[] names, byte[] codes, int[] keys) {
      this.names = names;
      this.codes = codes;
      this.keys = keys;
    }

    int slot(Object name) {
      Map<String, Integer> m = index;
      if (m == null) {
        m = new HashMap<>(2 * names.length);
        for (int i = 0; i < names.length; i++) {
          m.put(names[i], i);
        }
        index = m; // Immutable once published; a race makes an equal copy.
      }
      Integer i = m.get(name);
      return i == null ? -1 : i;
    }
  }

  private final Keys keys;
  private final Object[] values;

  MetricMap(Keys keys, Object[] values) {
    this.keys = keys;
    this.values = values;
  }

  @Override
  public int size() {
    return values.length;
  }

  @Override
  public boolean containsKey(Object name) {
    return keys.slot(name) >= 0;
  }

  @Override
  public Object get(Object name) {
    int i = keys.slot(name);
    return i < 0 ? null : values[i];
  }

  @Override
  public void forEach(BiConsumer<? super String, ? super Object> action) {
    for (int i = 0; i < values.length; i++) {
      action.accept(keys.names[i], values[i]);
    }
  }

  @Override
  public Set<Map.Entry<String, Object>> entrySet() {
    return new AbstractSet<>() {
      @Override
      public int size() {
        return values.length;
      }

      @Override
      public Iterator<Map.Entry<String, Object>> iterator() {
        return new Iterator<>() {
          private int i;

          @Override
          public boolean hasNext() {
            return i < values.length;
          }

          @Override
          public Map.Entry<String, Object> next() {
            if (i >= values.length) {
              throw new NoSuchElementException();
            }
            Map.Entry<String, Object> e = new SimpleImmutableEntry<>(keys.names[i], values[i]);
            i++;
            return e;
          }
        };
      }
    };
  }
}
