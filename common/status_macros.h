// Copyright 2026 SMoE Lab authors.
//
// File: common/status_macros.h
//
// Propagation macros for absl::Status / absl::StatusOr. Abseil 20220623 (Debian
// 12) has Status and StatusOr but not ABSL_RETURN_IF_ERROR /
// ABSL_ASSIGN_OR_RETURN (those arrive in LTS 20260526), so the project defines
// its own.
//
// Example:
//
//   absl::StatusOr<Sweep> LoadSweep(absl::string_view path) {
//     SMOE_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
//     SMOE_RETURN_IF_ERROR(Validate(text));
//     return Parse(text);
//   }
#ifndef SMOE_COMMON_STATUS_MACROS_H_
#define SMOE_COMMON_STATUS_MACROS_H_

#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

// Evaluates `expr` (an absl::Status); returns it from the enclosing function
// when it is not OK.
#define SMOE_RETURN_IF_ERROR(expr)                 \
  do {                                             \
    ::absl::Status smoe_status_internal_ = (expr); \
    if (!smoe_status_internal_.ok()) {             \
      return smoe_status_internal_;                \
    }                                              \
  } while (false)

#define SMOE_STATUS_MACROS_CONCAT_INNER_(x, y) x##y
#define SMOE_STATUS_MACROS_CONCAT_(x, y) SMOE_STATUS_MACROS_CONCAT_INNER_(x, y)

// Evaluates `rexpr` (an absl::StatusOr<T>). On error, returns its status from
// the enclosing function; otherwise moves the value into `lhs`, which may be a
// declaration (`std::string s`) or an existing lvalue.
//
// REQUIRES: used as a statement; `lhs` contains no unparenthesised commas.
#define SMOE_ASSIGN_OR_RETURN(lhs, rexpr)                                 \
  SMOE_ASSIGN_OR_RETURN_IMPL_(                                            \
      SMOE_STATUS_MACROS_CONCAT_(smoe_statusor_internal_, __LINE__), lhs, \
      rexpr)

#define SMOE_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, rexpr) \
  auto statusor = (rexpr);                                \
  if (!statusor.ok()) {                                   \
    return std::move(statusor).status();                  \
  }                                                       \
  lhs = std::move(statusor).value()

#endif  // SMOE_COMMON_STATUS_MACROS_H_
