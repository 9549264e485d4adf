package io.rankwire;

/** The payload has a major format version this client does not read: upgrade the client. */
public class UnsupportedVersionException extends FormatException {
  private static final long serialVersionUID = 1L;

  public UnsupportedVersionException(String message, long offset) {
    super(message, offset);
  }
}
