// Copyright 2026 SMoE Lab authors.
#include "worker/daemon/system_stats.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/logging.h"

namespace smoe::worker {

std::optional<ProcStat> ParseProcStat(const std::string& line,
                                      int64_t clock_ticks, int64_t page_size) {
  // "pid (comm) state ppid pgrp ..."; comm may hold spaces and ')'.
  const size_t close = line.rfind(')');
  if (close == std::string::npos || clock_ticks <= 0) return std::nullopt;
  std::vector<absl::string_view> f = absl::StrSplit(
      absl::string_view(line).substr(close + 1), ' ', absl::SkipEmpty());
  // f[0] is field 3 (state): field k is f[k - 3].
  if (f.size() < 22) return std::nullopt;
  int64_t pgrp, utime, stime, cutime, cstime, rss;
  if (!absl::SimpleAtoi(f[5 - 3], &pgrp) ||
      !absl::SimpleAtoi(f[14 - 3], &utime) ||
      !absl::SimpleAtoi(f[15 - 3], &stime) ||
      !absl::SimpleAtoi(f[16 - 3], &cutime) ||
      !absl::SimpleAtoi(f[17 - 3], &cstime) ||
      !absl::SimpleAtoi(f[24 - 3], &rss)) {
    return std::nullopt;
  }
  ProcStat s;
  s.pgrp = static_cast<int>(pgrp);
  s.cpu_seconds = static_cast<double>(utime + stime + cutime + cstime) /
                  static_cast<double>(clock_ticks);
  s.rss_bytes = std::max<int64_t>(0, rss) * page_size;
  return s;
}

absl::StatusOr<ProcessGroupUsage> ReadProcessGroups(
    const std::vector<int>& pgids, const std::string& proc_root) {
  static const int64_t kTicks = sysconf(_SC_CLK_TCK);
  static const int64_t kPage = sysconf(_SC_PAGESIZE);
  const std::set<int> wanted(pgids.begin(), pgids.end());
  DIR* d = opendir(proc_root.c_str());
  if (d == nullptr) {
    return absl::InternalError(
        absl::StrCat("cannot list '", proc_root, "': ", strerror(errno)));
  }
  ProcessGroupUsage u;
  while (dirent* e = readdir(d)) {
    int pid;
    if (!absl::SimpleAtoi(e->d_name, &pid)) continue;
    std::ifstream in(absl::StrCat(proc_root, "/", e->d_name, "/stat"));
    std::string line;
    if (!in || !std::getline(in, line)) continue;  // exited meanwhile
    std::optional<ProcStat> s = ParseProcStat(line, kTicks, kPage);
    if (!s.has_value() || wanted.count(s->pgrp) == 0) continue;
    u.cpu_seconds += s->cpu_seconds;
    u.rss_bytes += s->rss_bytes;
    u.pids.push_back(pid);
  }
  closedir(d);
  std::sort(u.pids.begin(), u.pids.end());
  return u;
}

std::optional<double> CpuRate::Update(double cpu_seconds, absl::Time now) {
  std::optional<double> out;
  if (last_.has_value() && now > last_->second) {
    const double wall = absl::ToDoubleSeconds(now - last_->second);
    out = std::max(0.0, (cpu_seconds - last_->first) / wall * 100.0);
  }
  last_ = std::make_pair(cpu_seconds, now);
  return out;
}

namespace {

// The few NVML declarations used (nvml.h is not needed to build).
using NvmlReturn = int;  // nvmlReturn_t; 0 = NVML_SUCCESS
constexpr NvmlReturn kNvmlSuccess = 0;
constexpr NvmlReturn kNvmlInsufficientSize = 7;
using NvmlDevice = void*;
struct NvmlUtilization {
  unsigned int gpu;
  unsigned int memory;
};
// nvmlProcessInfo_t (v2 layout, used by the _v2 and _v3 queries).
struct NvmlProcessInfo {
  unsigned int pid;
  unsigned long long used_gpu_memory;  // NOLINT(runtime/int): NVML's type
  unsigned int gpu_instance_id;
  unsigned int compute_instance_id;
};
constexpr unsigned long long kNvmlValueNotAvailable = ~0ULL;  // NOLINT

class NvmlMonitor final : public GpuMonitor {
 public:
  using InitFn = NvmlReturn (*)();
  using HandleFn = NvmlReturn (*)(unsigned int, NvmlDevice*);
  using UtilFn = NvmlReturn (*)(NvmlDevice, NvmlUtilization*);
  using ProcsFn = NvmlReturn (*)(NvmlDevice, unsigned int*, NvmlProcessInfo*);

  NvmlMonitor(void* lib, HandleFn handle, UtilFn util, ProcsFn procs)
      : lib_(lib), handle_(handle), util_(util), procs_(procs) {}
  ~NvmlMonitor() override {
    using ShutdownFn = NvmlReturn (*)();
    if (auto f = reinterpret_cast<ShutdownFn>(dlsym(lib_, "nvmlShutdown"))) {
      f();
    }
    dlclose(lib_);
  }

  GpuUsage Sample(const std::vector<int>& indices,
                  const std::vector<int>& pids) override {
    GpuUsage u;
    if (indices.empty()) return u;
    const std::set<int> mine(pids.begin(), pids.end());
    double util_sum = 0;
    int util_n = 0;
    double mem = 0;
    bool mem_known = procs_ != nullptr;
    for (int index : indices) {
      NvmlDevice dev = nullptr;
      if (handle_(static_cast<unsigned int>(index), &dev) != kNvmlSuccess) {
        mem_known = false;
        continue;
      }
      NvmlUtilization ut{};
      if (util_(dev, &ut) == kNvmlSuccess) {
        util_sum += ut.gpu;
        ++util_n;
      }
      if (procs_ == nullptr) continue;
      std::vector<NvmlProcessInfo> infos(64);
      unsigned int n = static_cast<unsigned int>(infos.size());
      NvmlReturn r = procs_(dev, &n, infos.data());
      if (r == kNvmlInsufficientSize) {
        infos.resize(n + 16);
        n = static_cast<unsigned int>(infos.size());
        r = procs_(dev, &n, infos.data());
      }
      if (r != kNvmlSuccess) {
        mem_known = false;
        continue;
      }
      for (unsigned int i = 0; i < n && i < infos.size(); ++i) {
        if (mine.count(static_cast<int>(infos[i].pid)) == 0) continue;
        if (infos[i].used_gpu_memory == kNvmlValueNotAvailable) {
          mem_known = false;
          continue;
        }
        mem += static_cast<double>(infos[i].used_gpu_memory);
      }
    }
    if (util_n == static_cast<int>(indices.size())) {
      u.utilization_percent = util_sum / util_n;
    }
    if (mem_known) u.memory_bytes = mem;
    return u;
  }

 private:
  void* lib_;
  HandleFn handle_;
  UtilFn util_;
  ProcsFn procs_;  // may be null: memory absent
};

}  // namespace

std::unique_ptr<GpuMonitor> OpenNvml() {
  void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    SMOE_LOG(INFO) << "NVML not available (" << dlerror()
                   << "); GPU utilisation and memory are not reported";
    return nullptr;
  }
  auto init = reinterpret_cast<NvmlMonitor::InitFn>(dlsym(lib, "nvmlInit_v2"));
  auto handle = reinterpret_cast<NvmlMonitor::HandleFn>(
      dlsym(lib, "nvmlDeviceGetHandleByIndex_v2"));
  auto util = reinterpret_cast<NvmlMonitor::UtilFn>(
      dlsym(lib, "nvmlDeviceGetUtilizationRates"));
  auto procs = reinterpret_cast<NvmlMonitor::ProcsFn>(
      dlsym(lib, "nvmlDeviceGetComputeRunningProcesses_v3"));
  if (procs == nullptr) {
    procs = reinterpret_cast<NvmlMonitor::ProcsFn>(
        dlsym(lib, "nvmlDeviceGetComputeRunningProcesses_v2"));
  }
  if (init == nullptr || handle == nullptr || util == nullptr) {
    SMOE_LOG(INFO) << "NVML lacks the functions used; GPU utilisation and "
                      "memory are not reported";
    dlclose(lib);
    return nullptr;
  }
  if (NvmlReturn r = init(); r != kNvmlSuccess) {
    SMOE_LOG(INFO) << "nvmlInit failed (" << r
                   << "); GPU utilisation and memory are not reported";
    dlclose(lib);
    return nullptr;
  }
  return std::make_unique<NvmlMonitor>(lib, handle, util, procs);
}

}  // namespace smoe::worker
