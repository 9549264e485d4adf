package io.rankwire;

/** A value, string, list, section or block would pass the end of its bound. */
public class TruncatedException extends FormatException {
  private static final long serialVersionUID = 1L;

  public TruncatedException(String message, long offset) {
    super(message, offset);
  }
}
