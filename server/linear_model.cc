#include "server/linear_model.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace rankwire::server {
namespace {

// FNV-1a, 64-bit: a stable hash so bucket assignment does not change between
// builds or platforms.
uint64_t StableHash(absl::string_view s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

class LineParser {
 public:
  LineParser(absl::string_view source, int line) : source_(source), line_(line) {}

  absl::Status Error(absl::string_view problem) const {
    return absl::InvalidArgumentError(
        absl::StrCat(source_, ":", line_, ": ", problem));
  }
  absl::StatusOr<double> Number(absl::string_view token) const {
    double v;
    if (!absl::SimpleAtod(token, &v) || !std::isfinite(v)) {
      return Error(absl::StrCat("\"", token, "\" is not a finite number"));
    }
    return v;
  }

 private:
  absl::string_view source_;
  int line_;
};

}  // namespace

double LinearModel::ApplyTransform(const Atom& atom, double raw) {
  switch (atom.transform) {
    case TransformKind::kIdentity:
      return raw;
    case TransformKind::kLog1p:
      return std::log1p(std::max(raw, 0.0));
    case TransformKind::kClip:
      return std::clamp(raw, atom.a, atom.b);
    case TransformKind::kScale:
      return raw / atom.a;
  }
  return raw;
}

absl::StatusOr<LinearModel> LinearModel::LoadFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return absl::NotFoundError(absl::StrCat("cannot open model file ", path));
  }
  std::stringstream text;
  text << in.rdbuf();
  return Parse(text.str(), path);
}

absl::StatusOr<LinearModel> LinearModel::Parse(absl::string_view text,
                                               absl::string_view source_name) {
  LinearModel model;
  // Transforms by full input name ("price", "user.x"), applied when atoms
  // are made.
  absl::flat_hash_map<std::string, Atom> transforms;
  absl::flat_hash_map<std::string, int> atom_index;
  bool saw_header = false;
  int line_number = 0;

  auto make_atom = [&](absl::string_view input, const LineParser& p) -> absl::StatusOr<int> {
    std::string key(input);
    if (auto it = atom_index.find(key); it != atom_index.end()) return it->second;
    Atom atom;
    if (auto it = transforms.find(key); it != transforms.end()) atom = it->second;
    absl::string_view name = input;
    if (absl::ConsumePrefix(&name, "user.")) {
      atom.source = Source::kUser;
    } else if (absl::ConsumePrefix(&name, "ctx.")) {
      atom.source = Source::kContext;
    } else {
      atom.source = Source::kItem;
    }
    if (name.empty()) return p.Error(absl::StrCat("empty input name in \"", input, "\""));
    atom.name = std::string(name);
    model.atoms_.push_back(atom);
    int index = static_cast<int>(model.atoms_.size() - 1);
    atom_index[key] = index;
    return index;
  };

  for (absl::string_view raw : absl::StrSplit(text, '\n')) {
    ++line_number;
    LineParser p(source_name, line_number);
    absl::string_view line = absl::StripAsciiWhitespace(raw);
    if (size_t hash = line.find('#'); hash != absl::string_view::npos) {
      line = absl::StripAsciiWhitespace(line.substr(0, hash));
    }
    if (line.empty()) continue;
    std::vector<absl::string_view> t =
        absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
    const absl::string_view directive = t[0];
    auto want = [&](size_t n) -> absl::Status {
      if (t.size() != n) {
        return p.Error(absl::StrCat("\"", directive, "\" takes ", n - 1,
                                    " arguments, got ", t.size() - 1));
      }
      return absl::OkStatus();
    };

    if (!saw_header) {
      if (directive != "rankwire-model" || t.size() != 2 || t[1] != "1") {
        return p.Error("expected the header \"rankwire-model 1\"");
      }
      saw_header = true;
      continue;
    }
    if (directive == "name" || directive == "version") {
      if (auto s = want(2); !s.ok()) return s;
      (directive == "name" ? model.name_ : model.version_) = std::string(t[1]);
    } else if (directive == "transform") {
      if (t.size() < 3) return p.Error("transform needs a feature and a kind");
      if (!model.heads_.empty()) return p.Error("transforms must come before heads");
      Atom atom;
      if (t[2] == "identity") {
        if (auto s = want(3); !s.ok()) return s;
      } else if (t[2] == "log1p") {
        if (auto s = want(3); !s.ok()) return s;
        atom.transform = TransformKind::kLog1p;
      } else if (t[2] == "clip") {
        if (auto s = want(5); !s.ok()) return s;
        atom.transform = TransformKind::kClip;
        auto lo = p.Number(t[3]);
        auto hi = p.Number(t[4]);
        if (!lo.ok()) return lo.status();
        if (!hi.ok()) return hi.status();
        if (*lo > *hi) return p.Error("clip bounds are reversed");
        atom.a = *lo;
        atom.b = *hi;
      } else if (t[2] == "scale") {
        if (auto s = want(4); !s.ok()) return s;
        atom.transform = TransformKind::kScale;
        auto d = p.Number(t[3]);
        if (!d.ok()) return d.status();
        if (*d == 0) return p.Error("scale divisor must not be 0");
        atom.a = *d;
      } else {
        return p.Error(absl::StrCat("unknown transform \"", t[2], "\""));
      }
      if (!transforms.emplace(std::string(t[1]), atom).second) {
        return p.Error(absl::StrCat("second transform for \"", t[1], "\""));
      }
    } else if (directive == "head") {
      if (auto s = want(4); !s.ok()) return s;
      for (const Head& h : model.heads_) {
        if (h.name == t[1]) return p.Error(absl::StrCat("head \"", t[1], "\" declared twice"));
      }
      auto bias = p.Number(t[2]);
      auto exponent = p.Number(t[3]);
      if (!bias.ok()) return bias.status();
      if (!exponent.ok()) return exponent.status();
      model.heads_.push_back(Head{std::string(t[1]), *bias, *exponent, false, {}});
    } else if (directive == "weight") {
      if (auto s = want(4); !s.ok()) return s;
      auto head = std::find_if(model.heads_.begin(), model.heads_.end(),
                               [&](const Head& h) { return h.name == t[1]; });
      if (head == model.heads_.end()) {
        return p.Error(absl::StrCat("weight for undeclared head \"", t[1], "\""));
      }
      auto weight = p.Number(t[3]);
      if (!weight.ok()) return weight.status();
      Term term;
      term.input = std::string(t[2]);
      term.weight = *weight;
      absl::string_view input = t[2];
      size_t op_at = input.find_first_of("*~");
      absl::StatusOr<int> lhs = make_atom(input.substr(0, op_at), p);
      if (!lhs.ok()) return lhs.status();
      term.lhs = *lhs;
      if (op_at != absl::string_view::npos) {
        term.op = input[op_at] == '*' ? Op::kProduct : Op::kAbsDiff;
        absl::StatusOr<int> rhs = make_atom(input.substr(op_at + 1), p);
        if (!rhs.ok()) return rhs.status();
        term.rhs = *rhs;
      }
      for (const Term& other : head->terms) {
        if (other.input == term.input) {
          return p.Error(absl::StrCat("input \"", term.input, "\" weighted twice in head ", head->name));
        }
      }
      head->terms.push_back(std::move(term));
    } else if (directive == "explain") {
      if (auto s = want(2); !s.ok()) return s;
      auto head = std::find_if(model.heads_.begin(), model.heads_.end(),
                               [&](const Head& h) { return h.name == t[1]; });
      if (head == model.heads_.end()) {
        return p.Error(absl::StrCat("explain for undeclared head \"", t[1], "\""));
      }
      head->explain = true;
    } else if (directive == "boost") {
      if (auto s = want(3); !s.ok()) return s;
      auto m = p.Number(t[2]);
      if (!m.ok()) return m.status();
      if (*m <= 0) return p.Error("boost must be positive");
      model.boosts_[std::string(t[1])] = *m;
    } else if (directive == "experiment") {
      if (auto s = want(3); !s.ok()) return s;
      int percent;
      if (!absl::SimpleAtoi(t[2], &percent) || percent <= 0 || percent > 100) {
        return p.Error("experiment percent must be an integer in 1..100");
      }
      model.buckets_.push_back(Bucket{std::string(t[1]), percent});
    } else {
      return p.Error(absl::StrCat("unknown directive \"", directive, "\""));
    }
  }

  LineParser end(source_name, line_number);
  if (!saw_header) return end.Error("empty model file");
  if (model.name_.empty() || model.version_.empty()) {
    return end.Error("model needs a name and a version");
  }
  if (model.heads_.empty()) return end.Error("model has no heads");
  int total = 0;
  for (const Bucket& b : model.buckets_) total += b.percent;
  if (model.buckets_.empty()) {
    model.buckets_.push_back(Bucket{"default", 100});
  } else if (total != 100) {
    return end.Error(absl::StrCat("experiment percents sum to ", total, ", not 100"));
  }
  model.full_version_ = absl::StrCat(model.name_, "@", model.version_);
  return model;
}

double LinearModel::Boost(absl::string_view recall_source) const {
  auto it = boosts_.find(recall_source);
  return it == boosts_.end() ? 1.0 : it->second;
}

const std::string& LinearModel::BucketOf(absl::string_view user_id) const {
  int slot = static_cast<int>(StableHash(user_id) % 100);
  for (const Bucket& b : buckets_) {
    if (slot < b.percent) return b.name;
    slot -= b.percent;
  }
  return buckets_.back().name;
}

}  // namespace rankwire::server
