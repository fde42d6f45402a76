// Copyright 2026 SMoE Lab authors.
//
// File: coordinator/http/http_reply.h
//
// How every HTTP handler of the coordinator registers its route and answers:
// routes by their row in the table of operations (coordinator/api/
// operations.h), JSON bodies, and errors as JSON {"error": "..."} with the
// one Status -> HTTP mapping (coordinator/api/http_status.h).
//
// Thread safety: the functions are safe for concurrent use.
#ifndef SMOE_COORDINATOR_HTTP_HTTP_REPLY_H_
#define SMOE_COORDINATOR_HTTP_HTTP_REPLY_H_

#include <httplib.h>

#include <functional>
#include <string>

#include "absl/status/status.h"
#include "coordinator/api/operations.h"
#include "nlohmann/json.hpp"

namespace smoe::coordinator {

// Registers the handler of one operation: its HTTP method and pattern come
// from the table of operations (REQUIRES: the operation is served over HTTP).
using AddHttpRoute = std::function<void(api::Op, httplib::Server::Handler)>;

// The JSON content type. Chosen so cpp-httplib does not compress it on the
// fly (it compresses exact "application/json" and every "text/*" except
// event-stream, with brotli at its slowest quality): JSON over loopback is
// cheap to send and expensive to compress.
inline constexpr char kJsonContentType[] = "application/json; charset=utf-8";

// `j` as compact JSON; bytes that are not UTF-8 are replaced, never refused.
std::string DumpJson(const nlohmann::json& j);

// Sets `status` and the JSON body `body`.
void ReplyJson(httplib::Response& res, int status, const nlohmann::json& body);

// An error: `status` and {"error": message}.
void ReplyError(httplib::Response& res, int status, const std::string& message);

// An error from a Status (REQUIRES: !s.ok()): the mapped code and
// {"error": s.message()}.
void ReplyError(httplib::Response& res, const absl::Status& s);

}  // namespace smoe::coordinator

#endif  // SMOE_COORDINATOR_HTTP_HTTP_REPLY_H_
