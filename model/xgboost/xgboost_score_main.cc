// xgboost_score: loads an XGBoost JSON model and scores a file of rows with
// TreeEvaluator (or the reference walk), optionally with contributions for
// the first rows. The Python parity test drives it; it is also the quickest
// way to check a model file before serving it.
//
//   xgboost_score --model=m.json --rows=rows.f32 --out=scores.f32
//       [--margin] [--kernel=auto|scalar|avx512|reference]
//       [--contribs_rows=10 --contribs_out=contribs.f64
//        [--contribs=exact|approx|approx_walk|reference] [--shap_kernel=auto|portable]]
//
// rows.f32: float32 little-endian, row-major, num_features per row (model
// feature order), NaN = missing. scores.f32: one float32 per row.
// contribs.f64: float64, (num_features + 1) per row, bias last.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/flags.h"
#include "base/status_macros.h"
#include "model/xgboost/approx_contributions.h"
#include "model/xgboost/tree_evaluator.h"
#include "model/xgboost/tree_shap.h"
#include "model/xgboost/tree_shap_reference.h"
#include "model/xgboost/xgboost_spec.h"

ABSL_FLAG(std::string, model, "", "XGBoost model saved as JSON");
ABSL_FLAG(std::string, rows, "", "float32 rows, row-major, model feature order, NaN = missing");
ABSL_FLAG(std::string, out, "", "where to write one float32 score per row");
ABSL_FLAG(bool, margin, false, "write margins (output_margin=True), not transformed scores");
ABSL_FLAG(std::string, kernel, "auto", "auto, scalar, avx512 or reference (the plain walk)");
ABSL_FLAG(int, contribs_rows, 0, "TreeSHAP contributions for this many first rows");
ABSL_FLAG(std::string, contribs_out, "", "where to write them: float64, features + bias per row");
ABSL_FLAG(std::string, contribs, "exact",
          "exact (TreeShap: pred_contribs), approx (ApproxContributions with its tables: "
          "approx_contribs), approx_walk (the same, its lean walk) or reference "
          "(ReferenceTreeShap, the classic algorithm)");
ABSL_FLAG(std::string, shap_kernel, "auto", "TreeShap's kernel: auto or portable");
ABSL_FLAG(int, max_depth, 16, "deepest tree accepted");
ABSL_FLAG(bool, allow_unnamed_features, false, "accept a model without feature names (f0, ...)");

namespace {

using rankwire::xgboost::ApproxContributions;
using rankwire::xgboost::ReferenceTreeShap;
using rankwire::xgboost::TreeEvaluator;
using rankwire::xgboost::TreeShap;
using rankwire::xgboost::XGBoostSpec;

absl::StatusOr<std::string> ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

absl::Status WriteAll(const std::string& path, const void* data, size_t size) {
  std::ofstream out(path, std::ios::binary);
  out.write(static_cast<const char*>(data), static_cast<std::streamsize>(size));
  return out ? absl::OkStatus() : absl::InternalError(absl::StrCat("cannot write ", path));
}

absl::Status ScoreRows(const XGBoostSpec& model, const std::vector<float>& rows,
                       std::vector<float>* scores) {
  const size_t features = model.num_features();
  const size_t n = rows.size() / features;
  scores->resize(n);
  const std::string kernel = absl::GetFlag(FLAGS_kernel);
  const bool margin = absl::GetFlag(FLAGS_margin);
  if (kernel == "reference") {
    for (size_t r = 0; r < n; ++r) {
      const float* row = rows.data() + r * features;
      (*scores)[r] = margin ? model.PredictMargin(row) : model.Predict(row);
    }
    return absl::OkStatus();
  }
  TreeEvaluator::Kernel k = TreeEvaluator::Kernel::kAuto;
  if (kernel == "scalar") {
    k = TreeEvaluator::Kernel::kScalar;
  } else if (kernel == "avx512") {
    if (!TreeEvaluator::Avx512Available()) return absl::UnavailableError("no AVX-512 here");
    k = TreeEvaluator::Kernel::kAvx512;
  } else if (kernel != "auto") {
    return absl::InvalidArgumentError(absl::StrCat("unknown --kernel ", kernel));
  }
  const TreeEvaluator evaluator(model, k);
  if (margin) {
    evaluator.ScoreMargin(rows.data(), n, features, scores->data());
  } else {
    evaluator.Score(rows.data(), n, features, scores->data());
  }
  return absl::OkStatus();
}

// The first `explained` rows' contributions (--contribs), features + bias
// per row.
absl::Status Explain(const XGBoostSpec& model, const std::vector<float>& rows, size_t explained,
                     std::vector<double>* contribs) {
  const size_t features = model.num_features();
  const std::string mode = absl::GetFlag(FLAGS_contribs);
  contribs->resize(explained * (features + 1));
  if (mode == "reference") {
    const ReferenceTreeShap shap(model);
    for (size_t r = 0; r < explained; ++r) {
      shap.Contributions(rows.data() + r * features, contribs->data() + r * (features + 1));
    }
    return absl::OkStatus();
  }
  std::vector<float> out(contribs->size());
  if (mode == "exact") {
    const std::string kernel = absl::GetFlag(FLAGS_shap_kernel);
    if (kernel != "auto" && kernel != "portable") {
      return absl::InvalidArgumentError(absl::StrCat("unknown --shap_kernel ", kernel));
    }
    const TreeShap shap(model,
                        kernel == "auto" ? TreeShap::Kernel::kAuto : TreeShap::Kernel::kPortable);
    shap.Contributions(rows.data(), explained, features, out.data());
  } else if (mode == "approx" || mode == "approx_walk") {
    // approx: with the leaves' tables; approx_walk: the lean walk.
    const ApproxContributions approx(model, mode == "approx" ? SIZE_MAX : 0);
    approx.Contributions(rows.data(), explained, features, out.data());
  } else {
    return absl::InvalidArgumentError(absl::StrCat("unknown --contribs ", mode));
  }
  std::copy(out.begin(), out.end(), contribs->begin());
  return absl::OkStatus();
}

absl::Status Run() {
  rankwire::xgboost::XGBoostLoadOptions options;
  options.max_depth = absl::GetFlag(FLAGS_max_depth);
  options.allow_unnamed_features = absl::GetFlag(FLAGS_allow_unnamed_features);
  const auto start = std::chrono::steady_clock::now();
  ASSIGN_OR_RETURN(XGBoostSpec model, XGBoostSpec::LoadFile(absl::GetFlag(FLAGS_model), options));
  const double load_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  std::printf("loaded %s: %s, %zu trees, %zu nodes, depth %d, %zu features, %.1f ms\n",
              absl::GetFlag(FLAGS_model).c_str(),
              std::string(rankwire::xgboost::ObjectiveName(model.objective())).c_str(),
              model.trees().size(), model.num_nodes(), model.max_depth(), model.num_features(),
              load_ms);
  if (absl::GetFlag(FLAGS_rows).empty()) return absl::OkStatus();
  ASSIGN_OR_RETURN(std::string bytes, ReadAll(absl::GetFlag(FLAGS_rows)));
  const size_t row_bytes = model.num_features() * sizeof(float);
  if (bytes.size() % row_bytes != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--rows holds ", bytes.size(), " bytes, not a multiple of ", row_bytes));
  }
  std::vector<float> rows(bytes.size() / sizeof(float));
  std::copy(bytes.begin(), bytes.end(), reinterpret_cast<char*>(rows.data()));
  std::vector<float> scores;
  RETURN_IF_ERROR(ScoreRows(model, rows, &scores));
  RETURN_IF_ERROR(WriteAll(absl::GetFlag(FLAGS_out), scores.data(), scores.size() * sizeof(float)));
  const size_t explained = std::min<size_t>(absl::GetFlag(FLAGS_contribs_rows), scores.size());
  if (explained == 0) return absl::OkStatus();
  std::vector<double> contribs;
  RETURN_IF_ERROR(Explain(model, rows, explained, &contribs));
  return WriteAll(absl::GetFlag(FLAGS_contribs_out), contribs.data(),
                  contribs.size() * sizeof(double));
}

}  // namespace

int main(int argc, char** argv) {
  rankwire::ParseFlags(argc, argv,
                       "xgboost_score --model=m.json --rows=rows.f32 --out=scores.f32 [flags]");
  const absl::Status status = Run();
  if (!status.ok()) {
    std::fprintf(stderr, "xgboost_score: %s\n", status.ToString().c_str());
    return 1;
  }
  return 0;
}
