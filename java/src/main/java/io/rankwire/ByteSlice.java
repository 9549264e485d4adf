package io.rankwire;

import com.google.protobuf.ByteOutput;
import com.google.protobuf.ByteString;
import com.google.protobuf.UnsafeByteOperations;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;

/**
 * A ByteString's bytes as {@code array[offset, offset + length)}, without copying them when the
 * ByteString is one flat array (what grpc-java's and protobuf-java's parsers make, and what
 * {@code ByteString.copyFrom} and {@code UnsafeByteOperations.unsafeWrap} make): protobuf-java
 * hands its array to a {@link ByteOutput} ({@code UnsafeByteOperations.unsafeWriteTo}), the
 * public way to read a ByteString in place. Any other ByteString (a concatenation, or one over a
 * direct buffer) is copied once. The array is only ever read.
 */
final class ByteSlice extends ByteOutput {
  byte[] array;
  int offset;
  int length;
  private int parts;

  private ByteSlice() {}

  static ByteSlice of(ByteString s) {
    ByteSlice out = new ByteSlice();
    try {
      UnsafeByteOperations.unsafeWriteTo(s, out);
    } catch (IOException e) {
      throw new UncheckedIOException(e); // ByteSlice itself never throws
    }
    out.length = s.size();
    if (out.parts != 1 || out.array == null) {
      out.array = s.toByteArray();
      out.offset = 0;
    }
    return out;
  }

  @Override
  public void writeLazy(byte[] value, int off, int len) {
    if (parts++ == 0) {
      array = value;
      offset = off;
    }
  }

  @Override
  public void writeLazy(ByteBuffer value) {
    if (parts++ == 0 && value.hasArray()) {
      array = value.array();
      offset = value.arrayOffset() + value.position();
    }
  }

  @Override
  public void write(byte value) {
    parts += 2;
  }

  @Override
  public void write(byte[] value, int off, int len) {
    parts += 2;
  }

  @Override
  public void write(ByteBuffer value) {
    parts += 2;
  }
}
