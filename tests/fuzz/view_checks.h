// What the decoder fuzz targets do with a ResultView opened over untrusted
// bytes: every read, and the invariants that must hold whatever the bytes.
// A broken invariant aborts, so libFuzzer (or the corpus replay) reports it.
//
//   - Item(size()) is OutOfRange;
//   - a successful Materialize() is a valid model (ValidateResult) of size()
//     items;
//   - lazy reads (Item, Metric by name, ForEachMetric, Log) of the first
//     items agree with the full decode;
//   - the decoded model re-encodes with `codec` and decodes back equal.
//
// Test-only; header-only so each fuzz target stays one file plus this.
#ifndef RANKWIRE_TESTS_FUZZ_VIEW_CHECKS_H_
#define RANKWIRE_TESTS_FUZZ_VIEW_CHECKS_H_

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "codec/codec.h"
#include "codec/rank_result.h"

namespace rankwire::fuzz {

[[noreturn]] inline void Violated(const char* what, const std::string& detail) {
  std::fprintf(stderr, "fuzz invariant violated: %s: %s\n", what, detail.c_str());
  std::abort();
}

#define RANKWIRE_FUZZ_CHECK(cond, detail)                     \
  do {                                                        \
    if (!(cond)) ::rankwire::fuzz::Violated(#cond, (detail)); \
  } while (0)

inline bool SameScore(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return a == b && std::signbit(a) == std::signbit(b);
}

// How many items and keys the lazy reads visit, so one input stays fast.
inline constexpr size_t kLazyItems = 32;
inline constexpr size_t kLazyKeys = 32;

inline void ExerciseView(const ResultView& view, const Codec& codec) {
  const size_t n = view.size();
  const absl::Span<const MetricKey> keys = view.keys();
  const size_t lazy_items = std::min(n, kLazyItems);
  const size_t lazy_keys = std::min(keys.size(), kLazyKeys);

  // Lazy reads first, on a view nothing has been decoded from yet.
  for (size_t i = lazy_items; i-- > 0;) {
    absl::StatusOr<ItemRef> ref = view.Item(i);
    if (!ref.ok()) continue;
    for (size_t k = 0; k < lazy_keys; ++k) (void)ref->Metric(keys[k].name);
    (void)ref->ForEachMetric([](uint32_t, const MetricRef&) {});
    (void)ref->Log();
  }
  RANKWIRE_FUZZ_CHECK(view.Item(n).status().code() == absl::StatusCode::kOutOfRange,
                      view.Item(n).status().ToString());

  absl::StatusOr<RankResult> all = view.Materialize();
  if (!all.ok()) return;
  RANKWIRE_FUZZ_CHECK(all->size() == n, "Materialize size");
  RANKWIRE_FUZZ_CHECK(all->key_count() == keys.size(), "Materialize keys");
  const absl::Status valid = ValidateResult(*all);
  RANKWIRE_FUZZ_CHECK(valid.ok(), valid.ToString());

  for (size_t i = 0; i < lazy_items; ++i) {
    absl::StatusOr<ItemRef> ref = view.Item(i);
    RANKWIRE_FUZZ_CHECK(ref.ok(), ref.status().ToString());
    RANKWIRE_FUZZ_CHECK(ref->id() == all->id(i) && SameScore(ref->score(), all->score(i)) &&
                            ref->position() == all->position(i),
                        "hot fields differ from Materialize");
    // Item i's values in the decoded columns, by key name.
    std::map<std::string, MetricValue> metrics;
    for (uint32_t k = 0; k < all->key_count(); ++k) {
      if (std::optional<MetricRef> v = all->Get(i, k))
        metrics.emplace(all->key(k).name, v->ToValue());
    }
    std::map<std::string, MetricValue> visited;
    absl::Status s = ref->ForEachMetric([&](uint32_t key, const MetricRef& v) {
      RANKWIRE_FUZZ_CHECK(key < keys.size(), "ForEachMetric key out of range");
      visited.emplace(keys[key].name, v.ToValue());
    });
    RANKWIRE_FUZZ_CHECK(s.ok(), s.ToString());
    RANKWIRE_FUZZ_CHECK(visited == metrics, "ForEachMetric differs from Materialize");
    for (size_t k = 0; k < lazy_keys; ++k) {
      absl::StatusOr<std::optional<MetricRef>> m = ref->Metric(keys[k].name);
      RANKWIRE_FUZZ_CHECK(m.ok(), m.status().ToString());
      auto it = metrics.find(keys[k].name);
      RANKWIRE_FUZZ_CHECK(m->has_value() == (it != metrics.end()), "Metric presence differs");
      if (m->has_value()) {
        RANKWIRE_FUZZ_CHECK((*m)->ToValue() == it->second, "Metric value differs");
      }
    }
    absl::StatusOr<absl::string_view> log = ref->Log();
    RANKWIRE_FUZZ_CHECK(log.ok() && *log == all->log(i), "Log differs from Materialize");
  }

  // What decoded must survive its own codec.
  absl::StatusOr<OwnedBuffer> again = codec.Encode(*all);
  RANKWIRE_FUZZ_CHECK(again.ok(), again.status().ToString());
  absl::StatusOr<RankResult> back = codec.Decode(SharedBytes::FromBuffer(*std::move(again)));
  RANKWIRE_FUZZ_CHECK(back.ok(), back.status().ToString());
  const std::string diff = DiffResults(*all, *back);
  RANKWIRE_FUZZ_CHECK(diff.empty(), diff);
}

}  // namespace rankwire::fuzz

#endif  // RANKWIRE_TESTS_FUZZ_VIEW_CHECKS_H_
