// Copyright 2026 SMoE Lab authors.
#include "coordinator/http/http_actions.h"

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/logging.h"
#include "coordinator/api/http_status.h"
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

// The problems of a sweep file: ParseSweepYaml's message is one problem, or
// "N problems:" followed by one per line, each indented by two spaces
// (sweeps/sweep_spec.h).
json ProblemsOf(absl::string_view message) {
  json out = json::array();
  std::vector<absl::string_view> lines = absl::StrSplit(message, "\n  ");
  size_t first = 0;
  if (lines.size() > 1 && absl::EndsWith(lines[0], " problems:")) first = 1;
  for (size_t i = first; i < lines.size(); ++i) {
    out.push_back(std::string(lines[i]));
  }
  return out;
}

// A refused sweep file: the mapped code, {"error": the whole message,
// "problems": [one string per problem]}.
void ReplySweepError(httplib::Response& res, const absl::Status& s) {
  ReplyJson(res, api::HttpStatusOf(s.code()),
            {{"error", std::string(s.message())},
             {"problems", ProblemsOf(s.message())}});
}

// `v` as a grid value: strings, booleans and numbers; integral numbers become
// integers, as over gRPC (they match integer axes). InvalidArgument naming
// `field` otherwise.
absl::StatusOr<json> GridValue(const json& v, const std::string& field) {
  if (v.is_string() || v.is_boolean() || v.is_number_integer() ||
      v.is_number_unsigned()) {
    return v;
  }
  if (v.is_number_float()) {
    const double d = v.get<double>();
    // NOTE: |d| < 2^53 first: casting a larger double to int64_t is undefined.
    if (std::abs(d) < 9007199254740992.0 &&
        d == static_cast<double>(static_cast<int64_t>(d))) {
      return json(static_cast<int64_t>(d));
    }
    return v;
  }
  return absl::InvalidArgumentError(
      absl::StrCat(field, ": must be a number, string or boolean, not ",
                   DumpJson(v).substr(0, 64)));
}

// A field's value as a message quotes it: its JSON, at most 64 bytes.
std::string Quoted(const json& v) {
  return v.is_null() ? "missing"
                     : absl::StrCat("got ", DumpJson(v).substr(0, 64));
}

// Refuses fields of `body` outside `known` (400 naming the field); false
// after replying.
bool OnlyFields(const json& body, std::initializer_list<const char*> known,
                absl::string_view list, httplib::Response& res) {
  for (const auto& [key, value] : body.items()) {
    bool ok = false;
    for (const char* k : known) ok = ok || key == k;
    if (!ok) {
      ReplyJson(res, 400,
                {{"error", absl::StrCat("unknown field '", key.substr(0, 64),
                                        "' (", list, ")")}});
      return false;
    }
  }
  return true;
}

// The session, and submitting, extending, cancelling and retrying sweeps.
void AddSweepRunRoutes(const AddHttpRoute& add, Scheduler* scheduler,
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
  add(api::Op::kSubmitSweep, [scheduler, tokens](const Request& req,
                                                 Response& res) {
    auto body = Body(req, res);
    if (!body) return;
    if (!OnlyFields(*body, {"spec_yaml", "dry_run"}, "spec_yaml, dry_run",
                    res)) {
      return;
    }
    const json yaml = body->value("spec_yaml", json());
    if (!yaml.is_string() || yaml.get<std::string>().empty()) {
      return ReplyJson(
          res, 400,
          {{"error", absl::StrCat("spec_yaml: required, the sweep file's "
                                  "text (a non-empty string); ",
                                  Quoted(yaml))}});
    }
    const json dry = body->value("dry_run", json(false));
    if (!dry.is_boolean()) {
      return ReplyJson(
          res, 400,
          {{"error",
            absl::StrCat("dry_run: must be true or false; ", Quoted(dry))}});
    }
    auto r = scheduler->SubmitSweep(yaml.get<std::string>(), dry.get<bool>());
    if (!r.ok()) return ReplySweepError(res, r.status());
    if (!dry.get<bool>()) {
      SMOE_LOG(INFO) << "dashboard: " << CallerName(tokens, req)
                     << " submitted sweep " << r->sweep.record.sweep_id << " ("
                     << r->new_trials << " new trials)";
    }
    ReplyJson(res, 200,
              {{"sweep_id", r->sweep.record.sweep_id},
               {"kind", r->sweep.record.kind},
               {"dry_run", dry.get<bool>()},
               {"new_trials", r->new_trials},
               {"existing_trials", r->existing_trials},
               {"total_trials", r->new_trials + r->existing_trials}});
  });
  add(api::Op::kExtendSweep, [scheduler, tokens](const Request& req,
                                                 Response& res) {
    const std::string id = req.matches[1];
    auto body = Body(req, res);
    if (!body) return;
    if (!OnlyFields(*body, {"axis", "values"}, "axis, values", res)) return;
    const json axis = body->value("axis", json());
    if (!axis.is_string() || axis.get<std::string>().empty()) {
      return ReplyJson(
          res, 400,
          {{"error", absl::StrCat("axis: required, a grid axis of the sweep, "
                                  "\"seeds\", \"samples\" or "
                                  "\"samples_total\"; ",
                                  Quoted(axis))}});
    }
    const json values = body->value("values", json());
    if (!values.is_array() || values.empty()) {
      return ReplyJson(
          res, 400,
          {{"error", absl::StrCat("values: required, a non-empty list; ",
                                  Quoted(values))}});
    }
    std::vector<json> list;
    for (size_t i = 0; i < values.size(); ++i) {
      auto v = GridValue(values[i], absl::StrCat("values[", i, "]"));
      if (!v.ok()) return ReplyError(res, v.status());
      list.push_back(std::move(*v));
    }
    auto n = scheduler->ExtendSweep(id, axis.get<std::string>(), list);
    if (!n.ok()) return ReplySweepError(res, n.status());
    SMOE_LOG(INFO) << "dashboard: " << CallerName(tokens, req)
                   << " extended sweep " << id << " on "
                   << axis.get<std::string>() << " (" << *n << " new trials)";
    ReplyJson(res, 200, {{"sweep_id", id}, {"new_trials", *n}});
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
}

// Archiving, deleting and annotating sweeps.
void AddSweepEditRoutes(const AddHttpRoute& add, Scheduler* scheduler,
                        TokenRegistry* tokens) {
  using httplib::Request;
  using httplib::Response;
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
}

// Cancelling and retrying one trial.
void AddTrialRoutes(const AddHttpRoute& add, Scheduler* scheduler,
                    TokenRegistry* tokens) {
  using httplib::Request;
  using httplib::Response;
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

}  // namespace

void AddActionRoutes(const AddHttpRoute& add, Scheduler* scheduler,
                     TokenRegistry* tokens) {
  AddSweepRunRoutes(add, scheduler, tokens);
  AddSweepEditRoutes(add, scheduler, tokens);
  AddTrialRoutes(add, scheduler, tokens);
}

}  // namespace smoe::coordinator
