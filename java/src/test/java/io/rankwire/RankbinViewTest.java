package io.rankwire;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertSame;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import com.google.protobuf.ByteString;
import java.util.List;
import java.util.Map;
import org.junit.Test;

/** The reader against docs/FORMAT.md's worked example and hand-made damage. */
public class RankbinViewTest {
  // FORMAT.md, "Worked example": 164 bytes.
  static final String WORKED_EXAMPLE =
      "524B5742010105000129000000020B120973636F72652E6374721B200D726563"
          + "616C6C2E736F75726365010A766563746F725F616E6E02040000000102000104"
          + "1C00000001001200000012000000000000000000D03F00000000000000C03F00"
          + "050E0000000100040000000400000000026869032C0000000210000000001100"
          + "000005736B752D31000000000000E03F01000005736B752D32000000000000D0"
          + "3F020009";

  static ByteString hex(String s) {
    byte[] out = new byte[s.length() / 2];
    for (int i = 0; i < out.length; i++) {
      out[i] = (byte) Integer.parseInt(s.substring(2 * i, 2 * i + 2), 16);
    }
    return ByteString.copyFrom(out);
  }

  @Test
  public void readsTheWorkedExample() {
    ByteString payload = hex(WORKED_EXAMPLE);
    assertEquals(164, payload.size());
    RankbinView view = RankbinView.open(payload);
    assertEquals(2, view.size());
    assertEquals(1, view.minorVersion());
    Item first = view.item(0);
    assertEquals("sku-1", first.id());
    assertEquals(0.5, first.score(), 0);
    assertEquals(1, first.position());
    assertEquals(0.25, first.doubleMetric("score.ctr"), 0);
    assertEquals("vector_ann", first.stringMetric("recall.source"));
    assertEquals("", first.log());
    Item second = view.item(1);
    assertEquals("sku-2", second.id());
    assertEquals(0.125, second.doubleMetric("score.ctr"), 0);
    assertEquals("hi", second.log());
    assertNull(second.metric("no.such.metric"));
    assertEquals(Map.of("score.ctr", MetricType.DOUBLE, "recall.source", MetricType.STRING),
        view.keys());
    DecodedResult all = view.materialize();
    assertEquals(2, all.items().size());
    assertEquals(Map.of("score.ctr", 0.125, "recall.source", "vector_ann"),
        all.items().get(1).metrics());
    MetricCursor c = second.metrics();
    assertTrue(c.next());
    assertEquals(MetricType.DOUBLE, c.type());
    assertEquals(0, c.key());
    assertEquals(0.125, c.doubleValue(), 0);
    assertThrows(IllegalArgumentException.class, c::longValue);
    assertTrue(c.next());
    assertEquals("vector_ann", c.stringValue());
    assertEquals(1, c.key());
    assertTrue(!c.next());
    assertThrows(IllegalArgumentException.class, () -> second.longMetric("score.ctr"));
    assertThrows(IndexOutOfBoundsException.class, () -> view.item(2));
  }

  @Test
  public void everyTruncationIsANamedErrorWithItsOffset() {
    ByteString payload = hex(WORKED_EXAMPLE);
    for (int n = 0; n < payload.size(); n++) {
      ByteString cut = payload.substring(0, n);
      FormatException e = assertThrows(FormatException.class,
          () -> RankbinView.open(cut).materialize());
      assertTrue(e.getMessage(), e.offset() >= -1 && e.offset() <= n);
    }
  }

  @Test
  public void anotherMajorVersionIsUnsupported() {
    byte[] b = hex(WORKED_EXAMPLE).toByteArray();
    b[4] = 2;
    assertThrows(UnsupportedVersionException.class,
        () -> RankbinView.open(ByteString.copyFrom(b)));
  }

  @Test
  public void damageInALaterItemLeavesTheFirstReadable() {
    byte[] b = hex(WORKED_EXAMPLE).toByteArray();
    // Record 1's values offset (the last byte) past its block.
    b[b.length - 1] = 0x7f;
    RankbinView view = RankbinView.open(ByteString.copyFrom(b));
    assertEquals(0.25, view.item(0).doubleMetric("score.ctr"), 0);
    FormatException e = assertThrows(FormatException.class,
        () -> view.item(1).doubleMetric("score.ctr"));
    assertTrue(e.getMessage(), e.getMessage().contains("values offset"));
    assertThrows(FormatException.class, view::materialize);
  }

  @Test
  public void protobufMetricTextFollowsTheCppRules() {
    assertEquals(42L, ProtobufView.parseMetricText("42", MetricType.INT));
    assertEquals(-7L, ProtobufView.parseMetricText("-7", MetricType.INT));
    assertThrows(FormatException.class, () -> ProtobufView.parseMetricText("+7", MetricType.INT));
    assertThrows(FormatException.class,
        () -> ProtobufView.parseMetricText("9223372036854775808", MetricType.INT));
    assertEquals(0.1f, ProtobufView.parseMetricText("0.1", MetricType.FLOAT));
    assertEquals(Double.NEGATIVE_INFINITY, ProtobufView.parseMetricText("-inf", MetricType.DOUBLE));
    assertTrue(Double.isNaN((Double) ProtobufView.parseMetricText("nan", MetricType.DOUBLE)));
    assertThrows(FormatException.class, () -> ProtobufView.parseMetricText("1e39", MetricType.FLOAT));
    assertThrows(FormatException.class, () -> ProtobufView.parseMetricText("1e-400", MetricType.DOUBLE));
    assertThrows(FormatException.class, () -> ProtobufView.parseMetricText("0x10", MetricType.DOUBLE));
    assertThrows(FormatException.class, () -> ProtobufView.parseMetricText("1d", MetricType.DOUBLE));
    assertEquals(0.0, ProtobufView.parseMetricText("0.000", MetricType.DOUBLE));
  }

  @Test
  public void serviceConfigIsClientsMd() {
    Map<String, ?> config = RankwireClient.DEFAULT_SERVICE_CONFIG;
    assertEquals(List.of(Map.of("rankwire_round_robin", Map.of())),
        config.get("loadBalancingConfig"));
    assertEquals(Map.of("serviceName", "rank.v1.RankService"), config.get("healthCheckConfig"));
    assertThrows(IllegalArgumentException.class,
        () -> RankwireClient.serviceConfig("round_robin", 6, null));
  }

  @Test
  public void aKeysSectionOver64KiBIsRead() {
    String longName = "x".repeat(70_000);
    ByteString payload = new TestPayload()
        .key(RankbinView.DOUBLE, "score.ctr")
        .key(RankbinView.INT, longName)
        .shape(0, 1)
        .item("sku-1", 0.5, 0, TestPayload.values(0.25, 42L))
        .build();
    RankbinView view = RankbinView.open(payload);
    assertEquals(42L, view.item(0).longMetric(longName));
    assertEquals(0.25, view.item(0).doubleMetric("score.ctr"), 0);
    assertEquals(Map.of("score.ctr", 0.25, longName, 42L),
        view.materialize().items().get(0).metrics());
  }

  @Test
  public void aDictionaryOfManyEntriesIsReadInAnyOrder() {
    String[] words = new String[12];
    for (int i = 0; i < words.length; i++) {
      words[i] = "word-" + i;
    }
    TestPayload p = new TestPayload().key(RankbinView.STRING_DICT, "src", words).shape(0);
    for (int i = 0; i < words.length; i++) {
      p.item("sku-" + i, 1.0 / (i + 1), 0, TestPayload.values(words.length - 1 - i));
    }
    RankbinView view = RankbinView.open(p.build());
    for (int i = words.length - 1; i >= 0; i--) {
      assertEquals(words[words.length - 1 - i], view.item(i).stringMetric("src"));
    }
    DecodedResult all = RankbinView.open(p.build()).materialize();
    for (int i = 0; i < words.length; i++) {
      assertEquals(words[words.length - 1 - i], all.items().get(i).metrics().get("src"));
    }
  }

  @Test
  public void oneCursorWalksEveryItemOfItsView() {
    ByteString payload = new TestPayload()
        .key(RankbinView.DOUBLE, "a").key(RankbinView.STRING, "b").key(RankbinView.FLOAT, "c")
        .shape(0, 1).shape(2)
        .item("sku-1", 0.5, 0, TestPayload.values(0.25, "first"))
        .item("sku-2", 0.4, 1, TestPayload.values(1.5f))
        .build();
    RankbinView view = RankbinView.open(payload);
    MetricCursor c = view.item(0).metrics();
    assertTrue(c.next());
    assertEquals(0.25, c.doubleValue(), 0);
    assertSame(c, c.reset(view.item(1)));
    assertTrue(c.next());
    assertEquals("c", c.name());
    assertEquals(1.5f, c.floatValue(), 0);
    assertTrue(!c.next());
    assertSame(c, c.reset(view.item(0)));
    assertTrue(c.next());
    assertTrue(c.next());
    assertEquals("first", c.stringValue());
    RankbinView other = RankbinView.open(payload);
    assertThrows(IllegalArgumentException.class, () -> c.reset(other.item(0)));
  }

  @Test
  public void aByteStringThatIsNotOneArrayIsReadToo() {
    ByteString flat = hex(WORKED_EXAMPLE);
    ByteString rope = flat.substring(0, 50).concat(flat.substring(50));
    java.nio.ByteBuffer direct = java.nio.ByteBuffer.allocateDirect(flat.size());
    flat.copyTo(direct);
    direct.flip();
    ByteString overDirect = com.google.protobuf.UnsafeByteOperations.unsafeWrap(direct);
    String want = RankbinView.open(flat).materialize().items().get(1).metrics().toString();
    for (ByteString b : List.of(rope, overDirect, flat.substring(0))) {
      RankbinView view = RankbinView.open(b);
      assertEquals("sku-2", view.item(1).id());
      assertEquals(ByteString.copyFromUtf8("sku-2"), view.idBytes(view.item(1)));
      assertEquals(want, view.materialize().items().get(1).metrics().toString());
    }
  }

  @Test
  public void aFullDecodesMetricsAreAReadOnlyMapInShapeOrder() {
    Map<String, Object> m = RankbinView.open(hex(WORKED_EXAMPLE)).materialize().items().get(0)
        .metrics();
    assertEquals(List.of("score.ctr", "recall.source"), List.copyOf(m.keySet()));
    assertEquals(new java.util.LinkedHashMap<>(Map.of("score.ctr", 0.25,
        "recall.source", "vector_ann")), m);
    assertTrue(m.containsKey("recall.source"));
    assertNull(m.get("no.such.metric"));
    assertThrows(UnsupportedOperationException.class, () -> m.put("x", 1L));
    assertThrows(UnsupportedOperationException.class, () -> m.entrySet().iterator().remove());
  }
}
