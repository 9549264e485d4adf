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
import java.util.TreeMap;
import org.junit.AfterClass;
import org.junit.BeforeClass;
import org.junit.Test;

/**
 * The Java reader and the C++ reader agree, value for value (docs/FORMAT.md; the Python
 * package's interop.python_conformance is the same check):
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
    dump = new Dump("--corpus", TestServer.required("rankwire.fuzz.corpus"));
  }

  @AfterClass
  public static void removeDump() throws Exception {
    if (dump != null) {
      dump.close();
    }
  }

  static String hex(byte[] b) {
    StringBuilder s = new StringBuilder(2 * b.length);
    for (byte x : b) {
      s.append(Character.forDigit((x >> 4) & 15, 16)).append(Character.forDigit(x & 15, 16));
    }
    return s.toString();
  }

  static String hexString(String s) {
    return hex(s.getBytes(StandardCharsets.UTF_8));
  }

  /** C++'s hex of a string's bytes as Java sees it (malformed UTF-8 becomes U+FFFD). */
  static String asJava(String hexBytes) {
    byte[] b = new byte[hexBytes.length() / 2];
    for (int i = 0; i < b.length; i++) {
      b[i] = (byte) Integer.parseInt(hexBytes.substring(2 * i, 2 * i + 2), 16);
    }
    return hexString(new String(b, StandardCharsets.UTF_8));
  }

  static String valueText(Object v) {
    if (v instanceof Long) {
      return "i:" + v;
    }
    if (v instanceof Float) {
      return String.format("f:%08x", Float.floatToRawIntBits((Float) v));
    }
    if (v instanceof Double) {
      return String.format("d:%016x", Double.doubleToRawLongBits((Double) v));
    }
    return "s:" + hexString((String) v);
  }

  /** The C++ decode, normalised: strings through Java's UTF-8, metrics by key index. */
  static String expected(JsonObject result) {
    StringBuilder out = new StringBuilder("keys:");
    for (JsonElement k : result.getAsJsonArray("keys")) {
      JsonArray a = k.getAsJsonArray();
      out.append(asJava(a.get(0).getAsString())).append('/').append(a.get(1).getAsInt())
          .append(',');
    }
    for (JsonElement e : result.getAsJsonArray("items")) {
      JsonArray it = e.getAsJsonArray();
      out.append("\nitem ").append(asJava(it.get(0).getAsString())).append(' ')
          .append(it.get(1).getAsString()).append(' ').append(it.get(2).getAsLong());
      TreeMap<Integer, List<String>> metrics = new TreeMap<>();
      for (JsonElement m : it.get(3).getAsJsonArray()) {
        JsonArray kv = m.getAsJsonArray();
        String v = kv.get(1).getAsString();
        if (v.startsWith("s:")) {
          v = "s:" + asJava(v.substring(2));
        }
        metrics.computeIfAbsent(kv.get(0).getAsInt(), x -> new ArrayList<>()).add(v);
      }
      out.append(' ').append(metrics).append(" log=").append(asJava(it.get(4).getAsString()));
    }
    return out.toString();
  }

  static String actual(DecodedResult r) {
    StringBuilder out = new StringBuilder("keys:");
    Map<String, Integer> index = new java.util.HashMap<>();
    for (Map.Entry<String, MetricType> k : r.keys().entrySet()) {
      index.put(k.getKey(), index.size());
      out.append(hexString(k.getKey())).append('/').append(k.getValue().number()).append(',');
    }
    for (DecodedItem it : r.items()) {
      out.append("\nitem ").append(hexString(it.id())).append(' ')
          .append(String.format("%016x", Double.doubleToRawLongBits(it.score()))).append(' ')
          .append(it.position());
      TreeMap<Integer, List<String>> metrics = new TreeMap<>();
      for (Map.Entry<String, Object> m : it.metrics().entrySet()) {
        metrics.computeIfAbsent(index.get(m.getKey()), x -> new ArrayList<>())
            .add(valueText(m.getValue()));
      }
      out.append(' ').append(metrics).append(" log=").append(hexString(it.log()));
    }
    return out.toString();
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

  @Test
  public void fullDecodesAgreeWithTheCppReader() throws Exception {
    List<String> mismatches = new ArrayList<>();
    int compared = 0;
    for (JsonObject c : dump.cases) {
      ByteString data = dump.payload(c);
      String want = c.get("outcome").getAsString();
      String got;
      DecodedResult decoded = null;
      try {
        decoded = ResultView.open(c.get("codec").getAsString(), data, Limits.DEFAULT)
            .materialize();
        got = "ok";
      } catch (RankwireException e) {
        got = outcome(e);
      } catch (RuntimeException e) {
        got = "unnamed " + e;
      }
      if (!got.equals(want)) {
        mismatches.add(c.get("name").getAsString() + ": C++ " + want + ", Java " + got);
        continue;
      }
      if (decoded == null) {
        continue;
      }
      compared++;
      String a = actual(decoded);
      String e = expected(c.getAsJsonObject("result"));
      if (!a.equals(e)) {
        mismatches.add(c.get("name").getAsString() + ": decoded values differ:\nC++  "
            + e.substring(0, Math.min(400, e.length())) + "\nJava "
            + a.substring(0, Math.min(400, a.length())));
      }
    }
    System.out.printf("conformance: %d cases, %d full decodes compared value for value, "
        + "%d disagreements%n", dump.cases.size(), compared, mismatches.size());
    assertEquals(mismatches.size() + " of " + dump.cases.size() + " cases",
        List.of(), mismatches.subList(0, Math.min(20, mismatches.size())));
    assertTrue("compared " + compared, compared > 10000);
  }

  @Test
  public void lazyReadsThrowOrAgreeWithTheFullDecode() throws Exception {
    List<String> problems = new ArrayList<>();
    for (JsonObject c : dump.cases) {
      ByteString data = dump.payload(c);
      String codec = c.get("codec").getAsString();
      DecodedResult decoded = null;
      try {
        decoded = ResultView.open(codec, data, Limits.DEFAULT).materialize();
      } catch (RankwireException e) {
        // compared below: the lazy reads must still throw only named exceptions
      }
      ResultView view;
      try {
        view = ResultView.open(codec, data, Limits.DEFAULT);
      } catch (RankwireException e) {
        continue;
      } catch (RuntimeException e) {
        problems.add(c.get("name").getAsString() + ": open threw " + e);
        continue;
      }
      for (int i = 0; i < view.size(); i++) {
        String problem = checkItem(view, i, decoded == null ? null : decoded.items().get(i));
        if (!problem.isEmpty()) {
          problems.add(c.get("name").getAsString() + " item " + i + ": " + problem);
        }
      }
    }
    assertEquals(problems.size() + " problems", List.of(),
        problems.subList(0, Math.min(20, problems.size())));
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
      Map<String, Object> got = new java.util.HashMap<>();
      MetricCursor cursor = item.metrics();
      while (cursor.next()) {
        got.put(cursor.name(), cursor.value());
      }
      if (want != null && !same(got, want.metrics())) {
        return "cursor: " + got + " != " + want.metrics();
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
          if (!valueText(v).equals(valueText(m.getValue()))) {
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
    if (!a.keySet().equals(b.keySet())) {
      return false;
    }
    for (Map.Entry<String, Object> e : a.entrySet()) {
      if (!valueText(e.getValue()).equals(valueText(b.get(e.getKey())))) {
        return false;
      }
    }
    return true;
  }
}
