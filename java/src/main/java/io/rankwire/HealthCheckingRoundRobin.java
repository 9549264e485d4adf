package io.rankwire;

import com.google.protobuf.CodedInputStream;
import com.google.protobuf.CodedOutputStream;
import io.grpc.CallOptions;
import io.grpc.ClientCall;
import io.grpc.ConnectivityState;
import io.grpc.ConnectivityStateInfo;
import io.grpc.EquivalentAddressGroup;
import io.grpc.LoadBalancer;
import io.grpc.LoadBalancerProvider;
import io.grpc.LoadBalancerRegistry;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import io.grpc.SynchronizationContext;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * {@code round_robin} with client-side health checking, as the load balancing policy
 * {@value #POLICY}. grpc-java keeps its own client-side health checking in grpc-services, which
 * Debian does not package; this is the same behaviour in grpc-api's public LoadBalancer API:
 *
 * <ul>
 *   <li>one subchannel per resolved address, calls spread over the usable ones in turn;
 *   <li>with the service config's {@code healthCheckConfig.serviceName}, a subchannel is usable
 *       only while a {@code grpc.health.v1.Health/Watch} stream on it says SERVING (a replica
 *       that reports NOT_SERVING, as a draining rankwire-server does, gets no new calls); a
 *       server without the health service (UNIMPLEMENTED) counts as serving, as gRPC's spec
 *       says; a broken stream is re-opened after a backoff (1 s, doubling to 30 s);
 *   <li>no usable subchannel and none connecting: calls fail with UNAVAILABLE (which the retry
 *       policy retries), never wait.
 * </ul>
 *
 * Everything runs in the channel's synchronization context.
 */
final class HealthCheckingRoundRobin extends LoadBalancer {
  static final String POLICY = "rankwire_round_robin";

  /** Registers the policy in grpc's default registry once (it is looked up by name). */
  static synchronized void register() {
    LoadBalancerRegistry registry = LoadBalancerRegistry.getDefaultRegistry();
    if (registry.getProvider(POLICY) == null) {
      registry.register(new Provider());
    }
  }

  static final class Provider extends LoadBalancerProvider {
    @Override
    public boolean isAvailable() {
      return true;
    }

    @Override
    public int getPriority() {
      return 5;
    }

    @Override
    public String getPolicyName() {
      return POLICY;
    }

    @Override
    public LoadBalancer newLoadBalancer(Helper helper) {
      return new HealthCheckingRoundRobin(helper);
    }
  }

  private static final MethodDescriptor<String, Integer> WATCH =
      MethodDescriptor.<String, Integer>newBuilder()
          .setType(MethodDescriptor.MethodType.SERVER_STREAMING)
          .setFullMethodName("grpc.health.v1.Health/Watch")
          .setRequestMarshaller(new HealthRequestMarshaller())
          .setResponseMarshaller(new HealthResponseMarshaller())
          .build();
  private static final int SERVING = 1;

  private final Helper helper;
  private final SynchronizationContext sync;
  private final Map<EquivalentAddressGroup, Replica> replicas = new LinkedHashMap<>();
  private final AtomicInteger next = new AtomicInteger();
  private String serviceName;
  private Status lastError = Status.UNAVAILABLE.withDescription("no replica yet");

  HealthCheckingRoundRobin(Helper helper) {
    this.helper = helper;
    this.sync = helper.getSynchronizationContext();
  }

  @Override
  public void handleResolvedAddresses(ResolvedAddresses resolved) {
    Map<String, ?> health = resolved.getAttributes().get(ATTR_HEALTH_CHECKING_CONFIG);
    Object name = health == null ? null : health.get("serviceName");
    String service = name instanceof String ? (String) name : null;
    boolean serviceChanged = service == null ? serviceName != null : !service.equals(serviceName);
    serviceName = service;
    Map<EquivalentAddressGroup, EquivalentAddressGroup> wanted = new LinkedHashMap<>();
    for (EquivalentAddressGroup eag : resolved.getAddresses()) {
      // Attributes (from the resolver) do not make another replica.
      EquivalentAddressGroup key = new EquivalentAddressGroup(eag.getAddresses());
      wanted.put(key, eag);
    }
    List<EquivalentAddressGroup> gone = new ArrayList<>();
    for (EquivalentAddressGroup key : replicas.keySet()) {
      if (!wanted.containsKey(key)) {
        gone.add(key);
      }
    }
    for (EquivalentAddressGroup key : gone) {
      replicas.remove(key).shutdown();
    }
    for (Map.Entry<EquivalentAddressGroup, EquivalentAddressGroup> e : wanted.entrySet()) {
      Replica r = replicas.get(e.getKey());
      if (r == null) {
        Subchannel sub = helper.createSubchannel(
            CreateSubchannelArgs.newBuilder().setAddresses(e.getValue()).build());
        r = new Replica(sub);
        replicas.put(e.getKey(), r);
        sub.start(r);
        sub.requestConnection();
      } else {
        r.subchannel.updateAddresses(List.of(e.getValue()));
        if (serviceChanged) {
          r.restartWatch();
        }
      }
    }
    updatePicker();
  }

  @Override
  public void handleNameResolutionError(Status error) {
    lastError = error;
    if (replicas.isEmpty()) {
      helper.updateBalancingState(ConnectivityState.TRANSIENT_FAILURE, new ErrorPicker(error));
    }
  }

  @Override
  public void shutdown() {
    for (Replica r : replicas.values()) {
      r.shutdown();
    }
    replicas.clear();
  }

  private void updatePicker() {
    List<Subchannel> usable = new ArrayList<>();
    boolean connecting = false;
    for (Replica r : replicas.values()) {
      if (r.state == ConnectivityState.READY && r.serving) {
        usable.add(r.subchannel);
      } else if (r.state == ConnectivityState.CONNECTING || r.state == ConnectivityState.IDLE
          || (r.state == ConnectivityState.READY && r.healthUnknown)) {
        connecting = true;
      }
    }
    if (!usable.isEmpty()) {
      helper.updateBalancingState(ConnectivityState.READY, new RoundRobinPicker(usable, next));
    } else if (connecting) {
      helper.updateBalancingState(ConnectivityState.CONNECTING,
          new SubchannelPicker() {
            @Override
            public PickResult pickSubchannel(PickSubchannelArgs args) {
              return PickResult.withNoResult();
            }
          });
    } else {
      helper.updateBalancingState(ConnectivityState.TRANSIENT_FAILURE, new ErrorPicker(
          Status.UNAVAILABLE.withDescription("no serving replica: " + lastError)));
    }
  }

  private static final class RoundRobinPicker extends SubchannelPicker {
    private final List<Subchannel> list;
    private final AtomicInteger next;

    RoundRobinPicker(List<Subchannel> list, AtomicInteger next) {
      this.list = list;
      this.next = next;
    }

    @Override
    public PickResult pickSubchannel(PickSubchannelArgs args) {
      int i = Math.floorMod(next.getAndIncrement(), list.size());
      return PickResult.withSubchannel(list.get(i));
    }
  }

  private static final class ErrorPicker extends SubchannelPicker {
    private final Status error;

    ErrorPicker(Status error) {
      this.error = error;
    }

    @Override
    public PickResult pickSubchannel(PickSubchannelArgs args) {
      return PickResult.withError(error);
    }
  }

  /** A subchannel, its connectivity and, while it is READY, its health stream. */
  private final class Replica implements SubchannelStateListener {
    final Subchannel subchannel;
    ConnectivityState state = ConnectivityState.IDLE;
    boolean serving;
    boolean healthUnknown;
    ClientCall<String, Integer> watch;
    SynchronizationContext.ScheduledHandle retry;
    long backoffMs = 1000;
    boolean shutdown;

    Replica(Subchannel subchannel) {
      this.subchannel = subchannel;
    }

    @Override
    public void onSubchannelState(ConnectivityStateInfo info) {
      if (shutdown) {
        return;
      }
      state = info.getState();
      if (state == ConnectivityState.TRANSIENT_FAILURE) {
        lastError = info.getStatus();
      }
      if (state == ConnectivityState.IDLE) {
        subchannel.requestConnection();
      }
      if (state == ConnectivityState.READY) {
        restartWatch();
      } else {
        stopWatch();
        serving = false;
      }
      if (state == ConnectivityState.TRANSIENT_FAILURE || state == ConnectivityState.IDLE) {
        helper.refreshNameResolution();
      }
      updatePicker();
    }

    void restartWatch() {
      stopWatch();
      if (state != ConnectivityState.READY) {
        return;
      }
      if (serviceName == null) {
        serving = true;
        healthUnknown = false;
        return;
      }
      serving = false;
      healthUnknown = true;
      final ClientCall<String, Integer> call =
          subchannel.asChannel().newCall(WATCH, CallOptions.DEFAULT);
      watch = call;
      call.start(new ClientCall.Listener<Integer>() {
        @Override
        public void onMessage(Integer status) {
          sync.execute(() -> {
            if (watch != call) {
              return;
            }
            serving = status == SERVING;
            healthUnknown = false;
            backoffMs = 1000;
            updatePicker();
          });
          call.request(1);
        }

        @Override
        public void onClose(Status status, Metadata trailers) {
          sync.execute(() -> {
            if (watch != call) {
              return;
            }
            watch = null;
            healthUnknown = false;
            if (status.getCode() == Status.Code.UNIMPLEMENTED) {
              serving = true; // No health service: health checking is off (gRPC's spec).
            } else {
              serving = false;
              lastError = Status.UNAVAILABLE.withDescription(
                  "health check of " + serviceName + " failed: " + status);
              if (!shutdown && state == ConnectivityState.READY) {
                retry = sync.schedule(Replica.this::restartWatch, backoffMs,
                    TimeUnit.MILLISECONDS, helper.getScheduledExecutorService());
                backoffMs = Math.min(30_000, 2 * backoffMs);
              }
            }
            updatePicker();
          });
        }
      }, new Metadata());
      call.sendMessage(serviceName);
      call.halfClose();
      call.request(1);
    }

    void stopWatch() {
      if (retry != null) {
        retry.cancel();
        retry = null;
      }
      if (watch != null) {
        ClientCall<String, Integer> call = watch;
        watch = null;
        call.cancel("health check stopped", null);
      }
    }

    void shutdown() {
      shutdown = true;
      stopWatch();
      subchannel.shutdown();
    }
  }

  /** grpc.health.v1.HealthCheckRequest {string service = 1;}. */
  private static final class HealthRequestMarshaller implements MethodDescriptor.Marshaller<String> {
    @Override
    public InputStream stream(String service) {
      byte[] name = service.getBytes(java.nio.charset.StandardCharsets.UTF_8);
      byte[] out = new byte[1 + CodedOutputStream.computeUInt32SizeNoTag(name.length)
          + name.length];
      CodedOutputStream o = CodedOutputStream.newInstance(out);
      try {
        o.writeByteArray(1, name);
        o.flush();
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
      return new ByteArrayInputStream(out);
    }

    @Override
    public String parse(InputStream stream) {
      throw new UnsupportedOperationException();
    }
  }

  /** grpc.health.v1.HealthCheckResponse {ServingStatus status = 1;}: the status number. */
  private static final class HealthResponseMarshaller
      implements MethodDescriptor.Marshaller<Integer> {
    @Override
    public InputStream stream(Integer status) {
      throw new UnsupportedOperationException();
    }

    @Override
    public Integer parse(InputStream stream) {
      try {
        CodedInputStream in = CodedInputStream.newInstance(stream);
        int status = 0;
        for (int tag = in.readTag(); tag != 0; tag = in.readTag()) {
          if (tag == (1 << 3)) {
            status = in.readEnum();
          } else if (!in.skipField(tag)) {
            break;
          }
        }
        return status;
      } catch (IOException e) {
        throw Status.INTERNAL.withDescription("bad HealthCheckResponse").withCause(e)
            .asRuntimeException();
      }
    }
  }
}
