// Constants of the rankbin wire format. docs/FORMAT.md is the specification;
// this header mirrors it and nothing here may disagree with it.
//
//   payload  := header section*
//   header   := magic "RKWB" | major u8 | minor u8 | section_count u16  (8 bytes)
//   section  := id u8 | length u32 | body[length]
//
// Sections: KEYS (1), SHAPES (2), ITEMS (3), VALUES (4), LOGS (5, optional).
// Unknown section ids are skipped. Exactly section_count sections follow
// the header and nothing after them, so a payload cut at a section boundary
// is detected. Integers are little-endian.
#ifndef RANKWIRE_CODEC_RANKBIN_FORMAT_H_
#define RANKWIRE_CODEC_RANKBIN_FORMAT_H_

#include <cstdint>
#include <optional>

#include "codec/rank_result.h"

namespace rankwire::rankbin {

inline constexpr char kMagic[4] = {'R', 'K', 'W', 'B'};
inline constexpr uint8_t kMajorVersion = 1;
// 1.1: every zstd block frame carries its content checksum (readers verify
// it, and require it in 1.1+ payloads). The layout is 1.0's.
inline constexpr uint8_t kMinorVersion = 1;
inline constexpr size_t kHeaderSize = 8;
inline constexpr size_t kSectionHeaderSize = 5;

enum class SectionId : uint8_t {
  kKeys = 1,
  kShapes = 2,
  kItems = 3,
  kValues = 4,
  kLogs = 5,
};

// A value's wire class: how many bytes it takes, so a reader can skip a
// value whose type it does not know. The low 3 bits of every type code.
enum class WireClass : uint8_t {
  kVarint = 0,   // LEB128, 1..10 bytes
  kFixed32 = 1,  // 4 bytes
  kFixed64 = 2,  // 8 bytes
  kBytes = 3,    // varint length + bytes
};

// Type codes of metric keys: (kind << 3) | wire class.
enum class TypeCode : uint8_t {
  kInt = 0x00,         // zigzag varint
  kFloat = 0x09,       // binary32
  kDouble = 0x12,      // binary64
  kString = 0x1b,      // varint length + UTF-8 bytes
  kStringDict = 0x20,  // varint index into the key's dictionary
};

constexpr WireClass WireClassOf(uint8_t type_code) { return static_cast<WireClass>(type_code & 7); }
// Wire classes 4..7 are reserved; a key with one cannot be skipped.
inline bool IsKnownWireClass(uint8_t type_code) { return (type_code & 7) <= 3; }

// The model type a known type code decodes to; nullopt for codes this
// version does not know (their values are skipped).
inline std::optional<MetricType> ModelTypeOf(uint8_t type_code) {
  switch (static_cast<TypeCode>(type_code)) {
    case TypeCode::kInt:
      return MetricType::kInt;
    case TypeCode::kFloat:
      return MetricType::kFloat;
    case TypeCode::kDouble:
      return MetricType::kDouble;
    case TypeCode::kString:
    case TypeCode::kStringDict:
      return MetricType::kString;
  }
  return std::nullopt;
}

// Block codecs of VALUES and LOGS blocks.
enum class BlockCodec : uint8_t {
  kRaw = 0,
  kZstd = 1,
};

// Every item record takes at least: id length (1) + score (8) + position (1)
// + shape (1) + values offset (1) bytes, plus its 4-byte directory entry.
inline constexpr uint64_t kMinItemBytes = 4 + 12;
// Each block directory entry: codec u8 + stored u32 + raw u32.
inline constexpr uint64_t kBlockEntryBytes = 9;

}  // namespace rankwire::rankbin

#endif  // RANKWIRE_CODEC_RANKBIN_FORMAT_H_
