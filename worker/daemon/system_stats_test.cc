// Copyright 2026 SMoE Lab authors.
#include "worker/daemon/system_stats.h"

#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/test_dir.h"
#include "gtest/gtest.h"

namespace smoe::worker {
namespace {

// A /proc/<pid>/stat line with the given pgrp, utime, stime, cutime, cstime
// (ticks) and rss (pages); the command name holds spaces and parentheses.
std::string StatLine(int pid, int pgrp, int utime, int stime, int cutime,
                     int cstime, int rss_pages) {
  return absl::StrCat(pid, " (my (odd) trainer) S 1 ", pgrp,
                      " 0 0 -1 4194560 100 0 0 0 ", utime, " ", stime, " ",
                      cutime, " ", cstime, " 20 0 1 0 12345 100000000 ",
                      rss_pages,
                      " 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 "
                      "0 0 0 0");
}

TEST(SystemStatsTest, ParsesProcStatFields) {
  std::optional<ProcStat> s =
      ParseProcStat(StatLine(42, 40, 150, 50, 20, 30, 256), 100, 4096);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->pgrp, 40);
  EXPECT_DOUBLE_EQ(s->cpu_seconds, 2.5);
  EXPECT_EQ(s->rss_bytes, 256 * 4096);
  EXPECT_FALSE(ParseProcStat("garbage", 100, 4096).has_value());
  EXPECT_FALSE(ParseProcStat("1 (x) S 1 2 3", 100, 4096).has_value());
}

TEST(SystemStatsTest, SumsOnlyTheWantedProcessGroups) {
  const std::string root = smoe::testing::NewTestDir("system_stats_proc_");
  const long ticks = sysconf(_SC_CLK_TCK);  // NOLINT(runtime/int)
  const long page = sysconf(_SC_PAGESIZE);  // NOLINT(runtime/int)
  auto add = [&](int pid, int pgrp, int utime, int rss) {
    const std::string d = absl::StrCat(root, "/", pid);
    mkdir(d.c_str(), 0755);
    std::ofstream(d + "/stat")
        << StatLine(pid, pgrp, utime, 0, 0, 0, rss) << "\n";
  };
  add(100, 100, static_cast<int>(ticks), 10);         // rank 0, leader
  add(101, 100, static_cast<int>(ticks), 5);          // its child
  add(200, 200, static_cast<int>(ticks), 7);          // rank 1
  add(300, 300, 99 * static_cast<int>(ticks), 1000);  // someone else
  mkdir((root + "/self").c_str(), 0755);              // not a pid
  absl::StatusOr<ProcessGroupUsage> u = ReadProcessGroups({100, 200}, root);
  ASSERT_TRUE(u.ok()) << u.status();
  EXPECT_EQ(u->pids, (std::vector<int>{100, 101, 200}));
  EXPECT_DOUBLE_EQ(u->cpu_seconds, 3.0);
  EXPECT_EQ(u->rss_bytes, 22 * page);
  EXPECT_TRUE(ReadProcessGroups({999}, root)->pids.empty());
  EXPECT_FALSE(ReadProcessGroups({1}, root + "/missing").ok());
}

TEST(SystemStatsTest, ReadsThisTestsOwnProcessGroupFromRealProc) {
  absl::StatusOr<ProcessGroupUsage> u = ReadProcessGroups({getpgrp()});
  ASSERT_TRUE(u.ok()) << u.status();
  EXPECT_FALSE(u->pids.empty());
  EXPECT_GT(u->rss_bytes, 1 << 20);  // a gtest binary is more than 1 MiB
  EXPECT_GE(u->cpu_seconds, 0.0);
}

TEST(SystemStatsTest, CpuRateIsPercentOfOneCoreSinceTheLastSample) {
  CpuRate rate;
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  EXPECT_FALSE(rate.Update(10.0, t0).has_value());  // first sample
  std::optional<double> p = rate.Update(11.5, t0 + absl::Seconds(1));
  ASSERT_TRUE(p.has_value());
  EXPECT_DOUBLE_EQ(*p, 150.0);
  // A process left the group: never negative.
  p = rate.Update(5.0, t0 + absl::Seconds(2));
  ASSERT_TRUE(p.has_value());
  EXPECT_DOUBLE_EQ(*p, 0.0);
  // No time passed: no rate.
  EXPECT_FALSE(rate.Update(6.0, t0 + absl::Seconds(2)).has_value());
}

TEST(SystemStatsTest, NvmlIsAbsentOrUsable) {
  // This machine may have no NVIDIA driver: then there is no monitor (GPU
  // metrics absent, never zero). With one, a sample of no GPUs is empty.
  std::unique_ptr<GpuMonitor> nvml = OpenNvml();
  if (nvml == nullptr) {
    SUCCEED() << "no NVML here";
    return;
  }
  GpuUsage u = nvml->Sample({}, {getpid()});
  EXPECT_FALSE(u.utilization_percent.has_value());
  EXPECT_FALSE(u.memory_bytes.has_value());
}

}  // namespace
}  // namespace smoe::worker
