package io.rankwire;

/**
 * Decoding would build more than a reader cap allows ({@link Limits}): a property of that
 * response, not of load, so retrying the same response does not help.
 */
public class LimitException extends RankwireException {
  private static final long serialVersionUID = 1L;

  public LimitException(String message) {
    super(message);
  }
}
