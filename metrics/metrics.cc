#include "metrics/metrics.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace rankwire {
namespace {

std::string SeriesName(absl::string_view name, absl::string_view labels,
                       absl::string_view extra = "") {
  if (labels.empty() && extra.empty()) return std::string(name);
  if (labels.empty()) return absl::StrCat(name, "{", extra, "}");
  if (extra.empty()) return absl::StrCat(name, "{", labels, "}");
  return absl::StrCat(name, "{", labels, ",", extra, "}");
}

// Prometheus label value escaping: backslash, double quote, newline.
std::string EscapeLabelValue(absl::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\' || c == '"') {
      out.push_back('\\');
      out.push_back(c);
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out.push_back(c);
    }
  }
  return out;
}

// A sample value (or a bucket bound) as Prometheus reads it back exactly:
// a whole number held in a double (counts, bytes, nanoseconds: exact up to
// 2^53) in full, anything else in the shortest form that round-trips, and
// NaN and the infinities as the text format spells them. absl::StrCat
// writes six significant digits, so a counter past 999,999 moved in steps
// (1113399 lines read back as 1.1134e+06) and rate() over it was wrong.
std::string FormatValue(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  constexpr double kExactIntegers = 9007199254740992.0;  // 2^53
  if (v == std::trunc(v) && std::fabs(v) < kExactIntegers) {
    return absl::StrCat(static_cast<int64_t>(v));
  }
  char buffer[32];
  const std::to_chars_result r = std::to_chars(buffer, buffer + sizeof(buffer), v);
  return std::string(buffer, r.ptr);
}

}  // namespace

void LabeledCounters::Increment(absl::string_view value) {
  absl::MutexLock lock(&mu_);
  auto it = counts_.find(value);
  if (it != counts_.end()) {
    ++it->second;
  } else if (counts_.size() < max_values_) {
    counts_.emplace(std::string(value), 1);
  } else {
    ++other_;
  }
}

std::vector<std::pair<std::string, uint64_t>> LabeledCounters::Snapshot() const {
  std::vector<std::pair<std::string, uint64_t>> out;
  {
    absl::MutexLock lock(&mu_);
    out.assign(counts_.begin(), counts_.end());
    if (other_ > 0) out.emplace_back("_other", other_);
  }
  std::sort(out.begin(), out.end());
  return out;
}

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)), buckets_(new std::atomic<uint64_t>[bounds_.size() + 1]) {
  std::sort(bounds_.begin(), bounds_.end());
  for (size_t i = 0; i <= bounds_.size(); ++i) buckets_[i].store(0);
}

void Histogram::Observe(double v) {
  size_t b =
      static_cast<size_t>(std::lower_bound(bounds_.begin(), bounds_.end(), v) - bounds_.begin());
  buckets_[b].fetch_add(1, std::memory_order_relaxed);
  count_.fetch_add(1, std::memory_order_relaxed);
  uint64_t old_bits = sum_bits_.load(std::memory_order_relaxed);
  while (true) {
    double old_sum;
    std::memcpy(&old_sum, &old_bits, sizeof(double));
    double new_sum = old_sum + v;
    uint64_t new_bits;
    std::memcpy(&new_bits, &new_sum, sizeof(double));
    if (sum_bits_.compare_exchange_weak(old_bits, new_bits, std::memory_order_relaxed)) {
      break;
    }
  }
}

double Histogram::sum() const {
  uint64_t bits = sum_bits_.load(std::memory_order_relaxed);
  double v;
  std::memcpy(&v, &bits, sizeof(double));
  return v;
}

std::vector<uint64_t> Histogram::BucketCounts() const {
  std::vector<uint64_t> out(bounds_.size() + 1);
  for (size_t i = 0; i < out.size(); ++i) {
    out[i] = buckets_[i].load(std::memory_order_relaxed);
  }
  return out;
}

std::vector<double> LatencyBuckets() {
  return {1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 5e-3,
          1e-2, 2.5e-2, 5e-2, 0.1,  0.25,   0.5,  1.0,  2.5,    10.0};
}

std::vector<double> SizeBuckets() {
  std::vector<double> out;
  for (double b = 1024; b <= 64.0 * 1024 * 1024; b *= 2) out.push_back(b);
  return out;
}

MetricsRegistry::Family& MetricsRegistry::FamilyFor(absl::string_view name, absl::string_view help,
                                                    absl::string_view type) {
  for (auto& f : families_) {
    if (f->name == name) return *f;
  }
  families_.push_back(std::make_unique<Family>(
      Family{std::string(name), std::string(help), std::string(type), {}}));
  return *families_.back();
}

Counter* MetricsRegistry::AddCounter(absl::string_view name, absl::string_view help,
                                     absl::string_view labels) {
  Family& f = FamilyFor(name, help, "counter");
  f.series.push_back(
      Series{std::string(labels), std::make_unique<Counter>(), nullptr, nullptr, nullptr, nullptr});
  return f.series.back().counter.get();
}

Histogram* MetricsRegistry::AddHistogram(absl::string_view name, absl::string_view help,
                                         std::vector<double> bounds, absl::string_view labels) {
  Family& f = FamilyFor(name, help, "histogram");
  f.series.push_back(Series{std::string(labels), nullptr,
                            std::make_unique<Histogram>(std::move(bounds)), nullptr, nullptr,
                            nullptr});
  return f.series.back().histogram.get();
}

void MetricsRegistry::AddGauge(absl::string_view name, absl::string_view help,
                               std::function<double()> read, absl::string_view labels) {
  Family& f = FamilyFor(name, help, "gauge");
  f.series.push_back(
      Series{std::string(labels), nullptr, nullptr, std::move(read), nullptr, nullptr});
}

LabeledCounters* MetricsRegistry::AddLabeledCounters(absl::string_view name, absl::string_view help,
                                                     absl::string_view label, size_t max_values) {
  Family& f = FamilyFor(name, help, "counter");
  f.series.push_back(Series{std::string(label), nullptr, nullptr, nullptr,
                            std::make_unique<LabeledCounters>(max_values), nullptr});
  return f.series.back().labeled.get();
}

void MetricsRegistry::AddCollector(absl::string_view name, absl::string_view help,
                                   absl::string_view type, std::function<Collected()> collect) {
  Family& f = FamilyFor(name, help, type);
  f.series.push_back(Series{"", nullptr, nullptr, nullptr, nullptr, std::move(collect)});
}

std::string MetricsRegistry::Label(absl::string_view name, absl::string_view value) {
  return absl::StrCat(name, "=\"", EscapeLabelValue(value), "\"");
}

std::string MetricsRegistry::RenderPrometheus() const {
  std::string out;
  for (const auto& f : families_) {
    absl::StrAppend(&out, "# HELP ", f->name, " ", f->help, "\n# TYPE ", f->name, " ", f->type,
                    "\n");
    for (const Series& s : f->series) {
      if (s.collect) {
        for (const auto& [labels, value] : s.collect()) {
          absl::StrAppend(&out, SeriesName(f->name, labels), " ", FormatValue(value), "\n");
        }
      } else if (s.labeled) {
        for (const auto& [value, count] : s.labeled->Snapshot()) {
          absl::StrAppend(&out, f->name, "{", s.labels, "=\"", EscapeLabelValue(value), "\"} ",
                          count, "\n");
        }
      } else if (s.counter) {
        absl::StrAppend(&out, SeriesName(f->name, s.labels), " ", s.counter->value(), "\n");
      } else if (s.gauge) {
        absl::StrAppend(&out, SeriesName(f->name, s.labels), " ", FormatValue(s.gauge()), "\n");
      } else if (s.histogram) {
        const Histogram& h = *s.histogram;
        std::vector<uint64_t> counts = h.BucketCounts();
        uint64_t cumulative = 0;
        const std::string bucket = absl::StrCat(f->name, "_bucket");
        for (size_t i = 0; i < counts.size(); ++i) {
          cumulative += counts[i];
          std::string le = absl::StrCat(
              "le=\"", FormatValue(i < h.bounds().size() ? h.bounds()[i] : INFINITY), "\"");
          absl::StrAppend(&out, SeriesName(bucket, s.labels, le), " ", cumulative, "\n");
        }
        absl::StrAppend(&out, SeriesName(absl::StrCat(f->name, "_sum"), s.labels), " ",
                        FormatValue(h.sum()), "\n");
        absl::StrAppend(&out, SeriesName(absl::StrCat(f->name, "_count"), s.labels), " ",
                        cumulative, "\n");
      }
    }
  }
  return out;
}

}  // namespace rankwire
