package io.rankwire;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import io.grpc.Status;
import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.junit.AfterClass;
import org.junit.BeforeClass;
import org.junit.Test;
import rank.v1.Rank.Candidate;
import rank.v1.Rank.LogMode;
import rank.v1.Rank.RankRequest;
import rank.v1.Rank.Scene;

/**
 * RankwireClient against a real rankwire-server on a free loopback port: the worked example
 * (examples/central_control_java/) run as a user runs it; every codec decodes to the same
 * result, lazily and in full; codec negotiation; FetchLogs; each error code docs/CLIENTS.md
 * tells callers to handle; the service config's health checking is live; TLS and mutual TLS
 * (on Debian's netty through this library's ALPN negotiator, io.netty.handler.ssl.RankwireJdkAlpn).
 */
public class ClientIT {
  static final List<String> FEATURES = List.of("price", "discount_rate", "sales_30d",
      "review_count", "rating", "ctr_7d", "cvr_7d", "add_cart_rate_7d", "text_match",
      "semantic_sim", "brand_affinity", "category_match", "shop_score", "freshness_days", "stock",
      "delivery_days", "image_quality", "return_rate");
  static final List<String> SOURCES =
      List.of("text_bm25", "vector_ann", "i2i_cf", "hot_sale", "personalized");

  private static TestServer server;
  private static RankwireClient client;
  private static Path certs;

  @BeforeClass
  public static void start() throws IOException {
    server = new TestServer();
    client = RankwireClient.newBuilder(server.target()).build();
  }

  @AfterClass
  public static void stop() throws InterruptedException, IOException {
    if (client != null) {
      client.close();
    }
    if (server != null) {
      server.close();
    }
    if (certs != null) {
      try (var paths = Files.walk(certs)) {
        paths.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
      }
    }
  }

  static RankRequest request(String id, int candidates, LogMode logMode) {
    Random rng = new Random(id.hashCode());
    RankRequest.Builder r = RankRequest.newBuilder().setRequestId(id)
        .setScene(Scene.SCENE_SEARCH).setUserId("u" + rng.nextInt(1_000_000))
        .setRequestTimeMs(1795000000000L).setTopN(Math.min(10, candidates)).setLogMode(logMode)
        .putUserFeatures("user_price_pref", 4.7).putUserFeatures("user_activity", 0.4)
        .putContext("query", "trail running shoes").putContext("device", "android")
        .addAllItemFeatureNames(FEATURES);
    for (int i = 0; i < candidates; i++) {
      Candidate.Builder c = Candidate.newBuilder().setItemId("java-sku-" + i)
          .setRecallSource(SOURCES.get(rng.nextInt(SOURCES.size()))).setRecallRank(i + 1);
      for (int f = 0; f < FEATURES.size(); f++) {
        c.addFeatures(rng.nextFloat() * (f == 0 ? 200 : 1));
      }
      r.addCandidates(c);
    }
    return r.build();
  }

  @Test
  public void theWorkedExampleRanksReadsTheTop10AndFetchesTheirLogs() throws Exception {
    // As a user runs it, in its own JVM with the library and its dependencies on the class
    // path: examples/central_control_java/CentralControl.java, compiled with the tests.
    Process p = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java")
        .toString(), "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-cp",
        System.getProperty("java.class.path"), "CentralControl", server.target(), "10000")
        .redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertTrue(p.waitFor(120, TimeUnit.SECONDS));
    assertEquals(out, 0, p.exitValue());
    String[] lines = out.replaceAll("\\s+$", "").split("\n");
    assertEquals(out, 20, lines.length);
    int found = 0;
    for (int i = 0; i < 10; i++) {
      assertTrue(lines[i], lines[i].matches(String.format("%2d sku-\\d+ +\\S+ ctr=\\S+ src=text_bm25",
          i + 1)));
      String id = lines[i].trim().split(" +")[1];
      assertTrue(lines[10 + i], lines[10 + i].startsWith(id + ": "));
      if (!lines[10 + i].endsWith("(no log yet)")) {
        found++;
      }
    }
    System.out.println("central_control_java: " + found + " of 10 logs fetched\n" + out);
    assertTrue(out, found >= 1);
  }

  @Test
  public void everyCodecDecodesToTheSameResultLazilyAndInFull() {
    RankRequest r = request("java-codecs", 500, LogMode.LOG_MODE_INLINE);
    DecodedResult first = null;
    for (String codec : List.of("rankbin", "rankbin-zstd", "protobuf")) {
      RankReply reply = client.rank(r, Duration.ofSeconds(10), List.of(codec));
      assertEquals(codec, reply.codec());
      assertEquals(500, reply.view().size());
      DecodedResult all = reply.view().materialize();
      if (first == null) {
        first = all;
      } else {
        // protobuf lists keys by name, rankbin in the payload's order: the same set.
        assertEquals(codec, first.keys().keySet(), all.keys().keySet());
        for (int i = 0; i < 500; i++) {
          DecodedItem x = first.items().get(i);
          DecodedItem y = all.items().get(i);
          assertEquals(codec, x.id(), y.id());
          assertEquals(codec, Double.doubleToRawLongBits(x.score()),
              Double.doubleToRawLongBits(y.score()));
          assertEquals(codec, x.position(), y.position());
          assertTrue(codec + " " + x.id(), ConformanceIT.same(x.metrics(), y.metrics()));
          assertEquals(codec, x.log(), y.log());
        }
      }
      List<Item> top = reply.top(10);
      for (int i = 0; i < 10; i++) {
        assertEquals("", ConformanceIT.checkItem(reply.view(), i, all.items().get(i)));
        assertEquals(i + 1, top.get(i).position());
        assertFalse(top.get(i).log().isEmpty());
      }
      assertNotNull(top.get(0).metric("score.ctr"));
    }
  }

  @Test
  public void theServersDefaultCodecAppliesWhenTheCallerNamesNone() {
    RankReply reply = client.rank(request("java-default", 5, LogMode.LOG_MODE_NONE),
        Duration.ofSeconds(10));
    assertEquals("protobuf", reply.codec()); // the test server's --codec default
    assertEquals(5, reply.view().size());
  }

  @Test
  public void fetchLogsReturnsTheShownItemsLogs() throws Exception {
    RankRequest r = request("java-logs-" + System.nanoTime(), 50, LogMode.LOG_MODE_STORE);
    RankReply reply = client.rank(r, Duration.ofSeconds(10), List.of("rankbin"));
    List<String> ids = new ArrayList<>();
    for (Item item : reply.top(10)) {
      assertEquals("", item.log());
      ids.add(item.id());
    }
    Map<String, String> logs = Map.of();
    for (int attempt = 0; attempt < 50; attempt++) {
      logs = client.fetchLogs(r.getRequestId(), ids, Duration.ofSeconds(5));
      if (!logs.containsValue(null)) {
        break;
      }
      Thread.sleep(10);
    }
    assertEquals(ids, new ArrayList<>(logs.keySet()));
    for (String id : ids) {
      assertNotNull(id, logs.get(id));
      assertTrue(logs.get(id), logs.get(id).contains(id));
    }
    assertEquals(null, client.fetchLogs(r.getRequestId(), List.of("no-such-item"),
        Duration.ofSeconds(5)).get("no-such-item"));
  }

  @Test
  public void errorsCarryTheirCodes() throws Exception {
    RankwireRpcException bad = assertThrows(RankwireRpcException.class,
        () -> client.rank(RankRequest.newBuilder().setRequestId("java-bad").build(),
            Duration.ofSeconds(5)));
    assertEquals(Status.Code.INVALID_ARGUMENT, bad.getCode());
    assertFalse(bad.isRetryableAfterBackoff());
    RankwireRpcException late = assertThrows(RankwireRpcException.class,
        () -> client.rank(request("java-late", 500, LogMode.LOG_MODE_NONE), Duration.ofNanos(1)));
    assertEquals(Status.Code.DEADLINE_EXCEEDED, late.getCode());
    RankwireRpcException repeated = assertThrows(RankwireRpcException.class,
        () -> client.fetchLogs("java-x", List.of("a", "a"), Duration.ofSeconds(5)));
    assertEquals(Status.Code.INVALID_ARGUMENT, repeated.getCode());
    // Nobody listening: UNAVAILABLE after the channel's retries.
    int port;
    try (java.net.ServerSocket s = new java.net.ServerSocket(0, 1,
        java.net.InetAddress.getLoopbackAddress())) {
      port = s.getLocalPort();
    }
    try (RankwireClient nobody = RankwireClient.newBuilder("127.0.0.1:" + port).build()) {
      RankwireRpcException down = assertThrows(RankwireRpcException.class,
          () -> nobody.rank(request("java-down", 3, LogMode.LOG_MODE_NONE),
              Duration.ofSeconds(5)));
      assertEquals(Status.Code.UNAVAILABLE, down.getCode());
    }
    TestServer small = new TestServer("--max_message_bytes=1048576");
    try (RankwireClient c = RankwireClient.newBuilder(small.target()).build()) {
      RankwireRpcException big = assertThrows(RankwireRpcException.class,
          () -> c.rank(request("java-big", 500, LogMode.LOG_MODE_INLINE), Duration.ofSeconds(10),
              List.of("protobuf")));
      assertEquals(Status.Code.RESOURCE_EXHAUSTED, big.getCode());
      assertTrue(big.isRetryableAfterBackoff());
    } finally {
      small.close();
    }
  }

  @Test
  public void healthCheckingIsOn() {
    // A replica whose health service does not report SERVING for the configured name gets no
    // calls: here none does.
    try (RankwireClient c = RankwireClient.newBuilder(server.target())
        .serviceConfig(RankwireClient.serviceConfig("rankwire_round_robin", 4, "no.such.Service"))
        .build()) {
      RankwireRpcException e = assertThrows(RankwireRpcException.class,
          () -> c.rank(request("java-health", 3, LogMode.LOG_MODE_NONE), Duration.ofSeconds(5)));
      assertEquals(Status.Code.UNAVAILABLE, e.getCode());
    }
    try (RankwireClient c = RankwireClient.newBuilder(server.target())
        .serviceConfig(RankwireClient.serviceConfig("rankwire_round_robin", 4, null)).build()) {
      assertEquals(3, c.rank(request("java-health", 3, LogMode.LOG_MODE_NONE),
          Duration.ofSeconds(5)).view().size());
    }
  }

  /** A CA, a server certificate for rankwire.test and a client certificate, made once. */
  private static synchronized Path certs() throws Exception {
    if (certs != null) {
      return certs;
    }
    Path d = Files.createTempDirectory("rankwire-java-tls-");
    certs = d;
    openssl(d, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
        "-nodes", "-days", "2", "-subj", "/CN=rankwire-java-test-ca", "-keyout", "ca.key",
        "-out", "ca.pem", "-addext", "basicConstraints=critical,CA:TRUE", "-addext",
        "keyUsage=critical,keyCertSign,cRLSign");
    leaf(d, "server", "subjectAltName=DNS:rankwire.test\nextendedKeyUsage=serverAuth");
    leaf(d, "client", "extendedKeyUsage=clientAuth");
    // Another CA, which signed nothing the server presents.
    openssl(d, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
        "-nodes", "-days", "2", "-subj", "/CN=rankwire-java-other-ca", "-keyout", "other.key",
        "-out", "other.pem");
    // Netty reads PKCS#8 keys.
    openssl(d, "pkcs8", "-topk8", "-nocrypt", "-in", "client.key", "-out", "client.p8");
    return d;
  }

  /** The call fails UNAVAILABLE, for {@code why} (the handshake's error) when not null. */
  private static void assertRefused(RankwireClient.Builder b, String why) {
    try (RankwireClient c = b.build()) {
      RankwireRpcException e = assertThrows(RankwireRpcException.class,
          () -> c.rank(request("java-tls", 3, LogMode.LOG_MODE_NONE), Duration.ofSeconds(5)));
      assertEquals(e.toString(), Status.Code.UNAVAILABLE, e.getCode());
      assertTrue(e.toString(), why == null || e.getMessage().contains(why));
    }
  }

  @Test
  public void tlsRanksAndIsRefusedInPlaintextOrWithAnotherCaOrName() throws Exception {
    Path d = certs();
    TestServer tls = new TestServer("--tls_cert_file=" + d.resolve("server.pem"),
        "--tls_key_file=" + d.resolve("server.key"));
    try {
      try (RankwireClient c = RankwireClient.newBuilder(tls.target())
          .tls(file(d, "ca.pem")).sslTargetName("rankwire.test").build()) {
        RankReply reply = c.rank(request("java-tls", 20, LogMode.LOG_MODE_INLINE),
            Duration.ofSeconds(10), List.of("rankbin-zstd"));
        assertEquals("rankbin-zstd", reply.codec());
        assertEquals(20, reply.view().materialize().items().size());
        Map<String, String> logs = c.fetchLogs("java-tls", List.of("java-sku-0"),
            Duration.ofSeconds(5));
        assertTrue(logs.containsKey("java-sku-0"));
      }
      // The server's certificate is checked: against the CA, and for the name.
      assertRefused(RankwireClient.newBuilder(tls.target()), null);
      assertRefused(RankwireClient.newBuilder(tls.target())
          .tls(file(d, "other.pem")).sslTargetName("rankwire.test"), "PKIX path building failed");
      assertRefused(RankwireClient.newBuilder(tls.target())
          .tls(file(d, "ca.pem")).sslTargetName("not-rankwire.test"), "not-rankwire.test");
    } finally {
      tls.close();
    }
  }

  @Test
  public void mutualTlsRanksAndIsRefusedWithoutAClientCertificate() throws Exception {
    Path d = certs();
    TestServer mtls = new TestServer("--tls_cert_file=" + d.resolve("server.pem"),
        "--tls_key_file=" + d.resolve("server.key"),
        "--tls_client_ca_file=" + d.resolve("ca.pem"));
    try {
      try (RankwireClient c = RankwireClient.newBuilder(mtls.target())
          .mutualTls(file(d, "ca.pem"), file(d, "client.pem"), file(d, "client.p8"))
          .sslTargetName("rankwire.test").build()) {
        RankReply reply = c.rank(request("java-mtls", 20, LogMode.LOG_MODE_NONE),
            Duration.ofSeconds(10), List.of("rankbin"));
        assertEquals("rankbin", reply.codec());
        assertEquals(20, reply.view().size());
      }
      assertRefused(RankwireClient.newBuilder(mtls.target()), null);
      assertRefused(RankwireClient.newBuilder(mtls.target())
          .tls(file(d, "ca.pem")).sslTargetName("rankwire.test"), null);
    } finally {
      mtls.close();
    }
  }

  private static File file(Path d, String name) {
    return d.resolve(name).toFile();
  }

  private static void leaf(Path d, String name, String ext) throws Exception {
    Files.writeString(d.resolve(name + ".ext"), ext + "\n");
    openssl(d, "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
        "-subj", "/CN=" + name, "-keyout", name + ".key", "-out", name + ".csr");
    openssl(d, "x509", "-req", "-days", "2", "-in", name + ".csr", "-CA", "ca.pem", "-CAkey",
        "ca.key", "-CAcreateserial", "-out", name + ".pem", "-extfile", name + ".ext");
  }

  private static void openssl(Path dir, String... args) throws Exception {
    List<String> cmd = new ArrayList<>();
    cmd.add("openssl");
    cmd.addAll(List.of(args));
    Process p = new ProcessBuilder(cmd).directory(dir.toFile()).redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertTrue(p.waitFor(60, TimeUnit.SECONDS));
    assertEquals(out, 0, p.exitValue());
  }
}
