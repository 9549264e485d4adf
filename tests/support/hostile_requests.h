// Requests a hostile or careless caller sends, shared by the unit tests of
// the response budget and the hostile-load integration tests.
//
// Thread safety: pure functions.
#ifndef RANKWIRE_TESTS_SUPPORT_HOSTILE_REQUESTS_H_
#define RANKWIRE_TESTS_SUPPORT_HOSTILE_REQUESTS_H_

#include <cstdint>

#include "rank/v1/rank.pb.h"

namespace rankwire::test {

// The amplification request: a 100 KB user_id copied into each of
// 1000 items' log lines, logs inline, protobuf codec (a ~100 KB request
// whose response would be ~100 MB).
rank::v1::RankRequest AmplificationRequest(uint64_t sequence = 0);

// A request that obeys every limit of the input contract but takes each to
// its maximum (256-byte ids, 256 features with 128-byte names, 512-byte
// context values, 64-byte recall sources), with pseudo-random (poorly
// compressible) bytes: the largest response a valid request can ask for.
rank::v1::RankRequest MaximalRequest(uint32_t candidates, rank::v1::LogMode log_mode,
                                     const char* codec, uint64_t seed = 1);

}  // namespace rankwire::test

#endif  // RANKWIRE_TESTS_SUPPORT_HOSTILE_REQUESTS_H_
