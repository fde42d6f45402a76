// Copyright 2026 SMoE Lab authors.
//
// The progress lines of `smoe sweep watch` / `smoe up` (cli/sweep_cmds.h)
// and `smoe train` (cli/train_cmd.h).
#include <string>

#include "absl/time/time.h"
#include "cli/sweep_cmds.h"
#include "cli/train_cmd.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace smoe::cli {
namespace {

using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::testing::Not;

smoe::v1::StateCounts Counts(int pending, int running, int succeeded,
                             int failed) {
  smoe::v1::StateCounts c;
  c.set_pending(pending);
  c.set_running(running);
  c.set_succeeded(succeeded);
  c.set_failed(failed);
  c.set_total(pending + running + succeeded + failed);
  return c;
}

TEST(ProgressLineTest, NeverZeroOverZero) {
  const std::string empty = ProgressLine(smoe::v1::StateCounts(), 10);
  EXPECT_EQ(empty, "[----------] no trials yet");
  EXPECT_THAT(ProgressLine(Counts(2, 1, 1, 0), 8),
              HasSubstr("[##------] 1/4  pending 2  running 1"));
}

TEST(ProgressLineTest, EtaFromTheRateSinceTheFirstLine) {
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  SweepProgress p(10);
  // 4 of 20 were done before watching: they do not count toward the rate.
  EXPECT_THAT(p.Line(Counts(16, 0, 4, 0), t0), EndsWith("  ETA --"));
  EXPECT_THAT(p.Line(Counts(16, 0, 4, 0), t0 + absl::Seconds(30)),
              EndsWith("  ETA --"));
  // 2 more in 60 s: 30 s each, 14 left.
  EXPECT_THAT(p.Line(Counts(12, 2, 5, 1), t0 + absl::Seconds(60)),
              EndsWith("6/20  pending 12  running 2  succeeded 5  failed 1  "
                       "cancelled 0  ETA 7m00s"));
  // Finished: no ETA.
  EXPECT_THAT(p.Line(Counts(0, 0, 19, 1), t0 + absl::Seconds(500)),
              Not(HasSubstr("ETA")));
  EXPECT_EQ(FormatEta(absl::Seconds(45)), "45s");
}

// Issue 31 item 4: a sweep no worker can run says why after the bar, while
// trials are pending only.
TEST(ProgressLineTest, PendingTrialsShowWhyTheyWait) {
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  SweepProgress p(10);
  EXPECT_THAT(
      p.Line(Counts(4, 0, 0, 0), t0, "no connected worker runs kind skillmix"),
      EndsWith("ETA --  waiting: no connected worker runs kind "
               "skillmix"));
  EXPECT_THAT(p.Line(Counts(4, 0, 0, 0), t0, ""), EndsWith("ETA --"));
  EXPECT_THAT(p.Line(Counts(0, 0, 4, 0), t0, "no worker is connected"),
              Not(HasSubstr("waiting")));
  EXPECT_EQ(FormatEta(absl::Seconds(3725)), "1h02m");
}

TEST(TrainProgressTest, ShowsEvaluationAndEta) {
  const absl::Time t0 = absl::FromUnixSeconds(50);
  TrainProgress p;
  EXPECT_EQ(p.Line(""), "starting the trainer...");
  // The first evaluation (step 1) comes before the first progress event.
  p.Phase("eval/test", 0, 4096);
  EXPECT_EQ(p.Line(""), "step 0  evaluating test 0/4096");
  p.Step(20, 2000, t0);
  EXPECT_EQ(p.Line(""), "[------------------------------] step 20/2000");
  p.Step(40, 2000, t0 + absl::Seconds(10));
  // 20 steps in 10 s: 1960 left take 980 s.
  EXPECT_EQ(p.Line("  ood_acc 0.125"),
            "[------------------------------] step 40/2000  ETA 16m20s  "
            "ood_acc 0.125");
  p.Phase("eval/ood", 2560, 4096);
  EXPECT_THAT(p.Line(""), EndsWith("step 40/2000  evaluating ood 2560/4096"));
  p.Step(2000, 2000, t0 + absl::Seconds(990));
  EXPECT_THAT(p.Line(""), EndsWith("step 2000/2000"));
}

}  // namespace
}  // namespace smoe::cli
