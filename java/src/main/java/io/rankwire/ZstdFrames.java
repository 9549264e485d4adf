package io.rankwire;

import com.github.luben.zstd.Zstd;
import com.github.luben.zstd.ZstdDecompressCtx;
import com.github.luben.zstd.ZstdException;

/**
 * The zstd step of rankbin-zstd blocks, apart from the layout (as codec/compression.h is for the
 * C++ codecs): {@link #checkBlockFrame} applies docs/FORMAT.md's rules for a block's frame (RFC
 * 8878's frame header walked here, before zstd sees the bytes), {@link #decompressExact} decodes
 * it to exactly the declared size with zstd-jni (Debian's libzstd-jni-java over libzstd), which
 * verifies the content checksum when the frame has one.
 *
 * <p>Stateless and thread-safe.
 */
final class ZstdFrames {
  private static final int MAGIC = 0xFD2FB528;
  private static final int CHECKSUM_FLAG = 1 << 2;
  private static final int DICTIONARY_ID_FLAGS = 3;
  private static final int SINGLE_SEGMENT_FLAG = 1 << 5;
  // Bit 4 is unused and bit 3 reserved; writers leave both 0.
  private static final int UNUSED_FLAGS = 3 << 3;
  // A window log of at most 31 (zstd's largest on 64-bit builds).
  private static final int MAX_WINDOW_EXPONENT = 21;
  private static final int[] DICTIONARY_ID_BYTES = {0, 1, 2, 4};

  private ZstdFrames() {}

  /**
   * Throws unless {@code a[start, start + size)} is exactly one zstd frame (no skippable
   * frame, nothing after it) naming no dictionary, declaring a content size of {@code rawSize},
   * with the unused and reserved descriptor bits 0, a window exponent of at most 21 and, if
   * {@code requireChecksum} (payloads of minor version 1 and later), the content checksum flag.
   * Offsets in errors are from {@code base} (where the payload starts in {@code a}).
   */
  static void checkBlockFrame(byte[] a, int start, int size, long rawSize,
      boolean requireChecksum, int base) {
    final int end = start + size;
    if (size < 5) {
      throw new FormatException("zstd: frame of " + size + " bytes is too short", start - base);
    }
    if (Cursor.i32(a, start) != MAGIC) {
      throw new FormatException("zstd: not a zstd frame (skippable frames are not allowed)",
          start);
    }
    final int descriptor = a[start + 4] & 0xff;
    final boolean singleSegment = (descriptor & SINGLE_SEGMENT_FLAG) != 0;
    final int sizeFlag = descriptor >>> 6;
    int p = start + 5;
    int window = -1;
    if (!singleSegment) {
      if (p >= end) {
        throw new FormatException("zstd: corrupt frame header", start - base);
      }
      window = a[p] & 0xff;
      p++;
    }
    p += DICTIONARY_ID_BYTES[descriptor & DICTIONARY_ID_FLAGS];
    final int sizeBytes = sizeFlag == 0 ? (singleSegment ? 1 : 0) : (1 << sizeFlag);
    if (p > end || sizeBytes > end - p) {
      throw new FormatException("zstd: corrupt frame header", start - base);
    }
    long declared = -1;
    if (sizeBytes > 0) {
      declared = 0;
      for (int i = 0; i < sizeBytes; i++) {
        declared |= (long) (a[p + i] & 0xff) << (8 * i);
      }
      if (sizeBytes == 2) {
        declared += 256;
      }
    }
    p += sizeBytes;
    // The blocks (RFC 8878, 3.1.1.2): walked to find the frame's end.
    while (true) {
      if (end - p < 3) {
        throw new FormatException("zstd: corrupt frame: cut short", start - base);
      }
      int header = (a[p] & 0xff) | (a[p + 1] & 0xff) << 8
          | (a[p + 2] & 0xff) << 16;
      int last = header & 1;
      int kind = (header >>> 1) & 3;
      int blockSize = header >>> 3;
      if (kind == 3) {
        throw new FormatException("zstd: corrupt frame: reserved block type", p - base);
      }
      long next = (long) p + 3 + (kind == 1 ? 1 : blockSize);
      if (next > end) {
        throw new FormatException("zstd: corrupt frame: cut short", start - base);
      }
      p = (int) next;
      if (last != 0) {
        break;
      }
    }
    if ((descriptor & CHECKSUM_FLAG) != 0) {
      if (end - p < 4) {
        throw new FormatException("zstd: corrupt frame: cut short", start - base);
      }
      p += 4;
    }
    if ((descriptor & UNUSED_FLAGS) != 0) {
      throw new FormatException("zstd: frame header sets an unused or reserved bit", start - base);
    }
    if ((descriptor & DICTIONARY_ID_FLAGS) != 0) {
      throw new FormatException("zstd: frame names a dictionary", start - base);
    }
    if (sizeBytes == 0) {
      throw new FormatException("zstd: frame does not declare its content size", start - base);
    }
    if (requireChecksum && (descriptor & CHECKSUM_FLAG) == 0) {
      throw new FormatException("zstd: frame has no content checksum", start - base);
    }
    if ((window >> 3) > MAX_WINDOW_EXPONENT) {
      throw new FormatException("zstd: corrupt frame header (window too large)", start - base);
    }
    if (declared != rawSize) {
      throw new FormatException("zstd: frame declares " + Long.toUnsignedString(declared)
          + " bytes, the block " + rawSize, start - base);
    }
    if (p != end) {
      throw new FormatException("zstd: " + (end - p) + " bytes after the frame", p - base);
    }
  }

  /**
   * The content of the frame {@code a[start, start + size)}, which must be exactly
   * {@code rawSize} bytes (checked against the reader's cap before this is called).
   * ChecksumException when zstd's content checksum does not match. Offsets in errors are from
   * {@code base}. {@code ctx}: zstd's decompression context to use (one per full decode, since
   * making one costs more than decoding a small block), or null for a new one.
   */
  static byte[] decompressExact(byte[] a, int start, int size, int rawSize, int base,
      ZstdDecompressCtx ctx) {
    byte[] out = new byte[rawSize];
    long r;
    try {
      r = ctx != null ? ctx.decompressByteArray(out, 0, rawSize, a, start, size)
          : Zstd.decompressByteArray(out, 0, rawSize, a, start, size);
    } catch (ZstdException e) {
      // zstd-jni throws for zstd's errors (older versions returned the code).
      throw zstdError(e.getErrorCode(), e.getMessage(), start - base);
    }
    if (Zstd.isError(r)) {
      throw zstdError(Zstd.getErrorCode(r), Zstd.getErrorName(r), start - base);
    }
    if (r != rawSize) {
      throw new FormatException(
          "zstd: frame decompressed to " + r + " bytes, expected " + rawSize, start - base);
    }
    return out;
  }

  private static FormatException zstdError(long code, String name, int at) {
    if (code == Zstd.errChecksumWrong()) {
      return new ChecksumException("zstd: content checksum mismatch", at);
    }
    return new FormatException("zstd: corrupt frame: " + name, at);
  }
}
