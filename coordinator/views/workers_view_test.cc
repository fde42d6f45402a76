// Copyright 2026 SMoE Lab authors.
//
// The workers table's states and order (issue 31 item 7): pure function.
#include "coordinator/views/workers_view.h"

#include "gtest/gtest.h"

namespace smoe::coordinator {
namespace {

const absl::Time kNow = absl::FromUnixSeconds(1'800'000'000);
const absl::Duration kLease = absl::Seconds(30);

WorkerSnapshot Worker(const std::string& id, absl::Duration silent,
                      bool draining = false,
                      std::vector<std::string> trials = {}) {
  WorkerSnapshot w;
  w.record.worker_id = id;
  w.record.draining = draining;
  w.record.last_heartbeat_at = kNow - silent;
  w.trial_ids = std::move(trials);
  w.slots_used = static_cast<int>(w.trial_ids.size());
  return w;
}

std::vector<std::string> Ids(const WorkersTable& t) {
  std::vector<std::string> ids;
  for (const WorkerRow& r : t.rows) ids.push_back(r.worker.record.worker_id);
  return ids;
}

TEST(WorkersViewTest, StatesFollowHeartbeatAgeAndDraining) {
  const WorkersTable t = ReadWorkersTable(
      {Worker("b-ready", absl::Seconds(2)),
       Worker("a-draining", absl::Seconds(1), true, {"s/0000000000000001"}),
       Worker("c-lost", absl::Seconds(31), false, {"s/0000000000000002"}),
       // Silent while draining but still holding a trial: lost, not stopped.
       Worker("d-lost-draining", absl::Seconds(40), true,
              {"s/0000000000000003"}),
       Worker("e-stopped", absl::Minutes(5), true),
       // Exactly the lease timeout: not yet lost.
       Worker("f-edge", kLease)},
      kNow, kLease, /*all=*/false);
  ASSERT_EQ(t.rows.size(), 6u);
  EXPECT_EQ(t.hidden, 0);
  EXPECT_EQ(t.as_of, kNow);
  EXPECT_EQ(t.lost_after, kLease);
  // Heard from workers by id, then the silent ones, the most recent first.
  EXPECT_EQ(Ids(t), (std::vector<std::string>{"a-draining", "b-ready", "f-edge",
                                              "c-lost", "d-lost-draining",
                                              "e-stopped"}));
  EXPECT_EQ(t.rows[0].state, WorkerState::kDraining);
  EXPECT_EQ(t.rows[1].state, WorkerState::kReady);
  EXPECT_EQ(t.rows[2].state, WorkerState::kReady);
  EXPECT_EQ(t.rows[3].state, WorkerState::kLost);
  EXPECT_EQ(t.rows[4].state, WorkerState::kLost);
  EXPECT_EQ(t.rows[5].state, WorkerState::kStopped);
  EXPECT_EQ(t.rows[3].heartbeat_age, absl::Seconds(31));
  EXPECT_STREQ(WorkerStateName(t.rows[5].state), "stopped");
  EXPECT_STREQ(WorkerStateName(WorkerState::kLost), "lost");
}

TEST(WorkersViewTest, AHeartbeatThatSaysWhyItLeasesNothingIsPaused) {
  WorkerSnapshot paused = Worker("p", absl::Seconds(1));
  paused.paused = "work dir not writable, leasing paused: ENOSPC";
  WorkerSnapshot paused_draining = Worker("pd", absl::Seconds(1), true);
  paused_draining.paused = "disk";
  WorkerSnapshot paused_silent = Worker("ps", absl::Minutes(2));
  paused_silent.paused = "disk";
  const WorkersTable t = ReadWorkersTable(
      {paused, paused_draining, paused_silent}, kNow, kLease, false);
  ASSERT_EQ(t.rows.size(), 3u);
  EXPECT_EQ(t.rows[0].state, WorkerState::kPaused);
  EXPECT_EQ(t.rows[0].worker.paused, paused.paused);
  EXPECT_STREQ(WorkerStateName(t.rows[0].state), "paused");
  EXPECT_EQ(t.rows[1].state, WorkerState::kDraining);
  EXPECT_EQ(t.rows[2].state, WorkerState::kLost);
}

TEST(WorkersViewTest, WorkersSilentForADayAreCountedUnlessAllIsAsked) {
  std::vector<WorkerSnapshot> ws = {
      Worker("old-lost", absl::Hours(25)),
      Worker("old-stopped", absl::Hours(48), true),
      Worker("recent-lost", absl::Hours(23)), Worker("up", absl::Seconds(1))};
  const WorkersTable some = ReadWorkersTable(ws, kNow, kLease, false);
  EXPECT_EQ(Ids(some), (std::vector<std::string>{"up", "recent-lost"}));
  EXPECT_EQ(some.hidden, 2);
  const WorkersTable all = ReadWorkersTable(ws, kNow, kLease, true);
  EXPECT_EQ(all.hidden, 0);
  EXPECT_EQ(Ids(all), (std::vector<std::string>{"up", "recent-lost", "old-lost",
                                                "old-stopped"}));
}

TEST(WorkersViewTest, AClockBehindTheHeartbeatIsAgeZero) {
  const WorkersTable t = ReadWorkersTable({Worker("future", -absl::Seconds(5))},
                                          kNow, kLease, false);
  ASSERT_EQ(t.rows.size(), 1u);
  EXPECT_EQ(t.rows[0].heartbeat_age, absl::ZeroDuration());
  EXPECT_EQ(t.rows[0].state, WorkerState::kReady);
}

}  // namespace
}  // namespace smoe::coordinator
