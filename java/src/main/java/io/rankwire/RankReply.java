package io.rankwire;

import com.google.protobuf.ByteString;
import com.google.protobuf.InvalidProtocolBufferException;
import java.nio.charset.StandardCharsets;
import rank.v1.Rank.ResponseHeader;

/**
 * A Rank response opened for reading: its header and a {@link ResultView} over its body. The
 * response is read in place without parsing its body with protobuf (codec/envelope.h is the C++
 * side of the same contract): of field 1 (the header) only {@code codec} and
 * {@code item_count} are read on opening, the whole header is parsed when {@link #header()} is
 * first called; field 3 (a custom codec's payload) is read where it lies, not copied; field 2
 * (the protobuf baseline's RankResult) is parsed by {@link ProtobufView}. Protobuf's rules
 * apply: fields in any order, unknown fields skipped, a repeated header merged, the last body
 * field wins.
 *
 * <p>Thread safety: safe to share; its view may be read from several threads.
 */
public final class RankReply {
  private static final int HEADER_FIELD = 1;
  private static final int RESULT_FIELD = 2;
  private static final int PAYLOAD_FIELD = 3;
  // ResponseHeader's fields read on opening (rank.proto).
  private static final int HEADER_CODEC = 2;
  private static final int HEADER_ITEM_COUNT = 4;
  private static final String[] CODECS = {"protobuf", "rankbin", "rankbin-zstd"};

  private final ByteString response;
  // Field 1: where its one occurrence is, or, when it is repeated, the merged header.
  private final int headerStart;
  private final int headerEnd;
  private volatile ResponseHeader header;
  private final String codec;
  private final ResultView view;
  private final int bodyBytes;

  private RankReply(ByteString response, int headerStart, int headerEnd, ResponseHeader header,
      String codec, ResultView view, int bodyBytes) {
    this.response = response;
    this.headerStart = headerStart;
    this.headerEnd = headerEnd;
    this.header = header;
    this.codec = codec;
    this.view = view;
    this.bodyBytes = bodyBytes;
  }

  /**
   * Opens a serialized rank.v1.RankResponse (as your own gRPC stack received it). FormatException
   * when it is malformed or its header's item_count differs from the body's;
   * UnknownCodecException for a codec this client cannot read.
   */
  public static RankReply open(ByteString response, Limits limits) {
    final ByteSlice bytes = ByteSlice.of(response);
    final byte[] a = bytes.array;
    final int base = bytes.offset;
    final Cursor c = new Cursor(a, base, base, base + bytes.length, "envelope");
    int headers = 0;
    int headerStart = 0;
    int headerEnd = 0;
    int bodyField = 0;
    int bodyStart = 0;
    int bodyEnd = 0;
    // The header's codec (bytes) and item_count; a repeated header merges: the last wins.
    int codecStart = -1;
    int codecEnd = -1;
    long itemCount = 0;
    while (c.pos < c.end) {
      final int at = c.pos;
      final long tag = c.varint("envelope field tag");
      final long field = tag >>> 3;
      final int wireType = (int) (tag & 7);
      if (field == 0) {
        throw c.corrupt("field number 0", at);
      }
      if (wireType != 2) {
        skip(c, wireType, at);
        continue;
      }
      final int s = c.lengthPrefixed("envelope length-delimited field");
      if (field == HEADER_FIELD) {
        headers++;
        headerStart = s;
        headerEnd = c.pos;
        final int end = c.end;
        c.end = c.pos;
        c.pos = s;
        while (c.pos < c.end) {
          final int fieldAt = c.pos;
          final long t = c.varint("header field tag");
          if ((t >>> 3) == HEADER_CODEC && (t & 7) == 2) {
            codecStart = c.lengthPrefixed("header codec");
            codecEnd = c.pos;
          } else if ((t >>> 3) == HEADER_ITEM_COUNT && (t & 7) == 0) {
            itemCount = c.varint("header item_count") & 0xffffffffL; // uint32: its low bits
          } else if ((t & 7) == 2) {
            c.lengthPrefixed("header field");
          } else if ((t >>> 3) == 0) {
            throw c.corrupt("header field number 0", fieldAt);
          } else {
            skip(c, (int) (t & 7), fieldAt);
          }
        }
        c.end = end;
      } else if (field == RESULT_FIELD || field == PAYLOAD_FIELD) {
        bodyField = (int) field;
        bodyStart = s;
        bodyEnd = c.pos;
      }
    }
    // The header in full now only when it is absent or was sent in pieces (rankwire-server
    // sends it once).
    ResponseHeader merged = null;
    if (headers == 0) {
      merged = ResponseHeader.getDefaultInstance();
    } else if (headers > 1) {
      merged = parseHeaders(response, a, base);
    }
    if (bodyField == 0) {
      throw new FormatException("envelope: the response carries no body", -1);
    }
    final String codec = codecName(a, codecStart, codecEnd);
    if ((bodyField == RESULT_FIELD) != codec.equals("protobuf")) {
      throw new FormatException("envelope: codec \"" + codec
          + "\" body arrived in the wrong envelope field", bodyStart - base);
    }
    final ResultView view = codec.equals("protobuf")
        ? ProtobufView.open(response.substring(bodyStart - base, bodyEnd - base))
        : RankbinView.open(response, bodyStart - base, bytes, bodyStart, bodyEnd - bodyStart,
            limits, c);
    if (itemCount != view.size()) {
      throw new FormatException("envelope: the header says " + itemCount + " items, the body has "
          + view.size(), -1);
    }
    return new RankReply(response, Math.max(0, headerStart - base),
        Math.max(0, headerEnd - base), merged, codec, view, bodyEnd - bodyStart);
  }

  private static void skip(Cursor c, int wireType, int at) {
    switch (wireType) {
      case 0:
        c.varint("envelope unknown varint field");
        break;
      case 1:
        c.skip(8, "envelope unknown fixed field");
        break;
      case 2:
        c.lengthPrefixed("envelope length-delimited field");
        break;
      case 5:
        c.skip(4, "envelope unknown fixed field");
        break;
      default:
        throw c.corrupt("unsupported wire type " + wireType, at);
    }
  }

  /** The codec's name: one of the three this client reads, else UnknownCodecException. */
  private static String codecName(byte[] a, int start, int end) {
    final int n = start < 0 ? 0 : end - start;
    for (String name : CODECS) {
      if (sameAscii(name, a, start, n)) {
        return name;
      }
    }
    throw new UnknownCodecException(n == 0 ? "" : text(a, start, n));
  }

  private static boolean sameAscii(String name, byte[] a, int start, int n) {
    if (name.length() != n) {
      return false;
    }
    for (int i = 0; i < n; i++) {
      if (a[start + i] != name.charAt(i)) {
        return false;
      }
    }
    return true;
  }

  private static String text(byte[] a, int start, int n) {
    return new String(a, start, n, StandardCharsets.UTF_8);
  }

  /** Every field 1 of the response, merged as protobuf does. */
  private static ResponseHeader parseHeaders(ByteString response, byte[] a, int base) {
    final Cursor c = new Cursor(a, base, base, base + response.size(), "envelope");
    final ResponseHeader.Builder h = ResponseHeader.newBuilder();
    while (c.pos < c.end) {
      final int at = c.pos;
      final long tag = c.varint("envelope field tag");
      if ((tag & 7) != 2) {
        skip(c, (int) (tag & 7), at);
        continue;
      }
      final int s = c.lengthPrefixed("envelope length-delimited field");
      if ((tag >>> 3) == HEADER_FIELD) {
        try {
          h.mergeFrom(response.substring(s - base, c.pos - base));
        } catch (InvalidProtocolBufferException e) {
          throw new FormatException(
              "envelope: ResponseHeader does not parse (" + e.getMessage() + ")", s - base, e);
        }
      }
    }
    return h.build();
  }

  /**
   * The response's header, parsed on the first call (FormatException when it does not parse as
   * a ResponseHeader; opening read only its codec and item_count).
   */
  public ResponseHeader header() {
    ResponseHeader h = header;
    if (h == null) {
      try {
        h = ResponseHeader.parseFrom(response.substring(headerStart, headerEnd));
      } catch (InvalidProtocolBufferException e) {
        throw new FormatException(
            "envelope: ResponseHeader does not parse (" + e.getMessage() + ")", headerStart, e);
      }
      header = h;
    }
    return h;
  }

  /** The codec the server used (the header's; read it, never assume). */
  public String codec() {
    return codec;
  }

  public ResultView view() {
    return view;
  }

  /** Shorthand for {@code view().top(n)}. */
  public java.util.List<Item> top(int n) {
    return view.top(n);
  }

  public int responseBytes() {
    return response.size();
  }

  public int bodyBytes() {
    return bodyBytes;
  }
}
