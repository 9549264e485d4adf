package io.rankwire;

/**
 * The base of every exception this library throws, so a caller can catch them all in one
 * place. Unchecked, as grpc-java's {@code StatusRuntimeException} is.
 *
 * <pre>
 * RankwireException
 * ├── FormatException                malformed bytes (C++: DATA_LOSS); carries the offset
 * │   ├── TruncatedException           a value, string, section or block passes its bound
 * │   ├── ChecksumException            a zstd block's content checksum does not match
 * │   └── UnsupportedVersionException  another major format version (C++: UNIMPLEMENTED)
 * ├── LimitException                 decoding would pass a reader cap (C++: RESOURCE_EXHAUSTED)
 * ├── UnknownCodecException          a codec this client cannot read (C++: FAILED_PRECONDITION)
 * └── RankwireRpcException           the call failed; getCode() is the gRPC status code
 * </pre>
 */
public class RankwireException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  public RankwireException(String message) {
    super(message);
  }

  public RankwireException(String message, Throwable cause) {
    super(message, cause);
  }
}
