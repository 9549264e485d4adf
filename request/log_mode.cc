#include "request/log_mode.h"

#include "absl/strings/str_cat.h"

namespace rankwire {

absl::StatusOr<rank::v1::LogMode> ParseLogMode(absl::string_view name, bool allow_default) {
  if (allow_default && name == "default") return rank::v1::LOG_MODE_DEFAULT;
  if (name == "store") return rank::v1::LOG_MODE_STORE;
  if (name == "inline") return rank::v1::LOG_MODE_INLINE;
  if (name == "none") return rank::v1::LOG_MODE_NONE;
  return absl::InvalidArgumentError(absl::StrCat("log mode \"", name, "\": expected ",
                                                 allow_default ? "default, " : "",
                                                 "store, inline or none"));
}

absl::string_view LogModeName(rank::v1::LogMode mode) {
  switch (mode) {
    case rank::v1::LOG_MODE_STORE:
      return "store";
    case rank::v1::LOG_MODE_INLINE:
      return "inline";
    case rank::v1::LOG_MODE_NONE:
      return "none";
    default:
      return "default";
  }
}

}  // namespace rankwire
