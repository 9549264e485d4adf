// Tests of codec/registry.h and the built-in registry.
#include "codec/registry.h"

#include <array>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "codec/builtin_codecs.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rank/v1/rank.pb.h"

namespace rankwire {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// A codec that only has a name.
class NamedCodec final : public Codec {
 public:
  explicit NamedCodec(std::string name) : name_(std::move(name)) {}
  absl::string_view name() const override { return name_; }
  uint32_t format_version() const override { return 1; }
  BodyKind body_kind() const override { return BodyKind::kOpaquePayload; }
  absl::StatusOr<OwnedBuffer> Encode(const RankResult&) const override {
    return absl::UnimplementedError("test codec");
  }
  absl::StatusOr<std::unique_ptr<ResultView>> Open(SharedBytes) const override {
    return absl::UnimplementedError("test codec");
  }
  size_t EstimateEncodedBytes(const ResultBound&) const override { return 0; }

 private:
  std::string name_;
};

CodecRegistry ThreeCodecs() {
  CodecRegistry r;
  for (const char* name : {"alpha", "beta", "gamma"}) {
    EXPECT_TRUE(r.Register(std::make_unique<NamedCodec>(name)).ok());
  }
  return r;
}

TEST(CodecRegistryTest, FindsWhatWasRegistered) {
  CodecRegistry r;
  auto codec = std::make_unique<NamedCodec>("alpha");
  const Codec* raw = codec.get();
  ASSERT_TRUE(r.Register(std::move(codec)).ok());
  EXPECT_EQ(r.Find("alpha"), raw);
  EXPECT_EQ(r.Find("Alpha"), nullptr);
  EXPECT_EQ(r.Find(""), nullptr);
  absl::StatusOr<const Codec*> got = r.Get("alpha");
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(*got, raw);
}

TEST(CodecRegistryTest, DuplicateNamesAreAlreadyExists) {
  CodecRegistry r = ThreeCodecs();
  absl::Status s = r.Register(std::make_unique<NamedCodec>("beta"));
  EXPECT_EQ(s.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_THAT(s.message(), HasSubstr("beta"));
  EXPECT_THAT(r.Names(), ElementsAre("alpha", "beta", "gamma"));  // Unchanged.
}

TEST(CodecRegistryTest, NullOrUnnamedCodecsAreInvalidArgument) {
  CodecRegistry r;
  EXPECT_EQ(r.Register(nullptr).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(r.Register(std::make_unique<NamedCodec>("")).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(r.Names().empty());
}

TEST(CodecRegistryTest, GetOfAnUnknownNameIsNotFoundNamingTheKnownOnes) {
  CodecRegistry r = ThreeCodecs();
  absl::StatusOr<const Codec*> got = r.Get("delta");
  EXPECT_EQ(got.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(got.status().message(), HasSubstr("delta"));
  for (const char* known : {"alpha", "beta", "gamma"}) {
    EXPECT_THAT(got.status().message(), HasSubstr(known));
  }
}

TEST(CodecRegistryTest, NamesInRegistrationOrder) {
  EXPECT_THAT(ThreeCodecs().Names(), ElementsAre("alpha", "beta", "gamma"));
  EXPECT_TRUE(CodecRegistry().Names().empty());
}

TEST(CodecRegistryTest, NegotiatePicksTheFirstKnownAcceptedName) {
  CodecRegistry r = ThreeCodecs();
  NamedCodec fallback("fallback");
  EXPECT_EQ(r.Negotiate(std::vector<std::string>{"zeta", "gamma", "alpha"}, fallback).name(),
            "gamma");
  EXPECT_EQ(r.Negotiate(std::vector<std::string>{"beta"}, fallback).name(), "beta");
  // Any range of strings: string_views, C strings, a repeated proto field.
  EXPECT_EQ(r.Negotiate(std::vector<absl::string_view>{"alpha", "beta"}, fallback).name(), "alpha");
  EXPECT_EQ(r.Negotiate(std::array<const char*, 2>{"x", "beta"}, fallback).name(), "beta");
  rank::v1::RankRequest request;
  request.add_accept_codecs("nope");
  request.add_accept_codecs("gamma");
  EXPECT_EQ(r.Negotiate(request.accept_codecs(), fallback).name(), "gamma");
}

TEST(CodecRegistryTest, NegotiateFallsBackToTheDefault) {
  CodecRegistry r = ThreeCodecs();
  NamedCodec fallback("fallback");
  EXPECT_EQ(&r.Negotiate(std::vector<std::string>{}, fallback), &fallback);
  EXPECT_EQ(&r.Negotiate(std::vector<std::string>{"zeta", "", "ALPHA"}, fallback), &fallback);
  EXPECT_EQ(&CodecRegistry().Negotiate(std::vector<std::string>{"alpha"}, fallback), &fallback);
}

TEST(CodecRegistryTest, MovesKeepTheCodecs) {
  CodecRegistry r = ThreeCodecs();
  const Codec* beta = r.Find("beta");
  CodecRegistry moved = std::move(r);
  EXPECT_EQ(moved.Find("beta"), beta);
}

TEST(BuiltinCodecsTest, ProtobufRankbinAndRankbinZstdInThatOrder) {
  absl::StatusOr<CodecRegistry> r = MakeBuiltinCodecs(BuiltinCodecOptions{});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(r->Names(), ElementsAre("protobuf", "rankbin", "rankbin-zstd"));
  EXPECT_EQ(r->Find("protobuf")->body_kind(), BodyKind::kProtobufResult);
  EXPECT_EQ(r->Find("rankbin")->body_kind(), BodyKind::kOpaquePayload);
  EXPECT_EQ(r->Find("rankbin-zstd")->body_kind(), BodyKind::kOpaquePayload);
  for (const std::string& name : r->Names()) {
    EXPECT_EQ(r->Find(name)->name(), name);
    EXPECT_EQ(r->Find(name)->format_version(), 1u) << name;
  }
}

}  // namespace
}  // namespace rankwire
