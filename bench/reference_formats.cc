#include "bench/reference_formats.h"

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
constexpr MetricType kColumnType[kColumns] = {MetricType::kDouble, MetricType::kFloat,
                                              MetricType::kInt, MetricType::kString};

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

// The shared-key analysis every reference encoder does first: item shapes
// (almost always the previous item's), the string dictionary (almost always
// the previous value of the key, else a hash lookup), type checks.
struct Layout {
  struct Shape {
    std::vector<uint32_t> item_keys;                    // In item order.
    std::array<std::vector<uint32_t>, kColumns> keys;   // Per column, key indexes.
    std::array<std::vector<uint32_t>, kColumns> where;  // Index in item.metrics.
  };
  std::vector<Shape> shapes;
  std::vector<uint32_t> item_shape;
  std::vector<absl::string_view> dict;
  std::vector<uint32_t> string_index;  // Every string value, in write order.
};

absl::Status Analyze(const RankResult& r, Layout* out) {
  absl::flat_hash_map<absl::string_view, uint32_t> dict_index;
  std::vector<uint32_t> last(r.keys.size(), UINT32_MAX);
  out->item_shape.resize(r.items.size());
  out->string_index.reserve(r.items.size() * 4);
  for (size_t i = 0; i < r.items.size(); ++i) {
    const std::vector<MetricEntry>& m = r.items[i].metrics;
    uint32_t id = i > 0 ? out->item_shape[i - 1] : UINT32_MAX;
    bool same = id != UINT32_MAX && out->shapes[id].item_keys.size() == m.size();
    for (size_t j = 0; same && j < m.size(); ++j) same = out->shapes[id].item_keys[j] == m[j].key;
    if (!same) {
      id = UINT32_MAX;
      for (uint32_t s = 0; s < out->shapes.size() && id == UINT32_MAX; ++s) {
        const std::vector<uint32_t>& keys = out->shapes[s].item_keys;
        bool match = keys.size() == m.size();
        for (size_t j = 0; match && j < m.size(); ++j) match = keys[j] == m[j].key;
        if (match) id = s;
      }
      if (id == UINT32_MAX) {
        Layout::Shape shape;
        for (uint32_t j = 0; j < m.size(); ++j) {
          if (m[j].key >= r.keys.size()) {
            return absl::InvalidArgumentError(absl::StrCat("item ", i, ": key out of range"));
          }
          shape.item_keys.push_back(m[j].key);
          const int c = ColumnOf(r.keys[m[j].key].type);
          shape.keys[c].push_back(m[j].key);
          shape.where[c].push_back(j);
        }
        id = static_cast<uint32_t>(out->shapes.size());
        out->shapes.push_back(std::move(shape));
      }
    }
    out->item_shape[i] = id;
    const Layout::Shape& shape = out->shapes[id];
    for (int c = 0; c < kColumns; ++c) {
      for (uint32_t j : shape.where[c]) {
        if (m[j].value.type() != kColumnType[c]) {
          return absl::InvalidArgumentError(absl::StrCat(
              "item ", i, ": metric \"", r.keys[m[j].key].name, "\" has the wrong type"));
        }
      }
    }
    for (uint32_t j : shape.where[3]) {
      const absl::string_view v = m[j].value.string_value();
      uint32_t& prev = last[m[j].key];
      if (prev == UINT32_MAX || out->dict[prev] != v) {
        auto [it, inserted] = dict_index.emplace(v, static_cast<uint32_t>(out->dict.size()));
        if (inserted) out->dict.push_back(v);
        prev = it->second;
      }
      out->string_index.push_back(prev);
    }
  }
  return absl::OkStatus();
}

absl::Status Corrupt(absl::string_view format, absl::string_view what) {
  return absl::DataLossError(absl::StrCat(format, ": ", what));
}

// Appends one column of an item to the model, checking the indexes.
template <typename Values, typename Make>
absl::Status ReadColumn(const char* format, const Values& values, const uint32_t* keys,
                        size_t key_count, size_t model_keys, RankedItem* item, Make make) {
  if (static_cast<size_t>(values.size()) != key_count) return Corrupt(format, "column size");
  for (size_t j = 0; j < key_count; ++j) {
    if (keys[j] >= model_keys) return Corrupt(format, "key index");
    absl::StatusOr<MetricValue> v = make(values[j]);
    if (!v.ok()) return v.status();
    item->metrics.push_back(MetricEntry{keys[j], *std::move(v)});
  }
  return absl::OkStatus();
}

// Receivers of an item's values: into the model, or only touched.
struct ModelSink {
  RankedItem* item;
  void Double(uint32_t key, double v) { item->metrics.push_back({key, MetricValue::Double(v)}); }
  void Float(uint32_t key, float v) { item->metrics.push_back({key, MetricValue::Float(v)}); }
  void Int(uint32_t key, int64_t v) { item->metrics.push_back({key, MetricValue::Int(v)}); }
  void String(uint32_t key, absl::string_view v) {
    item->metrics.push_back({key, MetricValue::String(v)});
  }
};
struct TouchSink {
  Touched* touched;
  void Double(uint32_t, double v) { touched->Number(v); }
  void Float(uint32_t, float v) { touched->Number(v); }
  void Int(uint32_t, int64_t v) { touched->Integer(v); }
  void String(uint32_t, absl::string_view v) { touched->Text(v); }
};

}  // namespace

// Tuned protobuf ------------------------------------------------------------

absl::Status BuildTunedProto(const RankResult& r, tuned::Result* out) {
  Layout layout;
  if (absl::Status s = Analyze(r, &layout); !s.ok()) return s;
  out->Clear();
  for (const MetricKey& key : r.keys) {
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
  out->mutable_items()->Reserve(static_cast<int>(r.items.size()));
  const uint32_t* str = layout.string_index.data();
  for (size_t i = 0; i < r.items.size(); ++i) {
    const RankedItem& item = r.items[i];
    const Layout::Shape& shape = layout.shapes[layout.item_shape[i]];
    tuned::Item* p = out->add_items();
    p->set_item_id(item.item_id);
    p->set_score(item.score);
    p->set_position(item.position);
    p->set_shape(layout.item_shape[i]);
    auto* doubles = p->mutable_doubles();
    doubles->Reserve(static_cast<int>(shape.where[0].size()));
    for (uint32_t j : shape.where[0])
      doubles->AddAlreadyReserved(item.metrics[j].value.double_value());
    auto* floats = p->mutable_floats();
    floats->Reserve(static_cast<int>(shape.where[1].size()));
    for (uint32_t j : shape.where[1])
      floats->AddAlreadyReserved(item.metrics[j].value.float_value());
    auto* ints = p->mutable_ints();
    ints->Reserve(static_cast<int>(shape.where[2].size()));
    for (uint32_t j : shape.where[2]) ints->AddAlreadyReserved(item.metrics[j].value.int_value());
    auto* strings = p->mutable_strings();
    strings->Reserve(static_cast<int>(shape.where[3].size()));
    for (size_t j = 0; j < shape.where[3].size(); ++j) strings->AddAlreadyReserved(*str++);
    if (!item.log.empty()) p->set_log(item.log);
  }
  return absl::OkStatus();
}

absl::StatusOr<RankResult> TunedProtoToModel(const tuned::Result& m) {
  constexpr char kFormat[] = "tuned-protobuf";
  RankResult r;
  r.keys.reserve(m.keys_size());
  for (const tuned::Key& k : m.keys()) {
    std::optional<MetricType> type = MetricTypeFromNumber(static_cast<int>(k.type()));
    if (!type) return Corrupt(kFormat, "key type");
    r.keys.push_back(MetricKey{k.name(), *type});
  }
  const size_t nkeys = r.keys.size();
  r.items.resize(m.items_size());
  for (int i = 0; i < m.items_size(); ++i) {
    const tuned::Item& p = m.items(i);
    RankedItem& item = r.items[i];
    item.item_id = p.item_id();
    item.score = p.score();
    item.position = p.position();
    if (p.shape() >= static_cast<uint32_t>(m.shapes_size())) return Corrupt(kFormat, "shape");
    const tuned::Shape& s = m.shapes(static_cast<int>(p.shape()));
    item.metrics.reserve(s.double_keys_size() + s.float_keys_size() + s.int_keys_size() +
                         s.string_keys_size());
    absl::Status st =
        ReadColumn(kFormat, p.doubles(), s.double_keys().data(), s.double_keys_size(), nkeys, &item,
                   [](double v) -> absl::StatusOr<MetricValue> { return MetricValue::Double(v); });
    if (st.ok()) {
      st = ReadColumn(kFormat, p.floats(), s.float_keys().data(), s.float_keys_size(), nkeys, &item,
                      [](float v) -> absl::StatusOr<MetricValue> { return MetricValue::Float(v); });
    }
    if (st.ok()) {
      st = ReadColumn(kFormat, p.ints(), s.int_keys().data(), s.int_keys_size(), nkeys, &item,
                      [](int64_t v) -> absl::StatusOr<MetricValue> { return MetricValue::Int(v); });
    }
    if (st.ok()) {
      st = ReadColumn(kFormat, p.strings(), s.string_keys().data(), s.string_keys_size(), nkeys,
                      &item, [&](uint32_t d) -> absl::StatusOr<MetricValue> {
                        if (d >= static_cast<uint32_t>(m.string_dict_size())) {
                          return Corrupt(kFormat, "dictionary index");
                        }
                        return MetricValue::String(m.string_dict(static_cast<int>(d)));
                      });
    }
    if (!st.ok()) return st;
    item.log = p.log();
  }
  return r;
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
absl::Status FbItem(const fb::Result* root, const fb::Item* p, size_t nkeys, Sink sink) {
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
      sink.String(s->string_keys()->Get(j), absl::string_view(text->data(), text->size()));
    }
  }
  return absl::OkStatus();
}

absl::string_view FbText(const flatbuffers::String* s) {
  return s == nullptr ? absl::string_view() : absl::string_view(s->data(), s->size());
}
}  // namespace

absl::StatusOr<flatbuffers::DetachedBuffer> EncodeFlatbuffers(const RankResult& r,
                                                              size_t initial_size) {
  Layout layout;
  if (absl::Status s = Analyze(r, &layout); !s.ok()) return s;
  flatbuffers::FlatBufferBuilder b(initial_size);
  std::vector<flatbuffers::Offset<fb::Key>> keys;
  keys.reserve(r.keys.size());
  for (const MetricKey& key : r.keys) {
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
  std::vector<flatbuffers::Offset<fb::Item>> items(r.items.size());
  // FlatBuffers builds back to front; items are written last to first so
  // the string-index cursor runs backwards too.
  size_t str = layout.string_index.size();
  for (size_t i = r.items.size(); i-- > 0;) {
    const RankedItem& item = r.items[i];
    const Layout::Shape& shape = layout.shapes[layout.item_shape[i]];
    auto log = item.log.empty() ? flatbuffers::Offset<flatbuffers::String>()
                                : b.CreateString(item.log.data(), item.log.size());
    uint32_t* sp;
    auto strings = FbColumn<uint32_t>(b, shape.where[3].size(), &sp);
    str -= shape.where[3].size();
    for (size_t j = 0; j < shape.where[3].size(); ++j) Store(sp + j, layout.string_index[str + j]);
    int64_t* ip;
    auto ints = FbColumn<int64_t>(b, shape.where[2].size(), &ip);
    for (size_t j = 0; j < shape.where[2].size(); ++j) {
      Store(ip + j, item.metrics[shape.where[2][j]].value.int_value());
    }
    float* fp;
    auto floats = FbColumn<float>(b, shape.where[1].size(), &fp);
    for (size_t j = 0; j < shape.where[1].size(); ++j) {
      Store(fp + j, item.metrics[shape.where[1][j]].value.float_value());
    }
    double* dp;
    auto doubles = FbColumn<double>(b, shape.where[0].size(), &dp);
    for (size_t j = 0; j < shape.where[0].size(); ++j) {
      Store(dp + j, item.metrics[shape.where[0][j]].value.double_value());
    }
    auto id = b.CreateString(item.item_id.data(), item.item_id.size());
    items[i] = fb::CreateItem(b, id, item.score, item.position, layout.item_shape[i], doubles,
                              floats, ints, strings, log);
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
  RankResult r;
  if (const auto* keys = (*root)->keys()) {
    r.keys.reserve(keys->size());
    for (const fb::Key* k : *keys) {
      std::optional<MetricType> type = MetricTypeFromNumber(k->type());
      if (!type) return Corrupt(kFb, "key type");
      r.keys.push_back(MetricKey{std::string(FbText(k->name())), *type});
    }
  }
  const auto* items = (*root)->items();
  if (items == nullptr) return r;
  r.items.resize(items->size());
  for (size_t i = 0; i < items->size(); ++i) {
    const fb::Item* p = items->Get(i);
    RankedItem& item = r.items[i];
    item.item_id = std::string(FbText(p->item_id()));
    item.score = p->score();
    item.position = p->position();
    item.metrics.reserve(r.keys.size());
    absl::Status s = FbItem(*root, p, r.keys.size(), ModelSink{&item});
    if (!s.ok()) return s;
    item.log = std::string(FbText(p->log()));
  }
  return r;
}

absl::Status TopNFlatbuffers(absl::string_view bytes, size_t n, Touched* touched) {
  absl::StatusOr<const fb::Result*> root = FbRoot(bytes);
  if (!root.ok()) return root.status();
  const auto* items = (*root)->items();
  const size_t nkeys = (*root)->keys() ? (*root)->keys()->size() : 0;
  const size_t count = items == nullptr ? 0 : std::min<size_t>(n, items->size());
  for (size_t i = 0; i < count; ++i) {
    const fb::Item* p = items->Get(i);
    touched->Text(FbText(p->item_id()));
    touched->Number(p->score());
    touched->Integer(p->position());
    absl::Status s = FbItem(*root, p, nkeys, TouchSink{touched});
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
absl::Status CpItem(cp::Result::Reader root, cp::Item::Reader p, size_t nkeys, Sink sink) {
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
    sink.String(sk[j], CpText(dict[sv[j]]));
  }
  return absl::OkStatus();
}
}  // namespace

absl::StatusOr<std::unique_ptr<capnp::MallocMessageBuilder>> EncodeCapnp(
    const RankResult& r, unsigned first_segment_words) {
  Layout layout;
  if (absl::Status s = Analyze(r, &layout); !s.ok()) return s;
  auto message = std::make_unique<capnp::MallocMessageBuilder>(first_segment_words);
  cp::Result::Builder root = message->initRoot<cp::Result>();
  auto keys = root.initKeys(static_cast<unsigned>(r.keys.size()));
  for (unsigned k = 0; k < r.keys.size(); ++k) {
    SetText(keys[k].initName(static_cast<unsigned>(r.keys[k].name.size())), r.keys[k].name);
    keys[k].setType(static_cast<uint8_t>(r.keys[k].type));
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
  auto items = root.initItems(static_cast<unsigned>(r.items.size()));
  const uint32_t* str = layout.string_index.data();
  for (unsigned i = 0; i < r.items.size(); ++i) {
    const RankedItem& item = r.items[i];
    const Layout::Shape& shape = layout.shapes[layout.item_shape[i]];
    cp::Item::Builder p = items[i];
    SetText(p.initItemId(static_cast<unsigned>(item.item_id.size())), item.item_id);
    p.setScore(item.score);
    p.setPosition(item.position);
    p.setShape(layout.item_shape[i]);
    auto doubles = p.initDoubles(static_cast<unsigned>(shape.where[0].size()));
    for (unsigned j = 0; j < shape.where[0].size(); ++j) {
      doubles.set(j, item.metrics[shape.where[0][j]].value.double_value());
    }
    auto floats = p.initFloats(static_cast<unsigned>(shape.where[1].size()));
    for (unsigned j = 0; j < shape.where[1].size(); ++j) {
      floats.set(j, item.metrics[shape.where[1][j]].value.float_value());
    }
    auto ints = p.initInts(static_cast<unsigned>(shape.where[2].size()));
    for (unsigned j = 0; j < shape.where[2].size(); ++j) {
      ints.set(j, item.metrics[shape.where[2][j]].value.int_value());
    }
    auto strings = p.initStrings(static_cast<unsigned>(shape.where[3].size()));
    for (unsigned j = 0; j < shape.where[3].size(); ++j) strings.set(j, *str++);
    if (!item.log.empty()) {
      SetText(p.initLog(static_cast<unsigned>(item.log.size())), item.log);
    }
  }
  return message;
}

namespace {
absl::StatusOr<RankResult> DecodeCapnpOrThrow(kj::ArrayPtr<const capnp::word> words) {
  capnp::FlatArrayMessageReader reader(words, CpOptions());
  cp::Result::Reader root = reader.getRoot<cp::Result>();
  RankResult r;
  auto keys = root.getKeys();
  r.keys.reserve(keys.size());
  for (cp::Key::Reader k : keys) {
    std::optional<MetricType> type = MetricTypeFromNumber(k.getType());
    if (!type) return Corrupt(kCp, "key type");
    r.keys.push_back(MetricKey{std::string(CpText(k.getName())), *type});
  }
  auto items = root.getItems();
  r.items.resize(items.size());
  for (unsigned i = 0; i < items.size(); ++i) {
    cp::Item::Reader p = items[i];
    RankedItem& item = r.items[i];
    item.item_id = std::string(CpText(p.getItemId()));
    item.score = p.getScore();
    item.position = p.getPosition();
    item.metrics.reserve(r.keys.size());
    absl::Status s = CpItem(root, p, r.keys.size(), ModelSink{&item});
    if (!s.ok()) return s;
    item.log = std::string(CpText(p.getLog()));
  }
  return r;
}

absl::Status TopNCapnpOrThrow(kj::ArrayPtr<const capnp::word> words, size_t n, Touched* touched) {
  capnp::FlatArrayMessageReader reader(words, CpOptions());
  cp::Result::Reader root = reader.getRoot<cp::Result>();
  auto items = root.getItems();
  const size_t nkeys = root.getKeys().size();
  const unsigned count = static_cast<unsigned>(std::min<size_t>(n, items.size()));
  for (unsigned i = 0; i < count; ++i) {
    cp::Item::Reader p = items[i];
    touched->Text(CpText(p.getItemId()));
    touched->Number(p.getScore());
    touched->Integer(p.getPosition());
    absl::Status s = CpItem(root, p, nkeys, TouchSink{touched});
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
