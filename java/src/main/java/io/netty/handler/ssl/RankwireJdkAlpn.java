package io.netty.handler.ssl;

import io.netty.handler.codec.http2.Http2SecurityUtil;
import java.util.List;
import javax.net.ssl.SSLEngine;

/**
 * ALPN for gRPC over TLS with the JDK's own TLS (JDK 9 and later), for a netty that lacks
 * {@code JdkAlpnApplicationProtocolNegotiator}: Debian bookworm's libnetty-java 4.1.48 leaves
 * that class (and the Jetty ALPN classes it names) out, so netty's {@code SslContextBuilder}
 * with an ALPN config, and with it grpc-java's {@code GrpcSslContexts}, fail with
 * NoClassDefFoundError. The rest of netty's JDK ALPN support is in the jar: this class is the
 * missing negotiator, wrapping each engine in netty's {@code Java9SslEngine}, which offers the
 * protocols with {@code SSLParameters.setApplicationProtocols} and reports the one the server
 * chose ({@code SSLEngine.getApplicationProtocol}) to netty's {@code SslHandler}, as netty's
 * own negotiator does on JDK 9+.
 *
 * <p>It lives in netty's package because what it needs is package-private there
 * ({@code Java9SslEngine}, {@code JdkBaseApplicationProtocolNegotiator}, the
 * {@code JdkSslContext} constructor that takes a negotiator). That works on the class path (a
 * split package is refused only between named modules). Only {@link io.rankwire.RankwireClient}
 * calls it, and only when netty's own negotiator is missing.
 *
 * <p>Thread safety: stateless; the contexts it makes are netty's (thread-safe).
 */
public final class RankwireJdkAlpn {
  private RankwireJdkAlpn() {}

  /** True when this netty has its own JDK ALPN negotiator (then use netty's builders). */
  public static boolean nettyHasJdkAlpn() {
    try {
      Class.forName("io.netty.handler.ssl.JdkAlpnApplicationProtocolNegotiator", false,
          RankwireJdkAlpn.class.getClassLoader());
      return true;
    } catch (ClassNotFoundException | LinkageError e) {
      return false;
    }
  }

  /**
   * A client context with the key and trust material of {@code base} (built by
   * {@code SslContextBuilder.forClient().sslProvider(SslProvider.JDK)} without an ALPN config)
   * that offers {@code protocols} by ALPN and HTTP/2's cipher suites, as
   * {@code GrpcSslContexts.forClient()} configures them. The server's choice is checked by the
   * caller (grpc-java refuses a connection that did not negotiate "h2").
   */
  public static SslContext clientContext(SslContext base, List<String> protocols) {
    if (!(base instanceof JdkSslContext) || !base.isClient()) {
      throw new IllegalArgumentException("needs a client context of the JDK provider");
    }
    if (!Java9SslUtils.supportsAlpn()) {
      throw new UnsupportedOperationException("this JDK's SSLEngine has no ALPN (JDK 9+ has)");
    }
    return new JdkSslContext(((JdkSslContext) base).context(), true, Http2SecurityUtil.CIPHERS,
        SupportedCipherSuiteFilter.INSTANCE, new Negotiator(protocols), ClientAuth.NONE, null,
        false);
  }

  /**
   * The client side of netty's JdkAlpnApplicationProtocolNegotiator, on JDK 9+ only. Netty
   * marks its negotiator interfaces deprecated (internal to it); they are what JdkSslContext
   * takes.
   */
  @SuppressWarnings("deprecation")
  private static final class Negotiator extends JdkBaseApplicationProtocolNegotiator {
    Negotiator(List<String> protocols) {
      // Like grpc's config (SelectedListenerFailureBehavior.ACCEPT): the handshake completes
      // whatever the server chose and grpc-java refuses anything but h2 with a clear status.
      super(Negotiator::wrap, NO_FAIL_SELECTOR_FACTORY, NO_FAIL_SELECTION_LISTENER_FACTORY,
          protocols);
    }

    private static SSLEngine wrap(SSLEngine engine, JdkApplicationProtocolNegotiator negotiator,
        boolean isServer) {
      return new Java9SslEngine(engine, negotiator, isServer);
    }
  }
}
