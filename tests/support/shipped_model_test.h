// A gtest fixture base for server tests that rank with the shipped model
// (model/models/ecom_search_lr.model, path from the RANKWIRE_MODEL_PATH
// compile definition that rankwire_unit_test() sets) and encode with the
// built-in codecs. Derived fixtures call ShippedModelTest::SetUp() first.
//
// Thread safety: as a gtest fixture, one test at a time.
#ifndef RANKWIRE_TESTS_SUPPORT_SHIPPED_MODEL_TEST_H_
#define RANKWIRE_TESTS_SUPPORT_SHIPPED_MODEL_TEST_H_

#include <memory>

#include "codec/builtin_codecs.h"
#include "codec/registry.h"
#include "gtest/gtest.h"
#include "model/linear/linear_model.h"
#include "ranking/model_set.h"
#include "ranking/ranker.h"

namespace rankwire {

class ShippedModelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<LinearSpec> model = LinearSpec::LoadFile(RANKWIRE_MODEL_PATH);
    ASSERT_TRUE(model.ok()) << model.status();
    model_ = std::make_unique<LinearSpec>(*std::move(model));
    ranker_ = std::make_unique<Ranker>(std::make_shared<LinearModel>(*model_));
    // The same model, as the set a handler ranks with.
    models_ = std::make_unique<ServingModels>(ModelSet::Of(ranker_->shared_model()));
    absl::StatusOr<CodecRegistry> codecs = MakeBuiltinCodecs({});
    ASSERT_TRUE(codecs.ok()) << codecs.status();
    codecs_ = std::make_unique<CodecRegistry>(*std::move(codecs));
  }

  std::unique_ptr<LinearSpec> model_;
  std::unique_ptr<Ranker> ranker_;
  std::unique_ptr<ServingModels> models_;
  std::unique_ptr<CodecRegistry> codecs_;
};

}  // namespace rankwire

#endif  // RANKWIRE_TESTS_SUPPORT_SHIPPED_MODEL_TEST_H_
