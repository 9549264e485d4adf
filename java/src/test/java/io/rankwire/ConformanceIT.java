package io.rankwire;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.protobuf.ByteString;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.BeforeClass;
import org.junit.Test;

/**
 * The Java reader and the C++ reader agree, value for value (docs/FORMAT.md; the Python
 * package's interop.python_conformance is the same check). Each case of
 * rankwire_conformance_dump (with the codec fuzz corpus: {@link Dump#shared()}) is read once:
 *
 * <ul>
 *   <li>the Java full decode ({@link ResultView#materialize()}) succeeds exactly when the C++
 *       one does, fails with the matching exception (DATA_LOSS: FormatException, UNIMPLEMENTED:
 *       UnsupportedVersionException, RESOURCE_EXHAUSTED: LimitException), and when both succeed
 *       gives the same key table and items, bit for bit (scores and numbers by their IEEE-754
 *       bits; an item's metrics as a mapping by key: the C++ decode lists them in key-table
 *       order); strings are compared as Java decodes UTF-8 on both sides;
 *   <li>on every payload, whatever its damage, every lazy read (an item, its metrics through the
 *       cursor, one by one by name and as a map, its log) throws a RankwireException or, when
 *       the full decode succeeded, returns what it holds: never another exception or value.
 * </ul>
 */
public class ConformanceIT {
  private static Dump dump;

  @BeforeClass
  public static void writeDump() throws Exception {
    dump = Dump.shared();
  }

  static String outcome(RuntimeException e) {
    if (e instanceof UnsupportedVersionException) {
      return "UNIMPLEMENTED";
    }
    if (e instanceof FormatException) {
      return "DATA_LOSS";
    }
    if (e instanceof LimitException) {
      return "RESOURCE_EXHAUSTED";
    }
    return "unnamed " + e;
  }

  @Test
  public void theDumpCoversWhatItShould() {
    Set<String> codecs = new HashSet<>();
    Set<String> outcomes = new HashSet<>();
    int valid = 0;
    int corpus = 0;
    for (JsonObject c : dump.cases) {
      codecs.add(c.get("name").getAsString().split("/seed=")[0]);
      outcomes.add(c.get("outcome").getAsString());
      if (c.get("outcome").getAsString().equals("ok") && !Dump.damaged(c)) {
        valid++;
      }
      if (c.get("name").getAsString().startsWith("corpus/")) {
        corpus++;
      }
    }
    assertTrue(codecs.toString(), codecs.containsAll(List.of("protobuf", "rankbin",
        "rankbin-zstd", "rankbin/block_items=1", "rankbin-zstd/eager_zstd",
        "rankbin-zstd/no_checksum", "rankbin-zstd/max_dict_entries=2")));
    assertTrue(outcomes.toString(),
        outcomes.containsAll(List.of("ok", "DATA_LOSS", "UNIMPLEMENTED", "RESOURCE_EXHAUSTED")));
    assertTrue("valid payloads: " + valid, valid > 1200);
    assertTrue("corpus inputs: " + corpus, corpus > 40);
  }

  /**
   * Every case once: the full decode against the C++ one, then (whatever the outcome) every
   * lazy read of every item against the full decode.
   */
  @Test
  public void theJavaReaderAgreesWithTheCppReader() throws Exception {
    List<String> mismatches = new ArrayList<>();
    List<String> problems = new ArrayList<>();
    int compared = 0;
    final long cpu0 = java.lang.management.ManagementFactory.getThreadMXBean()
        .getCurrentThreadCpuTime();
    for (JsonObject c : dump.cases) {
      final String name = c.get("name").getAsString();
      final String codec = c.get("codec").getAsString();
      final ByteString data = dump.payload(c);
      final String want = c.get("outcome").getAsString();
      String got;
      DecodedResult decoded = null;
      try {
        decoded = ResultView.open(codec, data, Limits.DEFAULT).materialize();
        got = "ok";
      } catch (RankwireException e) {
        got = outcome(e);
      } catch (RuntimeException e) {
        got = "unnamed " + e;
      }
      if (!got.equals(want)) {
        mismatches.add(name + ": C++ " + want + ", Java " + got);
      } else if (decoded != null) {
        compared++;
        String difference = compare(c.getAsJsonObject("result"), decoded);
        if (difference != null) {
          mismatches.add(name + ": decoded values differ: " + difference);
        }
      }
      lazyReads(name, codec, data, decoded, problems);
    }
    System.out.printf("conformance: %d cases, %d full decodes compared value for value, "
        + "%d disagreements, %d lazy-read problems (%.1f s of CPU)%n", dump.cases.size(),
        compared, mismatches.size(), problems.size(), (java.lang.management.ManagementFactory
            .getThreadMXBean().getCurrentThreadCpuTime() - cpu0) / 1e9);
    assertEquals(mismatches.size() + " of " + dump.cases.size() + " cases",
        List.of(), mismatches.subList(0, Math.min(20, mismatches.size())));
    assertTrue("compared " + compared, compared > 10000);
    assertEquals(problems.size() + " problems", List.of(),
        problems.subList(0, Math.min(20, problems.size())));
  }

  /** On every payload, whatever its damage: each lazy read throws a named error or agrees. */
  private static void lazyReads(String name, String codec, ByteString data,
      DecodedResult decoded, List<String> problems) {
    ResultView view;
    try {
      view = ResultView.open(codec, data, Limits.DEFAULT);
    } catch (RankwireException e) {
      return;
    } catch (RuntimeException e) {
      problems.add(name + ": open threw " + e);
      return;
    }
    for (int i = 0; i < view.size(); i++) {
      String problem = checkItem(view, i, decoded == null ? null : decoded.items().get(i));
      if (!problem.isEmpty()) {
        problems.add(name + " item " + i + ": " + problem);
      }
    }
  }

  static byte[] unhex(String hex) {
    byte[] b = new byte[hex.length() / 2];
    for (int i = 0; i < b.length; i++) {
      b[i] = (byte) (Character.digit(hex.charAt(2 * i), 16) << 4
          | Character.digit(hex.charAt(2 * i + 1), 16));
    }
    return b;
  }

  /** The string C++ wrote as hex of its bytes, as Java decodes them (U+FFFD for bad UTF-8). */
  static String javaString(String hex) {
    return new String(unhex(hex), StandardCharsets.UTF_8);
  }

  /** C++'s "i:", "f:", "d:" or "s:" value against Java's; null when they are the same. */
  static boolean sameValue(String cpp, Object v) {
    String x = cpp.substring(2);
    switch (cpp.charAt(0)) {
      case 'i':
        return v instanceof Long && (Long) v == Long.parseLong(x);
      case 'f':
        return v instanceof Float
            && Float.floatToRawIntBits((Float) v) == Integer.parseUnsignedInt(x, 16);
      case 'd':
        return v instanceof Double
            && Double.doubleToRawLongBits((Double) v) == Long.parseUnsignedLong(x, 16);
      default:
        return v instanceof String && v.equals(javaString(x));
    }
  }

  /**
   * The C++ full decode against the Java one: the key table in order (names as Java decodes
   * them, types), then each item's id, score and position bit for bit, its metrics as a
   * mapping by key (the C++ decode lists them in key-table order, Java in the item's) and its
   * log. Null when they agree, else the first difference.
   */
  static String compare(JsonObject want, DecodedResult got) {
    JsonArray keys = want.getAsJsonArray("keys");
    if (keys.size() != got.keys().size()) {
      return "key tables of " + keys.size() + " and " + got.keys().size();
    }
    String[] names = new String[keys.size()];
    int k = 0;
    for (Map.Entry<String, MetricType> e : got.keys().entrySet()) {
      JsonArray cpp = keys.get(k).getAsJsonArray();
      names[k] = javaString(cpp.get(0).getAsString());
      if (!names[k].equals(e.getKey()) || cpp.get(1).getAsInt() != e.getValue().number()) {
        return "key " + k + ": C++ " + cpp + ", Java " + e;
      }
      k++;
    }
    JsonArray items = want.getAsJsonArray("items");
    if (items.size() != got.items().size()) {
      return items.size() + " and " + got.items().size() + " items";
    }
    for (int i = 0; i < items.size(); i++) {
      JsonArray it = items.get(i).getAsJsonArray();
      DecodedItem item = got.items().get(i);
      JsonArray metrics = it.get(3).getAsJsonArray();
      if (!javaString(it.get(0).getAsString()).equals(item.id())
          || Long.parseUnsignedLong(it.get(1).getAsString(), 16)
              != Double.doubleToRawLongBits(item.score())
          || it.get(2).getAsLong() != item.position()
          || metrics.size() != item.metrics().size()
          || !javaString(it.get(4).getAsString()).equals(item.log())) {
        return "item " + i + ": C++ " + abbreviated(it) + ", Java " + item.id() + " "
            + item.score() + " " + item.position() + " " + item.metrics();
      }
      for (JsonElement m : metrics) {
        JsonArray kv = m.getAsJsonArray();
        String name = names[kv.get(0).getAsInt()];
        Object v = item.metrics().get(name);
        if (!sameValue(kv.get(1).getAsString(), v)) {
          return "item " + i + " metric \"" + name + "\": C++ " + kv.get(1) + ", Java " + v;
        }
      }
    }
    return null;
  }

  private static String abbreviated(JsonArray a) {
    String s = a.toString();
    return s.length() > 300 ? s.substring(0, 300) + "..." : s;
  }

  /** "" if every read of item i throws a RankwireException or agrees with {@code want}. */
  static String checkItem(ResultView view, int i, DecodedItem want) {
    Item item;
    try {
      item = view.item(i);
      item.id();
    } catch (RankwireException e) {
      return "";
    } catch (RuntimeException e) {
      return "item() threw " + e;
    }
    if (want != null && !(item.id().equals(want.id()) && item.position() == want.position()
        && Double.doubleToRawLongBits(item.score()) == Double.doubleToRawLongBits(
            want.score()))) {
      return "hot fields differ";
    }
    try {
      MetricCursor cursor = item.metrics();
      if (want == null) {
        while (cursor.next()) {
          cursor.value(); // read, nothing to compare with
        }
      } else {
        Map<String, Object> got = new java.util.HashMap<>();
        while (cursor.next()) {
          got.put(cursor.name(), cursor.value());
        }
        if (!same(got, want.metrics())) {
          return "cursor: " + got + " != " + want.metrics();
        }
      }
    } catch (RankwireException e) {
      // a named error: fine
    } catch (RuntimeException e) {
      return "metrics() threw " + e;
    }
    try {
      Map<String, Object> got = item.metricMap();
      if (want != null && !same(got, want.metrics())) {
        return "metricMap: " + got + " != " + want.metrics();
      }
    } catch (RankwireException e) {
      // fine
    } catch (RuntimeException e) {
      return "metricMap() threw " + e;
    }
    try {
      String log = item.log();
      if (want != null && !log.equals(want.log())) {
        return "log differs";
      }
    } catch (RankwireException e) {
      // fine
    } catch (RuntimeException e) {
      return "log() threw " + e;
    }
    if (want != null) {
      for (Map.Entry<String, Object> m : want.metrics().entrySet()) {
        try {
          Object v = item.metric(m.getKey());
          if (!sameObject(v, m.getValue())) {
            return "metric(" + m.getKey() + ") = " + v + " != " + m.getValue();
          }
        } catch (RankwireException e) {
          // fine
        } catch (RuntimeException e) {
          return "metric(" + m.getKey() + ") threw " + e;
        }
      }
    }
    return "";
  }

  static boolean same(Map<String, Object> a, Map<String, Object> b) {
    if (a.size() != b.size()) {
      return false;
    }
    for (Map.Entry<String, Object> e : a.entrySet()) {
      if (!sameObject(e.getValue(), b.get(e.getKey()))) {
        return false;
      }
    }
    return true;
  }

  /** Equal values of the same type, numbers bit for bit. */
  static boolean sameObject(Object a, Object b) {
    if (a instanceof Float && b instanceof Float) {
      return Float.floatToRawIntBits((Float) a) == Float.floatToRawIntBits((Float) b);
    }
    if (a instanceof Double && b instanceof Double) {
      return Double.doubleToRawLongBits((Double) a) == Double.doubleToRawLongBits((Double) b);
    }
    return a != null && a.equals(b);
  }
}
