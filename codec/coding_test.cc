// Tests of codec/coding.h: the one bounds-checked varint/fixed-width reader
// and writer every codec uses.
#include "codec/coding.h"

#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace rankwire::coding {
namespace {

using ::testing::HasSubstr;

std::string VarintBytes(uint64_t v) {
  char buf[kMaxVarint64Length];
  char* end = EncodeVarint64(buf, v);
  return std::string(buf, end);
}

std::string Hex(absl::string_view s) {
  std::string out;
  for (unsigned char c : s) {
    static constexpr char kDigits[] = "0123456789abcdef";
    out.push_back(kDigits[c >> 4]);
    out.push_back(kDigits[c & 15]);
  }
  return out;
}

// Every value at and around each 7-bit length boundary, 0 and UINT64_MAX.
std::vector<uint64_t> BoundaryValues() {
  std::vector<uint64_t> v = {0, 1, std::numeric_limits<uint64_t>::max(),
                             std::numeric_limits<uint64_t>::max() - 1};
  for (int bits = 7; bits < 64; bits += 7) {
    uint64_t edge = uint64_t{1} << bits;
    v.push_back(edge - 1);
    v.push_back(edge);
    v.push_back(edge + 1);
  }
  v.push_back(uint64_t{1} << 63);
  return v;
}

TEST(VarintTest, LengthAtEveryBoundary) {
  EXPECT_EQ(VarintLength(0), 1u);
  for (int bytes = 1; bytes <= 9; ++bytes) {
    const uint64_t last = (uint64_t{1} << (7 * bytes)) - 1;  // Largest of `bytes` bytes.
    EXPECT_EQ(VarintLength(last), static_cast<size_t>(bytes)) << last;
    EXPECT_EQ(VarintLength(last + 1), static_cast<size_t>(bytes + 1)) << last + 1;
  }
  EXPECT_EQ(VarintLength(uint64_t{1} << 63), 10u);
  EXPECT_EQ(VarintLength(std::numeric_limits<uint64_t>::max()), 10u);
  EXPECT_EQ(LengthPrefixedLength(0), 1u);
  EXPECT_EQ(LengthPrefixedLength(128), 130u);
}

TEST(VarintTest, EncodingIsLeb128) {
  EXPECT_EQ(Hex(VarintBytes(0)), "00");
  EXPECT_EQ(Hex(VarintBytes(127)), "7f");
  EXPECT_EQ(Hex(VarintBytes(128)), "8001");
  EXPECT_EQ(Hex(VarintBytes(300)), "ac02");
  EXPECT_EQ(Hex(VarintBytes(std::numeric_limits<uint64_t>::max())), "ffffffffffffffffff01");
}

TEST(VarintTest, RoundTripsEveryBoundaryWithItsLength) {
  for (uint64_t v : BoundaryValues()) {
    std::string bytes = VarintBytes(v);
    EXPECT_EQ(bytes.size(), VarintLength(v)) << v;
    Reader r(bytes, "test");
    EXPECT_EQ(r.Varint64("v"), v);
    EXPECT_TRUE(r.ok()) << r.status();
    EXPECT_TRUE(r.empty());
  }
}

TEST(VarintTest, RoundTripsRandomValuesBackToBack) {
  std::mt19937_64 rng(7);
  std::vector<uint64_t> values;
  for (int i = 0; i < 2000; ++i) values.push_back(rng() >> (rng() % 64));
  std::string buf(values.size() * kMaxVarint64Length, '\0');
  Writer w(buf.data(), buf.data() + buf.size());
  size_t expected = 0;
  for (uint64_t v : values) {
    w.PutVarint64(v);
    expected += VarintLength(v);
  }
  ASSERT_EQ(w.written(), expected);
  Reader r(absl::string_view(buf.data(), w.written()), "test");
  for (uint64_t v : values) ASSERT_EQ(r.Varint64("v"), v);
  EXPECT_TRUE(r.ok());
  EXPECT_TRUE(r.empty());
}

TEST(VarintTest, TenByteMaximumIsAccepted) {
  std::string max = "\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01";
  Reader r(max, "test");
  EXPECT_EQ(r.Varint64("v"), std::numeric_limits<uint64_t>::max());
  EXPECT_TRUE(r.ok());
  // Non-minimal encodings within 10 bytes are still valid LEB128.
  Reader padded(absl::string_view("\x80\x80\x00", 3), "test");
  EXPECT_EQ(padded.Varint64("v"), 0u);
  EXPECT_TRUE(padded.ok());
}

TEST(VarintTest, OverflowPast64BitsIsRejected) {
  // The tenth byte may only carry bit 63.
  for (unsigned char tenth : {0x02, 0x7f, 0x81}) {
    std::string bytes(9, '\xff');
    bytes.push_back(static_cast<char>(tenth));
    bytes.push_back('\x00');
    Reader r(bytes, "test");
    EXPECT_EQ(r.Varint64("big"), 0u) << int{tenth};
    EXPECT_EQ(r.status().code(), absl::StatusCode::kDataLoss) << int{tenth};
    EXPECT_THAT(r.status().message(), HasSubstr("big"));
  }
}

TEST(VarintTest, LongerThanTenBytesIsRejected) {
  std::string eleven(10, '\x80');
  eleven.push_back('\x00');
  Reader r(eleven, "test");
  r.Varint64("long");
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDataLoss);
}

TEST(VarintTest, TruncatedVarintIsDataLoss) {
  for (uint64_t v : BoundaryValues()) {
    std::string bytes = VarintBytes(v);
    for (size_t cut = 0; cut < bytes.size(); ++cut) {
      Reader r(absl::string_view(bytes.data(), cut), "test");
      EXPECT_EQ(r.Varint64("v"), 0u);
      EXPECT_EQ(r.status().code(), absl::StatusCode::kDataLoss) << v << " cut at " << cut;
      EXPECT_THAT(r.status().message(), HasSubstr("truncated varint"));
    }
  }
}

TEST(VarintTest, Varint32RejectsValuesOver32Bits) {
  std::string ok = VarintBytes(UINT32_MAX);
  Reader r(ok, "test");
  EXPECT_EQ(r.Varint32("u32"), UINT32_MAX);
  EXPECT_TRUE(r.ok());

  std::string big = VarintBytes(uint64_t{UINT32_MAX} + 1);
  Reader r2(big, "test");
  EXPECT_EQ(r2.Varint32("u32"), 0u);
  EXPECT_EQ(r2.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(r2.status().message(), HasSubstr("32 bits"));
}

TEST(ZigZagTest, MapsSmallMagnitudesToSmallCodes) {
  EXPECT_EQ(ZigZagEncode64(0), 0u);
  EXPECT_EQ(ZigZagEncode64(-1), 1u);
  EXPECT_EQ(ZigZagEncode64(1), 2u);
  EXPECT_EQ(ZigZagEncode64(-2), 3u);
  EXPECT_EQ(ZigZagEncode64(std::numeric_limits<int64_t>::max()),
            std::numeric_limits<uint64_t>::max() - 1);
  EXPECT_EQ(ZigZagEncode64(std::numeric_limits<int64_t>::min()),
            std::numeric_limits<uint64_t>::max());
}

TEST(ZigZagTest, RoundTrips) {
  std::vector<int64_t> values = {0,
                                 1,
                                 -1,
                                 63,
                                 -64,
                                 64,
                                 -65,
                                 std::numeric_limits<int64_t>::max(),
                                 std::numeric_limits<int64_t>::min()};
  std::mt19937_64 rng(11);
  for (int i = 0; i < 1000; ++i) values.push_back(static_cast<int64_t>(rng()));
  for (int64_t v : values) {
    EXPECT_EQ(ZigZagDecode64(ZigZagEncode64(v)), v);
    char buf[kMaxVarint64Length];
    Writer w(buf, buf + sizeof(buf));
    w.PutSignedVarint64(v);
    Reader r(absl::string_view(buf, w.written()), "test");
    EXPECT_EQ(r.SignedVarint64("s"), v);
    EXPECT_TRUE(r.ok());
  }
  // Small magnitudes of either sign take one byte.
  EXPECT_EQ(VarintLength(ZigZagEncode64(-64)), 1u);
  EXPECT_EQ(VarintLength(ZigZagEncode64(63)), 1u);
  EXPECT_EQ(VarintLength(ZigZagEncode64(64)), 2u);
}

TEST(FixedTest, LittleEndianLayout) {
  char buf[12];
  Writer w(buf, buf + sizeof(buf));
  w.PutFixed32(0x04030201u);
  w.PutFixed64(0x0c0b0a0908070605u);
  ASSERT_EQ(w.written(), 12u);
  EXPECT_EQ(Hex(absl::string_view(buf, 12)), "0102030405060708090a0b0c");
  EXPECT_EQ(DecodeFixed32(buf), 0x04030201u);
  EXPECT_EQ(DecodeFixed64(buf + 4), 0x0c0b0a0908070605u);

  Reader r(absl::string_view(buf, 12), "test");
  EXPECT_EQ(r.Fixed32("a"), 0x04030201u);
  EXPECT_EQ(r.Fixed64("b"), 0x0c0b0a0908070605u);
  EXPECT_TRUE(r.ok());
  EXPECT_TRUE(r.empty());
}

TEST(FixedTest, FloatsAndDoublesKeepTheirBits) {
  const uint32_t float_bits[] = {0x00000000, 0x80000000, 0x7f800000, 0xff800000,
                                 0x7fc00001, 0x00000001, 0x7f7fffff};
  const uint64_t double_bits[] = {0, uint64_t{1} << 63, 0x7ff0000000000000, 0x7ff8000000000123,
                                  1, 0x7fefffffffffffff};
  for (uint32_t bits : float_bits) {
    char buf[4];
    Writer w(buf, buf + 4);
    float f;
    std::memcpy(&f, &bits, 4);
    w.PutFloat(f);
    EXPECT_EQ(DecodeFixed32(buf), bits);
    Reader r(absl::string_view(buf, 4), "test");
    float back = r.Float("f");
    uint32_t back_bits;
    std::memcpy(&back_bits, &back, 4);
    EXPECT_EQ(back_bits, bits);
  }
  for (uint64_t bits : double_bits) {
    char buf[8];
    Writer w(buf, buf + 8);
    double d;
    std::memcpy(&d, &bits, 8);
    w.PutDouble(d);
    EXPECT_EQ(DecodeFixed64(buf), bits);
    Reader r(absl::string_view(buf, 8), "test");
    double back = r.Double("d");
    uint64_t back_bits;
    std::memcpy(&back_bits, &back, 8);
    EXPECT_EQ(back_bits, bits);
  }
}

TEST(FixedTest, ShortInputIsDataLoss) {
  for (size_t n = 0; n < 8; ++n) {
    std::string bytes(n, '\x01');
    if (n < 4) {
      Reader r(bytes, "test");
      EXPECT_EQ(r.Fixed32("f32"), 0u);
      EXPECT_EQ(r.status().code(), absl::StatusCode::kDataLoss);
      EXPECT_THAT(r.status().message(), HasSubstr("truncated fixed32 (f32)"));
    }
    Reader r(bytes, "test");
    EXPECT_EQ(r.Fixed64("f64"), 0u);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kDataLoss);
    EXPECT_THAT(r.status().message(), HasSubstr("truncated fixed64 (f64)"));
  }
  Reader r(absl::string_view(), "test");
  EXPECT_EQ(r.Byte("b"), 0);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDataLoss);
}

TEST(BytesTest, ViewsPointIntoTheInput) {
  const std::string data(
      "\x03"
      "abc"
      "\x00"
      "xy",
      7);
  Reader r(data, "test");
  absl::string_view abc = r.LengthPrefixed("s");
  EXPECT_EQ(abc, "abc");
  EXPECT_EQ(abc.data(), data.data() + 1);
  absl::string_view empty = r.LengthPrefixed("e");
  EXPECT_TRUE(empty.empty());
  EXPECT_EQ(r.Bytes(2, "xy"), "xy");
  EXPECT_TRUE(r.ok());
  EXPECT_TRUE(r.empty());
}

TEST(BytesTest, LengthPrefixedRejectsLengthsPastTheEnd) {
  // Exactly what remains is fine; one more byte is not.
  std::string exact =
      "\x03"
      "abc";
  Reader ok(exact, "test");
  EXPECT_EQ(ok.LengthPrefixed("s"), "abc");
  EXPECT_TRUE(ok.ok());

  std::string over =
      "\x04"
      "abc";
  Reader r(over, "test");
  EXPECT_TRUE(r.LengthPrefixed("item id").empty());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(r.status().message(), HasSubstr("item id"));

  // A length near 2^64 must not wrap around a pointer comparison.
  std::string huge = VarintBytes(std::numeric_limits<uint64_t>::max()) + "abc";
  Reader h(huge, "test");
  EXPECT_TRUE(h.LengthPrefixed("s").empty());
  EXPECT_EQ(h.status().code(), absl::StatusCode::kDataLoss);
  std::string almost = VarintBytes(std::numeric_limits<uint64_t>::max() - 2) + "abc";
  Reader a(almost, "test");
  a.Skip(std::numeric_limits<uint64_t>::max(), "skip");
  EXPECT_EQ(a.status().code(), absl::StatusCode::kDataLoss);
}

TEST(CountTest, RejectsCountsTheRemainingBytesCannotHold) {
  // After the count byte, 6 bytes remain.
  std::string data = std::string("\x03", 1) + "abcdef";
  {
    Reader r(data, "test");
    EXPECT_EQ(r.Count(2, "pairs"), 3u);  // 3 * 2 == 6: fits.
    EXPECT_TRUE(r.ok());
  }
  {
    Reader r(data, "test");
    EXPECT_EQ(r.Count(3, "triples"), 0u);  // 3 * 3 > 6.
    EXPECT_EQ(r.status().code(), absl::StatusCode::kDataLoss);
    EXPECT_THAT(r.status().message(), HasSubstr("triples"));
    EXPECT_THAT(r.status().message(), HasSubstr("count exceeds"));
  }
  {
    // A count near 2^64 with a large element size must not overflow.
    std::string huge = VarintBytes(std::numeric_limits<uint64_t>::max() / 2) + "abcdef";
    Reader r(huge, "test");
    EXPECT_EQ(r.Count(16, "items"), 0u);
    EXPECT_FALSE(r.ok());
  }
  {
    // min_bytes_each == 0 means elements may be empty: no bound.
    std::string big = VarintBytes(1000000);
    Reader r(big, "test");
    EXPECT_EQ(r.Count(0, "empties"), 1000000u);
    EXPECT_TRUE(r.ok());
  }
}

TEST(ReaderTest, FirstErrorIsStickyAndNamesFieldAndOffset) {
  // 10 bytes at payload offset 100: a fixed32, then a fixed64 that is cut.
  std::string data(10, '\x07');
  Reader r(data, "rankbin", 100);
  r.Fixed32("item position");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.offset(), 104u);
  EXPECT_EQ(r.Fixed64("item score"), 0u);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(r.status().message(), "rankbin: truncated fixed64 (item score) at offset 104");
  const absl::Status first = r.status();

  // Everything after the failure returns zero values and keeps the first error.
  EXPECT_TRUE(r.empty());
  EXPECT_EQ(r.remaining(), 0u);
  EXPECT_EQ(r.Varint64("later"), 0u);
  EXPECT_EQ(r.Fixed32("later"), 0u);
  EXPECT_EQ(r.Byte("later"), 0);
  EXPECT_TRUE(r.LengthPrefixed("later").empty());
  r.Fail("later", "semantic problem");
  r.FailWith(absl::ResourceExhaustedError("later"));
  EXPECT_EQ(r.status(), first);
}

TEST(ReaderTest, FailRecordsSemanticErrorsAtTheCurrentOffset) {
  std::string data = "\x05\x06\x07";
  Reader r(data, "envelope", 10);
  r.Byte("tag");
  r.Fail("field tag", "field number 0");
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(r.status().message(), "envelope: field number 0 (field tag) at offset 11");
  EXPECT_TRUE(r.empty());

  Reader r2(data, "x");
  r2.FailWith(absl::OkStatus());  // Not an error: ignored.
  EXPECT_TRUE(r2.ok());
  r2.FailWith(absl::ResourceExhaustedError("cap"));
  EXPECT_EQ(r2.status().code(), absl::StatusCode::kResourceExhausted);
  r2.Fail("y", "second");
  EXPECT_EQ(r2.status().code(), absl::StatusCode::kResourceExhausted);
}

TEST(WriterTest, WritesExactlyWhatTheLengthFunctionsSay) {
  const std::string s(200, 'q');
  const size_t size = VarintLength(300) + 1 + 4 + 8 + 4 + 8 + LengthPrefixedLength(s.size()) + 3;
  std::string buf(size, '\0');
  Writer w(buf.data(), buf.data() + buf.size());
  w.PutVarint64(300);
  w.PutByte(0xab);
  w.PutFixed32(1);
  w.PutFixed64(2);
  w.PutFloat(1.5f);
  w.PutDouble(-2.25);
  char* hole = w.Skip(0);
  w.PutLengthPrefixed(s);
  char* at = w.Skip(3);  // Filled after the fact, as an offset would be.
  std::memcpy(at, "end", 3);
  EXPECT_EQ(hole + LengthPrefixedLength(s.size()), at);
  EXPECT_EQ(w.written(), size);
  EXPECT_EQ(w.remaining(), 0u);

  Reader r(buf, "test");
  EXPECT_EQ(r.Varint64("a"), 300u);
  EXPECT_EQ(r.Byte("b"), 0xab);
  EXPECT_EQ(r.Fixed32("c"), 1u);
  EXPECT_EQ(r.Fixed64("d"), 2u);
  EXPECT_EQ(r.Float("e"), 1.5f);
  EXPECT_EQ(r.Double("f"), -2.25);
  EXPECT_EQ(r.LengthPrefixed("g"), s);
  EXPECT_EQ(r.Bytes(3, "h"), "end");
  EXPECT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r.empty());
}

// PutVarint32s stores two bytes for a small value whatever its length; the
// bytes must still be exactly those of one PutVarint64 per value, and
// nothing may land past the writer's end when the last value has one byte
// of room.
TEST(WriterTest, PutVarint32sWritesWhatPutVarint64WouldAndNoMore) {
  const std::vector<uint32_t> boundaries = {
      0, 1, 127, 128, 16383, 16384, (1u << 21) - 1, 1u << 21, (1u << 28) - 1, 1u << 28, UINT32_MAX};
  std::mt19937 rng(7);
  for (int round = 0; round < 200; ++round) {
    std::vector<uint32_t> values(round % 17);
    for (uint32_t& v : values) {
      v = round % 2 == 0 ? boundaries[rng() % boundaries.size()]
                         : static_cast<uint32_t>(rng() >> (rng() % 32));
    }
    size_t size = 0;
    for (uint32_t v : values) size += VarintLength(v);
    std::string want(size, '\0');
    Writer one(want.data(), want.data() + want.size());
    for (uint32_t v : values) one.PutVarint64(v);
    // Exactly the bytes needed, then a guard the writer must not touch.
    std::string got(size + 2, '\x5a');
    Writer many(got.data(), got.data() + size);
    many.PutVarint32s(values.data(), values.size());
    EXPECT_EQ(many.written(), size);
    EXPECT_EQ(got.substr(0, size), want);
    EXPECT_EQ(got.substr(size), "\x5a\x5a");
  }
}

}  // namespace
}  // namespace rankwire::coding
