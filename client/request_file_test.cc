#include "client/request_file.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>

#include "gmock/gmock.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "workload/workload.h"

namespace rankwire::client {
namespace {

using ::testing::HasSubstr;

std::string TempPath(const std::string& name) {
  return ::testing::TempDir() + "/request_file_test_" + name;
}

rank::v1::RankRequest Generated() {
  workload::WorkloadOptions options;
  options.candidates = 300;
  options.accept_codecs = {"rankbin", "protobuf"};
  options.log_mode = rank::v1::LOG_MODE_INLINE;
  return workload::WorkloadGenerator(options).Make(7);
}

TEST(RequestFileTest, JsonRoundTripsToTheSameBytes) {
  const rank::v1::RankRequest request = Generated();
  const std::string path = TempPath("json");
  ASSERT_TRUE(WriteRequestJson(request, path).ok());
  absl::StatusOr<rank::v1::RankRequest> read = ReadRequestFile(path);
  ASSERT_TRUE(read.ok()) << read.status();
  // Maps compared as maps; every float comes back bit for bit.
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(*read, request));
  for (int c = 0; c < request.candidates_size(); ++c) {
    const auto& want = request.candidates(c).features();
    const auto& got = read->candidates(c).features();
    ASSERT_EQ(got.size(), want.size());
    ASSERT_EQ(std::memcmp(got.data(), want.data(), sizeof(float) * want.size()), 0) << c;
  }
  std::remove(path.c_str());
}

TEST(RequestFileTest, OddNumbersSurviveJson) {
  rank::v1::RankRequest request;
  request.set_request_id("odd");
  request.set_request_time_ms(std::numeric_limits<int64_t>::max());
  (*request.mutable_user_features())["tiny"] = 4.9406564584124654e-324;
  (*request.mutable_user_features())["third"] = 1.0 / 3;
  rank::v1::Candidate* c = request.add_candidates();
  c->add_features(std::numeric_limits<float>::denorm_min());
  c->add_features(0.1f);
  c->add_features(-0.0f);                       // protobuf's printer writes -0, its parser reads 0.
  (*request.mutable_context())["sign"] = "-0";  // A string stays as it is.
  (*request.mutable_context())["quote"] = "a\\\"-0";
  (*request.mutable_user_features())["neg_zero"] = -0.0;
  absl::StatusOr<rank::v1::RankRequest> read = ParseRequestBytes(RequestJson(request), "odd");
  ASSERT_TRUE(read.ok()) << read.status();
  // (Maps serialize in no fixed order: compared as messages.)
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(*read, request));
  EXPECT_EQ(read->user_features().at("tiny"), 4.9406564584124654e-324);
  EXPECT_EQ(read->candidates(0).features(0), std::numeric_limits<float>::denorm_min());
  EXPECT_TRUE(std::signbit(read->candidates(0).features(2)));
  EXPECT_TRUE(std::signbit(read->user_features().at("neg_zero")));
  EXPECT_EQ(read->context().at("sign"), "-0");
  EXPECT_EQ(read->context().at("quote"), "a\\\"-0");
}

TEST(RequestFileTest, BinaryIsReadAsIs) {
  const rank::v1::RankRequest request = Generated();
  const std::string path = TempPath("bin");
  {
    std::ofstream out(path, std::ios::binary);
    out << request.SerializeAsString();
  }
  absl::StatusOr<rank::v1::RankRequest> read = ReadRequestFile(path);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(*read, request));
  std::remove(path.c_str());
}

// A name ending in .bin (or .pb) is written as the wire bytes; any other as
// JSON. Both read back to the same request.
TEST(RequestFileTest, ABinFileIsWrittenAsTheWireBytes) {
  EXPECT_EQ(RequestFileFormatFor("captured.bin"), RequestFileFormat::kBinary);
  EXPECT_EQ(RequestFileFormatFor("captured.pb"), RequestFileFormat::kBinary);
  EXPECT_EQ(RequestFileFormatFor("request.json"), RequestFileFormat::kJson);
  EXPECT_EQ(RequestFileFormatFor("-"), RequestFileFormat::kJson);
  const rank::v1::RankRequest request = Generated();
  const std::string path = TempPath("captured.bin");
  ASSERT_TRUE(WriteRequestFile(request, path, RequestFileFormatFor(path)).ok());
  std::ifstream in(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(bytes, request.SerializeAsString());
  absl::StatusOr<rank::v1::RankRequest> read = ReadRequestFile(path);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(*read, request));
  std::remove(path.c_str());
}

TEST(RequestFileTest, WhatIsNotARequestSaysWhy) {
  absl::StatusOr<rank::v1::RankRequest> r = ParseRequestBytes("{\"no_such_field\": 1}", "f.json");
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("f.json: not a RankRequest in protobuf JSON"));
  r = ParseRequestBytes("\xff\xff\xff", "f.bin");
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("f.bin: neither protobuf JSON"));
  EXPECT_EQ(ReadRequestFile("/nonexistent/req.json").status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace rankwire::client
