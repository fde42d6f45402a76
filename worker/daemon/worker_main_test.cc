// Copyright 2026 SMoE Lab authors.
#include "worker/daemon/worker_main.h"

#include "gtest/gtest.h"

namespace smoe::worker {
namespace {

// The flags are parsed in cli/worker_cmd.cc (tested there).
TEST(DetectGpusTest, NeverFails) {
  // Empty on machines without nvidia-smi; indices otherwise.
  std::vector<int> gpus = DetectGpus();
  for (int g : gpus) EXPECT_GE(g, 0);
}

}  // namespace
}  // namespace smoe::worker
