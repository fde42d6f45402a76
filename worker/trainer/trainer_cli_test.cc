// Copyright 2026 SMoE Lab authors.
//
// The trainer's exit codes (docs/trainer-protocol.md, "Exit codes").
#include "worker/trainer/trainer_cli.h"

#include "absl/status/status.h"
#include "gtest/gtest.h"

namespace smoe::trainer {
namespace {

// Issue 31 item 3: a missing input (NOT_FOUND: a model directory, a file) is
// exit 66, which the daemon reports as permanent; bad parameters stay 64,
// a stop is 75 and anything else 1 (retried).
TEST(TrainerCliTest, ExitCodesFollowTheStatus) {
  EXPECT_EQ(ExitCodeFor(absl::OkStatus()), kExitOk);
  EXPECT_EQ(ExitCodeFor(absl::InvalidArgumentError("lr: -1")), kExitUsage);
  EXPECT_EQ(ExitCodeFor(absl::NotFoundError("/nonexistent/config.json")),
            kExitNoInput);
  EXPECT_EQ(kExitNoInput, 66);
  EXPECT_EQ(ExitCodeFor(absl::CancelledError("SIGTERM")), kExitInterrupted);
  EXPECT_EQ(ExitCodeFor(absl::InternalError("oom")), kExitError);
  EXPECT_EQ(ExitCodeFor(absl::FailedPreconditionError("no CUDA")), kExitError);
}

}  // namespace
}  // namespace smoe::trainer
