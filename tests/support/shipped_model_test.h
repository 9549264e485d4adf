// A gtest fixture base for server tests that rank with the shipped model
// (server/models/ecom_search_lr.model, path from the RANKWIRE_MODEL_PATH
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
#include "server/linear_model.h"
#include "server/model_set.h"
#include "server/ranker.h"

namespace rankwire::server {

class ShippedModelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<LinearModel> model = LinearModel::LoadFile(RANKWIRE_MODEL_PATH);
    ASSERT_TRUE(model.ok()) << model.status();
    model_ = std::make_unique<LinearModel>(*std::move(model));
    ranker_ = std::make_unique<Ranker>(model_.get());
    // The same model, as the set a handler ranks with.
    models_ = std::make_unique<ServingModels>(ModelSet::Of(ranker_->shared_model()));
    absl::StatusOr<CodecRegistry> codecs = MakeBuiltinCodecs({});
    ASSERT_TRUE(codecs.ok()) << codecs.status();
    codecs_ = std::make_unique<CodecRegistry>(*std::move(codecs));
  }

  std::unique_ptr<LinearModel> model_;
  std::unique_ptr<Ranker> ranker_;
  std::unique_ptr<ServingModels> models_;
  std::unique_ptr<CodecRegistry> codecs_;
};

}  // namespace rankwire::server

#endif  // RANKWIRE_TESTS_SUPPORT_SHIPPED_MODEL_TEST_H_
