package io.rankwire;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A real rankwire-server on a free loopback port (--port=0; its start-up line says which), the
 * shipped model, stopped by {@link #close()} (SIGTERM, then SIGKILL after 10 s). The binary and
 * model come from the system properties rankwire.server and rankwire.model (ctest sets them).
 */
final class TestServer implements AutoCloseable {
  private static final Pattern LISTENING = Pattern.compile("listening port=(\\d+)");
  final Process process;
  final int port;
  final List<String> output = new ArrayList<>();

  TestServer(String... flags) throws IOException {
    List<String> cmd = new ArrayList<>(List.of(required("rankwire.server"), "--port=0",
        "--metrics_port=-1", "--address=127.0.0.1", "--model=" + required("rankwire.model")));
    cmd.addAll(List.of(flags));
    process = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    BufferedReader out = new BufferedReader(
        new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
    int found = -1;
    String line;
    while (found < 0 && System.nanoTime() < deadline && (line = out.readLine()) != null) {
      output.add(line);
      Matcher m = LISTENING.matcher(line);
      if (m.find()) {
        found = Integer.parseInt(m.group(1));
      }
    }
    if (found < 0) {
      process.destroyForcibly();
      throw new IOException("rankwire-server did not start: " + output);
    }
    port = found;
    // Keep reading its output so it never blocks on a full pipe.
    Thread drain = new Thread(() -> {
      try {
        while (out.readLine() != null) {
          // discard
        }
      } catch (IOException e) {
        // the server is gone
      }
    }, "rankwire-server-output");
    drain.setDaemon(true);
    drain.start();
  }

  String target() {
    return "127.0.0.1:" + port;
  }

  static String required(String property) {
    String v = System.getProperty(property);
    if (v == null || v.isEmpty()) {
      throw new IllegalStateException("system property " + property + " is not set (ctest sets "
          + "it; see java/CMakeLists.txt)");
    }
    return v;
  }

  @Override
  public void close() throws InterruptedException {
    process.destroy();
    if (!process.waitFor(10, TimeUnit.SECONDS)) {
      process.destroyForcibly();
      process.waitFor();
    }
  }
}
