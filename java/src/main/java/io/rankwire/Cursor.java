package io.rankwire;

import java.nio.ByteBuffer;

/**
 * Bounds-checked reading of docs/FORMAT.md's primitive types (the one home of varints,
 * fixed-width numbers and length prefixes in this library, as codec/coding.h is for the C++
 * codecs). A cursor reads {@code buf} from {@code pos} and never at or past {@code end}, the
 * innermost enclosing bound; errors name what was being read and the offset. The buffer is
 * little-endian and read with absolute gets only, so several cursors may share it.
 *
 * <p>Not thread-safe; cheap to make (one per read).
 */
final class Cursor {
  final ByteBuffer buf;
  int pos;
  int end;
  private final String context;

  Cursor(ByteBuffer buf, int pos, int end, String context) {
    this.buf = buf;
    this.pos = pos;
    this.end = end;
    this.context = context;
  }

  int remaining() {
    return end - pos;
  }

  TruncatedException truncated(String what, int at) {
    return new TruncatedException(context + ": truncated " + what, at);
  }

  FormatException corrupt(String problem, int at) {
    return new FormatException(context + ": " + problem, at);
  }

  int u8(String what) {
    if (pos >= end) {
      throw truncated(what, pos);
    }
    return buf.get(pos++) & 0xff;
  }

  long u32(String what) {
    if (end - pos < 4) {
      throw truncated(what, pos);
    }
    long v = buf.getInt(pos) & 0xffffffffL;
    pos += 4;
    return v;
  }

  float f32(String what) {
    if (end - pos < 4) {
      throw truncated(what, pos);
    }
    float v = Float.intBitsToFloat(buf.getInt(pos));
    pos += 4;
    return v;
  }

  double f64(String what) {
    if (end - pos < 8) {
      throw truncated(what, pos);
    }
    double v = buf.getDouble(pos);
    pos += 8;
    return v;
  }

  void skip(int n, String what) {
    if (end - pos < n) {
      throw truncated(what, pos);
    }
    pos += n;
  }

  /** An unsigned LEB128 varint: at most 10 bytes, at most 64 bits (as a long's bits). */
  long varint(String what) {
    int p = pos;
    if (p < end) {
      byte b = buf.get(p);
      if (b >= 0) {
        pos = p + 1;
        return b;
      }
    }
    return varintSlow(what);
  }

  private long varintSlow(String what) {
    final int start = pos;
    int p = pos;
    long result = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p >= end) {
        throw truncated(what, start);
      }
      int b = buf.get(p++) & 0xff;
      if (shift == 63 && b > 1) {
        throw corrupt(what + " overflows 64 bits", start);
      }
      result |= (long) (b & 0x7f) << shift;
      if (b < 0x80) {
        pos = p;
        return result;
      }
    }
    throw corrupt(what + " is longer than 10 bytes", start);
  }

  /** A varint whose value must fit in 32 bits (returned as a non-negative long). */
  long varint32(String what) {
    final int start = pos;
    long v = varint(what);
    if ((v >>> 32) != 0) {
      throw corrupt(what + " exceeds 32 bits", start);
    }
    return v;
  }

  /**
   * An element count, refused when the bytes left cannot hold that many elements of at least
   * {@code minBytesEach} bytes, before anything is sized by it.
   */
  int count(int minBytesEach, String what) {
    final int start = pos;
    long n = varint(what);
    long left = end - pos;
    if (n < 0 || (minBytesEach > 0 && n > left / minBytesEach) || n > Integer.MAX_VALUE) {
      throw corrupt(what + " " + Long.toUnsignedString(n) + " exceeds the remaining " + left
          + " bytes", start);
    }
    return (int) n;
  }

  /** Reads a varint length and steps over the bytes it announces; returns where they start. */
  int lengthPrefixed(String what) {
    final int start = pos;
    long n = varint(what);
    if (n < 0 || n > end - pos) {
      throw truncated(what + " of " + Long.toUnsignedString(n) + " bytes", start);
    }
    int a = pos;
    pos = a + (int) n;
    return a;
  }
}
