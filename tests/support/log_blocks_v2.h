// Layout version 2 blocks (logstore/format/log_blocks.h) built by hand, as
// docs/LOGS.md specifies them. Servers no longer write blocks, but readers
// read the ones a store may hold during a rolling upgrade: the reader's
// tests and the fuzzer's seeds build them here, every number form on
// request. Test code: no checks that the chosen form fits the values.
#ifndef RANKWIRE_TESTS_SUPPORT_LOG_BLOCKS_V2_H_
#define RANKWIRE_TESTS_SUPPORT_LOG_BLOCKS_V2_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "codec/coding.h"
#include "logstore/format/log_blocks.h"

namespace rankwire::logstore::test_util {

inline void PutVarint(uint64_t v, std::string* out) {
  char buf[coding::kMaxVarint64Length];
  out->append(buf, static_cast<size_t>(coding::EncodeVarint64(buf, v) - buf));
}

inline uint32_t V2Bits(float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, 4);
  return bits;
}

// How a block's number column is written: `form`, and for kDecimal its
// scale.
struct V2Form {
  NumberForm form = NumberForm::kRaw;
  int scale = 0;
};

inline void PutV2Numbers(const float* v, size_t n, V2Form f, std::string* out) {
  out->push_back(static_cast<char>(f.form));
  auto low3 = [&](uint32_t bits) { out->append(reinterpret_cast<const char*>(&bits), 3); };
  switch (f.form) {
    case NumberForm::kRaw:
      out->append(reinterpret_cast<const char*>(v), 4 * n);
      break;
    case NumberForm::kConstant:
      out->append(reinterpret_cast<const char*>(v), 4);
      break;
    case NumberForm::kTopByte:
      out->push_back(static_cast<char>(V2Bits(v[0]) >> 24));
      for (size_t j = 0; j < n; ++j) low3(V2Bits(v[j]));
      break;
    case NumberForm::kWhole:
      for (size_t j = 0; j < n; ++j) {
        PutVarint(coding::ZigZagEncode64(static_cast<int64_t>(v[j])), out);
      }
      break;
    case NumberForm::kTwoTops: {
      uint32_t low = 255, high = 0;
      for (size_t j = 0; j < n; ++j) {
        low = std::min(low, V2Bits(v[j]) >> 24);
        high = std::max(high, V2Bits(v[j]) >> 24);
      }
      out->push_back(static_cast<char>(low));
      out->push_back(static_cast<char>(high));
      std::string bits((n + 7) / 8, '\0');
      for (size_t j = 0; j < n; ++j) {
        if ((V2Bits(v[j]) >> 24) == high) bits[j / 8] |= static_cast<char>(1 << (j % 8));
      }
      out->append(bits);
      for (size_t j = 0; j < n; ++j) low3(V2Bits(v[j]));
      break;
    }
    case NumberForm::kDecimal:
      out->push_back(static_cast<char>(f.scale));
      for (size_t j = 0; j < n; ++j) {
        const double scaled = static_cast<double>(v[j]) * std::pow(10.0, f.scale);
        PutVarint(coding::ZigZagEncode64(std::llround(scaled)), out);
      }
      break;
  }
}

// Every block of `layout` (ids, ints, string codes and numbers in
// position order, one per item), each id after the block's common prefix.
inline std::vector<std::string> WriteV2Blocks(const BlockLayout& layout,
                                              const std::vector<std::string>& ids,
                                              const std::vector<int64_t>& ints,
                                              const std::vector<uint32_t>& codes,
                                              const std::vector<float>& numbers,
                                              V2Form form = V2Form()) {
  std::vector<std::string> blocks;
  for (size_t b = 0; b < layout.BlockCount(); ++b) {
    const uint32_t begin = layout.BlockBegin(b), count = layout.BlockSize(b);
    std::string out = "B";
    PutVarint(count, &out);
    for (LogSlot kind : layout.kinds) {
      if (kind == LogSlot::kItemId) {
        size_t prefix = ids[begin].size();
        for (uint32_t j = 1; j < count; ++j) {
          size_t k = 0;
          while (k < prefix && k < ids[begin + j].size() && ids[begin + j][k] == ids[begin][k]) ++k;
          prefix = k;
        }
        PutVarint(prefix, &out);
        out.append(ids[begin], 0, prefix);
        for (uint32_t j = 0; j < count; ++j) {
          PutVarint(ids[begin + j].size() - prefix, &out);
          out.append(ids[begin + j], prefix, std::string::npos);
        }
      } else if (kind == LogSlot::kInt) {
        for (uint32_t j = 0; j < count; ++j) {
          PutVarint(coding::ZigZagEncode64(ints[begin + j]), &out);
        }
      } else if (kind == LogSlot::kString) {
        for (uint32_t j = 0; j < count; ++j) PutVarint(codes[begin + j], &out);
      } else if (kind == LogSlot::kNumber) {
        PutV2Numbers(numbers.data() + begin, count, form, &out);
      }
    }
    blocks.push_back(std::move(out));
  }
  return blocks;
}

}  // namespace rankwire::logstore::test_util

#endif  // RANKWIRE_TESTS_SUPPORT_LOG_BLOCKS_V2_H_
