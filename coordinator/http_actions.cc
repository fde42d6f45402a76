// Copyright 2026 SMoE Lab authors.
#include "coordinator/http_actions.h"

#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "coordinator/http_auth.h"
#include "nlohmann/json.hpp"

namespace smoe::coordinator {
namespace {

using nlohmann::json;

constexpr char kJson[] = "application/json; charset=utf-8";
#define SMOE_SWEEP "([a-z0-9][a-z0-9._-]{0,63})"
#define SMOE_TRIAL "([a-z0-9][a-z0-9._-]{0,63}/[0-9a-f]{16})"

void Reply(httplib::Response& res, int status, const json& body) {
  res.status = status;
  res.set_content(body.dump(-1, ' ', false, json::error_handler_t::replace),
                  kJson);
}

void ReplyStatus(httplib::Response& res, const absl::Status& st) {
  int code = 500;
  switch (st.code()) {
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kOutOfRange:
      code = 400;
      break;
    case absl::StatusCode::kNotFound:
      code = 404;
      break;
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kAlreadyExists:
      code = 409;
      break;
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kResourceExhausted:
      code = 503;
      break;
    default:
      break;
  }
  Reply(res, code, {{"error", std::string(st.message())}});
}

// The request body as a JSON object ({} when empty); nullopt after replying
// 400.
std::optional<json> Body(const httplib::Request& req, httplib::Response& res) {
  if (req.body.empty()) return json::object();
  json body = json::parse(req.body, nullptr, /*allow_exceptions=*/false);
  if (!body.is_object()) {
    Reply(res, 400, {{"error", "the request body must be a JSON object"}});
    return std::nullopt;
  }
  return body;
}

std::string Who(TokenRegistry* tokens, const httplib::Request& req) {
  const HttpCaller c = ResolveCaller(tokens, req);
  return c.who.has_value() ? c.who->name : "?";
}

json SweepAnnotationJson(const SweepView& v) {
  return {{"sweep_id", v.record.sweep_id},
          {"notes", v.record.notes},
          {"tags", v.record.tags},
          {"archived", v.record.archived}};
}

}  // namespace

void AddActionRoutes(const AddHttpRoute& add, Scheduler* scheduler,
                     TokenRegistry* tokens) {
  using httplib::Request;
  using httplib::Response;
  add("GET", "/api/session", [tokens](const Request& req, Response& res) {
    const HttpCaller c = ResolveCaller(tokens, req);
    // The gate let only a viewer or admin through.
    json j = {{"name", c.who->name},
              {"role", RoleName(c.who->role)},
              {"admin", c.who->role == Role::kAdmin}};
    // Bearer callers need no CSRF token.
    j["csrf"] = c.bearer ? "" : CsrfTokenFor(*tokens, c.session);
    res.set_header("Cache-Control", "no-store");
    Reply(res, 200, j);
  });
  add("POST", "/api/sweeps/" SMOE_SWEEP "/cancel",
      [scheduler, tokens](const Request& req, Response& res) {
        const std::string id = req.matches[1];
        auto n = scheduler->CancelSweep(id);
        if (!n.ok()) return ReplyStatus(res, n.status());
        SMOE_LOG(INFO) << "dashboard: " << Who(tokens, req)
                       << " cancelled sweep " << id;
        Reply(res, 200, {{"sweep_id", id}, {"cancelled", *n}});
      });
  add("POST", "/api/sweeps/" SMOE_SWEEP "/retry",
      [scheduler, tokens](const Request& req, Response& res) {
        const std::string id = req.matches[1];
        auto body = Body(req, res);
        if (!body) return;
        const json inc = body->value("include_cancelled", json(false));
        if (!inc.is_boolean()) {
          return Reply(res, 400,
                       {{"error", "include_cancelled: must be true or false"}});
        }
        auto n = scheduler->RetrySweep(id, inc.get<bool>());
        if (!n.ok()) return ReplyStatus(res, n.status());
        SMOE_LOG(INFO) << "dashboard: " << Who(tokens, req) << " retried sweep "
                       << id << " (" << *n << " trials re-queued)";
        Reply(res, 200, {{"sweep_id", id}, {"requeued", *n}});
      });
  add("POST", "/api/sweeps/" SMOE_SWEEP "/archive",
      [scheduler, tokens](const Request& req, Response& res) {
        const std::string id = req.matches[1];
        auto body = Body(req, res);
        if (!body) return;
        const json archived = body->value("archived", json(true));
        if (!archived.is_boolean()) {
          return Reply(res, 400,
                       {{"error", "archived: must be true or false"}});
        }
        Scheduler::SweepAnnotation a;
        a.archived = archived.get<bool>();
        auto v = scheduler->AnnotateSweep(id, a);
        if (!v.ok()) return ReplyStatus(res, v.status());
        SMOE_LOG(INFO) << "dashboard: " << Who(tokens, req)
                       << (*a.archived ? " archived" : " unarchived")
                       << " sweep " << id;
        Reply(res, 200, SweepAnnotationJson(*v));
      });
  add("DELETE", "/api/sweeps/" SMOE_SWEEP,
      [scheduler, tokens](const Request& req, Response& res) {
        const std::string id = req.matches[1];
        auto d = scheduler->DeleteSweep(id);
        if (!d.ok()) return ReplyStatus(res, d.status());
        SMOE_LOG(INFO) << "dashboard: " << Who(tokens, req) << " deleted sweep "
                       << id << " (" << d->trial_ids.size() << " trials)";
        Reply(res, 200,
              {{"sweep_id", id}, {"deleted_trials", d->trial_ids.size()}});
      });
  add("PUT", "/api/sweeps/" SMOE_SWEEP "/annotations",
      [scheduler, tokens](const Request& req, Response& res) {
        const std::string id = req.matches[1];
        auto body = Body(req, res);
        if (!body) return;
        Scheduler::SweepAnnotation a;
        if (body->contains("notes")) {
          if (!(*body)["notes"].is_string()) {
            return Reply(res, 400, {{"error", "notes: must be a string"}});
          }
          a.notes = (*body)["notes"].get<std::string>();
        }
        if (body->contains("tags")) {
          const json& tags = (*body)["tags"];
          std::vector<std::string> list;
          bool ok = tags.is_array();
          for (const json& t : ok ? tags : json::array()) {
            ok = ok && t.is_string();
            if (ok) list.push_back(t.get<std::string>());
          }
          if (!ok) {
            return Reply(res, 400,
                         {{"error", "tags: must be a list of strings"}});
          }
          a.tags = std::move(list);
        }
        for (const auto& [key, value] : body->items()) {
          if (key != "notes" && key != "tags") {
            return Reply(
                res, 400,
                {{"error", absl::StrCat("unknown field '", key.substr(0, 64),
                                        "' (notes, tags)")}});
          }
        }
        auto v = scheduler->AnnotateSweep(id, a);
        if (!v.ok()) return ReplyStatus(res, v.status());
        SMOE_LOG(INFO) << "dashboard: " << Who(tokens, req)
                       << " annotated sweep " << id;
        Reply(res, 200, SweepAnnotationJson(*v));
      });
  add("POST", "/api/trials/" SMOE_TRIAL "/cancel",
      [scheduler, tokens](const Request& req, Response& res) {
        const std::string id = req.matches[1];
        if (absl::Status st = scheduler->CancelTrial(id); !st.ok()) {
          return ReplyStatus(res, st);
        }
        SMOE_LOG(INFO) << "dashboard: " << Who(tokens, req)
                       << " cancelled trial " << id;
        Reply(res, 200, {{"trial_id", id}, {"state", "cancelled"}});
      });
  add("POST", "/api/trials/" SMOE_TRIAL "/retry",
      [scheduler, tokens](const Request& req, Response& res) {
        const std::string id = req.matches[1];
        if (absl::Status st = scheduler->RetryTrial(id); !st.ok()) {
          return ReplyStatus(res, st);
        }
        SMOE_LOG(INFO) << "dashboard: " << Who(tokens, req)
                       << " re-queued trial " << id;
        Reply(res, 200, {{"trial_id", id}, {"state", "pending"}});
      });
}

#undef SMOE_SWEEP
#undef SMOE_TRIAL

}  // namespace smoe::coordinator
