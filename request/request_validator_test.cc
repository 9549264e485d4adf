#include "request/request_validator.h"

#include <cmath>
#include <functional>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "gtest/gtest.h"
#include "workload/workload.h"

namespace rankwire {
namespace {

using ::testing::HasSubstr;

TEST(RequestValidatorTest, GeneratedRequestIsValid) {
  EXPECT_TRUE(ValidateRequest(workload::WorkloadGenerator({}).Make(0), {}).ok());
}

TEST(RequestValidatorTest, EachProblemIsNamed) {
  struct Case {
    std::function<void(rank::v1::RankRequest*)> mutate;
    std::string message;
  };
  const Case cases[] = {
      {[](auto* r) { r->clear_request_id(); }, "request_id is empty"},
      {[](auto* r) { r->set_request_id(std::string(300, 'x')); }, "request_id is 300 bytes"},
      {[](auto* r) { r->clear_candidates(); }, "no candidates"},
      {[](auto* r) { r->set_top_n(0); }, "top_n 0 is out of range [1, 500]"},
      {[](auto* r) { r->set_top_n(501); }, "top_n 501 is out of range [1, 500]"},
      {[](auto* r) { r->set_explain_items(101); }, "explain_items 101 exceeds the limit of 100"},
      {[](auto* r) { r->set_log_mode(static_cast<rank::v1::LogMode>(9)); },
       "log_mode 9 is not a known LogMode"},
      {[](auto* r) { r->set_item_feature_names(3, ""); }, "item_feature_names[3] is empty"},
      {[](auto* r) { r->set_item_feature_names(3, "price"); },
       "item feature \"price\" is named twice"},
      {[](auto* r) { (*r->mutable_user_features())["x"] = NAN; }, "user_features[\"x\"] is nan"},
      {[](auto* r) { r->mutable_candidates(5)->clear_item_id(); },
       "candidates[5].item_id is empty"},
      {[](auto* r) { r->mutable_candidates(5)->set_item_id(std::string(257, 'i')); },
       "candidates[5].item_id is 257 bytes"},
      {[](auto* r) { r->mutable_candidates(9)->set_item_id(r->candidates(1).item_id()); },
       "duplicate item id \""},
      {[](auto* r) { r->mutable_candidates(2)->add_features(1); },
       "candidates[2] has 19 features but item_feature_names names 18"},
      {[](auto* r) { r->mutable_candidates(2)->set_features(0, -INFINITY); },
       "candidates[2].features[0] (price) is -inf"},
      // Enums, ranges.
      {[](auto* r) { r->set_scene(static_cast<rank::v1::Scene>(99)); },
       "scene 99 is not a known Scene"},
      {[](auto* r) { r->mutable_candidates(4)->set_recall_rank(0); },
       "candidates[4].recall_rank is 0; it is 1-based"},
      {[](auto* r) { r->set_request_time_ms(-1); }, "request_time_ms -1 is negative"},
      // Every string copied into each item has a byte limit.
      {[](auto* r) { r->set_user_id(std::string(100 * 1024, 'u')); },
       "user_id is 102400 bytes; the limit is 256"},
      {[](auto* r) { r->mutable_candidates(7)->set_recall_source(std::string(65, 's')); },
       "candidates[7].recall_source is 65 bytes; the limit is 64"},
      {[](auto* r) { r->set_item_feature_names(17, std::string(1 << 20, 'f')); },
       "item_feature_names[17] is 1048576 bytes; the limit is 128"},
      {[](auto* r) { (*r->mutable_context())["query"] = std::string(8 << 20, 'q'); },
       "context[\"query\"] is 8388608 bytes; the limit is 512"},
      {[](auto* r) { (*r->mutable_context())[std::string(65, 'k')] = "v"; },
       "is 65 bytes; the limit is 64"},
      {[](auto* r) { (*r->mutable_user_features())[std::string(129, 'k')] = 1; },
       "is 129 bytes; the limit is 128"},
      {[](auto* r) { r->add_accept_codecs(std::string(65, 'c')); },
       "accept_codecs[0] is 65 bytes; the limit is 64"},
      {[](auto* r) {
         for (int i = 0; i < 17; ++i) r->add_accept_codecs("rankbin");
       },
       "17 accept_codecs exceed the limit of 16"},
      {[](auto* r) {
         for (int i = 0; i < 65; ++i) (*r->mutable_context())[absl::StrCat("k", i)] = "v";
       },
       "context entries exceed the limit of 64"},
      {[](auto* r) {
         for (int i = 0; i < 257; ++i) (*r->mutable_user_features())[absl::StrCat("u", i)] = 1;
       },
       "user features exceed the limit of 256"},
  };
  for (const Case& c : cases) {
    rank::v1::RankRequest request = workload::WorkloadGenerator({}).Make(0);
    c.mutate(&request);
    absl::Status s = ValidateRequest(request, {});
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << c.message;
    EXPECT_THAT(std::string(s.message()), HasSubstr(c.message));
  }
}

TEST(RequestValidatorTest, LimitsAreConfigurable) {
  RequestLimits limits;
  limits.max_candidates = 499;
  absl::Status s = ValidateRequest(workload::WorkloadGenerator({}).Make(0), limits);
  EXPECT_THAT(std::string(s.message()), HasSubstr("500 candidates exceed the limit of 499"));
  limits = {};
  limits.max_item_features = 10;
  s = ValidateRequest(workload::WorkloadGenerator({}).Make(0), limits);
  EXPECT_THAT(std::string(s.message()), HasSubstr("18 item features exceed the limit of 10"));
}

TEST(RequestValidatorTest, LimitsAtTheirMaximumAreValid) {
  rank::v1::RankRequest request = workload::WorkloadGenerator({}).Make(0);
  request.set_request_id(std::string(256, 'r'));
  request.set_user_id(std::string(256, 'u'));
  request.set_request_time_ms(0);
  request.set_scene(rank::v1::SCENE_CART);
  (*request.mutable_context())["query"] = std::string(512, 'q');
  request.mutable_candidates(0)->set_recall_source(std::string(64, 's'));
  request.mutable_candidates(0)->set_item_id(std::string(256, 'i'));
  request.set_item_feature_names(0, std::string(128, 'f'));
  EXPECT_TRUE(ValidateRequest(request, {}).ok()) << ValidateRequest(request, {});
}

TEST(RequestValidatorTest, UnknownItemFeaturesAreListedInRequestOrder) {
  rank::v1::RankRequest request = workload::WorkloadGenerator({}).Make(0);
  request.set_item_feature_names(3, "reveiw_count");
  request.set_item_feature_names(1, "discount");
  absl::flat_hash_set<std::string> known(workload::ItemFeatureNames().begin(),
                                         workload::ItemFeatureNames().end());
  EXPECT_THAT(UnknownItemFeatures(OwnedRequestView(request), known),
              ::testing::ElementsAre("discount", "reveiw_count"));
  EXPECT_TRUE(UnknownItemFeatures(OwnedRequestView(workload::WorkloadGenerator({}).Make(0)), known)
                  .empty());
}

// Every field at its limit, with distinct keys and ids: the largest valid
// request (features packed, as protobuf writes them).
rank::v1::RankRequest MaximalRequest(const RequestLimits& l) {
  rank::v1::RankRequest r;
  auto text = [](char c, uint32_t n, uint32_t i) {
    std::string s(n, c);
    const std::string tag = absl::StrCat(i);
    s.replace(0, tag.size(), tag);
    return s;
  };
  r.set_request_id(std::string(l.max_id_bytes, 'r'));
  r.set_user_id(std::string(l.max_id_bytes, 'u'));
  r.set_scene(rank::v1::SCENE_CART);
  r.set_request_time_ms(INT64_MAX);
  r.set_top_n(l.max_candidates);
  r.set_log_mode(rank::v1::LOG_MODE_STORE);
  r.set_explain_items(l.max_explain_items);
  for (uint32_t i = 0; i < l.max_user_features; ++i) {
    (*r.mutable_user_features())[text('f', l.max_feature_name_bytes, i)] = 0.5;
  }
  for (uint32_t i = 0; i < l.max_context_entries; ++i) {
    (*r.mutable_context())[text('k', l.max_context_key_bytes, i)] =
        std::string(l.max_context_value_bytes, 'v');
  }
  for (uint32_t i = 0; i < l.max_item_features; ++i) {
    r.add_item_feature_names(text('n', l.max_feature_name_bytes, i));
  }
  for (uint32_t i = 0; i < l.max_accept_codecs; ++i) {
    r.add_accept_codecs(text('c', l.max_codec_name_bytes, i));
  }
  for (uint32_t c = 0; c < l.max_candidates; ++c) {
    rank::v1::Candidate* candidate = r.add_candidates();
    candidate->set_item_id(text('i', l.max_id_bytes, c));
    candidate->set_recall_source(std::string(l.max_recall_source_bytes, 's'));
    candidate->set_recall_rank(UINT32_MAX);
    for (uint32_t f = 0; f < l.max_item_features; ++f) candidate->add_features(1.5f);
  }
  return r;
}

TEST(MaxRequestBytesTest, HoldsTheLargestValidRequestAndNotMuchMore) {
  for (uint32_t candidates : {1u, 1000u, 5000u}) {
    RequestLimits limits;
    limits.max_candidates = candidates;
    const rank::v1::RankRequest maximal = MaximalRequest(limits);
    ASSERT_TRUE(ValidateRequest(maximal, limits).ok()) << ValidateRequest(maximal, limits);
    const size_t bytes = maximal.ByteSizeLong();
    EXPECT_LE(bytes, MaxRequestBytes(limits)) << candidates;
    // The bound allows unpacked features (a byte more per float) and 64 KiB.
    EXPECT_LE(MaxRequestBytes(limits), bytes + candidates * 260 + (64 << 10) + 4096) << candidates;
  }
}

absl::Status Prescan(const std::string& bytes, const RequestLimits& limits = {}) {
  google::protobuf::io::ArrayInputStream input(bytes.data(), static_cast<int>(bytes.size()));
  return PrescanRequest(&input, limits);
}

TEST(PrescanRequestTest, AValidRequestPassesAndEveryCountedFieldIsNamed) {
  RequestLimits limits;
  EXPECT_TRUE(Prescan(workload::WorkloadGenerator({}).Make(0).SerializeAsString()).ok());
  EXPECT_TRUE(Prescan(MaximalRequest(limits).SerializeAsString(), limits).ok());
  struct Case {
    std::function<void(rank::v1::RankRequest*)> add_one;
    std::string message;
  };
  const Case cases[] = {
      {[](auto* r) { r->add_candidates(); },
       "1001 candidates exceed the limit of 1000 (--max_candidates)"},
      {[](auto* r) { r->add_item_feature_names("x"); },
       "257 item features exceed the limit of 256"},
      {[](auto* r) { (*r->mutable_user_features())["x"] = 1; },
       "257 user features exceed the limit of 256"},
      {[](auto* r) { (*r->mutable_context())["x"] = "y"; },
       "65 context entries exceed the limit of 64"},
      {[](auto* r) { r->add_accept_codecs("x"); }, "17 accept_codecs exceed the limit of 16"},
  };
  for (const Case& c : cases) {
    rank::v1::RankRequest request = MaximalRequest(limits);
    c.add_one(&request);
    const absl::Status s = Prescan(request.SerializeAsString(), limits);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << c.message;
    EXPECT_THAT(std::string(s.message()), HasSubstr(c.message));
  }
}

TEST(PrescanRequestTest, EmptyCandidatesAreCountedBeforeAnyParse) {
  // Two bytes each on the wire (the amplification a parse would pay for).
  std::string bytes = "\x0a\x01r";
  for (int i = 0; i < 500000; ++i) bytes += std::string("\x42\x00", 2);
  const absl::Status s = Prescan(bytes);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("500000 candidates exceed the limit of 1000"));
}

TEST(PrescanRequestTest, UnknownFieldsAndWrongWireTypesAreBounded) {
  const std::string valid = workload::WorkloadGenerator({}).Make(0).SerializeAsString();
  const uint32_t max_unknown = MaxUnknownRequestFields(RequestLimits{});
  EXPECT_EQ(max_unknown, 64u + 16u * 1000u);
  RequestLimits wide;
  wide.max_candidates = 5000;  // Room for 16 new fields per candidate here too.
  EXPECT_EQ(MaxUnknownRequestFields(wide), 64u + 16u * 5000u);
  std::string unknown = valid;
  for (uint32_t i = 0; i < max_unknown; ++i) unknown += std::string("\x78\x01", 2);
  EXPECT_TRUE(Prescan(unknown).ok());  // Field 15, varint: a newer client's.
  unknown += std::string("\x78\x01", 2);
  EXPECT_THAT(std::string(Prescan(unknown).message()),
              HasSubstr("16065 unknown fields exceed the limit of 16064"));
  // request_id (field 1) as a varint is an unknown field to the parser too.
  std::string mistyped = valid;
  for (uint32_t i = 0; i <= max_unknown; ++i) mistyped += std::string("\x08\x01", 2);
  EXPECT_EQ(Prescan(mistyped).code(), absl::StatusCode::kInvalidArgument);
  // Groups are not part of rank.v1, at the top or in a candidate.
  EXPECT_EQ(Prescan(valid + std::string("\x7b\x7c", 2)).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Prescan(valid + std::string("\x42\x02\x7b\x7c", 4)).code(),
            absl::StatusCode::kInvalidArgument);
  // Truncated data is the parser's to report.
  EXPECT_TRUE(Prescan(valid.substr(0, valid.size() - 3)).ok());
}

// Unknown fields inside candidates are kept by the parser too (an object
// each): they count against the same bound. A newer client that adds one
// field to every candidate stays well inside it.
// `request` serialized with each candidate's bytes made by `candidate`.
std::string WithCandidates(
    const rank::v1::RankRequest& request,
    const std::function<std::string(const rank::v1::Candidate&)>& candidate) {
  rank::v1::RankRequest rest = request;
  rest.clear_candidates();
  std::string bytes = rest.SerializeAsString();
  for (const rank::v1::Candidate& c : request.candidates()) {
    const std::string body = candidate(c);
    bytes += '\x42';  // Field 8, length-delimited.
    google::protobuf::io::StringOutputStream out(&bytes);
    google::protobuf::io::CodedOutputStream coded(&out);
    coded.WriteVarint32(static_cast<uint32_t>(body.size()));
    coded.WriteRaw(body.data(), static_cast<int>(body.size()));
  }
  return bytes;
}

TEST(PrescanRequestTest, UnknownFieldsInsideCandidatesAreCounted) {
  const rank::v1::RankRequest request = workload::WorkloadGenerator({}).Make(0);
  auto with_unknown_per_candidate = [&](int per_candidate) {
    return WithCandidates(request, [per_candidate](const rank::v1::Candidate& c) {
      std::string body = c.SerializeAsString();
      for (int i = 0; i < per_candidate; ++i) body += std::string("\x2a\x00", 2);  // Field 5.
      return body;
    });
  };
  rank::v1::RankRequest parsed;
  ASSERT_TRUE(parsed.ParseFromString(with_unknown_per_candidate(1)));
  EXPECT_TRUE(Prescan(with_unknown_per_candidate(1)).ok());  // 500 candidates.
  // A newer client's 16 new fields on each of 500 candidates fit; 33 do not.
  EXPECT_TRUE(Prescan(with_unknown_per_candidate(16)).ok());
  const absl::Status s = Prescan(with_unknown_per_candidate(33));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("16500 unknown fields exceed the limit of 16064"));
  // Known fields in either encoding are not unknown: unpacked features.
  const std::string unpacked = WithCandidates(request, [](const rank::v1::Candidate& c) {
    rank::v1::Candidate rest = c;
    rest.clear_features();
    std::string body = rest.SerializeAsString();
    for (float f : c.features()) {
      body += '\x25';  // Field 4, fixed32.
      body.append(reinterpret_cast<const char*>(&f), 4);
    }
    return body;
  });
  ASSERT_TRUE(parsed.ParseFromString(unpacked));
  EXPECT_EQ(parsed.candidates(3).features_size(), request.candidates(3).features_size());
  EXPECT_TRUE(Prescan(unpacked).ok());
}

}  // namespace
}  // namespace rankwire
