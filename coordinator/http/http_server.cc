// Copyright 2026 SMoE Lab authors.
#include "coordinator/http/http_server.h"

#include <httplib.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <deque>
#include <map>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/mutex.h"
#include "analysis/curve_aggregator.h"
#include "analysis/skillmix_tables.h"
#include "common/api_token.h"
#include "common/http_listener.h"
#include "common/log_limiter.h"
#include "common/logging.h"
#include "coordinator/api/openapi.h"
#include "coordinator/api/operations.h"
#include "coordinator/http/artifact_routes.h"
#include "coordinator/http/http_actions.h"
#include "coordinator/http/http_auth.h"
#include "coordinator/http/http_connections.h"
#include "coordinator/http/http_reply.h"
#include "coordinator/http/http_server_assets.h"
#include "coordinator/http/log_routes.h"
#include "coordinator/http/worker_routes.h"
#include "coordinator/search_driver.h"
#include "coordinator/views/search_summary.h"
#include "coordinator/views/sweep_detail.h"
#include "coordinator/views/sweep_read_model.h"
#include "coordinator/views/trial_table.h"
#include "coordinator/views/tuned_view.h"
#include "nlohmann/json.hpp"
#include "trials/params.h"

namespace smoe::coordinator {
namespace {

using nlohmann::json;
using sweeps::Axis;
using sweeps::AxisNames;
using sweeps::SampledAxis;
using sweeps::SampledValues;
using sweeps::SweepKind;

// coordinator/http/http_reply.h says why this content type.
constexpr const char* kJson = kJsonContentType;
// The session cookie (coordinator/http/http_auth.h): carries the token's name
// and role and an HMAC, never the token.
constexpr const char* kCookieName = kSessionCookieName;

std::string Dump(const json& j) { return DumpJson(j); }

int64_t ToUnixMs(absl::Time t) { return absl::ToUnixMillis(t); }

json CountsJson(const StateCounts& c) {
  return {{"pending", c.pending},     {"running", c.running},
          {"succeeded", c.succeeded}, {"failed", c.failed},
          {"cancelled", c.cancelled}, {"pruned", c.pruned},
          {"total", c.total()}};
}

// The kind's view (trials::KindView) when it declares one, else null: the
// dashboard then opens on the sweep's own axes and results (data.js
// defaultView, as trials::DefaultViewOf).
json ViewJson(const SweepView& v) {
  const trials::TrialKind* kind = SweepKind(v.spec);
  if (kind == nullptr || kind->view.x.empty()) return nullptr;
  const trials::KindView& k = kind->view;
  return {{"x", k.x},
          {"series", k.series},
          {"facet", k.facet},
          {"metric", k.metric},
          {"headline_metrics", k.headline_metrics},
          {"layout", k.layout},
          {"theory", k.theory_x.empty() ? json(nullptr)
                                        : json{{"x", k.theory_x},
                                               {"series", k.theory_series}}},
          {"select_by", k.select_by}};
}

json SweepJson(const SweepView& v) {
  json axes = json::array();
  for (const Axis& a : v.spec.grid) {
    axes.push_back({{"name", a.name}, {"values", a.values}});
  }
  // Sampled axes are ordinary axes to the dashboard: their values are the
  // drawn ones (ascending); `sampled` says how, and `log` asks for a log
  // scale (loguniform).
  json sample = json::array();
  for (const SampledAxis& a : v.spec.sample) {
    const json how = {
        {"distribution", a.distribution},
        {"range", a.distribution == "choice" ? json(a.choices)
                                             : json::array({a.lo, a.hi})}};
    axes.push_back({{"name", a.name},
                    {"values", SampledValues(v.spec, a.name)},
                    {"sampled", how},
                    {"log", a.log()}});
    json declared = how;
    declared["name"] = a.name;
    sample.push_back(std::move(declared));
  }
  return {{"sweep_id", v.record.sweep_id},
          {"kind", v.record.kind},
          {"state", store::SweepStateName(v.record.state)},
          {"priority", v.record.priority},
          {"counts", CountsJson(v.counts)},
          {"unschedulable", v.unschedulable},
          {"version", v.version},
          {"axes", axes},
          {"view", ViewJson(v)},
          {"fixed", v.spec.fixed},
          {"seeds", v.spec.seeds},
          {"sample", sample},
          {"samples", v.spec.samples},
          {"sample_seed", v.spec.sample_seed},
          {"notes", v.record.notes},
          {"tags", v.record.tags},
          {"archived", v.record.archived},
          {"created_ms", ToUnixMs(v.record.created_at)},
          {"updated_ms", ToUnixMs(v.record.updated_at)}};
}

json RowJson(const SweepSnapshot& s, size_t i,
             const std::vector<std::string>& axes) {
  const TrialRow& e = *s.rows[i];
  const TrialRow& p = e;
  const json& values = p.param_values();
  json params = json::object();
  for (const std::string& a : axes) {
    auto it = values.find(a);
    if (it != values.end()) params[a] = *it;
  }
  json results = json::object();
  for (size_t r = 0; r < p.results.size(); ++r) {
    const double v = p.results.values[r];
    results[p.results.name(r)] = std::isfinite(v) ? json(v) : json();
  }
  return {{"trial_id", p.trial_id},
          {"ordinal", i},
          {"state", store::TrialStateName(p.state)},
          {"attempt", e.attempt},
          {"worker", e.worker},
          {"duration_s", e.duration_s},
          {"error", e.error},
          {"exit_code", e.exit_code ? json(*e.exit_code) : json()},
          {"seed", p.seed},
          {"params", params},
          {"results", results}};
}

// The connection task queue: one thread per open connection, started on
// demand up to `max_threads` (then connections wait for a thread). cpp-httplib
// runs a whole keep-alive connection (and an SSE stream) on one thread, so a
// fixed pool of N threads is starved by N slow clients (issue 16 item 3: 24
// connections that never finished their headers made /healthz time out).
// Threads stay for reuse; shutdown() joins them all.
class ElasticTaskQueue final : public httplib::TaskQueue {
 public:
  ElasticTaskQueue(int min_threads, int max_threads)
      : max_threads_(std::max(min_threads, max_threads)) {
    absl::MutexLock lock(&mu_);
    for (int i = 0; i < min_threads; ++i) SpawnLocked();
  }
  ~ElasticTaskQueue() override = default;

  void enqueue(std::function<void()> fn) override {
    absl::MutexLock lock(&mu_);
    jobs_.push_back(std::move(fn));
    if (idle_ < static_cast<int>(jobs_.size()) &&
        static_cast<int>(threads_.size()) < max_threads_) {
      SpawnLocked();
    }
  }

  void shutdown() override {
    {
      absl::MutexLock lock(&mu_);
      shutdown_ = true;
    }
    // No thread is added once shutdown_ is set.
    for (std::thread& t : threads_) t.join();
  }

 private:
  void SpawnLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    threads_.emplace_back([this] { Work(); });
  }

  void Work() {
    while (true) {
      std::function<void()> fn;
      {
        absl::MutexLock lock(&mu_);
        ++idle_;
        mu_.Await(absl::Condition(
            +[](ElasticTaskQueue* q) ABSL_EXCLUSIVE_LOCKS_REQUIRED(q->mu_) {
              return q->shutdown_ || !q->jobs_.empty();
            },
            this));
        --idle_;
        if (jobs_.empty()) return;  // shut down and drained
        fn = std::move(jobs_.front());
        jobs_.pop_front();
      }
      fn();
    }
  }

  const int max_threads_;
  absl::Mutex mu_;
  std::deque<std::function<void()>> jobs_ ABSL_GUARDED_BY(mu_);
  std::vector<std::thread> threads_;  // appended under mu_, joined after
  int idle_ ABSL_GUARDED_BY(mu_) = 0;
  bool shutdown_ ABSL_GUARDED_BY(mu_) = false;
};

const char kLoginPage[] = R"(<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>SMoE Lab - sign in</title>
<link rel="icon" href="data:,">
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>body{font:15px system-ui,sans-serif;margin:0;display:flex;min-height:100vh;
align-items:center;justify-content:center;background:#f5f6f8;color:#1d2330}
form{background:#fff;padding:28px 32px;border-radius:10px;box-shadow:0 2px 12px #0002;
width:380px}h1{font-size:20px;margin:0 0 6px}p{color:#5b6473;margin:0 0 18px}
input{width:100%;box-sizing:border-box;padding:9px;font:inherit;border:1px solid #c5cad3;
border-radius:6px}button{margin-top:14px;padding:9px 18px;font:inherit;border:0;
border-radius:6px;background:#2857d6;color:#fff;cursor:pointer}.err{color:#b3261e}</style>
</head><body><form method="post" action="/login">
<h1>SMoE Lab dashboard</h1>
<p>Paste the API token (<code>smoe-data/token</code>, printed by <code>smoe up</code>).</p>
<!--ERROR-->
<input id="token" name="token" type="password" autocomplete="current-password"
 placeholder="smoe_..." autofocus required>
<button type="submit">Sign in</button></form></body></html>
)";

}  // namespace

absl::StatusOr<std::pair<std::string, int>> ParseListenAddress(
    const std::string& listen) {
  const size_t colon = listen.rfind(':');
  if (colon == std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("listen address '", listen, "' is not host:port"));
  }
  std::string host = listen.substr(0, colon);
  int port = 0;
  if (!absl::SimpleAtoi(listen.substr(colon + 1), &port) || port < 0 ||
      port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("listen address '", listen, "' has a bad port"));
  }
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  if (host.empty()) host = "0.0.0.0";
  return std::make_pair(host, port);
}

std::string DescribeBind(const std::string& host, int port) {
  const bool wildcard =
      host.empty() || host == "0.0.0.0" || host == "::" || host == "[::]";
  const std::string h = host.empty() ? "0.0.0.0" : host;
  const bool v6 = h.find(':') != std::string::npos && h.front() != '[';
  return absl::StrCat(v6 ? "[" : "", h, v6 ? "]" : "", ":", port,
                      wildcard ? " (all interfaces)" : "");
}

struct HttpServer::Impl {
  Scheduler* scheduler = nullptr;
  store::ExperimentStore* store = nullptr;
  // Tokens and roles (coordinator/tokens.h); owned_tokens when Start() was
  // given a bare token.
  TokenRegistry* tokens = nullptr;
  std::unique_ptr<TokenRegistry> owned_tokens;
  // Every registered (method, pattern), for the access-table test.
  std::vector<std::pair<std::string, std::string>> routes;
  HttpServerOptions options;
  // Failed sign-ins and refused API calls: logged at most once per 10 s.
  LogLimiter auth_log{absl::Seconds(10)};
  std::string host;
  int port = 0;
  // cpp-httplib's server with per-client connection caps and a request
  // deadline (coordinator/http/http_connections.h).
  BoundedHttpServer server;
  // After `server`: destroyed (stopped and joined) before it.
  HttpListener listener{&server};
  std::atomic<bool> stopping{false};
  std::atomic<int> streams{0};
  absl::Mutex streams_mu;
  std::map<std::string, int> streams_by_client ABSL_GUARDED_BY(streams_mu);
  bool shut_down = false;

  std::unique_ptr<SweepReadModel> model;

  // ---- auth
  // -------------------------------------------------------------------

  void LogRefused(const httplib::Request& req, absl::string_view what) {
    int64_t suppressed = 0;
    if (auth_log.Allow(absl::Now(), &suppressed)) {
      SMOE_LOG(WARNING) << "dashboard: " << what << " from " << req.remote_addr
                        << " (" << req.method << " " << req.path << ")"
                        << (suppressed > 0
                                ? absl::StrCat("; ", suppressed,
                                               " more refused since the last "
                                               "such line")
                                : "");
    }
  }

  // ---- handlers
  // -------------------------------------------------------------------

  static void Error(httplib::Response& res, int status,
                    const std::string& message) {
    ReplyError(res, status, message);
  }

  static void StatusError(httplib::Response& res, const absl::Status& s) {
    ReplyError(res, s);
  }

  static std::string Param(const httplib::Request& req, const char* name,
                           const std::string& fallback) {
    return req.has_param(name) ? req.get_param_value(name) : fallback;
  }

  static int IntParam(const httplib::Request& req, const char* name,
                      int fallback, int lo, int hi) {
    int v = fallback;
    if (req.has_param(name) &&
        !absl::SimpleAtoi(req.get_param_value(name), &v)) {
      v = fallback;
    }
    return std::clamp(v, lo, hi);
  }

  void ListSweeps(const httplib::Request&, httplib::Response& res) {
    json out = json::array();
    for (const SweepView& v : scheduler->ListSweeps()) {
      json j = SweepJson(v);
      j.erase("fixed");
      out.push_back(std::move(j));
    }
    res.set_content(Dump({{"sweeps", out}}), kJson);
  }

  void GetSweepPage(const httplib::Request& req, httplib::Response& res) {
    const std::string id = req.matches[1];
    auto snap_or = model->Get(id);
    if (!snap_or.ok()) return StatusError(res, snap_or.status());
    const auto& [view, snap] = *snap_or;
    // Sorting and filtering 100k rows costs ~100 ms: pages are cached per
    // (sweep version, query) like the aggregation routes.
    const std::string cache_key = absl::StrCat(
        "page\x1f", id, "\x1f", Param(req, "state", ""), "\x1f",
        Param(req, "q", ""), "\x1f", Param(req, "sort", ""), "\x1f",
        Param(req, "offset", ""), "\x1f", Param(req, "limit", ""));
    if (auto hit = model->CacheGet(cache_key, snap->version)) {
      return res.set_content(*hit, kJson);
    }
    TrialQuery query = ParseTrialQuery(
        Param(req, "state", ""), Param(req, "q", ""), Param(req, "sort", ""),
        IntParam(req, "offset", 0, 0, 1 << 30),
        IntParam(req, "limit", 100, 0, 5000));
    const std::vector<std::string> axes = AxisNames(view.spec);
    query.known_params = axes;
    for (auto it = view.spec.fixed.begin(); it != view.spec.fixed.end(); ++it) {
      query.known_params.push_back(it.key());
    }
    query.known_results = snap->metrics();
    absl::StatusOr<TrialPage> page = SelectTrials(snap->rows, query);
    if (!page.ok()) return StatusError(res, page.status());
    json rows = json::array();
    for (size_t i : page->rows) rows.push_back(RowJson(*snap, i, axes));
    json sweep = SweepJson(view);
    sweep["spec_yaml"] = view.record.spec_yaml;
    auto body = std::make_shared<const std::string>(
        Dump({{"sweep", sweep},
              {"columns", {{"params", axes}, {"results", snap->metrics()}}},
              {"total", snap->rows.size()},
              {"matched", page->matched},
              {"offset", query.offset},
              {"limit", query.limit},
              {"rows", rows}}));
    res.set_content(*body, kJson);
    model->CachePut(cache_key, snap->version, std::move(body));
  }

  analysis::AggregateOptions AggOptions(const httplib::Request& req,
                                        const SweepSnapshot& snap) const {
    analysis::AggregateOptions o;
    o.kind = snap.kind;
    o.defaults = snap.defaults;
    // The kind's view (trials/params.h): sraven's top_k / M / attention /
    // ood_acc. A kind without one keeps the paper's names but no panel (a
    // command sweep has no attention parameter: issue 31 item 6); the
    // dashboard always names its own.
    const trials::TrialKind* kind = trials::FindKind(snap.kind);
    trials::KindView view = kind != nullptr ? kind->view : trials::KindView{};
    if (view.x.empty()) {
      view.x = "top_k";
      view.series = "M";
      view.facet = "";
      view.metric = "ood_acc";
    }
    o.metric =
        Param(req, "metric", view.metric.empty() ? "ood_acc" : view.metric);
    o.x = Param(req, "x", view.x);
    o.series = Param(req, "series", view.series);
    o.facet = Param(req, "facet", view.facet);
    o.bootstrap_samples =
        IntParam(req, "bootstrap", options.bootstrap_samples, 0, 10000);
    return o;
  }

  static std::string QueryKey(const std::string& route, const std::string& id,
                              const analysis::AggregateOptions& o) {
    return absl::StrCat(route, "\x1f", id, "\x1f", o.metric, "\x1f", o.x,
                        "\x1f", o.series, "\x1f", o.facet, "\x1f",
                        o.bootstrap_samples);
  }

  void GetCurves(const httplib::Request& req, httplib::Response& res) {
    const std::string id = req.matches[1];
    auto snap_or = model->Get(id);
    if (!snap_or.ok()) return StatusError(res, snap_or.status());
    const auto& snap = snap_or->second;
    const analysis::AggregateOptions o = AggOptions(req, *snap);
    const std::string key = QueryKey("curves", id, o);
    auto body = model->Cached(key, snap->version, [&] {
      return model->Aggregator(key)->With(
          snap, o, [&](analysis::CurveAggregator& agg) {
            // Spliced from the cells' serialised fragments (issue 35): the
            // cost of a body after a change is the changed cells.
            json opt = json::array();
            for (const auto& k : agg.optimal()) {
              opt.push_back(analysis::ToJson(k));
            }
            return agg.CurvesBody(
                {{"optimal", std::move(opt)}, {"version", snap->version}});
          });
    });
    res.set_content(*body, kJson);
  }

  void GetAnalysis(const httplib::Request& req, httplib::Response& res) {
    const std::string id = req.matches[1];
    auto snap_or = model->Get(id);
    if (!snap_or.ok()) return StatusError(res, snap_or.status());
    const auto& snap = snap_or->second;
    const analysis::AggregateOptions o = AggOptions(req, *snap);
    // Shares the curves query's aggregator (same cells, same bootstraps).
    const std::string key = QueryKey("curves", id, o);
    auto body = model->Cached(QueryKey("analysis", id, o), snap->version, [&] {
      return model->Aggregator(key)->With(
          snap, o, [&](analysis::CurveAggregator& agg) {
            return agg.AnalysisBody({{"version", snap->version}});
          });
    });
    res.set_content(*body, kJson);
  }

  // Issue 33 item 3: ?tune=lr[,weight_decay]&select_by=val_acc&select_per=
  // seed|point (+ the analysis parameters). Computed per request from the
  // snapshot (O(trials)); not cached.
  void GetTunedAnalysis(const httplib::Request& req, httplib::Response& res) {
    const std::string id = req.matches[1];
    auto snap_or = model->Get(id);
    if (!snap_or.ok()) return StatusError(res, snap_or.status());
    const auto& snap = snap_or->second;
    const analysis::AggregateOptions o = AggOptions(req, *snap);
    analysis::TuneOptions t;
    const std::string tune = Param(req, "tune", "");
    for (absl::string_view p : absl::StrSplit(tune, ',')) {
      if (p.empty()) {
        return Error(res, 400,
                     absl::StrCat("tune: '", tune,
                                  "' names no parameter (e.g. tune=lr or "
                                  "tune=lr,weight_decay)"));
      }
      t.tune.emplace_back(p);
    }
    t.select_by = Param(req, "select_by", "val_acc");
    auto unit = analysis::ParseSelectUnit(Param(req, "select_per", "seed"));
    if (!unit.ok()) return StatusError(res, unit.status());
    t.unit = *unit;
    std::vector<analysis::TrialPoint> points;
    points.reserve(snap->rows.size());
    for (const auto& r : snap->rows) points.push_back(r->Point());
    auto a = ReadTunedAnalysis(points, o, t, id);
    if (!a.ok()) return StatusError(res, a.status());
    json j = analysis::ToJson(*a);
    j["version"] = snap->version;
    res.set_content(Dump(j), kJson);
  }

  void GetSkillMix(const httplib::Request& req, httplib::Response& res) {
    const std::string id = req.matches[1];
    auto snap_or = model->Get(id);
    if (!snap_or.ok()) return StatusError(res, snap_or.status());
    const auto& snap = snap_or->second;
    const std::string rows = Param(req, "rows", "ept");
    const std::string cols = Param(req, "cols", "k_skills");
    auto body = model->Cached(
        absl::StrCat("skillmix\x1f", id, "\x1f", rows, "\x1f", cols),
        snap->version, [&] {
          std::vector<analysis::TrialPoint> points;
          points.reserve(snap->rows.size());
          for (const auto& r : snap->rows) points.push_back(r->Point());
          json tables = json::array();
          for (const auto& t : analysis::SkillMixTables(points, rows, cols)) {
            tables.push_back(analysis::ToJson(t));
          }
          return Dump({{"rows", rows},
                       {"cols", cols},
                       {"tables", tables},
                       {"version", snap->version}});
        });
    res.set_content(*body, kJson);
  }

  void GetTrialMetrics(const httplib::Request& req, httplib::Response& res) {
    const std::string id = req.matches[1];
    std::optional<std::string> name;
    if (req.has_param("name") && !req.get_param_value("name").empty()) {
      name = req.get_param_value("name");
    }
    const int max_points = IntParam(req, "max_points", 2000, 2, 100000);
    auto view = views::ReadTrialMetrics(store, id, name);
    if (!view.ok()) return StatusError(res, view.status());
    const store::TrialRecord* trial = &view->trial;
    // Ordered by (name, step): cut into runs per name, then downsample each
    // run to max_points (first and last point kept).
    json series = json::object();
    size_t i = 0;
    const auto& m = view->metrics;
    while (i < m.size()) {
      size_t j = i;
      while (j < m.size() && m[j].name == m[i].name) ++j;
      const size_t n = j - i;
      json steps = json::array(), values = json::array();
      for (size_t k : DownsampleIndices(n, static_cast<size_t>(max_points))) {
        const store::MetricRecord& p = m[i + k];
        steps.push_back(p.step);
        values.push_back(std::isfinite(p.value) ? json(p.value) : json());
      }
      series[m[i].name] = {{"steps", steps}, {"values", values}, {"count", n}};
      i = j;
    }
    json attempt_rows = json::array();
    for (const store::AttemptRecord& a : view->attempts) {
      attempt_rows.push_back({{"attempt", a.attempt},
                              {"worker", a.worker_id},
                              {"outcome", store::AttemptOutcomeName(a.outcome)},
                              {"exit_code", a.exit_code},
                              {"message", a.message},
                              {"started_ms", ToUnixMs(a.started_at)},
                              {"ended_ms", a.ended_at == absl::UnixEpoch()
                                               ? json()
                                               : json(ToUnixMs(a.ended_at))}});
    }
    res.set_content(
        Dump({{"trial_id", id},
              {"state", store::TrialStateName(trial->state)},
              {"params", json::parse(trial->params_json, nullptr, false)},
              {"seed", trial->seed},
              {"last_error", trial->last_error},
              {"attempts", attempt_rows},
              {"metrics", series}}),
        kJson);
  }

  void Events(const httplib::Request& req, httplib::Response& res) {
    const std::string id = req.matches[1];
    auto view = scheduler->GetSweep(id);
    if (!view.ok()) return StatusError(res, view.status());
    const std::string client = req.remote_addr;
    {
      absl::MutexLock lock(&streams_mu);
      int& mine = streams_by_client[client];
      if (streams.load() >= options.max_event_streams ||
          mine >= options.max_event_streams_per_client) {
        if (mine == 0) streams_by_client.erase(client);
        res.set_header("Retry-After", "5");
        return Error(
            res, 503,
            absl::StrCat("too many event streams (at most ",
                         options.max_event_streams_per_client, " per client, ",
                         options.max_event_streams, " in all); retry later"));
      }
      ++mine;
      streams.fetch_add(1);
    }
    struct State {
      int64_t since = 0;
      bool hello_sent = false;
      absl::Time last_write = absl::Now();
    };
    auto st = std::make_shared<State>();
    st->since = view->version;
    // The caller is checked again before every wait (event_poll apart): a
    // stream opened before its token was revoked (or the admin token
    // rotated) ends instead of delivering on (issue 36).
    auto caller = std::make_shared<httplib::Request>();
    caller->method = req.method;
    caller->path = req.path;
    for (const char* h : {"Authorization", "Cookie"}) {
      if (req.has_header(h)) {
        caller->headers.emplace(h, req.get_header_value(h));
      }
    }
    res.set_header("Cache-Control", "no-store");
    res.set_header("X-Accel-Buffering", "no");
    res.set_chunked_content_provider(
        "text/event-stream",
        [this, id, st, caller](size_t, httplib::DataSink& sink) -> bool {
          if (stopping.load()) return false;
          if (CheckHttpRequest(tokens, *caller).has_value()) {
            const std::string bye = "event: revoked\ndata: {}\n\n";
            sink.write(bye.data(), bye.size());
            sink.done();
            return true;
          }
          auto write = [&](const std::string& s) {
            st->last_write = absl::Now();
            return sink.write(s.data(), s.size());
          };
          if (!st->hello_sent) {
            st->hello_sent = true;
            return write(absl::StrCat("retry: 2000\nevent: hello\ndata: ",
                                      Dump({{"version", st->since}}), "\n\n"));
          }
          auto w = scheduler->WatchSweep(id, st->since, options.event_poll);
          if (!stopping.load() && absl::IsNotFound(w.status())) {
            // Deleted (Scheduler::DeleteSweep): say so and end the stream
            // cleanly; the dashboard closes it rather than reconnecting.
            write("event: deleted\ndata: {}\n\n");
            sink.done();
            return true;
          }
          if (stopping.load() || !w.ok()) return false;
          if (w->timed_out) {
            if (absl::Now() - st->last_write >= options.event_keepalive) {
              return write(": keepalive\n\n");
            }
            return sink.is_writable();
          }
          st->since = w->sweep.version;
          json ev = {{"version", w->sweep.version},
                     {"state", store::SweepStateName(w->sweep.record.state)},
                     {"counts", CountsJson(w->sweep.counts)}};
          if (w->changed.size() > 500) {
            ev["reset"] = true;  // too many: the client reloads
          } else {
            const std::vector<std::string> axes = AxisNames(w->sweep.spec);
            // The watched version is durable, so a snapshot taken now holds
            // the changed rows with their results.
            std::shared_ptr<const SweepSnapshot> snap;
            if (auto s = model->Get(id); s.ok()) snap = s->second;
            json rows = json::array();
            for (const store::TrialRecord& t : w->changed) {
              json row = {{"trial_id", t.trial_id}, {"ordinal", t.ordinal}};
              if (snap) {
                if (std::optional<size_t> at = snap->Find(t.trial_id)) {
                  row = RowJson(*snap, *at, axes);
                }
              }
              // The scheduler's state is the freshest.
              row["state"] = store::TrialStateName(t.state);
              row["attempt"] = t.attempt;
              if (!t.worker_id.empty()) row["worker"] = t.worker_id;
              rows.push_back(std::move(row));
            }
            ev["changed"] = std::move(rows);
          }
          return write(absl::StrCat("id: ", w->sweep.version,
                                    "\nevent: sweep\ndata: ", Dump(ev),
                                    "\n\n"));
        },
        [this, client](bool) {
          absl::MutexLock lock(&streams_mu);
          if (--streams_by_client[client] <= 0) {
            streams_by_client.erase(client);
          }
          streams.fetch_sub(1);
        });
  }

  void Login(const httplib::Request& req, httplib::Response& res) {
    // The token goes in the body only: a URL lands in the browser's history,
    // proxy logs and Referer headers.
    if (req.target.find('?') != std::string::npos) {
      LogRefused(req, "sign-in with a query string refused");
      return Error(res, 400,
                   "POST /login takes the token in the body (a form field or "
                   "JSON), never in the URL");
    }
    std::string given;
    const bool is_json = absl::StartsWith(req.get_header_value("Content-Type"),
                                          "application/json");
    if (is_json) {
      const json body = json::parse(req.body, nullptr, false);
      if (body.is_object() && body.contains("token") &&
          body["token"].is_string()) {
        given = body["token"].get<std::string>();
      }
    } else if (req.has_param("token")) {
      // The query string was refused above: this is the form body.
      given = req.get_param_value("token");
    }
    given = std::string(absl::StripAsciiWhitespace(given));
    const std::optional<Principal> who = tokens->Authenticate(given);
    if (who.has_value() && who->role == Role::kWorker) {
      LogRefused(req, "sign-in with a worker token refused");
      return Error(res, 403,
                   "a worker token cannot sign in to the dashboard (it needs "
                   "role 'viewer' or 'admin')");
    }
    if (!who.has_value()) {
      LogRefused(req, "failed sign-in");
      // Slow down guessing a little; the token has 256 random bits anyway.
      absl::SleepFor(absl::Milliseconds(200));
      res.status = 401;
      if (is_json) {
        res.set_content(Dump({{"error", "wrong token"}}), kJson);
      } else {
        std::string page = kLoginPage;
        page.replace(page.find("<!--ERROR-->"), 12,
                     "<p class=\"err\">That token is not right.</p>");
        res.set_content(page, "text/html; charset=utf-8");
      }
      return;
    }
    absl::StatusOr<std::string> session = SessionCookieValue(*tokens, *who);
    if (!session.ok()) return StatusError(res, session.status());
    // Max-Age: the browser drops it when the server stops taking it.
    res.set_header("Set-Cookie",
                   absl::StrCat(kCookieName, "=", *session,
                                "; Path=/; HttpOnly; SameSite=Strict; Max-Age=",
                                absl::ToInt64Seconds(kSessionLifetime)));
    if (is_json) {
      res.status = 204;
    } else {
      res.status = 303;
      res.set_header("Location", "/");
    }
  }

  void ServeAsset(const httplib::Request& req, httplib::Response& res) {
    std::string path = req.path;
    if (path == "/" || path.empty()) path = "/index.html";
    const EmbeddedAsset* a = FindEmbeddedAsset(path.c_str());
    if (a == nullptr) return Error(res, 404, "not found");
    res.set_content(reinterpret_cast<const char*>(a->data), a->size, a->mime);
    res.set_header("Cache-Control", absl::StartsWith(path, "/assets/")
                                        ? "public, max-age=31536000, immutable"
                                        : "no-cache");
  }

  void Routes() {
    using httplib::Request;
    using httplib::Response;
    // Every request passes the access table, its role and (when it changes
    // state) the Origin and CSRF checks first (coordinator/http/http_auth.h).
    server.set_pre_routing_handler([this](const Request& req, Response& res) {
      std::optional<HttpRefusal> refused = CheckHttpRequest(tokens, req);
      if (!refused.has_value()) {
        return httplib::Server::HandlerResponse::Unhandled;
      }
      LogRefused(req, absl::StrCat("refused (", refused->status, " ",
                                   refused->message, ")"));
      if (refused->status == 401) res.set_header("WWW-Authenticate", "Bearer");
      // The body was not read: close rather than drain it.
      if (refused->status == 411 || refused->status == 413) {
        res.set_header("Connection", "close");
      }
      Error(res, refused->status, refused->message);
      return httplib::Server::HandlerResponse::Handled;
    });
    // Routes are registered through Add, by their row in the table of
    // operations (coordinator/api/operations.h), so each one is listed in
    // `routes` (HttpServer::routes(), checked against the table by a test).
    auto Add = [this](api::Op op, httplib::Server::Handler h) {
      const api::Operation& row = api::OperationOf(op);
      const std::string m = row.http_method;
      const std::string pattern = api::HttpPattern(row);
      routes.emplace_back(m, pattern);
      if (m == "GET") server.Get(pattern, std::move(h));
      if (m == "POST") server.Post(pattern, std::move(h));
      if (m == "PUT") server.Put(pattern, std::move(h));
      if (m == "DELETE") server.Delete(pattern, std::move(h));
    };
    server.set_post_routing_handler([](const Request& req, Response& res) {
      res.set_header("X-Content-Type-Options", "nosniff");
      res.set_header("X-Frame-Options", "DENY");
      res.set_header("Referrer-Policy", "no-referrer");
      res.set_header("Content-Security-Policy",
                     "default-src 'self'; img-src 'self' data: blob:; "
                     "style-src 'self' 'unsafe-inline'; frame-ancestors "
                     "'none'");
      if (absl::StartsWith(req.path, "/api/") &&
          !res.has_header("Cache-Control")) {
        res.set_header("Cache-Control", "no-store");
      }
    });
    server.set_exception_handler(
        [](const Request&, Response& res, std::exception_ptr) {
          // Library exceptions end here (our code does not throw).
          Error(res, 500, "internal error");
        });
    Add(api::Op::kHealthz, [this](const Request&, Response& res) {
      // The same answer as grpc.health.v1: not serving while the scheduler
      // is fail-stopped (a store that cannot commit, a deleted data dir).
      if (scheduler->failed()) {
        res.status = 503;
        res.set_content("not serving: the store cannot commit\n",
                        "text/plain; charset=utf-8");
        return;
      }
      res.set_content("ok\n", "text/plain; charset=utf-8");
    });
    Add(api::Op::kLoginPage, [](const Request&, Response& res) {
      std::string page = kLoginPage;
      page.replace(page.find("<!--ERROR-->"), 12, "");
      res.set_content(page, "text/html; charset=utf-8");
    });
    Add(api::Op::kLogin,
        [this](const Request& req, Response& res) { Login(req, res); });
    Add(api::Op::kLogout, [this](const Request& req, Response& res) {
      // The session ends on the server too: a copy of the cookie is refused.
      const HttpCaller caller = ResolveCaller(tokens, req);
      if (!caller.bearer && !caller.session.empty()) {
        EndSession(caller.session);
      }
      res.set_header("Set-Cookie",
                     absl::StrCat(kCookieName,
                                  "=; Path=/; HttpOnly; SameSite=Strict; "
                                  "Max-Age=0"));
      res.status = 204;
    });
    Add(api::Op::kOpenApi, [](const Request&, Response& res) {
      res.set_content(Dump(OpenApiSpec()), kJson);
    });
    Add(api::Op::kListSweeps,
        [this](const Request& req, Response& res) { ListSweeps(req, res); });
    Add(api::Op::kGetSweep,
        [this](const Request& req, Response& res) { GetSweepPage(req, res); });
    Add(api::Op::kGetCurves,
        [this](const Request& req, Response& res) { GetCurves(req, res); });
    Add(api::Op::kGetAnalysis,
        [this](const Request& req, Response& res) { GetAnalysis(req, res); });
    Add(api::Op::kGetTunedAnalysis, [this](const Request& req, Response& res) {
      GetTunedAnalysis(req, res);
    });
    Add(api::Op::kGetSkillMix,
        [this](const Request& req, Response& res) { GetSkillMix(req, res); });
    Add(api::Op::kGetSearch, [this](const Request& req, Response& res) {
      // The trials' parsed params and states from the read model's snapshot
      // (shared with the refresh's other requests), not a copy of every
      // record parsed again (issue 35); only for the sweeps whose summary
      // reads them that way (asha, median: not a grid sweep, nor refine).
      // Without a snapshot (an error getting one) the summary reads the
      // scheduler's records and reports what fails.
      const std::string id = req.matches[1];
      std::shared_ptr<const SweepSnapshot> snap;
      if (auto v = scheduler->GetSweep(id);
          v.ok() && IsAdaptive(v->spec) &&
          v->spec.search.strategy != "refine") {
        if (auto got = model->Get(id); got.ok()) snap = got->second;
      }
      auto summary =
          views::ReadSearchSummary(scheduler, store, id, 200, snap.get());
      if (!summary.ok()) return StatusError(res, summary.status());
      res.set_content(Dump(views::SearchJson(*summary)), kJson);
    });
    Add(api::Op::kWatchSweep,
        [this](const Request& req, Response& res) { Events(req, res); });
    Add(api::Op::kGetTrialMetrics, [this](const Request& req, Response& res) {
      GetTrialMetrics(req, res);
    });
    AddActionRoutes(Add, scheduler, tokens);
    RegisterArtifactRoutes(Add, store, options.checkpoints);
    RegisterLogRoutes(Add, options.logs);
    RegisterWorkerRoutes(Add, scheduler, tokens);
    Add(api::Op::kUnknownApiRoute, [](const Request&, Response& res) {
      Error(res, 404, "no such API route");
    });
    Add(api::Op::kWebApp,
        [this](const Request& req, Response& res) { ServeAsset(req, res); });
  }
};

HttpServer::HttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

absl::StatusOr<std::unique_ptr<HttpServer>> HttpServer::Start(
    Scheduler* scheduler, store::ExperimentStore* store, std::string token,
    const HttpServerOptions& options) {
  if (token.empty()) {
    return absl::InvalidArgumentError("the HTTP server needs the API token");
  }
  auto owned = std::make_unique<TokenRegistry>(std::move(token), "");
  TokenRegistry* tokens = owned.get();
  return Start(scheduler, store, tokens, options, std::move(owned));
}

absl::StatusOr<std::unique_ptr<HttpServer>> HttpServer::Start(
    Scheduler* scheduler, store::ExperimentStore* store, TokenRegistry* tokens,
    const HttpServerOptions& options) {
  return Start(scheduler, store, tokens, options, nullptr);
}

absl::StatusOr<std::unique_ptr<HttpServer>> HttpServer::Start(
    Scheduler* scheduler, store::ExperimentStore* store, TokenRegistry* tokens,
    const HttpServerOptions& options, std::unique_ptr<TokenRegistry> owned) {
  auto addr = ParseListenAddress(options.listen);
  if (!addr.ok()) return addr.status();
  if (tokens == nullptr || tokens->session_key().empty()) {
    return absl::InvalidArgumentError("the HTTP server needs the API token");
  }
  auto impl = std::make_unique<Impl>();
  impl->scheduler = scheduler;
  impl->store = store;
  impl->model = std::make_unique<SweepReadModel>(scheduler, store);
  impl->owned_tokens = std::move(owned);
  impl->tokens = tokens;
  impl->options = options;
  impl->options.threads = std::max(4, options.threads);
  impl->options.max_connections =
      std::max(impl->options.threads, options.max_connections);
  // Streams leave threads for everything else (/healthz, /api).
  impl->options.max_event_streams = std::clamp(
      options.max_event_streams, 1, impl->options.max_connections - 16);
  impl->options.max_event_streams_per_client = std::clamp(
      options.max_event_streams_per_client, 1, impl->options.max_event_streams);
  impl->host = addr->first;
  const int threads = impl->options.threads;
  const int max_threads = impl->options.max_connections;
  HttpConnectionLimits limits;
  // SSE streams are connections too: a client may hold its streams and a few
  // more.
  limits.max_per_client =
      std::max(options.max_connections_per_client,
               impl->options.max_event_streams_per_client + 4);
  limits.request_deadline = options.request_deadline;
  limits.budget = options.budget;
  // A total cap below the thread count: a newcomer always finds a thread to
  // be admitted (evicting a slow connection) or refused on.
  limits.max_total = max_threads - std::min(16, std::max(1, max_threads / 4));
  impl->server.set_limits(limits);
  impl->server.new_task_queue = [threads, max_threads] {
    return new ElasticTaskQueue(threads, max_threads);
  };
  // Responses go out as header + body writes: without TCP_NODELAY, Nagle
  // and the client's delayed ACK add ~40 ms to every response.
  impl->server.set_tcp_nodelay(true);
  impl->server.set_keep_alive_max_count(1000);
  impl->server.set_keep_alive_timeout(2);
  // A client that stops sending mid-request is dropped after 5 s without a
  // byte, and one that keeps sending slowly at the request deadline
  // (HttpServerOptions::request_deadline, docs/reliability.md).
  impl->server.set_read_timeout(5, 0);
  impl->server.set_write_timeout(10, 0);
  impl->server.set_payload_max_length(1 << 20);
  impl->Routes();
  // Bound before Start returns, and stoppable from the moment it returns
  // (common/http_listener.h: cpp-httplib drops a stop() that arrives before
  // its accept loop runs).
  const absl::Status listening =
      impl->listener.Start(addr->first, addr->second);
  if (!listening.ok()) {
    return absl::UnavailableError(absl::StrCat(
        "cannot listen for HTTP on '", options.listen,
        "': ", listening.message(), " (--http-listen '' turns it off)"));
  }
  impl->port = impl->listener.port();
  // Bursts of connections (a page load, reconnecting SSE streams) wait in
  // the kernel's queue instead of for SYN retransmits.
  impl->server.RaiseListenBacklog(1024);
  std::unique_ptr<HttpServer> s(new HttpServer(std::move(impl)));
  SMOE_LOG(INFO) << "dashboard listening on " << s->bind_description()
                 << ", open " << s->url()
                 << (EmbeddedAssetsAreFallback()
                         ? " (web app not built: npm was missing or `npm ci` "
                           "failed at build time; the page says how to fix it)"
                         : "");
  return s;
}

int HttpServer::port() const { return impl_->port; }

const std::vector<std::pair<std::string, std::string>>& HttpServer::routes()
    const {
  return impl_->routes;
}

std::string HttpServer::bind_description() const {
  return DescribeBind(impl_->host, impl_->port);
}

std::string HttpServer::url() const {
  std::string host = impl_->host;
  if (host == "0.0.0.0" || host == "::" || host.empty()) host = "127.0.0.1";
  if (host.find(':') != std::string::npos) host = "[" + host + "]";
  return absl::StrCat("http://", host, ":", impl_->port, "/");
}

void HttpServer::Shutdown() {
  if (impl_->shut_down) return;
  impl_->shut_down = true;
  impl_->stopping.store(true);
  impl_->listener.Stop();
}

HttpServer::~HttpServer() { Shutdown(); }

}  // namespace smoe::coordinator
