#include "codec/registry.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace rankwire {

absl::Status CodecRegistry::Register(std::unique_ptr<Codec> codec) {
  if (codec == nullptr || codec->name().empty()) {
    return absl::InvalidArgumentError("cannot register a null or unnamed codec");
  }
  if (Find(codec->name()) != nullptr) {
    return absl::AlreadyExistsError(
        absl::StrCat("codec \"", codec->name(), "\" is already registered"));
  }
  codecs_.push_back(std::move(codec));
  return absl::OkStatus();
}

const Codec* CodecRegistry::Find(absl::string_view name) const {
  for (const auto& c : codecs_) {
    if (c->name() == name) return c.get();
  }
  return nullptr;
}

absl::StatusOr<const Codec*> CodecRegistry::Get(absl::string_view name) const {
  if (const Codec* c = Find(name)) return c;
  return absl::NotFoundError(
      absl::StrCat("unknown codec \"", name, "\"; known: ", absl::StrJoin(Names(), ", ")));
}

std::vector<std::string> CodecRegistry::Names() const {
  std::vector<std::string> names;
  names.reserve(codecs_.size());
  for (const auto& c : codecs_) names.emplace_back(c->name());
  return names;
}

}  // namespace rankwire
