// Copyright 2026 SMoE Lab authors.
//
// The dashboard's HTTP API against a real SqliteStore and Scheduler: auth,
// JSON shapes, the curves' numbers, trial metrics, Skill-Mix tables and SSE.
#include "coordinator/http/http_server.h"

#include <httplib.h>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "analysis/analyze.h"
#include "coordinator/http/http_auth.h"
#include "coordinator/scheduler.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "store/sqlite_store.h"
#include "store/store_test_util.h"

namespace smoe::coordinator {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kToken[] = "smoe_0123456789abcdef0123456789abcdef";

constexpr char kSweep[] = R"(name: demo
kind: sraven
grid:
  M: [1, 2]
  top_k: [1, 2, 4]
fixed: {attention: hyla, steps: 100, batch_size: 10, num_experts: 8}
seeds: [0, 1, 2]
)";

// The OOD accuracy the fixture reports for (M, k, seed).
double Ood(int m, int k, int64_t seed) {
  return 0.6 + 0.05 * k / m + 0.01 * static_cast<double>(seed);
}

class HttpServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto st = store::SqliteStore::Open(dir_.File("smoe.db"), {});
    ASSERT_TRUE(st.ok()) << st.status();
    store_ = std::move(*st);
    auto s = Scheduler::Create(store_.get(), Clock::Real(), {});
    ASSERT_TRUE(s.ok()) << s.status();
    sched_ = std::move(*s);
    ASSERT_TRUE(sched_->SubmitSweep(kSweep, false).ok());
    WorkerInfo w;
    w.hostname = "test";
    w.slots = 64;
    auto reg = sched_->Register(w);
    ASSERT_TRUE(reg.ok());
    worker_ = reg->worker_id;
    auto leases = sched_->Lease(worker_, 64, 0);
    ASSERT_TRUE(leases.ok());
    ASSERT_EQ(leases->size(), 18u);
    // Everything but the last trial (M=2, top_k=4, seed 2) completes.
    for (size_t i = 0; i + 1 < leases->size(); ++i) Finish((*leases)[i]);
    last_ = leases->back();
    HttpServerOptions o;
    o.listen = "127.0.0.1:0";
    o.event_poll = absl::Milliseconds(100);
    o.bootstrap_samples = 200;
    auto h = HttpServer::Start(sched_.get(), store_.get(), kToken, o);
    ASSERT_TRUE(h.ok()) << h.status();
    http_ = std::move(*h);
  }
  void TearDown() override {
    if (http_) http_->Shutdown();
  }

  void Finish(const LeaseGrant& g) {
    const json p = json::parse(g.params_json);
    const int m = p["M"].get<int>();
    const int k = p["top_k"].get<int>();
    std::vector<store::MetricRecord> metrics;
    for (int step = 0; step <= 100; step += 10) {
      metrics.push_back({g.trial_id, step, "train/loss", 2.0 - step / 100.0});
      metrics.push_back(
          {g.trial_id, step, "router/layer0/expert0_frac", 0.125});
    }
    ASSERT_TRUE(
        sched_->ReportMetrics(worker_, g.trial_id, g.attempt, metrics).ok());
    ASSERT_TRUE(sched_
                    ->Complete(worker_, g.trial_id, g.attempt,
                               {{"ood_acc", Ood(m, k, g.seed)},
                                {"test_acc", Ood(m, k, g.seed) + 0.1}},
                               12.5)
                    .ok());
  }

  httplib::Client Client() {
    httplib::Client c("127.0.0.1", http_->port());
    c.set_read_timeout(10, 0);
    return c;
  }
  httplib::Headers Auth() {
    return {{"Authorization", absl::StrCat("Bearer ", kToken)}};
  }
  json GetJson(const std::string& path, int want_status = 200) {
    auto c = Client();
    auto r = c.Get(path.c_str(), Auth());
    EXPECT_TRUE(r) << path;
    if (!r) return json();
    EXPECT_EQ(r->status, want_status) << path << ": " << r->body;
    EXPECT_THAT(r->get_header_value("Content-Type"),
                HasSubstr("application/json"));
    return json::parse(r->body, nullptr, false);
  }

  store::testing::ScopedTempDir dir_;
  std::unique_ptr<store::SqliteStore> store_;
  std::unique_ptr<Scheduler> sched_;
  std::unique_ptr<HttpServer> http_;
  std::string worker_;
  LeaseGrant last_;
};

TEST_F(HttpServerTest, RefusesRequestsWithoutTheToken) {
  auto c = Client();
  auto r = c.Get("/api/sweeps");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 401);
  EXPECT_THAT(r->body, Not(HasSubstr(kToken)));
  r = c.Get("/api/sweeps", {{"Authorization", "Bearer smoe_wrong"}});
  EXPECT_EQ(r->status, 401);
  r = c.Get("/api/sweeps", {{"Cookie", "smoe_token=smoe_wrong"}});
  EXPECT_EQ(r->status, 401);
  r = c.Get("/api/sweeps/demo/events", {{"Cookie", "other=1"}});
  EXPECT_EQ(r->status, 401);
  r = c.Get("/api/trials/demo/0123456789abcdef/metrics");
  EXPECT_EQ(r->status, 401);
  // The right token, as a header or as the cookie.
  r = c.Get("/api/sweeps", Auth());
  EXPECT_EQ(r->status, 200);
  // The raw token as a cookie is refused: the session cookie is derived
  // from the token (issue 16 item 10), never the token itself.
  r = c.Get("/api/sweeps",
            {{"Cookie", absl::StrCat("a=b; smoe_session=", kToken)}});
  EXPECT_EQ(r->status, 401);
  r = c.Get("/api/sweeps",
            {{"Cookie", absl::StrCat("a=b; smoe_token=", kToken)}});
  EXPECT_EQ(r->status, 401);
  // Public: health, the login page and the app shell.
  EXPECT_EQ(c.Get("/healthz")->status, 200);
  EXPECT_EQ(c.Get("/login")->status, 200);
  EXPECT_EQ(c.Get("/")->status, 200);
}

TEST_F(HttpServerTest, LoginSetsAStrictHttpOnlyCookie) {
  auto c = Client();
  auto bad =
      c.Post("/login", "token=smoe_nope", "application/x-www-form-urlencoded");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 401);
  EXPECT_FALSE(bad->has_header("Set-Cookie"));
  auto ok = c.Post("/login", absl::StrCat("token=", kToken),
                   "application/x-www-form-urlencoded");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 303);
  EXPECT_EQ(ok->get_header_value("Location"), "/");
  const std::string cookie = ok->get_header_value("Set-Cookie");
  EXPECT_THAT(cookie, HasSubstr("HttpOnly"));
  EXPECT_THAT(cookie, HasSubstr("SameSite=Strict"));
  const std::string pair = cookie.substr(0, cookie.find(';'));
  EXPECT_EQ(c.Get("/api/sweeps", {{"Cookie", pair}})->status, 200);
  // Issue 16 item 10: the cookie is derived from the token, not the token.
  EXPECT_THAT(cookie, Not(HasSubstr(kToken)));
  EXPECT_THAT(pair, HasSubstr("smoe_session=s3.admin.admin."));
  EXPECT_THAT(cookie, HasSubstr("Max-Age=604800"));
  auto js =
      c.Post("/login", json({{"token", kToken}}).dump(), "application/json");
  EXPECT_EQ(js->status, 204);
  EXPECT_EQ(c.Post("/logout", "", "text/plain")->status, 204);
}

// Issue 16 item 10: truthful bind logs. `--http-listen :8080` binds every
// interface; the log says so instead of printing the 127.0.0.1 URL alone.
TEST(DescribeBindTest, WildcardHostsSayAllInterfaces) {
  auto a = ParseListenAddress(":8080");  // fixed-port-ok: parsed only
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->first, "0.0.0.0");
  EXPECT_EQ(DescribeBind(a->first, a->second),
            "0.0.0.0:8080 (all interfaces)");  // fixed-port-ok: text only
  EXPECT_EQ(DescribeBind("", 1), "0.0.0.0:1 (all interfaces)");
  EXPECT_EQ(DescribeBind("::", 2), "[::]:2 (all interfaces)");
  EXPECT_EQ(DescribeBind("127.0.0.1", 3), "127.0.0.1:3");
  EXPECT_EQ(DescribeBind("::1", 4), "[::1]:4");
}

// Issue 16 item 10: no token in URLs. A sign-in with the token in the query
// string is refused (and sets no cookie), even with a POST.
TEST_F(HttpServerTest, LoginRefusesATokenInTheUrl) {
  auto c = Client();
  auto r = c.Post(absl::StrCat("/login?token=", kToken).c_str(), "",
                  "application/x-www-form-urlencoded");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  EXPECT_FALSE(r->has_header("Set-Cookie"));
  EXPECT_THAT(r->body, HasSubstr("never in the URL"));
  auto g = c.Get(absl::StrCat("/login?token=", kToken).c_str());
  ASSERT_TRUE(g);
  EXPECT_FALSE(g->has_header("Set-Cookie"));
  // The login page posts a form to /login (the token in the body).
  EXPECT_THAT(c.Get("/login")->body,
              HasSubstr("method=\"post\" action=\"/login\""));
}

// Issue 36 item 5: a login body is read whole into memory before any
// credential is checked; one over 4 KiB is refused (413) before it is read,
// a chunked one (411); a normal sign-in is unaffected.
TEST_F(HttpServerTest, LoginBodiesAreBoundedBeforeTheyAreRead) {
  auto c = Client();
  const std::string big(5000, 'a');
  auto r = c.Post("/login", big, "application/x-www-form-urlencoded");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 413);
  EXPECT_THAT(r->body, HasSubstr("body of 5000 bytes, more than 4096"));
  EXPECT_FALSE(r->has_header("Set-Cookie"));
  // Chunked (no length to check up front): refused by the same gate.
  httplib::Request chunked;
  chunked.method = "POST";
  chunked.path = "/login";
  chunked.headers.emplace("Transfer-Encoding", "chunked");
  const std::optional<HttpRefusal> refusal =
      CheckHttpRequest(/*tokens=*/nullptr, chunked);
  ASSERT_TRUE(refusal.has_value());
  EXPECT_EQ(refusal->status, 411);
  auto ok = Client().Post("/login", absl::StrCat("token=", kToken),
                          "application/x-www-form-urlencoded");
  ASSERT_TRUE(ok);
  EXPECT_TRUE(ok->has_header("Set-Cookie")) << ok->status << " " << ok->body;
}

TEST_F(HttpServerTest, SweepsAndTrialTable) {
  const json list = GetJson("/api/sweeps");
  ASSERT_EQ(list["sweeps"].size(), 1u);
  const json& s = list["sweeps"][0];
  EXPECT_EQ(s["sweep_id"], "demo");
  EXPECT_EQ(s["kind"], "sraven");
  EXPECT_EQ(s["counts"]["succeeded"], 17);
  EXPECT_EQ(s["counts"]["running"], 1);
  EXPECT_EQ(s["counts"]["total"], 18);
  EXPECT_EQ(s["axes"].size(), 2u);
  // The kind's view (trials::KindView), which the dashboard opens with.
  EXPECT_EQ(s["view"]["x"], "top_k");
  EXPECT_EQ(s["view"]["metric"], "ood_acc");
  EXPECT_EQ(s["view"]["headline_metrics"], json({"ood_acc", "test_acc"}));
  EXPECT_EQ(s["view"]["layout"], "curves");
  EXPECT_EQ(s["view"]["theory"], json({{"x", "top_k"}, {"series", "M"}}));
  EXPECT_EQ(s["view"]["select_by"], "val_acc");

  json page = GetJson("/api/sweeps/demo?limit=5&sort=-r.ood_acc");
  EXPECT_EQ(page["total"], 18);
  EXPECT_EQ(page["matched"], 18);
  ASSERT_EQ(page["rows"].size(), 5u);
  EXPECT_EQ(page["columns"]["params"], json({"M", "top_k"}));
  EXPECT_EQ(page["columns"]["results"], json({"ood_acc", "test_acc"}));
  const json& top = page["rows"][0];
  EXPECT_EQ(top["params"]["M"], 1);
  EXPECT_EQ(top["params"]["top_k"], 4);
  EXPECT_EQ(top["seed"], 2);
  EXPECT_EQ(top["state"], "succeeded");
  // A finished trial shows the worker of its last attempt.
  EXPECT_EQ(top["worker"], worker_);
  EXPECT_DOUBLE_EQ(top["duration_s"].get<double>(), 12.5);
  EXPECT_NEAR(top["results"]["ood_acc"].get<double>(), Ood(1, 4, 2), 1e-12);
  for (size_t i = 1; i < page["rows"].size(); ++i) {
    EXPECT_GE(page["rows"][i - 1]["results"]["ood_acc"].get<double>(),
              page["rows"][i]["results"]["ood_acc"].get<double>());
  }
  page = GetJson("/api/sweeps/demo?q=M%3D2%20top_k%3D4&limit=100");
  EXPECT_EQ(page["matched"], 3);
  page = GetJson("/api/sweeps/demo?state=running");
  ASSERT_EQ(page["matched"], 1);
  EXPECT_EQ(page["rows"][0]["trial_id"], last_.trial_id);
  EXPECT_EQ(page["rows"][0]["worker"], worker_);
  page = GetJson("/api/sweeps/demo?offset=16&limit=10");
  EXPECT_EQ(page["rows"].size(), 2u);
  GetJson("/api/sweeps/demo?sort=nonsense", 400);
  GetJson("/api/sweeps/nope", 404);
  GetJson("/api/nothing", 404);
}

TEST_F(HttpServerTest, CurvesAggregateOverSeeds) {
  const json c =
      GetJson("/api/sweeps/demo/curves?metric=ood_acc&x=top_k&series=M");
  EXPECT_EQ(c["metric"], "ood_acc");
  EXPECT_EQ(c["trials_used"], 17);
  ASSERT_EQ(c["facets"].size(), 1u);
  EXPECT_EQ(c["facets"][0]["label"], "hyla");
  const json& series = c["facets"][0]["series"];
  ASSERT_EQ(series.size(), 2u);
  EXPECT_EQ(series[0]["key"], 1);
  ASSERT_EQ(series[0]["points"].size(), 3u);
  const json& p = series[0]["points"][1];  // M=1, k=2
  EXPECT_EQ(p["x"], 2);
  EXPECT_EQ(p["n"], 3);
  EXPECT_NEAR(p["mean"].get<double>(), Ood(1, 2, 1), 1e-12);
  EXPECT_NEAR(p["sem"].get<double>(), 0.01 / std::sqrt(3.0), 1e-12);
  EXPECT_LE(p["ci_lo"].get<double>(), p["mean"].get<double>());
  EXPECT_GE(p["ci_hi"].get<double>(), p["mean"].get<double>());
  // M=2, k=4 has 2 of its 3 seeds (the third is still running).
  EXPECT_EQ(series[1]["points"][2]["n"], 2);
  EXPECT_NEAR(series[1]["points"][2]["mean"].get<double>(),
              (Ood(2, 4, 0) + Ood(2, 4, 1)) / 2, 1e-12);
  // Optimal k: accuracy grows with k here, so the best is 4 for both M.
  ASSERT_EQ(c["optimal"].size(), 2u);
  EXPECT_EQ(c["optimal"][0]["best"], 4);
  EXPECT_EQ(c["optimal"][1]["best"], 4);
  // Facet off: one facet with an empty label.
  const json nf = GetJson("/api/sweeps/demo/curves?facet=");
  ASSERT_EQ(nf["facets"].size(), 1u);
  EXPECT_EQ(nf["facets"][0]["label"], "");
  // Cached responses are identical.
  EXPECT_EQ(GetJson("/api/sweeps/demo/curves").dump(),
            GetJson("/api/sweeps/demo/curves").dump());
}

TEST_F(HttpServerTest, JsonIsNotCompressedOnTheFly) {
  auto c = Client();
  httplib::Headers h = Auth();
  h.emplace("Accept-Encoding", "gzip, deflate, br");
  auto r = c.Get("/api/sweeps/demo/curves", h);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_FALSE(r->has_header("Content-Encoding"));
}

TEST_F(HttpServerTest, AnalysisAndTrialMetrics) {
  const json a = GetJson("/api/sweeps/demo/analysis?metric=ood_acc");
  EXPECT_EQ(a["optimal"].size(), 2u);
  ASSERT_EQ(a["fits"].size(), 1u);
  EXPECT_TRUE(a["fits"][0]["ok"].get<bool>());
  EXPECT_EQ(a["fits"][0]["points"].size(), 6u);
  EXPECT_EQ(a["fits"][0]["points"][0]["m"], 1000);
  EXPECT_EQ(a["fits"][0]["k_star"].size(), 2u);

  auto rows = store_->ListSummaries("demo");
  ASSERT_TRUE(rows.ok());
  const std::string id = (*rows)[0].trial_id;
  json m = GetJson(absl::StrCat("/api/trials/", id, "/metrics"));
  EXPECT_EQ(m["trial_id"], id);
  ASSERT_TRUE(m["metrics"].contains("train/loss"));
  EXPECT_EQ(m["metrics"]["train/loss"]["steps"].size(), 11u);
  EXPECT_EQ(m["metrics"]["train/loss"]["steps"][10], 100);
  EXPECT_DOUBLE_EQ(m["metrics"]["train/loss"]["values"][0].get<double>(), 2.0);
  m = GetJson(absl::StrCat("/api/trials/", id,
                           "/metrics?name=train/loss&max_points=4"));
  ASSERT_EQ(m["metrics"].size(), 1u);
  const json& steps = m["metrics"]["train/loss"]["steps"];
  EXPECT_EQ(steps.size(), 4u);
  EXPECT_EQ(steps[0], 0);
  EXPECT_EQ(steps.back(), 100);
  GetJson("/api/trials/demo/ffffffffffffffff/metrics", 404);
}

// After a change the snapshot is refreshed from the change log and the
// aggregation recomputes the changed cell: the answer must equal the
// from-scratch analysis of the store's rows, before and after.
TEST_F(HttpServerTest, AnalysisFollowsChangesIncrementally) {
  auto from_scratch = [&] {
    analysis::AggregateOptions o;
    o.bootstrap_samples = 200;
    auto rows = store_->ListSummaries("demo");
    EXPECT_TRUE(rows.ok());
    json j = analysis::AnalyzeSweep(analysis::FromSummaries(*rows), o);
    return j;
  };
  json before = GetJson("/api/sweeps/demo/analysis?metric=ood_acc");
  const int64_t v0 = before["version"].get<int64_t>();
  before.erase("version");
  EXPECT_EQ(before, from_scratch());
  EXPECT_EQ(before["curves"]["trials_used"], 17);

  Finish(last_);
  json after = GetJson("/api/sweeps/demo/analysis?metric=ood_acc");
  EXPECT_GT(after["version"].get<int64_t>(), v0);
  after.erase("version");
  EXPECT_EQ(after["curves"]["trials_used"], 18);
  EXPECT_EQ(after, from_scratch());
  // The curves route shares the aggregator and agrees.
  const json curves = GetJson("/api/sweeps/demo/curves?metric=ood_acc");
  EXPECT_EQ(curves["facets"], after["curves"]["facets"]);
  // The table row of the finished trial is fresh too.
  const json page = GetJson("/api/sweeps/demo?limit=1&sort=-ordinal");
  ASSERT_EQ(page["rows"].size(), 1u);
  EXPECT_EQ(page["rows"][0]["trial_id"], last_.trial_id);
  EXPECT_EQ(page["rows"][0]["state"], "succeeded");
  EXPECT_EQ(page["rows"][0]["worker"], worker_);
}

TEST_F(HttpServerTest, SkillMixTables) {
  ASSERT_TRUE(sched_
                  ->SubmitSweep(R"(name: sm
kind: skillmix
grid:
  k_skills: [2, 3]
  ept: [1, 2]
fixed: {model: /models/tiny, device: cpu}
)",
                                false)
                  .ok());
  WorkerInfo w;
  w.hostname = "gpu";
  w.slots = 8;
  w.kinds = {"skillmix"};
  auto reg = sched_->Register(w);
  ASSERT_TRUE(reg.ok());
  auto leases = sched_->Lease(reg->worker_id, 8, 8);
  ASSERT_TRUE(leases.ok());
  ASSERT_EQ(leases->size(), 4u);
  for (const LeaseGrant& g : *leases) {
    const json p = json::parse(g.params_json);
    const double v =
        0.1 * p["ept"].get<int>() + 0.01 * p["k_skills"].get<int>();
    ASSERT_TRUE(sched_
                    ->Complete(reg->worker_id, g.trial_id, g.attempt,
                               {{"ratio_full_marks", v},
                                {"ratio_full_marks_se", 0.05},
                                {"skill_fraction", v / 2}},
                               1)
                    .ok());
  }
  // Its view: the kind's tables, no theory, no tuned view.
  const json view = GetJson("/api/sweeps")["sweeps"][1]["view"];
  EXPECT_EQ(view["layout"], "tables") << view;
  EXPECT_EQ(view["x"], "ept");
  EXPECT_TRUE(view["theory"].is_null());
  EXPECT_EQ(view["select_by"], "");
  const json t = GetJson("/api/sweeps/sm/skillmix");
  EXPECT_EQ(t["rows"], "ept");
  EXPECT_EQ(t["cols"], "k_skills");
  ASSERT_EQ(t["tables"].size(), 2u);
  const json& full = t["tables"][0];
  EXPECT_EQ(full["metric"], "ratio_full_marks");
  EXPECT_EQ(full["rows"], json({1, 2}));
  EXPECT_EQ(full["cols"], json({2, 3}));
  EXPECT_NEAR(full["cells"][1][0]["mean"].get<double>(), 0.22, 1e-12);
  EXPECT_NEAR(full["cells"][1][0]["sem"].get<double>(), 0.05, 1e-12);
  EXPECT_EQ(t["tables"][1]["metric"], "skill_fraction");
}

// Issue 33 item 3: the tuned analysis over HTTP. Per (top_k, seed) the lr
// with the best val_acc is selected and test_acc reported there: k=1 picks
// lr 0.01 (test 0.5), k=2 picks lr 0.001 (test 0.9), though test_acc alone
// would pick the other lr at both.
TEST_F(HttpServerTest, TunedAnalysisSelectsOnTheValidationSplit) {
  ASSERT_TRUE(sched_
                  ->SubmitSweep(R"(name: tuned
kind: sraven
grid:
  top_k: [1, 2]
  lr: [0.001, 0.01]
fixed: {M: 1, attention: hyla, steps: 10}
seeds: [0, 1]
)",
                                false)
                  .ok());
  auto leases = sched_->Lease(worker_, 64, 0);
  ASSERT_TRUE(leases.ok());
  ASSERT_EQ(leases->size(), 8u);
  for (const LeaseGrant& g : *leases) {
    const json p = json::parse(g.params_json);
    const int k = p["top_k"].get<int>();
    const bool small_lr = p["lr"].get<double>() < 0.005;
    // The lr that wins on val: 0.01 for k=1, 0.001 for k=2.
    const bool val_best = (k == 1) != small_lr;
    const double test =
        k == 1 ? (val_best ? 0.5 : 0.6) : (val_best ? 0.9 : 0.95);
    ASSERT_TRUE(sched_
                    ->Complete(worker_, g.trial_id, g.attempt,
                               {{"val_acc", val_best ? 0.8 : 0.7},
                                {"test_acc", test + 0.001 * g.seed},
                                {"ood_acc", 0.5}},
                               1)
                    .ok());
  }
  const json t = GetJson(
      "/api/sweeps/tuned/analysis/tuned?tune=lr&metric=test_acc&series=&"
      "facet=&bootstrap=100");
  EXPECT_EQ(t["kind"], "tuned");
  EXPECT_EQ(t["select_by"], "val_acc");
  EXPECT_EQ(t["select_per"], "seed");
  ASSERT_EQ(t["tuned"].size(), 1u) << t.dump();
  const json& pts = t["tuned"][0]["points"];
  ASSERT_EQ(pts.size(), 2u) << t.dump();
  EXPECT_EQ(pts[0]["chosen_count"], json({{"lr=0.01", 2}})) << pts[0].dump();
  EXPECT_EQ(pts[1]["chosen_count"], json({{"lr=0.001", 2}})) << pts[1].dump();
  EXPECT_NEAR(pts[0]["values"][0].get<double>(), 0.5, 1e-12);
  EXPECT_NEAR(pts[1]["values"][0].get<double>(), 0.9, 1e-12);
  EXPECT_EQ(t["untuned"].size(), 2u);
  // Refusals name the field and value.
  const json bad = GetJson(
      "/api/sweeps/tuned/analysis/tuned?tune=depth&metric=test_acc", 400);
  EXPECT_THAT(bad.dump(), HasSubstr("tune: 'depth' is not a swept parameter "
                                    "of sweep tuned; its swept parameters: "));
  const json nosel = GetJson(
      "/api/sweeps/tuned/analysis/tuned?tune=lr&select_by=val_loss", 400);
  EXPECT_THAT(nosel.dump(), HasSubstr("select_by: 'val_loss' is not a result"));
  const json empty = GetJson("/api/sweeps/tuned/analysis/tuned?tune=", 400);
  EXPECT_THAT(empty.dump(), HasSubstr("names no parameter"));
  const json unit =
      GetJson("/api/sweeps/tuned/analysis/tuned?tune=lr&select_per=run", 400);
  EXPECT_THAT(unit.dump(), HasSubstr("run"));
}

TEST_F(HttpServerTest, EventsDeliverAChange) {
  absl::Mutex mu;
  std::string received;
  std::atomic<bool> done{false};
  std::thread reader([&] {
    auto c = Client();
    c.Get(
        "/api/sweeps/demo/events", Auth(),
        [&](const httplib::Response& r) { return r.status == 200; },
        [&](const char* data, size_t n) {
          absl::MutexLock lock(&mu);
          received.append(data, n);
          return !done.load();
        });
  });
  auto wait_for = [&](const std::string& what) {
    const absl::Time end = absl::Now() + absl::Seconds(20);
    while (absl::Now() < end) {
      {
        absl::MutexLock lock(&mu);
        if (received.find(what) != std::string::npos) return true;
      }
      absl::SleepFor(absl::Milliseconds(20));
    }
    return false;
  };
  ASSERT_TRUE(wait_for("event: hello"));
  Finish(last_);  // the running trial completes
  ASSERT_TRUE(wait_for(last_.trial_id));
  done.store(true);
  // One more change so the reader's callback runs and ends the stream.
  ASSERT_TRUE(sched_
                  ->SubmitSweep(R"(name: other
kind: sraven
grid: {M: [1]}
)",
                                false)
                  .ok());
  http_->Shutdown();  // ends any stream still open
  reader.join();
  absl::MutexLock lock(&mu);
  const size_t at = received.find("event: sweep");
  ASSERT_NE(at, std::string::npos);
  const size_t data = received.find("data: ", at);
  const size_t end = received.find("\n\n", data);
  const json ev =
      json::parse(received.substr(data + 6, end - data - 6), nullptr, false);
  ASSERT_TRUE(ev.is_object()) << received;
  EXPECT_EQ(ev["counts"]["succeeded"], 18);
  EXPECT_EQ(ev["state"], "completed");
  ASSERT_EQ(ev["changed"].size(), 1u);
  EXPECT_EQ(ev["changed"][0]["trial_id"], last_.trial_id);
  EXPECT_EQ(ev["changed"][0]["state"], "succeeded");
  EXPECT_NEAR(ev["changed"][0]["results"]["ood_acc"].get<double>(),
              Ood(2, 4, 2), 1e-12);
}

// Runs `fn` on a thread; past `limit` the test fails and the process exits
// (a thread stuck in accept() cannot be joined, and ctest would wait).
void WithDeadline(absl::Duration limit, const std::string& what,
                  const std::function<void()>& fn) {
  auto done = std::make_shared<std::promise<void>>();
  std::future<void> finished = done->get_future();
  std::thread t([fn, done] {
    fn();
    done->set_value();
  });
  if (finished.wait_for(absl::ToChronoNanoseconds(limit)) !=
      std::future_status::ready) {
    ADD_FAILURE() << what << " did not finish within " << limit;
    std::fflush(stdout);
    std::fflush(stderr);
    std::_Exit(1);
  }
  t.join();
}

// Issue 20: Shutdown() right after Start() used to hang in 1 of 2 bench runs
// (cpp-httplib ignored the stop() and the join waited on accept()).
TEST_F(HttpServerTest, ShutdownRightAfterStartNeverHangs) {
  HttpServerOptions o;
  o.listen = "127.0.0.1:0";
  o.threads = 4;
  for (int i = 0; i < 200; ++i) {
    WithDeadline(absl::Seconds(10), absl::StrCat("iteration ", i), [&] {
      auto h = HttpServer::Start(sched_.get(), store_.get(), kToken, o);
      ASSERT_TRUE(h.ok()) << h.status();
      if (i % 2 == 0) {
        (*h)->Shutdown();
      }  // else: the destructor shuts it down
    });
  }
  // The fixture's server still answers.
  auto c = Client();
  auto r = c.Get("/healthz");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
}

TEST_F(HttpServerTest, BusyPortIsUnavailableNotShared) {
  HttpServerOptions o;
  o.listen = absl::StrCat("127.0.0.1:", http_->port());
  auto h = HttpServer::Start(sched_.get(), store_.get(), kToken, o);
  EXPECT_TRUE(absl::IsUnavailable(h.status())) << h.status();
}

TEST(ParseListenAddressTest, Forms) {
  // Parsed only, never bound.
  auto a = ParseListenAddress("127.0.0.1:8080");  // fixed-port-ok
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->first, "127.0.0.1");
  EXPECT_EQ(a->second, 8080);
  a = ParseListenAddress("[::1]:0");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->first, "::1");
  a = ParseListenAddress(":9000");  // fixed-port-ok
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->first, "0.0.0.0");
  EXPECT_FALSE(ParseListenAddress("localhost").ok());
  EXPECT_FALSE(ParseListenAddress("h:99999").ok());
}

}  // namespace
}  // namespace smoe::coordinator

namespace smoe::coordinator {
namespace {

// A failed attempt's exit code and message reach the trial page; a sweep
// says when no connected worker can run it (issue 17 item 4).
TEST_F(HttpServerTest, AttemptsAndUnschedulableAreShown) {
  ASSERT_TRUE(sched_
                  ->Fail(worker_, last_.trial_id, last_.attempt,
                         FailReason::kError, 70,
                         "trainer exited with status 70: CUDA error: no "
                         "device")
                  .ok());
  json m = GetJson(absl::StrCat("/api/trials/", last_.trial_id, "/metrics"));
  ASSERT_EQ(m["attempts"].size(), 1u);
  EXPECT_EQ(m["attempts"][0]["attempt"], 1);
  EXPECT_EQ(m["attempts"][0]["worker"], worker_);
  EXPECT_EQ(m["attempts"][0]["outcome"], "failed");
  EXPECT_EQ(m["attempts"][0]["exit_code"], 70);
  EXPECT_THAT(m["attempts"][0]["message"].get<std::string>(),
              HasSubstr("CUDA error: no device"));
  EXPECT_FALSE(m["attempts"][0]["ended_ms"].is_null());
  EXPECT_THAT(m["last_error"].get<std::string>(), HasSubstr("no device"));

  ASSERT_TRUE(sched_
                  ->SubmitSweep("name: gpu\nkind: sraven\ngrid:\n  M: [1]\n"
                                "fixed: {device: cuda}\n"
                                "resources: {gpus_per_trial: 1}\n",
                                false)
                  .ok());
  const json sweeps = GetJson("/api/sweeps");
  bool seen = false;
  for (const json& s : sweeps["sweeps"]) {
    if (s["sweep_id"] != "gpu") continue;
    seen = true;
    EXPECT_THAT(s["unschedulable"].get<std::string>(),
                HasSubstr("each trial needs 1 GPU(s)"));
  }
  EXPECT_TRUE(seen) << sweeps.dump();
}

}  // namespace
}  // namespace smoe::coordinator
