// Copyright 2026 SMoE Lab authors.
//
// The one Status -> HTTP mapping (coordinator/api/http_status.h): the table
// itself, and every read route answering with it when the store cannot
// answer (503 on the sweep page, a trial's metrics, logs and artifacts alike;
// before issue 34 the logs and artifact routes said 500).
#include "coordinator/api/http_status.h"

#include <httplib.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "coordinator/http/http_server.h"
#include "coordinator/scheduler.h"
#include "coordinator/trial_logs.h"
#include "gtest/gtest.h"
#include "store/in_memory_store.h"

namespace smoe::coordinator {
namespace {

constexpr char kToken[] = "smoe_0123456789abcdef0123456789abcdef";

TEST(HttpStatusTest, OneMapping) {
  EXPECT_EQ(api::HttpStatusOf(absl::OkStatus()), 200);
  EXPECT_EQ(api::HttpStatusOf(absl::InvalidArgumentError("x")), 400);
  EXPECT_EQ(api::HttpStatusOf(absl::OutOfRangeError("x")), 400);
  EXPECT_EQ(api::HttpStatusOf(absl::UnauthenticatedError("x")), 401);
  EXPECT_EQ(api::HttpStatusOf(absl::PermissionDeniedError("x")), 403);
  EXPECT_EQ(api::HttpStatusOf(absl::NotFoundError("x")), 404);
  EXPECT_EQ(api::HttpStatusOf(absl::FailedPreconditionError("x")), 409);
  EXPECT_EQ(api::HttpStatusOf(absl::AlreadyExistsError("x")), 409);
  EXPECT_EQ(api::HttpStatusOf(absl::AbortedError("x")), 409);
  EXPECT_EQ(api::HttpStatusOf(absl::DataLossError("x")), 409);
  EXPECT_EQ(api::HttpStatusOf(absl::UnavailableError("x")), 503);
  EXPECT_EQ(api::HttpStatusOf(absl::ResourceExhaustedError("x")), 503);
  EXPECT_EQ(api::HttpStatusOf(absl::InternalError("x")), 500);
  EXPECT_EQ(api::HttpStatusOf(absl::UnknownError("x")), 500);
}

// An in-memory store whose reads fail with Unavailable on demand.
class UnreadableStore : public store::ExperimentStore {
 public:
  absl::Status Commit(const store::WriteBatch& batch) override {
    return inner_.Commit(batch);
  }
  absl::StatusOr<store::SweepRecord> GetSweep(absl::string_view id) override {
    if (fail_reads_) return Down();
    return inner_.GetSweep(id);
  }
  absl::StatusOr<store::TrialRecord> GetTrial(absl::string_view id) override {
    if (fail_reads_) return Down();
    return inner_.GetTrial(id);
  }
  absl::StatusOr<std::vector<store::SweepRecord>> ListSweeps() override {
    if (fail_reads_) return Down();
    return inner_.ListSweeps();
  }
  absl::StatusOr<std::vector<store::TrialRecord>> ListTrials(
      absl::string_view id) override {
    if (fail_reads_) return Down();
    return inner_.ListTrials(id);
  }
  absl::StatusOr<std::vector<store::AttemptRecord>> ListAttempts(
      absl::string_view id) override {
    if (fail_reads_) return Down();
    return inner_.ListAttempts(id);
  }
  absl::StatusOr<std::vector<store::CheckpointRecord>> ListCheckpoints(
      absl::string_view id) override {
    if (fail_reads_) return Down();
    return inner_.ListCheckpoints(id);
  }
  absl::StatusOr<std::vector<store::TrialLogRecord>> ListTrialLogs(
      absl::string_view id) override {
    if (fail_reads_) return Down();
    return inner_.ListTrialLogs(id);
  }
  absl::StatusOr<std::vector<store::WorkerRecord>> ListWorkers() override {
    if (fail_reads_) return Down();
    return inner_.ListWorkers();
  }
  absl::StatusOr<std::vector<store::MetricRecord>> ListMetrics(
      absl::string_view id, std::optional<std::string> name) override {
    if (fail_reads_) return Down();
    return inner_.ListMetrics(id, std::move(name));
  }
  absl::StatusOr<std::vector<store::TrialSummary>> ListSummaries(
      absl::string_view id) override {
    if (fail_reads_) return Down();
    return inner_.ListSummaries(id);
  }
  absl::StatusOr<std::vector<store::TrialSummary>> ListSummariesOf(
      absl::string_view id, const std::vector<std::string>& ids) override {
    if (fail_reads_) return Down();
    return inner_.ListSummariesOf(id, ids);
  }
  absl::StatusOr<std::vector<store::DecisionRecord>> ListDecisions(
      absl::string_view id, int64_t after_seq, int64_t limit) override {
    if (fail_reads_) return Down();
    return inner_.ListDecisions(id, after_seq, limit);
  }
  bool fail_reads_ = false;

 private:
  static absl::Status Down() {
    return absl::UnavailableError("store cannot answer (test)");
  }
  store::InMemoryStore inner_;
};

TEST(HttpStatusTest, EveryReadRouteAnswers503WhenTheStoreCannotAnswer) {
  UnreadableStore store;
  auto sched = Scheduler::Create(&store, Clock::Real(), {});
  ASSERT_TRUE(sched.ok()) << sched.status();
  auto sub = (*sched)->SubmitSweep(
      "name: s\nkind: sraven\ngrid:\n  M: [1]\nfixed: {steps: 10}\n", false);
  ASSERT_TRUE(sub.ok()) << sub.status();
  auto trials = (*sched)->ListTrials("s");
  ASSERT_TRUE(trials.ok()) << trials.status();
  ASSERT_EQ(trials->size(), 1u);
  const std::vector<std::string> ids = {(*trials)[0].trial_id};
  TrialLogs logs(&store, Clock::Real());
  HttpServerOptions o;
  o.listen = "127.0.0.1:0";
  o.logs = &logs;
  auto http = HttpServer::Start(sched->get(), &store, kToken, o);
  ASSERT_TRUE(http.ok()) << http.status();
  httplib::Client c("127.0.0.1", (*http)->port());
  const httplib::Headers auth = {
      {"Authorization", std::string("Bearer ") + kToken}};
  ASSERT_EQ(c.Get("/api/trials/" + ids[0] + "/logs", auth)->status, 200);
  store.fail_reads_ = true;
  for (const std::string& path :
       {std::string("/api/sweeps/s"), "/api/trials/" + ids[0] + "/logs",
        "/api/trials/" + ids[0] + "/artifacts",
        "/api/trials/" + ids[0] + "/metrics"}) {
    auto r = c.Get(path, auth);
    ASSERT_TRUE(r) << path;
    EXPECT_EQ(r->status, 503) << path << ": " << r->body;
    EXPECT_NE(r->body.find("store cannot answer"), std::string::npos)
        << path << ": " << r->body;
  }
  (*http)->Shutdown();
}

}  // namespace
}  // namespace smoe::coordinator
