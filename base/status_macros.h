// Early-return macros for absl::Status and absl::StatusOr, defined once for
// the whole tree (Abseil 20220623, the version Debian ships, has none).
//
//   RETURN_IF_ERROR(expr);          // expr is an absl::Status
//   ASSIGN_OR_RETURN(T x, expr);    // expr is an absl::StatusOr<T>
//   ASSIGN_OR_RETURN(x, expr);      // assigns to an existing variable
//
// Both return the error unchanged (code and message), so they work in any
// function returning absl::Status or absl::StatusOr<U>. ASSIGN_OR_RETURN
// moves the value out of the StatusOr; it declares a hidden variable, so use
// it as a statement, not inside an unbraced if.
#ifndef RANKWIRE_BASE_STATUS_MACROS_H_
#define RANKWIRE_BASE_STATUS_MACROS_H_

#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define RETURN_IF_ERROR(expr)                                               \
  do {                                                                      \
    if (::absl::Status rankwire_status_ = (expr); !rankwire_status_.ok()) { \
      return rankwire_status_;                                              \
    }                                                                       \
  } while (0)

#define RANKWIRE_STATUS_CONCAT_INNER_(a, b) a##b
#define RANKWIRE_STATUS_CONCAT_(a, b) RANKWIRE_STATUS_CONCAT_INNER_(a, b)

#define ASSIGN_OR_RETURN(lhs, expr) \
  RANKWIRE_ASSIGN_OR_RETURN_IMPL_(RANKWIRE_STATUS_CONCAT_(rankwire_statusor_, __LINE__), lhs, expr)

// `statusor` is a name to declare and `lhs` may be a declaration
// ("auto x"): neither can be parenthesized.
// NOLINTBEGIN(bugprone-macro-parentheses)
#define RANKWIRE_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, expr) \
  auto statusor = (expr);                                    \
  if (!statusor.ok()) return std::move(statusor).status();   \
  lhs = *std::move(statusor)
// NOLINTEND(bugprone-macro-parentheses)

#endif  // RANKWIRE_BASE_STATUS_MACROS_H_
