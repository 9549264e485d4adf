// Metrics in the Prometheus text exposition format: counters, histograms
// and callback gauges, registered on a MetricsRegistry that main() owns and
// the HTTP endpoint (metrics/metrics_http.h) renders at /metrics.
//
// Observe() and Increment() are lock-free (relaxed atomics); rendering reads
// a consistent-enough snapshot, as Prometheus clients do.
//
// Thread safety: registration is for start-up (before serving); recording
// and rendering are safe from many threads.
#ifndef RANKWIRE_METRICS_METRICS_H_
#define RANKWIRE_METRICS_METRICS_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"

namespace rankwire {

class Counter {
 public:
  void Increment(uint64_t n = 1) { value_.fetch_add(n, std::memory_order_relaxed); }
  uint64_t value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> value_{0};
};

// Counters keyed by one label whose values come from callers (e.g. feature
// names a request sent): at most `max_values` distinct values get their own
// series; the rest are counted under the value "_other", so a caller cannot
// grow the metrics page without bound.
class LabeledCounters {
 public:
  explicit LabeledCounters(size_t max_values) : max_values_(max_values) {}
  void Increment(absl::string_view value);
  // (label value, count), sorted by value.
  std::vector<std::pair<std::string, uint64_t>> Snapshot() const;

 private:
  const size_t max_values_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, uint64_t> counts_ ABSL_GUARDED_BY(mu_);
  uint64_t other_ ABSL_GUARDED_BY(mu_) = 0;
};

// Cumulative buckets with upper bounds `bounds` (ascending) plus +Inf.
class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds);
  void Observe(double v);
  uint64_t count() const { return count_.load(std::memory_order_relaxed); }
  double sum() const;
  // Counts per bucket (not cumulative), the last one is +Inf.
  std::vector<uint64_t> BucketCounts() const;
  const std::vector<double>& bounds() const { return bounds_; }

 private:
  std::vector<double> bounds_;
  std::unique_ptr<std::atomic<uint64_t>[]> buckets_;
  std::atomic<uint64_t> count_{0};
  std::atomic<uint64_t> sum_bits_{0};  // A double, updated by CAS.
};

// Latency buckets in seconds, 10 us .. 10 s.
std::vector<double> LatencyBuckets();
// Size buckets in bytes, 1 KiB .. 64 MiB.
std::vector<double> SizeBuckets();

class MetricsRegistry {
 public:
  // `labels` is the Prometheus label set without braces, e.g.
  // `phase="rank"`; metrics of one name share help and type.
  Counter* AddCounter(absl::string_view name, absl::string_view help,
                      absl::string_view labels = "");
  Histogram* AddHistogram(absl::string_view name, absl::string_view help,
                          std::vector<double> bounds, absl::string_view labels = "");
  void AddGauge(absl::string_view name, absl::string_view help, std::function<double()> read,
                absl::string_view labels = "");
  // A counter family whose `label` values are added while serving; label
  // values are escaped when rendered.
  LabeledCounters* AddLabeledCounters(absl::string_view name, absl::string_view help,
                                      absl::string_view label, size_t max_values);

  // A family whose series are known only when rendered (what models are
  // loaded now): `collect` returns (label set without braces, value) pairs,
  // label values already escaped (Label()). `type` is "gauge" or "counter".
  using Collected = std::vector<std::pair<std::string, double>>;
  void AddCollector(absl::string_view name, absl::string_view help, absl::string_view type,
                    std::function<Collected()> collect);

  std::string RenderPrometheus() const;

  // `name="value"` with the value escaped as the exposition format wants
  // (backslash, double quote, newline), for labels built from configuration.
  static std::string Label(absl::string_view name, absl::string_view value);

 private:
  struct Family;
  Family& FamilyFor(absl::string_view name, absl::string_view help, absl::string_view type);
  struct Series {
    std::string labels;
    std::unique_ptr<Counter> counter;
    std::unique_ptr<Histogram> histogram;
    std::function<double()> gauge;
    std::unique_ptr<LabeledCounters> labeled;  // `labels` is then the label name.
    std::function<Collected()> collect;
  };
  struct Family {
    std::string name, help, type;
    std::vector<Series> series;
  };
  std::vector<std::unique_ptr<Family>> families_;
};

}  // namespace rankwire

#endif  // RANKWIRE_METRICS_METRICS_H_
