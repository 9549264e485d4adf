package io.rankwire;

/**
 * The server answered with a codec this client cannot read: upgrade the client, or send
 * accept_codecs with the codecs it has.
 */
public class UnknownCodecException extends RankwireException {
  private static final long serialVersionUID = 1L;
  private final String codec;

  public UnknownCodecException(String codec) {
    super("the server answered with codec \"" + codec + "\", which this client cannot read "
        + "(it reads protobuf, rankbin and rankbin-zstd)");
    this.codec = codec;
  }

  public String codec() {
    return codec;
  }
}
