package io.rankwire;

/**
 * Reader caps (docs/FORMAT.md, "Validity"): what one payload can make a reader allocate.
 * {@code maxDecodedBytes} caps the total raw size of the zstd blocks a view locates (VALUES and
 * LOGS together); {@code maxMaterializedBytes} what a full decode builds. Past either a read
 * throws {@link LimitException}. Immutable.
 */
public final class Limits {
  public static final long DEFAULT_MAX_DECODED_BYTES = 256L << 20;
  public static final long DEFAULT_MAX_MATERIALIZED_BYTES = 256L << 20;
  public static final Limits DEFAULT =
      new Limits(DEFAULT_MAX_DECODED_BYTES, DEFAULT_MAX_MATERIALIZED_BYTES);

  private final long maxDecodedBytes;
  private final long maxMaterializedBytes;

  public Limits(long maxDecodedBytes, long maxMaterializedBytes) {
    this.maxDecodedBytes = maxDecodedBytes;
    this.maxMaterializedBytes = maxMaterializedBytes;
  }

  public long maxDecodedBytes() {
    return maxDecodedBytes;
  }

  public long maxMaterializedBytes() {
    return maxMaterializedBytes;
  }
}
