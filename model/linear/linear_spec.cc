#include "model/linear/linear_spec.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "base/read_file.h"
#include "base/stable_hash.h"
#include "base/status_macros.h"
#include "base/status_reason.h"

namespace rankwire {
namespace {

// One line of a model file, split into tokens, with its position for
// errors.
class Line {
 public:
  Line(absl::string_view source, int number, std::vector<absl::string_view> tokens)
      : source_(source), number_(number), t_(std::move(tokens)) {}

  absl::string_view directive() const { return t_[0]; }
  absl::string_view operator[](size_t i) const { return t_[i]; }
  size_t size() const { return t_.size(); }

  // `reason` (base/status_reason.h) says what kind of problem, for the
  // reload failure counts; most have none beyond the code.
  absl::Status Error(absl::string_view problem, absl::string_view reason = {}) const {
    absl::Status status =
        absl::InvalidArgumentError(absl::StrCat(source_, ":", number_, ": ", problem));
    return reason.empty() ? status : WithReason(std::move(status), reason);
  }
  // InvalidArgument unless the directive has exactly `n - 1` arguments.
  absl::Status Want(size_t n) const {
    if (t_.size() == n) return absl::OkStatus();
    return Error(
        absl::StrCat("\"", directive(), "\" takes ", n - 1, " arguments, got ", t_.size() - 1));
  }
  absl::StatusOr<double> Number(size_t i) const {
    double v;
    if (!absl::SimpleAtod(t_[i], &v) || !std::isfinite(v)) {
      return Error(absl::StrCat("\"", t_[i], "\" is not a finite number"), "invalid_number");
    }
    return v;
  }

 private:
  absl::string_view source_;
  int number_;
  std::vector<absl::string_view> t_;
};

// The tokens of a line with comments and surrounding space removed; empty
// for a blank or comment-only line.
std::vector<absl::string_view> Tokens(absl::string_view raw) {
  absl::string_view line = absl::StripAsciiWhitespace(raw);
  if (size_t hash = line.find('#'); hash != absl::string_view::npos) {
    line = absl::StripAsciiWhitespace(line.substr(0, hash));
  }
  return absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
}

}  // namespace

double LinearSpec::ApplyTransform(const Atom& atom, double raw) {
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

absl::StatusOr<LinearSpec> LinearSpec::LoadFile(const std::string& path, uint64_t max_file_bytes) {
  ASSIGN_OR_RETURN(CheckedFile file, ReadFileChecked(path, max_file_bytes));
  return Parse(file.bytes, path);
}

// Builds a LinearSpec from a model file, one method per directive. Each
// method reads one line; the order rules (header first, transforms before
// heads, weights after their head) are checked where they apply.
class ModelParser {
 public:
  explicit ModelParser(absl::string_view source) : source_(source) {}

  absl::Status ParseLine(const Line& line) {
    const absl::string_view d = line.directive();
    if (!saw_header_) return Header(line);
    if (saw_end_) return line.Error("a directive after \"end\"");
    if (d == "end") {
      saw_end_ = true;
      return line.Want(1);
    }
    if (d == "name" || d == "version") return NameOrVersion(line);
    if (d == "transform") return Transform(line);
    if (d == "head") return Head(line);
    if (d == "weight") return Weight(line);
    if (d == "explain") return Explain(line);
    if (d == "boost") return Boost(line);
    if (d == "experiment") return Experiment(line);
    return line.Error(absl::StrCat("unknown directive \"", d, "\""));
  }

  // The whole-file checks, after the last line (`last_line` for errors).
  absl::StatusOr<LinearSpec> Finish(int last_line) && {
    Line end(source_, last_line, {""});
    if (!saw_header_) return end.Error("empty model file", "empty");
    if (!saw_end_) {
      return end.Error("no \"end\" line: the file is truncated (or was read while being written)",
                       "truncated");
    }
    if (model_.name_.empty() || model_.version_.empty()) {
      return end.Error("model needs a name and a version");
    }
    if (model_.heads_.empty()) return end.Error("model has no heads");
    int total = 0;
    for (const LinearSpec::Bucket& b : model_.buckets_) total += b.percent;
    if (model_.buckets_.empty()) {
      model_.buckets_.push_back(LinearSpec::Bucket{"default", 100});
    } else if (total != 100) {
      return end.Error(absl::StrCat("experiment percents sum to ", total, ", not 100"));
    }
    model_.full_version_ = absl::StrCat(model_.name_, "@", model_.version_);
    return std::move(model_);
  }

 private:
  using Atom = LinearSpec::Atom;

  absl::Status Header(const Line& line) {
    if (line.directive() != "rankwire-model" || line.size() != 2 || line[1] != "1") {
      return line.Error("expected the header \"rankwire-model 1\"");
    }
    saw_header_ = true;
    return absl::OkStatus();
  }

  absl::Status NameOrVersion(const Line& line) {
    RETURN_IF_ERROR(line.Want(2));
    (line.directive() == "name" ? model_.name_ : model_.version_) = std::string(line[1]);
    return absl::OkStatus();
  }

  // transform <feature> identity | log1p | clip <lo> <hi> | scale <divisor>
  absl::Status Transform(const Line& line) {
    if (line.size() < 3) return line.Error("transform needs a feature and a kind");
    if (!model_.heads_.empty()) return line.Error("transforms must come before heads");
    Atom atom;
    const absl::string_view kind = line[2];
    if (kind == "identity" || kind == "log1p") {
      RETURN_IF_ERROR(line.Want(3));
      if (kind == "log1p") atom.transform = LinearSpec::TransformKind::kLog1p;
    } else if (kind == "clip") {
      RETURN_IF_ERROR(line.Want(5));
      atom.transform = LinearSpec::TransformKind::kClip;
      ASSIGN_OR_RETURN(atom.a, line.Number(3));
      ASSIGN_OR_RETURN(atom.b, line.Number(4));
      if (atom.a > atom.b) return line.Error("clip bounds are reversed");
    } else if (kind == "scale") {
      RETURN_IF_ERROR(line.Want(4));
      atom.transform = LinearSpec::TransformKind::kScale;
      ASSIGN_OR_RETURN(atom.a, line.Number(3));
      if (atom.a == 0) return line.Error("scale divisor must not be 0");
    } else {
      return line.Error(absl::StrCat("unknown transform \"", kind, "\""), "unknown_transform");
    }
    if (!transforms_.emplace(std::string(line[1]), atom).second) {
      return line.Error(absl::StrCat("second transform for \"", line[1], "\""));
    }
    return absl::OkStatus();
  }

  // head <name> <bias> <exponent>
  absl::Status Head(const Line& line) {
    RETURN_IF_ERROR(line.Want(4));
    if (FindHead(line[1]) != nullptr) {
      return line.Error(absl::StrCat("head \"", line[1], "\" declared twice"));
    }
    ASSIGN_OR_RETURN(double bias, line.Number(2));
    ASSIGN_OR_RETURN(double exponent, line.Number(3));
    model_.heads_.push_back(LinearSpec::Head{std::string(line[1]), bias, exponent, false, {}});
    return absl::OkStatus();
  }

  // weight <head> <input> <weight>, where input is a feature or a pair
  // "a*b" (product) or "a~b" (absolute difference).
  absl::Status Weight(const Line& line) {
    RETURN_IF_ERROR(line.Want(4));
    ASSIGN_OR_RETURN(LinearSpec::Head * head, DeclaredHead(line));
    LinearSpec::Term term;
    term.input = std::string(line[2]);
    ASSIGN_OR_RETURN(term.weight, line.Number(3));
    for (const LinearSpec::Term& other : head->terms) {
      if (other.input == term.input) {
        return line.Error(
            absl::StrCat("input \"", term.input, "\" weighted twice in head ", head->name));
      }
    }
    const absl::string_view input = line[2];
    const size_t op_at = input.find_first_of("*~");
    ASSIGN_OR_RETURN(term.lhs, AtomFor(input.substr(0, op_at), line));
    if (op_at != absl::string_view::npos) {
      term.op = input[op_at] == '*' ? LinearSpec::Op::kProduct : LinearSpec::Op::kAbsDiff;
      ASSIGN_OR_RETURN(term.rhs, AtomFor(input.substr(op_at + 1), line));
    }
    head->terms.push_back(std::move(term));
    return absl::OkStatus();
  }

  // explain <head>
  absl::Status Explain(const Line& line) {
    RETURN_IF_ERROR(line.Want(2));
    ASSIGN_OR_RETURN(LinearSpec::Head * head, DeclaredHead(line));
    head->explain = true;
    return absl::OkStatus();
  }

  // boost <recall source> <multiplier>
  absl::Status Boost(const Line& line) {
    RETURN_IF_ERROR(line.Want(3));
    ASSIGN_OR_RETURN(double m, line.Number(2));
    if (m <= 0) return line.Error("boost must be positive");
    model_.boosts_[std::string(line[1])] = m;
    return absl::OkStatus();
  }

  // experiment <bucket> <percent>
  absl::Status Experiment(const Line& line) {
    RETURN_IF_ERROR(line.Want(3));
    int percent;
    if (!absl::SimpleAtoi(line[2], &percent) || percent <= 0 || percent > 100) {
      return line.Error("experiment percent must be an integer in 1..100");
    }
    model_.buckets_.push_back(LinearSpec::Bucket{std::string(line[1]), percent});
    return absl::OkStatus();
  }

  LinearSpec::Head* FindHead(absl::string_view name) {
    for (LinearSpec::Head& h : model_.heads_) {
      if (h.name == name) return &h;
    }
    return nullptr;
  }
  // The head a `weight` or `explain` line names; it must be declared above.
  absl::StatusOr<LinearSpec::Head*> DeclaredHead(const Line& line) {
    if (LinearSpec::Head* head = FindHead(line[1])) return head;
    return line.Error(absl::StrCat(line.directive(), " for undeclared head \"", line[1], "\""));
  }

  // The index of the atom for `input` ("price", "user.x", "ctx.y"), made on
  // first use with the input's transform.
  absl::StatusOr<int> AtomFor(absl::string_view input, const Line& line) {
    std::string key(input);
    if (auto it = atom_index_.find(key); it != atom_index_.end()) return it->second;
    Atom atom;
    if (auto it = transforms_.find(key); it != transforms_.end()) atom = it->second;
    absl::string_view name = input;
    if (absl::ConsumePrefix(&name, "user.")) {
      atom.source = LinearSpec::Source::kUser;
    } else if (absl::ConsumePrefix(&name, "ctx.")) {
      atom.source = LinearSpec::Source::kContext;
    } else {
      atom.source = LinearSpec::Source::kItem;
    }
    if (name.empty()) return line.Error(absl::StrCat("empty input name in \"", input, "\""));
    atom.name = std::string(name);
    model_.atoms_.push_back(atom);
    const int index = static_cast<int>(model_.atoms_.size() - 1);
    atom_index_[key] = index;
    return index;
  }

  absl::string_view source_;
  LinearSpec model_;
  bool saw_header_ = false;
  bool saw_end_ = false;
  // Transforms by full input name, applied when atoms are made.
  absl::flat_hash_map<std::string, Atom> transforms_;
  absl::flat_hash_map<std::string, int> atom_index_;
};

absl::StatusOr<LinearSpec> LinearSpec::Parse(absl::string_view text,
                                             absl::string_view source_name) {
  ModelParser parser(source_name);
  int line_number = 0;
  for (absl::string_view raw : absl::StrSplit(text, '\n')) {
    ++line_number;
    std::vector<absl::string_view> tokens = Tokens(raw);
    if (tokens.empty()) continue;
    RETURN_IF_ERROR(parser.ParseLine(Line(source_name, line_number, std::move(tokens))));
  }
  return std::move(parser).Finish(line_number);
}

double LinearSpec::Boost(absl::string_view recall_source) const {
  auto it = boosts_.find(recall_source);
  return it == boosts_.end() ? 1.0 : it->second;
}

const std::string& LinearSpec::BucketOf(absl::string_view user_id) const {
  int slot = UserSlot(user_id);
  for (const Bucket& b : buckets_) {
    if (slot < b.percent) return b.name;
    slot -= b.percent;
  }
  return buckets_.back().name;
}

}  // namespace rankwire
