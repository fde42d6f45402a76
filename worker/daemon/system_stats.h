// Copyright 2026 SMoE Lab authors.
//
// File: worker/daemon/system_stats.h
//
// Resource use of a running attempt (docs/logs-and-system-metrics.md), sampled
// by the daemon at each heartbeat:
//   - CPU and RSS of every process in the attempt's process groups (each rank
//     is the leader of its own group, process_launcher.h, so the trainer's
//     children count; a child that moves to a group of its own does not), read
//     from /proc/<pid>/stat. CPU time includes reaped children's (cutime,
//     cstime), so short-lived helpers are counted too.
//   - GPU utilisation (device-wide, mean over the attempt's GPUs) and GPU
//     memory used by the attempt's processes, through NVML, loaded with
//     dlopen("libnvidia-ml.so.1") on first use. Without the library, a
//     driver, or GPUs for the attempt, the GPU fields are absent (never 0).
// GPU indices are the worker's --gpu-ids; NVML numbers GPUs in PCI bus order,
// which is CUDA's order only with CUDA_DEVICE_ORDER=PCI_BUS_ID.
#ifndef SMOE_WORKER_DAEMON_SYSTEM_STATS_H_
#define SMOE_WORKER_DAEMON_SYSTEM_STATS_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace smoe::worker {

struct ProcessGroupUsage {
  double cpu_seconds = 0;  // user + system, the processes' and reaped kids'
  int64_t rss_bytes = 0;
  std::vector<int> pids;  // the processes found
};

// Sums over every process in /proc (`proc_root`) whose process group is one
// of `pgids`. A process that vanishes while it is read is skipped. Errors:
// Internal when `proc_root` cannot be listed.
absl::StatusOr<ProcessGroupUsage> ReadProcessGroups(
    const std::vector<int>& pgids, const std::string& proc_root = "/proc");

// Parses one /proc/<pid>/stat line: pgrp, cpu seconds (utime + stime +
// cutime + cstime), rss bytes. nullopt for a malformed line.
struct ProcStat {
  int pgrp = 0;
  double cpu_seconds = 0;
  int64_t rss_bytes = 0;
};
std::optional<ProcStat> ParseProcStat(const std::string& line,
                                      int64_t clock_ticks, int64_t page_size);

// Turns cumulative CPU seconds into a percentage of one core over the time
// since the previous sample (nullopt for the first; never negative: CPU time
// of processes that exited unreaped drops out of the sum).
class CpuRate {
 public:
  std::optional<double> Update(double cpu_seconds, absl::Time now);

 private:
  std::optional<std::pair<double, absl::Time>> last_;
};

struct GpuUsage {
  std::optional<double> utilization_percent;
  std::optional<double> memory_bytes;
};

// NVML, loaded at run time. Thread-compatible.
class GpuMonitor {
 public:
  virtual ~GpuMonitor() = default;
  // GPUs `indices` (NVML indices) and the memory the processes `pids` use on
  // them. Fields NVML cannot give are absent.
  virtual GpuUsage Sample(const std::vector<int>& indices,
                          const std::vector<int>& pids) = 0;
};

// The NVML monitor, or null when libnvidia-ml cannot be loaded or
// initialised (the reason is logged once at INFO).
std::unique_ptr<GpuMonitor> OpenNvml();

}  // namespace smoe::worker

#endif  // SMOE_WORKER_DAEMON_SYSTEM_STATS_H_
