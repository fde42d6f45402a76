// Copyright 2026 SMoE Lab authors.
//
// Sampled axes (issue 33 items 1 and 4) in the scheduler: submit, resubmit,
// ExtendSweep "samples", and asha's cost estimate against the policy's rungs
// (the sweep file itself: sweeps/sampled_axes_test.cc).
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "analysis/search/asha.h"
#include "common/clock.h"
#include "coordinator/scheduler.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "store/in_memory_store.h"
#include "sweeps/sweep_spec.h"
#include "sweeps/test_sweeps.h"

namespace smoe::coordinator {
namespace {

using nlohmann::json;
using sweeps::ExpandedTrial;
using sweeps::ExpandGrid;
using sweeps::ParseSweepYaml;
using sweeps::SweepSpec;
using sweeps::test_sweeps::kSampled;
using sweeps::test_sweeps::Parse;
using ::testing::HasSubstr;

std::vector<std::string> Ids(const SweepSpec& spec) {
  std::vector<std::string> ids;
  for (const ExpandedTrial& t : ExpandGrid(spec)) ids.push_back(t.trial_id);
  return ids;
}

// The cost estimate's rungs are the ones the asha policy runs.
TEST(SampledAshaCostTest, RungsAreThePolicysRungs) {
  const SweepSpec spec =
      Parse(std::string(kSampled) +
            "search: {strategy: asha, metric: val_acc, min_steps: 125, "
            "reduction: 2}\n");
  auto cost = sweeps::EstimateAshaCost(spec);
  ASSERT_TRUE(cost.ok()) << cost.status();
  analysis::search::AshaConfig c;
  c.min_steps = 125;
  c.reduction = 2;
  c.max_steps = 1000;
  EXPECT_EQ(cost->rungs, analysis::search::AshaRungs(c));
}

// The scheduler path: a sampled sweep is submitted, resubmitted (nothing
// new), extended by `samples`, and refused a changed declaration.
class SampledSchedulerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = Scheduler::Create(&store_, &clock_, SchedulerOptions{});
    ASSERT_TRUE(s.ok()) << s.status();
    sched_ = std::move(*s);
  }
  std::set<std::string> TrialIds(const std::string& sweep) {
    std::set<std::string> ids;
    auto trials = store_.ListTrials(sweep);
    EXPECT_TRUE(trials.ok());
    for (const auto& t : *trials) ids.insert(t.trial_id);
    return ids;
  }
  FakeClock clock_;
  store::InMemoryStore store_;
  std::unique_ptr<Scheduler> sched_;
};

TEST_F(SampledSchedulerTest, ResubmitIsIdempotentAndExtendAddsDraws) {
  auto sub = sched_->SubmitSweep(kSampled, false);
  ASSERT_TRUE(sub.ok()) << sub.status();
  EXPECT_EQ(sub->new_trials, 64);
  const std::set<std::string> first = TrialIds("tuned");
  auto again = sched_->SubmitSweep(kSampled, false);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->new_trials, 0);
  EXPECT_EQ(again->existing_trials, 64);
  EXPECT_EQ(TrialIds("tuned"), first);
  auto ext = sched_->ExtendSweep("tuned", "samples", {3});
  ASSERT_TRUE(ext.ok()) << ext.status();
  EXPECT_EQ(*ext, 3 * 4 * 2);
  EXPECT_EQ(sched_->GetSweep("tuned")->spec.samples, 11);
  // The stored trials are exactly what the spec with 11 draws expands to.
  SweepSpec eleven = Parse(kSampled);
  eleven.samples = 11;
  const std::vector<std::string> want = Ids(eleven);
  EXPECT_EQ(TrialIds("tuned"), std::set<std::string>(want.begin(), want.end()));
  // Resubmitting the original file now adds nothing and keeps 11 draws.
  again = sched_->SubmitSweep(kSampled, false);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->new_trials, 0);
  EXPECT_EQ(sched_->GetSweep("tuned")->spec.samples, 11);
  // A file asking for more draws adds the difference.
  std::string sixteen = kSampled;
  sixteen.replace(sixteen.find("samples: 8"), 10, "samples: 16");
  again = sched_->SubmitSweep(sixteen, false);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->new_trials, 5 * 4 * 2);
  // Another seed or range is another sweep.
  std::string reseeded = kSampled;
  reseeded.replace(reseeded.find("sample_seed: 7"), 14, "sample_seed: 9");
  auto refused = sched_->SubmitSweep(reseeded, false);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(refused.status().message(),
              HasSubstr("different sample declaration or sample_seed"));
  EXPECT_EQ(sched_->ExtendSweep("tuned", "samples", {0}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace smoe::coordinator
