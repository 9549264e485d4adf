package io.rankwire;

/**
 * The bytes are not what docs/FORMAT.md (or rank.proto) allows. Thrown by the read that meets
 * the damage (opening a payload, or reading an item, metric or log of it); never a wrong value.
 * {@link #offset()} is where in the payload (or in a decoded zstd block, when the message says
 * so) the reader found the problem, or -1 when it is not about one place.
 */
public class FormatException extends RankwireException {
  private static final long serialVersionUID = 1L;
  private final long offset;

  public FormatException(String message, long offset) {
    super(offset >= 0 ? message + " at offset " + offset : message);
    this.offset = offset;
  }

  public FormatException(String message, long offset, Throwable cause) {
    super(offset >= 0 ? message + " at offset " + offset : message, cause);
    this.offset = offset;
  }

  /** Where the problem is, in bytes from the start of the payload (or block); -1: nowhere. */
  public long offset() {
    return offset;
  }
}
