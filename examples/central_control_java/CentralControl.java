// Central-control's side of rankwire, in Java: rank 500 candidates with a deadline, show the
// top 10 (read lazily from the rankbin payload), fetch their logs, and handle the errors a
// caller must expect (docs/CLIENTS.md, "Errors and what to do with each").
//
//   java -cp "$(cat java/target/classpath.txt)" examples/central_control_java/CentralControl.java \
//       dns:///rankwire.prod.svc.cluster.local:50051 [RANK_DEADLINE_MS (default 250)]
//
// It needs only the library (io.rankwire:rankwire-client) and its dependencies on the
// classpath; java/ builds both (docs/CLIENTS.md, "Java"). The ctest java.client runs
// it against a live rankwire-server.

import io.rankwire.Item;
import io.rankwire.RankReply;
import io.rankwire.RankwireClient;
import io.rankwire.RankwireRpcException;
import io.grpc.Status;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import rank.v1.Rank.Candidate;
import rank.v1.Rank.LogMode;
import rank.v1.Rank.RankRequest;
import rank.v1.Rank.Scene;

public final class CentralControl {
  private CentralControl() {}

  static RankRequest makeRequest(String requestId) {
    RankRequest.Builder request = RankRequest.newBuilder()
        .setRequestId(requestId)
        .setScene(Scene.SCENE_SEARCH)
        .setUserId("u-42")
        .setRequestTimeMs(System.currentTimeMillis())
        .setTopN(10)
        .setLogMode(LogMode.LOG_MODE_STORE)  // logs to the store, not the response
        .addAllItemFeatureNames(List.of("price", "ctr_7d", "text_match"));
    for (int i = 0; i < 500; i++) {
      request.addCandidates(Candidate.newBuilder()
          .setItemId("sku-" + i)
          .setRecallSource("text_bm25")
          .setRecallRank(i + 1)
          .addFeatures(20.0f + i)
          .addFeatures(0.01f * (i % 7))
          .addFeatures(0.5f));
    }
    return request.build();
  }

  /** The ranked result, or null when the fleet cannot rank it now. */
  static RankReply rankWithBackoff(RankwireClient client, RankRequest request,
      Duration deadline) throws InterruptedException {
    for (int attempt = 0; attempt < 3; attempt++) {
      try {
        // The deadline covers the channel's own retries of UNAVAILABLE.
        return client.rank(request, deadline, List.of("rankbin"));
      } catch (RankwireRpcException e) {
        if (e.isRetryableAfterBackoff() && attempt < 2) {
          Thread.sleep(20L << attempt);  // Shedding load: back off, never retry at once.
          continue;
        }
        Status.Code code = e.getCode();
        if (code == Status.Code.RESOURCE_EXHAUSTED || code == Status.Code.UNAVAILABLE
            || code == Status.Code.DEADLINE_EXCEEDED) {
          System.err.println("ranking unavailable (" + code + "): " + e.details());
          return null;  // Fall back (e.g. to recall order).
        }
        throw e;  // INVALID_ARGUMENT and the like: a bug in the request.
      }
    }
    return null;
  }

  public static void main(String[] args) throws InterruptedException {
    String target = args.length > 0 ? args[0] : "localhost:50051";
    // From what the caller can wait (CLIENTS.md, "Deadlines"); a cold JVM's first call is slow.
    Duration deadline = Duration.ofMillis(args.length > 1 ? Long.parseLong(args[1]) : 250);
    try (RankwireClient client = RankwireClient.newBuilder(target).build()) {
      // Connect at start-up, not inside the first call's deadline.
      client.awaitReady(Duration.ofSeconds(5));
      RankRequest request = makeRequest("cc-java-" + System.nanoTime());
      RankReply reply = rankWithBackoff(client, request, deadline);
      if (reply == null) {
        System.exit(1);
      }
      List<Item> top = reply.top(10);  // ten records read, nothing else
      List<String> ids = new ArrayList<>();
      for (Item item : top) {
        System.out.printf("%2d %-8s %.4f ctr=%.4f src=%s%n", item.position(), item.id(),
            item.score(), item.doubleMetric("score.ctr"), item.stringMetric("recall.source"));
        ids.add(item.id());
      }
      Map<String, String> logs;
      try {
        logs = client.fetchLogs(request.getRequestId(), ids, Duration.ofMillis(100));
        if (logs.containsValue(null)) {
          // Written a few ms after the response: one more try a little later, never a loop.
          Thread.sleep(20);
          List<String> missing = new ArrayList<>();
          logs.forEach((id, line) -> {
            if (line == null) {
              missing.add(id);
            }
          });
          logs.putAll(client.fetchLogs(request.getRequestId(), missing, Duration.ofMillis(100)));
        }
      } catch (RankwireRpcException e) {
        System.err.println("logs unavailable (" + e.getCode() + ")");
        return;  // Logs are for debugging: ranking succeeded.
      }
      for (String id : ids) {
        String line = logs.get(id);
        System.out.println(id + ": " + (line == null ? "(no log yet)"
            : line.substring(0, Math.min(100, line.length()))));
      }
    }
  }
}
