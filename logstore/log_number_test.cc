// EncodeLogNumbers (the batch coder the log writers use; AVX-512 or AVX2
// where the CPU has it) writes exactly the bytes EncodeLogNumber writes for
// each value, in order, for batches of every length and for every kind of
// value: each lane takes a vector path or falls back to the scalar one, and
// they must agree. The batch tests run once per path this CPU has.
// log_record_test checks that EncodeLogNumber's bytes render as SixDigits
// does.
#include "logstore/log_number.h"

#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/support/log_test_util.h"

namespace rankwire::logstore {
namespace {

using test_util::Mix;

std::string OneByOne(const std::vector<double>& values) {
  std::string out(values.size() * kMaxLogNumberBytes + 16, '\0');
  char* p = out.data();
  for (double v : values) p = EncodeLogNumber(v, p);
  out.resize(static_cast<size_t>(p - out.data()));
  return out;
}

// In a buffer of exactly the room EncodeLogNumbers requires (a sanitizer
// build sees a write past it; the fuzz target does the same).
std::string Batched(const std::vector<double>& values) {
  const size_t room = values.size() * kMaxLogNumberBytes;
  std::unique_ptr<char[]> out(new char[room > 0 ? room : 1]);
  const char* end = EncodeLogNumbers(values.data(), values.size(), out.get());
  return std::string(out.get(), static_cast<size_t>(end - out.get()));
}

// A value of kind `kind` from the random `state`: what a log line holds
// (counts, prices, rates, scores, contributions of either sign) and what a
// hostile or broken producer could hand over.
double Value(uint64_t state, int kind) {
  const double unit = double(state >> 11) * 0x1.0p-53;
  const double sign = (state & 1) ? -1 : 1;
  switch (kind) {
    case 0: {  // Any bit pattern: subnormals, inf, nan, huge, tiny.
      double v;
      std::memcpy(&v, &state, sizeof v);
      return v;
    }
    case 1:  // The ranker's range, both signs.
      return std::pow(10.0, unit * 16 - 8) * sign;
    case 2:  // Whole numbers, some past 10^6.
      return std::floor(unit * 3e6) * sign;
    case 3:  // Short decimals (prices, rates).
      return std::round(unit * 100000) / 100 * sign;
    case 4:  // Floats widened, as item features are.
      return static_cast<double>(static_cast<float>(unit * 10));
    case 5: {  // Near a six-digit rounding tie and the 999999.5 boundary,
               // inside and just outside the coders' margins (1e-7 of a
               // sixth digit at a tie, 1e-6 at 999999.5).
      double n = double(99999 + (state >> 8) % 900001);
      const int k = int((state >> 30) % 30) - 20;
      const double step = double(int64_t((state >> 40) % 2001) - 1000);
      double nudge = step * 1e-12;  // well inside the tie margin
      switch ((state >> 52) % 3) {
        case 1:  // +-3e-7: across the tie margin
          nudge = step * 3e-10;
          break;
        case 2:  // 999999.5 +-3e-6: across its margin
          n = 999999;
          nudge = step * 3e-9;
          break;
        default:
          break;
      }
      return (n + 0.5 + nudge) * std::pow(10.0, k) * sign;
    }
    case 6: {  // Powers of ten and their neighbours, across the range.
      const double p = std::pow(10.0, int((state >> 8) % 36) - 20);
      const double choices[] = {p, std::nextafter(p, 0.0), std::nextafter(p, 1e300), p * 0.9999995,
                                p * 1.0000005};
      return choices[(state >> 50) % 5] * sign;
    }
    default:  // Zeros of both signs, infinities, nan.
      return std::array<double, 5>{0.0, -0.0, std::numeric_limits<double>::infinity(),
                                   -std::numeric_limits<double>::infinity(),
                                   std::nan("")}[(state >> 8) % 5];
  }
}

// Every path this CPU has, narrowest first.
std::vector<LogNumberPath> PathsHere() {
  LimitLogNumberPath(LogNumberPath::kAvx512);
  const LogNumberPath widest = ActiveLogNumberPath();
  std::vector<LogNumberPath> paths;
  for (int p = 0; p <= static_cast<int>(widest); ++p)
    paths.push_back(static_cast<LogNumberPath>(p));
  return paths;
}

// Runs the batch tests on one path; the cap is lifted again afterwards.
class LogNumberPathTest : public ::testing::TestWithParam<LogNumberPath> {
 protected:
  void SetUp() override {
    LimitLogNumberPath(GetParam());
    ASSERT_EQ(ActiveLogNumberPath(), GetParam());
  }
  void TearDown() override { LimitLogNumberPath(LogNumberPath::kAvx512); }
};

INSTANTIATE_TEST_SUITE_P(EveryPathHere, LogNumberPathTest, ::testing::ValuesIn(PathsHere()),
                         [](const ::testing::TestParamInfo<LogNumberPath>& info) {
                           return std::string(LogNumberPathName(info.param));
                         });

TEST_P(LogNumberPathTest, BatchesOfEveryLengthMatchOneByOne) {
  uint64_t state = 11;
  for (size_t length = 0; length <= 70; ++length) {
    for (int round = 0; round < 200; ++round) {
      std::vector<double> values(length);
      for (double& v : values) {
        state = Mix(state);
        v = Value(state, int(state >> 60) % 8);
      }
      ASSERT_EQ(Batched(values), OneByOne(values)) << "length " << length << " round " << round;
    }
  }
}

TEST_P(LogNumberPathTest, TenMillionValuesOfEachKindMatchOneByOne) {
  for (int kind = 0; kind < 8; ++kind) {
    uint64_t state = 1000 + kind;
    std::vector<double> values(4096);
    for (int block = 0; block < 2500 / (kind == 7 ? 50 : 1); ++block) {
      for (double& v : values) {
        state = Mix(state);
        v = Value(state, kind);
      }
      ASSERT_EQ(Batched(values), OneByOne(values)) << "kind " << kind << " block " << block;
    }
  }
}

TEST_P(LogNumberPathTest, WholeNumbersMatchOneByOne) {
  std::vector<double> values;
  for (int i = 0; i < 2000000; ++i) values.push_back(i % 5 == 1 ? -double(i) : double(i));
  EXPECT_EQ(Batched(values), OneByOne(values));
}

TEST(LogNumberTest, ReadBackGivesTheValueSixDigitsShows) {
  const double values[] = {0.0, -0.0, 0.123456, -4.5, 1e-20, 3e15, 999999.5, 78.7};
  for (double v : values) {
    std::string slot;
    AppendLogNumber(v, &slot);
    coding::Reader in(slot, "slot");
    absl::StatusOr<double> read = ReadLogNumber(in);
    ASSERT_TRUE(read.ok()) << read.status();
    EXPECT_EQ(std::string(absl::AlphaNum(absl::SixDigits(*read)).Piece()),
              std::string(absl::AlphaNum(absl::SixDigits(v)).Piece()))
        << v;
    EXPECT_TRUE(in.empty());
    // Every cut of the slot is DataLoss.
    for (size_t n = 0; n < slot.size(); ++n) {
      coding::Reader cut(absl::string_view(slot).substr(0, n), "slot");
      EXPECT_EQ(ReadLogNumber(cut).status().code(), absl::StatusCode::kDataLoss) << v << " " << n;
    }
  }
}

// The cap works both ways, and a vector path runs where the CPU has one
// (this test is skipped, visibly, where it has none: only the scalar path
// is tested there).
TEST(LogNumberTest, TheWidestPathRunsUnlessCapped) {
  const std::vector<LogNumberPath> paths = PathsHere();
  RecordProperty("log_number_paths", static_cast<int>(paths.size()));
  if (paths.size() == 1) GTEST_SKIP() << "no AVX2 or AVX-512 here: only the scalar path is tested";
  LimitLogNumberPath(LogNumberPath::kScalar);
  EXPECT_EQ(ActiveLogNumberPath(), LogNumberPath::kScalar);
  LimitLogNumberPath(LogNumberPath::kAvx512);
  EXPECT_EQ(ActiveLogNumberPath(), paths.back());
  EXPECT_NE(ActiveLogNumberPath(), LogNumberPath::kScalar);
}

}  // namespace
}  // namespace rankwire::logstore
