// Copyright 2026 SMoE Lab authors.
#include "coordinator/http/http_reply.h"

#include "coordinator/api/http_status.h"

namespace smoe::coordinator {

std::string DumpJson(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

void ReplyJson(httplib::Response& res, int status, const nlohmann::json& body) {
  res.status = status;
  res.set_content(DumpJson(body), kJsonContentType);
}

void ReplyError(httplib::Response& res, int status,
                const std::string& message) {
  ReplyJson(res, status, {{"error", message}});
}

void ReplyError(httplib::Response& res, const absl::Status& s) {
  ReplyError(res, api::HttpStatusOf(s), std::string(s.message()));
}

}  // namespace smoe::coordinator
