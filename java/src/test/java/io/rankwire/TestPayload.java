package io.rankwire;

import com.google.protobuf.ByteString;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * Writes small rankbin 1.1 payloads for the unit tests, from docs/FORMAT.md (raw blocks, one
 * shape per item as given): the cases the conformance dump does not make, such as a KEYS
 * section over 64 KiB or a dictionary of many entries.
 */
final class TestPayload {
  private final List<byte[]> keys = new ArrayList<>();
  private final List<int[]> shapes = new ArrayList<>();
  private final List<byte[]> records = new ArrayList<>();
  private final ByteArrayOutputStream values = new ByteArrayOutputStream();

  /** A key of type {@code code} (RankbinView's type codes); for STRING_DICT, its entries. */
  TestPayload key(int code, String name, String... dictionary) {
    ByteArrayOutputStream e = new ByteArrayOutputStream();
    e.write(code);
    bytes(e, name.getBytes(StandardCharsets.UTF_8));
    if (code == RankbinView.STRING_DICT) {
      varint(e, dictionary.length);
      for (String d : dictionary) {
        bytes(e, d.getBytes(StandardCharsets.UTF_8));
      }
    }
    keys.add(e.toByteArray());
    return this;
  }

  TestPayload shape(int... keyIndexes) {
    shapes.add(keyIndexes);
    return this;
  }

  /** An item of shape {@code shape} whose values (already encoded) are {@code encoded}. */
  TestPayload item(String id, double score, int shape, byte[] encoded) {
    ByteArrayOutputStream r = new ByteArrayOutputStream();
    bytes(r, id.getBytes(StandardCharsets.UTF_8));
    long bits = Double.doubleToRawLongBits(score);
    for (int i = 0; i < 8; i++) {
      r.write((int) (bits >>> (8 * i)));
    }
    varint(r, records.size() + 1);
    varint(r, shape);
    varint(r, values.size());
    records.add(r.toByteArray());
    values.writeBytes(encoded);
    return this;
  }

  /** Values in a shape's order: Double, Float, Long (INT), String (STRING), Integer (index). */
  static byte[] values(Object... v) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    for (Object x : v) {
      if (x instanceof Double) {
        long bits = Double.doubleToRawLongBits((Double) x);
        for (int i = 0; i < 8; i++) {
          out.write((int) (bits >>> (8 * i)));
        }
      } else if (x instanceof Float) {
        int bits = Float.floatToRawIntBits((Float) x);
        for (int i = 0; i < 4; i++) {
          out.write(bits >>> (8 * i));
        }
      } else if (x instanceof Long) {
        long n = (Long) x;
        varint(out, (n << 1) ^ (n >> 63));
      } else if (x instanceof String) {
        bytes(out, ((String) x).getBytes(StandardCharsets.UTF_8));
      } else {
        varint(out, (Integer) x);
      }
    }
    return out.toByteArray();
  }

  /** The payload: every item in one raw VALUES block, no LOGS section. */
  ByteString build() {
    ByteArrayOutputStream k = new ByteArrayOutputStream();
    varint(k, keys.size());
    for (byte[] e : keys) {
      bytes(k, e);
    }
    ByteArrayOutputStream s = new ByteArrayOutputStream();
    varint(s, shapes.size());
    for (int[] shape : shapes) {
      varint(s, shape.length);
      for (int key : shape) {
        varint(s, key);
      }
    }
    ByteArrayOutputStream it = new ByteArrayOutputStream();
    varint(it, records.size());
    varint(it, Math.max(1, records.size()));
    int offset = 0;
    for (byte[] r : records) {
      u32(it, offset);
      offset += r.length;
    }
    for (byte[] r : records) {
      it.writeBytes(r);
    }
    ByteArrayOutputStream v = new ByteArrayOutputStream();
    varint(v, records.isEmpty() ? 0 : 1);
    if (!records.isEmpty()) {
      v.write(0); // raw
      u32(v, values.size());
      u32(v, values.size());
      v.writeBytes(values.toByteArray());
    }
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    out.writeBytes(new byte[] {'R', 'K', 'W', 'B', 1, 1, 4, 0});
    section(out, 1, k);
    section(out, 2, s);
    section(out, 3, it);
    section(out, 4, v);
    return ByteString.copyFrom(out.toByteArray());
  }

  private static void section(ByteArrayOutputStream out, int id, ByteArrayOutputStream body) {
    out.write(id);
    u32(out, body.size());
    out.writeBytes(body.toByteArray());
  }

  private static void u32(ByteArrayOutputStream out, int v) {
    for (int i = 0; i < 4; i++) {
      out.write(v >>> (8 * i));
    }
  }

  static void varint(ByteArrayOutputStream out, long v) {
    while ((v & ~0x7fL) != 0) {
      out.write((int) ((v & 0x7f) | 0x80));
      v >>>= 7;
    }
    out.write((int) v);
  }

  private static void bytes(ByteArrayOutputStream out, byte[] b) {
    varint(out, b.length);
    out.writeBytes(b);
  }
}
