// rankwire_fuzz_seeds: writes the seed corpus of every fuzz target, so the
// checked-in corpus is reproducible.
//
//   rankwire_fuzz_seeds tests/fuzz/corpus          # (re)write the corpus
//   rankwire_fuzz_seeds --check tests/fuzz/corpus  # exit 1 if it is stale
//
// The seeds are small: results of 0 to 8 items (with zstd blocks, several
// shapes, dictionaries, logs, edge values) and docs/FORMAT.md's worked
// example, encoded by every codec of test::MakeCodecsUnderTest() (a new
// codec gets seeds with no change here), a rankbin payload with an unknown
// section, and a few envelopes. A codec seed is the codec's index byte (see
// codec_fuzzer.cc) followed by its bytes. Output is deterministic (protobuf
// maps are serialized in key order).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "codec/protobuf/protobuf_codec.h"
#include "codec/rank_result.h"
#include "codec/rankbin/rankbin_codec.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "logstore/format/log_blocks.h"
#include "logstore/format/log_columns.h"
#include "logstore/format/log_record.h"
#include "logstore/format/log_value.h"
#include "model/xgboost/xgboost_test_util.h"
#include "rank/v1/rank.pb.h"
#include "tests/codecs/codecs_under_test.h"
#include "tests/support/log_blocks_v2.h"
#include "tests/support/random_result.h"
#include "tests/support/row_result.h"

namespace rankwire {
namespace {

using test::RowResult;

// target -> file name -> bytes
using Corpus = std::map<std::string, std::map<std::string, std::string>>;

std::string Deterministic(const google::protobuf::MessageLite& m) {
  std::string out;
  {
    google::protobuf::io::StringOutputStream stream(&out);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    if (!m.SerializeToCodedStream(&coded)) std::exit(2);
  }
  return out;
}

// docs/FORMAT.md's worked example.
RankResult FormatExample() {
  RankResult r;
  const uint32_t ctr = r.AddKey("score.ctr", MetricType::kDouble);
  const uint32_t src = r.AddKey("recall.source", MetricType::kString);
  const uint32_t ann = r.AddStringEntry(src, "vector_ann");
  for (int i = 0; i < 2; ++i) {
    const size_t item =
        r.AddItem(absl::StrCat("sku-", i + 1), i == 0 ? 0.5 : 0.25, static_cast<uint32_t>(i + 1));
    r.SetDouble(item, ctr, i == 0 ? 0.25 : 0.125);
    r.SetStringCode(item, src, ann);
  }
  r.SetLog(1, "hi");
  return r;
}

// `count` items (up to 8) with a key of every type, two shapes, logs and
// repeated strings (dictionaries, and blocks zstd can shrink).
RankResult Typed(int count) {
  RowResult r;
  const uint32_t ctr = r.AddKey("score.ctr", MetricType::kDouble);
  const uint32_t w = r.AddKey("w", MetricType::kFloat);
  const uint32_t clicks = r.AddKey("clicks", MetricType::kInt);
  const uint32_t src = r.AddKey("recall.source", MetricType::kString);
  const uint32_t title = r.AddKey("título", MetricType::kString);
  for (int i = 0; i < count; ++i) {
    RankedItem& item =
        r.AddItem(absl::StrCat("sku-", i), 1.0 / (i + 1), static_cast<uint32_t>(i + 1));
    item.metrics = {{ctr, MetricValue::Double(0.01 * i)},
                    {src, MetricValue::String(i % 3 ? "vector_ann" : "text_bm25")},
                    {clicks, MetricValue::Int(i * 1000 - 3000)}};
    if (i % 2 == 0) {
      item.metrics.push_back({w, MetricValue::Float(0.5f * i)});
      item.metrics.push_back({title, MetricValue::String(absl::StrCat("title ", i, " ünïcode"))});
    }
    item.log = absl::StrCat("model=lr-v3 scene=search item=sku-", i, " recall=vector_ann");
  }
  return r.Build();
}

RankResult EdgeValues() {
  RowResult r;
  const uint32_t i64 = r.AddKey("int", MetricType::kInt);
  const uint32_t f32 = r.AddKey("float", MetricType::kFloat);
  const uint32_t f64 = r.AddKey("double", MetricType::kDouble);
  const uint32_t str = r.AddKey("", MetricType::kString);
  using D = std::numeric_limits<double>;
  using F = std::numeric_limits<float>;
  const double doubles[] = {D::quiet_NaN(), -D::infinity(), -0.0, D::denorm_min()};
  const float floats[] = {F::infinity(), F::quiet_NaN(), F::denorm_min(), -0.0f};
  const int64_t ints[] = {INT64_MIN, INT64_MAX, 0, -1};
  const char* strings[] = {"", "0123456789", "01234567890", "😀ключ中"};
  for (int i = 0; i < 4; ++i) {
    RankedItem& item = r.AddItem(i == 0 ? "" : absl::StrCat("edge-", i), doubles[i],
                                 i == 0 ? UINT32_MAX : static_cast<uint32_t>(i));
    item.metrics = {{i64, MetricValue::Int(ints[i])},
                    {f32, MetricValue::Float(floats[i])},
                    {f64, MetricValue::Double(doubles[i])},
                    {str, MetricValue::String(strings[i])}};
  }
  return r.Build();
}

std::string MustEncode(const Codec& codec, const RankResult& r) {
  absl::StatusOr<OwnedBuffer> bytes = codec.Encode(r);
  if (!bytes.ok()) {
    std::fprintf(stderr, "encode failed: %s\n", bytes.status().ToString().c_str());
    std::exit(2);
  }
  return std::string(bytes->view());
}

void MustDecodeTo(const Codec& codec, const std::string& bytes, const RankResult& want,
                  const std::string& name) {
  absl::StatusOr<RankResult> got = codec.Decode(SharedBytes::FromString(bytes));
  const std::string diff = got.ok() ? DiffResults(*got, want) : got.status().ToString();
  if (!diff.empty()) {
    std::fprintf(stderr, "seed %s does not decode to its result: %s\n", name.c_str(), diff.c_str());
    std::exit(2);
  }
}

std::vector<std::pair<std::string, RankResult>> SeedResults() {
  std::vector<std::pair<std::string, RankResult>> results = {
      {"empty", RankResult{}},   {"format_example", FormatExample()}, {"one_item", Typed(1)},
      {"three_items", Typed(3)}, {"eight_items", Typed(8)},           {"edge_values", EdgeValues()},
  };
  {
    RankResult r;
    r.AddKey("unused", MetricType::kDouble);
    r.AddItem("no-metrics", 0, 0);
    r.AddItem("", 0, 0);
    results.push_back({"no_metrics", r});
  }
  {
    // Repetitive values: zstd value blocks.
    // Built by column, as a ranker does.
    RankResult r;
    const uint32_t model = r.AddKey("model.version", MetricType::kString);
    const uint32_t bucket = r.AddKey("bucket", MetricType::kInt);
    const uint32_t ctr = r.AddKey("ctr", MetricType::kDouble);
    for (int i = 0; i < 6; ++i)
      r.AddItem(absl::StrCat("sku-", i), 0.5, static_cast<uint32_t>(i + 1));
    const uint32_t version = r.AddStringEntry(model, "lr-v3-2024-06-01-production");
    std::fill_n(r.MutableCodes(model), r.size(), version);
    std::fill_n(r.MutableInts(bucket), r.size(), 42);
    std::fill_n(r.MutableDoubles(ctr), r.size(), 0.125);
    results.push_back({"repetitive", r});
  }
  {
    // Long distinct strings (no dictionary; rankbin-zstd compresses their
    // value blocks) and items that each carry a different subset of keys
    // (one shape per item, parsed lazily by the reader).
    RowResult r;
    const uint32_t trace = r.AddKey("debug.trace", MetricType::kString);
    const uint32_t a = r.AddKey("a", MetricType::kDouble);
    const uint32_t b = r.AddKey("b", MetricType::kInt);
    const uint32_t c = r.AddKey("c", MetricType::kFloat);
    for (int i = 0; i < 5; ++i) {
      RankedItem& item = r.AddItem(absl::StrCat("sku-", i), 0, static_cast<uint32_t>(i + 1));
      std::string text;
      for (int k = 0; k < 8; ++k)
        absl::StrAppend(&text, "stage=rank item=", i, " took_us=", k, " ");
      item.metrics.push_back({trace, MetricValue::String(text)});
      if (i % 2 == 0) item.metrics.push_back({a, MetricValue::Double(i)});
      if (i % 3 == 0) item.metrics.push_back({b, MetricValue::Int(-i)});
      if (i % 2 == 1) item.metrics.push_back({c, MetricValue::Float(0.5f * i)});
    }
    results.push_back({"traces_sparse", r.Build()});
  }
  for (uint64_t seed : {1, 2}) {
    std::mt19937_64 rng(seed);
    test::RandomResultOptions options;
    options.max_items = 6;
    options.max_keys = 5;
    RankResult r;
    while (r.empty()) r = test::RandomResult(rng, options);
    results.push_back({absl::StrCat("random_", seed), r});
  }
  return results;
}

CodecRegistry MustMakeCodecs() {
  absl::StatusOr<CodecRegistry> registry = test::MakeCodecsUnderTest();
  if (!registry.ok()) {
    std::fprintf(stderr, "%s\n", registry.status().ToString().c_str());
    std::exit(2);
  }
  return *std::move(registry);
}

// Seeds for the codec fuzzer: every result through every codec, plus the
// rankbin writer settings the registry's defaults do not reach (zstd on
// every column, one item per block with a one-entry dictionary).
void AddCodecSeeds(std::map<std::string, std::string>& seeds) {
  const CodecRegistry codecs = MustMakeCodecs();
  const std::vector<std::string> names = codecs.Names();
  rankbin::WriterOptions zstd;
  zstd.block_items = 2;
  zstd.compress_values = zstd.compress_logs = true;
  zstd.min_saving = 0;
  zstd.max_dict_entries = 0;  // Repeated strings stay plain: zstd's to shrink.
  rankbin::WriterOptions tiny;
  tiny.block_items = 1;
  tiny.max_dict_entries = 1;
  const RankbinCodec all_zstd("rankbin-zstd", zstd, {});
  const RankbinCodec one_per_block("rankbin", tiny, {});
  // (seed name, the codec that writes it, the registered codec that reads it)
  std::vector<std::tuple<std::string, const Codec*, std::string>> writers;
  for (const std::string& name : names) writers.emplace_back(name, codecs.Find(name), name);
  writers.emplace_back("rankbin-zstd-all", &all_zstd, std::string(kRankbinZstdCodecName));
  writers.emplace_back("rankbin-one-per-block", &one_per_block, std::string(kRankbinCodecName));

  for (const auto& [label, writer, reader_name] : writers) {
    const size_t index =
        static_cast<size_t>(std::find(names.begin(), names.end(), reader_name) - names.begin());
    const Codec& reader = *codecs.Find(reader_name);
    for (const auto& [name, r] : SeedResults()) {
      const std::string bytes = MustEncode(*writer, r);
      // A seed that does not decode teaches a fuzzer nothing.
      MustDecodeTo(reader, bytes, r, label + "." + name);
      const std::string seed = std::string(1, static_cast<char>(index)) + bytes;
      bool duplicate = false;
      for (const auto& [other, b] : seeds) duplicate = duplicate || b == seed;
      if (!duplicate) seeds[label + "." + name] = seed;
    }
  }
  // Things only a newer writer or a hand makes: an unknown section, a
  // higher minor version (byte 5 of the payload, 6 of the seed).
  std::string future = seeds[std::string(kRankbinCodecName) + ".format_example"];
  future[6] = 7;
  future += std::string(
      "\x09\x03\x00\x00\x00"
      "abc",
      8);
  seeds["rankbin.format_example_future"] = future;
}

// A log_record seed of mode 3: each value after its 2-byte length.
std::string HashSeed(const std::vector<std::string>& values) {
  std::string seed(1, '\3');
  for (const std::string& v : values) {
    seed.push_back(static_cast<char>(v.size() & 0xff));
    seed.push_back(static_cast<char>(v.size() >> 8));
    seed += v;
  }
  return seed;
}

// Seeds of mode 3: a request stored in blocks whose number columns take
// every form (raw, one and two top bytes, whole, constant, decimal), the
// same with a version-1 layout in field "" (a per-item hash), and text
// values ('T', 'Z').
void AddLogHashSeeds(std::map<std::string, std::string>& seeds) {
  logstore::BlockLayout layout;
  layout.pieces = {"req=r1 item=", " pos=",   " pre=",  " src=",   " raw=", " top=",
                   " two=",        " whole=", " same=", " price=", ""};
  layout.kinds = {logstore::LogSlot::kItemId, logstore::LogSlot::kPosition,
                  logstore::LogSlot::kInt,    logstore::LogSlot::kString,
                  logstore::LogSlot::kNumber, logstore::LogSlot::kNumber,
                  logstore::LogSlot::kNumber, logstore::LogSlot::kNumber,
                  logstore::LogSlot::kNumber, logstore::LogSlot::kNumber};
  layout.strings = {"vector_ann", "text_bm25"};
  layout.items = 20;
  layout.top_items = 4;
  layout.block_items = 8;
  std::vector<std::string> ids;
  std::vector<int64_t> pre;
  std::vector<uint32_t> src;
  std::vector<std::vector<float>> numbers(6);
  for (int j = 0; j < 20; ++j) ids.push_back(absl::StrCat("sku-", 1000 + j * 7));
  for (int j = 0; j < 20; ++j) {
    pre.push_back(20 - j);
    src.push_back(j % 2);
    numbers[0].push_back(0.1234567f * j - 1);
    numbers[1].push_back(1.0f + 0.0123457f * j);
    numbers[2].push_back(j % 2 ? 0.3123457f : 0.6123457f);
    numbers[3].push_back(static_cast<float>(j * 3));
    numbers[4].push_back(0.25f);
    numbers[5].push_back(0.01f * (1000 + 37 * j));
  }
  std::vector<std::string> values = {layout.Serialize()};
  // Block by block, each number column in the form its values were made
  // for (the layout has one number slot per form; a block writes them all
  // in one form here, so each block takes another).
  const logstore::NumberForm forms[] = {logstore::NumberForm::kRaw, logstore::NumberForm::kTopByte,
                                        logstore::NumberForm::kTwoTops};
  for (size_t b = 0; b < layout.BlockCount(); ++b) {
    logstore::test_util::V2Form form{forms[b % 3], 0};
    std::vector<std::string> blocks =
        logstore::test_util::WriteV2Blocks(layout, ids, pre, src, numbers[b % 3], form);
    values.push_back(blocks[b]);
  }
  seeds["hash.blocks"] = HashSeed(values);
  values.resize(2);
  values.push_back(logstore::test_util::WriteV2Blocks(
      layout, ids, pre, src, numbers[5],
      logstore::test_util::V2Form{logstore::NumberForm::kDecimal, 2})[1]);
  values.push_back(logstore::test_util::WriteV2Blocks(
      layout, ids, pre, src, numbers[3],
      logstore::test_util::V2Form{logstore::NumberForm::kWhole, 0})[2]);
  seeds["hash.blocks_decimal_whole"] = HashSeed(values);
  std::string text = "Treq=r1 item=sku-1 pos=1 | feats price=78.7";
  std::string compressed = text.substr(1) + text.substr(1) + text.substr(1);
  logstore::EncodeLogValue(/*compress=*/true, 1, &compressed);
  const std::string v1_layout(
      "L\x01\x01\x05"
      "item="
      "\x01\x00\x00",
      12);
  seeds["hash.v1_text"] = HashSeed({v1_layout, text, compressed});
}

// Seeds of mode 0 (a request's hash in layout version 3, written by the
// server's writer: every number form, an int and a string column, odd
// ids) and mode 2 (values to write and read back).
void AddLogColumnsSeeds(std::map<std::string, std::string>& seeds) {
  logstore::ColumnsLayout layout;
  layout.pieces = {"req=r1 item=", " pos=", " pre=",   " src=", "#", " raw=",
                   " same=",       " top=", " whole=", " odd=", ""};
  layout.kinds = {logstore::LogSlot::kItemId,       logstore::LogSlot::kPosition,
                  logstore::LogSlot::kRequestIndex, logstore::LogSlot::kString,
                  logstore::LogSlot::kInt,          logstore::LogSlot::kNumber,
                  logstore::LogSlot::kNumber,       logstore::LogSlot::kNumber,
                  logstore::LogSlot::kNumber,       logstore::LogSlot::kNumber};
  layout.strings = {"vector_ann", "text_bm25"};
  layout.items = 20;
  layout.top_items = 4;
  std::string ids;
  std::vector<uint32_t> ends, order, src, recall;
  std::vector<std::vector<float>> numbers(4);
  std::vector<double> odd;
  for (uint32_t c = 0; c < 20; ++c) {
    absl::StrAppend(&ids, c % 4 == 0 ? "\n\"#0" : "sku-", 1000 + c * 7);
    ends.push_back(static_cast<uint32_t>(ids.size()));
    order.push_back((c * 7 + 3) % 20);
    src.push_back(c % 2);
    recall.push_back(c * 4000);
    numbers[0].push_back(0.1234567f * c - 1);
    numbers[1].push_back(0.25f);
    numbers[2].push_back(0.5f + 0.0123457f * c);
    numbers[3].push_back(static_cast<float>(c * 3));
    const double odd_values[] = {-0.0,
                                 1e-45,
                                 std::numeric_limits<double>::infinity(),
                                 std::numeric_limits<double>::quiet_NaN(),
                                 3.4e38,
                                 1.2345650};
    odd.push_back(odd_values[c % 6]);
  }
  logstore::ColumnsWriter writer(layout, order.data());
  writer.ItemIds(ids, ends.data());
  writer.Strings(src.data());
  writer.Ints(recall.data());
  for (const std::vector<float>& column : numbers) writer.Numbers(column.data());
  writer.Numbers(odd.data());
  std::string all;
  for (absl::string_view piece : writer.all()) all.append(piece.data(), piece.size());
  std::string seed = HashSeed({layout.Serialize(), std::string(writer.top()), all});
  seed[0] = '\0';
  seeds["columns.request"] = seed;
  std::string written = std::string("\x02\x13\x03", 3);
  for (float v : {0.5f, -0.0f, 1e-40f, 255.0f, 65535.0f, 65536.0f, 0.75f, 2.0f}) {
    written.append(reinterpret_cast<const char*>(&v), 4);
  }
  seeds["columns.written"] = written;
  // Whole numbers up to 255 (one byte each: libFuzzer's first find, a
  // float converted to a signed char).
  written = std::string("\x02\x07\x02", 3);
  for (float v : {255.0f, 0.0f, 128.0f, 7.0f}) written.append(reinterpret_cast<const char*>(&v), 4);
  seeds["columns.written_whole"] = written;
}

// Seeds of the log_record target: mode byte 0 + a columns hash, mode byte 1
// + a 2-byte layout length + a layout + a record, mode byte 2 + values to
// write, mode byte 3 + a blocks hash (AddLogHashSeeds).
void AddLogRecordSeeds(std::map<std::string, std::string>& seeds) {
  AddLogColumnsSeeds(seeds);
  logstore::LogRecordBuilder b;
  b.Literal("req=r1 item=");
  b.ItemId();
  b.Literal(" pos=");
  b.Int(3);
  b.Literal(" src=");
  b.String("vector_ann");
  b.Literal(" | feats price=");
  b.Number(78.7);
  b.Literal(" ctr=");
  b.Number(0.109498);
  b.Literal(" | final=");
  b.Number(-0.0);
  const std::string record = b.FinishRecord();
  const std::string layout = b.Layout();
  std::string seed(1, '\1');
  seed.push_back(static_cast<char>(layout.size() & 0xff));
  seed.push_back(static_cast<char>(layout.size() >> 8));
  seeds["record.line"] = seed + layout + record;
  seeds["record.truncated"] = (seed + layout + record).substr(0, 3 + layout.size() + 3);
  AddLogHashSeeds(seeds);
}

// Seeds of the xgboost_model target: XGBoost 1.7 JSON models (small, random,
// logistic, deep, with a NaN leaf) and a truncated one.
void AddXGBoostSeeds(std::map<std::string, std::string>& seeds) {
  namespace xt = xgboost::testing;
  xt::ModelSpec small;
  small.trees.push_back(xt::TreeSpec{{1, -1, 3, -1, -1},
                                     {2, -1, 4, -1, -1},
                                     {0, 0, 1, 0, 0},
                                     {0.5f, 1.0f, -1.0f, -2.0f, 3.0f},
                                     {1, 0, 0, 0, 0},
                                     {10, 4, 6, 2, 4}});
  seeds["small.json"] = xt::ModelJson(small);
  xt::ModelSpec random = xt::RandomModel(7, 6, 4, 5);
  seeds["random.json"] = xt::ModelJson(random);
  random.objective = "binary:logistic";
  random.base_score = "2.5E-1";
  seeds["logistic.json"] = xt::ModelJson(random);
  seeds["deep.json"] = xt::ModelJson(xt::RandomModel(9, 2, 11, 4));
  xt::ModelSpec unnamed = small;
  unnamed.feature_names.clear();  // libFuzzer's first crash: no feature_names key
  std::string unnamed_json = xt::ModelJson(unnamed);
  const std::string key = "\"feature_names\":[],";
  seeds["no_feature_names.json"] = unnamed_json.erase(unnamed_json.find(key), key.size());
  small.trees[0].value[3] = NAN;
  seeds["nan_leaf.json"] = xt::ModelJson(small);
  seeds["truncated.json"] = seeds["random.json"].substr(0, seeds["random.json"].size() / 2);
}

Corpus MakeCorpus() {
  Corpus corpus;
  AddXGBoostSeeds(corpus["xgboost_model"]);
  AddLogRecordSeeds(corpus["log_record"]);
  AddCodecSeeds(corpus["codec"]);
  const std::string rankbin_payload =
      corpus["codec"][std::string(kRankbinCodecName) + ".format_example"].substr(1);

  auto& env = corpus["envelope"];
  rank::v1::ResponseHeader header;
  header.set_request_id("req-1");
  header.set_codec("rankbin");
  header.set_format_version(1);
  header.set_item_count(2);
  header.mutable_timings()->set_rank_us(120);
  header.mutable_timings()->set_total_us(300);
  header.set_log_mode(rank::v1::LOG_MODE_STORE);
  header.set_log_key("rankwire:log:req-1");
  {
    rank::v1::RankResponse response;
    *response.mutable_header() = header;
    response.set_payload(rankbin_payload);
    env["payload.env"] = Deterministic(response);
  }
  {
    rank::v1::RankResponse response;
    *response.mutable_header() = header;
    response.mutable_header()->set_codec("protobuf");
    if (!ToProto(FormatExample(), response.mutable_result()).ok()) std::exit(2);
    env["result.env"] = Deterministic(response);
  }
  {
    rank::v1::RankResponse response;
    *response.mutable_header() = header;
    env["header_only.env"] = Deterministic(response);
  }
  env["empty.env"] = "";
  // An unknown varint field and an unknown length-delimited field around
  // the payload.
  env["unknown_fields.env"] =
      std::string("\x20\x05", 2) + env["payload.env"] + std::string("\x82\x01\x03xyz", 6);
  for (const auto& [name, bytes] : env) {
    rank::v1::RankResponse response;
    if (!response.ParseFromString(bytes)) {
      std::fprintf(stderr, "seed %s is not a RankResponse\n", name.c_str());
      std::exit(2);
    }
  }
  return corpus;
}

// Whether a corpus file `have` is current for the generated seed `want`.
// Codec seeds compare by what they decode to: an encoder need not be
// byte-deterministic (protobuf writes map entries in hash order), only
// faithful. Every other seed compares byte for byte.
bool IsCurrent(const std::string& target, const std::string& have, const std::string& want) {
  if (have == want) return true;
  if (target != "codec" || have.empty() || want.empty() || have[0] != want[0]) return false;
  static const CodecRegistry* const codecs = new CodecRegistry(MustMakeCodecs());
  const std::vector<std::string> names = codecs->Names();
  const Codec& codec = *codecs->Find(names[static_cast<uint8_t>(want[0]) % names.size()]);
  absl::StatusOr<RankResult> a = codec.Decode(SharedBytes::FromString(have.substr(1)));
  absl::StatusOr<RankResult> b = codec.Decode(SharedBytes::FromString(want.substr(1)));
  return a.ok() && b.ok() && DiffResults(*a, *b).empty();
}

std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

}  // namespace
}  // namespace rankwire

int main(int argc, char** argv) {
  bool check = false;
  int arg = 1;
  if (arg < argc && std::strcmp(argv[arg], "--check") == 0) {
    check = true;
    ++arg;
  }
  if (arg + 1 != argc) {
    std::fprintf(stderr, "usage: %s [--check] CORPUS_DIR\n", argv[0]);
    return 2;
  }
  const std::filesystem::path root(argv[arg]);
  int stale = 0;
  for (const auto& [target, files] : rankwire::MakeCorpus()) {
    const std::filesystem::path dir = root / target;
    if (!check) std::filesystem::create_directories(dir);
    for (const auto& [name, bytes] : files) {
      const std::filesystem::path path = dir / name;
      const bool current = std::filesystem::exists(path) &&
                           rankwire::IsCurrent(target, rankwire::ReadFile(path), bytes);
      if (check) {
        if (!current) {
          std::fprintf(stderr, "missing or stale: %s\n", path.c_str());
          ++stale;
        }
        continue;
      }
      if (current) continue;  // Keep the file: no churn from map order.
      std::ofstream out(path, std::ios::binary | std::ios::trunc);
      out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
      if (!out) {
        std::fprintf(stderr, "cannot write %s\n", path.c_str());
        return 1;
      }
    }
    std::printf("%s: %zu seeds\n", target.c_str(), files.size());
  }
  return stale == 0 ? 0 : 1;
}
