package io.rankwire;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import com.google.protobuf.ByteString;
import java.io.IOException;
import java.io.Reader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * The payloads rankwire_conformance_dump writes (tests/interop/conformance_dump.cc), each with
 * the C++ reader's full decode: seeded random results through every codec variant, every
 * truncation and two corruptions of every byte of small rankbin payloads, and (--corpus) the
 * codec fuzzer's corpus. Written to a temporary directory, removed by {@link #close()}.
 */
final class Dump implements AutoCloseable {
  final Path dir;
  final List<JsonObject> cases = new ArrayList<>();
  private final Map<String, byte[]> files = new HashMap<>();

  private static Dump shared;

  /**
   * The dump with the codec fuzz corpus (system property rankwire.fuzz.corpus), written once per
   * JVM for the tests that read it (the conformance test, and the fuzz test's seeds) and
   * removed when the JVM exits.
   */
  static synchronized Dump shared() throws IOException, InterruptedException {
    if (shared == null) {
      Dump d = new Dump("--corpus", TestServer.required("rankwire.fuzz.corpus"));
      Runtime.getRuntime().addShutdownHook(new Thread(() -> {
        try {
          d.close();
        } catch (IOException e) {
          // a temporary directory left behind
        }
      }));
      shared = d;
    }
    return shared;
  }

  Dump(String... extraArgs) throws IOException, InterruptedException {
    dir = Files.createTempDirectory("rankwire-java-conformance-");
    List<String> cmd = new ArrayList<>(List.of(TestServer.required("rankwire.conformance.dump"),
        dir.toString()));
    cmd.addAll(List.of(extraArgs));
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true)
        .redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
    if (!p.waitFor(120, TimeUnit.SECONDS) || p.exitValue() != 0) {
      p.destroyForcibly();
      throw new IOException("rankwire_conformance_dump failed: " + cmd);
    }
    try (Reader r = Files.newBufferedReader(dir.resolve("cases.json"), StandardCharsets.UTF_8)) {
      for (JsonElement e : JsonParser.parseReader(r).getAsJsonObject().getAsJsonArray("cases")) {
        cases.add(e.getAsJsonObject());
      }
    }
  }

  /** The case's bytes: its payload file, truncated or with one byte flipped as it says. */
  ByteString payload(JsonObject c) throws IOException {
    String name = c.get("payload").getAsString();
    byte[] data = files.get(name);
    if (data == null) {
      data = Files.readAllBytes(dir.resolve(name));
      files.put(name, data);
    }
    if (c.has("truncate")) {
      return ByteString.copyFrom(data, 0, c.get("truncate").getAsInt());
    }
    if (c.has("flip")) {
      JsonArray flip = c.getAsJsonArray("flip");
      byte[] damaged = data.clone();
      damaged[flip.get(0).getAsInt()] ^= (byte) flip.get(1).getAsInt();
      return ByteString.copyFrom(damaged);
    }
    return ByteString.copyFrom(data);
  }

  static boolean damaged(JsonObject c) {
    return c.has("truncate") || c.has("flip");
  }

  @Override
  public void close() throws IOException {
    try (var paths = Files.walk(dir)) {
      paths.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    }
  }
}
