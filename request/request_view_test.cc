// RequestView against the path it replaced: PrescanRequest, then protobuf's
// parser. On valid requests, request variants protobuf must accept (split,
// repeated and unpacked fields, map keys twice, unknown fields), hostile
// ones and thousands of random mutations of real requests, both must accept
// or refuse together, with the same message, and agree on every field.
#include "request/request_view.h"

#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "request/request_validator.h"
#include "workload/workload.h"

namespace rankwire {
namespace {

std::string Varint(uint64_t v) {
  std::string out;
  while (v >= 0x80) {
    out.push_back(static_cast<char>(v | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
  return out;
}
std::string Tag(uint32_t number, int wire_type) {
  return Varint((uint64_t{number} << 3) | static_cast<uint64_t>(wire_type));
}
std::string Delimited(uint32_t number, const std::string& body) {
  return Tag(number, 2) + Varint(body.size()) + body;
}
std::string Fixed32(uint32_t number, float v) {
  std::string out = Tag(number, 5);
  char b[4];
  std::memcpy(b, &v, 4);
  return out + std::string(b, 4);
}

// The old path: the prescan's verdict, then protobuf's.
absl::Status ReferenceParse(const std::string& bytes, const RequestLimits& limits,
                            rank::v1::RankRequest* out) {
  google::protobuf::io::ArrayInputStream input(bytes.data(), static_cast<int>(bytes.size()));
  if (absl::Status s = PrescanRequest(&input, limits); !s.ok()) return s;
  if (!out->ParseFromString(bytes)) {
    return absl::InvalidArgumentError(
        "request is not a valid rank.v1.RankRequest (or holds strings that are not UTF-8)");
  }
  return absl::OkStatus();
}

// Every field of `view` equals `proto`'s (maps compared as maps).
void ExpectSame(const rank::v1::RankRequest& proto, const RequestView& view) {
  EXPECT_EQ(view.request_id, proto.request_id());
  EXPECT_EQ(view.user_id, proto.user_id());
  EXPECT_EQ(view.scene, static_cast<int32_t>(proto.scene()));
  EXPECT_EQ(view.request_time_ms, proto.request_time_ms());
  EXPECT_EQ(view.top_n, proto.top_n());
  EXPECT_EQ(view.log_mode, static_cast<int32_t>(proto.log_mode()));
  ASSERT_EQ(view.accept_codecs.size(), static_cast<size_t>(proto.accept_codecs_size()));
  for (int i = 0; i < proto.accept_codecs_size(); ++i) {
    EXPECT_EQ(view.accept_codecs[i], proto.accept_codecs(i));
  }
  ASSERT_EQ(view.user_features.size(), proto.user_features().size());
  for (const auto& [k, v] : proto.user_features()) {
    const double* got = view.FindUserFeature(k);
    ASSERT_NE(got, nullptr) << k;
    EXPECT_EQ(std::memcmp(got, &v, 8), 0) << k;
  }
  ASSERT_EQ(view.context.size(), proto.context().size());
  for (const auto& [k, v] : proto.context()) {
    const absl::string_view* got = view.FindContext(k);
    ASSERT_NE(got, nullptr) << k;
    EXPECT_EQ(*got, v);
  }
  ASSERT_EQ(view.item_feature_names.size(), static_cast<size_t>(proto.item_feature_names_size()));
  ASSERT_EQ(view.n, static_cast<size_t>(proto.candidates_size()));
  for (size_t c = 0; c < view.n; ++c) {
    const rank::v1::Candidate& cand = proto.candidates(static_cast<int>(c));
    EXPECT_EQ(view.item_id[c], cand.item_id());
    EXPECT_EQ(view.recall_source[c], cand.recall_source());
    EXPECT_EQ(view.recall_rank[c], cand.recall_rank());
    ASSERT_EQ(view.feature_count[c], static_cast<uint32_t>(cand.features_size()));
    for (size_t f = 0; f < view.feature_names() && f < view.feature_count[c]; ++f) {
      const float want = cand.features(static_cast<int>(f));
      const float got = view.feature(f, c);
      EXPECT_EQ(std::memcmp(&want, &got, 4), 0) << c << " " << f;
    }
  }
}

void ExpectAgree(const std::string& bytes, const RequestLimits& limits = RequestLimits()) {
  rank::v1::RankRequest proto;
  const absl::Status want = ReferenceParse(bytes, limits, &proto);
  RequestView view;
  const absl::Status got = ParseRequestView(bytes, limits, &view);
  ASSERT_EQ(got.ok(), want.ok()) << "reference: " << want << " view: " << got;
  if (!want.ok()) {
    // Malformed wire data is refused by both; which of the two malformed
    // messages (a group, or not parseable) comes first may differ on
    // garbage, where the prescan's walk and the parser's part ways. Every
    // other refusal (a limit) has the same message.
    constexpr absl::string_view kMalformed = "request is not a valid rank.v1.RankRequest";
    if (absl::StartsWith(want.message(), kMalformed)) {
      EXPECT_TRUE(absl::StartsWith(got.message(), kMalformed)) << got;
    } else {
      EXPECT_EQ(std::string(got.message()), std::string(want.message()));
    }
    return;
  }
  ExpectSame(proto, view);
}

std::string Shipped(uint64_t sequence = 0, uint32_t candidates = 500) {
  workload::WorkloadOptions options;
  options.candidates = candidates;
  options.accept_codecs = {"rankbin", "protobuf"};
  return workload::WorkloadGenerator(options).Make(sequence).SerializeAsString();
}

TEST(RequestViewTest, WorkloadRequests) {
  for (uint64_t s = 0; s < 8; ++s) ExpectAgree(Shipped(s, 1 + 97 * s));
}

TEST(RequestViewTest, EmptyRequest) { ExpectAgree(""); }

TEST(RequestViewTest, FieldsSplitRepeatedAndUnpacked) {
  std::string candidate = Delimited(1, "sku-1") + Delimited(2, "bm25") + Tag(3, 0) + Varint(7);
  // Features: a packed run, an unpacked value, another packed run.
  std::string packed;
  for (float f : {1.5f, 2.0f}) {
    char b[4];
    std::memcpy(b, &f, 4);
    packed.append(b, 4);
  }
  candidate += Delimited(4, packed) + Fixed32(4, 3.25f) + Delimited(4, packed);
  // A later id wins; an unknown field of each wire type.
  candidate += Delimited(1, "sku-2") + Tag(9, 0) + Varint(1) + Tag(10, 1) + std::string(8, 'x') +
               Tag(11, 5) + std::string(4, 'y') + Delimited(12, "zz");
  std::string request = Delimited(1, "req-a") + Delimited(1, "req-b") + Tag(2, 0) + Varint(1) +
                        Delimited(7, "f1") + Delimited(8, candidate) + Delimited(7, "f2") +
                        Delimited(8, candidate) + Tag(9, 0) + Varint(2) + Delimited(3, "user") +
                        Tag(4, 0) + Varint(1234567890123);
  // Map entries: a key twice (the last wins), a missing value, a missing key.
  std::string value;
  double d = 0.5;
  value.resize(8);
  std::memcpy(value.data(), &d, 8);
  request += Delimited(5, Delimited(1, "a") + Tag(2, 1) + value);
  d = 0.75;
  std::memcpy(value.data(), &d, 8);
  request += Delimited(5, Delimited(1, "a") + Tag(2, 1) + value) + Delimited(5, Delimited(1, "b")) +
             Delimited(5, Tag(2, 1) + value);
  request += Delimited(6, Delimited(1, "k") + Delimited(2, "v1")) +
             Delimited(6, Delimited(2, "v2") + Delimited(1, "k")) + Delimited(6, "");
  // A known field with another wire type is an unknown field.
  request += Tag(1, 0) + Varint(5) + Tag(10, 5) + std::string(4, 'q');
  ExpectAgree(request);
}

TEST(RequestViewTest, RefusalsMatch) {
  const std::string shipped = Shipped(1, 50);
  // Groups, in the request and in a candidate.
  ExpectAgree(shipped + Tag(20, 3) + Tag(20, 4));
  ExpectAgree(Delimited(8, Tag(20, 3) + Tag(20, 4)));
  // Not UTF-8: an id, a feature name, a context value.
  ExpectAgree(Delimited(1, "\xc3\x28"));
  ExpectAgree(Delimited(7, "\xed\xa0\x80"));
  ExpectAgree(Delimited(6, Delimited(1, "k") + Delimited(2, "\xf4\x90\x80\x80")));
  ExpectAgree(Delimited(8, Delimited(1, "\xe0\x80\xaf")));
  // Valid UTF-8 of every length.
  ExpectAgree(Delimited(1, "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80 ok"));
  // Malformed: a truncated varint, a length past the end, tag 0, wire type 7,
  // a packed run that is not whole floats.
  ExpectAgree(shipped.substr(0, shipped.size() - 3));
  ExpectAgree(Tag(9, 0) + "\xff");
  ExpectAgree(Tag(1, 2) + Varint(100) + "abc");
  ExpectAgree(std::string("\x00", 1) + Delimited(1, "x"));
  ExpectAgree(Tag(30, 7) + "x");
  ExpectAgree(Delimited(8, Delimited(4, "abcde")));
  // Limits on the wire, before anything else.
  RequestLimits small;
  small.max_candidates = 3;
  small.max_item_features = 2;
  ExpectAgree(Shipped(2, 10), small);
  std::string unknowns;
  for (int i = 0; i < 100; ++i) unknowns += Tag(99, 0) + Varint(1);
  ExpectAgree(unknowns, small);
  ExpectAgree(unknowns + Tag(1, 6), small);  // The limit before the malformed tail.
}

// MUTATION_SEED and MUTATION_ROUNDS run other or more mutations (300,000
// over ten seeds agreed when this was written).
TEST(RequestViewTest, RandomMutationsAgree) {
  std::mt19937_64 rng(getenv("MUTATION_SEED") ? std::strtoull(getenv("MUTATION_SEED"), nullptr, 10)
                                              : 20261206);
  const int kRounds = getenv("MUTATION_ROUNDS") ? atoi(getenv("MUTATION_ROUNDS")) : 3000;
  const std::string base = Shipped(3, 40);
  RequestLimits limits;
  limits.max_candidates = 64;
  for (int round = 0; round < kRounds; ++round) {
    std::string bytes = base;
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits && !bytes.empty(); ++e) {
      const size_t at = rng() % bytes.size();
      switch (rng() % 4) {
        case 0:
          bytes[at] = static_cast<char>(rng());
          break;
        case 1:
          bytes.resize(at);
          break;
        case 2:
          bytes.insert(at, 1, static_cast<char>(rng()));
          break;
        default:
          bytes.erase(at, 1 + rng() % 8);
          break;
      }
    }
    SCOPED_TRACE(round);
    ExpectAgree(bytes, limits);
    if (HasFatalFailure()) return;
  }
}

TEST(RequestViewTest, Utf8Validator) {
  EXPECT_TRUE(IsValidUtf8(""));
  EXPECT_TRUE(IsValidUtf8("plain ascii that is longer than eight bytes"));
  EXPECT_TRUE(IsValidUtf8("\xf4\x8f\xbf\xbf"));   // U+10FFFF
  EXPECT_FALSE(IsValidUtf8("\xf4\x90\x80\x80"));  // Past U+10FFFF
  EXPECT_FALSE(IsValidUtf8("\xc0\xaf"));          // Overlong
  EXPECT_FALSE(IsValidUtf8("\xed\xb0\x80"));      // Surrogate
  EXPECT_FALSE(IsValidUtf8("abcdefgh\x80"));      // A lone continuation byte
  EXPECT_FALSE(IsValidUtf8("\xe2\x82"));          // Cut short
}

}  // namespace
}  // namespace rankwire
