// Per-type serializers of the rankbin format: one small struct per type,
// each knowing
//   Size(v)        the exact number of bytes v takes (so output is sized once),
//   Write(w, v)    how to write v (REQUIRES: Size(v) bytes of room),
//   Read(r, &v)    how to read it back (bounds-checked; errors land in r).
//
// Primitives (varints, zigzag varints, fixed-width numbers, length-prefixed
// bytes), lists (count + elements), sets (a list whose elements must be
// unique), and the ranking objects (key entries, shapes, item records, block
// directory entries, metric values). All of them go through
// codec/coding.h; none has its own varint or bounds check.
//
// Thread safety: stateless.
#ifndef RANKWIRE_CODEC_RANKBIN_SERIALIZERS_H_
#define RANKWIRE_CODEC_RANKBIN_SERIALIZERS_H_

#include <cstdint>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "codec/codec.h"
#include "codec/coding.h"
#include "codec/rankbin/format.h"

namespace rankwire::rankbin {

template <typename T>
struct Serializer;

// Primitives ---------------------------------------------------------------

template <>
struct Serializer<uint64_t> {
  static constexpr uint64_t kMinBytes = 1;
  static size_t Size(uint64_t v) { return coding::VarintLength(v); }
  static void Write(coding::Writer& w, uint64_t v) { w.PutVarint64(v); }
  static void Read(coding::Reader& r, uint64_t* v, const char* what) { *v = r.Varint64(what); }
};

template <>
struct Serializer<uint32_t> {
  static constexpr uint64_t kMinBytes = 1;
  static size_t Size(uint32_t v) { return coding::VarintLength(v); }
  static void Write(coding::Writer& w, uint32_t v) { w.PutVarint64(v); }
  static void Read(coding::Reader& r, uint32_t* v, const char* what) { *v = r.Varint32(what); }
};

template <>
struct Serializer<int64_t> {
  static constexpr uint64_t kMinBytes = 1;
  static size_t Size(int64_t v) { return coding::VarintLength(coding::ZigZagEncode64(v)); }
  static void Write(coding::Writer& w, int64_t v) { w.PutSignedVarint64(v); }
  static void Read(coding::Reader& r, int64_t* v, const char* what) { *v = r.SignedVarint64(what); }
};

template <>
struct Serializer<float> {
  static constexpr uint64_t kMinBytes = 4;
  static size_t Size(float) { return 4; }
  static void Write(coding::Writer& w, float v) { w.PutFloat(v); }
  static void Read(coding::Reader& r, float* v, const char* what) { *v = r.Float(what); }
};

template <>
struct Serializer<double> {
  static constexpr uint64_t kMinBytes = 8;
  static size_t Size(double) { return 8; }
  static void Write(coding::Writer& w, double v) { w.PutDouble(v); }
  static void Read(coding::Reader& r, double* v, const char* what) { *v = r.Double(what); }
};

template <>
struct Serializer<absl::string_view> {
  static constexpr uint64_t kMinBytes = 1;
  static size_t Size(absl::string_view v) { return coding::LengthPrefixedLength(v.size()); }
  static void Write(coding::Writer& w, absl::string_view v) { w.PutLengthPrefixed(v); }
  // The result is a view into the reader's input.
  static void Read(coding::Reader& r, absl::string_view* v, const char* what) {
    *v = r.LengthPrefixed(what);
  }
};

// Lists and sets -----------------------------------------------------------

// count varint, then the elements.
template <typename T>
struct Serializer<std::vector<T>> {
  static constexpr uint64_t kMinBytes = 1;
  static size_t Size(absl::Span<const T> v) {
    size_t n = coding::VarintLength(v.size());
    for (const T& e : v) n += Serializer<T>::Size(e);
    return n;
  }
  static void Write(coding::Writer& w, absl::Span<const T> v) {
    w.PutVarint64(v.size());
    for (const T& e : v) Serializer<T>::Write(w, e);
  }
  // The count is checked against the bytes left before anything is
  // allocated.
  static void Read(coding::Reader& r, std::vector<T>* v, const char* what) {
    uint64_t n = r.Count(Serializer<T>::kMinBytes, what);
    v->clear();
    v->reserve(n);
    for (uint64_t i = 0; i < n && r.ok(); ++i) {
      T e{};
      Serializer<T>::Read(r, &e, what);
      v->push_back(e);
    }
  }
};

// A set of small unsigned integers below a known bound (key indexes), on
// the wire as a list (written by the rankbin writer as it makes each
// shape). Read rejects out-of-range and repeated elements.
struct IndexSetSerializer {
  // Reads the set in one pass, checking each element as it is read, into
  // the n elements' room that alloc(n) returns (the caller's own array, so
  // a set is not copied once more). Returns n, or 0 with r failed.
  // `stamps` is the caller's scratch of `bound` stamps, none equal to
  // `stamp` on entry (a reader keeps one array for all its shapes and
  // gives each set a new stamp: nothing to clear after a set, and no
  // allocation per set); on return, the set's elements carry `stamp`.
  template <typename Alloc>
  static uint64_t Read(coding::Reader& r, uint32_t bound, uint32_t* stamps, uint32_t stamp,
                       Alloc alloc, const char* what) {
    const uint64_t n = r.Count(Serializer<uint32_t>::kMinBytes, what);
    if (!r.ok()) return 0;
    // A set of distinct indexes below `bound` has at most `bound` of them:
    // checked before alloc() sizes anything by n.
    if (n > bound) {
      r.Fail(what, absl::StrCat("count ", n, " exceeds the ", bound, " possible indexes"));
      return 0;
    }
    uint32_t* out = alloc(n);
    // The common case (one- and two-byte indexes, all valid) in locals:
    // through the Reader, every index stored and reloaded its position and
    // status, since the Reader's error path is out of line. The first
    // index this loop does not take (longer, out of range, repeated, cut
    // short) is read again below, by the Reader, which reports it.
    uint64_t read = 0;
    {
      const char* p = r.position();
      const char* const end = p + r.remaining();
      for (; read < n; ++read) {
        if (p == end) break;
        uint32_t e = static_cast<uint8_t>(p[0]);
        size_t len = 1;
        if (e >= 0x80) {
          if (end - p < 2 || static_cast<uint8_t>(p[1]) >= 0x80) break;
          e = (e & 0x7f) | static_cast<uint32_t>(static_cast<uint8_t>(p[1])) << 7;
          len = 2;
        }
        if (e >= bound || stamps[e] == stamp) break;
        stamps[e] = stamp;
        out[read] = e;
        p += len;
      }
      r.Skip(static_cast<uint64_t>(p - r.position()), what);
    }
    for (; read < n; ++read) {
      const uint32_t e = r.Varint32(what);
      if (!r.ok()) break;
      if (e >= bound || stamps[e] == stamp) {
        r.Fail(what, e >= bound ? absl::StrCat("index ", e, " out of range (", bound, ")")
                                : absl::StrCat("index ", e, " repeated"));
        break;
      }
      stamps[e] = stamp;
      out[read] = e;
    }
    return r.ok() ? n : 0;
  }
};

// Ranking objects ----------------------------------------------------------

// One entry of the KEYS section:
//   entry_length varint | type u8 | name (length-prefixed) | params
// where params is the dictionary (a list of strings) for kStringDict and
// empty otherwise. Readers ignore bytes after the params they know.
struct KeyEntry {
  uint8_t type_code = 0;
  absl::string_view name;
  std::vector<absl::string_view> dict;  // kStringDict only.
};

template <>
struct Serializer<KeyEntry> {
  static constexpr uint64_t kMinBytes = 3;
  // An entry from its parts: `dict` is read only for kStringDict. (The
  // writer passes a key's dictionary as a view of its own entries; building
  // a KeyEntry copied it, twice per encode.)
  static size_t BodySize(uint8_t type_code, absl::string_view name,
                         absl::Span<const absl::string_view> dict) {
    size_t n = 1 + Serializer<absl::string_view>::Size(name);
    if (type_code == static_cast<uint8_t>(TypeCode::kStringDict)) {
      n += Serializer<std::vector<absl::string_view>>::Size(dict);
    }
    return n;
  }
  static size_t Size(uint8_t type_code, absl::string_view name,
                     absl::Span<const absl::string_view> dict) {
    size_t body = BodySize(type_code, name, dict);
    return coding::VarintLength(body) + body;
  }
  static void Write(coding::Writer& w, uint8_t type_code, absl::string_view name,
                    absl::Span<const absl::string_view> dict) {
    w.PutVarint64(BodySize(type_code, name, dict));
    w.PutByte(type_code);
    w.PutLengthPrefixed(name);
    if (type_code == static_cast<uint8_t>(TypeCode::kStringDict)) {
      Serializer<std::vector<absl::string_view>>::Write(w, dict);
    }
  }
  static size_t Size(const KeyEntry& e) { return Size(e.type_code, e.name, e.dict); }
  static void Write(coding::Writer& w, const KeyEntry& e) { Write(w, e.type_code, e.name, e.dict); }
  // The entry whose body (after its length) `body` is, read from `r`'s
  // input; views point into it. Fails `r` on a malformed body.
  static void ReadBody(coding::Reader& r, absl::string_view body, KeyEntry* e) {
    coding::Reader br(body, "rankbin", r.offset() - body.size());
    e->type_code = br.Byte("key type");
    e->name = br.LengthPrefixed("key name");
    e->dict.clear();
    if (e->type_code == static_cast<uint8_t>(TypeCode::kStringDict)) {
      Serializer<std::vector<absl::string_view>>::Read(br, &e->dict, "key dictionary");
    }
    if (!br.ok()) r.FailWith(br.status());
  }
  // The common entry, read without a second reader: a type that carries no
  // dictionary and a name of at most 127 bytes, filling the body exactly.
  // False (nothing read) for any other body; ReadBody reads those.
  static bool ReadSimpleBody(absl::string_view body, uint8_t* type_code, absl::string_view* name) {
    if (body.size() < 2) return false;
    const auto code = static_cast<uint8_t>(body[0]);
    const auto length = static_cast<uint8_t>(body[1]);
    if (length >= 0x80 || body.size() != size_t{2} + length ||
        code == static_cast<uint8_t>(TypeCode::kStringDict)) {
      return false;
    }
    *type_code = code;
    *name = body.substr(2);
    return true;
  }
};

// One item's hot fields in the ITEMS section. Readers ignore bytes after
// the fields they know, up to the next record.
struct ItemRecord {
  absl::string_view id;
  double score = 0;
  uint32_t position = 0;
  uint32_t shape = 0;
  uint32_t values_offset = 0;  // In the item's VALUES block, decoded.
};

template <>
struct Serializer<ItemRecord> {
  static size_t Size(const ItemRecord& v) {
    return coding::LengthPrefixedLength(v.id.size()) + 8 + coding::VarintLength(v.position) +
           coding::VarintLength(v.shape) + coding::VarintLength(v.values_offset);
  }
  static void Write(coding::Writer& w, const ItemRecord& v) {
    w.PutLengthPrefixed(v.id);
    w.PutDouble(v.score);
    w.PutVarint64(v.position);
    w.PutVarint64(v.shape);
    w.PutVarint64(v.values_offset);
  }
  static void Read(coding::Reader& r, ItemRecord* v) {
    v->id = r.LengthPrefixed("item id");
    v->score = r.Double("item score");
    v->position = r.Varint32("item position");
    v->shape = r.Varint32("item shape");
    v->values_offset = r.Varint32("item values offset");
  }
};

// One entry of a block directory (VALUES, LOGS): fixed width, so the writer
// can fill in sizes after compressing.
struct BlockEntry {
  uint8_t codec = 0;
  uint32_t stored_size = 0;
  uint32_t raw_size = 0;
};

template <>
struct Serializer<BlockEntry> {
  static constexpr uint64_t kMinBytes = kBlockEntryBytes;
  static size_t Size(const BlockEntry&) { return kBlockEntryBytes; }
  static void Write(coding::Writer& w, const BlockEntry& v) {
    w.PutByte(v.codec);
    w.PutFixed32(v.stored_size);
    w.PutFixed32(v.raw_size);
  }
  static void Read(coding::Reader& r, BlockEntry* v, const char* what) {
    v->codec = r.Byte(what);
    v->stored_size = r.Fixed32(what);
    v->raw_size = r.Fixed32(what);
  }
};

// Metric values: the encoding is chosen by the key's type code. Unknown
// codes are skipped by wire class.
struct ValueSerializer {
  // Bytes of a fixed-width code, 0 for variable-width codes.
  static constexpr size_t FixedSize(uint8_t code) {
    switch (WireClassOf(code)) {
      case WireClass::kFixed32:
        return 4;
      case WireClass::kFixed64:
        return 8;
      default:
        return 0;
    }
  }
  static void Skip(coding::Reader& r, uint8_t code) {
    switch (WireClassOf(code)) {
      case WireClass::kVarint:
        r.Varint64("skipped value");
        return;
      case WireClass::kFixed32:
        r.Skip(4, "skipped value");
        return;
      case WireClass::kFixed64:
        r.Skip(8, "skipped value");
        return;
      case WireClass::kBytes:
        r.LengthPrefixed("skipped value");
        return;
    }
    r.Fail("value", "unknown wire class");
  }
  // Decodes one value of a known code into `sink`, the one value decoder
  // every reader path uses: sink.Int(int64_t), sink.Float(float),
  // sink.Double(double), sink.String(string_view) (a view into r's input),
  // sink.DictString(uint32_t index) (checked < dict_size). Returns false
  // (and leaves an error in r) on malformed input.
  template <typename Sink>
  ABSL_ATTRIBUTE_ALWAYS_INLINE static bool Decode(coding::Reader& r, uint8_t code,
                                                  uint32_t dict_size, Sink& sink) {
    switch (static_cast<TypeCode>(code)) {
      case TypeCode::kInt:
        sink.Int(r.SignedVarint64("int value"));
        return r.ok();
      case TypeCode::kFloat:
        sink.Float(r.Float("float value"));
        return r.ok();
      case TypeCode::kDouble:
        sink.Double(r.Double("double value"));
        return r.ok();
      case TypeCode::kString: {
        absl::string_view text = r.LengthPrefixed("string value");
        if (!r.ok()) return false;
        sink.String(text);
        return true;
      }
      case TypeCode::kStringDict: {
        uint64_t index = r.Varint64("dictionary index");
        if (!r.ok()) return false;
        if (index >= dict_size) {
          r.Fail("dictionary index",
                 absl::StrCat("index ", index, " out of range (", dict_size, " entries)"));
          return false;
        }
        sink.DictString(static_cast<uint32_t>(index));
        return true;
      }
    }
    r.Fail("value", "unknown type code");
    return false;
  }
  // Decode into a MetricRef. `dict` is the key's dictionary.
  ABSL_ATTRIBUTE_ALWAYS_INLINE static bool Read(coding::Reader& r, uint8_t code,
                                                const absl::string_view* dict, uint32_t dict_size,
                                                MetricRef* out) {
    struct RefSink {
      const absl::string_view* dict;
      MetricRef* out;
      void Int(int64_t v) { *out = MetricRef::Int(v); }
      void Float(float v) { *out = MetricRef::Float(v); }
      void Double(double v) { *out = MetricRef::Double(v); }
      void String(absl::string_view v) { *out = MetricRef::String(v); }
      void DictString(uint32_t i) { *out = MetricRef::String(dict[i]); }
    } sink{dict, out};
    return Decode(r, code, dict_size, sink);
  }
};

}  // namespace rankwire::rankbin

#endif  // RANKWIRE_CODEC_RANKBIN_SERIALIZERS_H_
