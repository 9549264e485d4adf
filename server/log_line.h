// The per-item log line: its one description, used by every path that
// makes it. A line is literal text (the request's header, feature and term
// labels) with the item's values in between:
//
//   req=<id> ts=<ms> scene=<s> user=<u> bucket=<b> model=<name@version>
//   item=<ID> pos=<INT> pre=<INT> src=<STRING>#<INT> query="..." ...
//   | feats <name>=<NUMBER> ... | <head> p=<NUMBER> logit=<NUMBER>
//   <input>:<NUMBER> ... | boost=<NUMBER> final=<NUMBER>
//
// (one line). LogLineFormat::Emit() describes it to an output: a text line
// (TextLine, the inline path) or a structured record (the log store's
// records, rendered back to the same text on read; logstore/log_record.h).
//
// LogValues are the values a request's lines are made of, as the ranker
// computed them, in candidate order with the rank order beside them: the
// ranker hands them over (moved, not copied) when logs go to the store, and
// a log writer thread formats them, off the ranking path.
//
// Thread safety: plain values; a LogLineFormat is used by one thread.
#ifndef RANKWIRE_SERVER_LOG_LINE_H_
#define RANKWIRE_SERVER_LOG_LINE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "logstore/log_record.h"
#include "logstore/log_store.h"
#include "rank/v1/rank.pb.h"
#include "server/linear_model.h"

namespace rankwire::server {

// A request's values for its log lines. Arrays are in candidate order
// (candidate c's value at [c], or [k * n + c] for the k-th feature, head or
// term); `order[r]` is the candidate ranked at position r + 1.
struct LogValues {
  // What every line of the request shares (the header's values).
  std::string request_id;
  int64_t request_time_ms = 0;
  std::string scene;
  std::string user_id;
  std::string bucket;
  std::string model_version;
  // The context values the line shows, as (key, value) in line order.
  std::vector<std::pair<std::string, std::string>> context;
  std::vector<std::string> feature_names;

  size_t n = 0;
  std::vector<uint32_t> order;
  // Ids and recall sources: bytes end to end, and where each ends.
  std::string ids;
  std::vector<uint32_t> id_ends;
  std::vector<std::string> sources;     // Distinct recall sources.
  std::vector<uint32_t> source_code;    // Per candidate, into `sources`.
  std::vector<uint32_t> recall_rank;    // Per candidate.
  std::vector<float> features;          // Feature-major: [f * n + c].
  std::vector<double> p, logit;         // Head-major: [h * n + c].
  std::vector<double> contribution;     // Term-major (all heads' terms).
  std::vector<double> boost, score;     // Per candidate.

  absl::string_view id(size_t c) const {
    const uint32_t begin = c == 0 ? 0 : id_ends[c - 1];
    return absl::string_view(ids.data() + begin, id_ends[c] - begin);
  }
};

// The literal parts of a request's lines, formatted once per request.
class LogLineFormat {
 public:
  LogLineFormat(const LinearModel& model, const LogValues& values);

  // An upper bound on the text of one line, given the item's id and
  // recall source sizes: fixed_bytes + |id| + |source|; shared_bytes of it
  // are the same text in every line, in `fields` runs of varying text.
  struct Bound {
    size_t fixed_bytes = 0;
    size_t shared_bytes = 0;
    size_t fields = 0;
  };
  Bound TextBound() const;

  // The line of the item ranked at `rank` (0-based), to `out`: a TextLine
  // or a logstore::LogRecordBuilder.
  template <typename Out>
  void Emit(Out& out, size_t rank) const;

  // The text of the line ranked at `rank`.
  std::string Text(size_t rank) const;

 private:
  static void EmitItemId(class TextLine& out, absl::string_view id);
  static void EmitItemId(logstore::LogRecordBuilder& out, absl::string_view id);

  const LinearModel& model_;
  const LogValues& v_;
  std::string prefix_;
  std::string context_;
  std::vector<std::string> feature_labels_;
  std::vector<std::vector<std::string>> term_labels_;
};

// Text output for LogLineFormat::Emit: appends each part to a string
// through a raw pointer, growing it only when needed.
class TextLine {
 public:
  TextLine(std::string* out, size_t reserve);
  void Literal(absl::string_view s) { Append(s); }
  void ItemId(absl::string_view id) { Append(id); }
  void Int(int64_t v);
  void String(absl::string_view s) { Append(s); }
  // Six significant digits, like printf's %g (absl::SixDigits).
  void Number(double v);
  void LabeledNumbers(const std::string* labels, const double* values, size_t count);
  // Trims the string to what was written.
  void Finish();

 private:
  void Append(absl::string_view s);
  void Ensure(size_t n);
  std::string* out_;
  char* p_;
};

// The deferred form of a request's lines for the log store: the values,
// formatted when a log writer asks (as records, or as text).
std::unique_ptr<logstore::LogRenderer> MakeLogRenderer(const LinearModel* model,
                                                       std::unique_ptr<LogValues> values);

template <typename Out>
void LogLineFormat::Emit(Out& out, size_t rank) const {
  const size_t n = v_.n;
  const size_t c = v_.order[rank];
  out.Literal(prefix_);
  EmitItemId(out, v_.id(c));
  out.Literal(" pos=");
  out.Int(static_cast<int64_t>(rank + 1));
  out.Literal(" pre=");
  out.Int(static_cast<int64_t>(c + 1));
  out.Literal(" src=");
  out.String(v_.sources[v_.source_code[c]]);
  out.Literal("#");
  out.Int(static_cast<int64_t>(v_.recall_rank[c]));
  out.Literal(context_);
  out.Literal(" | feats");
  double features[64];
  for (size_t f0 = 0; f0 < feature_labels_.size(); f0 += 64) {
    const size_t count = std::min<size_t>(64, feature_labels_.size() - f0);
    for (size_t j = 0; j < count; ++j) {
      features[j] = static_cast<double>(v_.features[(f0 + j) * n + c]);
    }
    out.LabeledNumbers(feature_labels_.data() + f0, features, count);
  }
  size_t t = 0;
  double terms[64];
  for (size_t h = 0; h < model_.heads().size(); ++h) {
    out.Literal(" | ");
    out.Literal(model_.heads()[h].name);
    out.Literal(" p=");
    out.Number(v_.p[h * n + c]);
    out.Literal(" logit=");
    out.Number(v_.logit[h * n + c]);
    const std::vector<std::string>& labels = term_labels_[h];
    for (size_t j0 = 0; j0 < labels.size(); j0 += 64) {
      const size_t count = std::min<size_t>(64, labels.size() - j0);
      for (size_t j = 0; j < count; ++j) terms[j] = v_.contribution[(t + j0 + j) * n + c];
      out.LabeledNumbers(labels.data() + j0, terms, count);
    }
    t += labels.size();
  }
  out.Literal(" | boost=");
  out.Number(v_.boost[c]);
  out.Literal(" final=");
  out.Number(v_.score[c]);
}

}  // namespace rankwire::server

#endif  // RANKWIRE_SERVER_LOG_LINE_H_
