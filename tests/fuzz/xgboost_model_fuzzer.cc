// libFuzzer target: the XGBoost model loader (model/xgboost/xgboost_spec.h)
// over any bytes. Parse must return a Status, never crash or hang; a model it
// accepts must be safe to use: TreeEvaluator (every kernel) scores a few rows
// exactly as the reference walk does, and its rows are explained without
// fault: exact TreeSHAP (every kernel), the approximation, and the classic
// algorithm. Inputs are capped at 64 KiB so each run stays fast.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "model/xgboost/approx_contributions.h"
#include "model/xgboost/tree_evaluator.h"
#include "model/xgboost/tree_shap.h"
#include "model/xgboost/tree_shap_reference.h"
#include "model/xgboost/xgboost_spec.h"
#include "tests/fuzz/view_checks.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using rankwire::xgboost::TreeEvaluator;
  if (size > (64 << 10)) return 0;
  const absl::string_view bytes(reinterpret_cast<const char*>(data), size);
  rankwire::xgboost::XGBoostLoadOptions options;
  options.allow_unnamed_features = size % 2 == 0;
  auto model = rankwire::xgboost::XGBoostSpec::Parse(bytes, "fuzz", options);
  if (!model.ok()) return 0;
  const size_t features = model->num_features();
  if (features > 4096) return 0;  // rows below would be large; the load was the test
  // Rows: zeros, all missing, and values from the input bytes.
  const size_t n_rows = 20;
  std::vector<float> rows(n_rows * features, 0.0f);
  for (size_t i = features; i < 2 * features; ++i) rows[i] = NAN;
  for (size_t i = 2 * features; i < rows.size(); ++i) {
    rows[i] = static_cast<float>(static_cast<int8_t>(data[i % size])) / 16.0f;
  }
  std::vector<TreeEvaluator::Kernel> kernels = {TreeEvaluator::Kernel::kScalar};
  if (TreeEvaluator::Avx512Available()) kernels.push_back(TreeEvaluator::Kernel::kAvx512);
  for (TreeEvaluator::Kernel kernel : kernels) {
    const TreeEvaluator evaluator(*model, kernel);
    std::vector<float> out(n_rows);
    evaluator.Score(rows.data(), n_rows, features, out.data());
    for (size_t r = 0; r < n_rows; ++r) {
      const float want = model->Predict(rows.data() + r * features);
      RANKWIRE_FUZZ_CHECK(rankwire::fuzz::SameScore(out[r], want),
                          absl::StrCat("row ", r, ": ", out[r], " vs ", want));
    }
  }
  using rankwire::xgboost::TreeShap;
  std::vector<float> contributions(n_rows * (features + 1));
  std::vector<TreeShap::Kernel> shap_kernels = {TreeShap::Kernel::kPortable};
  if (TreeShap::Avx512Available()) shap_kernels.push_back(TreeShap::Kernel::kAvx512);
  for (TreeShap::Kernel kernel : shap_kernels) {
    TreeShap(*model, kernel).Contributions(rows.data(), n_rows, features, contributions.data());
  }
  rankwire::xgboost::ApproxContributions(*model).Contributions(rows.data(), n_rows, features,
                                                               contributions.data());
  std::vector<double> reference(features + 1);
  rankwire::xgboost::ReferenceTreeShap(*model).Contributions(rows.data() + 2 * features,
                                                             reference.data());
  return 0;
}
