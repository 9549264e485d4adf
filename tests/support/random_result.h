// A seeded generator of RankResults for property tests: every result it
// makes is valid (ValidateResult passes) and every string in it is valid
// UTF-8 (the protobuf codec requires it), and it leans on the edges a codec
// gets wrong: empty results, items without metrics, empty strings, strings
// around the MetricValue inline/heap boundary (10/11 bytes today, 14/15
// before) and long ones, NUL bytes, non-ASCII text, INT64_MIN/MAX and varint length
// boundaries, NaN/±inf/-0/denormal floats and doubles, several item shapes
// (different key subsets), keys no item uses, and string keys with a few
// repeated values (dictionary-friendly) or many distinct ones (dictionary
// overflow).
//
// It also builds the columns the ways builders do: item by item, or every
// item first and then the cells in a random order; a string column's
// repeated values as one shared entry (codes) or an entry per value, with
// equal entries under two codes and entries no item uses.
//
// Example:
//   std::mt19937_64 rng(42);
//   RankResult r = rankwire::test::RandomResult(rng);
//
// Deterministic for a given seed and standard library. Header-only, test-only.
#ifndef RANKWIRE_TESTS_SUPPORT_RANDOM_RESULT_H_
#define RANKWIRE_TESTS_SUPPORT_RANDOM_RESULT_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "codec/rank_result.h"

namespace rankwire::test {

struct RandomResultOptions {
  size_t max_items = 40;
  size_t max_keys = 12;
  // Probability that the result carries per-item logs.
  double logs_probability = 0.5;
};

class ResultGenerator {
 public:
  explicit ResultGenerator(std::mt19937_64& rng) : rng_(rng) {}

  // Appends one code point's UTF-8 bytes to `out`, at most `max_bytes`.
  void AppendCodePoint(std::string* out, size_t max_bytes) {
    // ASCII (with NUL), 2-byte (é Ж), 3-byte (中 €), 4-byte (😀 𝄞).
    static constexpr uint32_t kPoints[] = {0x00,   'a',    'Z',    '.',     '7',     0xe9,    0x416,
                                           0x4e2d, 0x20ac, 0xfffd, 0x1f600, 0x1d11e, 0x10ffff};
    uint32_t cp;
    do {
      cp = Pick(kPoints);
      if (Chance(0.3)) cp = static_cast<uint32_t>(Uniform(0x20, 0x7e));
    } while (Utf8Length(cp) > max_bytes);
    AppendUtf8(cp, out);
  }

  // A valid UTF-8 string of exactly `bytes` bytes.
  std::string Utf8OfSize(size_t bytes) {
    std::string s;
    while (s.size() < bytes) AppendCodePoint(&s, bytes - s.size());
    return s;
  }

  std::string RandomString() {
    switch (Uniform(0, 9)) {
      case 0:
        return "";
      case 1:
        return Utf8OfSize(Chance(0.5) ? 10 : 14);  // The longest inline strings.
      case 2:
        return Utf8OfSize(Chance(0.5) ? 11 : 15);  // The shortest heap ones.
      case 3:
        return Utf8OfSize(static_cast<size_t>(Uniform(100, 400)));
      case 4:
        return std::string("nul\0inside", 10);
      default:
        return Utf8OfSize(static_cast<size_t>(Uniform(1, 24)));
    }
  }

  int64_t RandomInt() {
    static constexpr int64_t kEdges[] = {0,
                                         1,
                                         -1,
                                         63,
                                         -64,
                                         64,
                                         -65,
                                         8191,
                                         -8192,
                                         8192,
                                         std::numeric_limits<int64_t>::max(),
                                         std::numeric_limits<int64_t>::min(),
                                         std::numeric_limits<int64_t>::max() - 1,
                                         std::numeric_limits<int64_t>::min() + 1,
                                         int64_t{1} << 62,
                                         -(int64_t{1} << 62),
                                         INT32_MAX,
                                         INT32_MIN,
                                         int64_t{UINT32_MAX} + 1};
    switch (Uniform(0, 3)) {
      case 0:
        return Pick(kEdges);
      case 1:
        return static_cast<int64_t>(rng_());
      case 2: {
        // Around a varint length boundary: +-2^(7k).
        int shift = 7 * static_cast<int>(Uniform(1, 9));
        int64_t edge = int64_t{1} << std::min(shift, 62);
        return (Chance(0.5) ? edge : -edge) + Uniform(-2, 1);
      }
      default:
        return Uniform(-1000, 1000);
    }
  }

  double RandomDouble() {
    using L = std::numeric_limits<double>;
    static constexpr double kEdges[] = {0.0,
                                        -0.0,
                                        L::infinity(),
                                        -L::infinity(),
                                        L::quiet_NaN(),
                                        L::denorm_min(),
                                        -L::denorm_min(),
                                        L::min(),
                                        L::max(),
                                        L::lowest(),
                                        L::epsilon(),
                                        0.1,
                                        1.0 / 3,
                                        -2.5e-300,
                                        123456789.125};
    switch (Uniform(0, 3)) {
      case 0:
        return Pick(kEdges);
      case 1: {
        uint64_t bits = rng_();  // Any bit pattern, NaN payloads included.
        double d;
        std::memcpy(&d, &bits, sizeof(d));
        return d;
      }
      default:
        return std::uniform_real_distribution<double>(-1e6, 1e6)(rng_);
    }
  }

  float RandomFloat() {
    using L = std::numeric_limits<float>;
    static constexpr float kEdges[] = {0.0f,
                                       -0.0f,
                                       L::infinity(),
                                       -L::infinity(),
                                       L::quiet_NaN(),
                                       L::denorm_min(),
                                       -L::denorm_min(),
                                       L::min(),
                                       L::max(),
                                       L::lowest(),
                                       0.1f,
                                       0.12345679f};
    switch (Uniform(0, 3)) {
      case 0:
        return Pick(kEdges);
      case 1: {
        uint32_t bits = static_cast<uint32_t>(rng_());
        float f;
        std::memcpy(&f, &bits, sizeof(f));
        return f;
      }
      default:
        return std::uniform_real_distribution<float>(-1e3f, 1e3f)(rng_);
    }
  }

  RankResult Result(const RandomResultOptions& options) {
    RankResult r;
    // Sometimes the empty result: no items, no keys.
    if (Chance(0.05)) return r;
    const size_t key_count =
        static_cast<size_t>(Uniform(0, static_cast<int64_t>(options.max_keys)));
    for (size_t k = 0; k < key_count; ++k) {
      std::string name = KeyName(k);
      while (r.FindKey(name)) name += "~";
      r.AddKey(std::move(name), static_cast<MetricType>(Uniform(1, 4)));
    }
    // Per string key: a small vocabulary (repeats, so a dictionary pays) or
    // none (every value fresh); a vocabulary's words are entries of their
    // own, shared by code, or (shared == false) copied per value.
    std::vector<Vocabulary> vocab(key_count);
    for (uint32_t k = 0; k < key_count; ++k) {
      if (r.key(k).type == MetricType::kString && Chance(0.6)) MakeVocabulary(r, k, &vocab[k]);
    }
    // A few shapes: random key subsets.
    std::vector<std::vector<uint32_t>> shapes(static_cast<size_t>(Uniform(1, 3)));
    for (auto& shape : shapes) {
      for (uint32_t k = 0; k < key_count; ++k) {
        if (Chance(0.75)) shape.push_back(k);
      }
    }
    const bool logs = Chance(options.logs_probability);
    const size_t items = static_cast<size_t>(Uniform(0, static_cast<int64_t>(options.max_items)));
    // The cells of every item, set as each item is added or all at the end
    // in a random order.
    std::vector<std::pair<size_t, uint32_t>> cells;
    const bool scrambled = Chance(0.5);
    for (size_t i = 0; i < items; ++i) {
      const std::string id =
          Chance(0.05) ? RandomString() : absl::StrCat("sku-", i, "-", Utf8OfSize(3));
      const double score =
          Chance(0.8) ? std::uniform_real_distribution<double>(0, 1)(rng_) : RandomDouble();
      const uint32_t position =
          Chance(0.9) ? static_cast<uint32_t>(i + 1) : static_cast<uint32_t>(rng_());
      r.AddItem(id, score, position);
      // Mostly the first shape; sometimes another, or none at all.
      const std::vector<uint32_t>* shape = &shapes[0];
      if (Chance(0.2))
        shape = &shapes[static_cast<size_t>(Uniform(0, static_cast<int64_t>(shapes.size()) - 1))];
      std::vector<uint32_t> empty;
      if (Chance(0.05)) shape = &empty;
      for (uint32_t k : *shape) cells.emplace_back(i, k);
      if (!scrambled) SetCells(r, vocab, &cells);
      if (logs && Chance(0.8)) {
        r.SetLog(i, Chance(0.7)
                        ? absl::StrCat("model=lr-v3 scene=search item=", id, " score=", score, " ",
                                       Utf8OfSize(static_cast<size_t>(Uniform(0, 30))))
                        : RandomString());
      }
    }
    std::shuffle(cells.begin(), cells.end(), rng_);
    SetCells(r, vocab, &cells);
    return r;
  }

  MetricValue RandomValue(MetricType type, const std::vector<std::string>& vocab) {
    switch (type) {
      case MetricType::kInt:
        return MetricValue::Int(RandomInt());
      case MetricType::kFloat:
        return MetricValue::Float(RandomFloat());
      case MetricType::kDouble:
        return MetricValue::Double(RandomDouble());
      case MetricType::kString:
        if (!vocab.empty() && Chance(0.9)) {
          return MetricValue::String(
              vocab[static_cast<size_t>(Uniform(0, static_cast<int64_t>(vocab.size()) - 1))]);
        }
        return MetricValue::String(RandomString());
    }
    return MetricValue();
  }

  // A string key's repeated values.
  struct Vocabulary {
    std::vector<std::string> words;
    bool shared = false;          // Set by code (one entry each), or copied.
    std::vector<uint32_t> codes;  // When shared: words[w]'s entry.
  };

  void MakeVocabulary(RankResult& r, uint32_t k, Vocabulary* vocab) {
    const size_t words = static_cast<size_t>(Uniform(1, 12));
    for (size_t w = 0; w < words; ++w) vocab->words.push_back(RandomString());
    vocab->shared = Chance(0.5);
    if (!vocab->shared) return;
    for (const std::string& word : vocab->words) {
      // Now and then an entry no item uses, or an equal entry twice.
      if (Chance(0.1)) r.AddStringEntry(k, RandomString());
      vocab->codes.push_back(r.AddStringEntry(k, word));
      if (Chance(0.1)) vocab->codes.back() = r.AddStringEntry(k, word);
    }
  }

  // Sets each of `cells` (item, key) to a random value, and empties it.
  void SetCells(RankResult& r, const std::vector<Vocabulary>& vocab,
                std::vector<std::pair<size_t, uint32_t>>* cells) {
    for (const auto& [i, k] : *cells) {
      const Vocabulary& v = vocab[k];
      if (v.shared && Chance(0.9)) {
        r.SetStringCode(
            i, k,
            v.codes[static_cast<size_t>(Uniform(0, static_cast<int64_t>(v.codes.size()) - 1))]);
        continue;
      }
      const MetricValue value = RandomValue(r.key(k).type, v.words);
      if (!r.Set(i, k, MetricRef::Of(value)).ok()) std::abort();  // Types agree by construction.
    }
    cells->clear();
  }

  bool Chance(double p) { return std::bernoulli_distribution(p)(rng_); }
  int64_t Uniform(int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng_);
  }

 private:
  template <typename T, size_t N>
  T Pick(const T (&values)[N]) {
    return values[static_cast<size_t>(Uniform(0, N - 1))];
  }

  std::string KeyName(size_t k) {
    switch (Uniform(0, 7)) {
      case 0:
        return "";  // An empty key name is still a name.
      case 1:
        return absl::StrCat("ключ.", k);
      case 2:
        return absl::StrCat("スコア.", k, "😀");
      case 3:
        return Utf8OfSize(static_cast<size_t>(Uniform(1, 40)));
      default:
        return absl::StrCat("score.f", k);
    }
  }

  static size_t Utf8Length(uint32_t cp) {
    return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
  }
  static void AppendUtf8(uint32_t cp, std::string* out) {
    if (cp < 0x80) {
      out->push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      out->push_back(static_cast<char>(0xc0 | (cp >> 6)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3f)));
    } else if (cp < 0x10000) {
      out->push_back(static_cast<char>(0xe0 | (cp >> 12)));
      out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3f)));
    } else {
      out->push_back(static_cast<char>(0xf0 | (cp >> 18)));
      out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3f)));
      out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3f)));
    }
  }

  std::mt19937_64& rng_;
};

inline RankResult RandomResult(std::mt19937_64& rng, const RandomResultOptions& options = {}) {
  return ResultGenerator(rng).Result(options);
}

}  // namespace rankwire::test

#endif  // RANKWIRE_TESTS_SUPPORT_RANDOM_RESULT_H_
