// Tests of codec/protobuf/protobuf_codec.h beyond the conformance suite: the metric
// text form (exact round trip of every number), and messages the codec did
// not write (missing types, unparsable text, invalid UTF-8).
#include "codec/protobuf/protobuf_codec.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "codec/codec.h"
#include "gmock/gmock.h"
#include "google/protobuf/stubs/logging.h"
#include "gtest/gtest.h"
#include "rank/v1/rank.pb.h"

namespace rankwire {
namespace {

using ::testing::HasSubstr;

std::string Text(const MetricRef& v) {
  std::string out;
  AppendMetricText(v, &out);
  return out;
}

template <typename T, typename U>
T BitCast(U u) {
  static_assert(sizeof(T) == sizeof(U));
  T t;
  std::memcpy(&t, &u, sizeof(t));
  return t;
}

std::vector<float> InterestingFloats() {
  using L = std::numeric_limits<float>;
  std::vector<float> v = {0.0f,
                          -0.0f,
                          1.0f,
                          -1.0f,
                          0.1f,
                          1.0f / 3,
                          0.12345679f,
                          L::infinity(),
                          -L::infinity(),
                          L::denorm_min(),
                          -L::denorm_min(),
                          L::min(),
                          L::max(),
                          L::lowest(),
                          L::epsilon(),
                          16777217.0f,
                          1e-40f};
  std::mt19937 rng(3);
  for (int i = 0; i < 20000; ++i) {
    float f = BitCast<float>(static_cast<uint32_t>(rng()));
    if (!std::isnan(f)) v.push_back(f);
  }
  return v;
}

std::vector<double> InterestingDoubles() {
  using L = std::numeric_limits<double>;
  std::vector<double> v = {0.0,
                           -0.0,
                           1.0,
                           0.1,
                           1.0 / 3,
                           5e-324,
                           -5e-324,
                           L::min(),
                           L::max(),
                           L::lowest(),
                           L::infinity(),
                           -L::infinity(),
                           9007199254740993.0,
                           2.2250738585072009e-308 /* largest denormal */};
  std::mt19937_64 rng(5);
  for (int i = 0; i < 20000; ++i) {
    double d = BitCast<double>(static_cast<uint64_t>(rng()));
    if (!std::isnan(d)) v.push_back(d);
  }
  return v;
}

TEST(MetricTextTest, FloatsRoundTripBitForBit) {
  for (float f : InterestingFloats()) {
    const std::string text = Text(MetricRef::Float(f));
    absl::StatusOr<MetricRef> back = ParseMetricText(MetricType::kFloat, text);
    ASSERT_TRUE(back.ok()) << text << ": " << back.status();
    ASSERT_EQ(back->type(), MetricType::kFloat);
    ASSERT_EQ(BitCast<uint32_t>(back->float_value()), BitCast<uint32_t>(f)) << text;
  }
}

TEST(MetricTextTest, DoublesRoundTripBitForBit) {
  for (double d : InterestingDoubles()) {
    const std::string text = Text(MetricRef::Double(d));
    absl::StatusOr<MetricRef> back = ParseMetricText(MetricType::kDouble, text);
    ASSERT_TRUE(back.ok()) << text << ": " << back.status();
    ASSERT_EQ(back->type(), MetricType::kDouble);
    ASSERT_EQ(BitCast<uint64_t>(back->double_value()), BitCast<uint64_t>(d)) << text;
  }
}

TEST(MetricTextTest, NanRoundTripsAsNan) {
  for (float f :
       {std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::quiet_NaN()}) {
    absl::StatusOr<MetricRef> back = ParseMetricText(MetricType::kFloat, Text(MetricRef::Float(f)));
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_TRUE(std::isnan(back->float_value()));
  }
  for (double d :
       {std::numeric_limits<double>::quiet_NaN(), -std::numeric_limits<double>::quiet_NaN()}) {
    absl::StatusOr<MetricRef> back =
        ParseMetricText(MetricType::kDouble, Text(MetricRef::Double(d)));
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_TRUE(std::isnan(back->double_value()));
  }
}

TEST(MetricTextTest, IntsRoundTrip) {
  std::vector<int64_t> values = {0, 1, -1, std::numeric_limits<int64_t>::min(),
                                 std::numeric_limits<int64_t>::max()};
  std::mt19937_64 rng(9);
  for (int i = 0; i < 5000; ++i) values.push_back(static_cast<int64_t>(rng()) >> (rng() % 64));
  for (int64_t v : values) {
    const std::string text = Text(MetricRef::Int(v));
    absl::StatusOr<MetricRef> back = ParseMetricText(MetricType::kInt, text);
    ASSERT_TRUE(back.ok()) << text;
    ASSERT_EQ(back->int_value(), v);
  }
}

// The forms rank.proto documents: shortest round-trip decimal, "nan",
// "inf"/"-inf", decimal integers.
TEST(MetricTextTest, DocumentedForms) {
  EXPECT_EQ(Text(MetricRef::Float(0.12345679f)), "0.12345679");
  EXPECT_EQ(Text(MetricRef::Double(0.1)), "0.1");
  EXPECT_EQ(Text(MetricRef::Double(std::numeric_limits<double>::quiet_NaN())), "nan");
  EXPECT_EQ(Text(MetricRef::Double(-std::numeric_limits<double>::infinity())), "-inf");
  EXPECT_EQ(Text(MetricRef::Float(std::numeric_limits<float>::infinity())), "inf");
  EXPECT_EQ(Text(MetricRef::Double(-0.0)), "-0");
  EXPECT_EQ(Text(MetricRef::Int(std::numeric_limits<int64_t>::min())), "-9223372036854775808");
  EXPECT_EQ(Text(MetricRef::String("as is")), "as is");
  std::string appended = "x=";
  AppendMetricText(MetricRef::Int(42), &appended);
  EXPECT_EQ(appended, "x=42");
}

TEST(MetricTextTest, UnparsableTextIsDataLoss) {
  struct Case {
    MetricType type;
    std::string text;
  };
  const Case cases[] = {
      {MetricType::kInt, ""},       {MetricType::kInt, "1.5"},
      {MetricType::kInt, " 1"},     {MetricType::kInt, "1 "},
      {MetricType::kInt, "0x10"},   {MetricType::kInt, "9223372036854775808"},  // INT64_MAX + 1
      {MetricType::kInt, "nan"},    {MetricType::kFloat, ""},
      {MetricType::kFloat, "abc"},  {MetricType::kFloat, "1e39"},  // Out of binary32's range.
      {MetricType::kFloat, "0.5f"}, {MetricType::kDouble, "1e309"},
      {MetricType::kDouble, "1,5"}, {MetricType::kDouble, std::string("1\0", 2)},
  };
  for (const Case& c : cases) {
    absl::StatusOr<MetricRef> v = ParseMetricText(c.type, c.text);
    EXPECT_EQ(v.status().code(), absl::StatusCode::kDataLoss)
        << MetricTypeName(c.type) << " \"" << c.text << "\"";
  }
  // Strings take any text.
  EXPECT_TRUE(ParseMetricText(MetricType::kString, "").ok());
  EXPECT_TRUE(ParseMetricText(MetricType::kString, "1e999").ok());
}

// Messages the codec did not write --------------------------------------------

absl::StatusOr<std::unique_ptr<ResultView>> OpenMessage(const rank::v1::RankResult& m) {
  return ProtobufCodec().Open(SharedBytes::FromString(m.SerializeAsString()));
}

TEST(ProtobufCodecTest, MetricWithoutADeclaredTypeIsDataLoss) {
  rank::v1::RankResult m;
  (*m.mutable_metric_types())["declared"] = rank::v1::METRIC_TYPE_INT;
  rank::v1::RankedItem* item = m.add_items();
  item->set_item_id("a");
  (*item->mutable_metrics())["declared"] = "1";
  (*item->mutable_metrics())["undeclared"] = "2";

  absl::StatusOr<std::unique_ptr<ResultView>> view = OpenMessage(m);
  ASSERT_TRUE(view.ok()) << view.status();  // Found when the metric is read.
  absl::StatusOr<std::optional<MetricRef>> declared = (*view)->FindMetric(0, "declared");
  ASSERT_TRUE(declared.ok());
  EXPECT_EQ((*declared)->int_value(), 1);
  absl::StatusOr<std::optional<MetricRef>> undeclared = (*view)->FindMetric(0, "undeclared");
  EXPECT_EQ(undeclared.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(undeclared.status().message(), HasSubstr("undeclared"));
  EXPECT_EQ((*view)->ForEachMetric(0, [](uint32_t, const MetricRef&) {}).code(),
            absl::StatusCode::kDataLoss);
  EXPECT_EQ((*view)->Materialize().status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(FromProto(m).status().code(), absl::StatusCode::kDataLoss);
}

TEST(ProtobufCodecTest, UnparsableMetricTextIsDataLoss) {
  rank::v1::RankResult m;
  (*m.mutable_metric_types())["ctr"] = rank::v1::METRIC_TYPE_DOUBLE;
  rank::v1::RankedItem* item = m.add_items();
  (*item->mutable_metrics())["ctr"] = "0.1x";
  absl::StatusOr<std::unique_ptr<ResultView>> view = OpenMessage(m);
  ASSERT_TRUE(view.ok());
  absl::StatusOr<std::optional<MetricRef>> ctr = (*view)->FindMetric(0, "ctr");
  EXPECT_EQ(ctr.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(ctr.status().message(), HasSubstr("ctr"));
  EXPECT_THAT(ctr.status().message(), HasSubstr("0.1x"));
  EXPECT_EQ((*view)->Materialize().status().code(), absl::StatusCode::kDataLoss);
}

TEST(ProtobufCodecTest, UnknownMetricTypeNumberIsDataLossAtOpen) {
  for (int number : {0, 5, 1000}) {
    rank::v1::RankResult m;
    (*m.mutable_metric_types())["k"] = static_cast<rank::v1::MetricType>(number);
    absl::Status s = OpenMessage(m).status();
    EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << number;
    EXPECT_THAT(s.message(), HasSubstr("metric_types"));
  }
}

TEST(ProtobufCodecTest, NotAMessageIsDataLoss) {
  google::protobuf::LogSilencer quiet;
  for (std::string bytes : {std::string("\xff\xff\xff"), std::string("\x0a\x05"
                                                                     "ab",
                                                                     4)}) {
    EXPECT_EQ(ProtobufCodec().Open(SharedBytes::FromString(bytes)).status().code(),
              absl::StatusCode::kDataLoss);
  }
}

TEST(ProtobufCodecTest, ToProtoAndFromProtoRoundTrip) {
  RankResult r;
  const uint32_t ctr = r.AddKey("ctr", MetricType::kDouble);
  const uint32_t n = r.AddKey("n", MetricType::kInt);
  const size_t item = r.AddItem("a", -0.0, 1);
  r.SetDouble(item, ctr, -0.0);
  r.SetInt(item, n, -5);
  r.SetLog(item, "l");
  r.AddItem("b", 0.5, 2);  // No metrics, no log.
  rank::v1::RankResult m;
  ASSERT_TRUE(ToProto(r, &m).ok());
  EXPECT_EQ(m.metric_types().at("ctr"), rank::v1::METRIC_TYPE_DOUBLE);
  EXPECT_EQ(m.items(0).metrics().at("ctr"), "-0");
  EXPECT_EQ(m.items(0).metrics().at("n"), "-5");
  EXPECT_EQ(m.items(0).log(), "l");
  EXPECT_TRUE(m.items(1).metrics().empty());
  EXPECT_EQ(m.items(1).log(), "");
  absl::StatusOr<RankResult> back = FromProto(m);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(DiffResults(*back, r), "");
}

// The codec does not validate UTF-8 (neither does the model): protobuf
// serializes invalid UTF-8 in a string field with only a logged error, and
// refuses it when parsing. So a result with non-UTF-8 text encodes, but its
// bytes do not decode: DataLoss. rankbin keeps such bytes as they are.
TEST(ProtobufCodecTest, InvalidUtf8EncodesButDoesNotDecode) {
  google::protobuf::LogSilencer quiet;
  for (int where = 0; where < 4; ++where) {
    RankResult r;
    const uint32_t k = r.AddKey(where == 0 ? "bad\xff" : "k", MetricType::kString);
    const size_t item = r.AddItem(where == 1 ? "\xc3\x28" : "id", 0, 1);
    r.SetString(item, k, where == 2 ? "\xe2\x82" : "v");
    r.SetLog(item, where == 3 ? "\xff" : "");
    absl::StatusOr<OwnedBuffer> bytes = ProtobufCodec().Encode(r);
    ASSERT_TRUE(bytes.ok()) << where;
    EXPECT_EQ(ProtobufCodec().Decode(SharedBytes::FromBuffer(*std::move(bytes))).status().code(),
              absl::StatusCode::kDataLoss)
        << where;
  }
}

TEST(ProtobufCodecTest, Describes) {
  ProtobufCodec codec;
  EXPECT_EQ(codec.name(), "protobuf");
  EXPECT_EQ(codec.body_kind(), BodyKind::kProtobufResult);
  EXPECT_EQ(codec.format_version(), 1u);
}

}  // namespace
}  // namespace rankwire
