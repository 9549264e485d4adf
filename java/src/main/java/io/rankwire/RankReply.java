package io.rankwire;

import com.google.protobuf.ByteString;
import com.google.protobuf.InvalidProtocolBufferException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import rank.v1.Rank.ResponseHeader;

/**
 * A Rank response opened for reading: its header and a {@link ResultView} over its body. The
 * response is read without parsing its body with protobuf (codec/envelope.h is the C++ side of
 * the same contract): field 1 (the header) is parsed, field 3 (a custom codec's payload) is a
 * slice of the response's bytes, not a copy; field 2 (the protobuf baseline's RankResult) is
 * parsed by {@link ProtobufView}. Protobuf's rules apply: fields in any order, unknown fields
 * skipped, a repeated header merged, the last body field wins.
 *
 * <p>Thread safety: immutable; its view may be read from several threads.
 */
public final class RankReply {
  private static final int HEADER_FIELD = 1;
  private static final int RESULT_FIELD = 2;
  private static final int PAYLOAD_FIELD = 3;

  private final ResponseHeader header;
  private final ResultView view;
  private final int responseBytes;
  private final int bodyBytes;

  private RankReply(ResponseHeader header, ResultView view, int responseBytes, int bodyBytes) {
    this.header = header;
    this.view = view;
    this.responseBytes = responseBytes;
    this.bodyBytes = bodyBytes;
  }

  /**
   * Opens a serialized rank.v1.RankResponse (as your own gRPC stack received it). FormatException
   * when it is malformed or its header's item_count differs from the body's;
   * UnknownCodecException for a codec this client cannot read.
   */
  public static RankReply open(ByteString response, Limits limits) {
    ByteBuffer buf = response.asReadOnlyByteBuffer().slice().order(ByteOrder.LITTLE_ENDIAN);
    Cursor c = new Cursor(buf, 0, buf.limit(), "envelope");
    ResponseHeader.Builder header = ResponseHeader.newBuilder();
    int bodyField = 0;
    int bodyStart = 0;
    int bodyEnd = 0;
    while (c.pos < c.end) {
      final int at = c.pos;
      final long tag = c.varint("envelope field tag");
      final long field = tag >>> 3;
      final int wireType = (int) (tag & 7);
      if (field == 0) {
        throw new FormatException("envelope: field number 0", at);
      }
      switch (wireType) {
        case 0:
          c.varint("envelope unknown varint field");
          break;
        case 1:
          c.skip(8, "envelope unknown fixed field");
          break;
        case 5:
          c.skip(4, "envelope unknown fixed field");
          break;
        case 2: {
          final int a = c.lengthPrefixed("envelope length-delimited field");
          if (field == HEADER_FIELD) {
            try {
              header.mergeFrom(response.substring(a, c.pos));
            } catch (InvalidProtocolBufferException e) {
              throw new FormatException(
                  "envelope: ResponseHeader does not parse (" + e.getMessage() + ")", a, e);
            }
          } else if (field == RESULT_FIELD || field == PAYLOAD_FIELD) {
            bodyField = (int) field;
            bodyStart = a;
            bodyEnd = c.pos;
          }
          break;
        }
        default:
          throw new FormatException("envelope: unsupported wire type " + wireType, at);
      }
    }
    ResponseHeader h = header.build();
    if (bodyField == 0) {
      throw new FormatException("envelope: the response carries no body", -1);
    }
    String codec = h.getCodec();
    if (!codec.equals("protobuf") && !codec.equals("rankbin") && !codec.equals("rankbin-zstd")) {
      throw new UnknownCodecException(codec);
    }
    if ((bodyField == RESULT_FIELD) != codec.equals("protobuf")) {
      throw new FormatException(
          "envelope: codec \"" + codec + "\" body arrived in the wrong envelope field", bodyStart);
    }
    ByteString body = response.substring(bodyStart, bodyEnd);
    ResultView view = ResultView.open(codec, body, limits);
    if (Integer.toUnsignedLong(h.getItemCount()) != view.size()) {
      throw new FormatException("envelope: the header says " + Integer.toUnsignedLong(
          h.getItemCount()) + " items, the body has " + view.size(), -1);
    }
    return new RankReply(h, view, response.size(), body.size());
  }

  public ResponseHeader header() {
    return header;
  }

  /** The codec the server used (the header's; read it, never assume). */
  public String codec() {
    return header.getCodec();
  }

  public ResultView view() {
    return view;
  }

  /** Shorthand for {@code view().top(n)}. */
  public java.util.List<Item> top(int n) {
    return view.top(n);
  }

  public int responseBytes() {
    return responseBytes;
  }

  public int bodyBytes() {
    return bodyBytes;
  }
}
