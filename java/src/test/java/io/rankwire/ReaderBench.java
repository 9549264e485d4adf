package io.rankwire;

import com.google.protobuf.ByteString;
import com.sun.management.ThreadMXBean;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import rank.v1.Rank.LogMode;
import rank.v1.Rank.RankRequest;
import rank.v1.Rank.RankResponse;
import rank.v1.Rank.RankedItem;

/**
 * The Java reader against protobuf-java on the same response (docs/CLIENTS.md, "Java";
 * BENCHMARKS.md). scripts/bench_java.sh runs it:
 *
 * <pre>
 * java -cp "$(cat java/target/classpath.txt)" io.rankwire.ReaderBench \
 *     --server build/server/rankwire-server --model model/models/ecom_search_lr.model \
 *     --request FILE [--rounds 11] [--log_mode store,inline] [--round_ms 150] \
 *     [--warmup_ms 1500]
 * </pre>
 *
 * The request is the workload's request 0 (500 candidates, seed 20261129, written by
 * rankwire_conformance_dump --request), ranked once by a real rankwire-server with the shipped
 * model per codec and log mode; then, from those bytes, in interleaved rounds (their order
 * alternating), each operation is timed over a batch of calls:
 *
 * <ul>
 *   <li>top10 rankbin / rankbin-zstd: RankReply.open(bytes), then for each of the top 10: id,
 *       score, position, every metric's typed value (a MetricCursor per item) and the log;
 *   <li>top10 rankbin, one cursor: the same with one MetricCursor moved from item to item
 *       ({@link MetricCursor#reset}), the allocation-conscious way;
 *   <li>top10 protobuf: RankResponse.parseFrom(bytes), then for each of the first 10 items:
 *       item_id, score, position, every metrics-map entry (text left as text: the baseline is not
 *       charged for turning it into numbers) and the log;
 *   <li>full rankbin / rankbin-zstd: RankReply.open(bytes).view().materialize(), then every
 *       item's fields and metrics-map entries (values as the decode boxed them);
 *   <li>full protobuf: RankResponse.parseFrom(bytes), then every item's fields and map entries.
 * </ul>
 *
 * Each round's ratio is the protobuf time over the rankbin time (same round); the report gives
 * the median and range of the rounds. Allocation per call is the JVM's own count
 * (com.sun.management.ThreadMXBean.getThreadAllocatedBytes) over a batch, divided by its calls.
 */
public final class ReaderBench {
  static volatile long sink;

  private ReaderBench() {}

  static long top10Rankbin(ByteString response) {
    return top10Rankbin(response, false);
  }

  /** The top-10 read; {@code oneCursor}: one MetricCursor moved from item to item (reset). */
  static long top10Rankbin(ByteString response, boolean oneCursor) {
    RankReply reply = RankReply.open(response, Limits.DEFAULT);
    ResultView view = reply.view();
    long h = 0;
    int n = Math.min(10, view.size());
    MetricCursor c = null;
    for (int i = 0; i < n; i++) {
      Item item = view.item(i);
      h += item.id().length() + Double.doubleToRawLongBits(item.score()) + item.position();
      c = oneCursor && c != null ? c.reset(item) : item.metrics();
      while (c.next()) {
        switch (c.type()) {
          case INT:
            h += c.longValue();
            break;
          case FLOAT:
            h += Float.floatToRawIntBits(c.floatValue());
            break;
          case DOUBLE:
            h += Double.doubleToRawLongBits(c.doubleValue());
            break;
          default:
            h += c.stringValue().length();
            break;
        }
      }
      h += item.log().length();
    }
    return h;
  }

  static long top10Protobuf(ByteString response) throws Exception {
    RankResponse r = RankResponse.parseFrom(response);
    long h = 0;
    int n = Math.min(10, r.getResult().getItemsCount());
    for (int i = 0; i < n; i++) {
      RankedItem item = r.getResult().getItems(i);
      h += item.getItemId().length() + Double.doubleToRawLongBits(item.getScore())
          + item.getPosition();
      for (Map.Entry<String, String> m : item.getMetricsMap().entrySet()) {
        h += m.getKey().length() + m.getValue().length();
      }
      h += item.getLog().length();
    }
    return h;
  }

  static long fullRankbin(ByteString response) {
    long h = 0;
    for (DecodedItem item : RankReply.open(response, Limits.DEFAULT).view().materialize()
        .items()) {
      h += item.id().length() + Double.doubleToRawLongBits(item.score()) + item.position();
      for (Map.Entry<String, Object> m : item.metrics().entrySet()) {
        h += m.getKey().length() + (m.getValue() != null ? 1 : 0);
      }
      h += item.log().length();
    }
    return h;
  }

  static long fullProtobuf(ByteString response) throws Exception {
    RankResponse r = RankResponse.parseFrom(response);
    long h = 0;
    for (RankedItem item : r.getResult().getItemsList()) {
      h += item.getItemId().length() + Double.doubleToRawLongBits(item.getScore())
          + item.getPosition();
      for (Map.Entry<String, String> m : item.getMetricsMap().entrySet()) {
        h += m.getKey().length() + m.getValue().length();
      }
      h += item.getLog().length();
    }
    return h;
  }

  interface Op {
    long run() throws Exception;
  }

  static final class Measure {
    final String name;
    final Op op;
    int batch;
    final List<Double> nsPerCall = new ArrayList<>();
    final List<Double> bytesPerCall = new ArrayList<>();

    Measure(String name, Op op) {
      this.name = name;
      this.op = op;
    }
  }

  static final ThreadMXBean THREADS = (ThreadMXBean) ManagementFactory.getThreadMXBean();

  static void batch(Measure m, boolean record) throws Exception {
    long tid = Thread.currentThread().getId();
    long a0 = THREADS.getThreadAllocatedBytes(tid);
    long t0 = System.nanoTime();
    long h = 0;
    for (int i = 0; i < m.batch; i++) {
      h += m.op.run();
    }
    long t1 = System.nanoTime();
    long a1 = THREADS.getThreadAllocatedBytes(tid);
    sink += h;
    if (record) {
      m.nsPerCall.add((double) (t1 - t0) / m.batch);
      m.bytesPerCall.add((double) (a1 - a0) / m.batch);
    }
  }

  static double median(List<Double> v) {
    double[] a = v.stream().mapToDouble(Double::doubleValue).sorted().toArray();
    return a.length % 2 == 1 ? a[a.length / 2] : (a[a.length / 2 - 1] + a[a.length / 2]) / 2;
  }

  static String spread(List<Double> v, String fmt) {
    double[] a = v.stream().mapToDouble(Double::doubleValue).sorted().toArray();
    return String.format(fmt + " (" + fmt + ".." + fmt + ")", median(v), a[0], a[a.length - 1]);
  }

  static List<Double> ratios(Measure baseline, Measure ours) {
    List<Double> r = new ArrayList<>();
    for (int i = 0; i < ours.nsPerCall.size(); i++) {
      r.add(baseline.nsPerCall.get(i) / ours.nsPerCall.get(i));
    }
    return r;
  }

  /** One log mode's responses and operations; {@code ops} in the order the report uses. */
  static final class Mode {
    final String name;
    final List<Measure> ops;
    final String sizes;

    Mode(String name, ByteString pb, ByteString rb, ByteString rz) {
      this.name = name;
      this.sizes = String.format("response bytes: protobuf %d, rankbin %d, rankbin-zstd %d",
          pb.size(), rb.size(), rz.size());
      this.ops = List.of(
          new Measure("top10 protobuf", () -> top10Protobuf(pb)),
          new Measure("top10 rankbin", () -> top10Rankbin(rb)),
          new Measure("top10 rankbin-zstd", () -> top10Rankbin(rz)),
          new Measure("top10 rankbin, one cursor", () -> top10Rankbin(rb, true)),
          new Measure("full protobuf", () -> fullProtobuf(pb)),
          new Measure("full rankbin", () -> fullRankbin(rb)),
          new Measure("full rankbin-zstd", () -> fullRankbin(rz)));
    }
  }

  public static void main(String[] args) throws Exception {
    Map<String, String> opt = new LinkedHashMap<>();
    opt.put("--rounds", "11");
    opt.put("--log_mode", "store,inline");
    opt.put("--round_ms", "150");
    opt.put("--warmup_ms", "1500");
    for (int i = 0; i + 1 < args.length; i += 2) {
      opt.put(args[i], args[i + 1]);
    }
    System.setProperty("rankwire.server", opt.get("--server"));
    System.setProperty("rankwire.model", opt.get("--model"));
    RankRequest request = RankRequest.parseFrom(Files.readAllBytes(Path.of(opt.get("--request"))));
    List<Mode> modes = new ArrayList<>();
    try (TestServer server = new TestServer();
        RankwireClient client = RankwireClient.newBuilder(server.target()).build()) {
      for (String mode : opt.get("--log_mode").split(",")) {
        RankRequest r = request.toBuilder().setLogMode(mode.equals("store")
            ? LogMode.LOG_MODE_STORE : LogMode.LOG_MODE_INLINE).build();
        ByteString[] b = new ByteString[3];
        int k = 0;
        for (String codec : List.of("protobuf", "rankbin", "rankbin-zstd")) {
          b[k++] = client.rankBytes(r, Duration.ofSeconds(30), List.of(codec));
        }
        modes.add(new Mode(mode, b[0], b[1], b[2]));
      }
    }
    List<Measure> all = new ArrayList<>();
    for (Mode m : modes) {
      all.addAll(m.ops);
    }
    // Warm-up: every operation until the JIT settles, and batch sizes that take about
    // --round_ms per operation per round.
    long roundNs = Long.parseLong(opt.get("--round_ms")) * 1_000_000L;
    long warmupNs = Long.parseLong(opt.get("--warmup_ms")) * 1_000_000L;
    for (Measure m : all) {
      m.batch = 1;
      long end = System.nanoTime() + warmupNs;
      long calls = 0;
      long t0 = System.nanoTime();
      while (System.nanoTime() < end) {
        batch(m, false);
        calls++;
      }
      double ns = (double) (System.nanoTime() - t0) / calls;
      m.batch = (int) Math.max(1, Math.min(1_000_000, roundNs / ns));
    }
    int rounds = Integer.parseInt(opt.get("--rounds"));
    for (int r = 0; r < rounds; r++) {
      List<Measure> order = new ArrayList<>(all);
      if (r % 2 == 1) {
        java.util.Collections.reverse(order);
      }
      for (Measure m : order) {
        batch(m, true);
      }
    }
    System.out.printf("request: %d candidates; %d interleaved rounds (order alternating), "
        + "~%s ms per operation per round%n", request.getCandidatesCount(), rounds,
        opt.get("--round_ms"));
    for (Mode mode : modes) {
      report(mode, rounds);
    }
    System.out.println();
    System.out.println("java " + System.getProperty("java.version") + ", "
        + Runtime.getRuntime().availableProcessors() + " CPUs, sink " + (sink & 1));
  }

  static void report(Mode mode, int rounds) {
    List<Measure> ms = mode.ops;
    System.out.printf("%n### log_mode %s (%s)%n%n", mode.name, mode.sizes);
    System.out.println("| operation | per call, median (min..max) of " + rounds
        + " rounds | allocated per call, median (min..max) |");
    System.out.println("|---|---|---|");
    for (Measure m : ms) {
      List<Double> us = new ArrayList<>();
      for (double ns : m.nsPerCall) {
        us.add(ns / 1000);
      }
      System.out.printf("| %s | %s µs | %s B |%n", m.name, spread(us, "%.2f"),
          spread(m.bytesPerCall, "%.0f"));
    }
    System.out.println();
    System.out.println("| ratio (protobuf time / rankbin time, same round) | median (min..max) |");
    System.out.println("|---|---|");
    System.out.printf("| top 10, rankbin (target >= 50x) | %s× |%n",
        spread(ratios(ms.get(0), ms.get(1)), "%.1f"));
    System.out.printf("| top 10, rankbin-zstd | %s× |%n",
        spread(ratios(ms.get(0), ms.get(2)), "%.1f"));
    System.out.printf("| full decode, rankbin (target >= 3x) | %s× |%n",
        spread(ratios(ms.get(4), ms.get(5)), "%.2f"));
    System.out.printf("| full decode, rankbin-zstd | %s× |%n",
        spread(ratios(ms.get(4), ms.get(6)), "%.2f"));
    System.out.printf("%nallocated per top-10 read (target <= 2048 B): rankbin %.0f B, "
        + "rankbin-zstd %.0f B, rankbin with one cursor %.0f B%n",
        median(ms.get(1).bytesPerCall), median(ms.get(2).bytesPerCall),
        median(ms.get(3).bytesPerCall));
  }
}
