#include "request/request_view.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "request/request_limits.h"

namespace rankwire {
namespace {

constexpr char kMalformed[] =
    "request is not a valid rank.v1.RankRequest (or holds strings that are not UTF-8)";
constexpr int kVarint = 0, kFixed64 = 1, kDelimited = 2, kGroupStart = 3, kGroupEnd = 4,
              kFixed32 = 5;

// Bounds-checked reading of protobuf wire data, as protobuf's parser reads
// it: varints of at most 10 bytes, lengths within what is left.
class Wire {
 public:
  // `bad_tag` is set when a tag past 32 bits or of field number 0 is read.
  Wire(absl::string_view bytes, bool* bad_tag)
      : p_(bytes.data()), end_(bytes.data() + bytes.size()), oversized_tag_(bad_tag) {}
  bool done() const { return p_ == end_; }

  bool Varint(uint64_t* v) {
    if (p_ != end_ && static_cast<uint8_t>(*p_) < 0x80) {  // Most tags and lengths.
      *v = static_cast<uint8_t>(*p_++);
      return true;
    }
    uint64_t result = 0;
    for (int shift = 0; shift < 70; shift += 7) {
      if (p_ == end_) return false;
      const uint8_t byte = static_cast<uint8_t>(*p_++);
      if (shift < 64) result |= uint64_t{byte & 0x7fu} << shift;
      if (byte < 0x80) {
        *v = result;
        return true;
      }
    }
    return false;  // An eleventh byte would be needed.
  }
  // A tag: its field number and wire type. False for a malformed tag or
  // the tag 0, where PrescanRequest's walk stopped too. (A field number 0
  // with another wire type is malformed for protobuf's parser, but the
  // prescan walked on: callers flag it and go on.)
  bool Tag(uint32_t* number, int* wire_type) {
    uint64_t varint;
    if (!Varint(&varint)) return false;
    // Its low 32 bits, as CodedInputStream::ReadTag takes them (a tag past
    // 32 bits is malformed for the parser, which the flag records).
    const auto tag = static_cast<uint32_t>(varint);
    if (tag == 0) return false;
    // Field number 0 is malformed for the parser too (the prescan walked
    // on; so do we, flagged).
    if (varint > std::numeric_limits<uint32_t>::max() || tag < 8) *oversized_tag_ = true;
    *number = tag >> 3;
    *wire_type = static_cast<int>(tag & 7);
    return true;
  }
  bool Fixed32(uint32_t* v) {
    if (end_ - p_ < 4) return false;
    std::memcpy(v, p_, 4);
    p_ += 4;
    return true;
  }
  bool Fixed64(uint64_t* v) {
    if (end_ - p_ < 8) return false;
    std::memcpy(v, p_, 8);
    p_ += 8;
    return true;
  }
  // On failure nothing is read.
  bool Delimited(absl::string_view* out) {
    const char* start = p_;
    uint64_t length;
    if (!Varint(&length) || length > static_cast<uint64_t>(std::numeric_limits<int>::max()) ||
        length > static_cast<uint64_t>(end_ - p_)) {
      p_ = start;
      return false;
    }
    *out = absl::string_view(p_, static_cast<size_t>(length));
    p_ += length;
    return true;
  }
  // The rest of the input (after a length that runs past it).
  absl::string_view Rest() const { return absl::string_view(p_, static_cast<size_t>(end_ - p_)); }
  // A well-formed length varint that runs past the end of the input (as
  // protobuf's CodedInputStream reads it: its low 32 bits, a negative int
  // meaning no limit): the bytes that are left after it. False otherwise
  // (nothing is read).
  bool Truncated(absl::string_view* out) {
    const char* start = p_;
    uint64_t length;
    if (Varint(&length)) {
      const auto as_int = static_cast<int32_t>(static_cast<uint32_t>(length));
      if (as_int < 0 || static_cast<uint64_t>(as_int) > static_cast<uint64_t>(end_ - p_)) {
        *out = Rest();
        return true;
      }
    }
    p_ = start;
    return false;
  }
  // Skips a value of `wire_type` (not a group).
  bool Skip(int wire_type) {
    uint64_t ignored;
    absl::string_view ignored_bytes;
    switch (wire_type) {
      case kVarint:
        return Varint(&ignored);
      case kFixed64:
        return Fixed64(&ignored);
      case kDelimited:
        return Delimited(&ignored_bytes);
      case kFixed32: {
        uint32_t v;
        return Fixed32(&v);
      }
      default:
        return false;
    }
  }

 private:
  const char* p_;
  const char* end_;
  bool* oversized_tag_;
};

// What a candidate's features are on the wire: usually one packed run,
// scattered straight into the feature-major array; anything else (several
// runs, unpacked values) collected into `slow` first.
struct FeatureSource {
  const char* packed = nullptr;  // The one packed run, if that is all there is.
  uint32_t count = 0;
  int32_t slow = -1;  // Index of the candidate's values in Parser::slow_, if any.
};

// One pass over the request, then one over the candidates' features.
class Parser {
 public:
  Parser(const RequestLimits& limits, RequestView* view) : limits_(limits), v_(*view) {}

  absl::Status Parse(absl::string_view bytes);

 private:
  bool Field(Wire& in, uint32_t number, int wire_type);
  bool Candidate(absl::string_view bytes);
  // A kept candidate's rules (ids, sources, ranks, repeats) and its
  // source's code.
  void CheckCandidate(size_t c, absl::string_view id, absl::string_view source, uint32_t rank);
  uint32_t SourceCode(absl::string_view source);
  // Whether `id` repeats an earlier candidate's (candidate c's own is
  // added otherwise).
  void CheckRepeat(size_t c, absl::string_view id);
  // PrescanRequest's walk of a candidate whose length runs past the end.
  void ScanTruncatedCandidate(absl::string_view rest);
  bool CandidateFeatures(Wire& in, int wire_type, FeatureSource* features);
  // An entry of a map<string, double> (user_features) or map<string,
  // string> (context): key (1), value (2), either may be missing; a
  // repeated key's last value wins, as in a protobuf map.
  template <typename V>
  bool MapEntry(absl::string_view entry, std::vector<std::pair<absl::string_view, V>>* map);
  // A string field's bytes: not UTF-8 makes the request malformed, but the
  // walk goes on: PrescanRequest's verdicts (over the whole request) come
  // first. Always true.
  bool Utf8(absl::string_view s) {
    if (!IsValidUtf8(s)) content_bad_ = true;
    return true;
  }
  // PrescanRequest's verdicts, in its order; then the parser's.
  absl::Status Verdict(bool malformed) const;
  void ScatterFeatures();
  // The first candidates with a non-finite and an infinite feature value.
  void CheckValues();
  // Whether entry `count` (0-based) of a limited field is still kept.
  static bool Keep(uint32_t count, uint32_t limit) { return count < limit; }

  const RequestLimits& limits_;
  RequestView& v_;
  uint32_t counts_[11] = {};  // Wire entries of repeated and map fields, by number - 1.
  uint32_t unknown_ = 0;
  bool group_ = false;
  // Malformed inside a field PrescanRequest skips whole (a map entry, a
  // packed run, a string): the walk goes on, as the prescan's did.
  bool content_bad_ = false;
  std::vector<FeatureSource> feature_sources_;
  std::vector<std::vector<float>> slow_;
};

// Candidate indexes by id hash, per thread, reused: an open-addressing
// table grown as candidates are added (the count is known only at the end).
struct IdTable {
  std::vector<uint32_t> slots;
  size_t used = 0;
};

IdTable& ThreadIdTable() {
  thread_local IdTable table;
  return table;
}

// A cheap hash of an id's bytes (ids are ~10-60 bytes of text): 8 bytes at
// a time, multiplied in, then mixed. Only for the table above.
inline uint64_t IdHash(absl::string_view id) {
  constexpr uint64_t kMul = 0x9e3779b97f4a7c15ULL;
  uint64_t h = id.size() * kMul;
  const char* p = id.data();
  size_t left = id.size();
  for (; left >= 8; left -= 8, p += 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    h = (h ^ w) * kMul;
    h ^= h >> 29;
  }
  if (left > 0) {
    uint64_t w = 0;
    std::memcpy(&w, p, left);
    h = (h ^ w) * kMul;
  }
  h ^= h >> 32;
  h *= 0xd6e8feb86659fd93ULL;
  return h ^ (h >> 32);
}

absl::Status Parser::Parse(absl::string_view bytes) {
  v_.request_id = v_.user_id = absl::string_view();
  v_.scene = 0;
  v_.request_time_ms = 0;
  v_.top_n = 0;
  v_.log_mode = 0;
  v_.explain_items.reset();
  v_.accept_codecs.clear();
  v_.user_features.clear();
  v_.context.clear();
  v_.item_feature_names.clear();
  v_.item_id.clear();
  v_.item_id_bytes = 0;
  v_.recall_source.clear();
  v_.recall_rank.clear();
  v_.feature_count.clear();
  v_.source_code.clear();
  v_.sources.clear();
  v_.checks = RequestView::CandidateChecks();
  v_.checks.max_id_bytes = limits_.max_id_bytes;
  v_.checks.max_recall_source_bytes = limits_.max_recall_source_bytes;
  v_.checks.min_features = UINT32_MAX;
  IdTable& ids = ThreadIdTable();
  ids.slots.assign(1024, UINT32_MAX);
  ids.used = 0;
  feature_sources_.clear();
  Wire in(bytes, &content_bad_);
  bool malformed = false;
  while (!in.done()) {
    uint32_t number;
    int wire_type;
    if (!in.Tag(&number, &wire_type)) {
      malformed = true;
      break;
    }
    if (wire_type == kGroupStart || wire_type == kGroupEnd) {
      group_ = true;
      break;
    }
    if (!Field(in, number, wire_type)) {
      malformed = true;
      break;
    }
  }
  if (absl::Status s = Verdict(malformed); !s.ok()) return s;
  v_.n = v_.item_id.size();
  if (v_.n == 0) v_.checks.min_features = 0;
  ScatterFeatures();
  v_.checks.done = true;
  return absl::OkStatus();
}

bool Parser::Field(Wire& in, uint32_t number, int wire_type) {
  // `number > 12 ||` is redundant, but GCC -O3 then keeps this test ~24
  // instructions a field cheaper (callgrind: bench/request_bench BM_Hot/parse).
  if (number > 12 || RequestFieldWireType(number) != wire_type) {
    ++unknown_;  // Protobuf keeps it as an unknown field.
    return in.Skip(wire_type);
  }
  if (IsCountedField(number)) ++counts_[number - 1];
  const uint32_t count = counts_[number - 1] - 1;  // This entry's index, for counted fields.
  uint64_t value = 0;
  absl::string_view bytes;
  if (wire_type == kVarint) {
    if (!in.Varint(&value)) return false;
  } else if (!in.Delimited(&bytes)) {
    // A candidate cut short: PrescanRequest walked what there is of it
    // (its groups and unknown fields count) before the end.
    absl::string_view rest;
    if (number == 8 && in.Truncated(&rest)) ScanTruncatedCandidate(rest);
    return false;
  }
  switch (number) {
    case 1:
      v_.request_id = bytes;
      return Utf8(bytes);
    case 2:
      v_.scene = static_cast<int32_t>(value);
      return true;
    case 3:
      v_.user_id = bytes;
      return Utf8(bytes);
    case 4:
      v_.request_time_ms = static_cast<int64_t>(value);
      return true;
    case 5:
      if (Keep(count, limits_.max_user_features) && !MapEntry(bytes, &v_.user_features)) {
        content_bad_ = true;
      }
      return true;
    case 6:
      if (Keep(count, limits_.max_context_entries) && !MapEntry(bytes, &v_.context)) {
        content_bad_ = true;
      }
      return true;
    case 7:
      if (Keep(count, limits_.max_item_features)) v_.item_feature_names.push_back(bytes);
      return Utf8(bytes);
    case 8:
      // Past the limit a candidate is still walked (its unknown fields
      // count, malformed data ends the scan), but not kept.
      return Candidate(bytes) || false;
    case 9:
      v_.top_n = static_cast<uint32_t>(value);
      return true;
    case 10:
      if (Keep(count, limits_.max_accept_codecs)) v_.accept_codecs.push_back(bytes);
      return Utf8(bytes);
    case 11:
      v_.log_mode = static_cast<int32_t>(value);
      return true;
    case 12:
      v_.explain_items = static_cast<uint32_t>(value);
      return true;
    default:
      return true;
  }
}

bool Parser::Candidate(absl::string_view bytes) {
  const bool keep = Keep(counts_[7] - 1, limits_.max_candidates);
  absl::string_view id, source;
  uint32_t rank = 0;
  FeatureSource features;
  Wire in(bytes, &content_bad_);
  while (!in.done()) {
    uint32_t number;
    int wire_type;
    if (!in.Tag(&number, &wire_type)) return false;
    if (wire_type == kGroupStart || wire_type == kGroupEnd) {
      group_ = true;
      return false;
    }
    bool ok = true;
    if (number == 1 && wire_type == kDelimited) {
      ok = in.Delimited(&id) && Utf8(id);
    } else if (number == 2 && wire_type == kDelimited) {
      ok = in.Delimited(&source) && Utf8(source);
    } else if (number == 3 && wire_type == kVarint) {
      uint64_t value = 0;
      ok = in.Varint(&value);
      rank = static_cast<uint32_t>(value);
    } else if (number == 4 && (wire_type == kDelimited || wire_type == kFixed32)) {
      ok = CandidateFeatures(in, wire_type, keep ? &features : nullptr);
    } else {
      ++unknown_;
      ok = in.Skip(wire_type);
    }
    if (!ok) return false;
  }
  if (!keep) return true;
  CheckCandidate(v_.item_id.size(), id, source, rank);
  v_.item_id.push_back(id);
  v_.item_id_bytes += id.size();
  v_.recall_source.push_back(source);
  v_.recall_rank.push_back(rank);
  v_.feature_count.push_back(features.count);
  feature_sources_.push_back(features);
  return true;
}

void Parser::CheckCandidate(size_t c, absl::string_view id, absl::string_view source,
                            uint32_t rank) {
  RequestView::CandidateChecks& k = v_.checks;
  if (k.first_bad_field == SIZE_MAX && (id.empty() || id.size() > k.max_id_bytes ||
                                        source.size() > k.max_recall_source_bytes || rank < 1)) {
    k.first_bad_field = c;
  }
  v_.source_code.push_back(SourceCode(source));
  if (k.first_duplicate == SIZE_MAX) CheckRepeat(c, id);
}

uint32_t Parser::SourceCode(absl::string_view source) {
  // Sources repeat (a handful of recall channels, often in runs): the last
  // one first, then the short list.
  const std::vector<absl::string_view>& sources = v_.sources;
  uint32_t code = v_.source_code.empty() ? 0 : v_.source_code.back();
  if (code < sources.size() && sources[code] == source) return code;
  for (code = 0; code < sources.size(); ++code) {
    if (sources[code] == source) return code;
  }
  v_.sources.push_back(source);
  return code;
}

void Parser::CheckRepeat(size_t c, absl::string_view id) {
  IdTable& table = ThreadIdTable();
  if (2 * (table.used + 1) > table.slots.size()) {
    // Grow: every kept candidate so far goes in again (ids are distinct).
    table.slots.assign(2 * table.slots.size(), UINT32_MAX);
    const size_t mask = table.slots.size() - 1;
    for (size_t e = 0; e < c; ++e) {
      size_t slot = IdHash(v_.item_id[e]) & mask;
      while (table.slots[slot] != UINT32_MAX) slot = (slot + 1) & mask;
      table.slots[slot] = static_cast<uint32_t>(e);
    }
  }
  const size_t mask = table.slots.size() - 1;
  size_t slot = IdHash(id) & mask;
  while (table.slots[slot] != UINT32_MAX) {
    const uint32_t other = table.slots[slot];
    if (v_.item_id[other] == id) {
      v_.checks.first_duplicate = c;
      v_.checks.duplicate_of = other;
      return;
    }
    slot = (slot + 1) & mask;
  }
  table.slots[slot] = static_cast<uint32_t>(c);
  ++table.used;
}

void Parser::ScanTruncatedCandidate(absl::string_view rest) {
  Wire in(rest, &content_bad_);
  while (!in.done()) {
    uint32_t number;
    int wire_type;
    if (!in.Tag(&number, &wire_type)) return;
    if (wire_type == kGroupStart || wire_type == kGroupEnd) {
      group_ = true;
      return;
    }
    const bool known = (number == 1 || number == 2) ? wire_type == kDelimited
                       : number == 3                ? wire_type == kVarint
                       : number == 4 ? (wire_type == kDelimited || wire_type == kFixed32)
                                     : false;
    if (!known) ++unknown_;
    if (!in.Skip(wire_type)) return;
  }
}

bool Parser::CandidateFeatures(Wire& in, int wire_type, FeatureSource* f) {
  const char* run = nullptr;
  uint32_t run_count = 0;
  float single = 0;
  if (wire_type == kFixed32) {
    uint32_t bits;
    if (!in.Fixed32(&bits)) return false;
    std::memcpy(&single, &bits, 4);
    run_count = 1;
  } else {
    absl::string_view packed;
    if (!in.Delimited(&packed)) return false;
    if (packed.size() % 4 != 0) {
      content_bad_ = true;
      return true;
    }
    run = packed.data();
    run_count = static_cast<uint32_t>(packed.size() / 4);
  }
  if (f == nullptr || run_count == 0) return true;
  if (f->count == 0 && run != nullptr && f->slow < 0) {
    f->packed = run;  // The common case: one packed run.
    f->count = run_count;
    return true;
  }
  if (f->slow < 0) {
    // A second run or an unpacked value: collect them all.
    f->slow = static_cast<int32_t>(slow_.size());
    std::vector<float>& values = slow_.emplace_back();
    values.resize(f->count);
    if (f->count > 0) std::memcpy(values.data(), f->packed, 4 * size_t{f->count});
    f->packed = nullptr;
  }
  std::vector<float>& values = slow_[static_cast<size_t>(f->slow)];
  // Bounded by the request's size: each value took 4 bytes of it.
  if (run != nullptr) {
    const size_t at = values.size();
    values.resize(at + run_count);
    std::memcpy(values.data() + at, run, 4 * size_t{run_count});
  } else {
    values.push_back(single);
  }
  f->count = static_cast<uint32_t>(values.size());
  return true;
}

template <typename V>
bool Parser::MapEntry(absl::string_view entry, std::vector<std::pair<absl::string_view, V>>* map) {
  constexpr bool kNumber = std::is_same_v<V, double>;
  absl::string_view key;
  V value{};
  Wire in(entry, &content_bad_);
  while (!in.done()) {
    uint32_t number;
    int wire_type;
    if (!in.Tag(&number, &wire_type) || wire_type == kGroupStart || wire_type == kGroupEnd) {
      return false;
    }
    if (number == 1 && wire_type == kDelimited) {
      if (!in.Delimited(&key)) return false;
    } else if (number == 2 && wire_type == (kNumber ? kFixed64 : kDelimited)) {
      if constexpr (kNumber) {
        uint64_t bits;
        if (!in.Fixed64(&bits)) return false;
        std::memcpy(&value, &bits, 8);
      } else {
        if (!in.Delimited(&value)) return false;
      }
    } else if (!in.Skip(wire_type)) {
      return false;
    }
  }
  Utf8(key);
  if constexpr (!kNumber) Utf8(value);
  for (auto& [k, v] : *map) {
    if (k == key) {
      v = value;
      return true;
    }
  }
  map->emplace_back(key, value);
  return true;
}

absl::Status Parser::Verdict(bool malformed) const {
  if (absl::Status s = CheckWireCounts(counts_, unknown_, group_, limits_); !s.ok()) return s;
  if (malformed || content_bad_) return absl::InvalidArgumentError(kMalformed);
  return absl::OkStatus();
}

void Parser::ScatterFeatures() {
  const size_t n = v_.n;
  const size_t m = v_.item_feature_names.size();
  v_.features.resize(m * n);
  float* out = v_.features.data();
  RequestView::CandidateChecks& k = v_.checks;
  for (size_t c = 0; c < n; ++c) {
    const FeatureSource& f = feature_sources_[c];
    k.min_features = std::min(k.min_features, f.count);
    k.max_features = std::max(k.max_features, f.count);
    const size_t have = std::min<size_t>(f.count, m);
    const char* in = f.slow >= 0 ? reinterpret_cast<const char*>(slow_[f.slow].data()) : f.packed;
    for (size_t j = 0; j < have; ++j) std::memcpy(out + j * n + c, in + 4 * j, 4);
    for (size_t j = have; j < m; ++j) out[j * n + c] = 0.0f;
  }
  CheckValues();
}

void Parser::CheckValues() {
  // Each value's exponent bits: all ones is a NaN or an infinity (an
  // infinity when the mantissa is 0 too). Column by column, just written
  // (a loop the compiler vectorizes); candidate by candidate only when a
  // column has one.
  const size_t count = v_.features.size();
  const uint32_t* bits = reinterpret_cast<const uint32_t*>(v_.features.data());
  // Signed compares (the magnitude fits), which SSE2 has.
  int32_t non_finite = 0;
  for (size_t i = 0; i < count; ++i) {
    non_finite |= static_cast<int32_t>(bits[i] & 0x7fffffffu) > 0x7f7fffff;
  }
  if (non_finite == 0) return;
  RequestView::CandidateChecks& k = v_.checks;
  const size_t n = v_.n;
  for (size_t c = 0; c < n && k.first_infinite == SIZE_MAX; ++c) {
    for (size_t j = 0; j < v_.item_feature_names.size(); ++j) {
      const uint32_t magnitude = bits[j * n + c] & 0x7fffffffu;
      if (magnitude >= 0x7f800000u && k.first_non_finite == SIZE_MAX) k.first_non_finite = c;
      if (magnitude == 0x7f800000u && k.first_infinite == SIZE_MAX) k.first_infinite = c;
    }
  }
}

}  // namespace

const double* RequestView::FindUserFeature(absl::string_view key) const {
  for (const auto& [k, v] : user_features) {
    if (k == key) return &v;
  }
  return nullptr;
}

const absl::string_view* RequestView::FindContext(absl::string_view key) const {
  for (const auto& [k, v] : context) {
    if (k == key) return &v;
  }
  return nullptr;
}

absl::Status ParseRequestView(absl::string_view bytes, const RequestLimits& limits,
                              RequestView* view) {
  return Parser(limits, view).Parse(bytes);
}

absl::Status RequestViewOf(const rank::v1::RankRequest& request, const RequestLimits& limits,
                           std::string* storage, RequestView* view) {
  storage->clear();
  if (!request.SerializeToString(storage)) {
    return absl::InvalidArgumentError("request does not serialize");
  }
  return ParseRequestView(*storage, limits, view);
}

OwnedRequestView::OwnedRequestView(const rank::v1::RankRequest& request)
    : OwnedRequestView(request, RequestLimits()) {}

OwnedRequestView::OwnedRequestView(const rank::v1::RankRequest& request,
                                   const RequestLimits& limits)
    : status_(RequestViewOf(request, limits, &bytes_, &view_)) {}

namespace {

// Whether every byte is below 0x80: ids, names and sources nearly always
// are. Whole words, the last one overlapping, no per-byte loop.
bool AllAscii(const char* p, size_t n) {
  constexpr uint64_t kHigh = 0x8080808080808080ULL;
  uint64_t acc = 0;
  if (n >= 8) {
    for (size_t i = 0; i + 8 <= n; i += 8) {
      uint64_t w;
      std::memcpy(&w, p + i, 8);
      acc |= w;
    }
    uint64_t last;
    std::memcpy(&last, p + n - 8, 8);
    return ((acc | last) & kHigh) == 0;
  }
  if (n >= 4) {
    uint32_t a, b;
    std::memcpy(&a, p, 4);
    std::memcpy(&b, p + n - 4, 4);
    return ((a | b) & 0x80808080u) == 0;
  }
  for (size_t i = 0; i < n; ++i) acc |= static_cast<uint8_t>(p[i]);
  return acc < 0x80;
}

}  // namespace

bool IsValidUtf8(absl::string_view s) {
  if (AllAscii(s.data(), s.size())) return true;
  const auto* p = reinterpret_cast<const uint8_t*>(s.data());
  const auto* end = p + s.size();
  while (p < end) {
    // ASCII eight bytes at a time: most ids, names and queries.
    if (end - p >= 8) {
      uint64_t word;
      std::memcpy(&word, p, 8);
      if ((word & 0x8080808080808080ULL) == 0) {
        p += 8;
        continue;
      }
    }
    const uint8_t b = *p;
    if (b < 0x80) {
      ++p;
      continue;
    }
    int extra;
    uint8_t lo = 0x80, hi = 0xbf;  // The second byte's range (Unicode table 3-7).
    if (b >= 0xc2 && b <= 0xdf) {
      extra = 1;
    } else if (b >= 0xe0 && b <= 0xef) {
      extra = 2;
      if (b == 0xe0) lo = 0xa0;  // No overlong forms.
      if (b == 0xed) hi = 0x9f;  // No surrogates.
    } else if (b >= 0xf0 && b <= 0xf4) {
      extra = 3;
      if (b == 0xf0) lo = 0x90;
      if (b == 0xf4) hi = 0x8f;  // At most U+10FFFF.
    } else {
      return false;
    }
    if (end - p <= extra) return false;
    if (p[1] < lo || p[1] > hi) return false;
    for (int k = 2; k <= extra; ++k) {
      if (p[k] < 0x80 || p[k] > 0xbf) return false;
    }
    p += extra + 1;
  }
  return true;
}

}  // namespace rankwire
