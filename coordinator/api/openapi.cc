// Copyright 2026 SMoE Lab authors.
#include "coordinator/api/openapi.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "coordinator/api/access.h"
#include "coordinator/api/operations.h"

namespace smoe::coordinator {
namespace {

// The document without its paths: those are generated from the table of
// operations (coordinator/api/operations.h). Edit it here; openapi_test checks
// it against the routes and the access table.
constexpr char kDocument[] = R"json({
  "openapi": "3.0.3",
  "info": {"title": "SMoE Lab coordinator HTTP API", "version": "1", "description": "The dashboard's JSON API. Send `Authorization: Bearer TOKEN` (smoe token create --role viewer|admin; docs/roles.md) or sign in at /login for a session cookie. Each operation's `x-smoe-role` is the role it needs (admin may do everything). State-changing requests made with the session cookie need the X-CSRF-Token header from GET /api/session; bearer callers need none. Errors are JSON {\"error\": \"...\"}."},
  "servers": [{"url": "/"}],
  "tags": [{"name": "session"}, {"name": "read"}, {"name": "actions"}],
  "components": {
    "securitySchemes": {
      "bearer": {"type": "http", "scheme": "bearer", "description": "an API token (smoe_...)"},
      "session": {"type": "apiKey", "in": "cookie", "name": "smoe_session"}
    },
    "parameters": {
      "sweep": {"name": "sweep", "in": "path", "required": true, "schema": {"type": "string"}, "description": "sweep id (its name)"},
      "trial": {"name": "trial", "in": "path", "required": true, "schema": {"type": "string"}, "description": "the trial's 16-hex id within the sweep (the full trial id is {sweep}/{trial})"},
      "name": {"name": "name", "in": "path", "required": true, "schema": {"type": "string"}, "description": "artifact name as listed"},
      "csrf": {"name": "X-CSRF-Token", "in": "header", "required": false, "schema": {"type": "string"}, "description": "required with the session cookie (from GET /api/session); not with a bearer token"}
    },
    "schemas": {
      "Error": {"type": "object", "properties": {"error": {"type": "string"}}, "required": ["error"]},
      "SweepFileError": {"type": "object", "properties": {"error": {"type": "string", "description": "the whole message, as smoe sweep validate prints it"}, "problems": {"type": "array", "items": {"type": "string"}, "description": "every problem in the file, in file order, each naming the field and value"}}, "required": ["error", "problems"]},
      "Session": {"type": "object", "properties": {"name": {"type": "string"}, "role": {"type": "string", "enum": ["viewer", "admin"]}, "admin": {"type": "boolean"}, "csrf": {"type": "string"}}},
      "Counts": {"type": "object", "properties": {"pending": {"type": "integer"}, "running": {"type": "integer"}, "succeeded": {"type": "integer"}, "failed": {"type": "integer"}, "cancelled": {"type": "integer"}, "pruned": {"type": "integer"}, "total": {"type": "integer"}}},
      "Sweep": {"type": "object", "properties": {"sweep_id": {"type": "string"}, "kind": {"type": "string"}, "state": {"type": "string"}, "priority": {"type": "integer"}, "counts": {"$ref": "#/components/schemas/Counts"}, "unschedulable": {"type": "string"}, "version": {"type": "integer"}, "axes": {"type": "array", "items": {"type": "object", "properties": {"name": {"type": "string"}, "values": {"type": "array", "items": {}}}}}, "seeds": {"type": "array", "items": {"type": "integer"}}, "notes": {"type": "string"}, "tags": {"type": "array", "items": {"type": "string"}}, "archived": {"type": "boolean"}, "created_ms": {"type": "integer"}, "updated_ms": {"type": "integer"}}},
      "TrialRow": {"type": "object", "properties": {"trial_id": {"type": "string"}, "ordinal": {"type": "integer"}, "state": {"type": "string"}, "attempt": {"type": "integer"}, "worker": {"type": "string"}, "duration_s": {"type": "number"}, "error": {"type": "string"}, "exit_code": {"type": "integer", "nullable": true}, "seed": {"type": "integer"}, "params": {"type": "object", "description": "the swept parameters"}, "results": {"type": "object", "additionalProperties": {"type": "number", "nullable": true}}}},
      "SweepPage": {"type": "object", "properties": {"sweep": {"$ref": "#/components/schemas/Sweep"}, "columns": {"type": "object", "properties": {"params": {"type": "array", "items": {"type": "string"}}, "results": {"type": "array", "items": {"type": "string"}}}}, "total": {"type": "integer"}, "matched": {"type": "integer"}, "offset": {"type": "integer"}, "limit": {"type": "integer"}, "rows": {"type": "array", "items": {"$ref": "#/components/schemas/TrialRow"}}}}
    }
  }
})json";

// Per operation (by its name in the table of operations), what only the
// document says: description, parameters, request body and responses. The
// summary, tag, role (`x-smoe-role`), security and the 401/403 responses of an
// operation that needs a token come from the table.
constexpr char kOperationDetails[] = R"json({
  "Healthz": {"responses": {"200": {"description": "ok", "content": {"text/plain": {"schema": {"type": "string"}}}}, "503": {"description": "not serving: the scheduler is fail-stopped (the store cannot commit)", "content": {"text/plain": {"schema": {"type": "string"}}}}}},
  "LoginPage": {"responses": {"200": {"description": "HTML form", "content": {"text/html": {"schema": {"type": "string"}}}}}},
  "Login": {"description": "The token goes in the body (form field `token` or JSON {\"token\": ...}), never in the query string (400). Scripts need not sign in: they send `Authorization: Bearer TOKEN`.", "requestBody": {"required": true, "content": {"application/json": {"schema": {"type": "object", "properties": {"token": {"type": "string"}}, "required": ["token"]}}, "application/x-www-form-urlencoded": {"schema": {"type": "object", "properties": {"token": {"type": "string"}}}}}}, "responses": {"204": {"description": "signed in (JSON body)"}, "303": {"description": "signed in (form): redirect to /"}, "400": {"description": "token in the query string", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}, "401": {"description": "wrong token", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}, "403": {"description": "a worker token cannot sign in", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}}},
  "Logout": {"responses": {"204": {"description": "signed out"}}},
  "OpenApi": {"description": "Public: it describes the routes and the role each needs, and holds no data.", "responses": {"200": {"description": "OpenAPI 3 document", "content": {"application/json": {"schema": {"type": "object"}}}}}},
  "GetSession": {"responses": {"200": {"description": "OK", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Session"}}}}}},
  "ListSweeps": {"responses": {"200": {"description": "OK", "content": {"application/json": {"schema": {"type": "object", "properties": {"sweeps": {"type": "array", "items": {"$ref": "#/components/schemas/Sweep"}}}}}}}}},
  "GetSweep": {"description": "Filter terms in `q` (space-separated, all must match): FIELD OP VALUE with OP one of = != < <= > >= on a parameter (M or p.M), a result (ood_acc or r.ood_acc) or trial, state, attempt, worker, duration, seed, exit, error; `=`/`!=` take alternatives a|b; anything else is a case-insensitive substring. An unknown field is a 400 naming it and the known fields.", "parameters": [{"$ref": "#/components/parameters/sweep"}, {"name": "offset", "in": "query", "required": false, "schema": {"type": "integer"}, "description": "first row (default 0)"}, {"name": "limit", "in": "query", "required": false, "schema": {"type": "integer"}, "description": "rows, 0..5000 (default 100)"}, {"name": "sort", "in": "query", "required": false, "schema": {"type": "string"}, "description": "ordinal | trial | state | attempt | worker | duration | seed | exit | error | p.PARAM | r.RESULT; '-' prefix = descending"}, {"name": "state", "in": "query", "required": false, "schema": {"type": "string"}, "description": "comma-separated states"}, {"name": "q", "in": "query", "required": false, "schema": {"type": "string"}, "description": "filter terms (see the description)"}], "responses": {"200": {"description": "OK", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/SweepPage"}}}}, "400": {"description": "bad filter or sort key", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}, "404": {"description": "no such sweep", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}}},
  "DeleteSweep": {"description": "Removes the sweep, its trials, attempts, metrics, results, decisions, logs and checkpoints (rows in one transaction, then the checkpoint files). Refused (409) while any trial is pending or running: cancel the sweep first. Cannot be undone.", "parameters": [{"$ref": "#/components/parameters/sweep"}, {"$ref": "#/components/parameters/csrf"}], "responses": {"200": {"description": "deleted", "content": {"application/json": {"schema": {"type": "object", "properties": {"sweep_id": {"type": "string"}, "deleted_trials": {"type": "integer"}}}}}}, "404": {"description": "no such sweep", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}, "409": {"description": "the sweep has pending or running trials (the message counts them)", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}}},
  "GetCurves": {"parameters": [{"$ref": "#/components/parameters/sweep"}, {"name": "metric", "in": "query", "required": false, "schema": {"type": "string"}, "description": "result metric (default ood_acc)"}, {"name": "x", "in": "query", "required": false, "schema": {"type": "string"}, "description": "parameter on x (default top_k)"}, {"name": "series", "in": "query", "required": false, "schema": {"type": "string"}, "description": "a line per this parameter (default M; empty: one line)"}, {"name": "facet", "in": "query", "required": false, "schema": {"type": "string"}, "description": "a panel per this parameter (default attention; empty: one)"}, {"name": "bootstrap", "in": "query", "required": false, "schema": {"type": "integer"}, "description": "bootstrap resamples, 0..10000 (default 1000)"}], "responses": {"200": {"description": "OK", "content": {"application/json": {"schema": {"type": "object"}}}}, "404": {"description": "no such sweep", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}}},
  "GetAnalysis": {"parameters": [{"$ref": "#/components/parameters/sweep"}, {"name": "metric", "in": "query", "required": false, "schema": {"type": "string"}, "description": "result metric (default ood_acc)"}, {"name": "x", "in": "query", "required": false, "schema": {"type": "string"}, "description": "parameter on x (default top_k)"}, {"name": "series", "in": "query", "required": false, "schema": {"type": "string"}, "description": "a line per this parameter (default M; empty: one line)"}, {"name": "facet", "in": "query", "required": false, "schema": {"type": "string"}, "description": "a panel per this parameter (default attention; empty: one)"}, {"name": "bootstrap", "in": "query", "required": false, "schema": {"type": "integer"}, "description": "bootstrap resamples, 0..10000 (default 1000)"}], "responses": {"200": {"description": "OK", "content": {"application/json": {"schema": {"type": "object"}}}}, "404": {"description": "no such sweep", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}}},
  "GetTunedAnalysis": {"parameters": [{"$ref": "#/components/parameters/sweep"}, {"name": "tune", "in": "query", "required": true, "schema": {"type": "string"}, "description": "the tuned parameters, comma-separated (e.g. lr,weight_decay); each must be one the sweep varies"}, {"name": "select_by", "in": "query", "required": false, "schema": {"type": "string"}, "description": "the metric a configuration is selected by (default val_acc: the validation split)"}, {"name": "select_per", "in": "query", "required": false, "schema": {"type": "string", "enum": ["seed", "point"]}, "description": "seed (default): each seed picks its own configuration; point: one configuration per x, by its mean over seeds"}, {"name": "metric", "in": "query", "required": false, "schema": {"type": "string"}, "description": "result metric (default ood_acc)"}, {"name": "x", "in": "query", "required": false, "schema": {"type": "string"}, "description": "parameter on x (default top_k)"}, {"name": "series", "in": "query", "required": false, "schema": {"type": "string"}, "description": "a line per this parameter (default M; empty: one line)"}, {"name": "facet", "in": "query", "required": false, "schema": {"type": "string"}, "description": "a panel per this parameter (default attention; empty: one)"}, {"name": "bootstrap", "in": "query", "required": false, "schema": {"type": "integer"}, "description": "bootstrap resamples, 0..10000 (default 1000)"}], "responses": {"200": {"description": "OK", "content": {"application/json": {"schema": {"type": "object"}}}}, "400": {"description": "a tuned parameter the sweep does not vary, a select_by no trial reported, a bad select_per", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}, "404": {"description": "no such sweep", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}}},
  "GetSkillMix": {"parameters": [{"$ref": "#/components/parameters/sweep"}, {"name": "rows", "in": "query", "required": false, "schema": {"type": "string"}, "description": "row parameter (default ept)"}, {"name": "cols", "in": "query", "required": false, "schema": {"type": "string"}, "description": "column parameter (default k_skills)"}], "responses": {"200": {"description": "OK", "content": {"application/json": {"schema": {"type": "object"}}}}, "404": {"description": "no such sweep", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}}},
  "WatchSweep": {"parameters": [{"$ref": "#/components/parameters/sweep"}], "responses": {"200": {"description": "event stream", "content": {"text/event-stream": {"schema": {"type": "string"}}}}, "404": {"description": "no such sweep", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}, "503": {"description": "too many event streams", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}}},
  "GetSearch": {"parameters": [{"$ref": "#/components/parameters/sweep"}], "responses": {"200": {"description": "OK", "content": {"application/json": {"schema": {"type": "object"}}}}, "404": {"description": "no such sweep", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}}},
  "GetTrialMetrics": {"parameters": [{"$ref": "#/components/parameters/sweep"}, {"$ref": "#/components/parameters/trial"}, {"name": "name", "in": "query", "required": false, "schema": {"type": "string"}, "description": "only this metric"}, {"name": "max_points", "in": "query", "required": false, "schema": {"type": "integer"}, "description": "points per series, 2..100000 (default 2000)"}], "responses": {"200": {"description": "OK", "content": {"application/json": {"schema": {"type": "object"}}}}, "404": {"description": "no such trial", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}}},
  "GetTrialLogs": {"parameters": [{"$ref": "#/components/parameters/sweep"}, {"$ref": "#/components/parameters/trial"}, {"name": "attempt", "in": "query", "required": false, "schema": {"type": "integer"}, "description": "attempt number (default 0: the latest)"}], "responses": {"200": {"description": "OK", "content": {"application/json": {"schema": {"type": "object", "properties": {"trial_id": {"type": "string"}, "attempt": {"type": "integer"}, "attempts": {"type": "integer"}, "running": {"type": "boolean"}, "as_of_ms": {"type": "integer"}, "total_bytes": {"type": "integer"}, "text": {"type": "string"}}}}}}, "400": {"description": "attempt not an integer, or negative", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}, "404": {"description": "no such trial or attempt, or no logs kept", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}}},
  "ListArtifacts": {"parameters": [{"$ref": "#/components/parameters/sweep"}, {"$ref": "#/components/parameters/trial"}], "responses": {"200": {"description": "OK", "content": {"application/json": {"schema": {"type": "object"}}}}, "404": {"description": "no such trial", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}}},
  "GetArtifact": {"parameters": [{"$ref": "#/components/parameters/sweep"}, {"$ref": "#/components/parameters/trial"}, {"$ref": "#/components/parameters/name"}], "responses": {"200": {"description": "the artifact's bytes", "content": {"application/octet-stream": {"schema": {"type": "string", "format": "binary"}}}}, "404": {"description": "no such artifact", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}}},
  "SubmitSweep": {"parameters": [{"$ref": "#/components/parameters/csrf"}], "requestBody": {"required": true, "content": {"application/json": {"schema": {"type": "object", "properties": {"spec_yaml": {"type": "string", "description": "the sweep file's text (YAML), at most the coordinator's --max-sweep-bytes"}, "dry_run": {"type": "boolean", "description": "validate and count only; nothing is stored (default false)"}}, "required": ["spec_yaml"], "additionalProperties": false}}}}, "responses": {"200": {"description": "submitted (or valid, with dry_run); resubmitting an equal file adds nothing", "content": {"application/json": {"schema": {"type": "object", "properties": {"sweep_id": {"type": "string"}, "kind": {"type": "string"}, "dry_run": {"type": "boolean"}, "new_trials": {"type": "integer"}, "existing_trials": {"type": "integer"}, "total_trials": {"type": "integer"}}, "required": ["sweep_id", "kind", "dry_run", "new_trials", "existing_trials", "total_trials"]}}}}, "400": {"description": "an invalid sweep file: every problem", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/SweepFileError"}}}}, "409": {"description": "a sweep of that name exists with a different file, or the state refuses it", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/SweepFileError"}}}}, "413": {"description": "body larger than 1 MiB", "content": {"text/plain": {"schema": {"type": "string"}}}}}},
  "ExtendSweep": {"parameters": [{"$ref": "#/components/parameters/sweep"}, {"$ref": "#/components/parameters/csrf"}], "requestBody": {"required": true, "content": {"application/json": {"schema": {"type": "object", "properties": {"axis": {"type": "string", "description": "a grid axis of the sweep, or seeds"}, "values": {"type": "array", "minItems": 1, "items": {"oneOf": [{"type": "number"}, {"type": "string"}, {"type": "boolean"}]}, "description": "values to add; ones already present are ignored"}}, "required": ["axis", "values"], "additionalProperties": false}}}}, "responses": {"200": {"description": "extended", "content": {"application/json": {"schema": {"type": "object", "properties": {"sweep_id": {"type": "string"}, "new_trials": {"type": "integer"}}, "required": ["sweep_id", "new_trials"]}}}}, "400": {"description": "a bad body, or a value the axis refuses (naming it)", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/SweepFileError"}}}}, "404": {"description": "no such sweep or axis", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/SweepFileError"}}}}}},
  "CancelSweep": {"parameters": [{"$ref": "#/components/parameters/sweep"}, {"$ref": "#/components/parameters/csrf"}], "responses": {"200": {"description": "OK", "content": {"application/json": {"schema": {"type": "object", "properties": {"sweep_id": {"type": "string"}, "cancelled": {"type": "integer"}}, "required": ["sweep_id", "cancelled"]}}}}, "404": {"description": "no such sweep", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}}},
  "RetrySweep": {"parameters": [{"$ref": "#/components/parameters/sweep"}, {"$ref": "#/components/parameters/csrf"}], "requestBody": {"required": false, "description": "default false", "content": {"application/json": {"schema": {"type": "object", "properties": {"include_cancelled": {"type": "boolean"}}, "additionalProperties": false}}}}, "responses": {"200": {"description": "OK", "content": {"application/json": {"schema": {"type": "object", "properties": {"sweep_id": {"type": "string"}, "requeued": {"type": "integer"}}, "required": ["sweep_id", "requeued"]}}}}, "400": {"description": "bad body", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}, "404": {"description": "no such sweep", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}}},
  "ArchiveSweep": {"parameters": [{"$ref": "#/components/parameters/sweep"}, {"$ref": "#/components/parameters/csrf"}], "requestBody": {"required": false, "description": "default true", "content": {"application/json": {"schema": {"type": "object", "properties": {"archived": {"type": "boolean"}}, "additionalProperties": false}}}}, "responses": {"200": {"description": "OK", "content": {"application/json": {"schema": {"type": "object", "properties": {"sweep_id": {"type": "string"}, "notes": {"type": "string"}, "tags": {"type": "array", "items": {"type": "string"}}, "archived": {"type": "boolean"}}, "required": ["sweep_id", "notes", "tags", "archived"]}}}}, "400": {"description": "bad body", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}, "404": {"description": "no such sweep", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}}},
  "AnnotateSweep": {"parameters": [{"$ref": "#/components/parameters/sweep"}, {"$ref": "#/components/parameters/csrf"}], "requestBody": {"required": false, "description": "either or both", "content": {"application/json": {"schema": {"type": "object", "properties": {"notes": {"type": "string"}, "tags": {"type": "array", "items": {"type": "string"}}}, "additionalProperties": false}}}}, "responses": {"200": {"description": "OK", "content": {"application/json": {"schema": {"type": "object", "properties": {"sweep_id": {"type": "string"}, "notes": {"type": "string"}, "tags": {"type": "array", "items": {"type": "string"}}, "archived": {"type": "boolean"}}, "required": ["sweep_id", "notes", "tags", "archived"]}}}}, "400": {"description": "bad body", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}, "404": {"description": "no such sweep", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}}},
  "CancelTrial": {"parameters": [{"$ref": "#/components/parameters/sweep"}, {"$ref": "#/components/parameters/trial"}, {"$ref": "#/components/parameters/csrf"}], "responses": {"200": {"description": "OK", "content": {"application/json": {"schema": {"type": "object", "properties": {"trial_id": {"type": "string"}, "state": {"type": "string", "enum": ["cancelled"]}}, "required": ["trial_id", "state"]}}}}, "404": {"description": "no such trial", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}, "409": {"description": "not pending or running", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}}},
  "RetryTrial": {"parameters": [{"$ref": "#/components/parameters/sweep"}, {"$ref": "#/components/parameters/trial"}, {"$ref": "#/components/parameters/csrf"}], "responses": {"200": {"description": "OK", "content": {"application/json": {"schema": {"type": "object", "properties": {"trial_id": {"type": "string"}, "state": {"type": "string", "enum": ["pending"]}}, "required": ["trial_id", "state"]}}}}, "404": {"description": "no such trial", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}, "409": {"description": "not failed or cancelled", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}}}
})json";

nlohmann::json Unauthorized() {
  return {{"description", "no token or session"},
          {"content",
           {{"application/json",
             {{"schema", {{"$ref", "#/components/schemas/Error"}}}}}}}};
}

nlohmann::json Forbidden(Access access) {
  nlohmann::json r = Unauthorized();
  r["description"] = absl::StrCat(
      "the token's role is not '", AccessName(access),
      "' (or admin), or a state-changing request lacks the CSRF token");
  return r;
}

nlohmann::json Build() {
  nlohmann::json doc = nlohmann::json::parse(kDocument, nullptr, false);
  const nlohmann::json details =
      nlohmann::json::parse(kOperationDetails, nullptr, false);
  if (doc.is_discarded() || details.is_discarded()) return nlohmann::json();
  // The id patterns come from the table's header (written once).
  nlohmann::json& params = doc["components"]["parameters"];
  params["sweep"]["schema"]["pattern"] =
      absl::StrCat("^", api::kSweepIdRegex, "$");
  params["trial"]["schema"]["pattern"] =
      absl::StrCat("^", api::kTrialHexRegex, "$");
  params["name"]["schema"]["pattern"] =
      absl::StrCat("^", api::kArtifactNameRegex, "$");
  doc["paths"] = nlohmann::json::object();
  for (const api::Operation& op : api::Operations()) {
    if (op.http_method == nullptr || op.tag == nullptr) continue;
    nlohmann::json o =
        details.contains(op.name) ? details[op.name] : nlohmann::json::object();
    o["summary"] = op.summary;
    o["tags"] = {op.tag};
    o["x-smoe-role"] = AccessName(op.access);
    if (op.access == Access::kPublic) {
      o["security"] = nlohmann::json::array();
    } else {
      o["security"] = {{{"bearer", nlohmann::json::array()}},
                       {{"session", nlohmann::json::array()}}};
      o["responses"]["401"] = Unauthorized();
      o["responses"]["403"] = Forbidden(op.access);
    }
    doc["paths"][op.http_path][absl::AsciiStrToLower(op.http_method)] =
        std::move(o);
  }
  return doc;
}

}  // namespace

const nlohmann::json& OpenApiSpec() {
  static const auto* const kDoc = new nlohmann::json(Build());
  return *kDoc;
}

const nlohmann::json& OpenApiOperationDetails() {
  static const auto* const kDetails = new nlohmann::json(
      nlohmann::json::parse(kOperationDetails, nullptr, false));
  return *kDetails;
}

}  // namespace smoe::coordinator
