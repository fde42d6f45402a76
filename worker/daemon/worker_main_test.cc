// Copyright 2026 SMoE Lab authors.
#include "worker/daemon/worker_main.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace smoe::worker {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(ParseWorkerFlagsTest, Defaults) {
  auto f = ParseWorkerFlags({});
  ASSERT_TRUE(f.ok()) << f.status();
  // Flags are parsed only: nothing connects or listens.
  EXPECT_EQ(f->coordinator, "127.0.0.1:50051");  // fixed-port-ok
  EXPECT_EQ(f->slots, 0);
  EXPECT_EQ(f->gpus, -1);
  EXPECT_THAT(f->kinds, ElementsAre("sraven"));
  EXPECT_EQ(f->grace, absl::Seconds(30));
  EXPECT_THAT(f->work_dir, HasSubstr("smoe-data/worker-"));
  EXPECT_THAT(f->token_file, HasSubstr("token"));
  EXPECT_FALSE(f->help);
}

TEST(ParseWorkerFlagsTest, AllFlagsBothSyntaxes) {
  auto f = ParseWorkerFlags({"--coordinator",
                             "10.0.0.1:9000",  // fixed-port-ok
                             "--token-file=/t",
                             "--slots",
                             "3",
                             "--gpus=2",
                             "--labels",
                             "zone=a,gpu=h100",
                             "--kinds=sraven,skillmix",
                             "--trainer",
                             "/bin/true",
                             "--work-dir",
                             "/w",
                             "--grace",
                             "2.5",
                             "--tls-ca",
                             "/ca.pem",
                             "--worker-id",
                             "w-7",
                             "--rpc-timeout=3s"});
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(f->coordinator, "10.0.0.1:9000");  // fixed-port-ok
  EXPECT_EQ(f->token_file, "/t");
  EXPECT_EQ(f->slots, 3);
  EXPECT_EQ(f->gpus, 2);
  EXPECT_EQ(f->labels.at("zone"), "a");
  EXPECT_EQ(f->labels.at("gpu"), "h100");
  EXPECT_THAT(f->kinds, ElementsAre("sraven", "skillmix"));
  EXPECT_EQ(f->trainer, "/bin/true");
  EXPECT_EQ(f->work_dir, "/w");
  EXPECT_EQ(f->grace, absl::Milliseconds(2500));
  EXPECT_EQ(f->tls_ca, "/ca.pem");
  EXPECT_EQ(f->worker_id, "w-7");
  EXPECT_EQ(f->rpc_timeout, absl::Seconds(3));
}

TEST(ParseWorkerFlagsTest, GpuIdsPickDevices) {
  auto f = ParseWorkerFlags({"--gpu-ids", "4,5,7"});
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_THAT(f->gpu_ids, ElementsAre(4, 5, 7));
  EXPECT_EQ(f->gpus, -1);
}

TEST(ParseWorkerFlagsTest, BadValuesNameFlagAndValue) {
  struct Case {
    std::vector<std::string> args;
    std::string want;
  };
  const Case cases[] = {
      {{"--slots", "zero"}, "--slots: 'zero'"},
      {{"--slots", "0"}, "--slots: '0'"},
      {{"--gpus=-1"}, "--gpus: '-1'"},
      {{"--gpu-ids", "0,x"}, "--gpu-ids: '0,x'"},
      {{"--gpu-ids", "1,1"}, "index 1 repeated"},
      {{"--gpu-ids=", "--slots=1"}, "--gpu-ids: ''"},
      {{"--gpus=2", "--gpu-ids=0,1"}, "exclude each other"},
      {{"--grace", "soon"}, "--grace: 'soon'"},
      {{"--labels", "zone"}, "--labels: 'zone'"},
      {{"--kinds", "sraven,imagenet"}, "imagenet"},
      {{"--coordinator", "localhost"}, "--coordinator: 'localhost'"},
      {{"--frobnicate", "1"}, "unknown flag '--frobnicate'"},
      {{"--slots"}, "--slots needs a value"},
      {{"stray"}, "unexpected argument 'stray'"},
  };
  for (const Case& c : cases) {
    auto f = ParseWorkerFlags(c.args);
    ASSERT_FALSE(f.ok()) << c.args[0];
    EXPECT_EQ(f.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(f.status().message(), HasSubstr(c.want));
  }
}

TEST(ParseWorkerFlagsTest, Help) {
  auto f = ParseWorkerFlags({"--help"});
  ASSERT_TRUE(f.ok());
  EXPECT_TRUE(f->help);
  EXPECT_THAT(WorkerUsage(), HasSubstr("--coordinator"));
}

TEST(DetectGpusTest, NeverFails) {
  // Empty on machines without nvidia-smi; indices otherwise.
  std::vector<int> gpus = DetectGpus();
  for (int g : gpus) EXPECT_GE(g, 0);
}

}  // namespace
}  // namespace smoe::worker
