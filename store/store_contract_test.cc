// Copyright 2026 SMoE Lab authors.
//
// File: store/store_contract_test.cc
//
// The ExperimentStore contract, run against every implementation.

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "store/experiment_store.h"
#include "store/in_memory_store.h"
#include "store/sqlite_store.h"
#include "store/store_test_util.h"

namespace smoe::store {
namespace {

using ::smoe::store::testing::Dump;
using ::smoe::store::testing::DumpAll;
using ::smoe::store::testing::MakeAttempt;
using ::smoe::store::testing::MakeMetric;
using ::smoe::store::testing::MakeSweep;
using ::smoe::store::testing::MakeTrial;
using ::smoe::store::testing::ScopedTempDir;
using ::smoe::store::testing::T0;
using ::smoe::store::testing::TrialId;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

struct InMemoryFactory {
  static absl::StatusOr<std::unique_ptr<ExperimentStore>> Make(
      const ScopedTempDir&) {
    return std::make_unique<InMemoryStore>();
  }
};

struct SqliteFactory {
  static absl::StatusOr<std::unique_ptr<ExperimentStore>> Make(
      const ScopedTempDir& dir) {
    auto store = SqliteStore::Open(dir.File("store.db"));
    if (!store.ok()) return store.status();
    return std::unique_ptr<ExperimentStore>(std::move(*store));
  }
};

template <typename Factory>
class StoreContractTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto store = Factory::Make(dir_);
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = std::move(*store);
  }

  // Commits `batch`, failing the test on error.
  void MustCommit(const WriteBatch& batch) {
    absl::Status s = store_->Commit(batch);
    ASSERT_TRUE(s.ok()) << s;
  }

  // A sweep "s" with trials of ordinals 0..n-1 (committed).
  void SeedSweep(int n, const std::string& sweep = "s") {
    WriteBatch b;
    b.sweeps.push_back(MakeSweep(sweep));
    for (int i = 0; i < n; ++i) b.trials.push_back(MakeTrial(sweep, i));
    MustCommit(b);
  }

  std::vector<std::string> Trials(const std::string& sweep) {
    auto trials = store_->ListTrials(sweep);
    EXPECT_TRUE(trials.ok()) << trials.status();
    return trials.ok() ? DumpAll(*trials) : std::vector<std::string>{};
  }
  std::vector<std::string> Metrics(const std::string& trial,
                                   std::optional<std::string> name) {
    auto metrics = store_->ListMetrics(trial, name);
    EXPECT_TRUE(metrics.ok()) << metrics.status();
    return metrics.ok() ? DumpAll(*metrics) : std::vector<std::string>{};
  }

  std::string Snapshot() { return testing::Snapshot(*store_); }

  ScopedTempDir dir_;
  std::unique_ptr<ExperimentStore> store_;
};

using Implementations = ::testing::Types<InMemoryFactory, SqliteFactory>;

class ImplementationNames {
 public:
  template <typename T>
  static std::string GetName(int) {
    if (std::is_same_v<T, InMemoryFactory>) return "InMemory";
    return "Sqlite";
  }
};

TYPED_TEST_SUITE(StoreContractTest, Implementations, ImplementationNames);

TYPED_TEST(StoreContractTest, CreatesSweepAndTrialsInOneBatch) {
  WriteBatch b;
  const SweepRecord sweep = MakeSweep("s");
  b.sweeps.push_back(sweep);
  for (int i : {2, 0, 1}) b.trials.push_back(MakeTrial("s", i));
  this->MustCommit(b);

  auto got = this->store_->GetSweep("s");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(Dump(*got), Dump(sweep));
  auto trial = this->store_->GetTrial(TrialId("s", 2));
  ASSERT_TRUE(trial.ok()) << trial.status();
  EXPECT_EQ(Dump(*trial), Dump(MakeTrial("s", 2)));
  EXPECT_THAT(this->Trials("s"),
              ElementsAre(Dump(MakeTrial("s", 0)), Dump(MakeTrial("s", 1)),
                          Dump(MakeTrial("s", 2))));
}

TYPED_TEST(StoreContractTest, EmptyBatchIsOk) {
  EXPECT_TRUE(this->store_->Commit(WriteBatch{}).ok());
  EXPECT_THAT(*this->store_->ListSweeps(), IsEmpty());
}

TYPED_TEST(StoreContractTest, UpsertsOverwrite) {
  this->SeedSweep(2);
  SweepRecord sweep = MakeSweep("s");
  sweep.state = SweepState::kCancelled;
  sweep.spec_yaml = "extended";
  sweep.updated_at = T0() + absl::Hours(1);
  sweep.notes = "k=4 looks best\n\"quoted\" \xc3\xa9";
  sweep.tags = {"paper", "ablation:hyla"};
  sweep.archived = true;
  TrialRecord trial = MakeTrial("s", 1);
  trial.state = TrialState::kRunning;
  trial.attempt = 3;
  trial.error_count = 1;
  trial.preempt_count = 1;
  trial.worker_id = "w7";
  trial.lease_expires_at = T0() + absl::Seconds(30);
  trial.last_error = "exit 1: \"boom\"\nline 2 \xc3\xa9";
  WriteBatch b;
  b.sweeps.push_back(sweep);
  b.trials.push_back(trial);
  this->MustCommit(b);

  EXPECT_EQ(Dump(*this->store_->GetSweep("s")), Dump(sweep));
  EXPECT_EQ(Dump(*this->store_->GetTrial(trial.trial_id)), Dump(trial));
  EXPECT_EQ(this->store_->ListSweeps()->size(), 1u);
  EXPECT_THAT(this->Trials("s"),
              ElementsAre(Dump(MakeTrial("s", 0)), Dump(trial)));
}

TYPED_TEST(StoreContractTest, LastWriteOfAKeyInABatchWins) {
  this->SeedSweep(1);
  TrialRecord a = MakeTrial("s", 0);
  a.state = TrialState::kRunning;
  TrialRecord b = a;
  b.state = TrialState::kSucceeded;
  WriteBatch batch;
  batch.trials = {a, b};
  batch.metrics = {MakeMetric(a.trial_id, "loss", 1, 1.0),
                   MakeMetric(a.trial_id, "loss", 1, 2.0)};
  this->MustCommit(batch);
  EXPECT_EQ(this->store_->GetTrial(a.trial_id)->state, TrialState::kSucceeded);
  EXPECT_THAT(this->Metrics(a.trial_id, std::nullopt),
              ElementsAre(Dump(MakeMetric(a.trial_id, "loss", 1, 2.0))));
}

TYPED_TEST(StoreContractTest, AttemptsAreKeyedByTrialAndAttempt) {
  this->SeedSweep(2);
  const std::string t0 = TrialId("s", 0), t1 = TrialId("s", 1);
  WriteBatch b;
  b.attempts = {MakeAttempt(t0, 2), MakeAttempt(t0, 1), MakeAttempt(t1, 1)};
  this->MustCommit(b);

  AttemptRecord ended = MakeAttempt(t0, 1);
  ended.outcome = AttemptOutcome::kPreempted;
  ended.exit_code = 75;
  ended.message = "preempted by drain";
  ended.ended_at = T0() + absl::Minutes(5);
  WriteBatch b2;
  b2.attempts = {ended};
  this->MustCommit(b2);

  auto attempts = this->store_->ListAttempts(t0);
  ASSERT_TRUE(attempts.ok()) << attempts.status();
  EXPECT_THAT(DumpAll(*attempts),
              ElementsAre(Dump(ended), Dump(MakeAttempt(t0, 2))));
  EXPECT_THAT(DumpAll(*this->store_->ListAttempts(t1)),
              ElementsAre(Dump(MakeAttempt(t1, 1))));
  // A sweep's attempts in one read: every trial's, by (trial_id, attempt),
  // none of another sweep's.
  SweepRecord other = MakeSweep("other");
  TrialRecord o0 = MakeTrial("other", 0);
  WriteBatch b3;
  b3.sweeps = {other};
  b3.trials = {o0};
  b3.attempts = {MakeAttempt(o0.trial_id, 1)};
  this->MustCommit(b3);
  std::vector<std::string> want = {Dump(ended), Dump(MakeAttempt(t0, 2)),
                                   Dump(MakeAttempt(t1, 1))};
  if (t1 < t0) {
    want = {Dump(MakeAttempt(t1, 1)), Dump(ended), Dump(MakeAttempt(t0, 2))};
  }
  auto of_sweep = this->store_->ListSweepAttempts("s");
  ASSERT_TRUE(of_sweep.ok()) << of_sweep.status();
  EXPECT_EQ(DumpAll(*of_sweep), want);
  EXPECT_EQ(DumpAll(*this->store_->ListSweepAttempts("other")),
            std::vector<std::string>{Dump(MakeAttempt(o0.trial_id, 1))});
  EXPECT_THAT(*this->store_->ListSweepAttempts("nope"), IsEmpty());
  // By a trial id prefix: ListSweepAttempts' rows with it, in its order.
  for (const std::string& prefix :
       {std::string(), std::string("s"), t0.substr(0, t0.size() / 2), t0, t1,
        o0.trial_id, std::string("zz\xff")}) {
    for (const char* sweep : {"s", "other", "nope"}) {
      auto all = this->store_->ListSweepAttempts(sweep);
      ASSERT_TRUE(all.ok()) << all.status();
      std::vector<std::string> filtered;
      for (const AttemptRecord& a : *all) {
        if (a.trial_id.rfind(prefix, 0) == 0) filtered.push_back(Dump(a));
      }
      auto got = this->store_->ListSweepAttemptsWithPrefix(sweep, prefix);
      ASSERT_TRUE(got.ok()) << got.status();
      EXPECT_EQ(DumpAll(*got), filtered) << sweep << " " << prefix;
    }
  }
}

TYPED_TEST(StoreContractTest, MetricsAreUniquePerTrialStepNameAndOrdered) {
  this->SeedSweep(2);
  const std::string t0 = TrialId("s", 0), t1 = TrialId("s", 1);
  WriteBatch b;
  b.metrics = {MakeMetric(t0, "loss", 2, 0.5), MakeMetric(t0, "loss", 1, 0.9),
               MakeMetric(t0, "acc", 1, 0.1), MakeMetric(t1, "loss", 1, 7.0)};
  this->MustCommit(b);

  // The worker resends step 1 (e.g. after a reconnect), from attempt 2.
  MetricRecord resent = MakeMetric(t0, "loss", 1, 0.8);
  resent.attempt = 2;
  WriteBatch b2;
  b2.metrics = {resent};
  this->MustCommit(b2);

  EXPECT_THAT(this->Metrics(t0, std::nullopt),
              ElementsAre(Dump(MakeMetric(t0, "acc", 1, 0.1)), Dump(resent),
                          Dump(MakeMetric(t0, "loss", 2, 0.5))));
  EXPECT_THAT(this->Metrics(t0, "loss"),
              ElementsAre(Dump(resent), Dump(MakeMetric(t0, "loss", 2, 0.5))));
  EXPECT_THAT(this->Metrics(t0, "acc"),
              ElementsAre(Dump(MakeMetric(t0, "acc", 1, 0.1))));
  EXPECT_THAT(this->Metrics(t0, "missing"), IsEmpty());
  EXPECT_THAT(this->Metrics(t1, std::nullopt),
              ElementsAre(Dump(MakeMetric(t1, "loss", 1, 7.0))));
}

TYPED_TEST(StoreContractTest, MetricValuesRoundTripIncludingNanAndInf) {
  this->SeedSweep(1);
  const std::string t = TrialId("s", 0);
  const double inf = std::numeric_limits<double>::infinity();
  WriteBatch b;
  b.metrics = {MakeMetric(t, "a", -1, std::nan("")), MakeMetric(t, "b", 0, inf),
               MakeMetric(t, "c", 1, -inf), MakeMetric(t, "d", 2, 0.1 + 0.2),
               MakeMetric(t, "e", int64_t{1} << 40, -0.0)};
  this->MustCommit(b);
  auto metrics = this->store_->ListMetrics(t, std::nullopt);
  ASSERT_TRUE(metrics.ok());
  ASSERT_EQ(metrics->size(), 5u);
  EXPECT_TRUE(std::isnan((*metrics)[0].value));
  EXPECT_EQ((*metrics)[0].step, -1);
  EXPECT_EQ((*metrics)[1].value, inf);
  EXPECT_EQ((*metrics)[2].value, -inf);
  EXPECT_EQ((*metrics)[3].value, 0.1 + 0.2);
  EXPECT_EQ((*metrics)[4].step, int64_t{1} << 40);
}

TYPED_TEST(StoreContractTest, ResultsReplaceAndAppearInSummaries) {
  this->SeedSweep(3);
  const std::string t0 = TrialId("s", 0), t1 = TrialId("s", 1);
  WriteBatch b;
  b.results.push_back({t0, 10.0, {{"acc", 0.5}, {"loss", 1.25}}});
  this->MustCommit(b);
  WriteBatch b2;
  TrialRecord done = MakeTrial("s", 0);
  done.state = TrialState::kSucceeded;
  done.attempt = 2;
  done.worker_id = "w3";
  b2.trials.push_back(done);
  b2.results.push_back({t0, 12.5, {{"acc", 0.875}}});
  b2.results.push_back({t1, 3.0, {{"nan", std::nan("")}}});
  this->MustCommit(b2);

  auto summaries = this->store_->ListSummaries("s");
  ASSERT_TRUE(summaries.ok()) << summaries.status();
  ASSERT_EQ(summaries->size(), 3u);
  const TrialSummary& s0 = (*summaries)[0];
  EXPECT_EQ(s0.trial_id, t0);
  EXPECT_EQ(s0.sweep_id, "s");
  EXPECT_EQ(s0.params_json, done.params_json);
  EXPECT_EQ(s0.seed, done.seed);
  EXPECT_EQ(s0.state, TrialState::kSucceeded);
  EXPECT_EQ(s0.attempt, 2);
  EXPECT_EQ(s0.worker_id, "w3");
  EXPECT_EQ(s0.duration_s, 12.5);
  EXPECT_EQ(s0.results, (std::map<std::string, double>{{"acc", 0.875}}));
  const TrialSummary& s1 = (*summaries)[1];
  EXPECT_EQ(s1.duration_s, 3.0);
  ASSERT_EQ(s1.results.count("nan"), 1u);
  EXPECT_TRUE(std::isnan(s1.results.at("nan")));
  const TrialSummary& s2 = (*summaries)[2];
  EXPECT_EQ(s2.trial_id, TrialId("s", 2));
  EXPECT_EQ(s2.state, TrialState::kPending);
  EXPECT_EQ(s2.duration_s, 0);
  EXPECT_THAT(s2.results, IsEmpty());

  // A later trial upsert (e.g. a retry bookkeeping change) keeps the results.
  WriteBatch b3;
  b3.trials.push_back(done);
  this->MustCommit(b3);
  EXPECT_EQ(Dump((*this->store_->ListSummaries("s"))[0]), Dump(s0));
}

TYPED_TEST(StoreContractTest, SummariesAreFilteredBySweepAndOrderedByOrdinal) {
  WriteBatch b;
  b.sweeps = {MakeSweep("b"), MakeSweep("a")};
  b.trials = {MakeTrial("b", 1), MakeTrial("a", 5), MakeTrial("b", 0)};
  this->MustCommit(b);
  auto b_only = this->store_->ListSummaries("b");
  ASSERT_TRUE(b_only.ok());
  ASSERT_EQ(b_only->size(), 2u);
  EXPECT_EQ((*b_only)[0].trial_id, TrialId("b", 0));
  EXPECT_EQ((*b_only)[1].trial_id, TrialId("b", 1));
  EXPECT_THAT(*this->store_->ListSummaries("nope"), IsEmpty());
  // All sweeps: by (sweep_id, ordinal).
  auto all = this->store_->ListSummaries("");
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 3u);
  EXPECT_EQ((*all)[0].trial_id, TrialId("a", 5));
}

TYPED_TEST(StoreContractTest, SummariesOfSelectedTrials) {
  WriteBatch b;
  b.sweeps = {MakeSweep("a"), MakeSweep("b")};
  b.trials = {MakeTrial("a", 0), MakeTrial("a", 1), MakeTrial("a", 2),
              MakeTrial("b", 0)};
  this->MustCommit(b);
  // A finished trial (lease holder cleared) shows its last attempt's worker.
  TrialRecord done = MakeTrial("a", 2);
  done.state = TrialState::kSucceeded;
  done.attempt = 1;
  done.worker_id = "";
  AttemptRecord attempt;
  attempt.trial_id = done.trial_id;
  attempt.attempt = 1;
  attempt.worker_id = "w7";
  attempt.outcome = AttemptOutcome::kSucceeded;
  WriteBatch b2;
  b2.trials.push_back(done);
  b2.attempts.push_back(attempt);
  b2.results.push_back({done.trial_id, 4.0, {{"acc", 0.25}}});
  this->MustCommit(b2);

  // Unknown ids and other sweeps' ids are skipped; duplicates collapse; the
  // result is by ordinal whatever the order asked.
  auto some = this->store_->ListSummariesOf(
      "a", {TrialId("a", 2), "a/nope", TrialId("b", 0), TrialId("a", 0),
            TrialId("a", 2)});
  ASSERT_TRUE(some.ok()) << some.status();
  ASSERT_EQ(some->size(), 2u);
  EXPECT_EQ((*some)[0].trial_id, TrialId("a", 0));
  EXPECT_EQ((*some)[1].trial_id, TrialId("a", 2));
  EXPECT_EQ((*some)[1].worker_id, "w7");
  EXPECT_EQ((*some)[1].duration_s, 4.0);
  EXPECT_EQ((*some)[1].results, (std::map<std::string, double>{{"acc", 0.25}}));
  // The same rows as the full listing.
  auto all = this->store_->ListSummaries("a");
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(Dump((*some)[0]), Dump((*all)[0]));
  EXPECT_EQ(Dump((*some)[1]), Dump((*all)[2]));
  EXPECT_THAT(*this->store_->ListSummariesOf("a", {}), IsEmpty());
}

// The trials table shows why a trial failed: the trial's last error and the
// exit code of its latest ended attempt (a running retry does not hide it).
TYPED_TEST(StoreContractTest, SummariesCarryLastErrorAndExitCode) {
  this->SeedSweep(2);
  TrialRecord t = MakeTrial("s", 0);
  t.state = TrialState::kRunning;
  t.attempt = 2;
  t.worker_id = "w2";
  t.last_error = "exit 70: no CUDA-capable device\nsecond line";
  AttemptRecord failed;
  failed.trial_id = t.trial_id;
  failed.attempt = 1;
  failed.worker_id = "w1";
  failed.outcome = AttemptOutcome::kFailed;
  failed.exit_code = 70;
  AttemptRecord running = failed;
  running.attempt = 2;
  running.worker_id = "w2";
  running.outcome = AttemptOutcome::kRunning;
  running.exit_code = 0;
  WriteBatch b;
  b.trials.push_back(t);
  b.attempts = {failed, running};
  this->MustCommit(b);

  auto rows = this->store_->ListSummaries("s");
  ASSERT_TRUE(rows.ok()) << rows.status();
  ASSERT_EQ(rows->size(), 2u);
  EXPECT_EQ((*rows)[0].last_error, t.last_error);
  ASSERT_TRUE((*rows)[0].last_exit_code.has_value());
  EXPECT_EQ(*(*rows)[0].last_exit_code, 70);
  // Never leased: no error, no exit code.
  EXPECT_EQ((*rows)[1].last_error, "");
  EXPECT_FALSE((*rows)[1].last_exit_code.has_value());

  // The retry ends: its exit code is now the one shown.
  running.outcome = AttemptOutcome::kSucceeded;
  WriteBatch b2;
  b2.attempts.push_back(running);
  this->MustCommit(b2);
  auto after = this->store_->ListSummariesOf("s", {t.trial_id});
  ASSERT_TRUE(after.ok()) << after.status();
  ASSERT_EQ(after->size(), 1u);
  ASSERT_TRUE((*after)[0].last_exit_code.has_value());
  EXPECT_EQ(*(*after)[0].last_exit_code, 0);
}

// A sweep's summaries read whole (SqliteStore: the sweep's attempts and
// results as key ranges of "<sweep>/" ids) equal the row-by-row reads
// (ListSummariesOf), on random trials with several attempts (running,
// failed, succeeded; the trial row's worker kept or cleared) and results,
// beside sweeps whose ids fall in the same key range ("s/x/...") or just
// past it ("s0/..."), and a sweep whose ids lack the prefix (the per-row
// query). Fails if the range read takes another sweep's attempt or result,
// the wrong attempt's worker, or an exit code other than the latest ended
// attempt's.
TYPED_TEST(StoreContractTest, SweepSummariesEqualTheRowByRowReads) {
  std::mt19937 rng(7);
  WriteBatch b;
  const std::vector<std::string> sweeps = {"s", "s/x", "s0", "r"};
  for (const std::string& id : sweeps) b.sweeps.push_back(MakeSweep(id));
  std::map<std::string, std::vector<std::string>> ids;
  for (const std::string& sweep : sweeps) {
    for (int n = 0; n < 40; ++n) {
      TrialRecord t = MakeTrial(sweep, n);
      // Sweep "r": ids without the "r/" prefix.
      if (sweep == "r") t.trial_id = absl::StrCat("r-", n);
      const int attempts = static_cast<int>(rng() % 4);
      t.attempt = attempts;
      t.state = attempts == 0 ? TrialState::kPending : TrialState::kSucceeded;
      t.worker_id = rng() % 2 ? "" : absl::StrCat("lease-", n);
      for (int a = 1; a <= attempts; ++a) {
        AttemptRecord r;
        r.trial_id = t.trial_id;
        r.attempt = a;
        r.worker_id = absl::StrCat(sweep, "-w", n, "-", a);
        const int o = static_cast<int>(rng() % 3);
        r.outcome = o == 0   ? AttemptOutcome::kRunning
                    : o == 1 ? AttemptOutcome::kFailed
                             : AttemptOutcome::kSucceeded;
        r.exit_code = static_cast<int>(rng() % 100);
        b.attempts.push_back(r);
      }
      if (rng() % 2) {
        b.results.push_back(
            {t.trial_id, 1.0 * n, {{"acc", n / 40.0}, {sweep, 1.0 * n}}});
      }
      ids[sweep].push_back(t.trial_id);
      b.trials.push_back(t);
    }
  }
  this->MustCommit(b);
  for (const std::string& sweep : sweeps) {
    SCOPED_TRACE(sweep);
    auto whole = this->store_->ListSummaries(sweep);
    ASSERT_TRUE(whole.ok()) << whole.status();
    auto by_row = this->store_->ListSummariesOf(sweep, ids[sweep]);
    ASSERT_TRUE(by_row.ok()) << by_row.status();
    ASSERT_EQ(whole->size(), 40u);
    ASSERT_EQ(by_row->size(), 40u);
    for (size_t i = 0; i < whole->size(); ++i) {
      EXPECT_EQ(Dump((*whole)[i]), Dump((*by_row)[i]));
      EXPECT_EQ((*whole)[i].sweep_id, sweep);
      for (const auto& [name, value] : (*whole)[i].results) {
        EXPECT_TRUE(name == "acc" || name == sweep) << name;
      }
    }
  }
}

TYPED_TEST(StoreContractTest, MissingIdsAreNotFoundAndEmptyLists) {
  this->SeedSweep(1);
  auto sweep = this->store_->GetSweep("nope");
  EXPECT_EQ(sweep.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(sweep.status().message(), HasSubstr("nope"));
  auto trial = this->store_->GetTrial("s/ffffffffffffffff");
  EXPECT_EQ(trial.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(trial.status().message(), HasSubstr("s/ffffffffffffffff"));
  EXPECT_THAT(*this->store_->ListTrials("nope"), IsEmpty());
  EXPECT_THAT(*this->store_->ListAttempts("nope"), IsEmpty());
  EXPECT_THAT(*this->store_->ListMetrics("nope", std::nullopt), IsEmpty());
}

TYPED_TEST(StoreContractTest, TrialOfUnknownSweepFailsAndWritesNothing) {
  this->SeedSweep(2);
  WriteBatch seed;
  seed.metrics = {MakeMetric(TrialId("s", 0), "loss", 1, 1.0)};
  seed.workers.push_back(WorkerRecord{});
  seed.workers.back().worker_id = "w1";
  this->MustCommit(seed);
  const std::string before = this->Snapshot();

  WriteBatch b;
  b.sweeps.push_back(MakeSweep("new"));
  b.trials.push_back(MakeTrial("new", 0));
  TrialRecord changed = MakeTrial("s", 0);
  changed.state = TrialState::kCancelled;
  b.trials.push_back(changed);
  b.trials.push_back(MakeTrial("ghost", 0));
  b.attempts.push_back(MakeAttempt(TrialId("s", 1), 1));
  b.metrics.push_back(MakeMetric(TrialId("s", 0), "loss", 1, 99.0));
  b.workers.push_back(WorkerRecord{});
  b.workers.back().worker_id = "w2";
  b.results.push_back({TrialId("s", 0), 1.0, {{"acc", 1.0}}});
  absl::Status s = this->store_->Commit(b);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_THAT(s.message(), HasSubstr("'ghost'"));
  EXPECT_THAT(s.message(), HasSubstr(TrialId("ghost", 0)));
  EXPECT_EQ(this->Snapshot(), before);
  EXPECT_EQ(this->store_->GetSweep("new").status().code(),
            absl::StatusCode::kNotFound);
}

TYPED_TEST(StoreContractTest, MetricOfUnknownTrialFailsAndWritesNothing) {
  this->SeedSweep(1);
  const std::string before = this->Snapshot();
  WriteBatch b;
  TrialRecord leased = MakeTrial("s", 0);
  leased.state = TrialState::kRunning;
  leased.attempt = 1;
  b.trials.push_back(leased);
  b.attempts.push_back(MakeAttempt(leased.trial_id, 1));
  b.metrics.push_back(MakeMetric(leased.trial_id, "loss", 1, 1.0));
  b.metrics.push_back(MakeMetric("s/00000000deadbeef", "loss", 1, 1.0));
  absl::Status s = this->store_->Commit(b);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_THAT(s.message(), HasSubstr("'s/00000000deadbeef'"));
  EXPECT_EQ(this->Snapshot(), before);
}

TYPED_TEST(StoreContractTest, DecisionsAppendInOrderWithNanAndPrunedState) {
  this->SeedSweep(2);
  this->SeedSweep(1, "other");
  WriteBatch b;
  TrialRecord pruned = MakeTrial("s", 0);
  pruned.state = TrialState::kPruned;
  b.trials.push_back(pruned);
  AttemptRecord a = MakeAttempt(pruned.trial_id, 1);
  a.outcome = AttemptOutcome::kPruned;
  b.attempts.push_back(a);
  DecisionRecord d;
  d.sweep_id = "s";
  d.trial_id = pruned.trial_id;
  d.action = "prune";
  d.group = "M=1";
  d.rung = 0;
  d.step = 10;
  d.value = 0.25;
  d.cutoff = std::numeric_limits<double>::quiet_NaN();
  d.final = true;
  d.reason = "rung 0: below the cutoff";
  d.at = T0();
  b.decisions.push_back(d);
  DecisionRecord other = d;
  other.sweep_id = "other";
  b.decisions.push_back(other);
  DecisionRecord promote = d;
  promote.action = "promote";
  promote.final = false;
  promote.cutoff = 0.5;
  b.decisions.push_back(promote);
  this->MustCommit(b);
  // Appended, never upserted: the same decision again is a new row.
  WriteBatch again;
  again.decisions.push_back(d);
  this->MustCommit(again);

  EXPECT_EQ(this->store_->GetTrial(pruned.trial_id)->state,
            TrialState::kPruned);
  EXPECT_EQ(this->store_->ListAttempts(pruned.trial_id)->at(0).outcome,
            AttemptOutcome::kPruned);
  auto all = this->store_->ListDecisions("s", 0, 0);
  ASSERT_TRUE(all.ok()) << all.status();
  ASSERT_EQ(all->size(), 3u);
  EXPECT_EQ((*all)[0].action, "prune");
  EXPECT_EQ((*all)[1].action, "promote");
  EXPECT_EQ((*all)[2].action, "prune");
  EXPECT_LT((*all)[0].seq, (*all)[1].seq);
  EXPECT_LT((*all)[1].seq, (*all)[2].seq);
  EXPECT_EQ((*all)[0].group, "M=1");
  EXPECT_EQ((*all)[0].rung, 0);
  EXPECT_EQ((*all)[0].step, 10);
  EXPECT_EQ((*all)[0].value, 0.25);
  EXPECT_TRUE(std::isnan((*all)[0].cutoff));
  EXPECT_TRUE((*all)[0].final);
  EXPECT_EQ((*all)[0].reason, "rung 0: below the cutoff");
  EXPECT_EQ((*all)[0].at, T0());
  EXPECT_EQ((*all)[1].cutoff, 0.5);
  auto after = this->store_->ListDecisions("s", (*all)[0].seq, 1);
  ASSERT_TRUE(after.ok());
  ASSERT_EQ(after->size(), 1u);
  EXPECT_EQ((*after)[0].seq, (*all)[1].seq);
  EXPECT_EQ(this->store_->ListDecisions("other", 0, 0)->size(), 1u);
  EXPECT_THAT(*this->store_->ListDecisions("nope", 0, 0), IsEmpty());
}

// CountDecisions and ListLastDecisions are the log's size and tail
// (ListDecisions(sweep, 0, 0)) for every limit, ListDecisionsBefore its
// pages before each decision, while decisions of two sweeps
// interleave, batch after batch (SqliteStore's kept count topped up), after
// the sweep is deleted, and after a sweep of the same name logs again.
TYPED_TEST(StoreContractTest, DecisionCountAndTailAreTheLogs) {
  this->SeedSweep(3);
  this->SeedSweep(1, "other");
  auto check = [&](const std::string& sweep) {
    auto log = this->store_->ListDecisions(sweep, 0, 0);
    ASSERT_TRUE(log.ok()) << log.status();
    auto count = this->store_->CountDecisions(sweep);
    ASSERT_TRUE(count.ok()) << count.status();
    EXPECT_EQ(*count, static_cast<int64_t>(log->size())) << sweep;
    // Asked twice: the kept count is the same.
    EXPECT_EQ(*this->store_->CountDecisions(sweep), *count) << sweep;
    for (int64_t limit = -1; limit <= static_cast<int64_t>(log->size()) + 2;
         ++limit) {
      // Pages read backwards: the page before each decision.
      for (size_t end = 0; end <= log->size(); ++end) {
        const int64_t before = end < log->size() ? (*log)[end].seq
                               : (*log).empty()  ? 1
                                                 : log->back().seq + 1;
        auto page = this->store_->ListDecisionsBefore(sweep, before, limit);
        ASSERT_TRUE(page.ok()) << page.status();
        const size_t n = static_cast<size_t>(
            std::clamp<int64_t>(limit, 0, static_cast<int64_t>(end)));
        ASSERT_EQ(page->size(), n) << sweep << " before " << before;
        for (size_t i = 0; i < n; ++i) {
          EXPECT_EQ((*page)[i].seq, (*log)[end - n + i].seq);
          EXPECT_EQ((*page)[i].trial_id, (*log)[end - n + i].trial_id);
        }
      }
      auto tail = this->store_->ListLastDecisions(sweep, limit);
      ASSERT_TRUE(tail.ok()) << tail.status();
      const size_t want =
          static_cast<size_t>(std::clamp<int64_t>(limit, 0, log->size()));
      ASSERT_EQ(tail->size(), want) << sweep << " limit " << limit;
      for (size_t i = 0; i < want; ++i) {
        const DecisionRecord& a = (*tail)[i];
        const DecisionRecord& b = (*log)[log->size() - want + i];
        EXPECT_EQ(a.seq, b.seq);
        EXPECT_EQ(a.sweep_id, b.sweep_id);
        EXPECT_EQ(a.trial_id, b.trial_id);
        EXPECT_EQ(a.action, b.action);
        EXPECT_EQ(a.group, b.group);
        EXPECT_EQ(a.rung, b.rung);
        EXPECT_EQ(a.step, b.step);
        EXPECT_EQ(a.value, b.value);
        EXPECT_EQ(a.final, b.final);
        EXPECT_EQ(a.reason, b.reason);
        EXPECT_EQ(a.at, b.at);
      }
    }
  };
  check("s");
  check("nope");
  int step = 0;
  auto log_some = [&](int in_s, int in_other) {
    WriteBatch b;
    // Interleaved: s, other, s, other, ... then the rest.
    for (int i = 0; in_s > 0 || in_other > 0; ++i) {
      DecisionRecord d;
      const bool ours = in_other == 0 || (in_s > 0 && i % 2 == 0);
      --(ours ? in_s : in_other);
      d.sweep_id = ours ? "s" : "other";
      d.trial_id = ours ? TrialId("s", step % 3) : TrialId("other", 0);
      d.action = step % 2 ? "promote" : "prune";
      d.rung = step % 3;
      d.step = ++step;
      d.value = 0.5;
      d.reason = absl::StrCat("decision ", step);
      d.at = T0() + absl::Seconds(step);
      b.decisions.push_back(d);
    }
    this->MustCommit(b);
  };
  log_some(1, 0);
  check("s");
  log_some(3, 2);
  check("s");
  check("other");
  log_some(0, 4);
  check("s");
  log_some(5, 1);
  check("s");
  check("other");
  EXPECT_EQ(*this->store_->CountDecisions("s"), 9);
  WriteBatch del;
  del.deleted_sweeps = {"s"};
  this->MustCommit(del);
  check("s");
  EXPECT_EQ(*this->store_->CountDecisions("s"), 0);
  check("other");
  // A new sweep of the same name: its own log only.
  this->SeedSweep(3);
  log_some(2, 1);
  check("s");
  EXPECT_EQ(*this->store_->CountDecisions("s"), 2);
  check("other");
}

TYPED_TEST(StoreContractTest, DecisionOfUnknownSweepFailsAndWritesNothing) {
  this->SeedSweep(1);
  const std::string before = this->Snapshot();
  WriteBatch b;
  TrialRecord t = MakeTrial("s", 0);
  t.state = TrialState::kPruned;
  b.trials.push_back(t);
  DecisionRecord d;
  d.sweep_id = "ghost";
  d.action = "prune";
  b.decisions.push_back(d);
  absl::Status s = this->store_->Commit(b);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_THAT(s.message(), HasSubstr("'ghost'"));
  EXPECT_EQ(this->Snapshot(), before);
  EXPECT_THAT(*this->store_->ListDecisions("ghost", 0, 0), IsEmpty());
}

TYPED_TEST(StoreContractTest, AttemptOrResultOfUnknownTrialFails) {
  this->SeedSweep(1);
  const std::string before = this->Snapshot();
  WriteBatch attempt;
  attempt.attempts.push_back(MakeAttempt("s/unknown", 1));
  absl::Status s = this->store_->Commit(attempt);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_THAT(s.message(), HasSubstr("'s/unknown'"));

  WriteBatch result;
  result.metrics.push_back(MakeMetric(TrialId("s", 0), "loss", 1, 1.0));
  result.results.push_back({"s/unknown2", 1.0, {{"acc", 1.0}}});
  s = this->store_->Commit(result);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_THAT(s.message(), HasSubstr("'s/unknown2'"));
  EXPECT_EQ(this->Snapshot(), before);
}

TYPED_TEST(StoreContractTest, ParentsEarlierInTheSameBatchCount) {
  WriteBatch b;
  b.sweeps.push_back(MakeSweep("s"));
  b.trials.push_back(MakeTrial("s", 0));
  b.attempts.push_back(MakeAttempt(TrialId("s", 0), 1));
  b.metrics.push_back(MakeMetric(TrialId("s", 0), "loss", 0, 2.0));
  b.results.push_back({TrialId("s", 0), 4.0, {{"acc", 0.25}}});
  this->MustCommit(b);
  EXPECT_EQ(this->store_->ListAttempts(TrialId("s", 0))->size(), 1u);
  EXPECT_EQ(this->store_->ListSummaries("s")->at(0).results.at("acc"), 0.25);
}

TYPED_TEST(StoreContractTest, EmptyIdsAreInvalidArgument) {
  WriteBatch b;
  b.sweeps.push_back(MakeSweep(""));
  EXPECT_EQ(this->store_->Commit(b).code(), absl::StatusCode::kInvalidArgument);
  WriteBatch w;
  w.workers.push_back(WorkerRecord{});
  EXPECT_EQ(this->store_->Commit(w).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(*this->store_->ListSweeps(), IsEmpty());
  EXPECT_THAT(*this->store_->ListWorkers(), IsEmpty());
}

TYPED_TEST(StoreContractTest, WorkersRoundTrip) {
  WorkerRecord w;
  w.worker_id = "gpu-node-7";
  w.hostname = "node7.example";
  w.cpus = 64;
  w.gpus = 8;
  w.slots = 16;
  w.labels = {{"zone", "us-east1-b"}, {"gpu", "h100"}, {"q\"uote", "ü\\n"}};
  w.kinds = {"sraven", "skillmix"};
  w.draining = false;
  w.registered_at = T0();
  w.last_heartbeat_at = T0() + absl::Microseconds(5000001);
  WorkerRecord bare;
  bare.worker_id = "cpu-1";
  WriteBatch b;
  b.workers = {w, bare};
  this->MustCommit(b);
  auto workers = this->store_->ListWorkers();
  ASSERT_TRUE(workers.ok()) << workers.status();
  EXPECT_THAT(DumpAll(*workers), ElementsAre(Dump(bare), Dump(w)));

  w.draining = true;
  w.labels.erase("gpu");
  w.kinds = {"sraven"};
  w.last_heartbeat_at += absl::Seconds(5);
  WriteBatch b2;
  b2.workers = {w};
  this->MustCommit(b2);
  EXPECT_THAT(DumpAll(*this->store_->ListWorkers()),
              ElementsAre(Dump(bare), Dump(w)));
}

TYPED_TEST(StoreContractTest, CheckpointsRoundTripAndDelete) {
  WriteBatch b;
  b.sweeps.push_back(MakeSweep("s"));
  b.trials.push_back(MakeTrial("s", 0));
  b.trials.push_back(MakeTrial("s", 1));
  this->MustCommit(b);
  const std::string t0 = b.trials[0].trial_id, t1 = b.trials[1].trial_id;
  CheckpointRecord c;
  c.trial_id = t0;
  c.step = 10;
  c.file_name = "checkpoint.smoeckpt";
  c.bytes = 1234;
  c.sha256 = std::string(64, 'a');
  c.attempt = 2;
  c.worker_id = "w1";
  c.created_at = T0();
  CheckpointRecord c2 = c;
  c2.step = 20;
  CheckpointRecord c3 = c;
  c3.trial_id = t1;
  WriteBatch w;
  w.checkpoints = {c2, c, c3};
  this->MustCommit(w);
  auto all = this->store_->ListCheckpoints("");
  ASSERT_TRUE(all.ok()) << all.status();
  ASSERT_EQ(all->size(), 3u);
  auto mine = this->store_->ListCheckpoints(t0);
  ASSERT_TRUE(mine.ok());
  ASSERT_EQ(mine->size(), 2u);
  EXPECT_EQ((*mine)[0].step, 10);
  EXPECT_EQ((*mine)[1].step, 20);
  EXPECT_EQ((*mine)[0].sha256, c.sha256);
  EXPECT_EQ((*mine)[0].bytes, 1234);
  EXPECT_EQ((*mine)[0].worker_id, "w1");
  EXPECT_EQ((*mine)[0].attempt, 2);
  EXPECT_EQ((*mine)[0].created_at, T0());
  WriteBatch d;
  d.deleted_checkpoints = {{t0, 10}};
  this->MustCommit(d);
  mine = this->store_->ListCheckpoints(t0);
  ASSERT_EQ(mine->size(), 1u);
  EXPECT_EQ((*mine)[0].step, 20);
  // A checkpoint of an unknown trial is refused, like the other children.
  CheckpointRecord orphan = c;
  orphan.trial_id = "s/ffffffffffffffff";
  WriteBatch o;
  o.checkpoints = {orphan};
  EXPECT_TRUE(absl::IsFailedPrecondition(this->store_->Commit(o)));
}

TYPED_TEST(StoreContractTest, TrialLogsUpsertPerAttempt) {
  WriteBatch b;
  b.sweeps.push_back(MakeSweep("s"));
  b.trials.push_back(MakeTrial("s", 0));
  b.trials.push_back(MakeTrial("s", 1));
  this->MustCommit(b);
  const std::string t0 = b.trials[0].trial_id, t1 = b.trials[1].trial_id;
  TrialLogRecord l;
  l.trial_id = t0;
  l.attempt = 2;
  l.text = "line one\nline \xc3\xa9\n";
  l.total_bytes = 5000;
  l.updated_at = T0();
  TrialLogRecord l1 = l;
  l1.attempt = 1;
  l1.text = "first attempt\n";
  TrialLogRecord other = l;
  other.trial_id = t1;
  WriteBatch w;
  w.trial_logs = {l, l1, other};
  this->MustCommit(w);
  auto mine = this->store_->ListTrialLogs(t0);
  ASSERT_TRUE(mine.ok()) << mine.status();
  ASSERT_EQ(mine->size(), 2u);
  EXPECT_EQ((*mine)[0].attempt, 1);
  EXPECT_EQ((*mine)[0].text, "first attempt\n");
  EXPECT_EQ((*mine)[1].attempt, 2);
  EXPECT_EQ((*mine)[1].text, l.text);
  EXPECT_EQ((*mine)[1].total_bytes, 5000);
  EXPECT_EQ((*mine)[1].updated_at, T0());
  // The same (trial, attempt) again replaces the row.
  TrialLogRecord newer = l;
  newer.text = "replaced\n";
  newer.total_bytes = 6000;
  WriteBatch u;
  u.trial_logs = {newer};
  this->MustCommit(u);
  mine = this->store_->ListTrialLogs(t0);
  ASSERT_EQ(mine->size(), 2u);
  EXPECT_EQ((*mine)[1].text, "replaced\n");
  EXPECT_EQ((*mine)[1].total_bytes, 6000);
  EXPECT_TRUE(this->store_->ListTrialLogs("s/ffffffffffffffff")->empty());
  // A log of an unknown trial is refused, like the other children.
  TrialLogRecord orphan = l;
  orphan.trial_id = "s/ffffffffffffffff";
  WriteBatch o;
  o.trial_logs = {orphan};
  EXPECT_TRUE(absl::IsFailedPrecondition(this->store_->Commit(o)));
}

// A sweep with a row in every table keyed by it: trials, attempts,
// metrics, results, decisions, checkpoint rows and logs.
WriteBatch FullSweep(const std::string& sweep) {
  WriteBatch b;
  b.sweeps.push_back(MakeSweep(sweep));
  for (int i = 0; i < 2; ++i) {
    TrialRecord t = MakeTrial(sweep, i);
    t.state = TrialState::kSucceeded;
    b.trials.push_back(t);
    b.attempts.push_back(MakeAttempt(t.trial_id, 1));
    b.metrics.push_back(MakeMetric(t.trial_id, "train/loss", 10, 0.5));
    b.results.push_back({t.trial_id, 3.5, {{"ood_acc", 0.75}}});
    CheckpointRecord c;
    c.trial_id = t.trial_id;
    c.step = 10;
    c.file_name = "checkpoint.smoeckpt";
    c.bytes = 10;
    c.sha256 = std::string(64, 'a');
    c.attempt = 1;
    c.created_at = T0();
    b.checkpoints.push_back(c);
    TrialLogRecord l;
    l.trial_id = t.trial_id;
    l.attempt = 1;
    l.text = "log\n";
    l.total_bytes = 4;
    l.updated_at = T0();
    b.trial_logs.push_back(l);
  }
  DecisionRecord d;
  d.sweep_id = sweep;
  d.trial_id = b.trials[0].trial_id;
  d.action = "prune";
  d.reason = "test";
  d.at = T0();
  b.decisions.push_back(d);
  return b;
}

TYPED_TEST(StoreContractTest, DeletingASweepRemovesEveryRowKeyedByIt) {
  this->MustCommit(FullSweep("gone"));
  this->MustCommit(FullSweep("kept"));
  // What the other sweep looks like through the interface, before.
  auto kept_view = [this] {
    std::string out;
    auto& st = *this->store_;
    out += Dump(testing::Value(st.GetSweep("kept"))) + "\n";
    for (const auto& t : testing::Value(st.ListTrials("kept"))) {
      out += Dump(t) + "\n";
      for (const auto& a : testing::Value(st.ListAttempts(t.trial_id)))
        out += Dump(a) + "\n";
      for (const auto& m :
           testing::Value(st.ListMetrics(t.trial_id, std::nullopt)))
        out += Dump(m) + "\n";
      out += absl::StrCat(
          testing::Value(st.ListCheckpoints(t.trial_id)).size(), " ckpt ",
          testing::Value(st.ListTrialLogs(t.trial_id)).size(), " logs\n");
    }
    for (const auto& s : testing::Value(st.ListSummaries("kept")))
      out += Dump(s) + "\n";
    out += absl::StrCat(testing::Value(st.ListDecisions("kept", 0, 0)).size(),
                        " decisions\n");
    return out;
  };
  const std::string before = kept_view();
  const std::vector<std::string> gone_trials = {TrialId("gone", 0),
                                                TrialId("gone", 1)};
  WriteBatch del;
  del.deleted_sweeps = {"gone"};
  this->MustCommit(del);

  EXPECT_TRUE(absl::IsNotFound(this->store_->GetSweep("gone").status()));
  EXPECT_THAT(this->Trials("gone"), IsEmpty());
  EXPECT_TRUE(testing::Value(this->store_->ListSummaries("gone")).empty());
  EXPECT_TRUE(
      testing::Value(this->store_->ListDecisions("gone", 0, 0)).empty());
  for (const std::string& id : gone_trials) {
    EXPECT_TRUE(absl::IsNotFound(this->store_->GetTrial(id).status())) << id;
    EXPECT_TRUE(testing::Value(this->store_->ListAttempts(id)).empty()) << id;
    EXPECT_THAT(this->Metrics(id, std::nullopt), IsEmpty()) << id;
    EXPECT_TRUE(testing::Value(this->store_->ListCheckpoints(id)).empty())
        << id;
    EXPECT_TRUE(testing::Value(this->store_->ListTrialLogs(id)).empty()) << id;
  }
  for (const auto& c : testing::Value(this->store_->ListCheckpoints(""))) {
    EXPECT_EQ(c.trial_id.rfind("kept/", 0), 0u) << c.trial_id;
  }
  std::vector<std::string> sweeps;
  for (const auto& s : testing::Value(this->store_->ListSweeps()))
    sweeps.push_back(s.sweep_id);
  EXPECT_THAT(sweeps, ElementsAre("kept"));
  EXPECT_EQ(kept_view(), before);

  // The name can be used again: a new sweep starts empty.
  WriteBatch again;
  again.sweeps.push_back(MakeSweep("gone"));
  again.trials.push_back(MakeTrial("gone", 0));
  this->MustCommit(again);
  EXPECT_EQ(this->Trials("gone").size(), 1u);
  EXPECT_THAT(this->Metrics(TrialId("gone", 0), std::nullopt), IsEmpty());
  EXPECT_TRUE(
      testing::Value(this->store_->ListSummaries("gone"))[0].results.empty());
}

TYPED_TEST(StoreContractTest,
           DeletingAnUnknownSweepIsNotFoundAndWritesNothing) {
  this->SeedSweep(1);
  const std::string before = this->Snapshot();
  WriteBatch b;
  b.sweeps.push_back(MakeSweep("new"));  // would be written first
  b.deleted_sweeps = {"s", "nope"};
  absl::Status st = this->store_->Commit(b);
  EXPECT_TRUE(absl::IsNotFound(st)) << st;
  EXPECT_THAT(st.message(), HasSubstr("'nope'"));
  EXPECT_EQ(this->Snapshot(), before);
}

TYPED_TEST(StoreContractTest, WritesEarlierInTheBatchOfADeletedSweepGoToo) {
  this->SeedSweep(1);
  WriteBatch b = FullSweep("x");  // created and deleted in one batch
  b.metrics.push_back(MakeMetric(TrialId("s", 0), "train/loss", 1, 1.0));
  b.deleted_sweeps = {"x"};
  this->MustCommit(b);
  EXPECT_TRUE(absl::IsNotFound(this->store_->GetSweep("x").status()));
  EXPECT_TRUE(testing::Value(this->store_->ListCheckpoints("")).empty());
  EXPECT_EQ(this->Metrics(TrialId("s", 0), std::nullopt).size(), 1u);
}

TYPED_TEST(StoreContractTest, TimesRoundTripAtMicrosecondPrecision) {
  SweepRecord sweep = MakeSweep("s");
  sweep.created_at = absl::FromUnixMicros(-1);  // before the epoch
  sweep.updated_at = absl::FromUnixMicros(4102444800000001);  // year 2100
  TrialRecord trial = MakeTrial("s", 0);
  trial.lease_expires_at = absl::InfiniteFuture();
  trial.created_at = T0() + absl::Nanoseconds(999);  // truncated
  trial.updated_at = T0() + absl::Microseconds(1);
  AttemptRecord attempt = MakeAttempt(trial.trial_id, 1);
  attempt.ended_at = absl::InfinitePast();
  WriteBatch b;
  b.sweeps = {sweep};
  b.trials = {trial};
  b.attempts = {attempt};
  this->MustCommit(b);

  auto got_sweep = this->store_->GetSweep("s");
  ASSERT_TRUE(got_sweep.ok());
  EXPECT_EQ(got_sweep->created_at, sweep.created_at);
  EXPECT_EQ(got_sweep->updated_at, sweep.updated_at);
  auto got_trial = this->store_->GetTrial(trial.trial_id);
  ASSERT_TRUE(got_trial.ok());
  EXPECT_EQ(got_trial->lease_expires_at, absl::InfiniteFuture());
  EXPECT_EQ(got_trial->created_at, T0());
  EXPECT_EQ(got_trial->updated_at, T0() + absl::Microseconds(1));
  auto attempts = this->store_->ListAttempts(trial.trial_id);
  ASSERT_TRUE(attempts.ok());
  ASSERT_EQ(attempts->size(), 1u);
  EXPECT_EQ((*attempts)[0].started_at, attempt.started_at);
  EXPECT_EQ((*attempts)[0].ended_at, absl::InfinitePast());
}

TYPED_TEST(StoreContractTest, ListTrialsIsByOrdinal) {
  WriteBatch b;
  b.sweeps = {MakeSweep("z"), MakeSweep("a")};
  for (int i = 9; i >= 0; --i) {
    b.trials.push_back(MakeTrial(i % 2 ? "z" : "a", i));
  }
  this->MustCommit(b);
  // Inserted later, ordered first.
  WriteBatch b2;
  TrialRecord early = MakeTrial("z", 100);
  early.ordinal = -1;
  b2.trials = {early};
  this->MustCommit(b2);

  auto z = this->store_->ListTrials("z");
  ASSERT_TRUE(z.ok());
  std::vector<int64_t> ordinals;
  for (const auto& t : *z) ordinals.push_back(t.ordinal);
  EXPECT_THAT(ordinals, ElementsAre(-1, 1, 3, 5, 7, 9));

  // All sweeps: by (sweep_id, ordinal).
  auto all = this->store_->ListTrials("");
  ASSERT_TRUE(all.ok());
  std::vector<std::string> order;
  for (const auto& t : *all) {
    order.push_back(absl::StrCat(t.sweep_id, ":", t.ordinal));
  }
  EXPECT_THAT(order, ElementsAre("a:0", "a:2", "a:4", "a:6", "a:8", "z:-1",
                                 "z:1", "z:3", "z:5", "z:7", "z:9"));
}

TYPED_TEST(StoreContractTest, ListSweepsIsOldestFirst) {
  WriteBatch b;
  b.sweeps = {MakeSweep("late", T0() + absl::Hours(1)), MakeSweep("b", T0()),
              MakeSweep("a", T0())};
  this->MustCommit(b);
  auto sweeps = this->store_->ListSweeps();
  ASSERT_TRUE(sweeps.ok());
  std::vector<std::string> ids;
  for (const auto& s : *sweeps) ids.push_back(s.sweep_id);
  // Equal creation times keep insertion order.
  EXPECT_THAT(ids, ElementsAre("b", "a", "late"));
}

TYPED_TEST(StoreContractTest, StringsRoundTripByteForByte) {
  SweepRecord sweep = MakeSweep("s");
  static constexpr char kSpec[] = "a\0b\n'quoted' \"dq\" \xf0\x9f\x98\x80";
  sweep.spec_yaml = std::string(kSpec, sizeof(kSpec) - 1);
  TrialRecord trial = MakeTrial("s", 0);
  trial.params_json = R"({"attention":"hyla","k":4,"lr":0.001})";
  trial.last_error = "";
  WriteBatch b;
  b.sweeps = {sweep};
  b.trials = {trial};
  this->MustCommit(b);
  EXPECT_EQ(this->store_->GetSweep("s")->spec_yaml, sweep.spec_yaml);
  EXPECT_EQ(this->store_->GetTrial(trial.trial_id)->params_json,
            trial.params_json);
}

}  // namespace
}  // namespace smoe::store
