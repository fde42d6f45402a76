// Copyright 2026 SMoE Lab authors.
//
// The dashboard's roles, session cookies, CSRF checks and admin actions
// (coordinator/http/http_auth.h, coordinator/http/http_actions.h) against a
// real HttpServer on 127.0.0.1:0 with viewer, worker and admin tokens.
#include <httplib.h>

#include <algorithm>
#include <memory>
#include <string>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "coordinator/http/http_auth.h"
#include "coordinator/http/http_server.h"
#include "coordinator/scheduler.h"
#include "coordinator/tokens.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "store/sqlite_store.h"
#include "store/store_test_util.h"

namespace smoe::coordinator {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::MatchesRegex;

constexpr char kAdmin[] = "smoe_fedcba9876543210fedcba9876543210";
constexpr char kSweep[] = R"(name: acts
kind: sraven
grid:
  M: [1, 2]
fixed: {steps: 10}
seeds: [0]
)";

class HttpActionsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto st = store::SqliteStore::Open(dir_.File("smoe.db"), {});
    ASSERT_TRUE(st.ok()) << st.status();
    store_ = std::move(*st);
    auto s = Scheduler::Create(store_.get(), Clock::Real(), {});
    ASSERT_TRUE(s.ok()) << s.status();
    sched_ = std::move(*s);
    ASSERT_TRUE(sched_->SubmitSweep(kSweep, false).ok());
    tokens_ = std::make_unique<TokenRegistry>(kAdmin, TokensFile(dir_.path()));
    viewer_ =
        CreateToken(TokensFile(dir_.path()), "vic", Role::kViewer, absl::Now())
            ->token;
    worker_ = CreateToken(TokensFile(dir_.path()), "wendy", Role::kWorker,
                          absl::Now())
                  ->token;
    HttpServerOptions o;
    o.listen = "127.0.0.1:0";
    auto h = HttpServer::Start(sched_.get(), store_.get(), tokens_.get(), o);
    ASSERT_TRUE(h.ok()) << h.status();
    http_ = std::move(*h);
  }
  void TearDown() override {
    if (http_) http_->Shutdown();
  }

  httplib::Client Client() {
    httplib::Client c("127.0.0.1", http_->port());
    c.set_read_timeout(10, 0);
    return c;
  }
  // Signs in with `token`; returns the cookie ("smoe_session=...") or "".
  std::string Login(const std::string& token, int want = 204) {
    auto c = Client();
    auto r =
        c.Post("/login", json({{"token", token}}).dump(), "application/json");
    EXPECT_TRUE(r);
    if (!r) return "";
    EXPECT_EQ(r->status, want) << r->body;
    const std::string set = r->get_header_value("Set-Cookie");
    return set.substr(0, set.find(';'));
  }
  std::string Csrf(const std::string& cookie) {
    auto c = Client();
    auto r = c.Get("/api/session", {{"Cookie", cookie}});
    EXPECT_TRUE(r && r->status == 200) << (r ? r->body : "no reply");
    return r ? json::parse(r->body).value("csrf", "") : "";
  }
  std::string FirstTrial() { return (*sched_->ListTrials("acts"))[0].trial_id; }

  store::testing::ScopedTempDir dir_;
  std::unique_ptr<store::SqliteStore> store_;
  std::unique_ptr<Scheduler> sched_;
  std::unique_ptr<TokenRegistry> tokens_;
  std::unique_ptr<HttpServer> http_;
  std::string viewer_, worker_;
};

TEST_F(HttpActionsTest, TheSessionCookieCarriesTheRoleNotTheToken) {
  const std::string cookie = Login(viewer_);
  EXPECT_THAT(
      cookie,
      MatchesRegex("smoe_session=s3\\.vic\\.viewer\\.[0-9]+\\.[0-9a-f]{32}"
                   "\\.[0-9a-f]{64}"));
  EXPECT_THAT(cookie, ::testing::Not(HasSubstr(viewer_)));
  auto c = Client();
  auto r = c.Get("/api/session", {{"Cookie", cookie}});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const json j = json::parse(r->body);
  EXPECT_EQ(j["role"], "viewer");
  EXPECT_EQ(j["name"], "vic");
  EXPECT_EQ(j["admin"], false);
  EXPECT_THAT(j["csrf"].get<std::string>(), MatchesRegex("[0-9a-f]{32}"));
  // A forged role in the cookie is refused.
  std::string forged = cookie;
  forged.replace(forged.find(".viewer."), 8, ".admin.");
  r = c.Get("/api/sweeps", {{"Cookie", forged}});
  EXPECT_EQ(r->status, 401);
}

TEST_F(HttpActionsTest, AWorkerTokenCannotSignInOrRead) {
  Login(worker_, 403);
  auto c = Client();
  auto r = c.Get("/api/sweeps",
                 {{"Authorization", absl::StrCat("Bearer ", worker_)}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 403);
  EXPECT_THAT(r->body, HasSubstr("needs role 'viewer'"));
  EXPECT_THAT(r->body, HasSubstr("'wendy' has role 'worker'"));
}

TEST_F(HttpActionsTest, AViewerReadsButCannotAct) {
  const std::string cookie = Login(viewer_);
  auto c = Client();
  auto r = c.Get("/api/sweeps", {{"Cookie", cookie}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  const std::string csrf = Csrf(cookie);
  r = c.Post("/api/sweeps/acts/cancel",
             {{"Cookie", cookie}, {"X-CSRF-Token", csrf}}, "", "");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 403);
  EXPECT_THAT(r->body, HasSubstr("needs role 'admin'"));
  r = c.Post("/api/trials/" + FirstTrial() + "/cancel",
             {{"Authorization", absl::StrCat("Bearer ", viewer_)}}, "", "");
  EXPECT_EQ(r->status, 403);
  EXPECT_EQ(sched_->GetSweep("acts")->record.state, store::SweepState::kActive);
}

TEST_F(HttpActionsTest, AdminActionsNeedTheCsrfTokenAndOurOrigin) {
  const std::string cookie = Login(kAdmin);
  EXPECT_THAT(cookie, HasSubstr("s3.admin.admin."));
  const std::string csrf = Csrf(cookie);
  auto c = Client();
  const std::string path = "/api/trials/" + FirstTrial() + "/cancel";
  auto r = c.Post(path, {{"Cookie", cookie}}, "", "");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 403);
  EXPECT_THAT(r->body, HasSubstr("missing X-CSRF-Token"));
  r = c.Post(path, {{"Cookie", cookie}, {"X-CSRF-Token", std::string(32, '0')}},
             "", "");
  EXPECT_EQ(r->status, 403);
  EXPECT_THAT(r->body, HasSubstr("wrong X-CSRF-Token"));
  // Another viewer's CSRF token does not fit an admin's session.
  r = c.Post(path, {{"Cookie", cookie}, {"X-CSRF-Token", Csrf(Login(viewer_))}},
             "", "");
  EXPECT_EQ(r->status, 403);
  r = c.Post(path,
             {{"Cookie", cookie},
              {"X-CSRF-Token", csrf},
              {"Origin", "http://evil.example"}},
             "", "");
  EXPECT_EQ(r->status, 403);
  EXPECT_THAT(r->body, HasSubstr("cross-origin"));
  EXPECT_EQ(store_->GetTrial(FirstTrial())->state, store::TrialState::kPending);

  const std::string own_origin =
      absl::StrCat("http://127.0.0.1:", http_->port());
  r = c.Post(
      path,
      {{"Cookie", cookie}, {"X-CSRF-Token", csrf}, {"Origin", own_origin}}, "",
      "");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(store_->GetTrial(FirstTrial())->state,
            store::TrialState::kCancelled);
  // Not possible twice: 409 naming the state.
  r = c.Post(path, {{"Cookie", cookie}, {"X-CSRF-Token", csrf}}, "", "");
  EXPECT_EQ(r->status, 409);
  EXPECT_THAT(r->body, HasSubstr("is cancelled"));
  r = c.Post("/api/trials/" + FirstTrial() + "/retry",
             {{"Cookie", cookie}, {"X-CSRF-Token", csrf}}, "", "");
  EXPECT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(store_->GetTrial(FirstTrial())->state, store::TrialState::kPending);
}

TEST_F(HttpActionsTest, AdminAnnotatesArchivesAndCancelsASweep) {
  auto c = Client();
  const httplib::Headers bearer = {
      {"Authorization", absl::StrCat("Bearer ", kAdmin)}};
  // Bearer callers need no CSRF token (a browser never adds the header).
  auto r = c.Put("/api/sweeps/acts/annotations", bearer,
                 R"({"notes": "k=4 best", "tags": ["paper", "v2"]})",
                 "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  r = c.Put("/api/sweeps/acts/annotations", bearer, R"({"tags": ["a b"]})",
            "application/json");
  EXPECT_EQ(r->status, 400);
  EXPECT_THAT(r->body, HasSubstr("tags: 'a b'"));
  r = c.Put("/api/sweeps/acts/annotations", bearer, R"({"colour": 1})",
            "application/json");
  EXPECT_EQ(r->status, 400);
  EXPECT_THAT(r->body, HasSubstr("unknown field 'colour'"));
  r = c.Post("/api/sweeps/acts/archive", bearer, "", "");
  EXPECT_EQ(r->status, 200) << r->body;
  r = c.Get("/api/sweeps", bearer);
  ASSERT_TRUE(r);
  const json sweeps = json::parse(r->body)["sweeps"];
  ASSERT_EQ(sweeps.size(), 1u);
  EXPECT_EQ(sweeps[0]["notes"], "k=4 best");
  EXPECT_EQ(sweeps[0]["tags"], json({"paper", "v2"}));
  EXPECT_EQ(sweeps[0]["archived"], true);
  r = c.Post("/api/sweeps/acts/cancel", bearer, "", "");
  EXPECT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(json::parse(r->body)["cancelled"], 2);
  r = c.Post("/api/sweeps/acts/retry", bearer, R"({"include_cancelled": true})",
             "application/json");
  EXPECT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(json::parse(r->body)["requeued"], 2);
  r = c.Post("/api/sweeps/nope/cancel", bearer, "", "");
  EXPECT_EQ(r->status, 404);
}

TEST_F(HttpActionsTest, SubmitValidatesDryRunAndAddsASweepLikeTheCli) {
  auto c = Client();
  const httplib::Headers bearer = {
      {"Authorization", absl::StrCat("Bearer ", kAdmin)}};
  const std::string yaml =
      "name: posted\nkind: sraven\ngrid:\n  M: [1, 2]\n  top_k: [1, 2]\n"
      "fixed: {steps: 10}\nseeds: [0, 1]\n";
  // Dry run: counted, nothing stored.
  auto r = c.Post("/api/sweeps", bearer,
                  json({{"spec_yaml", yaml}, {"dry_run", true}}).dump(),
                  "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  json j = json::parse(r->body);
  EXPECT_EQ(j["sweep_id"], "posted");
  EXPECT_EQ(j["kind"], "sraven");
  EXPECT_EQ(j["dry_run"], true);
  EXPECT_EQ(j["new_trials"], 8);
  EXPECT_TRUE(absl::IsNotFound(sched_->GetSweep("posted").status()));
  // Submitted, then again: nothing duplicated.
  r = c.Post("/api/sweeps", bearer, json({{"spec_yaml", yaml}}).dump(),
             "application/json");
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(json::parse(r->body)["new_trials"], 8);
  EXPECT_EQ(sched_->ListTrials("posted")->size(), 8u);
  r = c.Post("/api/sweeps", bearer, json({{"spec_yaml", yaml}}).dump(),
             "application/json");
  ASSERT_EQ(r->status, 200) << r->body;
  j = json::parse(r->body);
  EXPECT_EQ(j["new_trials"], 0);
  EXPECT_EQ(j["existing_trials"], 8);
  // Every problem of a bad file, each naming its field and value, and the
  // whole message as the scheduler (and so the CLI over gRPC) words it.
  const std::string bad =
      "name: bad\nkind: sraven\ngrid:\n  M: [0, 2]\ncolour: red\n";
  r = c.Post("/api/sweeps", bearer,
             json({{"spec_yaml", bad}, {"dry_run", true}}).dump(),
             "application/json");
  ASSERT_EQ(r->status, 400) << r->body;
  j = json::parse(r->body);
  const auto direct = sched_->SubmitSweep(bad, true);
  ASSERT_FALSE(direct.ok());
  EXPECT_EQ(j["error"], std::string(direct.status().message()));
  EXPECT_THAT(j["error"].get<std::string>(), HasSubstr("2 problems:"));
  ASSERT_EQ(j["problems"].size(), 2u) << r->body;
  EXPECT_THAT(j["problems"][0].get<std::string>(),
              HasSubstr("unknown key 'colour'"));
  EXPECT_EQ(j["problems"][1], "grid.M: expected a value in [1, 8], got 0");
  // One problem is a list of one.
  r = c.Post("/api/sweeps", bearer,
             json({{"spec_yaml", "name: x\nkind: nope\n"}}).dump(),
             "application/json");
  ASSERT_EQ(r->status, 400) << r->body;
  EXPECT_EQ(json::parse(r->body)["problems"].size(), 1u);
  EXPECT_THAT(r->body, HasSubstr("nope"));
  // Bad bodies name the field.
  r = c.Post("/api/sweeps", bearer, R"({"dry_run": true})", "application/json");
  EXPECT_EQ(r->status, 400);
  EXPECT_THAT(r->body, HasSubstr("spec_yaml: required"));
  EXPECT_THAT(r->body, HasSubstr("; missing"));
  r = c.Post("/api/sweeps", bearer,
             json({{"spec_yaml", yaml}, {"dry", 1}}).dump(),
             "application/json");
  EXPECT_EQ(r->status, 400);
  EXPECT_THAT(r->body, HasSubstr("unknown field 'dry'"));
  r = c.Post("/api/sweeps", bearer,
             json({{"spec_yaml", yaml}, {"dry_run", "yes"}}).dump(),
             "application/json");
  EXPECT_EQ(r->status, 400);
  EXPECT_THAT(r->body,
              HasSubstr("dry_run: must be true or false; got \\\"yes\\\""));
  r = c.Post("/api/sweeps", bearer, "[1]", "application/json");
  EXPECT_EQ(r->status, 400);
  // A viewer may not submit, not even a dry run; no token is 401.
  r = c.Post("/api/sweeps",
             {{"Authorization", absl::StrCat("Bearer ", viewer_)}},
             json({{"spec_yaml", yaml}, {"dry_run", true}}).dump(),
             "application/json");
  EXPECT_EQ(r->status, 403);
  EXPECT_THAT(r->body, HasSubstr("needs role 'admin'"));
  r = c.Post("/api/sweeps", json({{"spec_yaml", yaml}}).dump(),
             "application/json");
  EXPECT_EQ(r->status, 401);
  // A session cookie needs the CSRF token.
  const std::string cookie = Login(kAdmin);
  r = c.Post("/api/sweeps", {{"Cookie", cookie}},
             json({{"spec_yaml", yaml}}).dump(), "application/json");
  EXPECT_EQ(r->status, 403);
  EXPECT_THAT(r->body, HasSubstr("missing X-CSRF-Token"));
}

TEST_F(HttpActionsTest, ExtendAddsValuesOnceAndNamesBadInput) {
  auto c = Client();
  const httplib::Headers bearer = {
      {"Authorization", absl::StrCat("Bearer ", kAdmin)}};
  // 3.0 from a JSON client is the integer 3, as over gRPC.
  auto r = c.Post("/api/sweeps/acts/extend", bearer,
                  R"({"axis": "M", "values": [3.0, 4]})", "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(json::parse(r->body)["new_trials"], 2);
  EXPECT_EQ(sched_->ListTrials("acts")->size(), 4u);
  r = c.Post("/api/sweeps/acts/extend", bearer,
             R"({"axis": "M", "values": [3, 4]})", "application/json");
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(json::parse(r->body)["new_trials"], 0);
  r = c.Post("/api/sweeps/acts/extend", bearer,
             R"({"axis": "seeds", "values": [7]})", "application/json");
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(json::parse(r->body)["new_trials"], 4);
  // The scheduler's own checks, with its messages.
  r = c.Post("/api/sweeps/acts/extend", bearer,
             R"({"axis": "M", "values": [99]})", "application/json");
  EXPECT_EQ(r->status, 400) << r->body;
  EXPECT_THAT(r->body, HasSubstr("99"));
  r = c.Post("/api/sweeps/acts/extend", bearer,
             R"({"axis": "colour", "values": [1]})", "application/json");
  EXPECT_EQ(r->status, 404) << r->body;
  EXPECT_THAT(r->body, HasSubstr("colour"));
  r = c.Post("/api/sweeps/nope/extend", bearer,
             R"({"axis": "M", "values": [1]})", "application/json");
  EXPECT_EQ(r->status, 404) << r->body;
  // Bad bodies.
  r = c.Post("/api/sweeps/acts/extend", bearer, R"({"values": [1]})",
             "application/json");
  EXPECT_EQ(r->status, 400);
  EXPECT_THAT(r->body, HasSubstr("axis: required"));
  r = c.Post("/api/sweeps/acts/extend", bearer,
             R"({"axis": "M", "values": []})", "application/json");
  EXPECT_EQ(r->status, 400);
  EXPECT_THAT(r->body, HasSubstr("values: required, a non-empty list; got []"));
  r = c.Post("/api/sweeps/acts/extend", bearer,
             R"({"axis": "M", "values": [1e300, 2.5]})", "application/json");
  EXPECT_EQ(r->status, 400) << r->body;
  EXPECT_THAT(r->body, HasSubstr("grid.M"));
  r = c.Post("/api/sweeps/acts/extend", bearer,
             R"({"axis": "M", "values": [1, [2]]})", "application/json");
  EXPECT_EQ(r->status, 400);
  EXPECT_THAT(r->body, HasSubstr("values[1]: must be a number"));
  r = c.Post("/api/sweeps/acts/extend",
             {{"Authorization", absl::StrCat("Bearer ", viewer_)}},
             R"({"axis": "M", "values": [5]})", "application/json");
  EXPECT_EQ(r->status, 403);
  EXPECT_EQ(sched_->ListTrials("acts")->size(), 8u);
}

// Sampled axes over HTTP (issue 33 item 1): the sweep JSON carries the
// declaration (the dashboard's log axes) and the drawn values as an axis's
// values; POST .../extend {"axis": "samples", "values": [N]} draws N more.
TEST_F(HttpActionsTest, SampledAxesAreShownAndExtendedBySamples) {
  ASSERT_TRUE(sched_
                  ->SubmitSweep("name: tuned\nkind: sraven\ngrid: {M: [1, "
                                "2]}\nsample: {lr: {loguniform: [0.0001, "
                                "0.01]}, warmup: {int: [50, 60]}}\nsamples: "
                                "4\nsample_seed: 3\nfixed: {steps: 100}\n",
                                false)
                  .ok());
  auto c = Client();
  const httplib::Headers bearer = {
      {"Authorization", absl::StrCat("Bearer ", kAdmin)}};
  auto r = c.Get("/api/sweeps/tuned", bearer);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  json body = json::parse(r->body);
  const json& sweep = body["sweep"];
  ASSERT_EQ(sweep["axes"].size(), 3u) << sweep["axes"];
  EXPECT_EQ(sweep["axes"][0]["name"], "M");
  EXPECT_FALSE(sweep["axes"][0].contains("sampled"));
  const json& lr = sweep["axes"][1];
  EXPECT_EQ(lr["name"], "lr");
  EXPECT_EQ(lr["log"], true);
  EXPECT_EQ(lr["sampled"]["distribution"], "loguniform");
  EXPECT_EQ(lr["sampled"]["range"], json::array({0.0001, 0.01}));
  ASSERT_EQ(lr["values"].size(), 4u);
  for (const json& v : lr["values"]) {
    EXPECT_GE(v.get<double>(), 0.0001);
    EXPECT_LE(v.get<double>(), 0.01);
  }
  EXPECT_TRUE(std::is_sorted(lr["values"].begin(), lr["values"].end()));
  EXPECT_EQ(sweep["axes"][2]["log"], false);
  EXPECT_EQ(sweep["samples"], 4);
  EXPECT_EQ(sweep["sample_seed"], 3);
  EXPECT_EQ(sweep["sample"][0]["name"], "lr");
  EXPECT_EQ(sweep["sample"][1]["distribution"], "int");
  // The sampled params are columns of the trials table.
  EXPECT_EQ(body["columns"]["params"], json::array({"M", "lr", "warmup"}));
  EXPECT_TRUE(body["rows"][0]["params"].contains("lr")) << body["rows"][0];
  r = c.Post("/api/sweeps/tuned/extend", bearer,
             R"({"axis": "samples", "values": [3]})", "application/json");
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(json::parse(r->body)["new_trials"], 3 * 2);
  EXPECT_EQ(sched_->ListTrials("tuned")->size(), 7u * 2u);
  r = c.Get("/api/sweeps/tuned", bearer);
  EXPECT_EQ(json::parse(r->body)["sweep"]["samples"], 7);
  r = c.Post("/api/sweeps/tuned/extend", bearer,
             R"({"axis": "samples", "values": [0]})", "application/json");
  EXPECT_EQ(r->status, 400) << r->body;
  EXPECT_THAT(r->body, HasSubstr("samples: expected one positive integer"));
  r = c.Post("/api/sweeps/acts/extend", bearer,
             R"({"axis": "samples", "values": [2]})", "application/json");
  EXPECT_EQ(r->status, 400) << r->body;
  EXPECT_THAT(r->body, HasSubstr("has no sampled axes"));
  EXPECT_EQ(sched_->ListTrials("tuned")->size(), 14u);
}

TEST_F(HttpActionsTest, AdminDeletesAFinishedSweepOnly) {
  auto c = Client();
  const httplib::Headers bearer = {
      {"Authorization", absl::StrCat("Bearer ", kAdmin)}};
  // A viewer may not; an admin's session needs the CSRF token.
  auto r = c.Delete("/api/sweeps/acts",
                    {{"Authorization", absl::StrCat("Bearer ", viewer_)}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 403);
  EXPECT_THAT(r->body, HasSubstr("needs role 'admin'"));
  const std::string cookie = Login(kAdmin);
  r = c.Delete("/api/sweeps/acts", {{"Cookie", cookie}});
  EXPECT_EQ(r->status, 403);
  EXPECT_THAT(r->body, HasSubstr("missing X-CSRF-Token"));
  // Live trials: refused, naming the sweep and the count.
  r = c.Delete("/api/sweeps/acts",
               {{"Cookie", cookie}, {"X-CSRF-Token", Csrf(cookie)}});
  EXPECT_EQ(r->status, 409);
  EXPECT_THAT(r->body, HasSubstr("sweep 'acts' has 2 live trials"));
  EXPECT_THAT(r->body, HasSubstr("smoe sweep cancel acts"));
  ASSERT_TRUE(sched_->CancelSweep("acts").ok());
  // Reads fill the dashboard's caches for the sweep.
  r = c.Get("/api/sweeps/acts", bearer);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(json::parse(r->body)["sweep"]["counts"]["cancelled"], 2);
  r = c.Get("/api/sweeps/acts/curves?metric=ood_acc&x=M&series=&facet=",
            bearer);
  EXPECT_EQ(r->status, 200) << r->body;
  r = c.Delete("/api/sweeps/acts",
               {{"Cookie", cookie}, {"X-CSRF-Token", Csrf(cookie)}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(json::parse(r->body)["deleted_trials"], 2);
  r = c.Get("/api/sweeps/acts", bearer);
  EXPECT_EQ(r->status, 404);
  r = c.Get("/api/sweeps", bearer);
  EXPECT_TRUE(json::parse(r->body)["sweeps"].empty());
  EXPECT_TRUE(absl::IsNotFound(store_->GetSweep("acts").status()));
  r = c.Delete("/api/sweeps/acts", bearer);
  EXPECT_EQ(r->status, 404);
  EXPECT_THAT(r->body, HasSubstr("'acts'"));
  // The same name again is a new sweep: nothing of the old one is served.
  ASSERT_TRUE(sched_->SubmitSweep(kSweep, false).ok());
  r = c.Get("/api/sweeps/acts", bearer);
  ASSERT_EQ(r->status, 200);
  const json page = json::parse(r->body);
  EXPECT_EQ(page["sweep"]["counts"]["pending"], 2);
  EXPECT_EQ(page["sweep"]["counts"]["cancelled"], 0);
  for (const json& row : page["rows"]) EXPECT_EQ(row["state"], "pending");
}

// A dashboard watching a sweep that is deleted gets `event: deleted` and a
// cleanly ended stream (no cut chunked response, no reconnect loop).
TEST_F(HttpActionsTest, AnEventStreamOfADeletedSweepEndsWithDeleted) {
  ASSERT_TRUE(sched_->CancelSweep("acts").ok());
  absl::Mutex mu;
  std::string received;
  bool ok = false;
  std::thread reader([&] {
    auto c = Client();
    auto r = c.Get(
        "/api/sweeps/acts/events",
        {{"Authorization", absl::StrCat("Bearer ", viewer_)}},
        [&](const httplib::Response& res) { return res.status == 200; },
        [&](const char* data, size_t n) {
          absl::MutexLock lock(&mu);
          received.append(data, n);
          return true;
        });
    absl::MutexLock lock(&mu);
    ok = static_cast<bool>(r) && r->status == 200;
  });
  const absl::Time end = absl::Now() + absl::Seconds(20);
  auto has = [&](const char* what) {
    absl::MutexLock lock(&mu);
    return received.find(what) != std::string::npos;
  };
  while (!has("event: hello") && absl::Now() < end) {
    absl::SleepFor(absl::Milliseconds(20));
  }
  ASSERT_TRUE(sched_->DeleteSweep("acts").ok());
  reader.join();  // the stream ends on its own
  absl::MutexLock lock(&mu);
  EXPECT_TRUE(ok) << "the stream ended cleanly: " << received;
  EXPECT_THAT(received, HasSubstr("event: deleted\ndata: {}\n\n"));
}

TEST_F(HttpActionsTest, ARevokedTokensSessionEnds) {
  const std::string cookie = Login(viewer_);
  auto c = Client();
  EXPECT_EQ(c.Get("/api/sweeps", {{"Cookie", cookie}})->status, 200);
  ASSERT_TRUE(RevokeToken(TokensFile(dir_.path()), "vic").ok());
  EXPECT_EQ(c.Get("/api/sweeps", {{"Cookie", cookie}})->status, 401);
  // Re-created under the same name: a new token, and the old session stays
  // dead.
  ASSERT_TRUE(
      CreateToken(TokensFile(dir_.path()), "vic", Role::kViewer, absl::Now())
          .ok());
  EXPECT_EQ(c.Get("/api/sweeps", {{"Cookie", cookie}})->status, 401);
}

// Issue 36 (low): each sign-in is its own session, with its own CSRF token;
// POST /logout ends it on the server (a copied cookie is refused after);
// sessions expire kSessionLifetime after sign-in; a forged issue time or
// nonce breaks the MAC.
TEST_F(HttpActionsTest, SessionsArePerSignInEndAtLogoutAndExpire) {
  const std::string a = Login(kAdmin);
  const std::string b = Login(kAdmin);
  ASSERT_FALSE(a.empty());
  EXPECT_NE(a, b);
  EXPECT_NE(Csrf(a), Csrf(b)) << "a CSRF token per sign-in";
  auto c = Client();
  EXPECT_EQ(c.Get("/api/sweeps", {{"Cookie", a}})->status, 200);
  // Logout with cookie a: a is refused from now on, b still works.
  auto out = c.Post("/logout", {{"Cookie", a}}, "", "text/plain");
  ASSERT_TRUE(out);
  EXPECT_EQ(out->status, 204);
  EXPECT_EQ(c.Get("/api/sweeps", {{"Cookie", a}})->status, 401);
  EXPECT_EQ(c.Get("/api/sweeps", {{"Cookie", b}})->status, 200);
  // Expiry and forgery, at the function level.
  const std::optional<Principal> admin = tokens_->Find("admin");
  ASSERT_TRUE(admin.has_value());
  const absl::Time t0 = absl::FromUnixSeconds(1'800'000'000);
  const std::string nonce(32, 'a');
  const std::string v = SessionCookieValue(*tokens_, *admin, t0, nonce);
  EXPECT_TRUE(
      PrincipalFromSession(tokens_.get(), v, t0 + absl::Hours(1)).has_value());
  EXPECT_TRUE(PrincipalFromSession(tokens_.get(), v,
                                   t0 + kSessionLifetime - absl::Seconds(1))
                  .has_value());
  EXPECT_FALSE(
      PrincipalFromSession(tokens_.get(), v, t0 + kSessionLifetime).has_value())
      << "expired";
  EXPECT_FALSE(
      PrincipalFromSession(tokens_.get(), v, t0 - absl::Hours(1)).has_value())
      << "issued in the future";
  std::string later = v;
  const std::string t0s = absl::StrCat(absl::ToUnixSeconds(t0));
  later.replace(later.find(t0s), t0s.size(),
                absl::StrCat(absl::ToUnixSeconds(t0) + 3600));
  EXPECT_FALSE(PrincipalFromSession(tokens_.get(), later, t0 + absl::Hours(2))
                   .has_value())
      << "a moved issue time breaks the MAC";
  std::string other_nonce = v;
  other_nonce.replace(other_nonce.find(nonce), nonce.size(),
                      std::string(32, 'b'));
  EXPECT_FALSE(
      PrincipalFromSession(tokens_.get(), other_nonce, t0 + absl::Hours(1))
          .has_value());
  EXPECT_FALSE(PrincipalFromSession(tokens_.get(), "s2.admin.admin.00",
                                    t0 + absl::Hours(1))
                   .has_value())
      << "the old format is refused";
}

TEST(SameOriginRequestTest, OriginAndSecFetchSite) {
  auto req = [](std::initializer_list<std::pair<const char*, const char*>> h) {
    httplib::Request r;
    r.headers.emplace("Host", "127.0.0.1:8080");  // fixed-port-ok: parsed only
    for (const auto& [k, v] : h) r.headers.emplace(k, v);
    return SameOriginRequest(r);
  };
  EXPECT_TRUE(req({}));
  EXPECT_TRUE(req(
      {{"Origin", "http://127.0.0.1:8080"}}));  // fixed-port-ok: parsed only
  EXPECT_FALSE(req(
      {{"Origin", "http://127.0.0.1:9090"}}));  // fixed-port-ok: parsed only
  EXPECT_FALSE(req({{"Origin", "https://evil.example"}}));
  EXPECT_FALSE(req({{"Origin", "null"}}));
  EXPECT_TRUE(req({{"Origin", "null"}, {"Sec-Fetch-Site", "same-origin"}}));
  EXPECT_FALSE(req({{"Origin", "null"}, {"Sec-Fetch-Site", "cross-site"}}));
  EXPECT_FALSE(req({{"Sec-Fetch-Site", "cross-site"}}));
  EXPECT_FALSE(req({{"Sec-Fetch-Site", "same-site"}}));
  EXPECT_TRUE(req({{"Sec-Fetch-Site", "none"}}));
}

TEST_F(HttpActionsTest, CrossSiteSignInIsRefused) {
  auto c = Client();
  auto r = c.Post("/login", {{"Origin", "https://evil.example"}},
                  json({{"token", kAdmin}}).dump(), "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 403);
  EXPECT_FALSE(r->has_header("Set-Cookie"));
}

// Issue 31 item 7: the workers table over HTTP and draining from it (admin,
// CSRF for cookie sessions), with a worker id holding '/' sent as %2F.
TEST_F(HttpActionsTest, WorkersAreListedAndAnAdminDrainsOne) {
  WorkerInfo a;
  a.worker_id = "gpu-a";
  a.hostname = "node-1";
  a.slots = 2;
  a.gpus = 0;
  a.labels = {{"zone", "a"}};
  a.kinds = {"sraven", "command"};
  ASSERT_TRUE(sched_->Register(a).ok());
  WorkerInfo b;
  b.worker_id = "pool/b";
  b.hostname = "node-2";
  ASSERT_TRUE(sched_->Register(b).ok());
  auto lease = sched_->Lease("gpu-a", 1, 0);
  ASSERT_TRUE(lease.ok() && lease->size() == 1u);
  const std::string trial = (*lease)[0].trial_id;

  auto c = Client();
  const httplib::Headers viewer = {
      {"Authorization", absl::StrCat("Bearer ", viewer_)}};
  auto r = c.Get("/api/workers", viewer);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  json j = json::parse(r->body);
  ASSERT_EQ(j["workers"].size(), 2u) << j.dump();
  EXPECT_EQ(j["hidden"], 0);
  EXPECT_GT(j["as_of_ms"].get<int64_t>(), 0);
  const json& w = j["workers"][0];
  EXPECT_EQ(w["worker_id"], "gpu-a");
  EXPECT_EQ(w["hostname"], "node-1");
  EXPECT_EQ(w["state"], "ready");
  EXPECT_EQ(w["slots"], 2);
  EXPECT_EQ(w["slots_used"], 1);
  EXPECT_EQ(w["labels"], json({{"zone", "a"}}));
  EXPECT_EQ(w["kinds"], json({"sraven", "command"}));
  EXPECT_EQ(w["trial_ids"], json({trial}));
  EXPECT_EQ(j["workers"][1]["worker_id"], "pool/b");
  EXPECT_EQ(j["workers"][1]["trial_ids"], json::array());

  r = c.Get("/api/workers?all=yes", viewer);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  EXPECT_THAT(r->body, HasSubstr("all: must be 0 or 1, not 'yes'"));

  // A viewer cannot drain; a signed-in admin needs the CSRF header.
  r = c.Post("/api/workers/pool%2Fb/drain", viewer, "", "");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 403) << r->body;
  const std::string cookie = Login(kAdmin);
  r = c.Post("/api/workers/pool%2Fb/drain", {{"Cookie", cookie}}, "", "");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 403) << r->body;
  EXPECT_THAT(r->body, HasSubstr("X-CSRF-Token"));
  r = c.Post("/api/workers/pool%2Fb/drain",
             {{"Cookie", cookie}, {"X-CSRF-Token", Csrf(cookie)}}, "", "");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(json::parse(r->body),
            json({{"worker_id", "pool/b"}, {"draining", true}}));
  const httplib::Headers admin = {
      {"Authorization", absl::StrCat("Bearer ", kAdmin)}};
  r = c.Post("/api/workers/nobody/drain", admin, "", "");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404);
  EXPECT_THAT(r->body, HasSubstr("no worker 'nobody'"));

  r = c.Get("/api/workers", viewer);
  ASSERT_TRUE(r && r->status == 200);
  j = json::parse(r->body);
  EXPECT_EQ(j["workers"][1]["state"], "draining");
  EXPECT_EQ(j["workers"][1]["draining"], true);
  EXPECT_EQ(j["workers"][0]["draining"], false);
  EXPECT_EQ(j["workers"][0]["state"], "ready");
  // The drained worker's next heartbeat is told to drain.
  auto hb = sched_->Heartbeat("pool/b", {}, false);
  ASSERT_TRUE(hb.ok()) << hb.status();
  EXPECT_TRUE(hb->drain);
}

}  // namespace
}  // namespace smoe::coordinator
