package io.rankwire;

import com.github.luben.zstd.ZstdDecompressCtx;
import com.google.protobuf.ByteString;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A rankbin or rankbin-zstd payload (docs/FORMAT.md, version 1.x) opened lazily, in place: the
 * payload's ByteString is read where it lies ({@link ByteSlice}), never copied.
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
 * <p>What it allocates: opening, the view, its per-key table (one int per key) and the column
 * directories; per item read, an {@link Item} (the view and two ints) and, when asked for, its
 * id String; per {@link Item#metrics()}, one cursor (or none: {@link MetricCursor#reset});
 * per shape read, its key indexes; per zstd block read, its decoded bytes; dictionary strings
 * and key names once. A full decode builds, per item, its {@link DecodedItem}, its id and log
 * Strings and one array of boxed values that a per-shape key table (shared) names.
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
  // Shapes of at most this many keys are checked for repeats without a bit set.
  private static final int SMALL_SHAPE = 64;

  // The payload: a[base, base + size), the bytes of source[sourceBase, ...).
  private final ByteString source;
  private final int sourceBase;
  private final byte[] a;
  private final int base;
  private final Limits limits;
  private final int minor;

  // KEYS: where each entry's length prefix is, from the section's start (entry keyCount: the
  // section's end); two bytes a key when the section is under 64 KiB, else four.
  private final int keyCount;
  private final int keysStart;
  private final char[] keyAt16;
  private final int[] keyAt32;
  // Made when first needed, under the lock (names: published by the volatile write).
  private volatile String[] names;
  private int[] modelIndex;
  private int knownKeys;
  private Map<String, Integer> nameIndex;
  private Map<String, MetricType> keyTable;
  // The STRING_DICT keys read so far: (key, where its first entry is) pairs, the entries made
  // Strings, and for large dictionaries every entry's (start, end).
  private int dictCount;
  private int[] dictAt;
  private String[][] dictStrings;
  private int[][] dictBounds;

  // SHAPES: checked lazily, in order; shapeAt[s] is where shape s's key count is.
  private final int shapeCount;
  private final int shapesEnd;
  private int shapesNext;
  private int[] shapeAt;
  private int shapesParsed;
  private RankwireException shapesError;

  // ITEMS.
  private final int itemCount;
  private final long blockItems;
  private final int directory;
  private final int records;
  private final int recordsSize;

  private final Column values;
  private final Column logs; // null: no LOGS section
  private long decodedTotal; // raw bytes of the zstd blocks located so far

  /** The payload a[base, base + n); {@code c} is a cursor to read it with (reused). */
  private RankbinView(ByteString source, int sourceBase, byte[] a, int base, int n,
      Limits limits, Cursor c) {
    this.source = source;
    this.sourceBase = sourceBase;
    this.a = a;
    this.base = base;
    this.limits = limits;
    final int end = base + n;
    if (n < HEADER_SIZE) {
      throw new TruncatedException(
          CONTEXT + ": payload of " + n + " bytes is shorter than the 8-byte header", 0);
    }
    if (Cursor.i32(a, base) != MAGIC) {
      throw new FormatException(CONTEXT + ": bad magic: not a rankbin payload", 0);
    }
    final int major = a[base + 4] & 0xff;
    minor = a[base + 5] & 0xff;
    if (major != MAJOR_VERSION) {
      throw new UnsupportedVersionException(CONTEXT + ": format version " + major + "." + minor
          + " is not supported; this reader reads " + MAJOR_VERSION + ".x", 4);
    }
    // Sections: (start, end) by id; -1: absent.
    final int sectionCount = (a[base + 6] & 0xff) | (a[base + 7] & 0xff) << 8;
    int keysAt = -1;
    int keysEnd = 0;
    int shapesAt = -1;
    int shapesEndAt = 0;
    int itemsAt = -1;
    int itemsEnd = 0;
    int valuesAt = -1;
    int valuesEnd = 0;
    int logsAt = -1;
    int logsEnd = 0;
    int p = base + HEADER_SIZE;
    for (int k = 0; k < sectionCount; k++) {
      if (end - p < 5) {
        throw new TruncatedException(CONTEXT + ": the header announces " + sectionCount
            + " sections; section " + (k + 1) + " is cut short", p - base);
      }
      final int id = a[p] & 0xff;
      final long length = Cursor.i32(a, p + 1) & 0xffffffffL;
      final int body = p + 5;
      if (length > end - body) {
        throw new TruncatedException(CONTEXT + ": the header announces " + sectionCount
            + " sections; section " + (k + 1) + " (" + length + " bytes) is cut short",
            body - base);
      }
      final int bodyEnd = body + (int) length;
      final boolean repeated;
      switch (id) {
        case KEYS:
          repeated = keysAt >= 0;
          keysAt = body;
          keysEnd = bodyEnd;
          break;
        case SHAPES:
          repeated = shapesAt >= 0;
          shapesAt = body;
          shapesEndAt = bodyEnd;
          break;
        case ITEMS:
          repeated = itemsAt >= 0;
          itemsAt = body;
          itemsEnd = bodyEnd;
          break;
        case VALUES:
          repeated = valuesAt >= 0;
          valuesAt = body;
          valuesEnd = bodyEnd;
          break;
        case LOGS:
          repeated = logsAt >= 0;
          logsAt = body;
          logsEnd = bodyEnd;
          break;
        default:
          repeated = false; // an unknown section: skipped
          break;
      }
      if (repeated) {
        throw new FormatException(CONTEXT + ": section " + id + " appears twice", p - base);
      }
      p = bodyEnd;
    }
    if (p != end) {
      throw new FormatException(CONTEXT + ": " + (end - p) + " bytes after the "
          + sectionCount + " sections the header announces", p - base);
    }
    requireSection(keysAt, "KEYS");
    requireSection(shapesAt, "SHAPES");
    requireSection(itemsAt, "ITEMS");
    requireSection(valuesAt, "VALUES");

    // KEYS: every entry checked now (FORMAT.md: a lazy reader checks the whole section).
    c.reset(a, base, keysAt, keysEnd, CONTEXT);
    keyCount = c.count(MIN_KEY_BYTES, "key count");
    keysStart = keysAt;
    keyAt16 = keysEnd - keysAt <= Character.MAX_VALUE ? new char[keyCount + 1] : null;
    keyAt32 = keyAt16 == null ? new int[keyCount + 1] : null;
    for (int k = 0; k < keyCount; k++) {
      setKeyAt(k, c.pos);
      final int entry = c.lengthPrefixed("key entry");
      final int entryEnd = c.pos;
      c.pos = entry;
      c.end = entryEnd;
      final int code = c.u8("key type");
      c.lengthPrefixed("key name");
      if (code == STRING_DICT) {
        final int entries = c.count(1, "key dictionary");
        for (int j = 0; j < entries; j++) {
          c.lengthPrefixed("key dictionary");
        }
      }
      // Bytes of the entry after the params this reader knows are skipped.
      if ((code & 7) > 3) {
        throw new FormatException(
            CONTEXT + ": key " + k + " has reserved wire class " + (code & 7), entry - base);
      }
      c.pos = entryEnd;
      c.end = keysEnd;
    }
    setKeyAt(keyCount, c.pos);
    if (c.pos != c.end) {
      throw c.corrupt(c.remaining() + " bytes after the last key", c.pos);
    }

    // SHAPES: the count only.
    c.reset(a, base, shapesAt, shapesEndAt);
    shapeCount = c.count(1, "shape count");
    if (shapeCount == 0 && c.pos != c.end) {
      throw c.corrupt(c.remaining() + " bytes after the last shape", c.pos);
    }
    shapesNext = c.pos;
    shapesEnd = c.end;

    // ITEMS: the count, block size and directory length.
    c.reset(a, base, itemsAt, itemsEnd);
    itemCount = c.count(MIN_ITEM_BYTES, "item count");
    blockItems = c.varint32("block items");
    if (blockItems == 0) {
      throw c.corrupt("block items is 0", c.pos - 1);
    }
    if (4L * itemCount > c.remaining()) {
      throw c.truncated("item directory", c.pos);
    }
    directory = c.pos;
    records = c.pos + 4 * itemCount;
    recordsSize = c.end - records;

    values = column(c, valuesAt, valuesEnd, "VALUES");
    logs = logsAt < 0 ? null : column(c, logsAt, logsEnd, "LOGS");
  }

  private void requireSection(int start, String name) {
    if (start < 0) {
      throw new FormatException(CONTEXT + ": missing " + name + " section", -1);
    }
  }

  /**
   * Opens {@code payload} with {@code limits}; FormatException (with the offset) when what
   * opening checks is malformed. The view reads the ByteString in place; it never copies it
   * (unless it is not one flat array: see {@link ByteSlice}).
   */
  public static RankbinView open(ByteString payload, Limits limits) {
    ByteSlice s = ByteSlice.of(payload);
    return new RankbinView(payload, 0, s.array, s.offset, s.length, limits,
        new Cursor(s.array, s.offset, s.offset, s.offset, CONTEXT));
  }

  public static RankbinView open(ByteString payload) {
    return open(payload, Limits.DEFAULT);
  }

  /**
   * The payload {@code slice.array[at, at + n)}, which is {@code source[sourceAt, ...)}, read
   * with the cursor {@code c} (whose state it replaces).
   */
  static RankbinView open(ByteString source, int sourceAt, ByteSlice slice, int at, int n,
      Limits limits, Cursor c) {
    return new RankbinView(source, sourceAt, slice.array, at, n, limits, c);
  }

  /** The payload's minor format version. */
  public int minorVersion() {
    return minor;
  }

  /** How many consecutive items share a VALUES (and LOGS) block. */
  public long blockItems() {
    return blockItems;
  }

  private Column column(Cursor c, int start, int end, String name) {
    c.reset(a, base, start, end);
    final int count = c.count(BLOCK_ENTRY_BYTES, "block count");
    final long expected = (itemCount + blockItems - 1) / blockItems;
    if (count != expected) {
      throw new FormatException(CONTEXT + ": " + name + " has " + count + " blocks; "
          + itemCount + " items in blocks of " + blockItems + " need " + expected, start - base);
    }
    return new Column(name, count, c.pos, end);
  }

  /**
   * A VALUES or LOGS section: its block directory, located lazily under the view's lock, and
   * its decoded zstd blocks.
   */
  private static final class Column {
    final String name;
    final int count;
    final int entries; // offset of entry 0
    final int end;
    int next; // where block `located` starts
    int located;
    int[] starts; // of the blocks located so far
    RankwireException error; // a broken entry: fails it and every later block
    byte[][] decoded; // zstd blocks decoded so far, by index (made on the first)
    RankwireException[] blockErrors;
    int[][] logBounds; // LOGS: per block, {count, start0, end0, start1, end1, ...}

    Column(String name, int count, int entries, int end) {
      this.name = name;
      this.count = count;
      this.entries = entries;
      this.end = end;
      this.next = entries + BLOCK_ENTRY_BYTES * count;
    }
  }

  // Items -----------------------------------------------------------------

  @Override
  public int size() {
    return itemCount;
  }

  /**
   * Item {@code i}: its directory entries and record are checked now (FormatException when
   * damaged) and read again, without checks, by its accessors.
   */
  @Override
  public Item item(int i) {
    if (i < 0 || i >= itemCount) {
      throw new IndexOutOfBoundsException("item " + i + " out of range (" + itemCount + " items)");
    }
    final long bounds = recordBounds(i);
    final int start = (int) (bounds >>> 32);
    final int end = (int) bounds;
    if (!recordIsWellFormed(start, end)) {
      readRecord(start, end); // throws what is wrong
      throw new IllegalStateException("item " + i + ": the record checks disagree");
    }
    return new Item(this, i, start);
  }

  /** Item i's record, {@code start << 32 | end}, from its directory entries (checked). */
  private long recordBounds(int i) {
    final int d = directory + 4 * i;
    final long begin = Cursor.i32(a, d) & 0xffffffffL;
    final long stop = i + 1 < itemCount ? Cursor.i32(a, d + 4) & 0xffffffffL : recordsSize;
    if (begin > stop || stop > recordsSize) {
      throw new FormatException(CONTEXT + ": item directory entries " + i + " and " + (i + 1)
          + " (" + begin + ", " + stop + ") are out of order or past the records ("
          + recordsSize + " bytes)", d - base);
    }
    return (long) (records + (int) begin) << 32 | (records + (int) stop);
  }

  /** The record a[start, end): an id, a score and three varint32s, within its bounds. */
  private boolean recordIsWellFormed(int start, int end) {
    long r = Cursor.varint32At(a, start, end);
    if ((int) r < 0 || (r >>> 32) > end - (int) r || end - ((int) r + (int) (r >>> 32)) < 8) {
      return false;
    }
    int p = (int) r + (int) (r >>> 32) + 8;
    for (int k = 0; k < 3; k++) {
      r = Cursor.varint32At(a, p, end);
      if ((int) r < 0) {
        return false;
      }
      p = (int) r;
    }
    return true;
  }

  private void readRecord(int start, int end) {
    Cursor c = new Cursor(a, base, start, end, CONTEXT);
    c.lengthPrefixed("item id");
    c.f64("item score");
    c.varint32("item position");
    c.varint32("item shape");
    c.varint32("item values offset");
  }

  // An item's record, read again (item() checked it): where the id's bytes start and end.
  private int idStart(Item item) {
    return (int) Cursor.varint32At(a, item.record, a.length);
  }

  private int idEnd(Item item) {
    long r = Cursor.varint32At(a, item.record, a.length);
    return (int) r + (int) (r >>> 32);
  }

  /** The three varint32s after the score: {@code k} 0 position, 1 shape, 2 values offset. */
  private long recordField(Item item, int k) {
    int p = idEnd(item) + 8;
    long r = Cursor.varint32At(a, p, a.length);
    for (int j = 0; j < k; j++) {
      r = Cursor.varint32At(a, (int) r, a.length);
    }
    return r >>> 32;
  }

  @Override
  String id(Item item) {
    final int s = idStart(item);
    return new String(a, s, idEnd(item) - s, StandardCharsets.UTF_8);
  }

  @Override
  double score(Item item) {
    return Double.longBitsToDouble(Cursor.i64(a, idEnd(item)));
  }

  @Override
  long position(Item item) {
    return recordField(item, 0);
  }

  /** The bytes of item {@code i}'s id, exactly as written (a slice of the payload). */
  public ByteString idBytes(Item item) {
    final int s = idStart(item);
    return source.substring(sourceBase + s - base, sourceBase + idEnd(item) - base);
  }

  private static String text(byte[] b, int start, int end) {
    return new String(b, start, end - start, StandardCharsets.UTF_8);
  }

  // Keys ------------------------------------------------------------------

  private void setKeyAt(int k, int pos) {
    if (keyAt16 != null) {
      keyAt16[k] = (char) (pos - keysStart);
    } else {
      keyAt32[k] = pos - keysStart;
    }
  }

  /** Where key k's entry is (its length prefix); k = keyCount: the section's end. */
  private int keyAt(int k) {
    return keysStart + (keyAt16 != null ? keyAt16[k] : keyAt32[k]);
  }

  /** Where key k's entry starts (its type byte) after its length prefix. */
  private int keyEntry(int k) {
    return Cursor.varintEnd(a, keyAt(k), keyAt(k + 1));
  }

  private int code(int k) {
    return a[keyEntry(k)] & 0xff;
  }

  /** A cursor over key k's entry after its type byte: its name, then its parameters. */
  private Cursor keyParams(int k) {
    return new Cursor(a, base, keyEntry(k) + 1, keyAt(k + 1), CONTEXT);
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
  private String[] names() {
    String[] n = names;
    return n != null ? n : makeNames();
  }

  private synchronized String[] makeNames() {
    if (names != null) {
      return names;
    }
    String[] n = new String[keyCount];
    int[] model = new int[keyCount];
    int known = 0;
    for (int k = 0; k < keyCount; k++) {
      Cursor e = keyParams(k);
      int s = e.lengthPrefixed("key name");
      n[k] = text(a, s, e.pos);
      model[k] = modelType(code(k)) != null ? known++ : -1;
    }
    modelIndex = model;
    knownKeys = known;
    names = n;
    return n;
  }

  String keyName(int k) {
    return names()[k];
  }

  int keyModelIndex(int k) {
    names();
    return modelIndex[k];
  }

  /** Known key names to KEYS indexes; FormatException when a name repeats (FORMAT.md). */
  private synchronized Map<String, Integer> nameIndex() {
    if (nameIndex == null) {
      final String[] n = names();
      Map<String, Integer> index = new HashMap<>(2 * knownKeys);
      LinkedHashMap<String, MetricType> table = new LinkedHashMap<>(2 * knownKeys);
      for (int k = 0; k < keyCount; k++) {
        if (modelIndex[k] < 0) {
          continue;
        }
        if (index.put(n[k], k) != null) {
          // Java Strings of two different malformed UTF-8 names may be equal; FORMAT.md
          // compares bytes.
          if (sameNameBytes(k)) {
            throw new FormatException(CONTEXT + ": metric key \"" + n[k] + "\" appears twice",
                keyAt(k) - base);
          }
        }
        table.put(n[k], modelType(code(k)));
      }
      keyTable = table;
      nameIndex = index;
    }
    return nameIndex;
  }

  private boolean sameNameBytes(int k) {
    for (int j = 0; j < k; j++) {
      if (modelIndex[j] >= 0 && names[j].equals(names[k])
          && nameSlice(j).equals(nameSlice(k))) {
        return true;
      }
    }
    return false;
  }

  private ByteString nameSlice(int k) {
    Cursor e = keyParams(k);
    int s = e.lengthPrefixed("key name");
    return ByteString.copyFrom(a, s, e.pos - s);
  }

  @Override
  public Map<String, MetricType> keys() {
    nameIndex();
    return java.util.Collections.unmodifiableMap(keyTable);
  }

  /** Entry {@code index} of STRING_DICT key {@code k}'s dictionary. */
  private synchronized String dictString(int k, long index, int at) {
    int d = 0;
    while (d < dictCount && dictAt[2 * d] != k) {
      d++;
    }
    if (d == dictCount) {
      addDictionary(k);
    }
    final String[] strings = dictStrings[d];
    if (index < 0 || index >= strings.length) {
      throw new FormatException(CONTEXT + ": dictionary index " + Long.toUnsignedString(index)
          + " out of range (" + strings.length + " entries)", at);
    }
    final int j = (int) index;
    String s = strings[j];
    if (s == null) {
      final int end = keyAt(k + 1);
      int[] bounds = dictBounds == null ? null : dictBounds[d];
      long r;
      if (bounds != null) {
        s = text(a, bounds[2 * j], bounds[2 * j + 1]);
      } else {
        // A small dictionary: walked to its entry (checked on opening).
        r = Cursor.varint32At(a, dictAt[2 * d + 1], end);
        for (int i = 0; i < j; i++) {
          r = Cursor.varint32At(a, (int) r + (int) (r >>> 32), end);
        }
        s = text(a, (int) r, (int) r + (int) (r >>> 32));
      }
      strings[j] = s;
    }
    return s;
  }

  private static final int SMALL_DICTIONARY = 8;

  /** How many entries STRING_DICT key k's dictionary has (checked on opening). */
  private int dictionarySize(int k) {
    final int end = keyAt(k + 1);
    long r = Cursor.varint32At(a, keyEntry(k) + 1, end);
    r = Cursor.varint32At(a, (int) r + (int) (r >>> 32), end);
    return (int) (r >>> 32);
  }

  /** Adds STRING_DICT key k's dictionary as {@code dictCount}. Under the lock. */
  private void addDictionary(int k) {
    final int d = dictCount;
    if (dictAt == null) {
      dictAt = new int[2 * 4];
      dictStrings = new String[4][];
    } else if (d == dictStrings.length) {
      dictAt = Arrays.copyOf(dictAt, 4 * d);
      dictStrings = Arrays.copyOf(dictStrings, 2 * d);
      if (dictBounds != null) {
        dictBounds = Arrays.copyOf(dictBounds, 2 * d);
      }
    }
    // The entry was checked on opening: its name, then the count and the entries.
    final int end = keyAt(k + 1);
    long r = Cursor.varint32At(a, keyEntry(k) + 1, end);
    r = Cursor.varint32At(a, (int) r + (int) (r >>> 32), end);
    final int entries = (int) (r >>> 32);
    dictAt[2 * d] = k;
    dictAt[2 * d + 1] = (int) r;
    dictStrings[d] = new String[entries];
    if (entries > SMALL_DICTIONARY) {
      final int[] bounds = new int[2 * entries];
      int p = (int) r;
      for (int j = 0; j < bounds.length; j += 2) {
        r = Cursor.varint32At(a, p, end);
        bounds[j] = (int) r;
        p = bounds[j + 1] = (int) r + (int) (r >>> 32);
      }
      if (dictBounds == null) {
        dictBounds = new int[dictStrings.length][];
      }
      dictBounds[d] = bounds;
    }
    dictCount = d + 1;
  }

  // Shapes ----------------------------------------------------------------

  /**
   * Where shape s's key count is (its key indexes follow), the shape and every one before it
   * checked: FormatException when one is damaged (and for every later shape after that).
   */
  private int shape(long s, int item) {
    if (s >= shapeCount) {
      throw new FormatException(CONTEXT + ": item " + item + ": shape " + s + " out of range ("
          + shapeCount + " shapes)", -1);
    }
    synchronized (this) {
      if (s < shapesParsed) {
        return shapeAt[(int) s];
      }
      if (shapesError != null) {
        throw again(shapesError);
      }
      try {
        while (shapesParsed <= s) {
          checkNextShape();
        }
      } catch (FormatException e) {
        shapesError = e;
        throw e;
      }
      return shapeAt[(int) s];
    }
  }

  /** Shape s's key indexes, from where {@link #shape} says it is. */
  private int[] shapeKeys(int at) {
    long r = Cursor.varint32At(a, at, shapesEnd);
    final int[] keys = new int[(int) (r >>> 32)];
    int p = (int) r;
    for (int j = 0; j < keys.length; j++) {
      r = Cursor.varint32At(a, p, shapesEnd);
      keys[j] = (int) (r >>> 32);
      p = (int) r;
    }
    return keys;
  }

  private void checkNextShape() {
    final Cursor c = new Cursor(a, base, shapesNext, shapesEnd, CONTEXT);
    final int n = c.count(1, "shape keys");
    if (n > keyCount) {
      throw c.corrupt("shape keys count " + n + " exceeds the " + keyCount
          + " possible indexes", shapesNext);
    }
    final long[] seen = n > SMALL_SHAPE ? new long[(keyCount + 63) / 64] : null;
    final int first = c.pos;
    for (int j = 0; j < n; j++) {
      final int at = c.pos;
      final long k = c.varint32("shape keys");
      if (k >= keyCount) {
        throw c.corrupt("shape key index " + k + " out of range (" + keyCount + ")", at);
      }
      final int ki = (int) k;
      if (seen != null ? (seen[ki >>> 6] & (1L << ki)) != 0 : repeats(first, at, ki)) {
        throw c.corrupt("a shape repeats a key index", at);
      }
      if (seen != null) {
        seen[ki >>> 6] |= 1L << ki;
      }
    }
    if (shapesParsed + 1 == shapeCount && c.pos != c.end) {
      throw c.corrupt(c.remaining() + " bytes after the last shape", c.pos);
    }
    if (shapeAt == null) {
      shapeAt = new int[Math.min(shapeCount, 4)];
    } else if (shapesParsed == shapeAt.length) {
      shapeAt = Arrays.copyOf(shapeAt, 2 * shapeAt.length);
    }
    shapeAt[shapesParsed++] = shapesNext;
    shapesNext = c.pos;
  }

  /** Whether key index k is among the (checked) varints a[from, to). */
  private boolean repeats(int from, int to, int k) {
    for (int p = from; p < to; ) {
      long r = Cursor.varint32At(a, p, to);
      if ((r >>> 32) == k) {
        return true;
      }
      p = (int) r;
    }
    return false;
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

  /**
   * Block b of {@code column}, located (with every entry before it) and decoded once: the
   * payload for a raw block (from {@link #blockStart}), its decoded bytes for a zstd block.
   */
  private byte[] block(Column column, int b) {
    return block(column, b, null);
  }

  /** As {@link #block(Column, int)}, decoding with {@code ctx} (null: a new context). */
  private synchronized byte[] block(Column column, int b, ZstdDecompressCtx ctx) {
    if (column.decoded != null && column.decoded[b] != null) {
      return column.decoded[b];
    }
    if (column.blockErrors != null && column.blockErrors[b] != null) {
      throw again(column.blockErrors[b]);
    }
    locate(column, b);
    final int entry = column.entries + BLOCK_ENTRY_BYTES * b;
    if ((a[entry] & 0xff) == BLOCK_RAW) {
      return a;
    }
    final int start = column.starts[b];
    final int stored = Cursor.i32(a, entry + 1);
    final int raw = Cursor.i32(a, entry + 5);
    byte[] out;
    try {
      // From 1.1 every frame carries zstd's content checksum.
      ZstdFrames.checkBlockFrame(a, start, stored, raw & 0xffffffffL, minor >= 1, base);
      out = ZstdFrames.decompressExact(a, start, stored, raw, base, ctx);
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
    if (column.decoded == null) {
      column.decoded = new byte[column.count][];
    }
    column.decoded[b] = out;
    return out;
  }

  /** Where block b's bytes start in {@code data} (what {@link #block} returned). */
  private int blockStart(Column column, int b, byte[] data) {
    return data == a ? startOf(column, b) : 0;
  }

  private synchronized int startOf(Column column, int b) {
    return column.starts[b];
  }

  /** Block b's raw size (located blocks only: checked to fit). */
  private int blockSize(Column column, int b) {
    return Cursor.i32(a, column.entries + BLOCK_ENTRY_BYTES * b + 5);
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
        final int codec = a[entry] & 0xff;
        final long stored = Cursor.i32(a, entry + 1) & 0xffffffffL;
        final long raw = Cursor.i32(a, entry + 5) & 0xffffffffL;
        if (codec == BLOCK_RAW) {
          if (stored != raw) {
            throw new FormatException(CONTEXT + ": " + column.name + " block " + ready
                + " is raw but its sizes differ (" + stored + " stored, " + raw + " raw)",
                entry - base);
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
              + " has unknown codec " + codec, entry - base);
        }
        final int start = column.next;
        if (stored > column.end - start) {
          throw new TruncatedException(CONTEXT + ": " + column.name + " block " + ready
              + ": block data of " + stored + " bytes passes the end of its section ("
              + (column.end - start) + " bytes left)", start - base);
        }
        if (column.starts == null) {
          column.starts = new int[Math.min(column.count, 4)];
        } else if (ready == column.starts.length) {
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

  @Override
  MetricCursor metrics(Item item) {
    RankbinCursor c = new RankbinCursor();
    c.reset(item);
    return c;
  }

  @Override
  Object metric(Item item, String name) {
    Integer k = nameIndex().get(name);
    if (k == null) {
      return null;
    }
    RankbinCursor c = new RankbinCursor();
    c.reset(item);
    while (c.nextKey()) {
      if (c.keyIndex == k) {
        c.readValue();
        return c.value();
      }
      c.skipValue();
    }
    return null;
  }

  /**
   * Walks an item's values in its shape's order (its shape, its VALUES block, from its values
   * offset); keys of unknown types are skipped. Reads with {@link Cursor}'s static readers, so
   * that a walk allocates nothing but the strings asked for.
   */
  private final class RankbinCursor extends MetricCursor {
    private byte[] b; // the block's bytes
    private int pos;
    private int end;
    // The shape's key indexes (checked varints) still to walk, and the current one.
    private int shapePos;
    private int keysLeft = -1;
    private int keyIndex = -1;
    private int code;
    // INT, FLOAT, DOUBLE: the value's bits; STRING: start << 32 | end; STRING_DICT: the index.
    private long bits;

    @Override
    public MetricCursor reset(Item it) {
      if (it.view != RankbinView.this) {
        throw new IllegalArgumentException("the item is not of this cursor's view");
      }
      long valuesOffset = recordField(it, 2);
      int at = shape(recordField(it, 1), it.index);
      int bl = (int) (it.index / blockItems);
      byte[] data = block(values, bl);
      int start = blockStart(values, bl, data);
      int size = blockSize(values, bl);
      if (valuesOffset > size) {
        throw new FormatException(CONTEXT + ": item " + it.index + " values offset "
            + valuesOffset + " is past its block (" + size + " bytes)", -1);
      }
      long r = Cursor.varint32At(a, at, shapesEnd);
      b = data;
      pos = start + (int) valuesOffset;
      end = start + size;
      shapePos = (int) r;
      keysLeft = (int) (r >>> 32);
      keyIndex = -1;
      return this;
    }

    boolean nextKey() {
      if (keysLeft <= 0) {
        keyIndex = -1;
        return false;
      }
      keysLeft--;
      byte x = a[shapePos];
      if (x >= 0) {
        keyIndex = x;
        shapePos++;
      } else {
        long r = Cursor.varint32At(a, shapePos, shapesEnd);
        keyIndex = (int) (r >>> 32);
        shapePos = (int) r;
      }
      code = code(keyIndex);
      return true;
    }

    private int errorBase() {
      return b == a ? base : 0;
    }

    /** Steps over the varint at pos; the Cursor's error when it is malformed. */
    private long varint(String what) {
      int q = Cursor.varintEnd(b, pos, end);
      if (q < 0) {
        new Cursor(b, errorBase(), pos, end, CONTEXT).varint(what);
        throw new IllegalStateException(); // varint() threw
      }
      long v = Cursor.varintValue(b, pos);
      pos = q;
      return v;
    }

    private void need(int n, String what) {
      if (end - pos < n) {
        throw new TruncatedException(CONTEXT + ": truncated " + what, pos - errorBase());
      }
    }

    void skipValue() {
      switch (code & 7) {
        case 0:
          varint("skipped value");
          break;
        case 1:
          need(4, "skipped value");
          pos += 4;
          break;
        case 2:
          need(8, "skipped value");
          pos += 8;
          break;
        default:
          lengthPrefixed("skipped value");
          break;
      }
    }

    private void lengthPrefixed(String what) {
      final int at = pos;
      long n = varint(what);
      if (n < 0 || n > end - pos) {
        throw new TruncatedException(CONTEXT + ": truncated " + what + " of "
            + Long.toUnsignedString(n) + " bytes", at - errorBase());
      }
      bits = (long) pos << 32 | (pos + (int) n);
      pos += (int) n;
    }

    void readValue() {
      switch (code) {
        case DOUBLE:
          need(8, "double value");
          bits = Cursor.i64(b, pos);
          pos += 8;
          break;
        case FLOAT:
          need(4, "float value");
          bits = Cursor.i32(b, pos);
          pos += 4;
          break;
        case INT: {
          long v = varint("int value");
          bits = (v >>> 1) ^ -(v & 1);
          break;
        }
        case STRING:
          lengthPrefixed("string value");
          break;
        case STRING_DICT: {
          final int at = pos - errorBase();
          bits = varint("dictionary index");
          dictString(keyIndex, bits, at); // checks the index
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
      onMetric();
      return keyModelIndex(keyIndex);
    }

    @Override
    public String name() {
      onMetric();
      return keyName(keyIndex);
    }

    @Override
    public MetricType type() {
      return modelType(code);
    }

    @Override
    public long longValue() {
      check(INT);
      return bits;
    }

    @Override
    public float floatValue() {
      check(FLOAT);
      return Float.intBitsToFloat((int) bits);
    }

    @Override
    public double doubleValue() {
      if (code == FLOAT && keyIndex >= 0) {
        return Float.intBitsToFloat((int) bits);
      }
      check(DOUBLE);
      return Double.longBitsToDouble(bits);
    }

    /** A STRING's value: a dictionary's String (made once per view), or a new String. */
    @Override
    public String stringValue() {
      if (code == STRING_DICT && keyIndex >= 0) {
        return dictString(keyIndex, bits, -1);
      }
      check(STRING);
      return text(b, (int) (bits >>> 32), (int) bits);
    }

    private void onMetric() {
      if (keyIndex < 0) {
        throw new IllegalStateException("the cursor is not on a metric (call next() first)");
      }
    }

    private void check(int want) {
      onMetric();
      if (code != want) {
        throw new IllegalArgumentException("metric \"" + name() + "\" is a " + type()
            + ", not a " + modelType(want));
      }
    }
  }

  // Logs ------------------------------------------------------------------

  @Override
  String log(Item item) {
    if (logs == null) {
      return "";
    }
    final int bl = (int) (item.index / blockItems);
    final byte[] data = block(logs, bl);
    final int k = (int) (item.index % blockItems);
    int s;
    int z;
    synchronized (this) {
      if (logs.logBounds == null) {
        logs.logBounds = new int[logs.count][];
      }
      int[] bounds = logs.logBounds[bl];
      if (bounds == null) {
        bounds = logs.logBounds[bl] = new int[1 + 2 * 4];
      }
      final int start = blockStart(logs, bl, data);
      final int count = bounds[0];
      Cursor c = new Cursor(data, data == a ? base : 0,
          count == 0 ? start : bounds[2 * count], start + blockSize(logs, bl), CONTEXT);
      while (bounds[0] <= k) {
        int from = c.lengthPrefixed("log");
        int n = bounds[0];
        if (2 * n + 3 > bounds.length) {
          bounds = logs.logBounds[bl] = Arrays.copyOf(bounds, 2 * bounds.length);
        }
        bounds[2 * n + 1] = from;
        bounds[2 * n + 2] = c.pos;
        bounds[0] = n + 1;
      }
      s = bounds[2 * k + 1];
      z = bounds[2 * k + 2];
    }
    return text(data, s, z);
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
    final Decoder d = new Decoder();
    final List<DecodedItem> items = new ArrayList<>(Math.min(itemCount, 1 << 16));
    try {
      for (int bl = 0; bl < values.count; bl++) {
        decodeBlock(d, bl, items);
      }
    } finally {
      if (d.zstd != null) {
        d.zstd.close();
      }
    }
    // A full decode checks every shape, also those no item names.
    if (shapeCount > 0) {
      shape(shapeCount - 1, -1);
    }
    return new DecodedResult(keyMap, items);
  }

  /** Block bl's items, decoded into {@code items}. */
  private void decodeBlock(Decoder d, int bl, List<DecodedItem> items) {
    if (logs != null) {
      byte[] lb = block(logs, bl, d.zstd(logs, bl));
      int ls = blockStart(logs, bl, lb);
      d.log.reset(lb, lb == a ? base : 0, ls, ls + blockSize(logs, bl));
    }
    final byte[] vb = block(values, bl, d.zstd(values, bl));
    final int vs = blockStart(values, bl, vb);
    final int ve = vs + blockSize(values, bl);
    final long first = bl * blockItems;
    final long last = Math.min(itemCount, first + blockItems);
    for (long i = first; i < last; i++) {
      items.add(d.item((int) i, vb, vs, ve));
    }
  }

  /** A full decode's state: one cursor per column, the per-shape key tables, the budget. */
  private final class Decoder {
    final Cursor in = new Cursor(a, base, 0, 0, CONTEXT);
    final Cursor log = new Cursor(a, base, 0, 0, CONTEXT);
    final String[] keyNames = names();
    MetricMap.Keys[] tables = new MetricMap.Keys[Math.min(shapeCount, 8)];
    long budget;
    ZstdDecompressCtx zstd; // made for the first zstd block, closed by materialize()
    // Dictionaries' entries as Strings, by key (made on the first), so that a value takes no lock.
    String[][] dicts;

    /** The context to decode block b of {@code column} with: null unless it is zstd. */
    ZstdDecompressCtx zstd(Column column, int b) {
      if ((a[column.entries + BLOCK_ENTRY_BYTES * b] & 0xff) != BLOCK_ZSTD) {
        return null;
      }
      if (zstd == null) {
        zstd = new ZstdDecompressCtx();
      }
      return zstd;
    }

    /** Entry {@code index} of dictionary key k; FormatException when out of range. */
    String dict(int k, long index, int at) {
      if (dicts == null) {
        dicts = new String[keyCount][];
      }
      String[] d = dicts[k];
      if (d != null && index >= 0 && index < d.length && d[(int) index] != null) {
        return d[(int) index];
      }
      String s = dictString(k, index, at); // checks the index
      if (d == null) {
        d = dicts[k] = new String[dictionarySize(k)];
      }
      d[(int) index] = s;
      return s;
    }

    DecodedItem item(int i, byte[] vb, int vs, int ve) {
      // The record, with item()'s checks.
      final long bounds = recordBounds(i);
      Cursor c = in.reset(a, base, (int) (bounds >>> 32), (int) bounds);
      final int idStart = c.lengthPrefixed("item id");
      final int idEnd = c.pos;
      final double score = c.f64("item score");
      final long position = c.varint32("item position");
      final long shapeId = c.varint32("item shape");
      final long valuesOffset = c.varint32("item values offset");
      final MetricMap.Keys table = table(shapeId, i);
      if (valuesOffset > ve - vs) {
        throw new FormatException(CONTEXT + ": item " + i + " values offset " + valuesOffset
            + " is past its block (" + (ve - vs) + " bytes)", -1);
      }
      charge((idEnd - idStart) + (long) MATERIALIZED_BYTES_PER_KEY * table.codes.length);
      c = in.reset(vb, vb == a ? base : 0, vs + (int) valuesOffset, ve);
      final Object[] v = new Object[table.names.length];
      final byte[] codes = table.codes;
      final int[] keys = table.keys;
      long stringBytes = 0;
      int slot = 0;
      for (int j = 0; j < codes.length; j++) {
        switch (codes[j]) {
          case DOUBLE:
            v[slot++] = c.f64("double value");
            break;
          case FLOAT:
            v[slot++] = c.f32("float value");
            break;
          case INT: {
            long x = c.varint("int value");
            v[slot++] = (x >>> 1) ^ -(x & 1);
            break;
          }
          case STRING: {
            int s = c.lengthPrefixed("string value");
            stringBytes += c.pos - s;
            v[slot++] = text(vb, s, c.pos);
            break;
          }
          case STRING_DICT: {
            final int at = c.pos - c.base;
            v[slot++] = dict(keys[j], c.varint("dictionary index"), at);
            break;
          }
          default:
            skip(c, codes[j]);
            break;
        }
      }
      charge(stringBytes);
      String logText = "";
      if (logs != null) {
        int s = log.lengthPrefixed("log");
        charge(log.pos - s);
        logText = text(log.a, s, log.pos);
      }
      return new DecodedItem(text(a, idStart, idEnd), score, position, new MetricMap(table, v),
          logText);
    }

    private void skip(Cursor c, int code) {
      switch (code & 7) {
        case 0:
          c.varint("skipped value");
          break;
        case 1:
          c.skip(4, "skipped value");
          break;
        case 2:
          c.skip(8, "skipped value");
          break;
        default:
          c.lengthPrefixed("skipped value");
          break;
      }
    }

    /** Shape s's key table: its known keys' names, and every key's code, made once. */
    MetricMap.Keys table(long s, int item) {
      final int at = shape(s, item); // checks s < shapeCount
      final int si = (int) s;
      if (si >= tables.length) {
        tables = Arrays.copyOf(tables, Math.max(si + 1, 2 * tables.length));
      }
      MetricMap.Keys t = tables[si];
      if (t == null) {
        final int[] keys = shapeKeys(at);
        byte[] codes = new byte[keys.length];
        int known = 0;
        for (int j = 0; j < keys.length; j++) {
          codes[j] = (byte) code(keys[j]);
          known += modelType(codes[j] & 0xff) != null ? 1 : 0;
        }
        String[] n = new String[known];
        for (int j = 0, slot = 0; j < keys.length; j++) {
          if (modelType(codes[j] & 0xff) != null) {
            n[slot++] = keyNames[keys[j]];
          }
        }
        t = tables[si] = new MetricMap.Keys(n, codes, keys);
      }
      return t;
    }

    void charge(long n) {
      budget += n;
      if (budget > limits.maxMaterializedBytes()) {
        throw new LimitException(CONTEXT + ": the result would materialize to more than "
            + limits.maxMaterializedBytes() + " bytes");
      }
    }
  }
}
