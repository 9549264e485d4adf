#include "base/pem_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "gtest/gtest.h"

namespace rankwire {
namespace {

class PemFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("pem_file_test." + std::to_string(getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Write(const std::string& name, const std::string& contents) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path, std::ios::binary) << contents;
    return path;
  }
  std::filesystem::path dir_;
};

TEST_F(PemFileTest, APemFileIsRead) {
  const std::string pem = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
  absl::StatusOr<std::string> read = ReadPemFile(Write("ok.pem", pem));
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(*read, pem);
}

TEST_F(PemFileTest, EachMistakeIsAClearError) {
  EXPECT_EQ(ReadPemFile((dir_ / "missing.pem").string()).status().code(),
            absl::StatusCode::kNotFound);
  // A directory (a Secret mounted where a file was meant) used to throw
  // std::ios_base::failure out of the server's start-up.
  absl::Status directory = ReadPemFile(dir_.string()).status();
  EXPECT_EQ(directory.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(directory.message().find("not a regular file"), absl::string_view::npos);
  EXPECT_EQ(ReadPemFile("/dev/zero").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ReadPemFile(Write("text.pem", "hello")).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ReadPemFile(Write("big.pem", std::string(kMaxPemFileBytes + 1, '-'))).status().code(),
            absl::StatusCode::kInvalidArgument);
  if (geteuid() != 0) {  // root reads files whatever their mode.
    const std::string locked = Write("locked.pem", "-----BEGIN X-----\n");
    chmod(locked.c_str(), 0);
    EXPECT_EQ(ReadPemFile(locked).status().code(), absl::StatusCode::kPermissionDenied);
  }
}

}  // namespace
}  // namespace rankwire
