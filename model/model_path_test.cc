// Tests of model/model_path.h against a real directory tree laid out like
// the build tree and an install prefix.
#include "model/model_path.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace rankwire {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class ModelPathTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "model_path_test.XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    root_ = tmpl;
  }
  void TearDown() override { fs::remove_all(root_); }
  void Touch(const fs::path& p) {
    fs::create_directories(p.parent_path());
    std::ofstream(p) << "rankwire-model 1\n";
  }
  fs::path root_;
};

TEST_F(ModelPathTest, AbsolutePathIsUsedAsIs) {
  Touch(root_ / "m.model");
  absl::StatusOr<std::string> p = ResolveModelPath((root_ / "m.model").string(), "");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(*p, (root_ / "m.model").string());
}

TEST_F(ModelPathTest, BuildTreeModelsNextToTheBinary) {
  Touch(root_ / "build/server/models/ecom.model");
  absl::StatusOr<std::string> p = ResolveModelPath(
      "model/models/ecom.model", (root_ / "build/server/rankwire-server").string());
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(*p, (root_ / "build/server/models/ecom.model").string());
}

TEST_F(ModelPathTest, InstallPrefixShare) {
  Touch(root_ / "usr/share/rankwire/models/ecom.model");
  absl::StatusOr<std::string> p =
      ResolveModelPath("model/models/ecom.model", (root_ / "usr/bin/rankwire-server").string());
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(*p, (root_ / "usr/share/rankwire/models/ecom.model").string());
}

TEST_F(ModelPathTest, NotFoundSaysWhatWasTried) {
  absl::StatusOr<std::string> p =
      ResolveModelPath("model/models/none.model", (root_ / "bin/rankwire-server").string());
  ASSERT_EQ(p.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(p.status().message(), HasSubstr("model/models/none.model"));
  EXPECT_THAT(p.status().message(), HasSubstr((root_ / "bin/models/none.model").string()));
  EXPECT_THAT(p.status().message(),
              HasSubstr((root_ / "share/rankwire/models/none.model").string()));
}

}  // namespace
}  // namespace rankwire
