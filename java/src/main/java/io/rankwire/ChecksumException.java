package io.rankwire;

/** A zstd block's content checksum does not match its decoded bytes. */
public class ChecksumException extends FormatException {
  private static final long serialVersionUID = 1L;

  public ChecksumException(String message, long offset) {
    super(message, offset);
  }
}
