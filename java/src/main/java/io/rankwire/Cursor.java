package io.rankwire;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;

/**
 * Bounds-checked reading of docs/FORMAT.md's primitive types (the one home of varints,
 * fixed-width numbers and length prefixes in this library, as codec/coding.h is for the C++
 * codecs). A cursor reads the array {@code a} from {@code pos} and never at or past {@code end},
 * the innermost enclosing bound; positions are indexes into {@code a}, and errors name what was
 * being read and the offset from {@code base} (where the payload, or decoded block, starts in
 * the array). The static readers ({@link #i32}, {@link #i64}) read little-endian values with no
 * check: the caller has checked the bounds.
 *
 * <p>Not thread-safe; cheap to make, and reusable ({@link #reset}).
 */
final class Cursor {
  private static final VarHandle INT =
      MethodHandles.byteArrayViewVarHandle(int[].class, ByteOrder.LITTLE_ENDIAN);
  private static final VarHandle LONG =
      MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);

  byte[] a;
  int base;
  int pos;
  int end;
  private String context;

  Cursor(byte[] a, int base, int pos, int end, String context) {
    this.a = a;
    this.base = base;
    this.pos = pos;
    this.end = end;
    this.context = context;
  }

  /** Reads {@code a[pos, end)} next, offsets in errors counted from {@code base}. */
  Cursor reset(byte[] a, int base, int pos, int end) {
    this.a = a;
    this.base = base;
    this.pos = pos;
    this.end = end;
    return this;
  }

  /** As {@link #reset(byte[], int, int, int)}, naming {@code context} in errors. */
  Cursor reset(byte[] a, int base, int pos, int end, String context) {
    this.context = context;
    return reset(a, base, pos, end);
  }

  static int i32(byte[] a, int p) {
    return (int) INT.get(a, p);
  }

  static long i64(byte[] a, int p) {
    return (long) LONG.get(a, p);
  }

  /**
   * Where the varint at {@code a[p]} ends (the next position), or -1 when it is cut short by
   * {@code end}, longer than 10 bytes or over 64 bits (a Cursor's {@link #varint} at {@code p}
   * then says which). Reads nothing past {@code end}.
   */
  static int varintEnd(byte[] a, int p, int end) {
    for (int i = 0; i < 10; i++) {
      if (p >= end) {
        return -1;
      }
      byte b = a[p++];
      if (b >= 0) {
        return i == 9 && b > 1 ? -1 : p;
      }
    }
    return -1;
  }

  /** The value of the varint at {@code a[p]}, which {@link #varintEnd} accepted. */
  static long varintValue(byte[] a, int p) {
    byte b = a[p];
    if (b >= 0) {
      return b;
    }
    long v = b & 0x7f;
    for (int shift = 7; ; shift += 7) {
      b = a[++p];
      v |= (long) (b & 0x7f) << shift;
      if (b >= 0) {
        return v;
      }
    }
  }

  /**
   * The varint at {@code a[p]} when it is at most 10 bytes before {@code end} and its value fits
   * in 32 bits (as {@link #varint32} accepts), packed as {@code value << 32 | next position}
   * (the value is {@code r >>> 32}); else -1, whose position {@code (int) r} is negative. For
   * reads that must not allocate; a Cursor says what is wrong.
   */
  static long varint32At(byte[] a, int p, int end) {
    int v = 0;
    for (int i = 0; i < 10; i++) {
      if (p >= end) {
        return -1;
      }
      byte b = a[p++];
      int bits = b & 0x7f;
      if (i < 4) {
        v |= bits << (7 * i);
      } else if (i == 4 && bits <= 0x0f) {
        v |= bits << 28;
      } else if (bits != 0) {
        return -1;
      }
      if (b >= 0) {
        return (v & 0xffffffffL) << 32 | p;
      }
    }
    return -1;
  }

  int remaining() {
    return end - pos;
  }

  TruncatedException truncated(String what, int at) {
    return new TruncatedException(context + ": truncated " + what, at - base);
  }

  FormatException corrupt(String problem, int at) {
    return new FormatException(context + ": " + problem, at - base);
  }

  int u8(String what) {
    if (pos >= end) {
      throw truncated(what, pos);
    }
    return a[pos++] & 0xff;
  }

  /** Steps over `n` bytes (truncated when fewer are left); returns where they start. */
  private int take(int n, String what) {
    final int at = pos;
    if (end - at < n) {
      throw truncated(what, at);
    }
    pos = at + n;
    return at;
  }

  long u32(String what) {
    return i32(a, take(4, what)) & 0xffffffffL;
  }

  float f32(String what) {
    return Float.intBitsToFloat(i32(a, take(4, what)));
  }

  double f64(String what) {
    return Double.longBitsToDouble(i64(a, take(8, what)));
  }

  void skip(int n, String what) {
    take(n, what);
  }

  /** An unsigned LEB128 varint: at most 10 bytes, at most 64 bits (as a long's bits). */
  long varint(String what) {
    int p = pos;
    if (p < end) {
      byte b = a[p];
      if (b >= 0) {
        pos = p + 1;
        return b;
      }
      if (end - p >= 2) {
        byte c = a[p + 1];
        if (c >= 0) {
          pos = p + 2;
          return (b & 0x7f) | (long) c << 7;
        }
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
      int b = a[p++] & 0xff;
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
    int p = pos;
    pos = p + (int) n;
    return p;
  }
}
