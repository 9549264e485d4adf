package io.rankwire;

import com.google.protobuf.ByteString;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A rankbin or rankbin-zstd payload (docs/FORMAT.md, version 1.x) opened lazily, over the
 * payload's ByteString without copying it ({@code asReadOnlyByteBuffer()}).
 *
 * <p>Opening checks what FORMAT.md's "What a lazy reader checks" lists (the header, the section
 * table, the whole KEYS section, the SHAPES and ITEMS counts, the block counts) and decodes
 * nothing else. Reading item k then reads its two directory entries and its record; its metrics
 * need its shape (and the shapes before it) and its VALUES block; its log, its LOGS block. A
 * zstd block is decompressed once, the first time one of its items needs it. So opening a
 * 500-item response and reading the top 10 touches the records of 10 items and one block of
 * each column. Key names and dictionary strings become Strings when first asked for.
 *
 * <p>Errors: FormatException (TruncatedException, ChecksumException,
 * UnsupportedVersionException) with the offset, for bytes FORMAT.md calls an error;
 * LimitException past a cap ({@link Limits}). A damaged item, shape or block fails every read
 * that needs it and nothing else, as the C++ reader does. No read loops on its input or
 * allocates by a length the payload claims without the bytes to back it.
 *
 * <p>What it allocates: opening, the view, two ByteBuffers (the payload's read-only view) and
 * one int per key; per item read, an {@link Item} (and its id String when asked); per
 * {@link Item#metrics()}, one cursor; per zstd block read, the frame's copy for the native call
 * and its decoded bytes; per shape, its key indexes; dictionary strings and key names once.
 *
 * <p>Thread safety: a view may be read from several threads; its lazy tables (shapes, block
 * directories, decoded blocks, names) are extended under the view's lock.
 */
public final class RankbinView extends ResultView {
  public static final int MAJOR_VERSION = 1;
  static final String CONTEXT = "rankbin";

  private static final int HEADER_SIZE = 8;
  private static final int MAGIC = 0x42574B52; // "RKWB", little-endian
  private static final int KEYS = 1;
  private static final int SHAPES = 2;
  private static final int ITEMS = 3;
  private static final int VALUES = 4;
  private static final int LOGS = 5;
  private static final String[] SECTION_NAMES = {"", "KEYS", "SHAPES", "ITEMS", "VALUES", "LOGS"};

  // Type codes of version 1.x: (kind << 3) | wire class.
  static final int INT = 0x00;
  static final int FLOAT = 0x09;
  static final int DOUBLE = 0x12;
  static final int STRING = 0x1b;
  static final int STRING_DICT = 0x20;

  private static final int BLOCK_RAW = 0;
  private static final int BLOCK_ZSTD = 1;
  // Least bytes of an element, for counts checked against what remains.
  private static final int MIN_KEY_BYTES = 3;
  private static final int MIN_ITEM_BYTES = 4 + 12; // directory entry, id length, score, 3 varints
  private static final int BLOCK_ENTRY_BYTES = 9;
  // What a full decode counts per key of an item's shape (FORMAT.md "Validity").
  private static final int MATERIALIZED_BYTES_PER_KEY = 16;

  private final ByteString payload;
  private final ByteBuffer buf;
  private final Limits limits;
  private final int minor;

  // KEYS: per key, the offset of its type byte and the end of its entry.
  private final int keyCount;
  private final int[] keyEntries;
  // Made when first needed, under the lock.
  private String[] names;
  private int[] modelIndex;
  private int knownKeys;
  private Map<String, Integer> nameIndex;
  private Map<String, MetricType> keyTable;
  private int[][] dicts; // per STRING_DICT key: (start, end) of each entry
  private String[][] dictStrings;

  // SHAPES: parsed lazily, in order.
  private final int shapeCount;
  private final int shapesEnd;
  private int shapesNext;
  private int[][] shapes = new int[1][];
  private int shapesParsed;
  private RankwireException shapesError;
  private long[] seenKeys;

  // ITEMS.
  private final int itemCount;
  private final long blockItems;
  private final int directory;
  private final int records;
  private final int recordsSize;

  private final Column values;
  private final Column logs; // null: no LOGS section
  private long decodedTotal; // raw bytes of the zstd blocks located so far

  private RankbinView(ByteString payload, Limits limits) {
    this.payload = payload;
    this.buf = payload.asReadOnlyByteBuffer().slice().order(ByteOrder.LITTLE_ENDIAN);
    this.limits = limits;
    final int n = buf.limit();
    if (n < HEADER_SIZE) {
      throw new TruncatedException(
          CONTEXT + ": payload of " + n + " bytes is shorter than the 8-byte header", 0);
    }
    if (buf.getInt(0) != MAGIC) {
      throw new FormatException(CONTEXT + ": bad magic: not a rankbin payload", 0);
    }
    final int major = buf.get(4) & 0xff;
    minor = buf.get(5) & 0xff;
    if (major != MAJOR_VERSION) {
      throw new UnsupportedVersionException(CONTEXT + ": format version " + major + "." + minor
          + " is not supported; this reader reads " + MAJOR_VERSION + ".x", 4);
    }
    // Sections: (start, end) by id.
    final int sectionCount = buf.getShort(6) & 0xffff;
    final int[] sections = new int[12];
    Arrays.fill(sections, -1);
    int p = HEADER_SIZE;
    for (int k = 0; k < sectionCount; k++) {
      if (n - p < 5) {
        throw new TruncatedException(CONTEXT + ": the header announces " + sectionCount
            + " sections; section " + (k + 1) + " is cut short", p);
      }
      final int id = buf.get(p) & 0xff;
      final long length = buf.getInt(p + 1) & 0xffffffffL;
      final int body = p + 5;
      if (length > n - body) {
        throw new TruncatedException(CONTEXT + ": the header announces " + sectionCount
            + " sections; section " + (k + 1) + " (" + length + " bytes) is cut short", body);
      }
      if (id >= 1 && id <= 5) {
        if (sections[2 * id] >= 0) {
          throw new FormatException(CONTEXT + ": section " + id + " appears twice", p);
        }
        sections[2 * id] = body;
        sections[2 * id + 1] = body + (int) length;
      }
      p = body + (int) length;
    }
    if (p != n) {
      throw new FormatException(CONTEXT + ": " + (n - p) + " bytes after the " + sectionCount
          + " sections the header announces", p);
    }
    for (int id : new int[] {KEYS, SHAPES, ITEMS, VALUES}) {
      if (sections[2 * id] < 0) {
        throw new FormatException(CONTEXT + ": missing " + SECTION_NAMES[id] + " section", -1);
      }
    }

    // KEYS: every entry checked now (FORMAT.md: a lazy reader checks the whole section).
    Cursor c = new Cursor(buf, sections[2 * KEYS], sections[2 * KEYS + 1], CONTEXT);
    keyCount = c.count(MIN_KEY_BYTES, "key count");
    keyEntries = new int[2 * keyCount];
    for (int k = 0; k < keyCount; k++) {
      final int a = c.lengthPrefixed("key entry");
      final int entryEnd = c.pos;
      Cursor e = new Cursor(buf, a, entryEnd, CONTEXT);
      final int code = e.u8("key type");
      e.lengthPrefixed("key name");
      if (code == STRING_DICT) {
        final int entries = e.count(1, "key dictionary");
        for (int j = 0; j < entries; j++) {
          e.lengthPrefixed("key dictionary");
        }
      }
      // Bytes of the entry after the params this reader knows are skipped.
      if ((code & 7) > 3) {
        throw new FormatException(
            CONTEXT + ": key " + k + " has reserved wire class " + (code & 7), a);
      }
      keyEntries[2 * k] = a;
      keyEntries[2 * k + 1] = entryEnd;
    }
    if (c.pos != c.end) {
      throw new FormatException(CONTEXT + ": " + c.remaining() + " bytes after the last key",
          c.pos);
    }

    // SHAPES: the count only.
    c = new Cursor(buf, sections[2 * SHAPES], sections[2 * SHAPES + 1], CONTEXT);
    shapeCount = c.count(1, "shape count");
    if (shapeCount == 0 && c.pos != c.end) {
      throw new FormatException(CONTEXT + ": " + c.remaining() + " bytes after the last shape",
          c.pos);
    }
    shapesNext = c.pos;
    shapesEnd = c.end;

    // ITEMS: the count, block size and directory length.
    c = new Cursor(buf, sections[2 * ITEMS], sections[2 * ITEMS + 1], CONTEXT);
    itemCount = c.count(MIN_ITEM_BYTES, "item count");
    blockItems = c.varint32("block items");
    if (blockItems == 0) {
      throw new FormatException(CONTEXT + ": block items is 0", c.pos - 1);
    }
    if (4L * itemCount > c.remaining()) {
      throw c.truncated("item directory", c.pos);
    }
    directory = c.pos;
    records = c.pos + 4 * itemCount;
    recordsSize = c.end - records;

    values = column(sections[2 * VALUES], sections[2 * VALUES + 1], "VALUES");
    logs = sections[2 * LOGS] < 0 ? null
        : column(sections[2 * LOGS], sections[2 * LOGS + 1], "LOGS");
  }

  /**
   * Opens {@code payload} with {@code limits}; FormatException (with the offset) when what
   * opening checks is malformed. The view keeps the ByteString; it never copies it.
   */
  public static RankbinView open(ByteString payload, Limits limits) {
    return new RankbinView(payload, limits);
  }

  public static RankbinView open(ByteString payload) {
    return new RankbinView(payload, Limits.DEFAULT);
  }

  /** The payload's minor format version. */
  public int minorVersion() {
    return minor;
  }

  /** How many consecutive items share a VALUES (and LOGS) block. */
  public long blockItems() {
    return blockItems;
  }

  private Column column(int start, int end, String name) {
    Cursor c = new Cursor(buf, start, end, CONTEXT);
    final int count = c.count(BLOCK_ENTRY_BYTES, "block count");
    final long expected = (itemCount + blockItems - 1) / blockItems;
    if (count != expected) {
      throw new FormatException(CONTEXT + ": " + name + " has " + count + " blocks; "
          + itemCount + " items in blocks of " + blockItems + " need " + expected, start);
    }
    return new Column(name, count, c.pos, end);
  }

  /** A VALUES or LOGS section: its block directory, located lazily under the view's lock. */
  private static final class Column {
    final String name;
    final int count;
    final int entries; // offset of entry 0
    final int end;
    int next; // where block `located` starts
    int located;
    int[] starts = new int[1];
    RankwireException error; // a broken entry: fails it and every later block
    Block[] blocks; // decoded blocks, by index (made on the first)
    RankwireException[] blockErrors;

    Column(String name, int count, int entries, int end) {
      this.name = name;
      this.count = count;
      this.entries = entries;
      this.end = end;
      this.next = entries + BLOCK_ENTRY_BYTES * count;
    }
  }

  /** A block's decoded bytes: buf[start, end) (the payload itself for a raw block). */
  private static final class Block {
    final ByteBuffer buf;
    final int start;
    final int end;
    // LOGS: the (start, end) of the entries read so far.
    int[] logBounds;
    int logCount;

    Block(ByteBuffer buf, int start, int end) {
      this.buf = buf;
      this.start = start;
      this.end = end;
    }
  }

  // Items -----------------------------------------------------------------

  @Override
  public int size() {
    return itemCount;
  }

  @Override
  public Item item(int i) {
    if (i < 0 || i >= itemCount) {
      throw new IndexOutOfBoundsException("item " + i + " out of range (" + itemCount + " items)");
    }
    final int d = directory + 4 * i;
    final long begin = buf.getInt(d) & 0xffffffffL;
    final long stop = i + 1 < itemCount ? buf.getInt(d + 4) & 0xffffffffL : recordsSize;
    if (begin > stop || stop > recordsSize) {
      throw new FormatException(CONTEXT + ": item directory entries " + i + " and " + (i + 1)
          + " (" + begin + ", " + stop + ") are out of order or past the records ("
          + recordsSize + " bytes)", d);
    }
    Cursor c = new Cursor(buf, records + (int) begin, records + (int) stop, CONTEXT);
    final int idStart = c.lengthPrefixed("item id");
    final int idEnd = c.pos;
    final double score = c.f64("item score");
    final long position = c.varint32("item position");
    final long shape = c.varint32("item shape");
    final long valuesOffset = c.varint32("item values offset");
    return new Item(this, i, score, position, idStart, idEnd, shape, valuesOffset, null, null);
  }

  @Override
  String id(Item item) {
    return text(buf, item.idStart, item.idEnd);
  }

  /** The bytes of item {@code i}'s id, exactly as written (a slice of the payload). */
  public ByteString idBytes(Item item) {
    return payload.substring(item.idStart, item.idEnd);
  }

  private String text(ByteBuffer b, int start, int end) {
    if (b == buf) {
      // A slice of the payload's ByteString decodes without another copy of its bytes.
      return payload.substring(start, end).toStringUtf8();
    }
    byte[] tmp = new byte[end - start];
    b.get(start, tmp, 0, tmp.length);
    return new String(tmp, StandardCharsets.UTF_8);
  }

  // Keys ------------------------------------------------------------------

  private int code(int k) {
    return buf.get(keyEntries[2 * k]) & 0xff;
  }

  private static MetricType modelType(int code) {
    switch (code) {
      case INT:
        return MetricType.INT;
      case FLOAT:
        return MetricType.FLOAT;
      case DOUBLE:
        return MetricType.DOUBLE;
      case STRING:
      case STRING_DICT:
        return MetricType.STRING;
      default:
        return null;
    }
  }

  /** Key names and indexes in the decoded key table (-1: a key of an unknown type). */
  private synchronized void ensureNames() {
    if (names != null) {
      return;
    }
    String[] n = new String[keyCount];
    int[] model = new int[keyCount];
    int known = 0;
    for (int k = 0; k < keyCount; k++) {
      Cursor e = new Cursor(buf, keyEntries[2 * k] + 1, keyEntries[2 * k + 1], CONTEXT);
      int a = e.lengthPrefixed("key name");
      n[k] = text(buf, a, e.pos);
      model[k] = modelType(code(k)) != null ? known++ : -1;
    }
    modelIndex = model;
    knownKeys = known;
    names = n;
  }

  String keyName(int k) {
    ensureNames();
    return names[k];
  }

  int keyModelIndex(int k) {
    ensureNames();
    return modelIndex[k];
  }

  /** Known key names to KEYS indexes; FormatException when a name repeats (FORMAT.md). */
  private synchronized Map<String, Integer> nameIndex() {
    if (nameIndex == null) {
      ensureNames();
      Map<String, Integer> index = new HashMap<>(2 * knownKeys);
      LinkedHashMap<String, MetricType> table = new LinkedHashMap<>(2 * knownKeys);
      for (int k = 0; k < keyCount; k++) {
        if (modelIndex[k] < 0) {
          continue;
        }
        if (index.put(names[k], k) != null) {
          // Java Strings of two different malformed UTF-8 names may be equal; FORMAT.md
          // compares bytes.
          if (sameNameBytes(index, k)) {
            throw new FormatException(
                CONTEXT + ": metric key \"" + names[k] + "\" appears twice", keyEntries[2 * k]);
          }
        }
        table.put(names[k], modelType(code(k)));
      }
      keyTable = table;
      nameIndex = index;
    }
    return nameIndex;
  }

  private boolean sameNameBytes(Map<String, Integer> index, int k) {
    for (int j = 0; j < k; j++) {
      if (modelIndex[j] >= 0 && names[j].equals(names[k])
          && nameSlice(j).equals(nameSlice(k))) {
        return true;
      }
    }
    return false;
  }

  private ByteString nameSlice(int k) {
    Cursor e = new Cursor(buf, keyEntries[2 * k] + 1, keyEntries[2 * k + 1], CONTEXT);
    int a = e.lengthPrefixed("key name");
    return payload.substring(a, e.pos);
  }

  @Override
  public Map<String, MetricType> keys() {
    nameIndex();
    return java.util.Collections.unmodifiableMap(keyTable);
  }

  /** Entry {@code index} of STRING_DICT key {@code k}'s dictionary. */
  private String dictString(int k, long index, int at) {
    String[] strings;
    int[] bounds;
    synchronized (this) {
      if (dicts == null) {
        dicts = new int[keyCount][];
        dictStrings = new String[keyCount][];
      }
      bounds = dicts[k];
      if (bounds == null) {
        Cursor e = new Cursor(buf, keyEntries[2 * k] + 1, keyEntries[2 * k + 1], CONTEXT);
        e.lengthPrefixed("key name");
        int entries = e.count(1, "key dictionary");
        bounds = new int[2 * entries];
        for (int j = 0; j < entries; j++) {
          bounds[2 * j] = e.lengthPrefixed("key dictionary");
          bounds[2 * j + 1] = e.pos;
        }
        dicts[k] = bounds;
        dictStrings[k] = new String[entries];
      }
      strings = dictStrings[k];
    }
    final int entries = strings.length;
    if (index < 0 || index >= entries) {
      throw new FormatException(CONTEXT + ": dictionary index " + Long.toUnsignedString(index)
          + " out of range (" + entries + " entries)", at);
    }
    final int j = (int) index;
    String s;
    synchronized (this) {
      s = strings[j];
      if (s == null) {
        s = strings[j] = text(buf, bounds[2 * j], bounds[2 * j + 1]);
      }
    }
    return s;
  }

  // Shapes ----------------------------------------------------------------

  /** Shape s's key indexes (KEYS indexes, in the order its values are written). */
  private int[] shape(long s, int item) {
    if (s >= shapeCount) {
      throw new FormatException(CONTEXT + ": item " + item + ": shape " + s + " out of range ("
          + shapeCount + " shapes)", -1);
    }
    synchronized (this) {
      if (s < shapesParsed) {
        return shapes[(int) s];
      }
      if (shapesError != null) {
        throw again(shapesError);
      }
      try {
        while (shapesParsed <= s) {
          parseNextShape();
        }
      } catch (FormatException e) {
        shapesError = e;
        throw e;
      }
      return shapes[(int) s];
    }
  }

  private void parseNextShape() {
    Cursor c = new Cursor(buf, shapesNext, shapesEnd, CONTEXT);
    final int n = c.count(1, "shape keys");
    if (n > keyCount) {
      throw new FormatException(CONTEXT + ": shape keys count " + n + " exceeds the " + keyCount
          + " possible indexes", shapesNext);
    }
    if (seenKeys == null) {
      seenKeys = new long[(keyCount + 63) / 64];
    }
    final int[] keys = new int[n];
    try {
      for (int j = 0; j < n; j++) {
        final int at = c.pos;
        final long k = c.varint32("shape keys");
        if (k >= keyCount) {
          throw new FormatException(
              CONTEXT + ": shape key index " + k + " out of range (" + keyCount + ")", at);
        }
        final int ki = (int) k;
        if ((seenKeys[ki >>> 6] & (1L << ki)) != 0) {
          throw new FormatException(CONTEXT + ": a shape repeats a key index", at);
        }
        seenKeys[ki >>> 6] |= 1L << ki;
        keys[j] = ki;
      }
    } finally {
      Arrays.fill(seenKeys, 0);
    }
    if (shapesParsed + 1 == shapeCount && c.pos != c.end) {
      throw new FormatException(CONTEXT + ": " + c.remaining() + " bytes after the last shape",
          c.pos);
    }
    shapesNext = c.pos;
    if (shapesParsed == shapes.length) {
      shapes = Arrays.copyOf(shapes, 2 * shapes.length);
    }
    shapes[shapesParsed++] = keys;
  }

  private static RankwireException again(RankwireException e) {
    // A sticky error thrown anew: the same class and message, this read's stack.
    if (e instanceof LimitException) {
      return new LimitException(e.getMessage());
    }
    FormatException f = (FormatException) e;
    String message = stripOffset(f);
    if (f instanceof TruncatedException) {
      return new TruncatedException(message, f.offset());
    }
    if (f instanceof ChecksumException) {
      return new ChecksumException(message, f.offset());
    }
    return new FormatException(message, f.offset());
  }

  private static String stripOffset(FormatException f) {
    String m = f.getMessage();
    String suffix = " at offset " + f.offset();
    return f.offset() >= 0 && m.endsWith(suffix) ? m.substring(0, m.length() - suffix.length())
        : m;
  }

  // Blocks ----------------------------------------------------------------

  /** Block b of {@code column}, located (with every entry before it) and decoded once. */
  private synchronized Block block(Column column, long bl) {
    final int b = (int) bl; // < column.count, an int
    if (column.blocks != null && column.blocks[b] != null) {
      return column.blocks[b];
    }
    if (column.blockErrors != null && column.blockErrors[b] != null) {
      throw again(column.blockErrors[b]);
    }
    locate(column, b);
    final int entry = column.entries + BLOCK_ENTRY_BYTES * b;
    final int codec = buf.get(entry) & 0xff;
    final int start = column.starts[b];
    final int stored = buf.getInt(entry + 1);
    final int raw = buf.getInt(entry + 5);
    Block out;
    if (codec == BLOCK_RAW) {
      out = new Block(buf, start, start + raw);
    } else {
      try {
        // From 1.1 every frame carries zstd's content checksum.
        ZstdFrames.checkBlockFrame(buf, start, stored, raw & 0xffffffffL, minor >= 1);
        byte[] decoded = ZstdFrames.decompressExact(buf, start, stored, raw);
        out = new Block(ByteBuffer.wrap(decoded).order(ByteOrder.LITTLE_ENDIAN), 0, raw);
      } catch (FormatException e) {
        if (column.blockErrors == null) {
          column.blockErrors = new RankwireException[column.count];
        }
        FormatException err = e instanceof ChecksumException
            ? new ChecksumException(CONTEXT + ": " + column.name + " block " + b + ": "
                + stripOffset(e), e.offset())
            : new FormatException(CONTEXT + ": " + column.name + " block " + b + ": "
                + stripOffset(e), e.offset());
        column.blockErrors[b] = err;
        throw err;
      }
    }
    if (column.blocks == null) {
      column.blocks = new Block[column.count];
    }
    column.blocks[b] = out;
    return out;
  }

  /** Locates blocks up to b: checks their entries, sizes and the zstd cap. Under the lock. */
  private void locate(Column column, int b) {
    if (b < column.located) {
      return;
    }
    if (column.error != null) {
      throw again(column.error);
    }
    try {
      while (column.located <= b) {
        final int ready = column.located;
        final int entry = column.entries + BLOCK_ENTRY_BYTES * ready;
        final int codec = buf.get(entry) & 0xff;
        final long stored = buf.getInt(entry + 1) & 0xffffffffL;
        final long raw = buf.getInt(entry + 5) & 0xffffffffL;
        if (codec == BLOCK_RAW) {
          if (stored != raw) {
            throw new FormatException(CONTEXT + ": " + column.name + " block " + ready
                + " is raw but its sizes differ (" + stored + " stored, " + raw + " raw)", entry);
          }
        } else if (codec == BLOCK_ZSTD) {
          if (raw > Integer.MAX_VALUE - 8) {
            throw new LimitException(CONTEXT + ": " + column.name + " block " + ready + " of "
                + raw + " bytes is larger than a Java array");
          }
          decodedTotal += raw;
          if (decodedTotal > limits.maxDecodedBytes()) {
            throw new LimitException(CONTEXT + ": compressed blocks would decode to more than "
                + limits.maxDecodedBytes() + " bytes");
          }
        } else {
          throw new FormatException(CONTEXT + ": " + column.name + " block " + ready
              + " has unknown codec " + codec, entry);
        }
        final int start = column.next;
        if (stored > column.end - start) {
          throw new TruncatedException(CONTEXT + ": " + column.name + " block " + ready
              + ": block data of " + stored + " bytes passes the end of its section ("
              + (column.end - start) + " bytes left)", start);
        }
        if (ready == column.starts.length) {
          column.starts = Arrays.copyOf(column.starts, 2 * ready);
        }
        column.starts[ready] = start;
        column.next = start + (int) stored;
        column.located = ready + 1;
      }
    } catch (FormatException | LimitException e) {
      column.error = e;
      throw e;
    }
  }

  // Metrics ---------------------------------------------------------------

  /** A cursor over item's values: its shape, its VALUES block, from its values offset. */
  private RankbinCursor cursor(Item item) {
    final int[] keys = shape(item.shape, item.index);
    final Block block = block(values, item.index / blockItems);
    if (item.valuesOffset > block.end - block.start) {
      throw new FormatException(CONTEXT + ": item " + item.index + " values offset "
          + item.valuesOffset + " is past its block (" + (block.end - block.start) + " bytes)",
          -1);
    }
    return new RankbinCursor(block.buf, block.start + (int) item.valuesOffset, block.end, keys);
  }

  @Override
  MetricCursor metrics(Item item) {
    return cursor(item);
  }

  @Override
  Object metric(Item item, String name) {
    Integer k = nameIndex().get(name);
    if (k == null) {
      return null;
    }
    RankbinCursor c = cursor(item);
    while (c.nextKey()) {
      if (c.keyIndex() == k) {
        c.readValue();
        return c.value();
      }
      c.skipValue();
    }
    return null;
  }

  /** Walks an item's values in its shape's order; keys of unknown types are skipped. */
  private final class RankbinCursor extends MetricCursor {
    private final Cursor in;
    private final int[] keys;
    private int j = -1;
    private int code;
    private long longValue;
    private double doubleValue;
    private float floatValue;
    private int stringStart;
    private int stringEnd;
    private String string;

    RankbinCursor(ByteBuffer b, int pos, int end, int[] keys) {
      this.in = new Cursor(b, pos, end, CONTEXT);
      this.keys = keys;
    }

    boolean nextKey() {
      if (j + 1 >= keys.length) {
        j = keys.length;
        return false;
      }
      j++;
      code = code(keys[j]);
      return true;
    }

    int keyIndex() {
      return keys[j];
    }

    void skipValue() {
      switch (code & 7) {
        case 0:
          in.varint("skipped value");
          break;
        case 1:
          in.skip(4, "skipped value");
          break;
        case 2:
          in.skip(8, "skipped value");
          break;
        default:
          in.lengthPrefixed("skipped value");
          break;
      }
    }

    void readValue() {
      string = null;
      switch (code) {
        case DOUBLE:
          doubleValue = in.f64("double value");
          break;
        case FLOAT:
          floatValue = in.f32("float value");
          break;
        case INT: {
          long v = in.varint("int value");
          longValue = (v >>> 1) ^ -(v & 1);
          break;
        }
        case STRING:
          stringStart = in.lengthPrefixed("string value");
          stringEnd = in.pos;
          break;
        case STRING_DICT: {
          final int at = in.pos;
          string = dictString(keys[j], in.varint("dictionary index"), at);
          break;
        }
        default:
          throw new IllegalStateException();
      }
    }

    @Override
    public boolean next() {
      while (nextKey()) {
        if (modelType(code) != null) {
          readValue();
          return true;
        }
        skipValue();
      }
      return false;
    }

    @Override
    public int key() {
      return keyModelIndex(keys[j]);
    }

    @Override
    public String name() {
      return keyName(keys[j]);
    }

    @Override
    public MetricType type() {
      return modelType(code);
    }

    @Override
    public long longValue() {
      check(INT);
      return longValue;
    }

    @Override
    public float floatValue() {
      check(FLOAT);
      return floatValue;
    }

    @Override
    public double doubleValue() {
      if (code == FLOAT) {
        return floatValue;
      }
      check(DOUBLE);
      return doubleValue;
    }

    @Override
    public String stringValue() {
      if (code == STRING_DICT) {
        return string;
      }
      check(STRING);
      if (string == null) {
        string = text(in.buf, stringStart, stringEnd);
      }
      return string;
    }

    int stringBytes() {
      return code == STRING ? stringEnd - stringStart : 0;
    }

    private void check(int want) {
      if (j < 0 || j >= keys.length) {
        throw new IllegalStateException("the cursor is not on a metric (call next() first)");
      }
      if (code != want) {
        throw new IllegalArgumentException("metric \"" + name() + "\" is a " + type() + ", not a "
            + modelType(want));
      }
    }
  }

  // Logs ------------------------------------------------------------------

  @Override
  String log(Item item) {
    if (logs == null) {
      return "";
    }
    final Block block = block(logs, item.index / blockItems);
    final int k = (int) (item.index % blockItems);
    int a;
    int z;
    synchronized (this) {
      if (block.logBounds == null) {
        block.logBounds = new int[2 * 4];
      }
      Cursor c = new Cursor(block.buf, block.logCount == 0 ? block.start
          : block.logBounds[2 * block.logCount - 1], block.end, CONTEXT);
      while (block.logCount <= k) {
        int s = c.lengthPrefixed("log");
        if (2 * block.logCount == block.logBounds.length) {
          block.logBounds = Arrays.copyOf(block.logBounds, 2 * block.logBounds.length);
        }
        block.logBounds[2 * block.logCount] = s;
        block.logBounds[2 * block.logCount + 1] = c.pos;
        block.logCount++;
      }
      a = block.logBounds[2 * k];
      z = block.logBounds[2 * k + 1];
    }
    return text(block.buf, a, z);
  }

  // Full decode -----------------------------------------------------------

  @Override
  public DecodedResult materialize() {
    final Map<String, MetricType> keyMap = keys(); // Checks the names are unique.
    // Every block located first: the whole directories and the zstd cap are checked before
    // any block is decoded.
    synchronized (this) {
      if (values.count > 0) {
        locate(values, values.count - 1);
      }
      if (logs != null && logs.count > 0) {
        locate(logs, logs.count - 1);
      }
    }
    final long[] budget = {0};
    final List<DecodedItem> items = new ArrayList<>(Math.min(itemCount, 1 << 16));
    for (int b = 0; b < values.count; b++) {
      Cursor logCursor = null;
      if (logs != null) {
        Block lb = block(logs, b);
        logCursor = new Cursor(lb.buf, lb.start, lb.end, CONTEXT);
      }
      final long first = b * blockItems;
      final long last = Math.min(itemCount, first + blockItems);
      for (long i = first; i < last; i++) {
        final Item item = item((int) i);
        final RankbinCursor c = cursor(item);
        charge(budget, (item.idEnd - item.idStart)
            + (long) MATERIALIZED_BYTES_PER_KEY * shape(item.shape, item.index).length);
        final Map<String, Object> metrics = new LinkedHashMap<>();
        long stringBytes = 0;
        while (c.next()) {
          stringBytes += c.stringBytes();
          metrics.put(c.name(), c.value());
        }
        charge(budget, stringBytes);
        String log = "";
        if (logCursor != null) {
          int a = logCursor.lengthPrefixed("log");
          charge(budget, logCursor.pos - a);
          log = text(logCursor.buf, a, logCursor.pos);
        }
        items.add(new DecodedItem(item.id(), item.score, item.position, metrics, log));
      }
    }
    // A full decode checks every shape, also those no item names.
    if (shapeCount > 0) {
      shape(shapeCount - 1, -1);
    }
    return new DecodedResult(keyMap, items);
  }

  private void charge(long[] budget, long n) {
    budget[0] += n;
    if (budget[0] > limits.maxMaterializedBytes()) {
      throw new LimitException(CONTEXT + ": the result would materialize to more than "
          + limits.maxMaterializedBytes() + " bytes");
    }
  }
}
