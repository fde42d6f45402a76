// Copyright 2026 SMoE Lab authors.
//
// File: coordinator/api/access.h
//
// Who may call what: every gRPC method and every HTTP route of the
// coordinator with the role it needs (docs/roles.md prints it), read from the
// table of operations (coordinator/api/operations.h).
//
// Both transports look a call up here before anything else runs, and refuse
// what is not in the table (fail closed): a method or route added without a
// row cannot be called at all, and access_test checks that every method of
// the proto services and every route the HTTP server registers has a row.
//
// Thread safety: the tables are immutable.
#ifndef SMOE_COORDINATOR_API_ACCESS_H_
#define SMOE_COORDINATOR_API_ACCESS_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "coordinator/api/operations.h"
#include "coordinator/tokens.h"

namespace smoe::coordinator {

// "public" | "viewer" | "worker" | "admin".
const char* AccessName(Access access);

// Whether a token of `role` may make a call that needs `required`: admin may
// do everything; viewer and worker only what needs exactly their role.
bool Allows(Role role, Access required);

struct GrpcRule {
  const char* method;  // full path: "/smoe.v1.Coordinator/SubmitSweep"
  Access required;
};
struct HttpRule {
  const char* method;   // "GET" | "POST" | "PUT" | "DELETE"
  std::string pattern;  // the regex the route is registered with
  Access required;
};

const std::vector<GrpcRule>& GrpcAccessTable();
// In match order: the first rule whose method and pattern match applies.
const std::vector<HttpRule>& HttpAccessTable();

// The rule for a gRPC call's :path, or nullopt when the table has none.
std::optional<Access> GrpcAccess(absl::string_view path);
// The rule for an HTTP request (HEAD is looked up as GET), or nullopt.
std::optional<Access> HttpAccess(absl::string_view method,
                                 absl::string_view path);

// OK when `who` may make a call that needs `required`. Unauthenticated when
// there is no principal (and the call is not public); PermissionDenied naming
// `what`, the role needed and the token's name and role otherwise.
absl::Status Authorize(const std::optional<Principal>& who, Access required,
                       absl::string_view what);

}  // namespace smoe::coordinator

#endif  // SMOE_COORDINATOR_API_ACCESS_H_
