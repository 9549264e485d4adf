// LinearSpec: the ranking model rankwire ships with, loaded from a text file
// (format in docs/ARCHITECTURE.md; the shipped model is
// model/models/ecom_search_lr.model).
//
// A model is a set of logistic heads over "inputs". An input is an item
// feature, a user feature (user.<name>), a numeric context value
// (ctx.<name>), the product a*b of two inputs or their absolute difference
// a~b. Item features may carry a transform (log1p, clip, scale). The final
// score multiplies the heads' probabilities raised to per-head exponents and
// a per-recall-source boost.
//
// Thread safety: immutable after Parse(); share freely.
#ifndef RANKWIRE_MODEL_LINEAR_LINEAR_SPEC_H_
#define RANKWIRE_MODEL_LINEAR_LINEAR_SPEC_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace rankwire {

class LinearSpec {
 public:
  enum class Source { kItem, kUser, kContext };
  enum class TransformKind { kIdentity, kLog1p, kClip, kScale };

  // A leaf input: one named feature, transformed.
  struct Atom {
    Source source = Source::kItem;
    std::string name;  // Feature name without the "user."/"ctx." prefix.
    TransformKind transform = TransformKind::kIdentity;
    double a = 0, b = 0;  // clip bounds, or the scale divisor in a.
  };
  enum class Op { kAtom, kProduct, kAbsDiff };
  struct Term {
    std::string input;  // As written in the file: "ctr_7d", "a*b", "a~b".
    Op op = Op::kAtom;
    int lhs = 0;  // Atom index.
    int rhs = 0;  // Atom index (kProduct, kAbsDiff).
    double weight = 0;
  };
  struct Head {
    std::string name;
    double bias = 0;
    double exponent = 1;
    // Whether per-input contributions are emitted as metrics.
    bool explain = false;
    std::vector<Term> terms;
  };
  struct Bucket {
    std::string name;
    int percent = 0;
  };

  // InvalidArgument with "<source_name>:<line>: <problem>" on a bad file.
  static absl::StatusOr<LinearSpec> Parse(absl::string_view text, absl::string_view source_name);
  // The file read with ReadFileChecked (base/read_file.h: a file over
  // max_file_bytes is refused unread), then Parse. Errors carry a reason
  // (base/status_reason.h) where one applies: the file's, "empty",
  // "truncated" (no "end" line), "invalid_number", "unknown_transform".
  static absl::StatusOr<LinearSpec> LoadFile(const std::string& path,
                                             uint64_t max_file_bytes = uint64_t{64} << 20);

  const std::string& name() const { return name_; }
  const std::string& version() const { return version_; }
  // "name@version", as it appears in responses and logs.
  const std::string& full_version() const { return full_version_; }
  const std::vector<Atom>& atoms() const { return atoms_; }
  const std::vector<Head>& heads() const { return heads_; }
  double Boost(absl::string_view recall_source) const;
  // The experiment bucket of a user (stable hash of the user id).
  const std::string& BucketOf(absl::string_view user_id) const;

  static double ApplyTransform(const Atom& atom, double raw);

 private:
  friend class ModelParser;  // linear_model.cc: one method per directive.

  std::string name_;
  std::string version_;
  std::string full_version_;
  std::vector<Atom> atoms_;
  std::vector<Head> heads_;
  absl::flat_hash_map<std::string, double> boosts_;
  std::vector<Bucket> buckets_;
};

}  // namespace rankwire

#endif  // RANKWIRE_MODEL_LINEAR_LINEAR_SPEC_H_
