// Structured log records (logstore/format/log_record.h) are faithful: the text a
// reader gets back is byte-identical to the line the ranker formats inline,
// for EVERY item of real ranker output, through the in-process store and a
// real redis-server; the number coding renders exactly what SixDigits
// renders for any double; corrupt values give DataLoss, never a crash.
#include "logstore/format/log_record.h"

#include <cmath>
#include <cstring>
#include <future>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "logstore/format/log_value.h"
#include "logstore/log_store.h"
#include "tests/support/log_test_util.h"

namespace rankwire::logstore {
namespace {

using test_util::GetReceipt;
using test_util::Mix;

std::string SixDigits(double v) { return std::string(absl::AlphaNum(absl::SixDigits(v)).Piece()); }

// The text one number slot renders to.
std::string RoundTrip(double v) {
  LogRecordBuilder b;
  b.Literal("<");
  b.Number(v);
  b.Literal(">");
  std::string record = b.FinishRecord();
  absl::StatusOr<std::string> text = RenderLogRecord(b.Layout(), "id", record);
  if (!text.ok()) return absl::StrCat("error: ", text.status().message());
  return text->substr(1, text->size() - 2);
}

TEST(LogRecordNumberTest, EdgeValuesRenderAsSixDigitsDoes) {
  const double inf = std::numeric_limits<double>::infinity();
  const double values[] = {0.0,
                           -0.0,
                           1.0,
                           -1.0,
                           0.5,
                           123456.5,
                           999999.5,
                           999999.4999,
                           0.0001,
                           0.00001,
                           1e-5,
                           1.5e-5,
                           99999.95,
                           100000,
                           1e6,
                           1234567,
                           1e-18,
                           9.99999e-19,
                           1e-300,
                           5e-324,
                           1e12,
                           1e15,
                           1e300,
                           -1e300,
                           inf,
                           -inf,
                           std::nan(""),
                           0.1,
                           0.2,
                           0.3,
                           1.0 / 3,
                           2.0 / 3,
                           78.7f,
                           0.05f,
                           4.5f,
                           99999.95,
                           9999995e-7,
                           999999.49999999,
                           0.0999999949999,
                           0.123456789,
                           -3.2,
                           1.35,
                           14.5 * 0.0312f};
  for (double v : values) EXPECT_EQ(RoundTrip(v), SixDigits(v)) << v;
}

TEST(LogRecordNumberTest, AMillionRandomDoublesRenderAsSixDigitsDoes) {
  uint64_t state = 42;
  for (int i = 0; i < 1000000; ++i) {
    state = Mix(state);
    double v;
    if (i % 2 == 0) {
      // Any bit pattern: every exponent, subnormals, inf, nan.
      std::memcpy(&v, &state, sizeof v);
    } else {
      // The ranker's range: magnitudes 1e-8..1e8, both signs.
      const double unit = double(state >> 11) * 0x1.0p-53;
      v = std::pow(10.0, unit * 16 - 8) * ((state & 1) ? -1 : 1);
    }
    const std::string want = SixDigits(v);
    const std::string got = RoundTrip(v);
    ASSERT_EQ(got, want) << "bits " << state;
  }
}

// Whole numbers below 10^6 take their own path in the encoder (no
// scaling), and the decimal exponent is picked by comparing with a table of
// powers of ten: every whole number, and every power of ten in the decimal
// range with its neighbours, must render as SixDigits does.
TEST(LogRecordNumberTest, WholeNumbersAndPowersOfTenRenderAsSixDigitsDoes) {
  for (int i = 0; i < 1000000; ++i) {
    const double v = i % 7 == 3 ? -double(i) : double(i);
    ASSERT_EQ(RoundTrip(v), SixDigits(v)) << v;
  }
  for (int k = -19; k <= 13; ++k) {
    const double p = std::pow(10.0, k);
    for (double v : {p, std::nextafter(p, 0.0), std::nextafter(p, 1e300), p * 0.9999995,
                     p * 1.0000005, p + 0.5, p - 0.5}) {
      ASSERT_EQ(RoundTrip(v), SixDigits(v)) << v;
      ASSERT_EQ(RoundTrip(-v), SixDigits(-v)) << -v;
    }
  }
}

TEST(LogRecordNumberTest, ValuesNearARoundingTieRenderAsSixDigitsDoes) {
  // Where six-digit rounding is decided by the last bits: n.5 x 10^k and
  // its neighbours, including the 999999.5 -> 1e+06 boundary.
  uint64_t state = 7;
  for (int i = 0; i < 300000; ++i) {
    state = Mix(state);
    const double n = double(99999 + state % 900001);  // 99999..999999
    const int k = int((state >> 20) % 30) - 20;
    const double nudge = double(int64_t((state >> 40) % 2001) - 1000) * 1e-12;
    const double v = (n + 0.5 + nudge) * std::pow(10.0, k) * ((state >> 62) ? 1 : -1);
    ASSERT_EQ(RoundTrip(v), SixDigits(v)) << v;
    const double next = std::nextafter(v, 0.0);
    ASSERT_EQ(RoundTrip(next), SixDigits(next)) << next;
  }
}

TEST(LogRecordNumberTest, SixDigitValuesTakeAtMostFourBytes) {
  std::string out;
  AppendLogNumber(0.123456789, &out);
  EXPECT_LE(out.size(), 4u);
  out.clear();
  AppendLogNumber(4.5, &out);
  EXPECT_LE(out.size(), 2u);
  out.clear();
  AppendLogNumber(0.0, &out);
  EXPECT_EQ(out.size(), 1u);
}

// The builder's batched paths (held numbers around ints and strings, runs
// of labelled numbers of every length around the 64 it holds,
// FinishRecordInto) give records that render to the line described, and
// the same bytes as its one-slot-at-a-time path.
TEST(LogRecordBuilderTest, BatchedNumbersRenderTheLineDescribed) {
  const std::vector<size_t> runs = {0, 1, 7, 63, 64, 65, 129, 200};
  std::vector<std::string> labels;
  for (size_t i = 0; i < 200; ++i) labels.push_back(absl::StrCat(" n", i, "="));
  LogRecordBuilder batched, single;
  PackedFields fields;
  std::vector<std::string> want_text;
  std::vector<std::string> single_records;
  uint64_t state = 3;
  for (int line = 0; line < 5; ++line) {
    std::vector<double> values(200);
    for (double& v : values) {
      state = Mix(state);
      v = double(int64_t(state % 2000001) - 1000000) / double(1 + state % 997);
    }
    std::string text = absl::StrCat("id=item-", line);
    for (size_t r = 0; r < runs.size(); ++r) {
      absl::StrAppend(&text, " i=", line * 10 + int(r));
      for (size_t i = 0; i < runs[r]; ++i) absl::StrAppend(&text, labels[i], SixDigits(values[i]));
      absl::StrAppend(&text, " s=", r % 2 ? "odd" : "even", SixDigits(values[r]));
    }
    want_text.push_back(text);
    for (LogRecordBuilder* b : {&batched, &single}) {
      b->Literal("id=");
      b->ItemId();
      for (size_t r = 0; r < runs.size(); ++r) {
        b->Literal(" i=");
        b->Int(line * 10 + int(r));
        if (b == &batched) {
          b->LabeledNumbers(labels.data(), values.data(), runs[r]);
        } else {
          for (size_t i = 0; i < runs[r]; ++i) {
            b->Literal(labels[i]);
            b->Number(values[i]);
          }
        }
        b->Literal(" s=");
        b->String(r % 2 ? "odd" : "even");
        b->Number(values[r]);
      }
    }
    single_records.push_back(single.FinishRecord());
    batched.FinishRecordInto(absl::StrCat("item-", line), &fields);
  }
  ASSERT_TRUE(batched.consistent());
  absl::StatusOr<LogLayout> layout = LogLayout::Parse(batched.Layout());
  ASSERT_TRUE(layout.ok()) << layout.status();
  size_t line = 0;
  fields.ForEach([&](absl::string_view name, absl::string_view record) {
    ASSERT_EQ(name, absl::StrCat("item-", line));
    absl::StatusOr<std::string> text = layout->Render(name, record);
    ASSERT_TRUE(text.ok()) << text.status();
    EXPECT_EQ(*text, want_text[line]) << "line " << line;
    EXPECT_EQ(record, single_records[line]) << "line " << line;
    ++line;
  });
  EXPECT_EQ(line, want_text.size());
  EXPECT_EQ(batched.Layout(), single.Layout());
}

// A later line whose labelled run is shorter, longer, or followed by
// another kind of slot than the first line's marks the builder
// inconsistent (the renderer then stores text).
TEST(LogRecordBuilderTest, ALaterLineOfAnotherShapeIsInconsistent) {
  const std::vector<std::string> labels = {" a=", " b=", " c=", " d="};
  const double values[] = {1.5, 2.5, 3.5, 4.5};
  // The first line: three labelled numbers, then an int. A second line:
  // `run` labelled numbers, then an int (or a string).
  struct Case {
    const char* what;
    size_t run;
    bool string_after;
    bool consistent;
  };
  for (const Case& c :
       {Case{"the same shape", 3, false, true}, Case{"a shorter run", 2, false, false},
        Case{"a longer run", 4, false, false},
        Case{"another kind after the run", 3, true, false}}) {
    LogRecordBuilder b;
    b.Literal("x=");
    b.LabeledNumbers(labels.data(), values, 3);
    b.Literal(" y=");
    b.Int(1);
    b.FinishRecord();
    b.LabeledNumbers(labels.data(), values, c.run);
    if (c.string_after) {
      b.String("not an int");
    } else if (c.run <= 3) {
      b.Int(2);
    }
    b.FinishRecord();
    EXPECT_EQ(b.consistent(), c.consistent) << c.what;
  }
}

TEST(LogRecordTest, CorruptValuesAreDataLossNeverACrash) {
  LogRecordBuilder b;
  b.Literal("a=");
  b.ItemId();
  b.Literal(" n=");
  b.Int(-42);
  b.Literal(" s=");
  b.String("text_bm25");
  b.Literal(" x=");
  b.Number(0.123456);
  std::string record = b.FinishRecord();
  const std::string layout = b.Layout();
  absl::StatusOr<std::string> text = RenderLogRecord(layout, "sku-1", record);
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_EQ(*text, "a=sku-1 n=-42 s=text_bm25 x=0.123456");
  // Every truncation of the record and of the layout.
  for (size_t n = 0; n < record.size(); ++n) {
    EXPECT_EQ(RenderLogRecord(layout, "sku-1", record.substr(0, n)).status().code(),
              absl::StatusCode::kDataLoss)
        << n;
  }
  for (size_t n = 0; n < layout.size(); ++n) {
    EXPECT_EQ(RenderLogRecord(layout.substr(0, n), "sku-1", record).status().code(),
              absl::StatusCode::kDataLoss)
        << n;
  }
  // Every single-byte corruption: an error or some text, never a crash.
  for (size_t i = 0; i < record.size(); ++i) {
    for (int bit = 0; bit < 8; ++bit) {
      std::string bad = record;
      bad[i] = static_cast<char>(bad[i] ^ (1 << bit));
      (void)RenderLogRecord(layout, "sku-1", bad);
      std::string bad_layout = layout;
      bad_layout[i % layout.size()] = static_cast<char>(bad_layout[i % layout.size()] ^ (1 << bit));
      (void)RenderLogRecord(bad_layout, "sku-1", record);
    }
  }
  // A record without its layout, read through the store's decoder.
  std::vector<std::optional<std::string>> values = {record};
  std::vector<std::string> ids = {"sku-1"};
  absl::Status no_layout = DecodeLogValues("req", std::nullopt, ids, &values);
  EXPECT_EQ(no_layout.code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(no_layout.message().find("sku-1"), std::string::npos);
}

// A one-number record of a one-number layout, its number slot `u` (a
// varint) and then `tail` bytes.
absl::StatusOr<std::string> RenderNumber(uint64_t u, const std::string& tail = "") {
  LogRecordBuilder b;
  b.Literal("x=");
  b.Number(1.5);
  (void)b.FinishRecord();
  std::string record = "R";
  while (u >= 0x80) {
    record.push_back(static_cast<char>(u | 0x80));
    u >>= 7;
  }
  record.push_back(static_cast<char>(u));
  return RenderLogRecord(b.Layout(), "id", record + tail);
}

TEST(LogRecordTest, NumbersTheWriterNeverWritesAreRefused) {
  // 78.7 is digits 787 at scale -1 (code 23); 7870 at -2 is the same
  // number with a trailing zero digit, which the writer strips.
  const auto number = [](uint64_t digits, int exponent, bool negative) {
    return digits << 6 | uint64_t{negative} << 5 | static_cast<uint64_t>(exponent + 24);
  };
  absl::StatusOr<std::string> good = RenderNumber(number(787, -1, false));
  ASSERT_TRUE(good.ok()) << good.status();
  EXPECT_EQ(*good, "x=78.7");
  for (uint64_t u : {number(7870, -2, false), number(10, 0, true), number(0, 0, false),
                     number(1000000, 0, false)}) {
    absl::StatusOr<std::string> text = RenderNumber(u);
    EXPECT_EQ(text.status().code(), absl::StatusCode::kDataLoss) << u << " " << text.value_or("");
  }
  // A raw binary64 (code 31, m = 1): its sign flag must be its sign bit.
  const auto raw = [](double v) {
    std::string bytes(8, '\0');
    std::memcpy(bytes.data(), &v, 8);
    return bytes;
  };
  const uint64_t raw_positive = uint64_t{1} << 6 | 31, raw_negative = raw_positive | 1 << 5;
  EXPECT_EQ(*RenderNumber(raw_positive, raw(1e300)), "x=1e+300");
  EXPECT_EQ(*RenderNumber(raw_negative, raw(-1e300)), "x=-1e+300");
  EXPECT_EQ(RenderNumber(raw_negative, raw(1e300)).status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(RenderNumber(raw_positive, raw(-1e300)).status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(RenderNumber(raw_positive, raw(-0.0)).status().code(), absl::StatusCode::kDataLoss);
  // A special number other than zero (m = 0) and raw (m = 1).
  EXPECT_EQ(RenderNumber(uint64_t{2} << 6 | 31).status().code(), absl::StatusCode::kDataLoss);
}

}  // namespace
}  // namespace rankwire::logstore
