// Copyright 2026 SMoE Lab authors.
#include "coordinator/api/access.h"

#include <regex>

#include "absl/strings/str_cat.h"

namespace smoe::coordinator {

const char* AccessName(Access access) {
  switch (access) {
    case Access::kPublic:
      return "public";
    case Access::kViewer:
      return "viewer";
    case Access::kWorker:
      return "worker";
    case Access::kAdmin:
      return "admin";
  }
  return "?";
}

bool Allows(Role role, Access required) {
  switch (required) {
    case Access::kPublic:
      return true;
    case Access::kViewer:
      return role == Role::kViewer || role == Role::kAdmin;
    case Access::kWorker:
      return role == Role::kWorker || role == Role::kAdmin;
    case Access::kAdmin:
      return role == Role::kAdmin;
  }
  return false;
}

const std::vector<GrpcRule>& GrpcAccessTable() {
  static const auto* const kTable = [] {
    auto* t = new std::vector<GrpcRule>();
    for (const api::Operation& op : api::Operations()) {
      if (op.grpc_method != nullptr) t->push_back({op.grpc_method, op.access});
    }
    return t;
  }();
  return *kTable;
}

const std::vector<HttpRule>& HttpAccessTable() {
  static const auto* const kTable = [] {
    auto* t = new std::vector<HttpRule>();
    for (const api::Operation& op : api::Operations()) {
      if (op.http_method == nullptr) continue;
      t->push_back({op.http_method, api::HttpPattern(op), op.access});
    }
    return t;
  }();
  return *kTable;
}

std::optional<Access> GrpcAccess(absl::string_view path) {
  for (const GrpcRule& r : GrpcAccessTable()) {
    if (path == r.method) return r.required;
  }
  return std::nullopt;
}

std::optional<Access> HttpAccess(absl::string_view method,
                                 absl::string_view path) {
  static const auto* const kRegexes = [] {
    auto* v = new std::vector<std::regex>();
    for (const HttpRule& r : HttpAccessTable()) v->emplace_back(r.pattern);
    return v;
  }();
  if (method == "HEAD") method = "GET";
  const std::string p(path);
  const std::vector<HttpRule>& table = HttpAccessTable();
  for (size_t i = 0; i < table.size(); ++i) {
    if (method == table[i].method && std::regex_match(p, (*kRegexes)[i])) {
      return table[i].required;
    }
  }
  return std::nullopt;
}

absl::Status Authorize(const std::optional<Principal>& who, Access required,
                       absl::string_view what) {
  if (required == Access::kPublic) return absl::OkStatus();
  if (!who.has_value()) {
    return absl::UnauthenticatedError(
        absl::StrCat(what, " needs an API token"));
  }
  if (Allows(who->role, required)) return absl::OkStatus();
  return absl::PermissionDeniedError(
      absl::StrCat(what, " needs role '", AccessName(required), "'; token '",
                   who->name, "' has role '", RoleName(who->role), "'"));
}

}  // namespace smoe::coordinator
