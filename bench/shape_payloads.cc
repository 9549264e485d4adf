#include "bench/shape_payloads.h"

#include <algorithm>
#include <cstdlib>
#include <numeric>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"

namespace rankwire::bench {
namespace {

using Rng = std::mt19937_64;

double Uniform(Rng& rng) { return std::uniform_real_distribution<double>(0, 1)(rng); }
size_t Pick(Rng& rng, size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng); }

template <size_t N>
const char* PickWord(Rng& rng, const char* const (&words)[N]) {
  return words[Pick(rng, N)];
}

// Items in rank order with falling scores and 1-based positions. Ids are
// 18 characters at every size ("it-" + 8 hex + "-" + 6 digits), so an item
// costs the same in a 500- and a 5000-item payload (with a variable-width
// index, the row model's ids outgrew std::string's inline buffer at item
// 1000 and the scaling rows measured that as per-item growth).
RankedItem& AddItem(std::vector<RankedItem>& items, Rng& rng, size_t i) {
  RankedItem& item = items.emplace_back();
  item.item_id = absl::StrFormat("it-%08x-%06zu", static_cast<uint32_t>(rng()), i);
  item.score = 1.0 / (1.0 + static_cast<double>(i)) + 1e-9 * Uniform(rng);
  item.position = static_cast<uint32_t>(i + 1);
  return item;
}

// `r` (its keys) with `items` appended: the shapes are written as rows, one
// item after another, so each draws from its generator in the order it
// always has (the payloads stay the bytes they were before the model went
// columnar). A string value is an entry of its own, as SetString makes it.
RankResult WithItems(RankResult r, const std::vector<RankedItem>& items) {
  r.Reserve(items.size());
  for (const RankedItem& item : items) {
    if (!r.AppendItem(item).ok()) std::abort();  // The generators' own types.
  }
  return r;
}

// Appends `count` keys named prefix0, prefix1, ... of one type, and
// returns their indexes in `keys`.
void AddKeys(RankResult& r, absl::string_view prefix, int count, MetricType type,
             std::vector<uint32_t>* keys) {
  for (int k = 0; k < count; ++k) keys->push_back(r.AddKey(absl::StrCat(prefix, k), type));
}

constexpr const char* kCategories[] = {"electronics", "home",   "garden", "toys",    "books",
                                       "fashion",     "sports", "beauty", "grocery", "auto"};
constexpr const char* kStages[] = {"recall", "filter", "prerank", "rank", "rerank", "blend"};
constexpr const char* kRules[] = {"brand_match",  "stock_low", "price_drop", "new_arrival",
                                  "seller_score", "none",      "geo_boost",  "dedup"};

// A debug trace of 150-300 bytes: the vocabulary of debug output (stage
// names, rule names, feature names) with numbers that make every trace
// distinct.
std::string Trace(Rng& rng, const std::string& item_id, size_t k) {
  const size_t target = 150 + Pick(rng, 151);
  std::string s = absl::StrCat("trace#", k, " item=", item_id);
  while (s.size() < target) {
    switch (Pick(rng, 4)) {
      case 0:
        absl::StrAppend(&s, " stage=", PickWord(rng, kStages), " took_us=", Pick(rng, 5000));
        break;
      case 1:
        absl::StrAppendFormat(&s, " feat{ctr:%.4f,cvr:%.5f}", Uniform(rng), Uniform(rng) / 10);
        break;
      case 2:
        absl::StrAppend(&s, " rule=", PickWord(rng, kRules), " w=", Pick(rng, 100));
        break;
      default:
        absl::StrAppend(&s, " path=", PickWord(rng, kStages), "->", PickWord(rng, kStages));
    }
  }
  s.resize(target);
  return s;
}

}  // namespace

RankResult StringHeavyResult(size_t items, uint64_t seed) {
  Rng rng(seed);
  RankResult r;
  std::vector<RankedItem> rows;
  std::vector<uint32_t> keys;
  AddKeys(r, "feat.f", 12, MetricType::kDouble, &keys);
  AddKeys(r, "score.m", 20, MetricType::kDouble, &keys);
  AddKeys(r, "cat.c", 10, MetricType::kString, &keys);
  AddKeys(r, "debug.trace", 6, MetricType::kString, &keys);
  for (size_t i = 0; i < items; ++i) {
    RankedItem& item = AddItem(rows, rng, i);
    size_t j = 0;
    for (; j < 32; ++j) item.metrics.push_back({keys[j], MetricValue::Double(Uniform(rng))});
    for (; j < 42; ++j) {
      item.metrics.push_back({keys[j], MetricValue::String(PickWord(rng, kCategories))});
    }
    for (size_t t = 0; j < 48; ++j, ++t) {
      item.metrics.push_back({keys[j], MetricValue::String(Trace(rng, item.item_id, t))});
    }
  }
  return WithItems(std::move(r), rows);
}

RankResult LongStringsResult(size_t items, uint64_t seed) {
  Rng rng(seed);
  RankResult r;
  std::vector<RankedItem> rows;
  std::vector<uint32_t> keys;
  AddKeys(r, "feat.n", 12, MetricType::kDouble, &keys);
  AddKeys(r, "debug.trace", 6, MetricType::kString, &keys);
  for (size_t i = 0; i < items; ++i) {
    RankedItem& item = AddItem(rows, rng, i);
    size_t j = 0;
    for (; j < 12; ++j) item.metrics.push_back({keys[j], MetricValue::Double(Uniform(rng))});
    for (size_t t = 0; j < 18; ++j, ++t) {
      item.metrics.push_back({keys[j], MetricValue::String(Trace(rng, item.item_id, t))});
    }
  }
  return WithItems(std::move(r), rows);
}

RankResult FewKeysResult(size_t items, uint64_t seed) {
  Rng rng(seed);
  RankResult r;
  std::vector<RankedItem> rows;
  const uint32_t ctr = r.AddKey("ctr", MetricType::kDouble);
  const uint32_t cvr = r.AddKey("cvr", MetricType::kDouble);
  const uint32_t stock = r.AddKey("stock", MetricType::kInt);
  const uint32_t source = r.AddKey("source", MetricType::kString);
  for (size_t i = 0; i < items; ++i) {
    RankedItem& item = AddItem(rows, rng, i);
    item.metrics.push_back({ctr, MetricValue::Double(Uniform(rng) / 10)});
    item.metrics.push_back({cvr, MetricValue::Double(Uniform(rng) / 100)});
    item.metrics.push_back({stock, MetricValue::Int(static_cast<int64_t>(Pick(rng, 10000)))});
    item.metrics.push_back({source, MetricValue::String(PickWord(rng, kStages))});
  }
  return WithItems(std::move(r), rows);
}

RankResult ManyKeysResult(size_t items, uint64_t seed) {
  Rng rng(seed);
  RankResult r;
  std::vector<RankedItem> rows;
  constexpr size_t kKeys = 200;
  for (size_t k = 0; k < kKeys; ++k) {
    // Mostly doubles, as feature stores are; some floats, ints and strings.
    MetricType type = k % 10 == 7   ? MetricType::kInt
                      : k % 10 == 8 ? MetricType::kFloat
                      : k % 20 == 9 ? MetricType::kString
                                    : MetricType::kDouble;
    r.AddKey(absl::StrCat("sparse.feature_", k), type);
  }
  std::vector<uint32_t> order(kKeys);
  std::iota(order.begin(), order.end(), 0);
  for (size_t i = 0; i < items; ++i) {
    RankedItem& item = AddItem(rows, rng, i);
    // A different half of the keys per item, in key order.
    std::shuffle(order.begin(), order.end(), rng);
    std::vector<uint32_t> half(order.begin(), order.begin() + kKeys / 2);
    std::sort(half.begin(), half.end());
    for (uint32_t k : half) {
      switch (r.key(k).type) {
        case MetricType::kInt:
          item.metrics.push_back({k, MetricValue::Int(static_cast<int64_t>(Pick(rng, 1 << 20)))});
          break;
        case MetricType::kFloat:
          item.metrics.push_back({k, MetricValue::Float(static_cast<float>(Uniform(rng)))});
          break;
        case MetricType::kString:
          item.metrics.push_back({k, MetricValue::String(PickWord(rng, kCategories))});
          break;
        case MetricType::kDouble:
          item.metrics.push_back({k, MetricValue::Double(Uniform(rng))});
      }
    }
  }
  return WithItems(std::move(r), rows);
}

RankResult MixedResult(size_t items, uint64_t seed) {
  Rng rng(seed);
  RankResult r;
  std::vector<RankedItem> rows;
  std::vector<uint32_t> keys;
  AddKeys(r, "m.d", 24, MetricType::kDouble, &keys);
  AddKeys(r, "m.f", 8, MetricType::kFloat, &keys);
  AddKeys(r, "m.i", 4, MetricType::kInt, &keys);
  AddKeys(r, "m.s", 3, MetricType::kString, &keys);
  for (size_t i = 0; i < items; ++i) {
    RankedItem& item = AddItem(rows, rng, i);
    size_t j = 0;
    for (; j < 24; ++j) item.metrics.push_back({keys[j], MetricValue::Double(Uniform(rng))});
    for (; j < 32; ++j) {
      item.metrics.push_back({keys[j], MetricValue::Float(static_cast<float>(Uniform(rng)))});
    }
    for (; j < 36; ++j) {
      item.metrics.push_back({keys[j], MetricValue::Int(static_cast<int64_t>(Pick(rng, 100000)))});
    }
    for (; j < 39; ++j) {
      item.metrics.push_back({keys[j], MetricValue::String(PickWord(rng, kCategories))});
    }
    item.log = Trace(rng, item.item_id, i);
    absl::StrAppend(&item.log, " | ", Trace(rng, item.item_id, i + 1));
  }
  return WithItems(std::move(r), rows);
}

// Probe shapes: not in the issue's sweep, run with codec_bench --probe to
// look for cliffs on payloads unlike the sweep's.

RankResult DistinctShortResult(size_t items, uint64_t seed) {
  Rng rng(seed);
  RankResult r;
  std::vector<RankedItem> rows;
  std::vector<uint32_t> keys;
  AddKeys(r, "d", 8, MetricType::kDouble, &keys);
  AddKeys(r, "tok", 4, MetricType::kString, &keys);
  AddKeys(r, "n", 2, MetricType::kInt, &keys);
  for (size_t i = 0; i < items; ++i) {
    RankedItem& item = AddItem(rows, rng, i);
    size_t j = 0;
    for (; j < 8; ++j) item.metrics.push_back({keys[j], MetricValue::Double(Uniform(rng))});
    for (; j < 12; ++j) {
      item.metrics.push_back(
          {keys[j], MetricValue::String(absl::StrFormat("u%0*x", static_cast<int>(4 + j),
                                                        static_cast<uint64_t>(rng() >> 8)))});
    }
    for (; j < 14; ++j)
      item.metrics.push_back({keys[j], MetricValue::Int(static_cast<int64_t>(rng() >> 20))});
  }
  return WithItems(std::move(r), rows);
}

RankResult MediumRepeatResult(size_t items, uint64_t seed) {
  Rng rng(seed);
  RankResult r;
  std::vector<RankedItem> rows;
  std::vector<std::string> pool;
  for (int v = 0; v < 300; ++v) {
    pool.push_back(absl::StrCat("https://cdn.example.com/", PickWord(rng, kCategories), "/",
                                std::string(Pick(rng, 30), 'x'), v));
  }
  std::vector<uint32_t> keys;
  AddKeys(r, "d", 10, MetricType::kDouble, &keys);
  AddKeys(r, "url", 6, MetricType::kString, &keys);
  for (size_t i = 0; i < items; ++i) {
    RankedItem& item = AddItem(rows, rng, i);
    size_t j = 0;
    for (; j < 10; ++j) item.metrics.push_back({keys[j], MetricValue::Double(Uniform(rng))});
    for (; j < 16; ++j)
      item.metrics.push_back({keys[j], MetricValue::String(pool[Pick(rng, pool.size())])});
  }
  return WithItems(std::move(r), rows);
}

RankResult RaggedResult(size_t items, uint64_t seed) {
  Rng rng(seed);
  RankResult r;
  std::vector<RankedItem> rows;
  constexpr size_t kKeys = 60;
  for (size_t k = 0; k < kKeys; ++k) {
    r.AddKey(absl::StrCat("rag.", k), k % 3 == 0 ? MetricType::kInt : MetricType::kDouble);
  }
  std::vector<uint32_t> order(kKeys);
  std::iota(order.begin(), order.end(), 0);
  for (size_t i = 0; i < items; ++i) {
    RankedItem& item = AddItem(rows, rng, i);
    std::shuffle(order.begin(), order.end(), rng);
    const size_t n = 1 + Pick(rng, kKeys);
    for (size_t t = 0; t < n; ++t) {
      const uint32_t k = order[t];
      item.metrics.push_back({k, r.key(k).type == MetricType::kInt
                                     ? MetricValue::Int(static_cast<int64_t>(rng()))
                                     : MetricValue::Double(Uniform(rng))});
    }
  }
  return WithItems(std::move(r), rows);
}

RankResult WideSparseResult(size_t items, uint64_t seed) {
  Rng rng(seed);
  RankResult r;
  std::vector<RankedItem> rows;
  constexpr size_t kKeys = 3000;
  for (size_t k = 0; k < kKeys; ++k) r.AddKey(absl::StrCat("wide.", k), MetricType::kDouble);
  for (size_t i = 0; i < items; ++i) {
    RankedItem& item = AddItem(rows, rng, i);
    std::vector<uint32_t> ks;
    while (ks.size() < 8) {
      const uint32_t k = static_cast<uint32_t>(Pick(rng, kKeys));
      if (std::find(ks.begin(), ks.end(), k) == ks.end()) ks.push_back(k);
    }
    for (uint32_t k : ks) item.metrics.push_back({k, MetricValue::Double(Uniform(rng))});
  }
  return WithItems(std::move(r), rows);
}

RankResult LongIdResult(size_t items, uint64_t seed) {
  Rng rng(seed);
  RankResult r;
  std::vector<RankedItem> rows;
  std::vector<uint32_t> keys;
  AddKeys(r, "d", 5, MetricType::kDouble, &keys);
  for (size_t i = 0; i < items; ++i) {
    RankedItem& item = AddItem(rows, rng, i);
    item.item_id =
        absl::StrCat(item.item_id, "/", std::string(60, 'a' + static_cast<char>(i % 26)));
    for (uint32_t k : keys) item.metrics.push_back({k, MetricValue::Double(Uniform(rng))});
    for (int t = 0; t < 8; ++t) absl::StrAppend(&item.log, Trace(rng, item.item_id, t), ";");
  }
  return WithItems(std::move(r), rows);
}

// What the ranker returns with explanations (an XGBoost model): 38 keys
// every item has (doubles, floats, ints, a recall source of 6 values), and
// "explain.<k>.feature" / "explain.<k>.contribution" for k = 1..5 in the
// top 10 items only.
RankResult ExplainedResult(size_t items, uint64_t seed) {
  Rng rng(seed);
  RankResult r;
  std::vector<RankedItem> rows;
  std::vector<uint32_t> doubles, floats, ints, features, contributions;
  AddKeys(r, "score.", 8, MetricType::kDouble, &doubles);
  AddKeys(r, "feat.", 18, MetricType::kFloat, &floats);
  AddKeys(r, "rank.", 11, MetricType::kInt, &ints);
  const uint32_t source = r.AddKey("recall.source", MetricType::kString);
  for (int e = 1; e <= 5; ++e) {
    features.push_back(r.AddKey(absl::StrCat("explain.", e, ".feature"), MetricType::kString));
    contributions.push_back(
        r.AddKey(absl::StrCat("explain.", e, ".contribution"), MetricType::kFloat));
  }
  for (size_t i = 0; i < items; ++i) {
    RankedItem& item = AddItem(rows, rng, i);
    for (uint32_t k : doubles) item.metrics.push_back({k, MetricValue::Double(Uniform(rng))});
    for (uint32_t k : floats) {
      item.metrics.push_back({k, MetricValue::Float(static_cast<float>(Uniform(rng)))});
    }
    for (uint32_t k : ints) {
      item.metrics.push_back({k, MetricValue::Int(static_cast<int64_t>(Pick(rng, 1000)))});
    }
    item.metrics.push_back({source, MetricValue::String(kStages[Pick(rng, 6)])});
    if (i >= 10) continue;
    for (size_t e = 0; e < features.size(); ++e) {
      item.metrics.push_back({features[e], MetricValue::String(absl::StrCat("f", Pick(rng, 18)))});
      item.metrics.push_back(
          {contributions[e], MetricValue::Float(static_cast<float>(Uniform(rng) - 0.5))});
    }
  }
  return WithItems(std::move(r), rows);
}

RankResult BareResult(size_t items, uint64_t seed) {
  Rng rng(seed);
  RankResult r;
  std::vector<RankedItem> rows;
  for (size_t i = 0; i < items; ++i) AddItem(rows, rng, i);
  return WithItems(std::move(r), rows);
}

}  // namespace rankwire::bench
