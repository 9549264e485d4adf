// CodecRegistry: the codecs a process has, by name. Built explicitly in
// main() (or a test) and passed to whoever needs it; there is no global
// registry and no registration in static initializers.
//
// Example (RETURN_IF_ERROR is base/status_macros.h's):
//   CodecRegistry registry;
//   RETURN_IF_ERROR(registry.Register(std::make_unique<ProtobufCodec>()));
//   const Codec* codec = registry.Find("protobuf");
//
// Thread safety: Register() is for start-up. After that, every const method
// is safe from many threads.
#ifndef RANKWIRE_CODEC_REGISTRY_H_
#define RANKWIRE_CODEC_REGISTRY_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "codec/codec.h"

namespace rankwire {

class CodecRegistry {
 public:
  CodecRegistry() = default;
  CodecRegistry(CodecRegistry&&) = default;
  CodecRegistry& operator=(CodecRegistry&&) = default;

  // AlreadyExists if a codec of that name is registered; InvalidArgument for
  // a null codec or an empty name.
  absl::Status Register(std::unique_ptr<Codec> codec);

  // nullptr if there is no codec of that name.
  const Codec* Find(absl::string_view name) const;
  // NotFound naming the codecs that do exist.
  absl::StatusOr<const Codec*> Get(absl::string_view name) const;

  // The first name in `accept` (any range of strings) this registry has,
  // else `fallback`.
  template <typename Names>
  const Codec& Negotiate(const Names& accept, const Codec& fallback) const {
    for (const auto& name : accept) {
      if (const Codec* c = Find(name)) return *c;
    }
    return fallback;
  }

  // Names in registration order.
  std::vector<std::string> Names() const;

 private:
  std::vector<std::unique_ptr<Codec>> codecs_;
};

}  // namespace rankwire

#endif  // RANKWIRE_CODEC_REGISTRY_H_
