// The per-item log line: its one description, used by every path that
// makes or reads it. A line is literal text (the request's header, feature
// and term labels) with the item's values in between:
//
//   req=<id> ts=<ms> scene=<s> user=<u> bucket=<b> model=<name@version>
//   item=<ID> pos=<POSITION> pre=<INT> src=<STRING>#<INT> query="..." ...
//   | feats <name>=<NUMBER> ... | <head> p=<NUMBER> logit=<NUMBER>
//   <input>:<NUMBER> ... | boost=<NUMBER> final=<NUMBER>
//
// (one line). LogLineFormat holds it as literal pieces and value fields;
// from that one description it writes the text (the inline path), the log
// store's layout and columns (logstore/format/log_columns.h: the values as the
// ranker holds them, rendered back to the same text when read), and bounds
// the text's size.
// A NUMBER is the value as binary32, printed with six significant digits
// (absl::SixDigits, printf's %g), on every path.
//
// LogValues are the values a request's lines are made of, as the ranker
// computed them, in candidate order with the rank order beside them: the
// ranker hands them over (moved, not copied) when logs go to the store, and
// a log writer thread sends them to the store, mostly from their own
// memory, off the ranking path.
//
// Thread safety: plain values; a LogLineFormat is used by one thread.
#ifndef RANKWIRE_RANKING_LOG_LINE_H_
#define RANKWIRE_RANKING_LOG_LINE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "logstore/format/log_columns.h"
#include "logstore/log_store.h"
#include "model/model.h"

namespace rankwire {

class LogValuesPool;

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
  // What the model shows in the line (its labels and value columns).
  std::shared_ptr<const ModelOutputs> outputs;
  // The caller's top_n: the store's first block holds these items.
  uint32_t top_n = 0;

  size_t n = 0;
  std::vector<uint32_t> order;
  // Ids: bytes end to end, and where each ends.
  std::string ids;
  std::vector<uint32_t> id_ends;
  std::vector<std::string> sources;   // Distinct recall sources.
  std::vector<uint32_t> source_code;  // Per candidate, into `sources`.
  std::vector<uint32_t> recall_rank;  // Per candidate.
  std::vector<float> features;        // Feature-major: [f * n + c].
  std::vector<double> model_values;   // The model's value columns: [j * n + c].
  std::vector<double> score;          // Per candidate.
  // With a model that explains: per candidate, its explanation text
  // ("name:value ..."), empty for the candidates not shown.
  std::vector<std::string> explanations;
  // Where these values go back once written (LogValuesPool), if anywhere.
  std::shared_ptr<LogValuesPool> home;

  absl::string_view id(size_t c) const {
    const uint32_t begin = c == 0 ? 0 : id_ends[c - 1];
    return absl::string_view(ids.data() + begin, id_ends[c] - begin);
  }
};

class LogLineFormat {
 public:
  // `values` must outlive the format.
  explicit LogLineFormat(const LogValues& values);

  // The text of the line ranked at `rank` (0-based), appended to `out`.
  void AppendText(size_t rank, std::string* out) const;
  std::string Text(size_t rank) const;

  // The store's layout for these lines: "#0" holds the request's top_n
  // items (at least one, at most all).
  logstore::ColumnsLayout Layout() const;
  // Every column of the lines, in slot order, into `writer` (made with
  // this format's Layout() and the values' order). The writer may keep
  // pointers into the values (ids, float columns).
  void WriteColumns(logstore::ColumnsWriter* writer) const;

  // An upper bound on the text of one line: fixed_bytes + |id| + |source|;
  // shared_bytes of it are the same text in every line, in `fields` runs
  // of varying text.
  struct Bound {
    size_t fixed_bytes = 0;
    size_t shared_bytes = 0;
    size_t fields = 0;
  };
  Bound TextBound() const;

 private:
  // Where a value field's values come from.
  struct Field {
    enum Source : uint8_t {
      kItemId,
      kPosition,
      kPreRank,
      kSource,
      kRecallRank,
      kFeature,
      kModel,
      kExplanation,
      kScore,
    };
    Source source;
    uint32_t index = 0;  // Feature or model value column.
  };
  void Add(absl::string_view literal, Field::Source source, uint32_t index = 0);
  // Field f's value for candidate c, as the line's number (binary32).
  float Number(const Field& f, size_t c) const;
  // The double column of a number field that is not a feature.
  const double* NumberColumn(const Field& f) const;
  // The string table of a request's lines: the recall sources, then (for a
  // model that explains) the distinct explanations; candidate c's
  // explanation is entry ExplanationIndex(c).
  uint32_t ExplanationIndex(size_t c) const;

  const LogValues& v_;
  // Explanation strings: the distinct ones after the sources in the string
  // table (most are empty: the items not shown).
  std::vector<std::string> explanation_strings_;
  std::vector<uint32_t> explanation_index_;  // Per candidate.
  std::vector<std::string> pieces_;  // fields_.size() + 1: before each field, then the tail.
  std::vector<Field> fields_;
};

// LogValues whose memory goes round between a ranking thread and the log
// writers: the ranker moves a request's values out of its workspace
// (Exchange) and gets a written request's memory back in their place, so
// that the next request fills vectors of the right size instead of
// allocating (and zero-filling) ~200 KB of fresh ones; the writer's
// renderer gives the values back (Give) once the store has them. Without
// it a ranking thread paid for that memory on every call (a memset of its
// score and model columns showed in its profile).
//
// Thread safety: Exchange and Give are safe from any thread.
class LogValuesPool {
 public:
  explicit LogValuesPool(size_t capacity = 8) : capacity_(capacity) {}
  // The values of `*values` moved into a LogValues of their own (whose
  // `home` is this pool); `*values` then holds a returned LogValues's
  // memory (contents unspecified) or is empty.
  std::unique_ptr<LogValues> Exchange(LogValues* values, std::shared_ptr<LogValuesPool> self);
  // Keeps `values` for a later Exchange (drops them past the capacity).
  void Give(std::unique_ptr<LogValues> values);

 private:
  const size_t capacity_;
  absl::Mutex mu_;
  std::vector<std::unique_ptr<LogValues>> free_ ABSL_GUARDED_BY(mu_);
};

// The deferred form of a request's lines for the log store: the values,
// written as columns (or as text) when a log writer asks. It holds the
// values (and the columns' writer) while the store's fields point into
// them, then gives the values to their `home` pool, if any.
std::unique_ptr<logstore::LogRenderer> MakeLogRenderer(std::unique_ptr<LogValues> values);

}  // namespace rankwire

#endif  // RANKWIRE_RANKING_LOG_LINE_H_
