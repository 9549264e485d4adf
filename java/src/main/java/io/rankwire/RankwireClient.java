package io.rankwire;

import com.google.protobuf.ByteString;
import com.google.protobuf.CodedOutputStream;
import com.google.protobuf.UnsafeByteOperations;
import io.grpc.CallOptions;
import io.grpc.ManagedChannel;
import io.grpc.MethodDescriptor;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.GrpcSslContexts;
import io.grpc.netty.NettyChannelBuilder;
import io.grpc.stub.ClientCalls;
import io.netty.handler.ssl.RankwireJdkAlpn;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslContextBuilder;
import io.netty.handler.ssl.SslProvider;
import java.io.ByteArrayInputStream;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.SSLException;
import rank.v1.LogServiceGrpc;
import rank.v1.Rank.FetchLogsRequest;
import rank.v1.Rank.FetchLogsResponse;
import rank.v1.Rank.ItemLogEntry;
import rank.v1.Rank.RankRequest;

/**
 * A channel to a rankwire fleet and the two calls a caller makes: {@link #rank} and
 * {@link #fetchLogs}. The client owns its channel (close it, or use try-with-resources).
 *
 * <pre>{@code
 * try (RankwireClient client =
 *     RankwireClient.newBuilder("dns:///rankwire.default.svc.cluster.local:50051").build()) {
 *   RankReply reply = client.rank(request, Duration.ofMillis(250));
 *   for (Item item : reply.top(10)) {
 *     double ctr = item.doubleMetric("score.ctr");      // decoded now, not before
 *   }
 *   Map<String, String> logs = client.fetchLogs(request.getRequestId(), ids,
 *       Duration.ofMillis(100));
 * }
 * }</pre>
 *
 * <p>The default channel is what docs/CLIENTS.md advises against a fleet, as the C++ and Python
 * clients build it: round_robin over every address the target resolves to, client-side health
 * checking of rank.v1.RankService ({@link HealthCheckingRoundRobin}: grpc-java's own lives in
 * grpc-services, which Debian does not package), a retry policy for UNAVAILABLE only on both
 * methods (4 attempts, 5 ms doubling to 100 ms), the channel's own service config (none from
 * DNS), a 4 MiB retry buffer and a 64 MiB receive limit. Rank's response is received as bytes
 * and opened lazily ({@link RankReply}): nothing is decoded beyond its header until read.
 *
 * <p>Errors: a failed call throws {@link RankwireRpcException} (its code says what to do;
 * docs/CLIENTS.md "Errors"); a malformed response {@link FormatException}; a codec this client
 * cannot read {@link UnknownCodecException}.
 *
 * <p>Thread safety: a client may be shared by threads (grpc-java channels are), and should be:
 * one per process and fleet.
 */
public final class RankwireClient implements AutoCloseable {
  /** The service config docs/CLIENTS.md recommends, with this client's balancer's name. */
  public static final Map<String, ?> DEFAULT_SERVICE_CONFIG =
      serviceConfig(HealthCheckingRoundRobin.POLICY, 4, "rank.v1.RankService");

  private static final MethodDescriptor<RankCall, ByteString> RANK =
      MethodDescriptor.<RankCall, ByteString>newBuilder()
          .setType(MethodDescriptor.MethodType.UNARY)
          .setFullMethodName("rank.v1.RankService/Rank")
          .setIdempotent(true)
          .setRequestMarshaller(new RankCallMarshaller())
          .setResponseMarshaller(new BytesMarshaller())
          .build();
  // RankRequest.accept_codecs: field 10, length-delimited.
  private static final int ACCEPT_CODECS_TAG = (10 << 3) | 2;

  private final ManagedChannel channel;
  private final Limits limits;
  private final LogServiceGrpc.LogServiceBlockingStub logs;

  private RankwireClient(ManagedChannel channel, Limits limits) {
    this.channel = channel;
    this.limits = limits;
    this.logs = LogServiceGrpc.newBlockingStub(channel);
  }

  /**
   * A service config (as grpc-java takes it: a map of JSON values, numbers as Double):
   * {@code lbPolicy} ({@value HealthCheckingRoundRobin#POLICY}, "round_robin" or "pick_first";
   * only the first does health checking, grpc-java's round_robin ignores it without
   * grpc-services), {@code maxAttempts} (1 turns retries off; gRPC allows at most 5), and the
   * health service checked ({@code null}: none). Only UNAVAILABLE is retried: RESOURCE_EXHAUSTED
   * is a replica shedding load, and retrying it at once would add the load it sheds.
   */
  public static Map<String, ?> serviceConfig(String lbPolicy, int maxAttempts,
      String healthService) {
    if (maxAttempts < 1 || maxAttempts > 5) {
      throw new IllegalArgumentException(
          "max attempts " + maxAttempts + ": expected 1 to 5 (gRPC's limit)");
    }
    Map<String, Object> config = new LinkedHashMap<>();
    config.put("loadBalancingConfig", List.of(Map.of(lbPolicy, Map.of())));
    if (maxAttempts > 1) {
      Map<String, Object> retry = new LinkedHashMap<>();
      retry.put("maxAttempts", (double) maxAttempts);
      retry.put("initialBackoff", "0.005s");
      retry.put("maxBackoff", "0.1s");
      retry.put("backoffMultiplier", 2.0);
      retry.put("retryableStatusCodes", List.of("UNAVAILABLE"));
      config.put("methodConfig", List.of(Map.of(
          "name", List.of(Map.of("service", "rank.v1.RankService", "method", "Rank"),
              Map.of("service", "rank.v1.LogService", "method", "FetchLogs")),
          "retryPolicy", retry)));
    }
    if (healthService != null && !healthService.isEmpty()) {
      config.put("healthCheckConfig", Map.of("serviceName", healthService));
    }
    return Collections.unmodifiableMap(config);
  }

  /**
   * A builder for a client of {@code target}: "host:port", "dns:///name:port" (every address is
   * a replica) or "ipv4:///a:p" / "static" lists your resolver knows.
   */
  public static Builder newBuilder(String target) {
    return new Builder(target);
  }

  /** Options of the channel; the defaults are docs/CLIENTS.md's. Not thread-safe. */
  public static final class Builder {
    private final String target;
    private Map<String, ?> serviceConfig = DEFAULT_SERVICE_CONFIG;
    private int maxMessageBytes = 64 << 20;
    private long retryBufferBytes = 4 << 20;
    private Limits limits = Limits.DEFAULT;
    private File trustedCa;
    private File certChain;
    private File privateKey;
    private String sslTargetName;

    private Builder(String target) {
      this.target = target;
    }

    /** Another service config ({@link #serviceConfig(String, int, String)}); null: gRPC's. */
    public Builder serviceConfig(Map<String, ?> config) {
      this.serviceConfig = config;
      return this;
    }

    /** The largest response accepted (64 MiB; the server caps its own at --max_message_bytes). */
    public Builder maxMessageBytes(int bytes) {
      this.maxMessageBytes = bytes;
      return this;
    }

    /** The per-call retry buffer (4 MiB: above a 1000-candidate request). */
    public Builder retryBufferBytes(long bytes) {
      this.retryBufferBytes = bytes;
      return this;
    }

    /** Caps on what one response may make the reader build. */
    public Builder limits(Limits limits) {
      this.limits = limits;
      return this;
    }

    /** TLS, trusting the CA certificates in {@code caPem} (PEM). */
    public Builder tls(File caPem) {
      this.trustedCa = caPem;
      return this;
    }

    /** Mutual TLS: also present {@code certChainPem} with its PKCS#8 {@code privateKeyPem}. */
    public Builder mutualTls(File caPem, File certChainPem, File privateKeyPem) {
      this.trustedCa = caPem;
      this.certChain = certChainPem;
      this.privateKey = privateKeyPem;
      return this;
    }

    /** The name checked against the server's certificate instead of the target's host. */
    public Builder sslTargetName(String name) {
      this.sslTargetName = name;
      return this;
    }

    public RankwireClient build() {
      HealthCheckingRoundRobin.register();
      NettyChannelBuilder b = NettyChannelBuilder.forTarget(target)
          .maxInboundMessageSize(maxMessageBytes)
          .enableRetry()
          .perRpcBufferLimit(retryBufferBytes)
          .retryBufferSize(Math.max(16L << 20, 4 * retryBufferBytes));
      if (serviceConfig != null) {
        b.defaultServiceConfig(serviceConfig).disableServiceConfigLookUp();
      }
      if (trustedCa == null) {
        if (certChain != null) {
          throw new IllegalArgumentException("a client certificate needs the CA (mutualTls)");
        }
        b.usePlaintext();
      } else {
        b.sslContext(sslContext());
        if (sslTargetName != null) {
          b.overrideAuthority(sslTargetName);
        }
      }
      return new RankwireClient(b.build(), limits);
    }

    /**
     * The client's TLS context: grpc-java's (HTTP/2 ciphers, ALPN offering h2) over the JDK's
     * TLS. Where netty lacks its JDK ALPN negotiator (Debian bookworm's libnetty-java), the
     * same context is made with {@link RankwireJdkAlpn}, this library's copy of that negotiator.
     */
    private SslContext sslContext() {
      try {
        if (RankwireJdkAlpn.nettyHasJdkAlpn()) {
          return keys(GrpcSslContexts.forClient()).build();
        }
        SslContext base = keys(SslContextBuilder.forClient().sslProvider(SslProvider.JDK)).build();
        return RankwireJdkAlpn.clientContext(base, List.of("h2"));
      } catch (SSLException | IllegalArgumentException e) {
        throw new IllegalArgumentException("TLS: " + e.getMessage(), e);
      }
    }

    private SslContextBuilder keys(SslContextBuilder ssl) {
      ssl.trustManager(trustedCa);
      if (certChain != null) {
        ssl.keyManager(certChain, privateKey);
      }
      return ssl;
    }
  }

  /**
   * Connects now and waits until the channel can take calls (a serving replica), at most
   * {@code timeout}: call it at start-up, so the first Rank's deadline is not spent on
   * connecting. False when the channel is not ready by then (calls will still try).
   */
  public boolean awaitReady(Duration timeout) throws InterruptedException {
    long end = System.nanoTime() + timeout.toNanos();
    while (true) {
      io.grpc.ConnectivityState state = channel.getState(true);
      if (state == io.grpc.ConnectivityState.READY) {
        return true;
      }
      long left = end - System.nanoTime();
      if (left <= 0) {
        return false;
      }
      java.util.concurrent.CountDownLatch changed = new java.util.concurrent.CountDownLatch(1);
      channel.notifyWhenStateChanged(state, changed::countDown);
      changed.await(left, TimeUnit.NANOSECONDS);
    }
  }

  /** The underlying channel (for other services, or to watch its state). */
  public ManagedChannel channel() {
    return channel;
  }

  /**
   * Ranks {@code request} within {@code deadline} (which covers the channel's own retries of
   * UNAVAILABLE), with the request's own accept_codecs: leave them empty to let the server's
   * default (--codec) decide, which is how an operator switches a fleet's codec.
   */
  public RankReply rank(RankRequest request, Duration deadline) {
    return rank(request, deadline, null);
  }

  /**
   * As {@link #rank(RankRequest, Duration)}, asking for {@code acceptCodecs} (most preferred
   * first) in place of the request's accept_codecs, without modifying or copying the request.
   * Every codec the server has is readable here.
   */
  public RankReply rank(RankRequest request, Duration deadline, List<String> acceptCodecs) {
    return RankReply.open(rankBytes(request, deadline, acceptCodecs), limits);
  }

  /** The serialized RankResponse of a Rank call (the benchmark keeps the bytes). */
  ByteString rankBytes(RankRequest request, Duration deadline, List<String> acceptCodecs) {
    try {
      return ClientCalls.blockingUnaryCall(channel, RANK,
          CallOptions.DEFAULT.withDeadlineAfter(deadline.toNanos(), TimeUnit.NANOSECONDS),
          new RankCall(request, acceptCodecs));
    } catch (StatusRuntimeException e) {
      throw new RankwireRpcException("Rank", e);
    }
  }

  /**
   * The logs of {@code itemIds} (at most 1000, none repeated) of the request
   * {@code requestId}, in one call: item id to its log line, in request order, null for an item
   * the store has no log of (not written yet, expired after the TTL, or dropped under load).
   * Fetch soon after Rank, and only what you show.
   */
  public Map<String, String> fetchLogs(String requestId, List<String> itemIds, Duration deadline) {
    FetchLogsResponse response;
    try {
      response = logs.withDeadlineAfter(deadline.toNanos(), TimeUnit.NANOSECONDS)
          .fetchLogs(FetchLogsRequest.newBuilder().setRequestId(requestId)
              .addAllItemIds(itemIds).build());
    } catch (StatusRuntimeException e) {
      throw new RankwireRpcException("FetchLogs", e);
    }
    Map<String, String> out = new LinkedHashMap<>();
    for (String id : itemIds) {
      out.put(id, null);
    }
    for (ItemLogEntry entry : response.getLogsList()) {
      if (entry.getFound()) {
        out.put(entry.getItemId(), entry.getLog());
      }
    }
    return out;
  }

  /** Shuts the channel down, waiting up to 5 s for calls in flight. */
  @Override
  public void close() {
    channel.shutdown();
    try {
      if (!channel.awaitTermination(5, TimeUnit.SECONDS)) {
        channel.shutdownNow();
      }
    } catch (InterruptedException e) {
      channel.shutdownNow();
      Thread.currentThread().interrupt();
    }
  }

  /** A request and the accept_codecs to send in place of its own (null: its own). */
  private static final class RankCall {
    final RankRequest request;
    final List<String> acceptCodecs;

    RankCall(RankRequest request, List<String> acceptCodecs) {
      this.request = request;
      this.acceptCodecs = acceptCodecs;
    }
  }

  private static final class RankCallMarshaller implements MethodDescriptor.Marshaller<RankCall> {
    @Override
    public InputStream stream(RankCall call) {
      RankRequest request = call.request;
      if (call.acceptCodecs == null) {
        return new ByteArrayInputStream(request.toByteArray());
      }
      if (request.getAcceptCodecsCount() > 0) {
        request = request.toBuilder().clearAcceptCodecs().build();
      }
      // The codecs appended as field 10 entries: a repeated field's entries may come anywhere.
      List<byte[]> names = new ArrayList<>(call.acceptCodecs.size());
      int extra = 0;
      for (String name : call.acceptCodecs) {
        byte[] b = name.getBytes(StandardCharsets.UTF_8);
        names.add(b);
        extra += 1 + CodedOutputStream.computeUInt32SizeNoTag(b.length) + b.length;
      }
      int size = request.getSerializedSize();
      byte[] out = new byte[size + extra];
      try {
        CodedOutputStream o = CodedOutputStream.newInstance(out);
        request.writeTo(o);
        for (byte[] b : names) {
          o.writeUInt32NoTag(ACCEPT_CODECS_TAG);
          o.writeByteArrayNoTag(b);
        }
        o.checkNoSpaceLeft();
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
      return new ByteArrayInputStream(out);
    }

    @Override
    public RankCall parse(InputStream stream) {
      throw new UnsupportedOperationException();
    }
  }

  /** The response as bytes: read once from gRPC's buffers, then opened in place. */
  private static final class BytesMarshaller implements MethodDescriptor.Marshaller<ByteString> {
    @Override
    public InputStream stream(ByteString value) {
      return value.newInput();
    }

    @Override
    public ByteString parse(InputStream stream) {
      try {
        return UnsafeByteOperations.unsafeWrap(stream.readAllBytes());
      } catch (IOException e) {
        throw io.grpc.Status.INTERNAL.withDescription("reading the response").withCause(e)
            .asRuntimeException();
      }
    }
  }
}
