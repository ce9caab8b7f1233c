// Small helpers for absl::Status propagation. Abseil 20220623 ships none.
#ifndef GLINT_CORE_STATUS_MACROS_H_
#define GLINT_CORE_STATUS_MACROS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define GLINT_CONCAT_INNER_(a, b) a##b
#define GLINT_CONCAT_(a, b) GLINT_CONCAT_INNER_(a, b)

// Returns from the enclosing function if `expr` (an absl::Status) is not OK.
#define GLINT_RETURN_IF_ERROR(expr)                      \
  do {                                                   \
    ::absl::Status glint_status_ = (expr);               \
    if (!glint_status_.ok()) return glint_status_;       \
  } while (false)

// `lhs` = value of `rexpr` (an absl::StatusOr<T>), or returns its status.
#define GLINT_ASSIGN_OR_RETURN(lhs, rexpr) \
  GLINT_ASSIGN_OR_RETURN_IMPL_(GLINT_CONCAT_(glint_statusor_, __LINE__), lhs, rexpr)

#define GLINT_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, rexpr) \
  auto statusor = (rexpr);                                 \
  if (!statusor.ok()) return statusor.status();            \
  lhs = std::move(statusor).value()

#endif  // GLINT_CORE_STATUS_MACROS_H_
