// The conformance suite every codec must pass: it runs over each codec of
// test::MakeCodecsUnderTest() (tests/codecs/: every codec MakeBuiltinCodecs()
// registers plus the fixture codecs, so a codec added there is tested here
// with no further change), plus option variants of the rankbin codecs (one
// item per block, eager zstd on values and logs, a tiny dictionary limit).
//
//   round trip     Decode(Encode(r)) equals r, for edge-case results and
//                  hundreds of seeded random ones (tests/support/random_result.h)
//   lazy == full   TopN / ItemRef::Metric / ForEachMetric / Log read from a
//                  fresh view equal the same items of a full Materialize()
//   truncation     every prefix of a small payload fails (see
//                  TruncatedPayloadsNeverDecodeToSomethingElse for the two
//                  cuts a format cannot see)
//   corruption     every single-byte corruption fails or decodes to a valid
//                  result, consistently between lazy and full reads
//   invalid model  Encode rejects what ValidateResult rejects, InvalidArgument
//                  (what the model cannot even hold, AppendItem refuses)
//   out of range   Item(size()) and friends are OutOfRange
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "codec/builtin_codecs.h"
#include "codec/codec.h"
#include "codec/protobuf/protobuf_codec.h"
#include "codec/rank_result.h"
#include "codec/rankbin/rankbin_codec.h"
#include "gmock/gmock.h"
#include "google/protobuf/stubs/logging.h"
#include "gtest/gtest.h"
#include "rank/v1/rank.pb.h"
#include "tests/codecs/codecs_under_test.h"
#include "tests/support/random_result.h"
#include "tests/support/row_result.h"

namespace rankwire {
namespace {

using test::RowResult;
using ::testing::HasSubstr;

// Codecs under test -----------------------------------------------------

struct CodecUnderTest {
  std::string label;
  const Codec* codec = nullptr;
};

void PrintTo(const CodecUnderTest& c, std::ostream* os) { *os << c.label; }

CodecRegistry MustMakeCodecs(const BuiltinCodecOptions& options, bool with_fixtures) {
  absl::StatusOr<CodecRegistry> registry =
      with_fixtures ? test::MakeCodecsUnderTest(options) : MakeBuiltinCodecs(options);
  if (!registry.ok()) {
    std::fprintf(stderr, "making codecs: %s\n", registry.status().ToString().c_str());
    std::abort();
  }
  return *std::move(registry);
}

// The codecs live for the whole process (test parameters point at them),
// reachable from one static so leak checkers see them as in use.
struct CodecsUnderTest {
  std::vector<std::unique_ptr<CodecRegistry>> registries;
  std::vector<std::unique_ptr<Codec>> codecs;
  std::vector<CodecUnderTest> cases;
};

std::vector<CodecUnderTest> AllCodecs() {
  static const CodecsUnderTest* const all = [] {
    auto* out = new CodecsUnderTest;
    // Every registered codec, as the server builds them, and the fixtures.
    const CodecRegistry* builtin =
        out->registries.emplace_back(std::make_unique<CodecRegistry>(MustMakeCodecs({}, true)))
            .get();
    for (const std::string& name : builtin->Names()) {
      out->cases.push_back({name, builtin->Find(name)});
    }
    // Option variants of the codecs whose output depends on the options.
    auto add_variant = [&](const BuiltinCodecOptions& options, const std::string& suffix) {
      const CodecRegistry* registry =
          out->registries
              .emplace_back(std::make_unique<CodecRegistry>(MustMakeCodecs(options, false)))
              .get();
      for (const std::string& name : registry->Names()) {
        if (name == kProtobufCodecName) continue;  // Ignores these options.
        out->cases.push_back({name + suffix, registry->Find(name)});
      }
    };
    BuiltinCodecOptions one_per_block;
    one_per_block.writer.block_items = 1;
    add_variant(one_per_block, "/block_items=1");
    BuiltinCodecOptions eager_zstd;
    eager_zstd.writer.block_items = 4;
    eager_zstd.writer.compress_values = true;
    eager_zstd.writer.compress_logs = true;
    eager_zstd.writer.min_saving = 0;  // Keep every block zstd makes no larger.
    add_variant(eager_zstd, "/eager_zstd");
    // A two-entry dictionary limit, so random results overflow it, with
    // zstd's fast mode on values.
    rankbin::WriterOptions tiny_dict;
    tiny_dict.block_items = 3;
    tiny_dict.max_dict_entries = 2;
    tiny_dict.compress_values = true;
    tiny_dict.zstd_level = -3;
    tiny_dict.min_saving = 0;
    const Codec* tiny = out->codecs
                            .emplace_back(std::make_unique<RankbinCodec>(
                                "rankbin-tiny-dict", tiny_dict, rankbin::ReaderOptions{}))
                            .get();
    out->cases.push_back({"rankbin/max_dict_entries=2", tiny});
    return out;
  }();
  return all->cases;
}

std::string ParamName(const ::testing::TestParamInfo<CodecUnderTest>& info) {
  std::string name;
  for (char c : info.param.label)
    name.push_back(std::isalnum(static_cast<unsigned char>(c)) ? c : '_');
  return name;
}

// Helpers ----------------------------------------------------------------

// Whether a codec's bytes are `result` as a rank.v1.RankResult message (then a cut at a
// field boundary is a shorter valid message the format cannot tell apart).
bool IsProtobufMessageOf(const std::string& bytes, const RankResult& result) {
  rank::v1::RankResult message;
  return message.ParseFromString(bytes) && !result.empty() &&
         message.items_size() == static_cast<int>(result.size()) &&
         message.items(0).item_id() == result.id(0);
}

SharedBytes ExactCopy(absl::string_view bytes) {
  // An allocation of exactly bytes.size(), so a sanitizer sees any read
  // past the end (a std::string would have a terminator and slack).
  return SharedBytes::FromBuffer(OwnedBuffer::CopyOf(bytes));
}

using NamedMetrics = std::map<std::string, MetricValue>;

NamedMetrics MetricsOf(absl::Span<const MetricKey> keys, const RankedItem& item) {
  NamedMetrics out;
  for (const MetricEntry& e : item.metrics) {
    out.emplace(e.key < keys.size() ? keys[e.key].name : "<bad key>", e.value);
  }
  return out;
}

NamedMetrics MetricsOf(const RankResult& r, size_t i) {
  NamedMetrics out;
  for (uint32_t k = 0; k < r.key_count(); ++k) {
    if (std::optional<MetricRef> v = r.Get(i, k)) out.emplace(r.key(k).name, v->ToValue());
  }
  return out;
}

std::string Describe(const NamedMetrics& m) {
  std::string out = "{";
  for (const auto& [name, value] : m) absl::StrAppend(&out, name, "=", value.DebugString(), " ");
  return out + "}";
}

// One item as a result of its own, to compare with DiffResults; an item
// the model cannot hold (AppendItem refuses it) is an error.
absl::StatusOr<RankResult> Single(absl::Span<const MetricKey> keys, const RankedItem& item) {
  RankResult r;
  for (const MetricKey& k : keys) r.AddKey(k.name, k.type);
  if (absl::Status s = r.AppendItem(item); !s.ok()) return s;
  return r;
}

bool SameScore(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return a == b && std::signbit(a) == std::signbit(b);
}

// Reads item i of `view` every lazy way there is and compares each read that
// succeeds with `expected` (keys `expected_keys`). Failed reads are fine
// when `errors_allowed`; otherwise they are problems. With
// `logs_may_be_empty`, a successful Log() may also return "". Returns a
// description of the first disagreement, or "".
std::string CheckLazyItem(const ResultView& view, size_t i,
                          absl::Span<const MetricKey> expected_keys, const RankedItem& expected,
                          bool errors_allowed, bool logs_may_be_empty = false) {
  const std::string at = absl::StrCat("item ", i, ": ");
  auto failed = [&](const absl::Status& s, const char* what) -> std::string {
    return errors_allowed ? "" : absl::StrCat(at, what, " failed: ", s.ToString());
  };
  absl::StatusOr<ItemRef> ref = view.Item(i);
  if (!ref.ok()) return failed(ref.status(), "Item()");
  if (ref->index() != i) return absl::StrCat(at, "index ", ref->index());
  if (ref->id() != expected.item_id) return absl::StrCat(at, "id \"", ref->id(), "\"");
  if (!SameScore(ref->score(), expected.score)) return absl::StrCat(at, "score ", ref->score());
  if (ref->position() != expected.position) return absl::StrCat(at, "position ", ref->position());

  const NamedMetrics want = MetricsOf(expected_keys, expected);
  // Metric(name) for every key either side knows, and one nobody knows.
  std::vector<std::string> names;
  for (const MetricKey& k : view.keys()) names.push_back(k.name);
  for (const MetricKey& k : expected_keys) names.push_back(k.name);
  names.push_back("\x01no such key\x02");
  for (const std::string& name : names) {
    absl::StatusOr<std::optional<MetricRef>> got = ref->Metric(name);
    if (!got.ok()) {
      if (std::string p = failed(got.status(), "Metric()"); !p.empty()) return p;
      continue;
    }
    auto it = want.find(name);
    if (!got->has_value()) {
      if (it != want.end()) return absl::StrCat(at, "metric \"", name, "\" missing");
    } else if (it == want.end()) {
      return absl::StrCat(at, "metric \"", name,
                          "\" unexpected: ", (*got)->ToValue().DebugString());
    } else if ((*got)->ToValue() != it->second) {
      return absl::StrCat(at, "metric \"", name, "\" ", (*got)->ToValue().DebugString(), " vs ",
                          it->second.DebugString());
    }
  }
  NamedMetrics seen;
  absl::Status s = ref->ForEachMetric([&](uint32_t key, const MetricRef& v) {
    seen.emplace(key < view.keys().size() ? view.keys()[key].name : "<bad key>", v.ToValue());
  });
  if (!s.ok()) {
    if (std::string p = failed(s, "ForEachMetric()"); !p.empty()) return p;
  } else if (seen != want) {
    return absl::StrCat(at, "ForEachMetric ", Describe(seen), " vs ", Describe(want));
  }
  absl::StatusOr<absl::string_view> log = ref->Log();
  if (!log.ok()) {
    if (std::string p = failed(log.status(), "Log()"); !p.empty()) return p;
  } else if (*log != expected.log && !(logs_may_be_empty && log->empty())) {
    return absl::StrCat(at, "log \"", *log, "\"");
  }
  absl::StatusOr<RankedItem> item = ref->Materialize();
  if (!item.ok()) {
    if (std::string p = failed(item.status(), "ItemRef::Materialize()"); !p.empty()) return p;
  } else {
    RankedItem want_item = expected;
    if (logs_may_be_empty && item->log.empty()) want_item.log.clear();
    absl::StatusOr<RankResult> got = Single(view.keys(), *item);
    absl::StatusOr<RankResult> want_single = Single(expected_keys, want_item);
    if (!got.ok() || !want_single.ok()) {
      return absl::StrCat(at, "ItemRef::Materialize: ", got.status().ToString(), " / ",
                          want_single.status().ToString());
    }
    std::string diff = DiffResults(*got, *want_single);
    if (!diff.empty()) return absl::StrCat(at, "ItemRef::Materialize: ", diff);
  }
  return "";
}

// True if `part` is `whole` cut short: fewer items, each equal to the item
// of `whole` at its position, and keys that `whole` has.
bool IsLeadingPart(const RankResult& part, const RankResult& whole) {
  if (part.size() >= whole.size()) return false;
  for (const MetricKey& k : part.keys()) {
    std::optional<uint32_t> w = whole.FindKey(k.name);
    if (!w || whole.key(*w).type != k.type) return false;
  }
  for (size_t i = 0; i < part.size(); ++i) {
    if (part.id(i) != whole.id(i) || !SameScore(part.score(i), whole.score(i)) ||
        part.position(i) != whole.position(i) || part.log(i) != whole.log(i) ||
        MetricsOf(part, i) != MetricsOf(whole, i)) {
      return false;
    }
  }
  return true;
}

// Exercises every read of a view over untrusted bytes. Returns the full
// decode when it succeeds. Also checks that whatever decodes is a valid
// model and that lazy reads agree with it.
absl::StatusOr<RankResult> ReadEverything(const ResultView& view, std::string* problem) {
  const size_t n = view.size();
  absl::Span<const MetricKey> keys = view.keys();
  for (size_t i = 0; i < std::min<size_t>(n, 64); ++i) {
    absl::StatusOr<ItemRef> ref = view.Item(i);
    if (!ref.ok()) continue;
    for (const MetricKey& k : keys) (void)ref->Metric(k.name);
    (void)ref->ForEachMetric([](uint32_t, const MetricRef&) {});
    (void)ref->Log();
  }
  if (view.Item(n).status().code() != absl::StatusCode::kOutOfRange) {
    *problem = "Item(size()) is not OutOfRange";
  }
  absl::StatusOr<RankResult> all = view.Materialize();
  if (!all.ok()) return all;
  if (absl::Status s = ValidateResult(*all); !s.ok()) {
    *problem = absl::StrCat("decoded an invalid model: ", s.ToString());
    return all;
  }
  for (size_t i = 0; i < std::min<size_t>(n, 64) && problem->empty(); ++i) {
    *problem = CheckLazyItem(view, i, all->keys(), all->Item(i), /*errors_allowed=*/false);
  }
  return all;
}

// Results ----------------------------------------------------------------

// Three items with a key of every type (a repeated string, so rankbin makes
// a dictionary, and a unique one), every key used by every item, logs on
// two items. Small enough to cut and corrupt at every byte.
RankResult SmallResult() {
  RowResult r;
  const uint32_t ctr = r.AddKey("score.ctr", MetricType::kDouble);
  const uint32_t w = r.AddKey("w", MetricType::kFloat);
  const uint32_t clicks = r.AddKey("clicks", MetricType::kInt);
  const uint32_t src = r.AddKey("recall.source", MetricType::kString);
  const uint32_t title = r.AddKey("título", MetricType::kString);
  for (uint32_t i = 0; i < 3; ++i) {
    RankedItem& item = r.AddItem(absl::StrCat("sku-", i), 1.0 - 0.25 * i, i + 1);
    item.metrics = {{title, MetricValue::String(absl::StrCat("title ", i, " ünïcode"))},
                    {ctr, MetricValue::Double(0.01 * i)},
                    {src, MetricValue::String("vector_ann")},
                    {clicks, MetricValue::Int(i == 1 ? -300 : 7)},
                    {w, MetricValue::Float(0.5f * i)}};
    if (i != 1) item.log = absl::StrCat("model=lr-v3 item=", i);
  }
  return r.Build();
}

struct NamedResult {
  std::string name;
  RankResult result;
};

// Every edge value of every type, one per item, plus long strings.
RankResult EdgeValues() {
  RowResult r;
  const uint32_t i64 = r.AddKey("int", MetricType::kInt);
  const uint32_t f32 = r.AddKey("float", MetricType::kFloat);
  const uint32_t f64 = r.AddKey("double", MetricType::kDouble);
  const uint32_t str = r.AddKey("string", MetricType::kString);
  using DL = std::numeric_limits<double>;
  using FL = std::numeric_limits<float>;
  const int64_t ints[] = {INT64_MIN, INT64_MAX, 0, -1, 1, 63, -64, 64, -65};
  const float floats[] = {
      0.0f,      -0.0f,     FL::infinity(), -FL::infinity(), FL::quiet_NaN(), FL::denorm_min(),
      FL::min(), FL::max(), FL::lowest()};
  const double doubles[] = {
      0.0,       -0.0,      DL::infinity(), -DL::infinity(), DL::quiet_NaN(), DL::denorm_min(),
      DL::min(), DL::max(), DL::lowest()};
  // Around MetricValue's inline limit (10 bytes) and its former one (14).
  const std::string strings[] = {
      "",        std::string(10, 'x'),   std::string(11, 'y'), std::string(10000, 'z'),
      "😀ключ中", std::string("\0\0", 2), std::string(14, 'x'), std::string(15, 'y'),
      "a"};
  for (size_t i = 0; i < 9; ++i) {
    RankedItem& item = r.AddItem(absl::StrCat("edge-", i), doubles[i],
                                 i == 0 ? UINT32_MAX : static_cast<uint32_t>(i));
    item.metrics = {{i64, MetricValue::Int(ints[i])},
                    {f32, MetricValue::Float(floats[i])},
                    {f64, MetricValue::Double(doubles[i])},
                    {str, MetricValue::String(strings[i])}};
    item.log = i == 3 ? std::string(20000, 'L') : "";
  }
  return r.Build();
}

// Items carrying different key subsets. (Rows used to list them in
// different orders too; the model keeps no per-item order.) Cells are set
// in a scrambled order.
RankResult SeveralShapes() {
  RankResult r;
  for (int k = 0; k < 6; ++k) r.AddKey(absl::StrCat("k", k), static_cast<MetricType>(1 + k % 4));
  const std::vector<std::vector<uint32_t>> shapes = {
      {0, 1, 2, 3, 4, 5}, {5, 4, 3}, {}, {3}, {2, 0}};
  for (int i = 0; i < 20; ++i) r.AddItem(absl::StrCat("s", i), 0, static_cast<uint32_t>(i + 1));
  for (int j = 0; j < 20; ++j) {
    const int i = (j * 7) % 20;
    const std::string text(static_cast<size_t>(i % 20), 's');
    for (uint32_t k : shapes[static_cast<size_t>(i) % shapes.size()]) {
      const MetricType t = r.key(k).type;
      const MetricRef v = t == MetricType::kInt      ? MetricRef::Int(i * 1000003)
                          : t == MetricType::kFloat  ? MetricRef::Float(static_cast<float>(i) / 7)
                          : t == MetricType::kDouble ? MetricRef::Double(i / 3.0)
                                                     : MetricRef::String(text);
      EXPECT_TRUE(r.Set(static_cast<size_t>(i), k, v).ok());
    }
  }
  return r;
}

// String columns as builders make them: entries that no item uses (a long
// one among them), equal entries under two codes, codes used in any order,
// items without the key; and a whole column of one dictionary entry.
RankResult SharedStringEntries() {
  RankResult r;
  const uint32_t src = r.AddKey("recall.source", MetricType::kString);
  const uint32_t model = r.AddKey("model", MetricType::kString);
  const uint32_t ctr = r.AddKey("ctr", MetricType::kDouble);
  for (int i = 0; i < 40; ++i) r.AddItem(absl::StrCat("sku-", i), 1.0 / (i + 1), i + 1);
  r.AddStringEntry(src, std::string(500, 'u'));
  const uint32_t codes[] = {r.AddStringEntry(src, "vector_ann"), r.AddStringEntry(src, ""),
                            r.AddStringEntry(src, "vector_ann"), r.AddStringEntry(src, "bm25")};
  for (int i = 39; i >= 0; --i) {
    if (i % 5 != 4) r.SetStringCode(static_cast<size_t>(i), src, codes[(i * 3) % 4]);
  }
  const uint32_t version = r.AddStringEntry(model, "lr-v3-2024-06-01-production");
  uint32_t* models = r.MutableCodes(model);
  double* ctrs = r.MutableDoubles(ctr);
  for (size_t i = 0; i < r.size(); ++i) {
    models[i] = version;
    ctrs[i] = 0.01 * static_cast<double>(i);
  }
  return r;
}

// A result built into one that held another (Clear(), then other keys and
// fewer items): nothing of the first may reach the bytes.
RankResult ReusedResult() {
  RankResult r;
  r.AddKey("a", MetricType::kString);
  r.AddKey("b", MetricType::kDouble);
  r.AddKey("c", MetricType::kInt);
  for (int i = 0; i < 100; ++i) {
    r.AddItem(absl::StrCat("old-", i), 9, 9);
    r.SetString(static_cast<size_t>(i), 0, "stale");
    r.SetDouble(static_cast<size_t>(i), 1, 9.5);
    r.SetInt(static_cast<size_t>(i), 2, 99);
    r.SetLog(static_cast<size_t>(i), "stale log");
  }
  r.Clear();
  const uint32_t a = r.AddKey("a", MetricType::kDouble);  // Another type.
  const uint32_t s = r.AddKey("s", MetricType::kString);
  for (int i = 0; i < 10; ++i) r.AddItem(absl::StrCat("new-", i), 0.5, i + 1);
  r.SetDouble(3, a, 1.5);
  r.SetString(7, s, "fresh");
  return r;
}

std::vector<NamedResult> EdgeResults() {
  std::vector<NamedResult> out;
  out.push_back({"empty", RankResult{}});
  {
    RankResult r;
    r.AddKey("a", MetricType::kInt);
    r.AddKey("", MetricType::kString);
    out.push_back({"keys but no items", r});
  }
  {
    RankResult r;
    for (int i = 0; i < 5; ++i) {
      r.AddItem(i == 0 ? "" : absl::StrCat("id", i), 0, static_cast<uint32_t>(i));
    }
    out.push_back({"items but no keys", r});
  }
  {
    RankResult r;
    r.AddKey("unused.double", MetricType::kDouble);
    r.AddKey("unused.string", MetricType::kString);
    for (int i = 0; i < 3; ++i) r.AddItem("", 0, 0);
    r.SetLog(1, "only a log");
    out.push_back({"items without metrics, keys unused", r});
  }
  out.push_back({"small", SmallResult()});
  out.push_back({"edge values", EdgeValues()});
  {
    // Past the default max_dict_entries (4096): one string key with a new
    // value per item, one with three values.
    RowResult r;
    const uint32_t unique = r.AddKey("unique", MetricType::kString);
    const uint32_t few = r.AddKey("few", MetricType::kString);
    for (int i = 0; i < 4200; ++i) {
      RankedItem& item = r.AddItem(absl::StrCat(i), 0, static_cast<uint32_t>(i + 1));
      item.metrics = {{unique, MetricValue::String(absl::StrCat("v", i))},
                      {few, MetricValue::String(i % 3 == 0   ? "a"
                                                : i % 3 == 1 ? "bb"
                                                             : "")}};
    }
    out.push_back({"dictionary overflow", r.Build()});
  }
  {
    // Repetitive values and logs: zstd blocks pay here.
    RowResult r;
    const uint32_t a = r.AddKey("model.version", MetricType::kString);
    const uint32_t b = r.AddKey("bucket", MetricType::kInt);
    const uint32_t c = r.AddKey("ctr", MetricType::kDouble);
    for (int i = 0; i < 64; ++i) {
      RankedItem& item = r.AddItem(absl::StrCat("sku-", i), 0.5, static_cast<uint32_t>(i + 1));
      item.metrics = {{a, MetricValue::String("lr-v3-2024-06-01-production")},
                      {b, MetricValue::Int(42)},
                      {c, MetricValue::Double(0.125)}};
      item.log = "model=lr-v3 scene=search features=[0.1,0.2,0.3,0.4] recall=vector_ann";
    }
    out.push_back({"repetitive", r.Build()});
  }
  out.push_back({"several shapes", SeveralShapes()});
  out.push_back({"shared string entries", SharedStringEntries()});
  out.push_back({"reused result", ReusedResult()});
  return out;
}

// The suite ---------------------------------------------------------------

class CodecConformanceTest : public ::testing::TestWithParam<CodecUnderTest> {
 protected:
  const Codec& codec() const { return *GetParam().codec; }

  std::string MustEncode(const RankResult& r) {
    absl::StatusOr<OwnedBuffer> bytes = codec().Encode(r);
    EXPECT_TRUE(bytes.ok()) << bytes.status();
    if (!bytes.ok()) return "";
    return std::string(bytes->view());
  }

  // Round trip through Encode and Decode; "" when exact.
  std::string RoundTripDiff(const RankResult& r) {
    absl::StatusOr<OwnedBuffer> bytes = codec().Encode(r);
    if (!bytes.ok()) return absl::StrCat("Encode: ", bytes.status().ToString());
    absl::StatusOr<RankResult> back = codec().Decode(SharedBytes::FromBuffer(*std::move(bytes)));
    if (!back.ok()) return absl::StrCat("Decode: ", back.status().ToString());
    return DiffResults(r, *back);
  }

  // Lazy reads of a fresh view vs a full decode through another view.
  std::string LazyDiff(const RankResult& r, size_t top_n) {
    const std::string bytes = MustEncode(r);
    absl::StatusOr<std::unique_ptr<ResultView>> lazy = codec().Open(ExactCopy(bytes));
    absl::StatusOr<std::unique_ptr<ResultView>> full = codec().Open(ExactCopy(bytes));
    if (!lazy.ok() || !full.ok()) return "Open failed";
    if ((*lazy)->size() != r.size()) return "size() differs from the model";
    absl::StatusOr<RankResult> all = (*full)->Materialize();
    if (!all.ok()) return all.status().ToString();
    absl::StatusOr<std::vector<ItemRef>> top = (*lazy)->TopN(top_n);
    if (!top.ok()) return top.status().ToString();
    if (top->size() != std::min(top_n, r.size())) return "TopN size";
    // Read the top items last to first, so later blocks are decoded first.
    for (size_t j = top->size(); j-- > 0;) {
      const ItemRef& ref = (*top)[j];
      if (ref.index() != j) return "TopN index";
      std::string p = CheckLazyItem(**lazy, j, all->keys(), all->Item(j), /*errors_allowed=*/false);
      if (!p.empty()) return p;
    }
    return "";
  }
};

TEST_P(CodecConformanceTest, Describes) {
  EXPECT_FALSE(codec().name().empty());
  EXPECT_GE(codec().format_version(), 1u);
}

TEST_P(CodecConformanceTest, RoundTripsEdgeResults) {
  for (const NamedResult& c : EdgeResults()) {
    ASSERT_TRUE(ValidateResult(c.result).ok()) << c.name;
    EXPECT_EQ(RoundTripDiff(c.result), "") << c.name;
  }
}

TEST_P(CodecConformanceTest, RoundTripsGeneratedResults) {
  constexpr int kResults = 400;
  int failures = 0;
  for (int seed = 0; seed < kResults && failures < 3; ++seed) {
    std::mt19937_64 rng(static_cast<uint64_t>(seed) * 7919 + 1);
    const RankResult r = test::RandomResult(rng);
    ASSERT_TRUE(ValidateResult(r).ok()) << "generator, seed " << seed;
    std::string diff = RoundTripDiff(r);
    if (!diff.empty()) {
      ++failures;
      ADD_FAILURE() << "seed " << seed << " (" << r.size() << " items, " << r.key_count()
                    << " keys): " << diff;
    }
  }
}

TEST_P(CodecConformanceTest, LazyTopNEqualsFullDecode) {
  for (const NamedResult& c : EdgeResults()) {
    EXPECT_EQ(LazyDiff(c.result, 10), "") << c.name << ", top 10";
    if (c.result.size() < 100) {
      EXPECT_EQ(LazyDiff(c.result, c.result.size() + 3), "") << c.name << ", all";
    }
  }
  for (int seed = 0; seed < 150; ++seed) {
    std::mt19937_64 rng(static_cast<uint64_t>(seed) * 104729 + 5);
    const RankResult r = test::RandomResult(rng);
    const size_t top_n = seed % 3 == 0 ? r.size() : static_cast<size_t>(seed % 12);
    std::string diff = LazyDiff(r, top_n);
    ASSERT_EQ(diff, "") << "seed " << seed << ", top " << top_n;
  }
}

TEST_P(CodecConformanceTest, ResultMatchesTheModelBeforeAnyDecode) {
  const RankResult r = SmallResult();
  absl::StatusOr<std::unique_ptr<ResultView>> view = codec().Open(ExactCopy(MustEncode(r)));
  ASSERT_TRUE(view.ok()) << view.status();
  EXPECT_EQ((*view)->size(), 3u);
  std::map<std::string, MetricType> keys;
  for (const MetricKey& k : (*view)->keys()) keys[k.name] = k.type;
  EXPECT_EQ(keys, (std::map<std::string, MetricType>{{"score.ctr", MetricType::kDouble},
                                                     {"w", MetricType::kFloat},
                                                     {"clicks", MetricType::kInt},
                                                     {"recall.source", MetricType::kString},
                                                     {"título", MetricType::kString}}));
  absl::StatusOr<ItemRef> item = (*view)->Item(1);
  ASSERT_TRUE(item.ok());
  EXPECT_EQ(item->id(), "sku-1");
  EXPECT_EQ(item->score(), 0.75);
  EXPECT_EQ(item->position(), 2u);
  absl::StatusOr<std::optional<MetricRef>> clicks = item->Metric("clicks");
  ASSERT_TRUE(clicks.ok() && clicks->has_value());
  EXPECT_EQ((*clicks)->type(), MetricType::kInt);
  EXPECT_EQ((*clicks)->int_value(), -300);
  EXPECT_EQ((*clicks)->AsDouble(), -300.0);
  absl::StatusOr<std::optional<MetricRef>> src = item->Metric("recall.source");
  ASSERT_TRUE(src.ok() && src->has_value());
  EXPECT_EQ((*src)->string_value(), "vector_ann");
  EXPECT_EQ((*src)->AsDouble(), std::nullopt);
}

TEST_P(CodecConformanceTest, ItemPastTheEndIsOutOfRange) {
  for (const RankResult& r : {SmallResult(), RankResult{}}) {
    absl::StatusOr<std::unique_ptr<ResultView>> view = codec().Open(ExactCopy(MustEncode(r)));
    ASSERT_TRUE(view.ok()) << view.status();
    const ResultView& v = **view;
    const size_t n = v.size();
    ASSERT_EQ(n, r.size());
    for (size_t i : {n, n + 1, std::numeric_limits<size_t>::max()}) {
      EXPECT_EQ(v.Item(i).status().code(), absl::StatusCode::kOutOfRange) << i;
      EXPECT_EQ(v.FindMetric(i, "score.ctr").status().code(), absl::StatusCode::kOutOfRange);
      EXPECT_EQ(v.ForEachMetric(i, [](uint32_t, const MetricRef&) {}).code(),
                absl::StatusCode::kOutOfRange);
      EXPECT_EQ(v.Log(i).status().code(), absl::StatusCode::kOutOfRange);
      EXPECT_EQ(v.MaterializeItem(i).status().code(), absl::StatusCode::kOutOfRange);
    }
    absl::StatusOr<std::vector<ItemRef>> top = v.TopN(n + 10);
    ASSERT_TRUE(top.ok());
    EXPECT_EQ(top->size(), n);
  }
}

TEST_P(CodecConformanceTest, ViewKeepsItsBytesAlive) {
  const RankResult r = SmallResult();
  std::unique_ptr<ResultView> view;
  {
    absl::StatusOr<OwnedBuffer> bytes = codec().Encode(r);
    ASSERT_TRUE(bytes.ok());
    absl::StatusOr<std::unique_ptr<ResultView>> opened =
        codec().Open(SharedBytes::FromBuffer(*std::move(bytes)));
    ASSERT_TRUE(opened.ok());
    view = *std::move(opened);
  }  // The caller's handle on the bytes is gone; the view's is not.
  for (size_t i = 0; i < r.size(); ++i) {
    EXPECT_EQ(CheckLazyItem(*view, i, r.keys(), r.Item(i), false), "");
  }
}

TEST_P(CodecConformanceTest, ConcurrentLazyReadsAgree) {
  std::mt19937_64 rng(99);
  test::RandomResultOptions options;
  options.max_items = 60;
  RankResult r;
  while (r.size() < 20) r = test::RandomResult(rng, options);
  const std::string bytes = MustEncode(r);
  absl::StatusOr<std::unique_ptr<ResultView>> view = codec().Open(ExactCopy(bytes));
  ASSERT_TRUE(view.ok());
  std::vector<std::string> problems(4);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < problems.size(); ++t) {
    threads.emplace_back([&, t] {
      for (size_t k = 0; k < r.size() && problems[t].empty(); ++k) {
        const size_t i = (k * (2 * t + 1) + t) % r.size();  // A different order per thread.
        problems[t] = CheckLazyItem(**view, i, r.keys(), r.Item(i), false);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (const std::string& p : problems) EXPECT_EQ(p, "");
}

// Every prefix of a small payload must fail to decode, and no read of it may
// return anything the original does not have. One cut cannot be seen by a
// format whose bytes are a protobuf message (the baseline, the identity
// fixture) and is tolerated, once: a protobuf message cut at a field boundary
// is a valid message (for this payload, only the empty prefix: every item
// carries metrics and every key is used, so a cut anywhere else leaves an
// undeclared metric); the envelope header's item_count is what catches that
// on the client. rankbin announces its section count, so no prefix of it
// decodes.
TEST_P(CodecConformanceTest, TruncatedPayloadsNeverDecodeToSomethingElse) {
  google::protobuf::LogSilencer quiet;  // Bad UTF-8 in corrupt protobuf is expected.
  const RankResult original = SmallResult();
  const std::string bytes = MustEncode(original);
  ASSERT_GT(bytes.size(), 0u);
  int tolerated = 0;
  for (size_t len = 0; len < bytes.size(); ++len) {
    absl::StatusOr<std::unique_ptr<ResultView>> view =
        codec().Open(ExactCopy(absl::string_view(bytes.data(), len)));
    if (!view.ok()) continue;
    const ResultView& v = **view;
    SCOPED_TRACE(absl::StrCat("prefix of ", len, " of ", bytes.size(), " bytes"));
    ASSERT_LE(v.size(), original.size());
    // Reads either fail or agree with the original; logs may read empty.
    for (size_t i = 0; i < v.size(); ++i) {
      EXPECT_EQ(CheckLazyItem(v, i, original.keys(), original.Item(i), /*errors_allowed=*/true,
                              /*logs_may_be_empty=*/false),
                "");
    }
    absl::StatusOr<RankResult> all = v.Materialize();
    if (!all.ok()) continue;
    const bool protobuf_field_boundary =
        IsProtobufMessageOf(bytes, original) && IsLeadingPart(*all, original);
    EXPECT_TRUE(protobuf_field_boundary)
        << "a truncated payload decoded to something else: " << DiffResults(*all, original);
    RecordProperty("tolerated_prefix", absl::StrCat(len, " of ", bytes.size(), " bytes"));
    ++tolerated;
  }
  EXPECT_LE(tolerated, 1) << "more than one prefix decoded";
}

// Flipping bits of any one byte must never crash or read out of bounds
// (the sanitizer builds make that visible); whatever still decodes must be
// a valid model that re-encodes to itself, with lazy reads agreeing with
// the full decode.
TEST_P(CodecConformanceTest, CorruptedBytesFailOrDecodeToAValidResult) {
  google::protobuf::LogSilencer quiet;  // Bad UTF-8 in corrupt protobuf is expected.
  const std::string bytes = MustEncode(SmallResult());
  int decoded = 0, failed = 0;
  for (size_t pos = 0; pos < bytes.size(); ++pos) {
    for (unsigned char pattern : {0x01, 0x04, 0x80, 0xff}) {
      std::string corrupt = bytes;
      corrupt[pos] = static_cast<char>(corrupt[pos] ^ pattern);
      SCOPED_TRACE(absl::StrCat("byte ", pos, " ^ ", int{pattern}));
      absl::StatusOr<std::unique_ptr<ResultView>> view = codec().Open(ExactCopy(corrupt));
      if (!view.ok()) {
        ++failed;
        continue;
      }
      std::string problem;
      absl::StatusOr<RankResult> all = ReadEverything(**view, &problem);
      EXPECT_EQ(problem, "");
      if (!all.ok()) {
        ++failed;
        continue;
      }
      ++decoded;
      if (!problem.empty()) continue;
      EXPECT_EQ(RoundTripDiff(*all), "") << "re-encoding what a corrupt payload decoded to";
    }
  }
  // Both outcomes occur: corruption of a value decodes, of structure fails.
  EXPECT_GT(decoded, 0);
  EXPECT_GT(failed, 0);
}

// The same for payloads built from generated results, with fewer patterns.
TEST_P(CodecConformanceTest, CorruptedGeneratedPayloadsFailOrDecodeToAValidResult) {
  google::protobuf::LogSilencer quiet;  // Bad UTF-8 in corrupt protobuf is expected.
  for (int seed = 0; seed < 12; ++seed) {
    std::mt19937_64 rng(static_cast<uint64_t>(seed) + 1000);
    test::RandomResultOptions options;
    options.max_items = 6;
    options.max_keys = 5;
    const std::string bytes = MustEncode(test::RandomResult(rng, options));
    for (size_t pos = 0; pos < bytes.size(); ++pos) {
      std::string corrupt = bytes;
      corrupt[pos] = static_cast<char>(corrupt[pos] ^ (1 << (pos % 8)));
      absl::StatusOr<std::unique_ptr<ResultView>> view = codec().Open(ExactCopy(corrupt));
      if (!view.ok()) continue;
      std::string problem;
      (void)ReadEverything(**view, &problem);
      ASSERT_EQ(problem, "") << "seed " << seed << ", byte " << pos;
    }
  }
}

// Encode rejects every model ValidateResult rejects, with InvalidArgument:
// key names used twice, and string codes past their column's entries.
// (The row model could also hold a key index out of range, a key twice in
// an item and a value of the wrong type, which each codec had to refuse;
// the columnar model cannot hold them: see RowsTheModelCannotHold below.)
TEST_P(CodecConformanceTest, InvalidModelsAreInvalidArgument) {
  std::vector<NamedResult> cases;
  {
    RankResult r = SmallResult();
    r.AddKey("clicks", MetricType::kDouble);
    cases.push_back({"duplicate key names, one unused", r});
  }
  {
    RankResult r;
    const uint32_t a = r.AddKey("a", MetricType::kInt);
    const uint32_t b = r.AddKey("a", MetricType::kInt);
    r.SetInt(r.AddItem("", 0, 0), a, 1);
    r.SetInt(r.AddItem("", 0, 0), b, 2);
    cases.push_back({"duplicate key names, both used", r});
  }
  // A string code past the entries, in the last of three items (after a
  // writer has seen good codes), with a dictionary-friendly column and a
  // plain one.
  for (bool repeated : {true, false}) {
    RankResult r;
    const uint32_t other = r.AddKey("other", MetricType::kDouble);
    const uint32_t k = r.AddKey("k", MetricType::kString);
    for (int i = 0; i < 3; ++i) {
      const size_t item = r.AddItem(absl::StrCat("i", i), 0, 0);
      r.SetDouble(item, other, i);
      r.SetLog(item, "log");
      if (i < 2) r.SetString(item, k, repeated ? "same" : absl::StrCat("value ", i));
    }
    r.SetStringCode(2, k, 2);
    cases.push_back(
        {absl::StrCat("string code out of range, ", repeated ? "repeated" : "distinct"), r});
  }
  for (const NamedResult& c : cases) {
    ASSERT_FALSE(ValidateResult(c.result).ok()) << c.name;
    absl::StatusOr<OwnedBuffer> bytes = codec().Encode(c.result);
    EXPECT_EQ(bytes.status().code(), absl::StatusCode::kInvalidArgument) << c.name;
  }
}

// What the row model could hold and every codec had to refuse, and the
// columnar model cannot hold: AppendItem refuses it before any codec could
// see it. A value of each wrong type under a key of each type, in the last
// of three items; a key index out of range; a key twice in an item.
TEST(RowsTheModelCannotHold, AreRefusedByAppendItem) {
  std::vector<std::pair<std::string, RowResult>> cases;
  const MetricType types[] = {MetricType::kInt, MetricType::kFloat, MetricType::kDouble,
                              MetricType::kString};
  auto value_of = [](MetricType t) {
    switch (t) {
      case MetricType::kInt:
        return MetricValue::Int(3);
      case MetricType::kFloat:
        return MetricValue::Float(3);
      case MetricType::kDouble:
        return MetricValue::Double(3);
      case MetricType::kString:
        return MetricValue::String("three");
    }
    return MetricValue();
  };
  for (MetricType key_type : types) {
    for (MetricType value_type : types) {
      if (key_type == value_type) continue;
      RowResult r;
      const uint32_t other = r.AddKey("other", MetricType::kDouble);
      const uint32_t k = r.AddKey("k", key_type);
      for (int i = 0; i < 3; ++i) {
        RankedItem& item = r.AddItem(absl::StrCat("i", i), 0, 0);
        item.log = "log";
        item.metrics = {{other, MetricValue::Double(i)},
                        {k, value_of(i == 2 ? value_type : key_type)}};
      }
      cases.emplace_back(absl::StrCat(MetricTypeName(value_type), " value under a ",
                                      MetricTypeName(key_type), " key"),
                         r);
    }
  }
  const RowResult small = RowResult::Of(SmallResult());
  cases.emplace_back("key index out of range", small);
  cases.back().second.items[1].metrics.push_back({5, MetricValue::Int(1)});
  cases.emplace_back("key twice in an item", small);
  std::vector<MetricEntry>& m = cases.back().second.items[2].metrics;
  m.push_back(m[0]);
  for (const auto& [name, rows] : cases) {
    EXPECT_EQ(rows.TryBuild().status().code(), absl::StatusCode::kInvalidArgument) << name;
  }
}

// A key whose type is not a MetricType cannot be written faithfully: Encode
// must refuse it rather than write bytes its own decoder rejects.
TEST_P(CodecConformanceTest, KeyWithoutAValidTypeIsInvalidArgument) {
  for (int bad : {0, 5, 255}) {
    RankResult r = SmallResult();
    r.AddKey("bad", static_cast<MetricType>(bad));
    absl::StatusOr<OwnedBuffer> bytes = codec().Encode(r);
    EXPECT_EQ(bytes.status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

INSTANTIATE_TEST_SUITE_P(AllCodecs, CodecConformanceTest, ::testing::ValuesIn(AllCodecs()),
                         ParamName);

}  // namespace
}  // namespace rankwire
