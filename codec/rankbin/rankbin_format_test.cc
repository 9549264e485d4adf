// Tests of the rankbin wire format against its specification, docs/FORMAT.md:
// the worked example byte for byte (read from FORMAT.md itself, so the page
// and the code cannot drift apart), the compatibility rules, and each
// malformed payload the "Validity" section lists. Payloads that a writer
// never produces are built by hand with coding::Writer.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <numeric>
#include <optional>
#include <random>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "codec/builtin_codecs.h"
#include "codec/codec.h"
#include "codec/coding.h"
#include "codec/compression.h"
#include "codec/rank_result.h"
#include "codec/rankbin/format.h"
#include "codec/rankbin/rankbin_codec.h"
#include "codec/rankbin/reader.h"
#include "codec/rankbin/serializers.h"
#include "codec/rankbin/writer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/row_result.h"

namespace rankwire::rankbin {
namespace {

using test::RowResult;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Payload construction -----------------------------------------------------

// Appends little-endian pieces through coding::Writer.
class Bytes {
 public:
  Bytes& Varint(uint64_t v) {
    return Put(coding::VarintLength(v), [&](coding::Writer& w) { w.PutVarint64(v); });
  }
  Bytes& U8(uint8_t v) {
    return Put(1, [&](coding::Writer& w) { w.PutByte(v); });
  }
  Bytes& U16(uint16_t v) { return U8(v & 0xff).U8(v >> 8); }
  Bytes& U32(uint32_t v) {
    return Put(4, [&](coding::Writer& w) { w.PutFixed32(v); });
  }
  Bytes& F64(double v) {
    return Put(8, [&](coding::Writer& w) { w.PutDouble(v); });
  }
  Bytes& Raw(absl::string_view s) {
    return Put(s.size(), [&](coding::Writer& w) { w.PutBytes(s); });
  }
  Bytes& Str(absl::string_view s) { return Varint(s.size()).Raw(s); }
  const std::string& str() const { return s_; }
  operator std::string() const { return s_; }  // NOLINT: builder sugar.

 private:
  template <typename F>
  Bytes& Put(size_t n, F write) {
    const size_t at = s_.size();
    s_.resize(at + n);
    coding::Writer w(s_.data() + at, s_.data() + at + n);
    write(w);
    EXPECT_EQ(w.written(), n);
    return *this;
  }
  std::string s_;
};

struct KeySpec {
  uint8_t code;
  std::string name;
  std::vector<std::string> dict = {};
  std::string extra = {};  // Trailing bytes a newer minor version might add.
};

struct ItemSpec {
  std::string id;
  double score;
  uint32_t position;
  uint32_t shape;
  uint32_t values_offset;
  std::string extra = {};
  std::optional<std::string> raw = {};  // The whole record, when set.
};

struct BlockSpec {
  uint8_t codec;
  std::string stored;
  uint32_t raw_size;
  static BlockSpec Raw(std::string bytes) {
    const uint32_t n = static_cast<uint32_t>(bytes.size());
    return {static_cast<uint8_t>(BlockCodec::kRaw), std::move(bytes), n};
  }
  // A frame as writers of 1.1 make it: content size and checksum declared.
  static BlockSpec Zstd(const std::string& raw, bool checksum = true) {
    std::string frame(compression::ZstdBound(raw.size()), '\0');
    absl::StatusOr<size_t> n =
        compression::ZstdCompressInto(raw, 1, frame.data(), frame.size(), checksum);
    EXPECT_TRUE(n.ok());
    frame.resize(n.ok() ? *n : 0);
    return {static_cast<uint8_t>(BlockCodec::kZstd), frame, static_cast<uint32_t>(raw.size())};
  }
};

// A rankbin payload as its parts, so a test can change one and rebuild.
struct Payload {
  std::string magic = "RKWB";
  uint8_t major = 1;
  uint8_t minor = 1;
  std::optional<uint16_t> section_count;  // Computed unless set.
  std::vector<KeySpec> keys;
  std::vector<std::vector<uint32_t>> shapes;
  uint32_t block_items = 16;
  std::vector<ItemSpec> items;
  std::optional<std::vector<uint32_t>> directory;  // Computed unless set.
  std::vector<BlockSpec> values;
  std::optional<std::vector<BlockSpec>> logs;

  std::string Header(uint16_t sections) const {
    return Bytes().Raw(magic).U8(major).U8(minor).U16(section_count.value_or(sections));
  }
  static std::string Section(uint8_t id, const std::string& body) {
    return Bytes().U8(id).U32(static_cast<uint32_t>(body.size())).Raw(body);
  }
  std::string KeysBody() const {
    Bytes b;
    b.Varint(keys.size());
    for (const KeySpec& k : keys) {
      Bytes entry;
      entry.U8(k.code).Str(k.name);
      if (k.code == static_cast<uint8_t>(TypeCode::kStringDict)) {
        entry.Varint(k.dict.size());
        for (const std::string& d : k.dict) entry.Str(d);
      }
      entry.Raw(k.extra);
      b.Str(entry.str());
    }
    return b;
  }
  std::string ShapesBody() const {
    Bytes b;
    b.Varint(shapes.size());
    for (const auto& s : shapes) {
      b.Varint(s.size());
      for (uint32_t k : s) b.Varint(k);
    }
    return b;
  }
  std::string ItemsBody() const {
    std::vector<std::string> records;
    for (const ItemSpec& i : items) {
      if (i.raw) {
        records.push_back(*i.raw);
        continue;
      }
      records.push_back(Bytes()
                            .Str(i.id)
                            .F64(i.score)
                            .Varint(i.position)
                            .Varint(i.shape)
                            .Varint(i.values_offset)
                            .Raw(i.extra));
    }
    Bytes b;
    b.Varint(items.size()).Varint(block_items);
    if (directory) {
      for (uint32_t d : *directory) b.U32(d);
    } else {
      uint32_t offset = 0;
      for (const std::string& r : records) {
        b.U32(offset);
        offset += static_cast<uint32_t>(r.size());
      }
    }
    for (const std::string& r : records) b.Raw(r);
    return b;
  }
  static std::string BlocksBody(const std::vector<BlockSpec>& blocks) {
    Bytes b;
    b.Varint(blocks.size());
    for (const BlockSpec& s : blocks) {
      b.U8(s.codec).U32(static_cast<uint32_t>(s.stored.size())).U32(s.raw_size);
    }
    for (const BlockSpec& s : blocks) b.Raw(s.stored);
    return b;
  }
  std::string Build() const {
    // The order writers of 1.0 use (FORMAT.md): KEYS, SHAPES, VALUES, LOGS,
    // ITEMS.
    std::string out = Header(logs ? 5 : 4) + Section(1, KeysBody()) + Section(2, ShapesBody()) +
                      Section(4, BlocksBody(values));
    if (logs) out += Section(5, BlocksBody(*logs));
    return out + Section(3, ItemsBody());
  }
};

// docs/FORMAT.md's worked example, as parts.
Payload ExamplePayload() {
  Payload p;
  p.keys = {{0x12, "score.ctr"}, {0x20, "recall.source", {"vector_ann"}}};
  p.shapes = {{0, 1}};
  p.items = {{"sku-1", 0.5, 1, 0, 0}, {"sku-2", 0.25, 2, 0, 9}};
  p.values = {BlockSpec::Raw(Bytes().F64(0.25).Varint(0).F64(0.125).Varint(0))};
  p.logs = std::vector<BlockSpec>{BlockSpec::Raw(Bytes().Str("").Str("hi"))};
  return p;
}

// docs/FORMAT.md's worked example, as rows of the model.
RowResult ExampleRows() {
  RowResult r;
  const uint32_t ctr = r.AddKey("score.ctr", MetricType::kDouble);
  const uint32_t src = r.AddKey("recall.source", MetricType::kString);
  RankedItem& a = r.AddItem("sku-1", 0.5, 1);
  a.metrics = {{ctr, MetricValue::Double(0.25)}, {src, MetricValue::String("vector_ann")}};
  RankedItem& b = r.AddItem("sku-2", 0.25, 2);
  b.metrics = {{ctr, MetricValue::Double(0.125)}, {src, MetricValue::String("vector_ann")}};
  b.log = "hi";
  return r;
}

// docs/FORMAT.md's worked example, as the model.
RankResult ExampleResult() { return ExampleRows().Build(); }

// Reading ---------------------------------------------------------------------

absl::StatusOr<std::unique_ptr<ResultView>> Open(const std::string& bytes,
                                                 const ReaderOptions& options = {}) {
  // An exact-size copy, so a sanitizer sees reads past the end.
  return OpenRankbin(SharedBytes::FromBuffer(OwnedBuffer::CopyOf(bytes)), options);
}

absl::StatusOr<RankResult> Decode(const std::string& bytes, const ReaderOptions& options = {}) {
  absl::StatusOr<std::unique_ptr<ResultView>> view = Open(bytes, options);
  if (!view.ok()) return view.status();
  return (*view)->Materialize();
}

// The codec a RankResult is written with, from the registry.
std::string Encode(const RankResult& r, const BuiltinCodecOptions& options = {},
                   absl::string_view name = kRankbinCodecName) {
  absl::StatusOr<CodecRegistry> registry = MakeBuiltinCodecs(options);
  EXPECT_TRUE(registry.ok());
  const Codec* codec = registry->Find(name);
  EXPECT_NE(codec, nullptr);
  absl::StatusOr<OwnedBuffer> bytes = codec->Encode(r);
  EXPECT_TRUE(bytes.ok()) << bytes.status();
  return bytes.ok() ? std::string(bytes->view()) : "";
}

// A payload's sections and block directories, walked per FORMAT.md.
struct SectionRef {
  uint8_t id;
  size_t body;  // Offset of the body in the payload.
  size_t size;
};
std::vector<SectionRef> Sections(const std::string& payload) {
  std::vector<SectionRef> out;
  coding::Reader r(absl::string_view(payload).substr(kHeaderSize), "walk", kHeaderSize);
  while (!r.empty() && r.ok()) {
    const uint8_t id = r.Byte("id");
    const uint32_t size = r.Fixed32("length");
    out.push_back({id, r.offset(), size});
    r.Skip(size, "body");
  }
  EXPECT_TRUE(r.ok()) << r.status();
  return out;
}
std::optional<SectionRef> FindSection(const std::string& payload, SectionId id) {
  for (const SectionRef& s : Sections(payload)) {
    if (s.id == static_cast<uint8_t>(id)) return s;
  }
  return std::nullopt;
}
struct BlockRef {
  uint8_t codec;
  size_t stored;  // Offset of the stored bytes in the payload.
  uint32_t stored_size;
  uint32_t raw_size;
};
std::vector<BlockRef> Blocks(const std::string& payload, SectionId id) {
  std::optional<SectionRef> s = FindSection(payload, id);
  if (!s) return {};
  coding::Reader r(absl::string_view(payload).substr(s->body, s->size), "walk", s->body);
  std::vector<BlockRef> out(r.Varint64("count"));
  for (BlockRef& b : out) {
    b.codec = r.Byte("codec");
    b.stored_size = r.Fixed32("stored");
    b.raw_size = r.Fixed32("raw");
  }
  size_t at = r.offset();
  for (BlockRef& b : out) {
    b.stored = at;
    at += b.stored_size;
  }
  EXPECT_TRUE(r.ok()) << r.status();
  return out;
}

// The worked example's bytes, as docs/FORMAT.md prints them: the hex pairs
// that start each line of the code block under "## Worked example". Also
// returns the size the text states ("... 164 bytes:").
struct DocExample {
  std::string bytes;
  size_t stated_size = 0;
};
DocExample ReadDocExample() {
  DocExample out;
  std::ifstream in(RANKWIRE_SOURCE_DIR "/docs/FORMAT.md");
  EXPECT_TRUE(in.good()) << "cannot read docs/FORMAT.md";
  std::stringstream text;
  text << in.rdbuf();
  const std::string doc = text.str();
  const size_t section = doc.find("## Worked example");
  EXPECT_NE(section, std::string::npos);
  if (section == std::string::npos) return out;
  const size_t fence = doc.find("```", section);
  const size_t end = doc.find("```", fence + 3);
  EXPECT_NE(end, std::string::npos);
  std::smatch m;
  const std::string intro = doc.substr(section, fence - section);
  if (std::regex_search(intro, m, std::regex(R"((\d+)\s+bytes:)"))) {
    out.stated_size = std::stoul(m[1]);
  }
  std::istringstream block(doc.substr(fence + 3, end - fence - 3));
  std::string line;
  while (std::getline(block, line)) {
    std::istringstream words(line);
    std::string word;
    while (words >> word && word.size() == 2 &&
           std::isxdigit(static_cast<unsigned char>(word[0])) &&
           std::isxdigit(static_cast<unsigned char>(word[1]))) {
      out.bytes.push_back(static_cast<char>(std::stoi(word, nullptr, 16)));
    }
  }
  return out;
}

std::string Hex(absl::string_view s) {
  std::string out;
  for (unsigned char c : s) absl::StrAppend(&out, absl::Hex(c, absl::kZeroPad2), " ");
  return out;
}

// The worked example -----------------------------------------------------------

TEST(WorkedExampleTest, TheDocumentedBytesAreTheWorkedExample) {
  const DocExample doc = ReadDocExample();
  EXPECT_EQ(doc.bytes.size(), doc.stated_size);
  EXPECT_EQ(doc.stated_size, 164u);
  // The hand-built payload (this file's reading of FORMAT.md's grammar)
  // is the same bytes.
  EXPECT_EQ(Hex(ExamplePayload().Build()), Hex(doc.bytes));
}

TEST(WorkedExampleTest, RankbinCodecWritesTheDocumentedBytes) {
  const DocExample doc = ReadDocExample();
  ASSERT_FALSE(doc.bytes.empty());
  EXPECT_EQ(Hex(Encode(ExampleResult())), Hex(doc.bytes));
}

TEST(WorkedExampleTest, DocumentedBytesDecodeToTheExample) {
  const DocExample doc = ReadDocExample();
  absl::StatusOr<RankResult> r = Decode(doc.bytes);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(DiffResults(*r, ExampleResult()), "");

  // Either registered rankbin codec reads it.
  absl::StatusOr<CodecRegistry> registry = MakeBuiltinCodecs({});
  ASSERT_TRUE(registry.ok());
  for (absl::string_view name : {kRankbinCodecName, kRankbinZstdCodecName}) {
    absl::StatusOr<RankResult> d = registry->Find(name)->Decode(SharedBytes::FromString(doc.bytes));
    ASSERT_TRUE(d.ok()) << name << ": " << d.status();
    EXPECT_EQ(DiffResults(*d, ExampleResult()), "") << name;
  }

  absl::StatusOr<std::unique_ptr<ResultView>> view = Open(doc.bytes);
  ASSERT_TRUE(view.ok());
  absl::StatusOr<ItemRef> second = (*view)->Item(1);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->id(), "sku-2");
  EXPECT_EQ(second->score(), 0.25);
  absl::StatusOr<std::optional<MetricRef>> src = second->Metric("recall.source");
  ASSERT_TRUE(src.ok() && src->has_value());
  EXPECT_EQ((*src)->string_value(), "vector_ann");
  EXPECT_EQ(*second->Log(), "hi");
  EXPECT_EQ(*(*view)->Log(0), "");
}

// Writer behaviour FORMAT.md fixes -------------------------------------------

TEST(WriterTest, LogsSectionOnlyWhenSomeItemHasALog) {
  RowResult rows = ExampleRows();
  EXPECT_TRUE(FindSection(Encode(rows.Build()), SectionId::kLogs).has_value());
  rows.items[1].log.clear();
  const RankResult r = rows.Build();
  const std::string bytes = Encode(r);
  EXPECT_FALSE(FindSection(bytes, SectionId::kLogs).has_value());
  absl::StatusOr<RankResult> back = Decode(bytes);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(DiffResults(*back, r), "");
  // A log set to "" is no log either.
  RankResult empty_log = r;
  empty_log.SetLog(0, "");
  EXPECT_FALSE(FindSection(Encode(empty_log), SectionId::kLogs).has_value());
}

TEST(WriterTest, SectionsInOrderAndBlocksOfBlockItems) {
  RankResult r;
  const uint32_t k = r.AddKey("k", MetricType::kInt);
  for (int i = 0; i < 7; ++i) {
    const size_t item = r.AddItem("", 0, 0);
    r.SetInt(item, k, i);
    r.SetLog(item, "x");
  }
  BuiltinCodecOptions options;
  options.writer.block_items = 3;
  const std::string bytes = Encode(r, options);
  std::vector<uint8_t> ids;
  for (const SectionRef& s : Sections(bytes)) ids.push_back(s.id);
  EXPECT_EQ(ids, (std::vector<uint8_t>{1, 2, 4, 5, 3}));    // FORMAT.md: ITEMS last.
  EXPECT_EQ(Blocks(bytes, SectionId::kValues).size(), 3u);  // ceil(7 / 3)
  EXPECT_EQ(Blocks(bytes, SectionId::kLogs).size(), 3u);
  for (const BlockRef& b : Blocks(bytes, SectionId::kValues)) {
    EXPECT_EQ(b.codec, static_cast<uint8_t>(BlockCodec::kRaw));  // "rankbin": never zstd.
  }
}

TEST(WriterTest, ShapeKeysAreDoublesThenFloatsThenIntsThenStrings) {
  RankResult r;
  const uint32_t s = r.AddKey("s", MetricType::kString);
  const uint32_t i = r.AddKey("i", MetricType::kInt);
  const uint32_t f = r.AddKey("f", MetricType::kFloat);
  const uint32_t d = r.AddKey("d", MetricType::kDouble);
  const size_t item = r.AddItem("", 0, 0);
  r.SetString(item, s, "x");
  r.SetInt(item, i, 1);
  r.SetFloat(item, f, 1);
  r.SetDouble(item, d, 1);
  const std::string bytes = Encode(r);
  std::optional<SectionRef> shapes = FindSection(bytes, SectionId::kShapes);
  ASSERT_TRUE(shapes);
  EXPECT_EQ(Hex(bytes.substr(shapes->body, shapes->size)),
            Hex(Bytes().Varint(1).Varint(4).Varint(d).Varint(f).Varint(i).Varint(s).str()));
}

// A key of distinct strings is sized without reading its entries when each
// item has its own entry in item order; any other layout of the same
// values (entries in another order, an unused entry, an item without the
// key) takes the pass over the codes. Every one writes the bytes of the
// same values, with and without compression.
TEST(WriterTest, DistinctStringsGiveTheSameBytesWhateverTheirEntryOrder) {
  constexpr int kItems = 40;
  const auto value = [](int i) {
    return std::string(150 + 7 * i, static_cast<char>('a' + i % 26));
  };
  const auto build = [&](int layout) {
    RankResult r;
    const uint32_t trace = r.AddKey("trace", MetricType::kString);
    const uint32_t score = r.AddKey("score", MetricType::kDouble);
    for (int i = 0; i < kItems; ++i) {
      r.AddItem(absl::StrCat("sku-", i), 1.0 / (i + 1), static_cast<uint32_t>(i));
      r.SetDouble(static_cast<size_t>(i), score, i * 0.5);
    }
    if (layout == 0) {  // As a ranker builds it: item by item.
      for (int i = 0; i < kItems; ++i) r.SetString(static_cast<size_t>(i), trace, value(i));
    } else {  // 1: entries backwards; 2: and an unused one first.
      if (layout == 2) r.AddStringEntry(trace, "unused");
      std::vector<uint32_t> code(kItems);
      for (int i = kItems - 1; i >= 0; --i) code[i] = r.AddStringEntry(trace, value(i));
      for (int i = 0; i < kItems; ++i) r.SetStringCode(static_cast<size_t>(i), trace, code[i]);
    }
    return r;
  };
  for (absl::string_view name : {kRankbinCodecName, kRankbinZstdCodecName}) {
    const std::string want = Encode(build(0), {}, name);
    ASSERT_NE(want, "");
    for (int layout : {1, 2}) {
      EXPECT_EQ(Hex(Encode(build(layout), {}, name)), Hex(want))
          << "layout " << layout << ", " << name;
    }
    absl::StatusOr<RankResult> back = Decode(want);
    ASSERT_TRUE(back.ok()) << back.status();
    for (int i = 0; i < kItems; ++i) {
      EXPECT_EQ(back->column(0).string_at(static_cast<size_t>(i)), value(i)) << i;
    }
  }
}

TEST(WriterTest, ZstdBlocksAreFramesOfTheirRawSize) {
  // Repetitive values and logs, so compression pays.
  RankResult r;
  const uint32_t model = r.AddKey("model", MetricType::kString);
  const uint32_t ctr = r.AddKey("ctr", MetricType::kDouble);
  for (int i = 0; i < 64; ++i) {
    const size_t item = r.AddItem(absl::StrCat("sku-", i), 0, 0);
    r.SetString(item, model, absl::StrCat("lr-v3-production-", i % 2 ? "a" : "b", "-", i));
    r.SetDouble(item, ctr, 0.125);
    r.SetLog(item, "model=lr-v3 scene=search features=[0.1,0.2,0.3,0.4] recall=vector_ann");
  }
  BuiltinCodecOptions options;
  options.writer.block_items = 16;
  options.writer.compress_values = true;
  options.writer.min_saving = 0;
  const std::string bytes = Encode(r, options, kRankbinZstdCodecName);
  for (SectionId id : {SectionId::kValues, SectionId::kLogs}) {
    std::vector<BlockRef> blocks = Blocks(bytes, id);
    ASSERT_EQ(blocks.size(), 4u);
    for (const BlockRef& b : blocks) {
      ASSERT_EQ(b.codec, static_cast<uint8_t>(BlockCodec::kZstd)) << static_cast<int>(id);
      EXPECT_LT(b.stored_size, b.raw_size);
      absl::StatusOr<std::string> raw = compression::ZstdDecompress(
          absl::string_view(bytes).substr(b.stored, b.stored_size), b.raw_size);
      ASSERT_TRUE(raw.ok()) << raw.status();
      EXPECT_EQ(raw->size(), b.raw_size);
    }
  }
  absl::StatusOr<RankResult> back = Decode(bytes);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(DiffResults(*back, r), "");
}

// Appends item i (id "sku-<i>", position i + 1) to `r`.
RankedItem& AppendItem(RowResult& r, size_t i) {
  return r.AddItem(absl::StrCat("sku-", i), 0, static_cast<uint32_t>(i + 1));
}

// Encodes `r` with the built-in codec `name`, expects it to decode back to
// `r`, and returns the payload ("" on failure).
std::string RoundTrip(const RankResult& r, absl::string_view name,
                      const BuiltinCodecOptions& options = {}) {
  absl::StatusOr<CodecRegistry> codecs = MakeBuiltinCodecs(options);
  EXPECT_TRUE(codecs.ok()) << codecs.status();
  if (!codecs.ok()) return "";
  const Codec* codec = codecs->Find(name);
  absl::StatusOr<OwnedBuffer> bytes = codec->Encode(r);
  EXPECT_TRUE(bytes.ok()) << name << ": " << bytes.status();
  if (!bytes.ok()) return "";
  std::string payload(bytes->view());
  absl::StatusOr<RankResult> back = codec->Decode(SharedBytes::FromBuffer(*std::move(bytes)));
  EXPECT_TRUE(back.ok()) << name << ": " << back.status();
  if (back.ok()) {
    EXPECT_EQ(DiffResults(r, *back), "") << name;
  }
  return payload;
}
std::string RoundTrip(const RowResult& r, absl::string_view name,
                      const BuiltinCodecOptions& options = {}) {
  return RoundTrip(r.Build(), name, options);
}

// The KEYS section's entries of a payload the writer made (KEYS comes first).
std::vector<KeyEntry> WrittenKeys(absl::string_view payload) {
  coding::Reader r(payload.substr(kHeaderSize + kSectionHeaderSize), "test");
  std::vector<KeyEntry> keys(r.Varint64("key count"));
  for (KeyEntry& k : keys) Serializer<KeyEntry>::ReadBody(r, r.LengthPrefixed("key"), &k);
  EXPECT_TRUE(r.ok()) << r.status();
  return keys;
}

// Items with as many keys as the previous item but other ones, or the same
// ones written in another order, round-trip. (The row model's writer
// guessed that an item had the previous item's keys and checked it while
// writing; the columnar writer reads each item's keys from the columns, and
// an item's metrics have no order of their own. A duplicate key or a value
// of the wrong type, which that check had to catch behind a good guess,
// cannot reach a writer now: AppendItem refuses it, for the right item.)
TEST(WriterTest, ItemsWithAsManyButDifferentKeysRoundTrip) {
  RowResult r;
  const uint32_t a = r.AddKey("a", MetricType::kDouble);
  const uint32_t b = r.AddKey("b", MetricType::kInt);
  const uint32_t c = r.AddKey("c", MetricType::kString);
  const uint32_t d = r.AddKey("d", MetricType::kFloat);
  const std::vector<std::vector<MetricEntry>> variants = {
      {{a, MetricValue::Double(1)}, {b, MetricValue::Int(2)}, {c, MetricValue::String("x")}},
      {{a, MetricValue::Double(3)},
       {b, MetricValue::Int(4)},
       {d, MetricValue::Float(5)}},  // Other key.
      {{b, MetricValue::Int(6)},
       {a, MetricValue::Double(7)},
       {c, MetricValue::String("y")}},  // Order.
      {{d, MetricValue::Float(8)}, {c, MetricValue::String("z")}, {b, MetricValue::Int(9)}},
  };
  for (size_t i = 0; i < 12; ++i) {
    AppendItem(r, i).metrics = variants[i % variants.size()];
  }
  for (const char* name : {"rankbin", "rankbin-zstd"}) RoundTrip(r, name);
  RowResult dup = r;
  dup.items[5].metrics[2].key = dup.items[5].metrics[0].key;
  absl::Status s = dup.TryBuild().status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("item 5 (sku-5)"));
  RowResult wrong = r;
  wrong.items[4].metrics[0].value = MetricValue::Int(1);  // Key "a" is a double.
  s = wrong.TryBuild().status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("item 4 (sku-4): metric \"a\" is int"));
  for (const MetricValue& v : {MetricValue::Double(1), MetricValue::String("nine")}) {
    RowResult bad_int = r;
    bad_int.items[7].metrics[2].value = v;  // Key "b" is an int.
    s = bad_int.TryBuild().status();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(s.message()), HasSubstr(absl::StrCat("item 7 (sku-7): metric \"b\" is ",
                                                                 MetricTypeName(v.type()))));
  }
}

// A string column's codes, not its entries, are what items share: entries
// added but used by no item, equal entries under two codes, and codes used
// out of order must still give each key the dictionary (or plain strings)
// of the values items carry.
TEST(WriterTest, StringColumnsWithUnusedAndRepeatedEntriesRoundTrip) {
  RankResult r;
  const uint32_t k = r.AddKey("bucket", MetricType::kString);
  const uint32_t note = r.AddKey("note", MetricType::kString);
  for (size_t i = 0; i < 100; ++i)
    r.AddItem(absl::StrCat("sku-", i), 0, static_cast<uint32_t>(i + 1));
  const uint32_t unused = r.AddStringEntry(k, std::string(300, 'u'));
  const uint32_t x = r.AddStringEntry(k, "bucket-x");
  const uint32_t x_again = r.AddStringEntry(k, "bucket-x");
  const uint32_t y = r.AddStringEntry(k, "");
  (void)unused;
  for (size_t i = 100; i-- > 0;) {
    if (i % 7 != 3) r.SetStringCode(i, k, i % 3 == 0 ? x : i % 3 == 1 ? x_again : y);
  }
  // A second key whose entries are all the same string, one per item.
  for (size_t i = 0; i < 100; i += 2) r.SetString(i, note, "same note");
  const std::string payload = RoundTrip(r, kRankbinCodecName);
  const std::vector<KeyEntry> keys = WrittenKeys(payload);  // Views of `payload`.
  ASSERT_EQ(keys.size(), 2u);
  EXPECT_EQ(keys[0].type_code, static_cast<uint8_t>(TypeCode::kStringDict));
  EXPECT_THAT(keys[0].dict, testing::UnorderedElementsAre("bucket-x", ""));
  EXPECT_EQ(keys[1].type_code, static_cast<uint8_t>(TypeCode::kStringDict));
  EXPECT_THAT(keys[1].dict, ElementsAre("same note"));
  // A code past the entries is refused, naming the item.
  RankResult bad = r;
  bad.SetStringCode(42, k, 4);
  absl::Status s = rankbin::WriteRankbin(bad, {}).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("item 42 (sku-42)"));
}

// Short dictionary values are compared as packed words, not bytes (the
// writer's ShortString): values that differ in a single byte, at every
// position of every length around the 4, 8 and 16-byte boundaries, must
// stay distinct, and equal values (inline or on the heap) must share one
// entry. The writer's scratch is reused across calls, so a second result
// with other keys must not see the first one's dictionary.
TEST(WriterTest, DictionaryValuesThatDifferInOneByteStayDistinct) {
  std::vector<std::string> values;
  for (size_t n = 0; n <= 24; ++n) {
    values.push_back(std::string(n, 'a'));
    for (size_t p = 0; p < n; ++p) {
      values.push_back(std::string(n, 'a'));
      values.back()[p] = 'b';
    }
  }
  RowResult r;
  const uint32_t word = r.AddKey("word", MetricType::kString);
  for (size_t i = 0; i < 3 * values.size(); ++i) {
    // Each value three times in a row, so the sample keeps the dictionary.
    AppendItem(r, i).metrics.push_back({word, MetricValue::String(values[i / 3])});
  }
  for (const char* name : {"rankbin", "rankbin-zstd"}) {
    const std::vector<KeyEntry> keys = WrittenKeys(RoundTrip(r, name));
    ASSERT_EQ(keys.size(), 1u);
    EXPECT_EQ(keys[0].type_code, static_cast<uint8_t>(TypeCode::kStringDict)) << name;
    EXPECT_EQ(keys[0].dict.size(), values.size()) << name;
  }

  // Next, on the same thread: other keys, where "word" is now key 1 and a
  // dictionary overflows part way (max_dict_entries), then a third result
  // like the first.
  RowResult other;
  const uint32_t n = other.AddKey("n", MetricType::kInt);
  const uint32_t w2 = other.AddKey("word", MetricType::kString);
  for (size_t i = 0; i < 200; ++i) {
    RankedItem& item = AppendItem(other, i);
    item.metrics.push_back({n, MetricValue::Int(static_cast<int64_t>(i))});
    item.metrics.push_back({w2, MetricValue::String(values[(i / 2) % values.size()])});
  }
  BuiltinCodecOptions few;
  few.writer.max_dict_entries = 40;
  for (const RowResult* result : {&other, &r}) {
    for (const BuiltinCodecOptions& options : {few, BuiltinCodecOptions{}}) {
      EXPECT_NE(RoundTrip(*result, kRankbinCodecName, options), "");
    }
  }
}

// The writer remembers the last key table it accepted on a thread and
// skips the repeated-name check for the same table (AcceptedNames). A table
// that differs in any name byte or type, even one of the same lengths,
// must be checked again; one that matches must be written with its own
// types, not the remembered table's.
TEST(WriterTest, AKeyTableAcceptedBeforeIsCheckedAgainWhenItDiffers) {
  const auto result = [](std::vector<MetricKey> keys) {
    RowResult r;
    for (MetricKey& k : keys) r.AddKey(std::move(k.name), k.type);
    RankedItem& item = AppendItem(r, 0);
    for (uint32_t k = 0; k < r.keys.size(); ++k) {
      const MetricType t = r.keys[k].type;
      item.metrics.push_back({k, t == MetricType::kString ? MetricValue::String("v")
                                 : t == MetricType::kInt  ? MetricValue::Int(7)
                                                          : MetricValue::Double(0.5)});
    }
    return r;
  };
  const RowResult good = result({{"ab", MetricType::kDouble}, {"cd", MetricType::kDouble}});
  EXPECT_NE(RoundTrip(good, kRankbinCodecName), "");
  RowResult dup_rows = good;
  dup_rows.keys[1].name = "ab";  // Same lengths as the accepted table.
  const RankResult dup = dup_rows.Build();
  absl::Status s = rankbin::WriteRankbin(dup, {}).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("\"ab\" appears twice"));
  // A table that failed is not remembered as accepted.
  EXPECT_EQ(rankbin::WriteRankbin(dup, {}).status().code(), absl::StatusCode::kInvalidArgument);
  RowResult bad_type = good;
  bad_type.keys[1].type = static_cast<MetricType>(9);
  bad_type.items[0].metrics.pop_back();  // No value has type 9.
  s = rankbin::WriteRankbin(bad_type.Build(), {}).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("has no valid type"));
  // The same names with other types, then the first table again.
  EXPECT_NE(
      RoundTrip(result({{"ab", MetricType::kInt}, {"cd", MetricType::kString}}), kRankbinCodecName),
      "");
  EXPECT_NE(RoundTrip(good, kRankbinCodecName), "");
  EXPECT_EQ(rankbin::WriteRankbin(dup, {}).status().code(), absl::StatusCode::kInvalidArgument);
}

// A shape that repeats a key index, or names one past the keys, is
// refused; shapes that each use the same keys, in any order, are not (the
// reader's table of keys seen is per shape).
TEST(ReaderTest, ShapesAreCheckedOneByOne) {
  Payload p = ExamplePayload();
  // Item 1 uses shape 1: the same keys, the other way round.
  p.shapes = {{0, 1}, {1, 0}};
  p.items[1].shape = 1;
  p.values = {BlockSpec::Raw(Bytes().F64(0.25).Varint(0).Varint(0).F64(0.125))};
  absl::StatusOr<RankResult> r = Decode(p.Build());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(DiffResults(*r, ExampleResult()), "");
  for (const auto& [shapes, problem] :
       std::vector<std::pair<std::vector<std::vector<uint32_t>>, std::string>>{
           {{{0, 1}, {1, 1}}, "index 1 repeated"},
           {{{0, 1}, {0, 1, 0}}, "count 3 exceeds"},
           {{{0, 1}, {1, 2}}, "index 2 out of range (2)"}}) {
    Payload bad = p;
    bad.shapes = shapes;
    r = Decode(bad.Build());
    EXPECT_EQ(r.status().code(), absl::StatusCode::kDataLoss) << r.status();
    EXPECT_THAT(std::string(r.status().message()), HasSubstr(problem));
  }
}

// The reader remembers the last key table that passed its repeated-name
// check on a thread: a payload whose names differ from it, here only by
// repeating one of the same length, is checked again.
TEST(ReaderTest, AKeyTableAcceptedBeforeIsCheckedAgainWhenItDiffers) {
  Payload good = ExamplePayload();
  good.keys[0].name = "aa.bb";
  good.keys[1].name = "cc.dd";
  Payload dup = good;
  dup.keys[1].name = "aa.bb";
  for (int round = 0; round < 2; ++round) {
    absl::StatusOr<RankResult> r = Decode(good.Build());
    ASSERT_TRUE(r.ok()) << r.status();
    ASSERT_EQ(r->key_count(), 2u);
    EXPECT_EQ(r->key(1).name, "cc.dd");
    // Twice: a table that failed is not remembered as accepted.
    for (int again = 0; again < 2; ++again) {
      r = Decode(dup.Build());
      EXPECT_EQ(r.status().code(), absl::StatusCode::kDataLoss) << r.status();
      EXPECT_THAT(std::string(r.status().message()), HasSubstr("\"aa.bb\" appears twice"));
    }
  }

  // Names need only be unique among keys of known types: a key of an
  // unknown type may repeat a name, and the same table with that key's
  // type known must then be checked (and refused), not matched.
  Payload unknown = ExamplePayload();
  unknown.keys.push_back({0x0a, "score.ctr"});  // Unknown type, fixed64 wire class.
  unknown.shapes = {{0, 2, 1}};
  const std::string run0 = Bytes().F64(0.25).F64(1.5).Varint(0);
  const std::string run1 = Bytes().F64(0.125).F64(1.5).Varint(0);
  unknown.values = {BlockSpec::Raw(run0 + run1)};
  unknown.items[1].values_offset = static_cast<uint32_t>(run0.size());
  Payload known = unknown;
  known.keys[2].code = 0x12;  // A double, as key 0 is.
  for (int round = 0; round < 2; ++round) {
    absl::StatusOr<RankResult> r = Decode(unknown.Build());
    EXPECT_TRUE(r.ok()) << r.status();
    r = Decode(known.Build());
    EXPECT_EQ(r.status().code(), absl::StatusCode::kDataLoss) << r.status();
    EXPECT_THAT(std::string(r.status().message()), HasSubstr("\"score.ctr\" appears twice"));
  }
}

// Shapes whose keys come in any order, of every type, with indexes whose
// varints take 1, 2 and 3 bytes (the SHAPES entry's size is computed once
// per shape, and its varints written two bytes at a time): each round-trips
// (an item's keys are in key-table order once appended, whatever order its
// row had), and a key twice or out of range is refused in either order (by
// AppendItem now: the columnar model cannot hold them).
TEST(WriterTest, ShapesOfAnyKeyOrderAndIndexWidthRoundTrip) {
  constexpr uint32_t kKeys = 20000;
  RowResult r;
  const MetricType types[] = {MetricType::kDouble, MetricType::kInt, MetricType::kString,
                              MetricType::kFloat};
  for (uint32_t k = 0; k < kKeys; ++k) r.AddKey(absl::StrCat("k", k), types[k % 4]);
  const auto value = [&r](uint32_t k) {
    switch (r.keys[k].type) {
      case MetricType::kDouble:
        return MetricValue::Double(k * 0.5);
      case MetricType::kInt:
        return MetricValue::Int(-static_cast<int64_t>(k));
      case MetricType::kFloat:
        return MetricValue::Float(static_cast<float>(k));
      case MetricType::kString:
        return MetricValue::String(absl::StrCat("s", k % 5));
    }
    return MetricValue::Int(0);
  };
  const std::vector<uint32_t> wide = {0,   1,     2,     3,     126,   127,  128,
                                      129, 16382, 16383, 16384, 16385, 19999};
  std::mt19937 rng(11);
  for (size_t i = 0; i < 40; ++i) {
    std::vector<uint32_t> keys = wide;
    // Some items in increasing order, others shuffled; some a subset.
    if (i % 3 == 1) std::shuffle(keys.begin(), keys.end(), rng);
    if (i % 5 == 2) keys.resize(1 + rng() % keys.size());
    RankedItem& item = AppendItem(r, i);
    for (uint32_t k : keys) item.metrics.push_back({k, value(k)});
  }
  const RankResult built = r.Build();
  for (absl::string_view codec : {kRankbinCodecName, kRankbinZstdCodecName}) {
    EXPECT_NE(RoundTrip(built, codec), "") << codec;
  }
  absl::Status s;
  // The last item's keys are in increasing order: a repeat of its last key
  // keeps them non-decreasing, one of its first does not.
  for (bool adjacent : {true, false}) {
    RowResult twice = r;
    std::vector<MetricEntry>& m = twice.items.back().metrics;
    m.push_back(adjacent ? m.back() : m.front());
    s = twice.TryBuild().status();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_THAT(std::string(s.message()), HasSubstr("appears twice"));
  }
  for (bool last : {true, false}) {
    RowResult out_of_range = r;
    std::vector<MetricEntry>& m = out_of_range.items.back().metrics;
    const MetricEntry extra{kKeys, MetricValue::Double(1)};
    m.insert(last ? m.end() : m.begin(), extra);
    s = out_of_range.TryBuild().status();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_THAT(std::string(s.message()), HasSubstr("out of range"));
  }
}

// The writer keeps its shapes' vectors from call to call and indexes the
// shapes only past a few: results with many shapes (indexed), few and
// other keys, then one, written in turn on one thread, each round-trip
// with exactly its own shapes.
// The SHAPES count of a payload (0 if it has none).
uint64_t ShapeCount(const std::string& payload) {
  std::optional<SectionRef> shapes = FindSection(payload, SectionId::kShapes);
  if (!shapes) return 0;
  coding::Reader r(absl::string_view(payload).substr(shapes->body, shapes->size), "test");
  return r.Varint64("shape count");
}

// Shapes at the edges of the writer's fast paths: 65535, 65536 and 65537
// keys (the counting sort's 16-bit fields, and the fallback past them),
// one type or four, in order or shuffled; and 129-256 keys (SHAPES entries
// whose keys take 2-byte varints, and a count that does too). Each
// round-trips. (From a review's mutations that no other test caught.)
TEST(WriterTest, ShapesAtTheEdgesOfTheFastPathsRoundTrip) {
  const MetricType types[] = {MetricType::kDouble, MetricType::kFloat, MetricType::kInt,
                              MetricType::kString};
  std::mt19937 rng(3);
  for (size_t count : {129u, 200u, 256u, 65535u, 65536u, 65537u}) {
    for (int mixed = 0; mixed < 2; ++mixed) {
      RowResult r;
      for (size_t k = 0; k < count; ++k) {
        r.AddKey(absl::StrCat("k", k), mixed ? types[(k * 7) % 4] : MetricType::kDouble);
      }
      for (size_t i = 0; i < 3; ++i) {
        std::vector<uint32_t> keys(count);
        std::iota(keys.begin(), keys.end(), 0u);
        if (i == 1) std::shuffle(keys.begin(), keys.end(), rng);
        if (i == 2) keys.erase(keys.begin());  // One fewer, keys from 1.
        RankedItem& item = AppendItem(r, i);
        for (uint32_t k : keys) {
          const MetricType t = r.keys[k].type;
          item.metrics.push_back({k, t == MetricType::kString ? MetricValue::String("s")
                                     : t == MetricType::kInt  ? MetricValue::Int(k)
                                     : t == MetricType::kFloat
                                         ? MetricValue::Float(static_cast<float>(k))
                                         : MetricValue::Double(k + 0.5)});
        }
      }
      EXPECT_NE(RoundTrip(r, kRankbinCodecName), "") << count << " keys, mixed " << mixed;
    }
  }
}

// The writer stops looking shapes up when a sample of items found few
// earlier ones (each item its own subset of the keys): later repeats then
// get equal shapes of their own, and the payload still round-trips. Items
// that repeat earlier shapes often keep the index: one shape each.
TEST(WriterTest, TheShapeIndexIsGivenUpOnlyWhenItFindsLittle) {
  constexpr uint32_t kKeys = 64;
  const auto result = [](size_t unique, size_t cycled) {
    RowResult r;
    for (uint32_t k = 0; k < kKeys; ++k) r.AddKey(absl::StrCat("f", k), MetricType::kDouble);
    std::mt19937 rng(5);
    std::vector<std::vector<uint32_t>> subsets;
    for (size_t i = 0; i < unique + cycled; ++i) {
      if (i < unique) {
        std::vector<uint32_t> keys;
        for (uint32_t k = 0; k < kKeys; ++k) {
          if (rng() % 2 == 0) keys.push_back(k);
        }
        keys.push_back(kKeys - 1 - static_cast<uint32_t>(i % 2));  // Never empty.
        std::sort(keys.begin(), keys.end());
        keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
        subsets.push_back(keys);
      }
      // After the unique items, shapes 0..9 again, never two alike in a row.
      const std::vector<uint32_t>& keys = i < unique ? subsets[i] : subsets[(i - unique) % 10];
      RankedItem& item = AppendItem(r, i);
      for (uint32_t k : keys) item.metrics.push_back({k, MetricValue::Double(k + 0.25 * i)});
    }
    return r;
  };
  // 200 distinct subsets: the index is given up; the 100 repeats that
  // follow are written as shapes of their own.
  EXPECT_EQ(ShapeCount(RoundTrip(result(200, 100), kRankbinCodecName)), 300u);
  // 20 distinct, then 300 repeats: the index finds them all.
  EXPECT_EQ(ShapeCount(RoundTrip(result(20, 300), kRankbinCodecName)), 20u);
}

// A ranker's explanations: dense keys, and sparse ones present only in the
// top items and again in later ones, plus one key present nowhere: 11, 64
// (the most the writer follows as bits per item) or 71 sparse keys give
// two shapes either way, and the payload round-trips.
TEST(WriterTest, FewOrManySparseKeysGiveTheSameShapes) {
  for (uint32_t sparse : {10u, 63u, 70u}) {
    RowResult r;
    for (uint32_t k = 0; k < 40 + sparse + 1; ++k) {
      r.AddKey(absl::StrCat("k", k), k % 2 == 0 ? MetricType::kDouble : MetricType::kString);
    }
    for (size_t i = 0; i < 100; ++i) {
      const bool explained = i < 10 || (i >= 50 && i < 55);
      RankedItem& item = AppendItem(r, i);
      for (uint32_t k = 0; k < 40 + (explained ? sparse : 0); ++k) {
        item.metrics.push_back({k, k % 2 == 0 ? MetricValue::Double(k + 0.5 * i)
                                              : MetricValue::String(absl::StrCat("s", i % 3))});
      }
    }
    EXPECT_EQ(ShapeCount(RoundTrip(r, kRankbinCodecName)), 2u) << sparse << " sparse keys";
  }
}

TEST(WriterTest, ShapesOfAnEarlierResultDoNotLeakIntoTheNext) {
  const auto result = [](size_t keys, size_t shapes, size_t items) {
    RowResult r;
    for (size_t k = 0; k < keys; ++k) {
      r.AddKey(absl::StrCat("k", k), k % 3 == 0 ? MetricType::kInt : MetricType::kDouble);
    }
    for (size_t i = 0; i < items; ++i) {
      RankedItem& item = AppendItem(r, i);
      // Shape s: the keys k with (k + s) % (shapes + 1) != 0, s in [0, shapes).
      const size_t s = (i * 7) % shapes;
      for (uint32_t k = 0; k < keys; ++k) {
        if ((k + s) % (shapes + 1) == 0) continue;
        item.metrics.push_back({k, r.keys[k].type == MetricType::kInt
                                       ? MetricValue::Int(static_cast<int64_t>(i + k))
                                       : MetricValue::Double(0.25 * static_cast<double>(i))});
      }
    }
    return r;
  };
  for (int round = 0; round < 2; ++round) {
    EXPECT_EQ(ShapeCount(RoundTrip(result(40, 20, 100), kRankbinCodecName)), 20u);
    EXPECT_EQ(ShapeCount(RoundTrip(result(5, 3, 30), kRankbinCodecName)), 3u);
    EXPECT_EQ(ShapeCount(RoundTrip(result(12, 1, 10), kRankbinCodecName)), 1u);
    EXPECT_EQ(ShapeCount(RoundTrip(result(60, 9, 50), kRankbinCodecName)), 9u);
  }
}

// A string key whose first 16 values are all distinct gets no dictionary
// (decided then, before more of its values are hashed), even if repeats
// follow; one repeat among them leaves the decision to the 64-value sample;
// a threshold of 1 keeps every dictionary that pays.
TEST(WriterTest, AKeyWhoseFirstSixteenValuesAreDistinctGetsNoDictionary) {
  const auto result = [](size_t distinct_first) {
    RowResult r;
    const uint32_t k = r.AddKey("trace", MetricType::kString);
    for (size_t i = 0; i < 200; ++i) {
      const std::string v = i < distinct_first ? absl::StrCat("a long distinct trace value #", i)
                                               : "a long repeated trace value";
      AppendItem(r, i).metrics.push_back({k, MetricValue::String(v)});
    }
    return r;
  };
  const auto code = [](const RowResult& r, const BuiltinCodecOptions& options) {
    const std::vector<KeyEntry> keys = WrittenKeys(RoundTrip(r, kRankbinCodecName, options));
    return keys.empty() ? uint8_t{0} : keys[0].type_code;
  };
  const auto dict = static_cast<uint8_t>(TypeCode::kStringDict);
  const auto plain = static_cast<uint8_t>(TypeCode::kString);
  // result(n): n distinct values, then one value repeated; its first 16
  // values are all distinct for n >= 15.
  EXPECT_EQ(code(result(16), {}), plain);
  EXPECT_EQ(code(result(15), {}), plain);
  EXPECT_EQ(code(result(14), {}), dict);
  BuiltinCodecOptions keep_all;
  keep_all.writer.dict_distinct_threshold = 1.0;
  EXPECT_EQ(code(result(16), keep_all), dict);
}

// The same decisions for short values (at most 16 bytes: the lookup's
// inlined fast path), including when the value at a sample point is one
// the dictionary already holds.
TEST(WriterTest, ShortValuesGetTheSameDictionaryDecisionsAtTheSamplePoints) {
  const auto code = [](const std::vector<std::string>& values) {
    RowResult r;
    const uint32_t k = r.AddKey("bucket", MetricType::kString);
    for (size_t i = 0; i < values.size(); ++i) {
      AppendItem(r, i).metrics.push_back({k, MetricValue::String(values[i])});
    }
    const std::vector<KeyEntry> keys = WrittenKeys(RoundTrip(r, kRankbinCodecName, {}));
    return keys.empty() ? uint8_t{0} : keys[0].type_code;
  };
  const auto dict = static_cast<uint8_t>(TypeCode::kStringDict);
  const auto plain = static_cast<uint8_t>(TypeCode::kString);
  const auto name = [](size_t i) { return absl::StrCat("bucket-", i); };
  // 16 distinct values, then the first again (found, at the early sample).
  std::vector<std::string> early;
  for (size_t i = 0; i < 16; ++i) early.push_back(name(i));
  early.resize(300, name(0));
  EXPECT_EQ(code(early), plain);
  // One repeat among the first 16, so the early sample passes; 62 of the
  // first 63 distinct, and the 64th found (at the 64-value sample).
  std::vector<std::string> late;
  for (size_t i = 0; i < 15; ++i) late.push_back(name(i));
  late.push_back(name(0));
  for (size_t i = 16; i < 63; ++i) late.push_back(name(i));
  late.resize(300, name(1));
  EXPECT_EQ(code(late), plain);
  // Four values in turn keep their dictionary.
  std::vector<std::string> few;
  for (size_t i = 0; i < 300; ++i) few.push_back(name(i % 4));
  EXPECT_EQ(code(few), dict);
}

TEST(ReaderTest, DecompressesOnlyTheBlocksItReads) {
  RowResult r;
  const uint32_t model = r.AddKey("model", MetricType::kString);
  for (size_t i = 0; i < 6; ++i) {
    AppendItem(r, i).metrics = {
        {model, MetricValue::String(std::string(200, static_cast<char>('a' + i)))}};
  }
  BuiltinCodecOptions options;
  options.writer.block_items = 2;
  options.writer.compress_values = true;
  options.writer.min_saving = 0;
  std::string bytes = Encode(r.Build(), options, kRankbinZstdCodecName);
  std::vector<BlockRef> blocks = Blocks(bytes, SectionId::kValues);
  ASSERT_EQ(blocks.size(), 3u);
  ASSERT_EQ(blocks[2].codec, static_cast<uint8_t>(BlockCodec::kZstd));
  // Break the last block's frame in the middle.
  bytes[blocks[2].stored + blocks[2].stored_size / 2] ^= 0x5a;
  bytes[blocks[2].stored + blocks[2].stored_size - 1] ^= 0x5a;

  absl::StatusOr<std::unique_ptr<ResultView>> view = Open(bytes);
  ASSERT_TRUE(view.ok()) << view.status();
  absl::StatusOr<std::vector<ItemRef>> top = (*view)->TopN(4);
  ASSERT_TRUE(top.ok());
  for (const ItemRef& item : *top) {
    absl::StatusOr<std::optional<MetricRef>> m = item.Metric("model");
    ASSERT_TRUE(m.ok()) << m.status();
    EXPECT_EQ((*m)->string_value(), std::string(200, static_cast<char>('a' + item.index())));
  }
  // Hot fields of the broken block's items need no values.
  absl::StatusOr<ItemRef> fifth = (*view)->Item(4);
  ASSERT_TRUE(fifth.ok());
  EXPECT_EQ(fifth->id(), "sku-4");
  EXPECT_EQ(fifth->Metric("model").status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ((*view)->Materialize().status().code(), absl::StatusCode::kDataLoss);
}

// Items with a double, a string and a log each, to spread over many blocks.
RankResult ManyItems(size_t n) {
  RowResult r;
  const uint32_t ctr = r.AddKey("ctr", MetricType::kDouble);
  const uint32_t note = r.AddKey("note", MetricType::kString);
  for (size_t i = 0; i < n; ++i) {
    RankedItem& item = AppendItem(r, i);
    item.score = 1.0 / static_cast<double>(i + 1);
    item.metrics = {{ctr, MetricValue::Double(0.5 * static_cast<double>(i))},
                    {note, MetricValue::String(absl::StrCat("note ", i))}};
    item.log = absl::StrCat("log of item ", i);
  }
  return r.Build();
}

// Offset in the payload of block b's directory entry in section `id`.
size_t BlockEntryAt(const std::string& payload, SectionId id, size_t b) {
  std::optional<SectionRef> s = FindSection(payload, id);
  EXPECT_TRUE(s.has_value());
  coding::Reader r(absl::string_view(payload).substr(s->body, s->size), "walk", s->body);
  r.Varint64("count");
  return r.offset() + b * kBlockEntryBytes;
}

// Item i's metrics and log, read lazily; "" if they are the original's.
std::string ReadItem(const ResultView& view, const RankResult& want, size_t i) {
  absl::StatusOr<ItemRef> item = view.Item(i);
  if (!item.ok()) return item.status().ToString();
  std::vector<std::pair<uint32_t, MetricRef>> got;
  absl::Status s =
      item->ForEachMetric([&](uint32_t key, const MetricRef& v) { got.emplace_back(key, v); });
  if (!s.ok()) return s.ToString();
  absl::StatusOr<absl::string_view> log = item->Log();
  if (!log.ok()) return log.status().ToString();
  size_t want_metrics = 0;
  for (uint32_t k = 0; k < want.key_count(); ++k) want_metrics += want.column(k).present(i);
  if (item->id() != want.id(i) || *log != want.log(i) || got.size() != want_metrics) {
    return absl::StrCat("item ", i, " differs");
  }
  for (const auto& [key, value] : got) {
    if (want.Get(i, key) != value) return absl::StrCat("item ", i, " metric ", key, " differs");
  }
  return "";
}

// A top-10 read of a 5000-item payload (313 blocks per column) checks only
// the block directory entries it uses: a broken entry of a block it does not
// read is found by the reads that need it and by a full decode, not by it.
TEST(ReaderTest, BlockDirectoryEntriesAreCheckedWhenTheirBlockIsRead) {
  const RankResult r = ManyItems(5000);
  const std::string good = Encode(r);
  ASSERT_EQ(Blocks(good, SectionId::kValues).size(), 313u);
  ASSERT_EQ(Blocks(good, SectionId::kLogs).size(), 313u);
  struct Damage {
    const char* what;
    size_t field;  // Byte offset in the 9-byte entry.
    uint32_t value;
    const char* message;
  };
  const Damage damages[] = {
      {"unknown codec", 0, 7, "has unknown codec 7"},
      {"raw sizes differ", 5, 1, "is raw but its sizes differ"},
      {"stored bytes past the section", 1, 0x7fffffff, "passes the end of its section"},
  };
  for (SectionId id : {SectionId::kValues, SectionId::kLogs}) {
    for (const Damage& d : damages) {
      for (size_t block : {size_t{1}, size_t{312}}) {
        SCOPED_TRACE(absl::StrCat(static_cast<int>(id), " ", d.what, " in block ", block));
        std::string bytes = good;
        const size_t at = BlockEntryAt(bytes, id, block) + d.field;
        if (d.field == 0) {
          bytes[at] = static_cast<char>(d.value);
        } else {
          coding::EncodeFixed32(&bytes[at], d.value);
          // Past the section: a raw block's two sizes agree.
          if (d.field == 1) coding::EncodeFixed32(&bytes[at + 4], d.value);
        }
        absl::StatusOr<std::unique_ptr<ResultView>> view = Open(bytes);
        ASSERT_TRUE(view.ok()) << view.status();
        // Items 0..15 are block 0: a top-10 read needs no other block.
        absl::StatusOr<std::vector<ItemRef>> top = (*view)->TopN(10);
        ASSERT_TRUE(top.ok()) << top.status();
        for (const ItemRef& item : *top) {
          EXPECT_EQ(ReadItem(**view, r, item.index()), "");
        }
        // The first item of the broken block fails, every time.
        const size_t first = block * 16;
        for (int attempt = 0; attempt < 2; ++attempt) {
          absl::Status s = id == SectionId::kValues
                               ? (*view)->ForEachMetric(first, [](uint32_t, const MetricRef&) {})
                               : (*view)->Log(first).status();
          EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
          EXPECT_THAT(s.message(), HasSubstr(d.message));
        }
        // Blocks before it still read.
        EXPECT_EQ(ReadItem(**view, r, first - 1), "");
        absl::Status full = (*view)->Materialize().status();
        EXPECT_EQ(full.code(), absl::StatusCode::kDataLoss) << full;
        EXPECT_EQ(Decode(bytes).status().code(), absl::StatusCode::kDataLoss);
      }
    }
  }
  // A broken entry of block 0 fails the top-10 read itself.
  std::string bytes = good;
  bytes[BlockEntryAt(bytes, SectionId::kValues, 0)] = 7;
  absl::StatusOr<std::unique_ptr<ResultView>> view = Open(bytes);
  ASSERT_TRUE(view.ok()) << view.status();
  EXPECT_NE(ReadItem(**view, r, 0), "");
}

// Many threads locating blocks at once, in different orders, across the
// reader's chunks of 8 blocks, read what was written.
TEST(ReaderTest, ConcurrentReadsAcrossManyBlocksAgree) {
  const RankResult r = ManyItems(3000);
  BuiltinCodecOptions options;
  options.writer.block_items = 2;  // 1500 blocks per column.
  const std::string bytes = Encode(r, options);
  absl::StatusOr<std::unique_ptr<ResultView>> view = Open(bytes);
  ASSERT_TRUE(view.ok()) << view.status();
  std::vector<std::string> problems(4);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < problems.size(); ++t) {
    threads.emplace_back([&, t] {
      for (size_t k = 0; k < r.size() && problems[t].empty(); ++k) {
        // Thread 0 reads from the end, the others stride through.
        const size_t i = t == 0 ? r.size() - 1 - k : (k * (2 * t + 1) + t) % r.size();
        problems[t] = ReadItem(**view, r, i);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (const std::string& p : problems) EXPECT_EQ(p, "");
}

// Compatibility rules ------------------------------------------------------

TEST(CompatibilityTest, UnknownSectionsAreSkipped) {
  const Payload p = ExamplePayload();
  const std::string unknown = Payload::Section(9, "future") + Payload::Section(255, "");
  // Five known sections and three unknown ones, twice: 11.
  const std::string bytes = p.Header(11) + unknown + Payload::Section(1, p.KeysBody()) +
                            Payload::Section(2, p.ShapesBody()) + unknown +
                            Payload::Section(3, p.ItemsBody()) +
                            Payload::Section(4, Payload::BlocksBody(p.values)) +
                            Payload::Section(5, Payload::BlocksBody(*p.logs)) + unknown;
  absl::StatusOr<RankResult> r = Decode(bytes);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(DiffResults(*r, ExampleResult()), "");
}

TEST(CompatibilityTest, SectionsMayComeInAnyOrder) {
  const Payload p = ExamplePayload();
  const std::string bytes = p.Header(5) + Payload::Section(5, Payload::BlocksBody(*p.logs)) +
                            Payload::Section(4, Payload::BlocksBody(p.values)) +
                            Payload::Section(3, p.ItemsBody()) +
                            Payload::Section(2, p.ShapesBody()) + Payload::Section(1, p.KeysBody());
  absl::StatusOr<RankResult> r = Decode(bytes);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(DiffResults(*r, ExampleResult()), "");
}

// A key of an unknown type code with a known wire class: its values are
// skipped and it is not part of the decoded keys. One per wire class, in
// the middle of the shape so the values after it must be found past it.
TEST(CompatibilityTest, UnknownTypeCodesAreSkippedByWireClass) {
  struct Unknown {
    uint8_t code;
    std::string value;  // One value of it.
  };
  const Unknown unknowns[] = {
      {0x08, Bytes().Varint(300)},                 // wire class 0
      {0x19, Bytes().U32(0xdeadbeef)},             // wire class 1
      {0x0a, Bytes().F64(1.5)},                    // wire class 2
      {0x0b, Bytes().Str("opaque future bytes")},  // wire class 3
  };
  for (const Unknown& u : unknowns) {
    SCOPED_TRACE(static_cast<int>(u.code));
    ASSERT_FALSE(ModelTypeOf(u.code).has_value());
    Payload p = ExamplePayload();
    // Named like a known key: names need only be unique among known codes.
    p.keys.push_back({u.code, "score.ctr"});
    p.shapes = {{0, 2, 1}};
    const std::string run0 = Bytes().F64(0.25).Raw(u.value).Varint(0);
    const std::string run1 = Bytes().F64(0.125).Raw(u.value).Varint(0);
    p.values = {BlockSpec::Raw(run0 + run1)};
    p.items[1].values_offset = static_cast<uint32_t>(run0.size());
    const std::string bytes = p.Build();

    absl::StatusOr<RankResult> r = Decode(bytes);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(DiffResults(*r, ExampleResult()), "");
    absl::StatusOr<std::unique_ptr<ResultView>> view = Open(bytes);
    ASSERT_TRUE(view.ok());
    EXPECT_EQ((*view)->keys().size(), 2u);
    absl::StatusOr<std::optional<MetricRef>> src = (*view)->FindMetric(1, "recall.source");
    ASSERT_TRUE(src.ok()) << src.status();
    ASSERT_TRUE(src->has_value());
    EXPECT_EQ((*src)->string_value(), "vector_ann");
    absl::StatusOr<std::optional<MetricRef>> ctr = (*view)->FindMetric(1, "score.ctr");
    ASSERT_TRUE(ctr.ok() && ctr->has_value());
    EXPECT_EQ((*ctr)->double_value(), 0.125);
  }
}

TEST(CompatibilityTest, TrailingBytesInKeyEntriesAndItemRecordsAreIgnored) {
  Payload p = ExamplePayload();
  p.keys[0].extra = "\x01\x02\x03";
  p.keys[1].extra = std::string(200, '\x7f');  // Past one byte of entry length.
  p.items[0].extra = "\xff\xff\xff";
  p.items[1].extra = "newer field";
  absl::StatusOr<RankResult> r = Decode(p.Build());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(DiffResults(*r, ExampleResult()), "");
}

// The reader reads the common key entry (a type and a name of up to 127
// bytes, nothing after) in place and any other through the general path:
// names on both sides of that bound, empty ones, and entries with trailing
// bytes must read the same.
TEST(ReaderTest, KeyNamesOfEveryLengthClassReadBack) {
  RowResult r;
  for (size_t n : {size_t{1}, size_t{15}, size_t{126}, size_t{127}, size_t{128}, size_t{300}}) {
    r.AddKey(std::string(n, static_cast<char>('a' + n % 26)), MetricType::kDouble);
  }
  r.AddKey("", MetricType::kInt);
  RankedItem& item = AppendItem(r, 0);
  for (uint32_t k = 0; k < r.keys.size(); ++k) {
    item.metrics.push_back(
        {k, r.keys[k].type == MetricType::kInt ? MetricValue::Int(3) : MetricValue::Double(k)});
  }
  EXPECT_NE(RoundTrip(r, kRankbinCodecName), "");

  Payload p = ExamplePayload();
  p.keys[0].name = std::string(127, 'x');
  p.keys[0].extra = "\x01";  // One byte past the name: the general path.
  absl::StatusOr<RankResult> back = Decode(p.Build());
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->key(0).name, std::string(127, 'x'));
}

TEST(CompatibilityTest, AnyMinorVersionIsRead) {
  Payload p = ExamplePayload();
  p.minor = 9;
  absl::StatusOr<RankResult> r = Decode(p.Build());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(DiffResults(*r, ExampleResult()), "");
}

// The section count is what makes a payload cut between sections visible:
// the LOGS section is optional, so without it a payload cut just before
// LOGS would decode with every log empty.
TEST(SectionCountTest, PayloadCutBeforeTheLogsIsDetected) {
  const Payload p = ExamplePayload();
  const std::string full = p.Build();
  const std::string logs = Payload::Section(5, Payload::BlocksBody(*p.logs));
  const std::string cut = full.substr(0, full.size() - logs.size());
  absl::Status s = Open(cut).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(s.message()), HasSubstr("announces 5 sections; section 5 is cut short"));
}

TEST(SectionCountTest, MoreOrFewerSectionsThanAnnouncedAreErrors) {
  Payload p = ExamplePayload();
  p.section_count = 4;  // But five follow.
  absl::Status s = Open(p.Build()).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(s.message()), HasSubstr("bytes after the 4 sections"));
  p.section_count = 6;
  EXPECT_EQ(Open(p.Build()).status().code(), absl::StatusCode::kDataLoss);
  p.section_count = std::nullopt;
  EXPECT_EQ(Open(p.Build() + "x").status().code(), absl::StatusCode::kDataLoss);
}

TEST(CompatibilityTest, OtherMajorVersionsAreUnimplemented) {
  for (uint8_t major : {0, 2, 255}) {
    Payload p = ExamplePayload();
    p.major = major;
    absl::Status s = Open(p.Build()).status();
    EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented) << int{major};
    EXPECT_THAT(s.message(), HasSubstr("version"));
  }
}

TEST(CompatibilityTest, ReservedWireClassesAreRejected) {
  for (uint8_t code : {0x04, 0x05, 0x06, 0x07, 0x0c, 0x27}) {
    Payload p = ExamplePayload();
    p.keys.push_back({code, "reserved"});
    EXPECT_EQ(Open(p.Build()).status().code(), absl::StatusCode::kDataLoss) << int{code};
  }
}

// Malformed payloads ("Validity") ---------------------------------------------

void ExpectOpenFails(const std::string& bytes, absl::string_view message_part,
                     absl::StatusCode code = absl::StatusCode::kDataLoss) {
  absl::Status s = Open(bytes).status();
  EXPECT_EQ(s.code(), code) << s;
  EXPECT_THAT(s.message(), HasSubstr(std::string(message_part)));
}

// Open succeeds (the problem is in data read lazily); reading item `item`'s
// metrics and the whole result fail with DataLoss.
void ExpectReadFails(const std::string& bytes, size_t item, absl::string_view message_part) {
  absl::StatusOr<std::unique_ptr<ResultView>> view = Open(bytes);
  ASSERT_TRUE(view.ok()) << view.status();
  absl::Status s = (*view)->ForEachMetric(item, [](uint32_t, const MetricRef&) {});
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
  EXPECT_THAT(s.message(), HasSubstr(std::string(message_part)));
  EXPECT_EQ((*view)->Materialize().status().code(), absl::StatusCode::kDataLoss);
}

// Runs of common key entries are read in place, and the reader drops to
// the general path for one entry at a time (an unknown type, a dictionary,
// trailing bytes, a long name) and back: every key keeps its index, and
// known keys after an unknown one their place in the decoded table.
TEST(ReaderTest, KeysReadInPlaceAndThroughTheGeneralPathInterleave) {
  Payload p = ExamplePayload();
  p.keys = {{0x12, "a"},
            {0x08, "future"},  // Unknown type, varint wire class.
            {0x00, "b"},
            {0x20, "c", {"x", "y"}},
            {0x1b, "d", {}, "\x01"},  // Trailing bytes.
            {0x09, "e"},
            {0x12, std::string(130, 'n')},  // A two-byte name length.
            {0x12, "f"}};
  p.shapes = {{0, 1, 2, 3, 4, 5, 6, 7}};
  p.items = {{"sku-1", 0.5, 1, 0, 0}};
  Bytes values;
  values.F64(0.25).Varint(300).Varint(coding::ZigZagEncode64(-7)).Varint(1).Str("dee");
  values.U32(0x3fc00000).F64(2.5).F64(-1);  // 1.5f
  p.values = {BlockSpec::Raw(values)};
  p.logs.reset();

  RowResult want;
  const uint32_t a = want.AddKey("a", MetricType::kDouble);
  const uint32_t b = want.AddKey("b", MetricType::kInt);
  const uint32_t c = want.AddKey("c", MetricType::kString);
  const uint32_t d = want.AddKey("d", MetricType::kString);
  const uint32_t e = want.AddKey("e", MetricType::kFloat);
  const uint32_t n = want.AddKey(std::string(130, 'n'), MetricType::kDouble);
  const uint32_t f = want.AddKey("f", MetricType::kDouble);
  RankedItem& item = want.AddItem("sku-1", 0.5, 1);
  item.metrics = {{a, MetricValue::Double(0.25)}, {b, MetricValue::Int(-7)},
                  {c, MetricValue::String("y")},  {d, MetricValue::String("dee")},
                  {e, MetricValue::Float(1.5f)},  {n, MetricValue::Double(2.5)},
                  {f, MetricValue::Double(-1)}};

  const std::string bytes = p.Build();
  absl::StatusOr<RankResult> r = Decode(bytes);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(DiffResults(*r, want.Build()), "");
  // The lazy view names each metric by its index in the decoded table.
  absl::StatusOr<std::unique_ptr<ResultView>> view = Open(bytes);
  ASSERT_TRUE(view.ok()) << view.status();
  absl::Span<const MetricKey> keys = (*view)->keys();
  ASSERT_EQ(keys.size(), 7u);
  std::vector<std::string> names;
  ASSERT_TRUE(
      (*view)
          ->ForEachMetric(0, [&](uint32_t k, const MetricRef&) { names.push_back(keys[k].name); })
          .ok());
  EXPECT_THAT(names, ElementsAre("a", "b", "c", "d", "e", std::string(130, 'n'), "f"));
}

// An entry the in-place path cannot take is left to the general one, which
// reports it: a reserved wire class or an entry cut short after common ones.
TEST(MalformedTest, BadKeyEntryAfterCommonOnes) {
  Payload p = ExamplePayload();
  p.keys = {{0x12, "a"}, {0x12, "b"}, {0x0c, "bad"}};
  ExpectOpenFails(p.Build(), "key 2 (\"bad\") has reserved wire class 4");

  p = ExamplePayload();
  p.keys = {{0x12, "a"}, {0x12, "b"}, {0x12, "c"}};
  std::string keys = p.KeysBody();
  keys.pop_back();  // The last entry's name is one byte short.
  ExpectOpenFails(p.Header(4) + Payload::Section(1, keys) + Payload::Section(2, p.ShapesBody()) +
                      Payload::Section(3, p.ItemsBody()) +
                      Payload::Section(4, Payload::BlocksBody(p.values)),
                  "key entry");
}

// Shape indexes of one and two bytes are read in place; anything else (a
// longer varint, an index cut short) through the Reader, which reports
// errors. Overlong encodings read as their value (FORMAT.md).
TEST(ReaderTest, ShapeIndexesOfEveryEncodingReadBack) {
  Payload p = ExamplePayload();
  const auto with_shapes = [&p](const std::string& shapes) {
    return p.Header(5) + Payload::Section(1, p.KeysBody()) + Payload::Section(2, shapes) +
           Payload::Section(4, Payload::BlocksBody(p.values)) +
           Payload::Section(5, Payload::BlocksBody(*p.logs)) + Payload::Section(3, p.ItemsBody());
  };
  // A SHAPES body of one shape of two keys, written as `indexes`.
  const auto one_shape = [](absl::string_view indexes) {
    return Bytes().Varint(1).Varint(2).Raw(indexes).str();
  };
  using std::string_literals::operator""s;
  // 0 as "80 00", 1 as "81 80 00".
  absl::StatusOr<RankResult> r = Decode(with_shapes(one_shape("\x80\x00\x81\x80\x00"s)));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(DiffResults(*r, ExampleResult()), "");
  // 1 as "81 00" first, then a three-byte 0 ("80 80 00").
  p.values = {BlockSpec::Raw(Bytes().Varint(0).F64(0.25).Varint(0).F64(0.125))};
  r = Decode(with_shapes(one_shape("\x81\x00\x80\x80\x00"s)));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(DiffResults(*r, ExampleResult()), "");
  // Cut inside a two-byte index, and a repeat after an in-place index.
  ExpectReadFails(with_shapes(one_shape("\x01\x80"s)), 0, "shape keys");
  ExpectReadFails(with_shapes(one_shape("\x01\x81\x00"s)), 0, "repeated");
  // SHAPES as the payload's last section, ending in a two-byte index (so
  // the payload's last byte), whole and cut: nothing is read past it.
  const auto shapes_last = [&p](const std::string& shapes) {
    return p.Header(5) + Payload::Section(1, p.KeysBody()) +
           Payload::Section(4, Payload::BlocksBody(p.values)) +
           Payload::Section(5, Payload::BlocksBody(*p.logs)) + Payload::Section(3, p.ItemsBody()) +
           Payload::Section(2, shapes);
  };
  p.values = {BlockSpec::Raw(Bytes().F64(0.25).Varint(0).F64(0.125).Varint(0))};
  r = Decode(shapes_last(one_shape("\x00\x81\x00"s)));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(DiffResults(*r, ExampleResult()), "");
  ExpectReadFails(shapes_last(one_shape("\x00\x81"s)), 0, "shape keys");
}

TEST(MalformedTest, ShorterThanTheHeader) {
  const std::string bytes = ExamplePayload().Build();
  for (size_t n = 0; n < kHeaderSize; ++n) {
    ExpectOpenFails(bytes.substr(0, n), "header");
  }
}

TEST(MalformedTest, BadMagic) {
  Payload p = ExamplePayload();
  p.magic = "RKWC";
  ExpectOpenFails(p.Build(), "magic");
  p.magic = "PK\x03\x04";
  ExpectOpenFails(p.Build(), "magic");
}

TEST(MalformedTest, RepeatedKnownSection) {
  Payload p = ExamplePayload();
  p.section_count = 6;  // Announce the repeated section too.
  ExpectOpenFails(p.Build() + Payload::Section(1, p.KeysBody()), "twice");
  ExpectOpenFails(p.Build() + Payload::Section(5, Payload::BlocksBody(*p.logs)), "twice");
}

TEST(MalformedTest, MissingRequiredSection) {
  const Payload p = ExamplePayload();
  const std::string sections[] = {
      Payload::Section(1, p.KeysBody()), Payload::Section(2, p.ShapesBody()),
      Payload::Section(3, p.ItemsBody()), Payload::Section(4, Payload::BlocksBody(p.values))};
  const char* names[] = {"KEYS", "SHAPES", "ITEMS", "VALUES"};
  for (int missing = 0; missing < 4; ++missing) {
    std::string bytes = p.Header(3);
    for (int s = 0; s < 4; ++s) {
      if (s != missing) bytes += sections[s];
    }
    ExpectOpenFails(bytes, absl::StrCat("missing ", names[missing]));
  }
}

TEST(MalformedTest, SectionLengthPastTheEnd) {
  std::string bytes = ExamplePayload().Build();
  std::optional<SectionRef> logs = FindSection(bytes, SectionId::kLogs);
  ASSERT_TRUE(logs);
  coding::EncodeFixed32(&bytes[logs->body - 4], static_cast<uint32_t>(logs->size + 1));
  ExpectOpenFails(bytes, "truncated");
  coding::EncodeFixed32(&bytes[logs->body - 4], UINT32_MAX);
  ExpectOpenFails(bytes, "truncated");
}

// The directory is checked entry by entry as items are read (FORMAT.md,
// "What a lazy reader checks"): Open does not read it, reading an item whose
// entries are out of order or past the records fails, a full decode fails.
TEST(MalformedTest, ItemDirectoryOutOfOrderOrPastTheRecords) {
  Payload p = ExamplePayload();
  for (std::vector<uint32_t> directory :
       {std::vector<uint32_t>{17, 0},     // Item 0 ends before it starts.
        std::vector<uint32_t>{0, 35}}) {  // Records are 34 bytes.
    p.directory = directory;
    absl::StatusOr<std::unique_ptr<ResultView>> view = Open(p.Build());
    ASSERT_TRUE(view.ok()) << view.status();
    absl::Status s = (*view)->Item(directory[0] == 0 ? 1 : 0).status();
    EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
    EXPECT_THAT(s.message(), HasSubstr("directory"));
    EXPECT_EQ((*view)->Materialize().status().code(), absl::StatusCode::kDataLoss);
  }
  p.directory = std::vector<uint32_t>{0, 34};  // An empty last record: too short to read.
  absl::StatusOr<std::unique_ptr<ResultView>> view = Open(p.Build());
  ASSERT_TRUE(view.ok()) << view.status();
  EXPECT_EQ((*view)->Item(1).status().code(), absl::StatusCode::kDataLoss);
  EXPECT_TRUE((*view)->Item(0).ok());
}

// Shapes are parsed when an item names them; a full decode parses them all.
TEST(MalformedTest, ShapeIndexRepeatedOrOutOfRange) {
  Payload p = ExamplePayload();
  p.shapes = {{0, 0}};
  ExpectReadFails(p.Build(), 0, "repeated");
  p.shapes = {{0, 2}};
  ExpectReadFails(p.Build(), 0, "out of range");
  // More indexes than keys fails before anything is sized by the count.
  p.shapes = {{0, 1, 0}};
  ExpectReadFails(p.Build(), 0, "count 3 exceeds the 2 possible indexes");
  p.shapes = {{0, 1}, {1, 1}};  // No item names shape 1.
  absl::StatusOr<std::unique_ptr<ResultView>> view = Open(p.Build());
  ASSERT_TRUE(view.ok()) << view.status();
  EXPECT_TRUE((*view)->ForEachMetric(0, [](uint32_t, const MetricRef&) {}).ok());
  absl::Status s = (*view)->Materialize().status();
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(s.message(), HasSubstr("repeated"));
}

TEST(MalformedTest, TrailingBytesAfterTheLastShapeOrKey) {
  Payload p = ExamplePayload();
  const std::string shapes = p.ShapesBody() + std::string(1, '\0');
  const std::string bytes =
      p.Header(5) + Payload::Section(1, p.KeysBody()) + Payload::Section(2, shapes) +
      Payload::Section(4, Payload::BlocksBody(p.values)) +
      Payload::Section(5, Payload::BlocksBody(*p.logs)) + Payload::Section(3, p.ItemsBody());
  absl::StatusOr<std::unique_ptr<ResultView>> view = Open(bytes);
  ASSERT_TRUE(view.ok()) << view.status();
  absl::Status s = (*view)->ForEachMetric(0, [](uint32_t, const MetricRef&) {});
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
  EXPECT_THAT(s.message(), HasSubstr("after the last shape"));
  // The error sticks: the same read again, and a full decode, fail too (the
  // last shape was once published before the check, so only the read that
  // parsed it saw the error).
  s = (*view)->ForEachMetric(0, [](uint32_t, const MetricRef&) {});
  EXPECT_THAT(s.message(), HasSubstr("after the last shape"));
  EXPECT_THAT((*view)->Materialize().status().message(), HasSubstr("after the last shape"));
  const std::string keys = p.KeysBody() + std::string(1, '\0');
  ExpectOpenFails(p.Header(4) + Payload::Section(1, keys) + Payload::Section(2, p.ShapesBody()) +
                      Payload::Section(3, p.ItemsBody()) +
                      Payload::Section(4, Payload::BlocksBody(p.values)),
                  "after the last key");
}

TEST(MalformedTest, CountsLargerThanTheBytesLeft) {
  Payload p = ExamplePayload();
  // 2 keys declared as 1000.
  std::string keys = p.KeysBody();
  keys[0] = '\xe8';
  keys.insert(1, "\x07");
  ExpectOpenFails(p.Header(4) + Payload::Section(1, keys) + Payload::Section(2, p.ShapesBody()) +
                      Payload::Section(3, p.ItemsBody()) +
                      Payload::Section(4, Payload::BlocksBody(p.values)),
                  "key count");
  // An item count the section cannot hold (16 bytes each at least).
  std::string items = Bytes().Varint(uint64_t{1} << 40).Varint(32);
  ExpectOpenFails(p.Header(4) + Payload::Section(1, p.KeysBody()) +
                      Payload::Section(2, p.ShapesBody()) + Payload::Section(3, items) +
                      Payload::Section(4, Payload::BlocksBody(p.values)),
                  "item count");
}

TEST(MalformedTest, BlockItemsZero) {
  Payload p = ExamplePayload();
  p.block_items = 0;
  ExpectOpenFails(p.Build(), "block items");
}

TEST(MalformedTest, WrongBlockCount) {
  Payload p = ExamplePayload();
  const BlockSpec empty = BlockSpec::Raw("");
  p.values.push_back(empty);  // 2 items in blocks of 32 make 1 block, not 2.
  ExpectOpenFails(p.Build(), "blocks");
  p.values.clear();
  ExpectOpenFails(p.Build(), "blocks");
  p = ExamplePayload();
  p.block_items = 1;  // Now 2 blocks are needed; VALUES has 1.
  ExpectOpenFails(p.Build(), "blocks");
  p = ExamplePayload();
  p.logs->push_back(empty);
  ExpectOpenFails(p.Build(), "LOGS");
}

// Block directory entries are checked when their block is first read (a
// lazy reader: FORMAT.md, "What a lazy reader checks"), and by a full decode.
TEST(MalformedTest, RawBlockSizesDiffer) {
  Payload p = ExamplePayload();
  p.values[0].raw_size -= 1;
  ExpectReadFails(p.Build(), 0, "VALUES block 0 is raw but its sizes differ");
}

TEST(MalformedTest, UnknownBlockCodec) {
  for (uint8_t codec : {2, 255}) {
    Payload p = ExamplePayload();
    p.values[0].codec = codec;
    ExpectReadFails(p.Build(), 1, "VALUES block 0 has unknown codec");
    p = ExamplePayload();
    (*p.logs)[0].codec = codec;
    absl::StatusOr<std::unique_ptr<ResultView>> view = Open(p.Build());
    ASSERT_TRUE(view.ok()) << view.status();
    absl::Status s = (*view)->Log(1).status();
    EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
    EXPECT_THAT(s.message(), HasSubstr("LOGS block 0 has unknown codec"));
    EXPECT_EQ((*view)->Materialize().status().code(), absl::StatusCode::kDataLoss);
  }
}

TEST(MalformedTest, BlockDataPastTheSection) {
  Payload p = ExamplePayload();
  p.values[0].stored.pop_back();  // The directory still says 18 bytes.
  std::string body = Payload::BlocksBody(p.values);
  coding::EncodeFixed32(&body[2], 18);
  coding::EncodeFixed32(&body[6], 18);
  ExpectReadFails(p.Header(4) + Payload::Section(1, p.KeysBody()) +
                      Payload::Section(2, p.ShapesBody()) + Payload::Section(3, p.ItemsBody()) +
                      Payload::Section(4, body),
                  0, "block data");
}

TEST(MalformedTest, CorruptZstdFrame) {
  Payload p = ExamplePayload();
  const std::string raw = p.values[0].stored;
  p.values[0] = {static_cast<uint8_t>(BlockCodec::kZstd), std::string(18, '\x42'), 18};
  ExpectReadFails(p.Build(), 0, "zstd");
  // A valid frame of the wrong size.
  p.values[0] = BlockSpec::Zstd(raw);
  p.values[0].raw_size += 1;
  ExpectReadFails(p.Build(), 1, "zstd");
  // And the frame itself, undamaged, reads back.
  p.values[0] = BlockSpec::Zstd(raw);
  absl::StatusOr<RankResult> good = Decode(p.Build());
  ASSERT_TRUE(good.ok()) << good.status();
  EXPECT_EQ(DiffResults(*good, ExampleResult()), "");
}

// Integrity (FORMAT.md 1.1): a single-bit flip anywhere in a checksummed
// frame is an error or, where it lands in bits the decoder does not use,
// gives the same bytes; never different bytes.
TEST(IntegrityTest, NoBitFlipInACompressedBlockDecodesToDifferentBytes) {
  Payload p = ExamplePayload();
  std::string text;
  for (int i = 0; i < 40; ++i) absl::StrAppend(&text, "model=lr-v3 item=", i, " recall=ann; ");
  p.logs = std::vector<BlockSpec>{BlockSpec::Zstd(Bytes().Str("").Str(text))};
  ASSERT_TRUE(Decode(p.Build()).ok());
  const std::string good = p.logs->at(0).stored;
  int detected = 0, flips = 0;
  for (size_t byte = 0; byte < good.size(); ++byte) {
    for (int bit = 0; bit < 8; ++bit, ++flips) {
      (*p.logs)[0].stored = good;
      (*p.logs)[0].stored[byte] ^= static_cast<char>(1 << bit);
      absl::StatusOr<std::unique_ptr<ResultView>> view = Open(p.Build());
      ASSERT_TRUE(view.ok());
      absl::StatusOr<absl::string_view> log = (*view)->Log(1);
      if (!log.ok()) {
        EXPECT_EQ(log.status().code(), absl::StatusCode::kDataLoss);
        ++detected;
      } else {
        EXPECT_EQ(*log, text) << "byte " << byte << " bit " << bit;
      }
    }
  }
  // Almost every flip is detected; the rest changed nothing.
  EXPECT_GT(detected, flips * 9 / 10);
}

TEST(IntegrityTest, FramesOf1_1PayloadsMustCarryAChecksum) {
  Payload p = ExamplePayload();
  const std::string raw = p.values[0].stored;
  p.values[0] = BlockSpec::Zstd(raw, /*checksum=*/false);
  ExpectReadFails(p.Build(), 0, "checksum");
  p.minor = 0;  // A 1.0 payload's frames may lack it.
  absl::StatusOr<RankResult> old = Decode(p.Build());
  ASSERT_TRUE(old.ok()) << old.status();
  EXPECT_EQ(DiffResults(*old, ExampleResult()), "");
}

TEST(IntegrityTest, OnlyOnePlainFrameIsABlock) {
  Payload p = ExamplePayload();
  const std::string raw = p.values[0].stored;
  const BlockSpec frame = BlockSpec::Zstd(raw);
  // Trailing bytes after the frame.
  p.values[0] = frame;
  p.values[0].stored += std::string(1, '\0');
  ExpectReadFails(p.Build(), 0, "after the frame");
  // A skippable frame (magic 0x184D2A50, 0 bytes of content) first.
  p.values[0] = frame;
  p.values[0].stored = Bytes().U32(0x184D2A50).U32(0).str() + frame.stored;
  ExpectReadFails(p.Build(), 0, "skippable");
  // A dictionary id (descriptor bits 0-1) is not allowed.
  p.values[0] = frame;
  p.values[0].stored[4] |= 1;
  ExpectReadFails(p.Build(), 0, "dictionary");
}

TEST(MalformedTest, DictionaryIndexOutOfRange) {
  Payload p = ExamplePayload();
  p.values = {BlockSpec::Raw(Bytes().F64(0.25).Varint(0).F64(0.125).Varint(1))};
  ExpectReadFails(p.Build(), 1, "dictionary index");
  absl::StatusOr<std::unique_ptr<ResultView>> view = Open(p.Build());
  ASSERT_TRUE(view.ok());
  EXPECT_EQ((*view)->FindMetric(1, "recall.source").status().code(), absl::StatusCode::kDataLoss);
  EXPECT_TRUE((*view)->FindMetric(1, "score.ctr").ok());  // Before the bad value.
  EXPECT_TRUE((*view)->FindMetric(0, "recall.source").ok());
}

TEST(MalformedTest, RecordShapeOutOfRange) {
  Payload p = ExamplePayload();
  p.items[1].shape = 1;
  ExpectReadFails(p.Build(), 1, "shape");
}

TEST(MalformedTest, ValuesOffsetPastItsBlock) {
  Payload p = ExamplePayload();
  p.items[1].values_offset = 19;  // The block is 18 bytes.
  ExpectReadFails(p.Build(), 1, "values offset");
  p.items[1].values_offset = 17;  // Inside, but the run is cut short.
  ExpectReadFails(p.Build(), 1, "truncated");
}

TEST(MalformedTest, LogPastItsBlock) {
  Payload p = ExamplePayload();
  p.logs = std::vector<BlockSpec>{BlockSpec::Raw(Bytes().Str("").Varint(5).Raw("hi"))};
  absl::StatusOr<std::unique_ptr<ResultView>> view = Open(p.Build());
  ASSERT_TRUE(view.ok()) << view.status();
  EXPECT_EQ(*(*view)->Log(0), "");
  EXPECT_EQ((*view)->Log(1).status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ((*view)->Materialize().status().code(), absl::StatusCode::kDataLoss);
}

TEST(MalformedTest, OverlongOrOversizedVarint) {
  // Item 1's position: 11 bytes; a 10-byte varint past 64 bits; one past 32.
  const std::string positions[] = {std::string(10, '\x81') + std::string(1, '\0'),
                                   std::string(9, '\xff') + "\x02",
                                   Bytes().Varint(uint64_t{1} << 32).str()};
  for (const std::string& position : positions) {
    Payload p = ExamplePayload();
    p.items[1].raw = Bytes().Str("sku-2").F64(0.25).Raw(position).Varint(0).Varint(9).str();
    absl::StatusOr<std::unique_ptr<ResultView>> view = Open(p.Build());
    ASSERT_TRUE(view.ok()) << view.status();
    EXPECT_TRUE((*view)->Item(0).ok());
    absl::Status s = (*view)->Item(1).status();
    EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
    EXPECT_THAT(s.message(), HasSubstr("item position"));
  }
}

// Caps ---------------------------------------------------------------------------

TEST(CapTest, DecodedSizeOfZstdBlocksIsCappedBeforeDecoding) {
  Payload p = ExamplePayload();
  p.block_items = 1;
  p.items[1].values_offset = 0;
  const std::string run0 = Bytes().F64(0.25).Varint(0);
  const std::string run1 = Bytes().F64(0.125).Varint(0);
  p.values = {BlockSpec::Zstd(run0), BlockSpec::Zstd(run1)};
  p.logs =
      std::vector<BlockSpec>{BlockSpec::Zstd(Bytes().Str("")), BlockSpec::Zstd(Bytes().Str("hi"))};
  const std::string bytes = p.Build();
  const uint64_t total = 9 + 9 + 1 + 3;  // Every zstd block's raw_size.

  ReaderOptions exact;
  exact.max_decoded_bytes = total;
  absl::StatusOr<RankResult> r = Decode(bytes, exact);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(DiffResults(*r, ExampleResult()), "");

  // The cap counts every zstd block a reader has located: reading item 0
  // locates block 0 of each column (9 + 1 bytes), a full decode all four.
  ReaderOptions small;
  small.max_decoded_bytes = total - 1;
  absl::StatusOr<std::unique_ptr<ResultView>> view = Open(bytes, small);
  ASSERT_TRUE(view.ok()) << view.status();
  EXPECT_TRUE((*view)->ForEachMetric(0, [](uint32_t, const MetricRef&) {}).ok());
  EXPECT_TRUE((*view)->Log(0).ok());
  absl::Status s = (*view)->Materialize().status();
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
  EXPECT_EQ(Decode(bytes, small).status().code(), absl::StatusCode::kResourceExhausted);

  // A frame claiming gigabytes is refused when its block is first read,
  // before any allocation.
  Payload huge = ExamplePayload();
  huge.values = {BlockSpec::Zstd(std::string(1 << 16, '\0'))};
  huge.values[0].raw_size = UINT32_MAX;
  view = Open(huge.Build());
  ASSERT_TRUE(view.ok()) << view.status();
  s = (*view)->ForEachMetric(0, [](uint32_t, const MetricRef&) {});
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
  EXPECT_EQ((*view)->Materialize().status().code(), absl::StatusCode::kResourceExhausted);
}

// One long dictionary value shared by many items: materializing it makes one
// string entry that every item's code names, not 5000 copies.
TEST(CapTest, SharedDictionaryValuesStayShared) {
  const std::string big(20000, 'w');
  Payload p;
  p.keys = {{0x20, "model", {big}}};
  p.shapes = {{0}};
  p.block_items = 8192;
  std::string run;
  for (uint32_t i = 0; i < 5000; ++i) {
    p.items.push_back({"", 0, i + 1, 0, i});
    run.push_back('\0');  // Dictionary index 0.
  }
  p.values = {BlockSpec::Raw(run)};
  ReaderOptions options;
  options.max_materialized_bytes = 16 << 20;  // 5000 copies would be 100 MB.
  absl::StatusOr<std::unique_ptr<ResultView>> view = Open(p.Build(), options);
  ASSERT_TRUE(view.ok()) << view.status();
  absl::StatusOr<RankResult> r = (*view)->Materialize();
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->size(), 5000u);
  const Column& model = r->column(0);
  EXPECT_EQ(model.entry_count(), 1u);
  EXPECT_EQ(model.entry_bytes(), big.size());
  EXPECT_EQ(model.present_count(), 5000u);
  for (size_t i = 0; i < r->size(); ++i) {
    ASSERT_EQ(model.codes()[i], 0u);
    ASSERT_EQ(model.string_at(i), big);
  }
}

// Items that all point at one value run holding a long plain string: a
// payload of ~25 KB that would materialize to ~100 MB. Materialize() stays
// within the reader's cap; lazy reads, which return views, are unaffected.
TEST(CapTest, MaterializeIsCappedWhenItemsShareAValueRun) {
  const std::string big(20000, 'w');
  Payload p;
  p.keys = {{0x1b, "note"}};
  p.shapes = {{0}};
  p.block_items = 8192;
  for (uint32_t i = 0; i < 5000; ++i) p.items.push_back({"", 0, i + 1, 0, 0});
  p.values = {BlockSpec::Raw(Bytes().Str(big))};
  const std::string bytes = p.Build();
  ASSERT_LT(bytes.size(), 150000u);

  ReaderOptions options;
  options.max_materialized_bytes = 16 << 20;
  absl::StatusOr<std::unique_ptr<ResultView>> view = Open(bytes, options);
  ASSERT_TRUE(view.ok()) << view.status();
  absl::StatusOr<std::optional<MetricRef>> m = (*view)->FindMetric(4999, "note");
  ASSERT_TRUE(m.ok() && m->has_value());
  EXPECT_EQ((*m)->string_value().size(), big.size());
  absl::Status s = (*view)->Materialize().status();
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
}

// Full decode -------------------------------------------------------------------
// Materialize reads every record before any value, and fills whole columns
// from a plan of the shape when every item has one; neither may change what
// a payload decodes to or which error it gives: the first one a reader of
// one item at a time meets.

// A string literal's bytes, NULs included.
template <size_t N>
std::string Lit(const char (&s)[N]) {
  return std::string(s, N - 1);
}

// Four keys of every value kind, one shape; item values as given.
Payload FourKindsPayload(const std::string& run0, const std::string& run1) {
  Payload p;
  p.keys = {{0x12, "ctr"}, {0x20, "source", {"ann", "bm25"}}, {0x00, "stock"}, {0x1b, "trace"}};
  p.shapes = {{0, 1, 2, 3}};
  p.items = {{"sku-1", 0.5, 1, 0, 0}, {"sku-2", 0.25, 2, 0, static_cast<uint32_t>(run0.size())}};
  p.values = {BlockSpec::Raw(run0 + run1)};
  return p;
}

TEST(FullDecodeTest, LongAndOverlongVarintsDecodeAsTheShortOnes) {
  const std::string run0 =
      Bytes().F64(0.25).Varint(1).Varint(coding::ZigZagEncode64(-300)).Str("abc");
  const Payload canonical =
      FourKindsPayload(run0, Bytes().F64(0.125).Varint(0).Varint(10).Str("xyz"));
  // Item 1: the dictionary index, the int and the string length overlong;
  // its record's position, shape and values offset in 4, 5 and 10 bytes.
  Payload overlong =
      FourKindsPayload(run0, Bytes()
                                 .F64(0.125)
                                 .Raw(Lit("\x80\x00"))
                                 .Raw(Lit("\x8a\x80\x80\x80\x80\x80\x80\x80\x80\x00"))
                                 .Raw(Lit("\x83\x80\x00"))
                                 .Raw("xyz"));
  ASSERT_LT(run0.size(), 0x80u);
  const std::string offset(1, static_cast<char>(0x80 | run0.size()));
  overlong.items[1].raw = Bytes()
                              .Str("sku-2")
                              .F64(0.25)
                              .Raw(Lit("\x82\x80\x80\x00"))
                              .Raw(Lit("\x80\x80\x80\x80\x00"))
                              .Raw(offset + std::string(8, '\x80') + std::string(1, '\0'))
                              .str();
  absl::StatusOr<RankResult> a = Decode(canonical.Build());
  absl::StatusOr<RankResult> b = Decode(overlong.Build());
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(DiffResults(*a, *b), "");
  // No string was added twice (a plain string key's entries are its values).
  EXPECT_EQ(b->column(3).entry_count(), 2u);
  EXPECT_EQ(b->column(3).entry_bytes(), 6u);
  EXPECT_EQ(b->column(2).ints()[0], -300);
  EXPECT_EQ(b->column(2).ints()[1], 5);
}

TEST(FullDecodeTest, PositionsOutOfRankOrderAreKept) {
  Payload p = ExamplePayload();
  p.items[0].position = 7;
  p.items[1].position = 3;
  absl::StatusOr<RankResult> r = Decode(p.Build());
  ASSERT_TRUE(r.ok()) << r.status();
  RowResult rows = ExampleRows();
  rows.items[0].position = 7;
  rows.items[1].position = 3;
  EXPECT_EQ(DiffResults(*r, rows.Build()), "");
}

TEST(FullDecodeTest, BadValuesGiveTheErrorOfAOneItemRead) {
  const std::string run0 = Bytes().F64(0.25).Varint(1).Varint(4).Str("abc");
  const std::string bad_runs[] = {
      Bytes().Raw("1234567"),                                       // The double cut short.
      Bytes().F64(0.125).Varint(2),                                 // Dictionary index 2 of 2.
      Bytes().F64(0.125).Varint(0).Raw(std::string(10, '\xff')),    // The int past 64 bits.
      Bytes().F64(0.125).Varint(0).Varint(4).Varint(4).Raw("xyz"),  // The string cut short.
      Bytes().F64(0.125).Varint(0).Varint(4).Raw("\x80"),           // Its length cut short.
  };
  for (const std::string& run1 : bad_runs) {
    SCOPED_TRACE(Hex(run1));
    const std::string bytes = FourKindsPayload(run0, run1).Build();
    absl::StatusOr<std::unique_ptr<ResultView>> view = Open(bytes);
    ASSERT_TRUE(view.ok()) << view.status();
    absl::Status one = (*view)->ForEachMetric(1, [](uint32_t, const MetricRef&) {});
    ASSERT_EQ(one.code(), absl::StatusCode::kDataLoss) << one;
    EXPECT_EQ((*view)->Materialize().status(), one);
  }
}

TEST(FullDecodeTest, TheFirstErrorInItemOrderIsReported) {
  // A record cut short after its score.
  const auto cut = [](const char* id, double score) { return Bytes().Str(id).F64(score).str(); };
  {  // Item 0's values before item 1's record.
    Payload p = ExamplePayload();
    p.values = {BlockSpec::Raw(Bytes().F64(0.25).Varint(1).F64(0.125).Varint(0))};
    p.items[1].raw = cut("sku-2", 0.25);
    absl::Status s = Decode(p.Build()).status();
    EXPECT_THAT(s.message(), HasSubstr("dictionary index")) << s;
  }
  {  // Item 0's record before item 1's values.
    Payload p = ExamplePayload();
    p.values = {BlockSpec::Raw(Bytes().F64(0.25).Varint(0).F64(0.125).Varint(1))};
    p.items[0].raw = cut("sku-1", 0.5);
    absl::Status s = Decode(p.Build()).status();
    EXPECT_THAT(s.message(), HasSubstr("item position")) << s;
  }
  {  // Item 0's shape (out of range) before item 1's record.
    Payload p = ExamplePayload();
    p.items[0].shape = 1;
    p.items[1].raw = cut("sku-2", 0.25);
    absl::Status s = Decode(p.Build()).status();
    EXPECT_THAT(s.message(), HasSubstr("item 0: ")) << s;
    EXPECT_THAT(s.message(), HasSubstr("shape 1 out of range")) << s;
  }
  {  // Item 0's log before item 1's record.
    Payload p = ExamplePayload();
    p.logs = std::vector<BlockSpec>{BlockSpec::Raw(Bytes().Varint(9).Raw("hi"))};
    p.items[1].raw = cut("sku-2", 0.25);
    absl::Status s = Decode(p.Build()).status();
    EXPECT_THAT(s.message(), HasSubstr("(log)")) << s;
  }
  {  // Item 1's record before the second block's values (one item a block).
    Payload p = ExamplePayload();
    p.block_items = 1;
    p.items[1].values_offset = 0;
    p.values = {BlockSpec::Raw(Bytes().F64(0.25).Varint(0)), BlockSpec::Raw(Bytes().F64(0.125))};
    p.logs =
        std::vector<BlockSpec>{BlockSpec::Raw(Bytes().Str("")), BlockSpec::Raw(Bytes().Str("hi"))};
    p.items[1].raw = cut("sku-2", 0.25);
    absl::Status s = Decode(p.Build()).status();
    EXPECT_THAT(s.message(), HasSubstr("item position")) << s;
  }
  // The cap, passed by item 0's id, before item 1's record; and item 1's
  // record when the cap leaves room for item 0. (The columns count 2 x
  // (2 x 8 + 24) = 80 bytes first; "sku-1" 5 more.)
  for (const auto& [cap, code] : {std::pair{uint64_t{84}, absl::StatusCode::kResourceExhausted},
                                  std::pair{uint64_t{85}, absl::StatusCode::kDataLoss}}) {
    Payload p = ExamplePayload();
    p.items[1].raw = cut("sku-2", 0.25);
    ReaderOptions options;
    options.max_materialized_bytes = cap;
    absl::Status s = Decode(p.Build(), options).status();
    EXPECT_EQ(s.code(), code) << cap << ": " << s;
  }
}

// Plain strings of one shape are added in batches (of 64 items per key):
// batches, a partial last one, empty strings and one item per block all
// decode to the same entries, one per item, in item order.
TEST(FullDecodeTest, PlainStringsOfManyItemsReadBackInOrder) {
  for (const size_t items : {1, 63, 64, 65, 150}) {
    RowResult r;
    const uint32_t a = r.AddKey("a", MetricType::kString);
    const uint32_t x = r.AddKey("x", MetricType::kDouble);
    const uint32_t b = r.AddKey("b", MetricType::kString);
    for (size_t i = 0; i < items; ++i) {
      RankedItem& item = AppendItem(r, i);
      item.metrics = {{a, MetricValue::String(absl::StrCat("a-", i, std::string(i % 7 * 20, 'x')))},
                      {x, MetricValue::Double(0.5 * static_cast<double>(i))},
                      {b, MetricValue::String(i % 3 == 0 ? "" : absl::StrCat("b#", i * 7919))}};
    }
    for (const auto& [name, block_items] :
         {std::pair{kRankbinCodecName, 1u}, std::pair{kRankbinCodecName, 16u},
          std::pair{absl::string_view("rankbin-zstd"), 16u}}) {
      SCOPED_TRACE(absl::StrCat(name, ": ", items, " items, blocks of ", block_items));
      BuiltinCodecOptions options;
      options.writer.block_items = block_items;
      options.writer.max_dict_entries = 0;
      const std::string payload = RoundTrip(r, name, options);
      absl::StatusOr<RankResult> back = Decode(payload);
      ASSERT_TRUE(back.ok()) << back.status();
      for (const uint32_t k : {a, b}) {
        const Column& c = back->column(*back->FindKey(k == a ? "a" : "b"));
        EXPECT_EQ(c.entry_count(), items);
        for (size_t i = 0; i < items; ++i) EXPECT_EQ(c.codes()[i], i);
      }
    }
  }
}

}  // namespace
}  // namespace rankwire::rankbin
