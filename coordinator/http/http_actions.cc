// Copyright 2026 SMoE Lab authors.
#include "coordinator/http/http_actions.h"

#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "coordinator/http/http_auth.h"
#include "nlohmann/json.hpp"

namespace smoe::coordinator {
namespace {

using nlohmann::json;

// The request body as a JSON object ({} when empty); nullopt after replying
// 400.
std::optional<json> Body(const httplib::Request& req, httplib::Response& res) {
  if (req.body.empty()) return json::object();
  json body = json::parse(req.body, nullptr, /*allow_exceptions=*/false);
  if (!body.is_object()) {
    ReplyJson(res, 400, {{"error", "the request body must be a JSON object"}});
    return std::nullopt;
  }
  return body;
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
  add(api::Op::kSession, [tokens](const Request& req, Response& res) {
    const HttpCaller c = ResolveCaller(tokens, req);
    // The gate let only a viewer or admin through.
    json j = {{"name", c.who->name},
              {"role", RoleName(c.who->role)},
              {"admin", c.who->role == Role::kAdmin}};
    // Bearer callers need no CSRF token.
    j["csrf"] = c.bearer ? "" : CsrfTokenFor(*tokens, c.session);
    res.set_header("Cache-Control", "no-store");
    ReplyJson(res, 200, j);
  });
  add(api::Op::kCancelSweep,
      [scheduler, tokens](const Request& req, Response& res) {
        const std::string id = req.matches[1];
        auto n = scheduler->CancelSweep(id);
        if (!n.ok()) return ReplyError(res, n.status());
        SMOE_LOG(INFO) << "dashboard: " << CallerName(tokens, req)
                       << " cancelled sweep " << id;
        ReplyJson(res, 200, {{"sweep_id", id}, {"cancelled", *n}});
      });
  add(api::Op::kRetrySweep, [scheduler, tokens](const Request& req,
                                                Response& res) {
    const std::string id = req.matches[1];
    auto body = Body(req, res);
    if (!body) return;
    const json inc = body->value("include_cancelled", json(false));
    if (!inc.is_boolean()) {
      return ReplyJson(res, 400,
                       {{"error", "include_cancelled: must be true or false"}});
    }
    auto n = scheduler->RetrySweep(id, inc.get<bool>());
    if (!n.ok()) return ReplyError(res, n.status());
    SMOE_LOG(INFO) << "dashboard: " << CallerName(tokens, req)
                   << " retried sweep " << id << " (" << *n
                   << " trials re-queued)";
    ReplyJson(res, 200, {{"sweep_id", id}, {"requeued", *n}});
  });
  add(api::Op::kArchiveSweep,
      [scheduler, tokens](const Request& req, Response& res) {
        const std::string id = req.matches[1];
        auto body = Body(req, res);
        if (!body) return;
        const json archived = body->value("archived", json(true));
        if (!archived.is_boolean()) {
          return ReplyJson(res, 400,
                           {{"error", "archived: must be true or false"}});
        }
        Scheduler::SweepAnnotation a;
        a.archived = archived.get<bool>();
        auto v = scheduler->AnnotateSweep(id, a);
        if (!v.ok()) return ReplyError(res, v.status());
        SMOE_LOG(INFO) << "dashboard: " << CallerName(tokens, req)
                       << (*a.archived ? " archived" : " unarchived")
                       << " sweep " << id;
        ReplyJson(res, 200, SweepAnnotationJson(*v));
      });
  add(api::Op::kDeleteSweep,
      [scheduler, tokens](const Request& req, Response& res) {
        const std::string id = req.matches[1];
        auto d = scheduler->DeleteSweep(id);
        if (!d.ok()) return ReplyError(res, d.status());
        SMOE_LOG(INFO) << "dashboard: " << CallerName(tokens, req)
                       << " deleted sweep " << id << " (" << d->trial_ids.size()
                       << " trials)";
        ReplyJson(res, 200,
                  {{"sweep_id", id}, {"deleted_trials", d->trial_ids.size()}});
      });
  add(api::Op::kAnnotateSweep,
      [scheduler, tokens](const Request& req, Response& res) {
        const std::string id = req.matches[1];
        auto body = Body(req, res);
        if (!body) return;
        Scheduler::SweepAnnotation a;
        if (body->contains("notes")) {
          if (!(*body)["notes"].is_string()) {
            return ReplyJson(res, 400, {{"error", "notes: must be a string"}});
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
            return ReplyJson(res, 400,
                             {{"error", "tags: must be a list of strings"}});
          }
          a.tags = std::move(list);
        }
        for (const auto& [key, value] : body->items()) {
          if (key != "notes" && key != "tags") {
            return ReplyJson(
                res, 400,
                {{"error", absl::StrCat("unknown field '", key.substr(0, 64),
                                        "' (notes, tags)")}});
          }
        }
        auto v = scheduler->AnnotateSweep(id, a);
        if (!v.ok()) return ReplyError(res, v.status());
        SMOE_LOG(INFO) << "dashboard: " << CallerName(tokens, req)
                       << " annotated sweep " << id;
        ReplyJson(res, 200, SweepAnnotationJson(*v));
      });
  add(api::Op::kCancelTrial,
      [scheduler, tokens](const Request& req, Response& res) {
        const std::string id = req.matches[1];
        if (absl::Status st = scheduler->CancelTrial(id); !st.ok()) {
          return ReplyError(res, st);
        }
        SMOE_LOG(INFO) << "dashboard: " << CallerName(tokens, req)
                       << " cancelled trial " << id;
        ReplyJson(res, 200, {{"trial_id", id}, {"state", "cancelled"}});
      });
  add(api::Op::kRetryTrial,
      [scheduler, tokens](const Request& req, Response& res) {
        const std::string id = req.matches[1];
        if (absl::Status st = scheduler->RetryTrial(id); !st.ok()) {
          return ReplyError(res, st);
        }
        SMOE_LOG(INFO) << "dashboard: " << CallerName(tokens, req)
                       << " re-queued trial " << id;
        ReplyJson(res, 200, {{"trial_id", id}, {"state", "pending"}});
      });
}

}  // namespace smoe::coordinator
