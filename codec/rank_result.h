// RankResult is the ranking service's output in plain C++ types: the ranked
// items, each with an id, a score, a position, typed metrics and a log line.
// Codecs turn it into bytes and back; nothing here knows about protobuf.
//
// Metric keys are a table shared by all items (RankResult::keys): an item's
// metric refers to its key by index, and a key has one type in a result. That
// is how a ranker produces them (a fixed output schema), it is what lets an
// encoder avoid hashing key strings per item, and it is what rankbin puts on
// the wire.
//
// Example:
//   RankResult r;
//   uint32_t ctr = r.AddKey("score.ctr", MetricType::kDouble);
//   RankedItem& item = r.items.emplace_back();
//   item.item_id = "sku-1";
//   item.metrics.push_back({ctr, MetricValue::Double(0.031)});
//
// Thread safety: plain values; const access from many threads is safe.
#ifndef RANKWIRE_CODEC_RANK_RESULT_H_
#define RANKWIRE_CODEC_RANK_RESULT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace rankwire {

// Numbering matches rank.v1.MetricType.
enum class MetricType : uint8_t {
  kInt = 1,     // int64
  kFloat = 2,   // IEEE-754 binary32
  kDouble = 3,  // IEEE-754 binary64
  kString = 4,  // UTF-8 text (not validated; bytes are kept as they are)
};

absl::string_view MetricTypeName(MetricType type);
// REQUIRES: nothing; returns nullopt for values outside the enum.
std::optional<MetricType> MetricTypeFromNumber(int number);

// A typed metric value.
class MetricValue {
 public:
  MetricValue() : value_(int64_t{0}) {}
  static MetricValue Int(int64_t v) { return MetricValue(v); }
  static MetricValue Float(float v) { return MetricValue(v); }
  static MetricValue Double(double v) { return MetricValue(v); }
  static MetricValue String(std::string v) { return MetricValue(std::move(v)); }

  MetricType type() const {
    return static_cast<MetricType>(value_.index() + 1);
  }
  // REQUIRES: type() is the matching type.
  int64_t int_value() const { return std::get<int64_t>(value_); }
  float float_value() const { return std::get<float>(value_); }
  double double_value() const { return std::get<double>(value_); }
  const std::string& string_value() const {
    return std::get<std::string>(value_);
  }
  // Any numeric type as a double (strings give nullopt).
  std::optional<double> AsDouble() const;

  // Same type and same value; NaN equals NaN (bit patterns are not
  // compared, since the protobuf baseline prints every NaN as "nan").
  friend bool operator==(const MetricValue& a, const MetricValue& b);
  friend bool operator!=(const MetricValue& a, const MetricValue& b) {
    return !(a == b);
  }
  std::string DebugString() const;

 private:
  template <typename T>
  explicit MetricValue(T v) : value_(std::move(v)) {}
  // Index order follows MetricType numbering minus one.
  std::variant<int64_t, float, double, std::string> value_;
};

struct MetricKey {
  std::string name;
  MetricType type = MetricType::kDouble;
};

struct MetricEntry {
  uint32_t key = 0;  // Index into RankResult::keys.
  MetricValue value;
};

struct RankedItem {
  std::string item_id;
  double score = 0;
  uint32_t position = 0;  // 1-based rank.
  std::vector<MetricEntry> metrics;
  std::string log;  // Empty when logs are not inline.
};

struct RankResult {
  std::vector<MetricKey> keys;
  std::vector<RankedItem> items;  // Rank order: items[0] has position 1.

  // Appends a key and returns its index. REQUIRES: `name` is not a key yet.
  uint32_t AddKey(std::string name, MetricType type);
  // Index of the key named `name`, if any. Linear; for tests and tools.
  std::optional<uint32_t> FindKey(absl::string_view name) const;
  // The value of metric `name` on item `item`, if present.
  const MetricValue* FindMetric(size_t item, absl::string_view name) const;
};

// Checks the invariants every codec relies on: key names unique, entry key
// indexes in range, each value of its key's type, no key twice in an item.
// InvalidArgument naming the first violation otherwise.
absl::Status ValidateResult(const RankResult& result);

// Semantic equality: same key set (name and type, in any order), same items
// in the same order, same metrics per item (in any order, compared by key
// name), same logs. Returns an empty string when equal, otherwise a
// description of the first difference.
std::string DiffResults(const RankResult& a, const RankResult& b);

}  // namespace rankwire

#endif  // RANKWIRE_CODEC_RANK_RESULT_H_
