package io.rankwire;

import io.grpc.Status;
import io.grpc.StatusRuntimeException;

/**
 * A Rank or FetchLogs call failed. {@link #getCode()} says how; docs/CLIENTS.md ("Errors and
 * what to do with each") says what to do: {@link #isRetryableAfterBackoff()} is true only for
 * RESOURCE_EXHAUSTED (back off first), UNAVAILABLE was already retried by the channel.
 * The grpc-java exception is the cause.
 */
public class RankwireRpcException extends RankwireException {
  private static final long serialVersionUID = 1L;
  private final String method;
  private final Status.Code code;
  private final String details;

  public RankwireRpcException(String method, StatusRuntimeException cause) {
    super(method + ": " + cause.getStatus().getCode() + ": "
        + (cause.getStatus().getDescription() == null ? "" : cause.getStatus().getDescription()),
        cause);
    this.method = method;
    this.code = cause.getStatus().getCode();
    this.details = cause.getStatus().getDescription() == null
        ? "" : cause.getStatus().getDescription();
  }

  /** "Rank" or "FetchLogs". */
  public String method() {
    return method;
  }

  public Status.Code getCode() {
    return code;
  }

  public String details() {
    return details;
  }

  /**
   * RESOURCE_EXHAUSTED: the replica sheds load; retry only after a pause (tens of ms, growing),
   * never at once. Every other code: do not retry (UNAVAILABLE was retried by the channel).
   */
  public boolean isRetryableAfterBackoff() {
    return code == Status.Code.RESOURCE_EXHAUSTED;
  }
}
