package io.rankwire;

/** A metric's model type; the numbers are rank.v1.MetricType's. */
public enum MetricType {
  INT(1),
  FLOAT(2),
  DOUBLE(3),
  STRING(4);

  private final int number;

  MetricType(int number) {
    this.number = number;
  }

  /** rank.v1.MetricType's number. */
  public int number() {
    return number;
  }

  /** The type of rank.v1.MetricType number {@code n}, or null for any other number. */
  public static MetricType forNumber(int n) {
    switch (n) {
      case 1:
        return INT;
      case 2:
        return FLOAT;
      case 3:
        return DOUBLE;
      case 4:
        return STRING;
      default:
        return null;
    }
  }
}
