#include "ranking/ranker.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "codec/protobuf/protobuf_codec.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "request/request_validator.h"
#include "request/request_view.h"
#include "tests/support/shipped_model_test.h"
#include "workload/workload.h"

namespace rankwire {
namespace {

using ::testing::HasSubstr;

class RankerTest : public ShippedModelTest {
 protected:
  void SetUp() override {
    ShippedModelTest::SetUp();
    if (HasFatalFailure()) return;
    request_ = workload::WorkloadGenerator({}).Make(0);
  }
  // Through the production entry point, with logs inline or none.
  RankResult Rank(const rank::v1::RankRequest& request, bool with_logs) const {
    return ranker_->Rank(request, with_logs ? LogDetail::kInline : LogDetail::kNone).result;
  }
  // Ranker::Shape of a protobuf request, through the view the server parses.
  OutputShape Shape(const rank::v1::RankRequest& request) const {
    std::string storage;
    RequestView view;
    const absl::Status parsed = RequestViewOf(request, RequestLimits{}, &storage, &view);
    EXPECT_TRUE(parsed.ok()) << parsed;
    return ranker_->Shape(view);
  }
  double Metric(const RankResult& r, size_t item, const std::string& name) {
    const std::optional<MetricRef> v = r.FindMetric(item, name);
    EXPECT_TRUE(v.has_value()) << name;
    return v ? v->AsDouble().value_or(NAN) : NAN;
  }

  rank::v1::RankRequest request_;
};

TEST_F(RankerTest, SameRequestSameResult) {
  RankResult a = Rank(request_, true);
  RankResult b = Rank(request_, true);
  EXPECT_EQ(DiffResults(a, b), "");
  EXPECT_TRUE(ValidateResult(a).ok());
}

TEST_F(RankerTest, ItemsAreSortedAndPositioned) {
  RankResult r = Rank(request_, false);
  ASSERT_EQ(r.size(), 500u);
  EXPECT_FALSE(r.has_logs());
  for (size_t i = 0; i < r.size(); ++i) {
    EXPECT_EQ(r.position(i), i + 1);
    EXPECT_TRUE(r.log(i).empty());
    if (i > 0) {
      EXPECT_LE(r.score(i), r.score(i - 1));
    }
  }
}

TEST_F(RankerTest, MetricsAreComputedFromTheRequest) {
  RankResult r = Rank(request_, true);
  const LinearSpec::Head& ctr_head = model_->heads()[0];
  for (size_t i : {size_t{0}, size_t{250}, size_t{499}}) {
    const RankedItem item = r.Item(i);
    // The item's feature values are the request's.
    const int pre = static_cast<int>(Metric(r, i, "rank.pre")) - 1;
    const rank::v1::Candidate& c = request_.candidates(pre);
    EXPECT_EQ(c.item_id(), item.item_id);
    EXPECT_EQ(Metric(r, i, "feat.price"), c.features(0));
    EXPECT_EQ(Metric(r, i, "feat.sales_30d"), c.features(2));
    EXPECT_EQ(r.FindMetric(i, "recall.source")->string_value(), c.recall_source());
    EXPECT_EQ(Metric(r, i, "recall.rank"), c.recall_rank());
    // The click head's probability is the sigmoid of its bias plus the
    // emitted contributions.
    double logit = ctr_head.bias;
    for (const LinearSpec::Term& t : ctr_head.terms) {
      logit += Metric(r, i, "contrib.ctr." + t.input);
    }
    EXPECT_NEAR(Metric(r, i, "score.ctr"), 1 / (1 + std::exp(-logit)), 1e-5);
    // The final score combines the heads with their exponents and the boost.
    double expected = model_->Boost(c.recall_source());
    for (const LinearSpec::Head& h : model_->heads()) {
      expected *= std::pow(Metric(r, i, "score." + h.name), h.exponent);
    }
    EXPECT_NEAR(item.score, expected, 1e-12);
    EXPECT_EQ(Metric(r, i, "score.final"), item.score);
    EXPECT_EQ(r.FindMetric(i, "model.version")->string_value(), "ecom_search_lr@2026.11.3");
    EXPECT_THAT(item.log, HasSubstr("item=" + item.item_id + " pos=" + std::to_string(i + 1)));
    EXPECT_THAT(item.log, HasSubstr("| ctr p="));
  }
}

TEST_F(RankerTest, IntegralFeaturesAreIntMetrics) {
  RankResult r = Rank(request_, false);
  EXPECT_EQ(r.key(*r.FindKey("feat.sales_30d")).type, MetricType::kInt);
  EXPECT_EQ(r.key(*r.FindKey("feat.category_match")).type, MetricType::kInt);
  EXPECT_EQ(r.key(*r.FindKey("feat.price")).type, MetricType::kFloat);
  EXPECT_EQ(r.key(*r.FindKey("score.final")).type, MetricType::kDouble);
}

// A feature is an int metric only when every candidate's value is a whole
// number of at most 9.0e15 in magnitude; one value that is not makes it a
// float metric. Edge values of the float format, each on one candidate.
TEST_F(RankerTest, OneValueThatIsNotWholeMakesAFeatureAFloatMetric) {
  int column = -1;
  for (int j = 0; j < request_.item_feature_names_size(); ++j) {
    if (request_.item_feature_names(j) == "sales_30d") column = j;
  }
  ASSERT_GE(column, 0);
  const struct {
    float value;
    MetricType type;
  } cases[] = {
      {0.5f, MetricType::kFloat},
      {-0.0f, MetricType::kInt},
      {1e-40f, MetricType::kFloat},
      {8388607.5f, MetricType::kFloat},
      {16777216.0f, MetricType::kInt},
      {3.0e9f, MetricType::kInt},
      {-7.0f, MetricType::kInt},
      {123.25f, MetricType::kFloat},
      {9.5e15f, MetricType::kFloat},
      {-9.5e15f, MetricType::kFloat},
      {1.0f + 0x1p-23f, MetricType::kFloat},
  };
  for (const auto& c : cases) {
    rank::v1::RankRequest request = request_;
    request.mutable_candidates(7)->set_features(column, c.value);
    RankResult r = Rank(request, false);
    EXPECT_EQ(r.key(*r.FindKey("feat.sales_30d")).type, c.type) << c.value;
  }
}

TEST_F(RankerTest, SeedShapedPayloadIsAboutOnePointTwoMegabytes) {
  RankResult r = Rank(request_, true);
  absl::StatusOr<OwnedBuffer> bytes = ProtobufCodec().Encode(r);
  ASSERT_TRUE(bytes.ok());
  EXPECT_GE(bytes->size(), 1100u * 1000);
  EXPECT_LE(bytes->size(), 1300u * 1000);
  size_t logs = 0;
  for (size_t i = 0; i < r.size(); ++i) logs += r.log(i).size();
  EXPECT_EQ(logs, r.log_bytes());
  // Logs are about half of it, as in the source system (1-2 KB per item).
  EXPECT_GE(logs / r.size(), 1000u);
  EXPECT_LE(logs / r.size(), 2000u);
}

TEST_F(RankerTest, MissingFeaturesCountAsZero) {
  rank::v1::RankRequest request = request_;
  request.clear_item_feature_names();
  for (auto& c : *request.mutable_candidates()) c.clear_features();
  RankResult r = Rank(request, false);
  ASSERT_EQ(r.size(), 500u);
  // Every candidate scores the same but for its recall-source boost.
  EXPECT_FALSE(r.FindKey("feat.price").has_value());
  EXPECT_NEAR(r.score(0) / model_->Boost(r.FindMetric(0, "recall.source")->string_value()),
              r.score(499) / model_->Boost(r.FindMetric(499, "recall.source")->string_value()),
              1e-12);
}

// Widest encodings of an OutputShape key of type kInt, as the response
// budget counts them: its protobuf text (a sign and the digits of
// max_int), and its rankbin zigzag varint.
size_t IntTextBound(uint64_t max_int) { return 1 + std::to_string(max_int).size(); }
size_t IntVarintBound(uint64_t max_int) {
  size_t n = 1;
  for (uint64_t v = max_int << 1; v >= 0x80; v >>= 7) ++n;
  return n;
}

// The response budget sizes responses from Shape(): it must name exactly the
// keys Rank() emits, bound every value, and bound every log line. An item
// feature is a kInt key in the shape (Rank() decides int or float from the
// values); where Rank() emits a float, the shape's int bound must encode at
// least as wide as a float does (15 characters of text, 4 rankbin bytes).
TEST_F(RankerTest, ShapeNamesTheKeysAndBoundsTheValuesAndLogLines) {
  rank::v1::RankRequest request = request_;
  request.set_user_id(std::string(256, 'u'));
  (*request.mutable_context())["query"] = std::string(512, 'q');
  request.mutable_candidates(3)->set_recall_source(std::string(64, 's'));
  const OutputShape shape = Shape(request);
  RankResult r = Rank(request, true);
  ASSERT_EQ(shape.keys.size(), r.key_count());
  bool saw_float = false;
  for (uint32_t k = 0; k < r.key_count(); ++k) {
    const OutputShape::Key& bound = shape.keys[k];
    const MetricKey& key = r.key(k);
    SCOPED_TRACE(key.name);
    EXPECT_EQ(bound.name, key.name);
    if (key.type == MetricType::kFloat && bound.type == MetricType::kInt) {
      saw_float = true;
      EXPECT_GE(IntTextBound(bound.max_int), 15u);
      EXPECT_GE(IntVarintBound(bound.max_int), 4u);
      continue;
    }
    EXPECT_EQ(bound.type, key.type);
    const Column& column = r.column(k);
    for (size_t i = 0; i < r.size(); ++i) {
      if (!column.present(i)) continue;
      if (key.type == MetricType::kInt) {
        const int64_t v = column.ints()[i];
        EXPECT_LE(v < 0 ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v), bound.max_int);
      } else if (key.type == MetricType::kString && !bound.per_item_string) {
        EXPECT_LE(column.string_at(i).size(), bound.string_bytes);
      }
    }
  }
  EXPECT_TRUE(saw_float) << "no feature key of the shape was a float in the result";
  for (size_t i = 0; i < r.size(); ++i) {
    const std::optional<MetricRef> source = r.FindMetric(i, "recall.source");
    ASSERT_TRUE(source.has_value());
    EXPECT_LE(r.log(i).size(),
              shape.line_fixed_bytes + r.id(i).size() + source->string_value().size());
    EXPECT_GT(r.log(i).size(), shape.line_shared_bytes);
  }
}

// The deferred lines' byte estimate (what bounds the log queue and the
// writers' batches) holds their text, whatever the feature names' length.
// Deferred logs are charged to the log queue for the memory they hold while
// queued (the values' arrays), which is what its byte bound limits: at
// least every candidate's features and every number of its line, and not
// much more.
TEST_F(RankerTest, DeferredLogsChargeTheQueueForTheValuesTheyHold) {
  size_t terms = 0;
  for (const LinearSpec::Head& h : model_->heads()) terms += h.terms.size();
  const size_t heads = model_->heads().size();
  for (uint32_t candidates : {1u, 50u, 500u}) {
    workload::WorkloadOptions options;
    options.candidates = candidates;
    options.top_n = 1;
    const rank::v1::RankRequest request = workload::WorkloadGenerator(options).Make(3);
    RankOutput out = ranker_->Rank(request, LogDetail::kDeferred);
    ASSERT_NE(out.logs, nullptr);
    const size_t features = static_cast<size_t>(request.item_feature_names_size());
    const size_t values = candidates * (4 * features + 8 * (2 * heads + terms + 2));
    const size_t estimate = out.logs->EstimatedBytes();
    EXPECT_GE(estimate, values) << candidates;
    EXPECT_LE(estimate, 2 * values + 4096) << candidates;
  }
}

// OrderBestFirst against std::stable_sort by score, best first: ties (and
// -0 against +0) in index order; scores apart only in their low bits (one
// run of equal high halves, sorted by the whole key); negatives, zeros,
// infinities; empty and one-element inputs.
TEST(OrderBestFirstTest, MatchesAStableSortByScore) {
  std::mt19937_64 rng(45);
  std::uniform_real_distribution<double> unit(0, 1);
  std::vector<std::vector<double>> inputs = {{}, {0.5}, {-0.0, 0.0, -0.0, 0.0}};
  for (size_t n : {2, 17, 500, 5000}) {
    std::vector<double> random(n), ties(n), close(n), mixed(n);
    for (size_t i = 0; i < n; ++i) {
      random[i] = unit(rng);
      ties[i] = static_cast<double>(rng() % 5) / 4;
      close[i] = 0.25;
      for (uint64_t k = rng() % 64; k > 0; --k) close[i] = std::nextafter(close[i], 1.0);
      const double pick[] = {-1e300,
                             -2.5,
                             -0.0,
                             0.0,
                             1e-310,
                             3.0,
                             unit(rng) - 0.5,
                             std::numeric_limits<double>::infinity()};
      mixed[i] = pick[rng() % 8];
    }
    for (auto* v : {&random, &ties, &close, &mixed}) inputs.push_back(*v);
  }
  SortScratch scratch;
  std::vector<uint32_t> order;
  for (const std::vector<double>& score : inputs) {
    std::vector<uint32_t> want(score.size());
    for (size_t i = 0; i < want.size(); ++i) want[i] = static_cast<uint32_t>(i);
    std::stable_sort(want.begin(), want.end(),
                     [&score](uint32_t a, uint32_t b) { return score[a] > score[b]; });
    OrderBestFirst(score, &scratch, &order);
    EXPECT_EQ(order, want) << score.size() << " scores";
  }
}

}  // namespace
}  // namespace rankwire
