package io.rankwire;

import com.google.protobuf.ByteString;
import com.google.protobuf.InvalidProtocolBufferException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import rank.v1.Rank.RankResult;
import rank.v1.Rank.RankedItem;

/**
 * The reader of the {@code protobuf} codec: the baseline rank.v1.RankResult. It cannot be lazy
 * about the message: opening parses all of it with protobuf-java (the cost the rankbin codecs
 * remove). Metric text becomes a typed value only when read, with the C++ reader's rules
 * (std::from_chars): an INT is {@code -?[0-9]+} within int64; a FLOAT or DOUBLE is decimal
 * (optional '-', digits with an optional point, optional exponent), {@code inf},
 * {@code infinity} or {@code nan}, and a number the type cannot hold (overflow, or non-zero
 * digits that round to zero) is an error, never infinity or 0. A FLOAT is rounded once, from the
 * decimal text to binary32.
 *
 * <p>Thread safety: read-only after opening; may be read from several threads.
 */
public final class ProtobufView extends ResultView {
  private static final Pattern INT_TEXT = Pattern.compile("-?[0-9]+");
  private static final Pattern FLOAT_TEXT = Pattern.compile(
      "(-?)(?:(inf(?:inity)?)|(nan(?:\\([0-9A-Za-z_]*\\))?)|"
          + "((?:[0-9]+\\.?[0-9]*|\\.[0-9]+)(?:[eE][+-]?[0-9]+)?))",
      Pattern.CASE_INSENSITIVE);

  private final RankResult message;
  private final Map<String, MetricType> types;
  private final Map<String, Integer> keyIndex;

  private ProtobufView(RankResult message) {
    this.message = message;
    // Map order is unspecified; by name (UTF-8 bytes), as the C++ reader sorts them.
    TreeMap<ByteString, String> sorted = new TreeMap<>(ByteString.unsignedLexicographicalComparator());
    for (String name : message.getMetricTypesValueMap().keySet()) {
      sorted.put(ByteString.copyFromUtf8(name), name);
    }
    LinkedHashMap<String, MetricType> t = new LinkedHashMap<>();
    LinkedHashMap<String, Integer> index = new LinkedHashMap<>();
    for (String name : sorted.values()) {
      int number = message.getMetricTypesValueMap().get(name);
      MetricType type = MetricType.forNumber(number);
      if (type == null) {
        throw new FormatException("protobuf: metric_types[\"" + name + "\"] = " + number
            + " is not a known metric type", -1);
      }
      index.put(name, t.size());
      t.put(name, type);
    }
    types = Collections.unmodifiableMap(t);
    keyIndex = index;
  }

  /** Parses a serialized rank.v1.RankResult; FormatException when it does not parse. */
  public static ProtobufView open(ByteString body) {
    try {
      return new ProtobufView(RankResult.parseFrom(body));
    } catch (InvalidProtocolBufferException e) {
      throw new FormatException("protobuf: " + body.size()
          + " bytes do not parse as rank.v1.RankResult (" + e.getMessage() + ")", -1, e);
    }
  }

  /** The parsed message. */
  public RankResult message() {
    return message;
  }

  @Override
  public int size() {
    return message.getItemsCount();
  }

  @Override
  public Item item(int i) {
    if (i < 0 || i >= size()) {
      throw new IndexOutOfBoundsException("item " + i + " out of range (" + size() + " items)");
    }
    return new Item(this, i, 0);
  }

  private RankedItem message(Item item) {
    return message.getItems(item.index);
  }

  @Override
  String id(Item item) {
    return message(item).getItemId();
  }

  @Override
  double score(Item item) {
    return message(item).getScore();
  }

  @Override
  long position(Item item) {
    return Integer.toUnsignedLong(message(item).getPosition());
  }

  @Override
  public Map<String, MetricType> keys() {
    return types;
  }

  private Object value(int index, String name, String text) {
    MetricType type = types.get(name);
    if (type == null) {
      throw new FormatException(
          "protobuf: item " + index + " metric \"" + name + "\" has no entry in metric_types", -1);
    }
    try {
      return parseMetricText(text, type);
    } catch (FormatException e) {
      throw new FormatException(
          "protobuf: item " + index + " metric \"" + name + "\": " + e.getMessage(), -1);
    }
  }

  @Override
  Object metric(Item item, String name) {
    String text = message(item).getMetricsMap().get(name);
    return text == null ? null : value(item.index, name, text);
  }

  @Override
  MetricCursor metrics(Item item) {
    return new ProtobufCursor().reset(item);
  }

  @Override
  String log(Item item) {
    return message(item).getLog();
  }

  @Override
  public DecodedResult materialize() {
    List<DecodedItem> items = new ArrayList<>(size());
    for (int i = 0; i < size(); i++) {
      Item item = item(i);
      items.add(new DecodedItem(item.id(), item.score(), item.position(), item.metricMap(),
          item.log()));
    }
    return new DecodedResult(types, items);
  }

  private final class ProtobufCursor extends MetricCursor {
    private int index;
    private Iterator<Map.Entry<String, String>> it;
    private String name;
    private Object value;

    @Override
    public MetricCursor reset(Item item) {
      if (item.view != ProtobufView.this) {
        throw new IllegalArgumentException("the item is not of this cursor's view");
      }
      index = item.index;
      it = message(item).getMetricsMap().entrySet().iterator();
      name = null;
      value = null;
      return this;
    }

    @Override
    public boolean next() {
      if (!it.hasNext()) {
        return false;
      }
      Map.Entry<String, String> e = it.next();
      name = e.getKey();
      value = ProtobufView.this.value(index, name, e.getValue());
      return true;
    }

    @Override
    public int key() {
      return keyIndex.get(name);
    }

    @Override
    public String name() {
      return name;
    }

    @Override
    public MetricType type() {
      return types.get(name);
    }

    @Override
    public long longValue() {
      return (Long) as(MetricType.INT);
    }

    @Override
    public float floatValue() {
      return (Float) as(MetricType.FLOAT);
    }

    @Override
    public double doubleValue() {
      if (value instanceof Float) {
        return (Float) value;
      }
      return (Double) as(MetricType.DOUBLE);
    }

    @Override
    public String stringValue() {
      return (String) as(MetricType.STRING);
    }

    @Override
    public Object value() {
      return value;
    }

    private Object as(MetricType want) {
      if (type() != want) {
        throw new IllegalArgumentException(
            "metric \"" + name + "\" is a " + type() + ", not a " + want);
      }
      return value;
    }
  }

  private static FormatException bad(String text, MetricType type) {
    String shown = text.length() > 40 ? text.substring(0, 40) : text;
    return new FormatException(
        "\"" + shown + "\" is not a valid " + type.name().toLowerCase(java.util.Locale.ROOT), -1);
  }

  private static boolean nonZeroDigits(String number) {
    for (int i = 0; i < number.length(); i++) {
      char c = number.charAt(i);
      if (c == 'e' || c == 'E') {
        break;
      }
      if (c != '0' && c != '.') {
        return true;
      }
    }
    return false;
  }

  /**
   * A metric's text as the protobuf codec writes it, as a typed value (Long, Float, Double or
   * String). FormatException if the text is not a valid value of {@code type}.
   */
  public static Object parseMetricText(String text, MetricType type) {
    switch (type) {
      case STRING:
        return text;
      case INT:
        if (!INT_TEXT.matcher(text).matches()) {
          throw bad(text, type);
        }
        try {
          return Long.parseLong(text);
        } catch (NumberFormatException e) {
          throw bad(text, type);
        }
      default:
        break;
    }
    Matcher m = FLOAT_TEXT.matcher(text);
    if (!m.matches()) {
      throw bad(text, type);
    }
    final boolean negative = !m.group(1).isEmpty();
    final boolean isFloat = type == MetricType.FLOAT;
    if (m.group(2) != null) {
      if (isFloat) {
        return negative ? Float.NEGATIVE_INFINITY : Float.POSITIVE_INFINITY;
      }
      return negative ? Double.NEGATIVE_INFINITY : Double.POSITIVE_INFINITY;
    }
    if (m.group(3) != null) {
      if (isFloat) {
        return Float.intBitsToFloat(negative ? 0xffc00000 : 0x7fc00000);
      }
      return Double.longBitsToDouble(negative ? 0xfff8000000000000L : 0x7ff8000000000000L);
    }
    final String number = m.group(4);
    final boolean nonZero = nonZeroDigits(number);
    if (isFloat) {
      // Float.parseFloat rounds the decimal once, to binary32.
      float f = Float.parseFloat((negative ? "-" : "") + number);
      if (Float.isInfinite(f) || (f == 0 && nonZero)) {
        throw bad(text, type); // Out of range, as from_chars says.
      }
      return f;
    }
    double d = Double.parseDouble((negative ? "-" : "") + number);
    if (Double.isInfinite(d) || (d == 0 && nonZero)) {
      throw bad(text, type);
    }
    return d;
  }


}
