package io.rankwire;

import com.google.protobuf.ByteString;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * A response body opened for reading: items in rank order, read one by one. For rankbin and
 * rankbin-zstd ({@link RankbinView}) opening checks the structure and decodes nothing else; an
 * item's id, score and position are read with its record, its metrics and log only when asked
 * for. For the protobuf baseline ({@link ProtobufView}) opening parses the whole message.
 *
 * <pre>{@code
 * ResultView view = ResultView.open(header.getCodec(), payload, Limits.DEFAULT);
 * for (Item item : view.top(10)) {
 *   double ctr = item.doubleMetric("score.ctr");   // decoded now, not before
 * }
 * }</pre>
 *
 * <p>Thread safety: a view may be read from several threads at once; its lazy tables are
 * built under its own lock.
 */
public abstract class ResultView {
  ResultView() {}

  /**
   * Opens a body written by {@code codec}: "rankbin" or "rankbin-zstd" (docs/FORMAT.md; the
   * payload is not copied), or "protobuf" (a rank.v1.RankResult). UnknownCodecException for any
   * other name; FormatException when the bytes are malformed.
   */
  public static ResultView open(String codec, ByteString body, Limits limits) {
    switch (codec) {
      case "rankbin":
      case "rankbin-zstd":
        return RankbinView.open(body, limits);
      case "protobuf":
        return ProtobufView.open(body);
      default:
        throw new UnknownCodecException(codec);
    }
  }

  /** The number of items. */
  public abstract int size();

  /**
   * Item {@code i} (0-based, rank order) with its hot fields read. IndexOutOfBoundsException
   * past {@link #size()}; FormatException when its record is damaged.
   */
  public abstract Item item(int i);

  /** The first {@code min(n, size())} items. */
  public List<Item> top(int n) {
    int k = Math.min(Math.max(n, 0), size());
    List<Item> out = new ArrayList<>(k);
    for (int i = 0; i < k; i++) {
      out.add(item(i));
    }
    return out;
  }

  /** The metric keys and their types, in the payload's order (protobuf: by name). */
  public abstract Map<String, MetricType> keys();

  /** Everything, fully checked (docs/FORMAT.md, "Decoding the whole result"). */
  public abstract DecodedResult materialize();

  // What an Item asks its view.
  abstract String id(Item item);

  abstract double score(Item item);

  abstract long position(Item item);

  abstract Object metric(Item item, String name);

  abstract MetricCursor metrics(Item item);

  abstract String log(Item item);
}
