#include "bench/reference_formats.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "capnp/serialize.h"
#include "tuned_rank.capnp.h"
#include "tuned_rank_generated.h"

namespace rankwire::bench {
namespace {

// Column order of every reference format: doubles, floats, ints, strings.
constexpr int kColumns = 4;

int ColumnOf(MetricType type) {
  switch (type) {
    case MetricType::kDouble:
      return 0;
    case MetricType::kFloat:
      return 1;
    case MetricType::kInt:
      return 2;
    case MetricType::kString:
      return 3;
  }
  return 3;
}

// The shared-key analysis every reference encoder does first, from the
// result's columns as rankbin's writer does it: item shapes (which keys an
// item has, from the columns' presence bits; one shape when every item has
// every key, else almost always the previous item's), and the string
// dictionary (each column's entry codes mapped to one dictionary of
// distinct values, a hash lookup per code met, not per value), with each
// code checked against its column's entries.
struct Layout {
  struct Shape {
    std::vector<uint32_t> item_keys;                   // Key-table order.
    std::array<std::vector<uint32_t>, kColumns> keys;  // Per column, key indexes.
  };
  std::vector<Shape> shapes;
  std::vector<uint32_t> item_shape;
  std::vector<absl::string_view> dict;
  std::vector<uint32_t> string_index;  // Every string value, in write order.
};

uint32_t ShapeOf(const RankResult& r, absl::Span<const uint32_t> keys, uint32_t previous,
                 Layout* out) {
  auto same = [&keys](const Layout::Shape& s) { return absl::MakeConstSpan(s.item_keys) == keys; };
  if (previous != UINT32_MAX && same(out->shapes[previous])) return previous;
  for (uint32_t s = 0; s < out->shapes.size(); ++s) {
    if (same(out->shapes[s])) return s;
  }
  Layout::Shape shape;
  shape.item_keys.assign(keys.begin(), keys.end());
  for (uint32_t k : keys) shape.keys[ColumnOf(r.key(k).type)].push_back(k);
  out->shapes.push_back(std::move(shape));
  return static_cast<uint32_t>(out->shapes.size() - 1);
}

// Every item's shape: each item's keys gathered from the columns'
// presence words (one step per value), then matched.
void AssignShapes(const RankResult& r, Layout* out) {
  const size_t n = r.size();
  out->item_shape.assign(n, 0);
  bool dense = true;
  for (uint32_t k = 0; k < r.key_count(); ++k) dense = dense && r.column(k).present_count() == n;
  std::vector<uint32_t> start(n + 1, 0), flat;
  const auto for_each_present = [n](const Column& c, auto visit) {
    const absl::Span<const uint64_t> words = c.present_words();
    for (size_t w = 0; w < words.size() && w * 64 < n; ++w) {
      for (uint64_t bits = words[w]; bits != 0; bits &= bits - 1) {
        const size_t i = w * 64 + static_cast<size_t>(__builtin_ctzll(bits));
        if (i < n) visit(i);
      }
    }
  };
  if (!dense) {
    for (uint32_t k = 0; k < r.key_count(); ++k) {
      for_each_present(r.column(k), [&start](size_t i) { ++start[i + 1]; });
    }
    for (size_t i = 0; i < n; ++i) start[i + 1] += start[i];
    flat.resize(start[n]);
    std::vector<uint32_t> fill(start.begin(), start.end() - 1);
    for (uint32_t k = 0; k < r.key_count(); ++k) {
      for_each_present(r.column(k), [&](size_t i) { flat[fill[i]++] = k; });
    }
  } else if (n > 0) {
    flat.resize(r.key_count());
    for (uint32_t k = 0; k < r.key_count(); ++k) flat[k] = k;
  }
  uint32_t previous = UINT32_MAX;
  for (size_t i = 0; i < n; ++i) {
    const absl::Span<const uint32_t> keys =
        dense ? absl::MakeConstSpan(flat)
              : absl::MakeConstSpan(flat.data() + start[i], start[i + 1] - start[i]);
    previous = ShapeOf(r, keys, previous, out);
    out->item_shape[i] = previous;
  }
}

absl::Status Analyze(const RankResult& r, Layout* out) {
  AssignShapes(r, out);
  absl::flat_hash_map<absl::string_view, uint32_t> dict_index;
  // Per string key, its entry codes' dictionary indexes (UINT32_MAX: not
  // met yet).
  std::vector<std::vector<uint32_t>> remap(r.key_count());
  for (uint32_t k = 0; k < r.key_count(); ++k) {
    if (r.key(k).type == MetricType::kString)
      remap[k].assign(r.column(k).entry_count(), UINT32_MAX);
  }
  out->string_index.reserve(r.size() * 4);
  for (size_t i = 0; i < r.size(); ++i) {
    for (uint32_t k : out->shapes[out->item_shape[i]].keys[3]) {
      const Column& c = r.column(k);
      const uint32_t code = c.codes()[i];
      if (code >= c.entry_count()) {
        return absl::InvalidArgumentError(absl::StrCat("item ", i, ": metric \"", r.key(k).name,
                                                       "\" has a string code out of range"));
      }
      uint32_t& d = remap[k][code];
      if (d == UINT32_MAX) {
        auto [it, inserted] =
            dict_index.emplace(c.entry(code), static_cast<uint32_t>(out->dict.size()));
        if (inserted) out->dict.push_back(c.entry(code));
        d = it->second;
      }
      out->string_index.push_back(d);
    }
  }
  return absl::OkStatus();
}

absl::Status Corrupt(absl::string_view format, absl::string_view what) {
  return absl::DataLossError(absl::StrCat(format, ": ", what));
}

// Receivers of an item's values: into the model (item `item` of `r`), or
// only touched. The model sink refuses a key out of range or of another
// type than the column it came in; a dictionary string becomes one entry
// of its key's column, shared by the items that use it (`codes`: per key,
// dictionary index -> entry code).
struct ModelSink {
  RankResult* r;
  std::vector<std::vector<uint32_t>>* codes;
  size_t dict_size;
  size_t item = 0;
  bool ok = true;

  bool Check(uint32_t key, MetricType type) {
    ok = ok && key < r->key_count() && r->key(key).type == type;
    return ok;
  }
  void Double(uint32_t key, double v) {
    if (Check(key, MetricType::kDouble)) r->SetDouble(item, key, v);
  }
  void Float(uint32_t key, float v) {
    if (Check(key, MetricType::kFloat)) r->SetFloat(item, key, v);
  }
  void Int(uint32_t key, int64_t v) {
    if (Check(key, MetricType::kInt)) r->SetInt(item, key, v);
  }
  void String(uint32_t key, uint32_t d, absl::string_view v) {
    if (!Check(key, MetricType::kString)) return;
    std::vector<uint32_t>& key_codes = (*codes)[key];
    if (key_codes.empty()) key_codes.assign(dict_size, UINT32_MAX);
    if (key_codes[d] == UINT32_MAX) key_codes[d] = r->AddStringEntry(key, v);
    r->SetStringCode(item, key, key_codes[d]);
  }
};
struct TouchSink {
  Touched* touched;
  void Double(uint32_t, double v) { touched->Number(v); }
  void Float(uint32_t, float v) { touched->Number(v); }
  void Int(uint32_t, int64_t v) { touched->Integer(v); }
  void String(uint32_t, uint32_t, absl::string_view v) { touched->Text(v); }
};

// The model sink of a result whose keys are read: codes sized per key.
struct ModelDecoder {
  RankResult result;
  std::vector<std::vector<uint32_t>> codes;
  ModelSink Sink(size_t dict_size) {
    codes.resize(result.key_count());
    return ModelSink{&result, &codes, dict_size};
  }
};

}  // namespace

// Tuned protobuf ------------------------------------------------------------

absl::Status BuildTunedProto(const RankResult& r, tuned::Result* out) {
  Layout layout;
  if (absl::Status s = Analyze(r, &layout); !s.ok()) return s;
  out->Clear();
  for (const MetricKey& key : r.keys()) {
    tuned::Key* k = out->add_keys();
    k->set_name(key.name);
    k->set_type(static_cast<uint32_t>(key.type));
  }
  for (const Layout::Shape& shape : layout.shapes) {
    tuned::Shape* s = out->add_shapes();
    s->mutable_double_keys()->Add(shape.keys[0].begin(), shape.keys[0].end());
    s->mutable_float_keys()->Add(shape.keys[1].begin(), shape.keys[1].end());
    s->mutable_int_keys()->Add(shape.keys[2].begin(), shape.keys[2].end());
    s->mutable_string_keys()->Add(shape.keys[3].begin(), shape.keys[3].end());
  }
  for (absl::string_view d : layout.dict) out->add_string_dict(std::string(d));
  out->mutable_items()->Reserve(static_cast<int>(r.size()));
  const uint32_t* str = layout.string_index.data();
  for (size_t i = 0; i < r.size(); ++i) {
    const Layout::Shape& shape = layout.shapes[layout.item_shape[i]];
    tuned::Item* p = out->add_items();
    p->mutable_item_id()->assign(r.id(i).data(), r.id(i).size());
    p->set_score(r.score(i));
    p->set_position(r.position(i));
    p->set_shape(layout.item_shape[i]);
    auto* doubles = p->mutable_doubles();
    doubles->Reserve(static_cast<int>(shape.keys[0].size()));
    for (uint32_t k : shape.keys[0]) doubles->AddAlreadyReserved(r.column(k).doubles()[i]);
    auto* floats = p->mutable_floats();
    floats->Reserve(static_cast<int>(shape.keys[1].size()));
    for (uint32_t k : shape.keys[1]) floats->AddAlreadyReserved(r.column(k).floats()[i]);
    auto* ints = p->mutable_ints();
    ints->Reserve(static_cast<int>(shape.keys[2].size()));
    for (uint32_t k : shape.keys[2]) ints->AddAlreadyReserved(r.column(k).ints()[i]);
    auto* strings = p->mutable_strings();
    strings->Reserve(static_cast<int>(shape.keys[3].size()));
    for (size_t j = 0; j < shape.keys[3].size(); ++j) strings->AddAlreadyReserved(*str++);
    if (const absl::string_view log = r.log(i); !log.empty()) {
      p->mutable_log()->assign(log.data(), log.size());
    }
  }
  return absl::OkStatus();
}

namespace {
// Calls emit(key, value) for one column of an item; false if the column
// and its keys in the shape differ in size.
template <typename Values, typename Emit>
bool ReadColumn(const Values& values, const uint32_t* keys, size_t key_count, Emit emit) {
  if (static_cast<size_t>(values.size()) != key_count) return false;
  for (size_t j = 0; j < key_count; ++j) emit(keys[j], values[j]);
  return true;
}

absl::Status TunedItem(const tuned::Result& m, const tuned::Item& p, ModelSink& sink) {
  constexpr char kFormat[] = "tuned-protobuf";
  if (p.shape() >= static_cast<uint32_t>(m.shapes_size())) return Corrupt(kFormat, "shape");
  const tuned::Shape& s = m.shapes(static_cast<int>(p.shape()));
  bool dict_ok = true;
  const bool sizes_ok = ReadColumn(p.doubles(), s.double_keys().data(), s.double_keys_size(),
                                   [&](uint32_t k, double v) { sink.Double(k, v); }) &&
                        ReadColumn(p.floats(), s.float_keys().data(), s.float_keys_size(),
                                   [&](uint32_t k, float v) { sink.Float(k, v); }) &&
                        ReadColumn(p.ints(), s.int_keys().data(), s.int_keys_size(),
                                   [&](uint32_t k, int64_t v) { sink.Int(k, v); }) &&
                        ReadColumn(p.strings(), s.string_keys().data(), s.string_keys_size(),
                                   [&](uint32_t k, uint32_t d) {
                                     if (d >= static_cast<uint32_t>(m.string_dict_size())) {
                                       dict_ok = false;
                                       return;
                                     }
                                     sink.String(k, d, m.string_dict(static_cast<int>(d)));
                                   });
  if (!sizes_ok) return Corrupt(kFormat, "column size");
  if (!dict_ok) return Corrupt(kFormat, "dictionary index");
  if (!sink.ok) return Corrupt(kFormat, "key index or type");
  return absl::OkStatus();
}
}  // namespace

absl::StatusOr<RankResult> TunedProtoToModel(const tuned::Result& m) {
  constexpr char kFormat[] = "tuned-protobuf";
  ModelDecoder decoder;
  RankResult& r = decoder.result;
  for (const tuned::Key& k : m.keys()) {
    std::optional<MetricType> type = MetricTypeFromNumber(static_cast<int>(k.type()));
    if (!type) return Corrupt(kFormat, "key type");
    r.AddKey(k.name(), *type);
  }
  r.Reserve(static_cast<size_t>(m.items_size()));
  ModelSink sink = decoder.Sink(static_cast<size_t>(m.string_dict_size()));
  for (int i = 0; i < m.items_size(); ++i) {
    const tuned::Item& p = m.items(i);
    sink.item = r.AddItem(p.item_id(), p.score(), p.position());
    if (absl::Status s = TunedItem(m, p, sink); !s.ok()) return s;
    if (!p.log().empty()) r.SetLog(sink.item, p.log());
  }
  return std::move(decoder.result);
}

// FlatBuffers ---------------------------------------------------------------

namespace {
constexpr char kFb[] = "flatbuffers";

template <typename T>
flatbuffers::Offset<flatbuffers::Vector<T>> FbColumn(flatbuffers::FlatBufferBuilder& b, size_t n,
                                                     T** out) {
  uint8_t* buf = nullptr;
  auto offset = b.CreateUninitializedVector(n, sizeof(T), &buf);
  *out = reinterpret_cast<T*>(buf);
  return flatbuffers::Offset<flatbuffers::Vector<T>>(offset);
}

template <typename T>
void Store(T* at, T v) {
  flatbuffers::WriteScalar(at, v);
}

absl::StatusOr<const fb::Result*> FbRoot(absl::string_view bytes) {
  flatbuffers::Verifier verifier(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(),
                                 /*max_depth=*/64, /*max_tables=*/10'000'000);
  if (!fb::VerifyResultBuffer(verifier)) return Corrupt(kFb, "verifier rejected the buffer");
  return fb::GetResult(bytes.data());
}

template <typename Sink>
absl::Status FbItem(const fb::Result* root, const fb::Item* p, size_t nkeys, Sink& sink) {
  const auto* shapes = root->shapes();
  if (shapes == nullptr || p->shape() >= shapes->size()) return Corrupt(kFb, "shape");
  const fb::Shape* s = shapes->Get(p->shape());
  const auto* dict = root->string_dict();
  auto check = [&](const auto* keys, const auto* values) -> bool {
    const size_t nk = keys ? keys->size() : 0;
    const size_t nv = values ? values->size() : 0;
    if (nk != nv) return false;
    for (size_t j = 0; j < nk; ++j) {
      if (keys->Get(j) >= nkeys) return false;
    }
    return true;
  };
  if (!check(s->double_keys(), p->doubles()) || !check(s->float_keys(), p->floats()) ||
      !check(s->int_keys(), p->ints()) || !check(s->string_keys(), p->strings())) {
    return Corrupt(kFb, "shape does not match the item's columns");
  }
  if (p->doubles()) {
    for (size_t j = 0; j < p->doubles()->size(); ++j) {
      sink.Double(s->double_keys()->Get(j), p->doubles()->Get(j));
    }
  }
  if (p->floats()) {
    for (size_t j = 0; j < p->floats()->size(); ++j) {
      sink.Float(s->float_keys()->Get(j), p->floats()->Get(j));
    }
  }
  if (p->ints()) {
    for (size_t j = 0; j < p->ints()->size(); ++j) {
      sink.Int(s->int_keys()->Get(j), p->ints()->Get(j));
    }
  }
  if (p->strings()) {
    for (size_t j = 0; j < p->strings()->size(); ++j) {
      const uint32_t d = p->strings()->Get(j);
      if (dict == nullptr || d >= dict->size()) return Corrupt(kFb, "dictionary index");
      const flatbuffers::String* text = dict->Get(d);
      sink.String(s->string_keys()->Get(j), d, absl::string_view(text->data(), text->size()));
    }
  }
  return absl::OkStatus();
}

absl::string_view FbText(const flatbuffers::String* s) {
  return s == nullptr ? absl::string_view() : absl::string_view(s->data(), s->size());
}

// Item i of `r` (shape `shape`, its string indexes at `str`), written as
// FlatBuffers builds: its fields back to front.
flatbuffers::Offset<fb::Item> FbWriteItem(flatbuffers::FlatBufferBuilder& b, const RankResult& r,
                                          size_t i, const Layout::Shape& shape, uint32_t shape_id,
                                          const uint32_t* str) {
  const absl::string_view text = r.log(i);
  auto log = text.empty() ? flatbuffers::Offset<flatbuffers::String>()
                          : b.CreateString(text.data(), text.size());
  uint32_t* sp;
  auto strings = FbColumn<uint32_t>(b, shape.keys[3].size(), &sp);
  for (size_t j = 0; j < shape.keys[3].size(); ++j) Store(sp + j, str[j]);
  int64_t* ip;
  auto ints = FbColumn<int64_t>(b, shape.keys[2].size(), &ip);
  for (size_t j = 0; j < shape.keys[2].size(); ++j) {
    Store(ip + j, r.column(shape.keys[2][j]).ints()[i]);
  }
  float* fp;
  auto floats = FbColumn<float>(b, shape.keys[1].size(), &fp);
  for (size_t j = 0; j < shape.keys[1].size(); ++j) {
    Store(fp + j, r.column(shape.keys[1][j]).floats()[i]);
  }
  double* dp;
  auto doubles = FbColumn<double>(b, shape.keys[0].size(), &dp);
  for (size_t j = 0; j < shape.keys[0].size(); ++j) {
    Store(dp + j, r.column(shape.keys[0][j]).doubles()[i]);
  }
  const absl::string_view item_id = r.id(i);
  auto id = b.CreateString(item_id.data(), item_id.size());
  return fb::CreateItem(b, id, r.score(i), r.position(i), shape_id, doubles, floats, ints, strings,
                        log);
}
}  // namespace

absl::StatusOr<flatbuffers::DetachedBuffer> EncodeFlatbuffers(const RankResult& r,
                                                              size_t initial_size) {
  Layout layout;
  if (absl::Status s = Analyze(r, &layout); !s.ok()) return s;
  flatbuffers::FlatBufferBuilder b(initial_size);
  std::vector<flatbuffers::Offset<fb::Key>> keys;
  keys.reserve(r.key_count());
  for (const MetricKey& key : r.keys()) {
    keys.push_back(fb::CreateKey(b, b.CreateString(key.name.data(), key.name.size()),
                                 static_cast<uint8_t>(key.type)));
  }
  std::vector<flatbuffers::Offset<fb::Shape>> shapes;
  for (const Layout::Shape& s : layout.shapes) {
    shapes.push_back(fb::CreateShape(b, b.CreateVector(s.keys[0]), b.CreateVector(s.keys[1]),
                                     b.CreateVector(s.keys[2]), b.CreateVector(s.keys[3])));
  }
  std::vector<flatbuffers::Offset<flatbuffers::String>> dict;
  for (absl::string_view d : layout.dict) dict.push_back(b.CreateString(d.data(), d.size()));
  std::vector<flatbuffers::Offset<fb::Item>> items(r.size());
  // FlatBuffers builds back to front; items are written last to first so
  // the string-index cursor runs backwards too.
  size_t str = layout.string_index.size();
  for (size_t i = r.size(); i-- > 0;) {
    const Layout::Shape& shape = layout.shapes[layout.item_shape[i]];
    str -= shape.keys[3].size();
    items[i] = FbWriteItem(b, r, i, shape, layout.item_shape[i], layout.string_index.data() + str);
  }
  auto root = fb::CreateResult(b, b.CreateVector(keys), b.CreateVector(shapes),
                               b.CreateVector(dict), b.CreateVector(items));
  b.Finish(root);
  return b.Release();
}

bool VerifyFlatbuffers(absl::string_view bytes) { return FbRoot(bytes).ok(); }

absl::StatusOr<RankResult> DecodeFlatbuffers(absl::string_view bytes) {
  absl::StatusOr<const fb::Result*> root = FbRoot(bytes);
  if (!root.ok()) return root.status();
  ModelDecoder decoder;
  RankResult& r = decoder.result;
  if (const auto* keys = (*root)->keys()) {
    for (const fb::Key* k : *keys) {
      std::optional<MetricType> type = MetricTypeFromNumber(k->type());
      if (!type) return Corrupt(kFb, "key type");
      r.AddKey(std::string(FbText(k->name())), *type);
    }
  }
  const auto* items = (*root)->items();
  if (items == nullptr) return std::move(decoder.result);
  const auto* dict = (*root)->string_dict();
  ModelSink sink = decoder.Sink(dict == nullptr ? 0 : dict->size());
  r.Reserve(items->size());
  for (size_t i = 0; i < items->size(); ++i) {
    const fb::Item* p = items->Get(i);
    sink.item = r.AddItem(FbText(p->item_id()), p->score(), p->position());
    if (absl::Status s = FbItem(*root, p, r.key_count(), sink); !s.ok()) return s;
    if (!sink.ok) return Corrupt(kFb, "key type does not match its column");
    if (const absl::string_view log = FbText(p->log()); !log.empty()) r.SetLog(sink.item, log);
  }
  return std::move(decoder.result);
}

absl::Status TopNFlatbuffers(absl::string_view bytes, size_t n, Touched* touched) {
  absl::StatusOr<const fb::Result*> root = FbRoot(bytes);
  if (!root.ok()) return root.status();
  const auto* items = (*root)->items();
  const size_t nkeys = (*root)->keys() ? (*root)->keys()->size() : 0;
  const size_t count = items == nullptr ? 0 : std::min<size_t>(n, items->size());
  TouchSink sink{touched};
  for (size_t i = 0; i < count; ++i) {
    const fb::Item* p = items->Get(i);
    touched->Text(FbText(p->item_id()));
    touched->Number(p->score());
    touched->Integer(p->position());
    absl::Status s = FbItem(*root, p, nkeys, sink);
    if (!s.ok()) return s;
    touched->Text(FbText(p->log()));
  }
  return absl::OkStatus();
}

// Cap'n Proto ---------------------------------------------------------------

namespace {
constexpr char kCp[] = "capnp";

void SetText(capnp::Text::Builder t, absl::string_view s) {
  if (!s.empty()) std::memcpy(t.begin(), s.data(), s.size());
}

template <typename List>
void SetKeys(List list, const std::vector<uint32_t>& keys) {
  for (uint32_t j = 0; j < keys.size(); ++j) list.set(j, keys[j]);
}

absl::string_view CpText(capnp::Text::Reader t) { return absl::string_view(t.begin(), t.size()); }

capnp::ReaderOptions CpOptions() {
  capnp::ReaderOptions o;
  o.traversalLimitInWords = uint64_t{1} << 30;
  return o;
}

template <typename Sink>
absl::Status CpItem(cp::Result::Reader root, cp::Item::Reader p, size_t nkeys, Sink& sink) {
  auto shapes = root.getShapes();
  if (p.getShape() >= shapes.size()) return Corrupt(kCp, "shape");
  auto s = shapes[p.getShape()];
  auto dict = root.getStringDict();
  auto check = [&](auto keys, auto values) {
    if (keys.size() != values.size()) return false;
    for (uint32_t k : keys) {
      if (k >= nkeys) return false;
    }
    return true;
  };
  auto dk = s.getDoubleKeys(), fk = s.getFloatKeys(), ik = s.getIntKeys(), sk = s.getStringKeys();
  auto dv = p.getDoubles();
  auto fv = p.getFloats();
  auto iv = p.getInts();
  auto sv = p.getStrings();
  if (!check(dk, dv) || !check(fk, fv) || !check(ik, iv) || !check(sk, sv)) {
    return Corrupt(kCp, "shape does not match the item's columns");
  }
  for (uint32_t j = 0; j < dv.size(); ++j) sink.Double(dk[j], dv[j]);
  for (uint32_t j = 0; j < fv.size(); ++j) sink.Float(fk[j], fv[j]);
  for (uint32_t j = 0; j < iv.size(); ++j) sink.Int(ik[j], iv[j]);
  for (uint32_t j = 0; j < sv.size(); ++j) {
    if (sv[j] >= dict.size()) return Corrupt(kCp, "dictionary index");
    sink.String(sk[j], sv[j], CpText(dict[sv[j]]));
  }
  return absl::OkStatus();
}

// Item i of `r` (shape `shape`, its string indexes at `str`) into `p`.
void CpWriteItem(const RankResult& r, size_t i, const Layout::Shape& shape, uint32_t shape_id,
                 const uint32_t* str, cp::Item::Builder p) {
  const absl::string_view id = r.id(i);
  SetText(p.initItemId(static_cast<unsigned>(id.size())), id);
  p.setScore(r.score(i));
  p.setPosition(r.position(i));
  p.setShape(shape_id);
  auto doubles = p.initDoubles(static_cast<unsigned>(shape.keys[0].size()));
  for (unsigned j = 0; j < shape.keys[0].size(); ++j) {
    doubles.set(j, r.column(shape.keys[0][j]).doubles()[i]);
  }
  auto floats = p.initFloats(static_cast<unsigned>(shape.keys[1].size()));
  for (unsigned j = 0; j < shape.keys[1].size(); ++j) {
    floats.set(j, r.column(shape.keys[1][j]).floats()[i]);
  }
  auto ints = p.initInts(static_cast<unsigned>(shape.keys[2].size()));
  for (unsigned j = 0; j < shape.keys[2].size(); ++j) {
    ints.set(j, r.column(shape.keys[2][j]).ints()[i]);
  }
  auto strings = p.initStrings(static_cast<unsigned>(shape.keys[3].size()));
  for (unsigned j = 0; j < shape.keys[3].size(); ++j) strings.set(j, str[j]);
  if (const absl::string_view log = r.log(i); !log.empty()) {
    SetText(p.initLog(static_cast<unsigned>(log.size())), log);
  }
}
}  // namespace

absl::StatusOr<std::unique_ptr<capnp::MallocMessageBuilder>> EncodeCapnp(
    const RankResult& r, unsigned first_segment_words) {
  Layout layout;
  if (absl::Status s = Analyze(r, &layout); !s.ok()) return s;
  auto message = std::make_unique<capnp::MallocMessageBuilder>(first_segment_words);
  cp::Result::Builder root = message->initRoot<cp::Result>();
  auto keys = root.initKeys(static_cast<unsigned>(r.key_count()));
  for (unsigned k = 0; k < r.key_count(); ++k) {
    SetText(keys[k].initName(static_cast<unsigned>(r.key(k).name.size())), r.key(k).name);
    keys[k].setType(static_cast<uint8_t>(r.key(k).type));
  }
  auto shapes = root.initShapes(static_cast<unsigned>(layout.shapes.size()));
  for (unsigned s = 0; s < layout.shapes.size(); ++s) {
    const Layout::Shape& shape = layout.shapes[s];
    SetKeys(shapes[s].initDoubleKeys(static_cast<unsigned>(shape.keys[0].size())), shape.keys[0]);
    SetKeys(shapes[s].initFloatKeys(static_cast<unsigned>(shape.keys[1].size())), shape.keys[1]);
    SetKeys(shapes[s].initIntKeys(static_cast<unsigned>(shape.keys[2].size())), shape.keys[2]);
    SetKeys(shapes[s].initStringKeys(static_cast<unsigned>(shape.keys[3].size())), shape.keys[3]);
  }
  auto dict = root.initStringDict(static_cast<unsigned>(layout.dict.size()));
  for (unsigned d = 0; d < layout.dict.size(); ++d) {
    SetText(dict.init(d, static_cast<unsigned>(layout.dict[d].size())), layout.dict[d]);
  }
  auto items = root.initItems(static_cast<unsigned>(r.size()));
  const uint32_t* str = layout.string_index.data();
  for (unsigned i = 0; i < r.size(); ++i) {
    const Layout::Shape& shape = layout.shapes[layout.item_shape[i]];
    CpWriteItem(r, i, shape, layout.item_shape[i], str, items[i]);
    str += shape.keys[3].size();
  }
  return message;
}

namespace {
absl::StatusOr<RankResult> DecodeCapnpOrThrow(kj::ArrayPtr<const capnp::word> words) {
  capnp::FlatArrayMessageReader reader(words, CpOptions());
  cp::Result::Reader root = reader.getRoot<cp::Result>();
  ModelDecoder decoder;
  RankResult& r = decoder.result;
  for (cp::Key::Reader k : root.getKeys()) {
    std::optional<MetricType> type = MetricTypeFromNumber(k.getType());
    if (!type) return Corrupt(kCp, "key type");
    r.AddKey(std::string(CpText(k.getName())), *type);
  }
  auto items = root.getItems();
  ModelSink sink = decoder.Sink(root.getStringDict().size());
  r.Reserve(items.size());
  for (unsigned i = 0; i < items.size(); ++i) {
    cp::Item::Reader p = items[i];
    sink.item = r.AddItem(CpText(p.getItemId()), p.getScore(), p.getPosition());
    if (absl::Status s = CpItem(root, p, r.key_count(), sink); !s.ok()) return s;
    if (!sink.ok) return Corrupt(kCp, "key type does not match its column");
    if (const absl::string_view log = CpText(p.getLog()); !log.empty()) r.SetLog(sink.item, log);
  }
  return std::move(decoder.result);
}

absl::Status TopNCapnpOrThrow(kj::ArrayPtr<const capnp::word> words, size_t n, Touched* touched) {
  capnp::FlatArrayMessageReader reader(words, CpOptions());
  cp::Result::Reader root = reader.getRoot<cp::Result>();
  auto items = root.getItems();
  const size_t nkeys = root.getKeys().size();
  const unsigned count = static_cast<unsigned>(std::min<size_t>(n, items.size()));
  TouchSink sink{touched};
  for (unsigned i = 0; i < count; ++i) {
    cp::Item::Reader p = items[i];
    touched->Text(CpText(p.getItemId()));
    touched->Number(p.getScore());
    touched->Integer(p.getPosition());
    absl::Status s = CpItem(root, p, nkeys, sink);
    if (!s.ok()) return s;
    touched->Text(CpText(p.getLog()));
  }
  return absl::OkStatus();
}

}  // namespace

// Cap'n Proto reports malformed input by throwing kj::Exception.
absl::StatusOr<RankResult> DecodeCapnp(kj::ArrayPtr<const capnp::word> words) {
  try {
    return DecodeCapnpOrThrow(words);
  } catch (const kj::Exception& e) {
    return Corrupt(kCp, e.getDescription().cStr());
  }
}

absl::Status TopNCapnp(kj::ArrayPtr<const capnp::word> words, size_t n, Touched* touched) {
  try {
    return TopNCapnpOrThrow(words, n, touched);
  } catch (const kj::Exception& e) {
    return Corrupt(kCp, e.getDescription().cStr());
  }
}

}  // namespace rankwire::bench
