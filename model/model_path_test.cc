// Tests of model/model_path.h against a real directory tree laid out like
// the build tree and an install prefix.
#include "model/model_path.h"

#include <filesystem>
#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/model_dir.h"

namespace rankwire {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class ModelPathTest : public TempDirTest {
 protected:
  void Touch(const fs::path& p) {
    fs::create_directories(p.parent_path());
    std::ofstream(p) << "rankwire-model 1\n";
  }
};

TEST_F(ModelPathTest, AbsolutePathIsUsedAsIs) {
  Touch(dir_ / "m.model");
  absl::StatusOr<std::string> p = ResolveModelPath((dir_ / "m.model").string(), "");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(*p, (dir_ / "m.model").string());
}

TEST_F(ModelPathTest, BuildTreeModelsNextToTheBinary) {
  Touch(dir_ / "build/server/models/ecom.model");
  absl::StatusOr<std::string> p =
      ResolveModelPath("model/models/ecom.model", (dir_ / "build/server/rankwire-server").string());
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(*p, (dir_ / "build/server/models/ecom.model").string());
}

TEST_F(ModelPathTest, InstallPrefixShare) {
  Touch(dir_ / "usr/share/rankwire/models/ecom.model");
  absl::StatusOr<std::string> p =
      ResolveModelPath("model/models/ecom.model", (dir_ / "usr/bin/rankwire-server").string());
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(*p, (dir_ / "usr/share/rankwire/models/ecom.model").string());
}

TEST_F(ModelPathTest, NotFoundSaysWhatWasTried) {
  absl::StatusOr<std::string> p =
      ResolveModelPath("model/models/none.model", (dir_ / "bin/rankwire-server").string());
  ASSERT_EQ(p.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(p.status().message(), HasSubstr("model/models/none.model"));
  EXPECT_THAT(p.status().message(), HasSubstr((dir_ / "bin/models/none.model").string()));
  EXPECT_THAT(p.status().message(),
              HasSubstr((dir_ / "share/rankwire/models/none.model").string()));
}

}  // namespace
}  // namespace rankwire
