// gtest fixtures for tests of model files on disk (model/model_loader_test,
// model/model_path_test, server/model_reloader_test): a fresh directory
// under /tmp per test, removed after it, and the shipped model
// (RANKWIRE_MODEL_PATH: a test including this header gets the compile
// definition ${RANKWIRE_MODEL_DEFINE} in CMake) at any version.
//
// Thread safety: as a gtest fixture, one test at a time.
#ifndef RANKWIRE_TESTS_SUPPORT_MODEL_DIR_H_
#define RANKWIRE_TESTS_SUPPORT_MODEL_DIR_H_

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/str_replace.h"
#include "gtest/gtest.h"

namespace rankwire {

// dir_: a directory of its own for each test.
class TempDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string path = (std::filesystem::temp_directory_path() / "rankwire-test-XXXXXX").string();
    ASSERT_NE(mkdtemp(path.data()), nullptr);
    dir_ = path;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::filesystem::path dir_;
};

// dir_, and the shipped model's text as any version, written as a deploy
// writes it.
class ModelDirTest : public TempDirTest {
 protected:
  void SetUp() override {
    TempDirTest::SetUp();
    std::ifstream in(RANKWIRE_MODEL_PATH);
    std::stringstream text;
    text << in.rdbuf();
    shipped_ = text.str();
    ASSERT_FALSE(shipped_.empty()) << RANKWIRE_MODEL_PATH;
  }

  // Written beside and renamed over, as a deploy does: a new inode, so a
  // reloader sees the change however fast the test rewrites.
  void Write(const std::string& name, const std::string& text) const {
    const std::filesystem::path tmp = dir_ / (name + ".tmp");
    std::ofstream(tmp) << text;
    std::filesystem::rename(tmp, dir_ / name);
  }
  // The shipped model as version `version`.
  std::string Model(const std::string& version) const {
    return absl::StrReplaceAll(shipped_,
                               {{"\nversion 2026.11.3\n", "\nversion " + version + "\n"}});
  }

  std::string shipped_;
};

}  // namespace rankwire

#endif  // RANKWIRE_TESTS_SUPPORT_MODEL_DIR_H_
