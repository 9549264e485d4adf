package io.rankwire;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import com.google.gson.JsonObject;
import com.google.protobuf.ByteString;
import com.sun.management.ThreadMXBean;
import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.Test;

/**
 * Seeded, bounded fuzzing of the readers: mutated payloads (bits flipped, bytes set to edge
 * values, 32-bit fields set to huge sizes, cuts, insertions, deletions, spliced chunks) made from
 * the valid payloads rankwire_conformance_dump writes, every codec. Each mutant is opened, every
 * item read (hot fields, metrics through the cursor and as a map, by name, the log) and fully
 * decoded. Only the library's named exceptions may come out; opening never allocates more than
 * a small multiple of the payload (no allocation by a claimed length); a mutant never takes
 * long (no loops). rankwire.fuzz.iterations (default 100,000) and rankwire.fuzz.seed set the run.
 */
public class FuzzIT {
  // What a full decode or a zstd block may build, as the C++ fuzzer's caps.
  private static final Limits LIMITS = new Limits(64L << 20, 64L << 20);

  @Test
  public void mutatedPayloadsThrowOnlyNamedExceptions() throws Exception {
    final int iterations = Integer.getInteger("rankwire.fuzz.iterations", 100_000);
    final long seed = Long.getLong("rankwire.fuzz.seed", 20261207L);
    final List<ByteString> seeds = new ArrayList<>();
    final List<String> codecs = new ArrayList<>();
    final Dump dump = Dump.shared();
    for (JsonObject c : dump.cases) {
      if (c.get("outcome").getAsString().equals("ok") && !Dump.damaged(c)) {
        seeds.add(dump.payload(c));
        codecs.add(c.get("codec").getAsString());
      }
    }
    assertTrue(seeds.size() > 300);
    final ThreadMXBean threads = (ThreadMXBean) ManagementFactory.getThreadMXBean();
    final long thread = Thread.currentThread().getId();
    final SplittableRandom rng = new SplittableRandom(seed);
    final List<String> unnamed = new ArrayList<>();
    int named = 0;
    int decoded = 0;
    long slowestNs = 0;
    long worstOpenAlloc = 0;
    final long t0 = System.nanoTime();
    final long cpu0 = threads.getCurrentThreadCpuTime();
    for (int n = 0; n < iterations; n++) {
      final int s = rng.nextInt(seeds.size());
      final byte[] mutant = mutate(seeds.get(s).toByteArray(), rng, seeds);
      final ByteString payload = ByteString.copyFrom(mutant);
      final long start = System.nanoTime();
      final long alloc0 = threads.getThreadAllocatedBytes(thread);
      ResultView view = null;
      try {
        view = ResultView.open(codecs.get(s), payload, LIMITS);
      } catch (RankwireException e) {
        named++;
      } catch (RuntimeException | StackOverflowError | OutOfMemoryError e) {
        unnamed.add("iteration " + n + " (seed payload " + s + ", " + codecs.get(s) + "): open: "
            + e);
      }
      if (view != null && !codecs.get(s).equals("protobuf")) {
        // protobuf-java parses the whole message when opening; the rankbin reader must not
        // allocate by what the payload claims.
        long opened = threads.getThreadAllocatedBytes(thread) - alloc0;
        worstOpenAlloc = Math.max(worstOpenAlloc, opened - 16L * mutant.length);
      }
      if (view != null) {
        for (int i = 0; i < Math.min(view.size(), 64); i++) {
          String problem = ConformanceIT.checkItem(view, i, null);
          if (!problem.isEmpty()) {
            unnamed.add("iteration " + n + " item " + i + ": " + problem);
          }
        }
        try {
          view.materialize();
          decoded++;
        } catch (RankwireException e) {
          named++;
        } catch (RuntimeException | StackOverflowError | OutOfMemoryError e) {
          unnamed.add("iteration " + n + ": materialize: " + e);
        }
      }
      slowestNs = Math.max(slowestNs, System.nanoTime() - start);
      if (unnamed.size() > 20) {
        break;
      }
    }
    final double seconds = (System.nanoTime() - t0) / 1e9;
    final double cpu = (threads.getCurrentThreadCpuTime() - cpu0) / 1e9;
    System.out.printf("fuzz: %d mutated payloads from %d seeds (seed %d) in %.1f s (%.1f s of "
        + "CPU): "
        + "%d named exceptions, %d decoded in full, %d unnamed; slowest mutant %.1f ms; "
        + "opening allocated at most %d bytes beyond 16 per payload byte%n",
        iterations, seeds.size(), seed, seconds, cpu, named, decoded, unnamed.size(),
        slowestNs / 1e6, Math.max(0, worstOpenAlloc));
    assertEquals(List.of(), unnamed);
    assertTrue("slowest mutant " + slowestNs / 1e6 + " ms", slowestNs < 2_000_000_000L);
    // Opening allocates per key and section, never by a length the payload claims.
    assertTrue("open allocated " + worstOpenAlloc + " bytes", worstOpenAlloc < 64 << 10);
  }

  private static final int[] EDGE_BYTES = {0, 1, 0x7f, 0x80, 0xff, 0xfe, 0x20, 0x1b, 0x09};
  private static final long[] EDGE_U32 = {0, 1, 0x7fffffffL, 0x80000000L, 0xffffffffL,
      0x10000000L, 0xfffffff0L, 9, 16};

  static byte[] mutate(byte[] b, SplittableRandom rng, List<ByteString> others) {
    int steps = 1 + rng.nextInt(3);
    for (int k = 0; k < steps && b.length > 0; k++) {
      int at = rng.nextInt(b.length);
      switch (rng.nextInt(8)) {
        case 0:
        case 1:
          b[at] ^= (byte) (1 << rng.nextInt(8));
          break;
        case 2:
          b[at] = (byte) EDGE_BYTES[rng.nextInt(EDGE_BYTES.length)];
          break;
        case 3:
          if (at + 4 <= b.length) {
            long v = EDGE_U32[rng.nextInt(EDGE_U32.length)];
            for (int i = 0; i < 4; i++) {
              b[at + i] = (byte) (v >>> (8 * i));
            }
          }
          break;
        case 4:
          b = java.util.Arrays.copyOf(b, at);
          break;
        case 5: {
          int n = 1 + rng.nextInt(8);
          byte[] out = new byte[b.length + n];
          System.arraycopy(b, 0, out, 0, at);
          for (int i = 0; i < n; i++) {
            out[at + i] = (byte) rng.nextInt(256);
          }
          System.arraycopy(b, at, out, at + n, b.length - at);
          b = out;
          break;
        }
        case 6: {
          int n = Math.min(b.length - at, 1 + rng.nextInt(16));
          byte[] out = new byte[b.length - n];
          System.arraycopy(b, 0, out, 0, at);
          System.arraycopy(b, at + n, out, at, b.length - at - n);
          b = out;
          break;
        }
        default: {
          // A chunk of another valid payload spliced in (structure where it does not belong).
          byte[] o = others.get(rng.nextInt(others.size())).toByteArray();
          if (o.length == 0) {
            break;
          }
          int from = rng.nextInt(o.length);
          int n = Math.min(Math.min(o.length - from, b.length - at), 1 + rng.nextInt(32));
          System.arraycopy(o, from, b, at, n);
          break;
        }
      }
    }
    return b;
  }
}
