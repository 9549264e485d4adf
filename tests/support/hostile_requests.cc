#include "tests/support/hostile_requests.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "workload/workload.h"

namespace rankwire::test {
namespace {

// `n` printable bytes from a small xorshift generator: ids and names that
// share no long runs, so zstd cannot fold them away.
std::string RandomText(uint64_t* state, size_t n) {
  static constexpr char kAlphabet[] =
      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-";
  std::string out(n, ' ');
  for (char& c : out) {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    c = kAlphabet[*state % (sizeof(kAlphabet) - 1)];
  }
  return out;
}

}  // namespace

rank::v1::RankRequest AmplificationRequest(uint64_t sequence) {
  workload::WorkloadOptions options;
  options.candidates = 1000;
  options.log_mode = rank::v1::LOG_MODE_INLINE;
  options.accept_codecs = {"protobuf"};
  rank::v1::RankRequest request = workload::WorkloadGenerator(options).Make(sequence);
  request.set_user_id(std::string(100 * 1024, 'u'));
  return request;
}

rank::v1::RankRequest MaximalRequest(uint32_t candidates, rank::v1::LogMode log_mode,
                                     const char* codec, uint64_t seed) {
  workload::WorkloadOptions options;
  options.candidates = candidates;
  options.log_mode = log_mode;
  options.accept_codecs = {codec};
  rank::v1::RankRequest request = workload::WorkloadGenerator(options).Make(seed);
  uint64_t state = seed * 0x9e3779b97f4a7c15ull + 1;
  request.set_request_id(RandomText(&state, 256));
  request.set_user_id(RandomText(&state, 256));
  for (const char* key : {"query", "device", "hour_of_day", "city_tier"}) {
    (*request.mutable_context())[key] = RandomText(&state, 512);
  }
  // The workload's 18 known features keep their names; the rest of the
  // 256 are 128-byte names the model does not know.
  const int known = request.item_feature_names_size();
  for (int j = known; j < 256; ++j) {
    request.add_item_feature_names(absl::StrCat(j, "_", RandomText(&state, 124)));
  }
  for (int i = 0; i < request.candidates_size(); ++i) {
    rank::v1::Candidate* c = request.mutable_candidates(i);
    c->set_item_id(absl::StrCat(i, "_", RandomText(&state, 250)));
    c->set_recall_source(RandomText(&state, 64));
    for (int j = known; j < 256; ++j) {
      c->add_features(static_cast<float>(state % 100000) / 7.0f + j);
      state = state * 6364136223846793005ull + 1442695040888963407ull;
    }
  }
  return request;
}

}  // namespace rankwire::test
