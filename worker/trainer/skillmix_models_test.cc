// Copyright 2026 SMoE Lab authors.
//
// The skillmix trial's models on tiny random Mixtral checkpoints: a whole
// trial run expert parallel (W ranks as threads over LocalCommunicator, rank
// 0 runs the trial and leads, the others follow) writes exactly the
// checkpoint and metrics of the single-process run, with a student and a
// local grader on two checkpoints (model indices 0 and 1); the followers end
// when rank 0 stops them, also after a failed trial.
#include "worker/trainer/skillmix_models.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "kernels/all_to_all/local_communicator.h"
#include "nlohmann/json.hpp"
#include "worker/model/mixtral/mixtral_checkpoint.h"
#include "worker/model/mixtral/mixtral_tokenizer.h"
#include "worker/trainer/skillmix_config.h"
#include "worker/trainer/skillmix_trial.h"

namespace smoe::trainer {
namespace {

using ::testing::HasSubstr;
using json = nlohmann::json;
namespace fs = std::filesystem;
namespace mx = model::mixtral;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class SkillMixModelsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    torch::set_num_threads(1);
    root_ =
        new std::string((fs::temp_directory_path() /
                         ("smoe_skillmix_models_" + std::to_string(::getpid())))
                            .string());
    for (int i = 0; i < 2; ++i) {
      const std::string dir = *root_ + "/model" + std::to_string(i);
      mx::RandomCheckpointOptions o;
      o.seed = 11 + i;
      mx::MixtralConfig config = mx::MixtralConfig::Tiny();
      config.max_position_embeddings = 8192;  // Skill-Mix prompts are long
      ASSERT_TRUE(mx::WriteRandomMixtralCheckpoint(dir, config, o).ok());
      ASSERT_TRUE(
          mx::TrainMixtralTokenizer(dir + "/tokenizer.model", 384, 3).ok());
    }
  }
  static void TearDownTestSuite() {
    fs::remove_all(*root_);
    delete root_;
  }
  static std::string Model(int i) {
    return *root_ + "/model" + std::to_string(i);
  }

  // A small trial: student model0 at EPT 1, local grader model1 at EPT 3.
  static SkillMixTrialConfig Config(const json& extra = json::object()) {
    json params = {{"model", Model(0)},
                   {"ept", 1},
                   {"k_skills", 2},
                   {"num_combinations", 2},
                   {"num_generations", 2},
                   {"num_gradings", 1},
                   {"max_new_tokens", 6},
                   {"grader", "local"},
                   {"grader_model", Model(1)},
                   {"grader_ept", 3},
                   {"grader_max_new_tokens", 6},
                   {"device", "cpu"}};
    params.update(extra);
    auto c = ParseSkillMixTrialJson(json{
        {"sweep_id", "s"},
        {"trial_id", "s/t"},
        {"attempt", 1},
        {"kind", "skillmix"},
        {"seed", 5},
        {"params", params}}.dump());
    EXPECT_TRUE(c.ok()) << c.status();
    return *c;
  }

  struct RankRun {
    absl::Status status;  // rank 0: the trial's; others: Follow's
    absl::Status stopped = absl::OkStatus();  // rank 0's StopFollowers
    int64_t served = 0;
    std::vector<std::string> events;
  };

  // Runs the trial like smoe-trainer's main: over `world` ranks (threads),
  // rank 0 in `workdir`.
  static std::vector<RankRun> RunRanks(const SkillMixTrialConfig& config,
                                       int world, const std::string& workdir) {
    kernels::CommunicatorOptions co;
    co.op_timeout_ms = 60'000;
    auto comms = world > 1
                     ? kernels::CreateLocalCommunicators(world, co)
                     : std::vector<std::unique_ptr<kernels::Communicator>>(1);
    std::vector<RankRun> runs(world);
    std::vector<std::thread> threads;
    for (int r = 0; r < world; ++r) {
      threads.emplace_back([&, r] {
        SkillMixModels models(config, comms[r].get());
        if (r > 0) {
          runs[r].status = models.Follow(&runs[r].served);
          return;
        }
        SkillMixRunOptions o;
        o.workdir = workdir;
        o.emit = [&runs](const std::string& l) { runs[0].events.push_back(l); };
        o.model_factory = models.Factory();
        runs[0].status = RunSkillMixTrial(config, o).status();
        runs[0].stopped = models.StopFollowers();
      });
    }
    for (std::thread& t : threads) t.join();
    return runs;
  }

  void SetUp() override {
    work_ = *root_ + "/work_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name();
  }
  std::string work_;
  static std::string* root_;
};
std::string* SkillMixModelsTest::root_ = nullptr;

TEST_F(SkillMixModelsTest, ModelDirsListStudentThenAnotherLocalGrader) {
  SkillMixTrialConfig c = Config();
  EXPECT_EQ(SkillMixModels::ModelDirs(c),
            (std::vector<std::string>{Model(0), Model(1)}));
  c.grader_model = c.model;  // same checkpoint, other EPT: loaded once
  EXPECT_EQ(SkillMixModels::ModelDirs(c), std::vector<std::string>{Model(0)});
  c.grader = "openai";
  c.grader_model = "gpt-4";
  EXPECT_EQ(SkillMixModels::ModelDirs(c), std::vector<std::string>{Model(0)});
}

// W = 2 and W = 3 (uneven shards: 2, 3, 3 of 8 experts) write the
// single process's checkpoint byte for byte and report the same metrics.
TEST_F(SkillMixModelsTest, ExpertParallelTrialEqualsSingleProcess) {
  const SkillMixTrialConfig c = Config();
  const std::vector<RankRun> single = RunRanks(c, 1, work_ + "/w1");
  ASSERT_TRUE(single[0].status.ok()) << single[0].status;
  const std::string want_ckpt = ReadFile(SkillMixCheckpointPath(work_ + "/w1"));
  const std::string want_result = ReadFile(SkillMixResultPath(work_ + "/w1"));
  ASSERT_FALSE(want_ckpt.empty());
  // Generations and gradings were produced (2 combinations + header).
  EXPECT_EQ(std::count(want_ckpt.begin(), want_ckpt.end(), '\n'), 3);

  for (int world : {2, 3}) {
    SCOPED_TRACE(testing::Message() << "world " << world);
    const std::string dir = work_ + "/w" + std::to_string(world);
    const std::vector<RankRun> runs = RunRanks(c, world, dir);
    ASSERT_TRUE(runs[0].status.ok()) << runs[0].status;
    EXPECT_TRUE(runs[0].stopped.ok()) << runs[0].stopped;
    for (int r = 1; r < world; ++r) {
      EXPECT_TRUE(runs[r].status.ok())
          << "rank " << r << ": " << runs[r].status;
      // Per combination: 2 student turns + 1 grading call.
      EXPECT_EQ(runs[r].served, 2 * 3) << "rank " << r;
    }
    EXPECT_EQ(ReadFile(SkillMixCheckpointPath(dir)), want_ckpt);
    EXPECT_EQ(ReadFile(SkillMixResultPath(dir)), want_result);
    EXPECT_EQ(runs[0].events.back(), single[0].events.back());
  }
}

// Student and grader on one checkpoint at different EPTs: one follower
// model; the run equals the single-process one.
TEST_F(SkillMixModelsTest, SharedCheckpointAtTwoEpts) {
  const SkillMixTrialConfig c = Config({{"grader_model", Model(0)}});
  const std::vector<RankRun> single = RunRanks(c, 1, work_ + "/w1");
  const std::vector<RankRun> ep = RunRanks(c, 2, work_ + "/w2");
  ASSERT_TRUE(single[0].status.ok()) << single[0].status;
  ASSERT_TRUE(ep[0].status.ok()) << ep[0].status;
  ASSERT_TRUE(ep[1].status.ok()) << ep[1].status;
  EXPECT_EQ(ReadFile(SkillMixCheckpointPath(work_ + "/w2")),
            ReadFile(SkillMixCheckpointPath(work_ + "/w1")));
}

// A trial that fails on rank 0 (bad data file) still releases the
// followers, which return OK at once instead of waiting out the deadline.
TEST_F(SkillMixModelsTest, FailedTrialStillStopsTheFollowers) {
  const SkillMixTrialConfig c =
      Config({{"skills_path", work_ + "/no-such-skills.csv"}});
  const std::vector<RankRun> runs = RunRanks(c, 2, work_);
  EXPECT_EQ(runs[0].status.code(), absl::StatusCode::kInvalidArgument)
      << runs[0].status;
  EXPECT_THAT(runs[0].status.message(), HasSubstr("skills_path"));
  EXPECT_TRUE(runs[0].stopped.ok()) << runs[0].stopped;
  EXPECT_TRUE(runs[1].status.ok()) << runs[1].status;
  EXPECT_EQ(runs[1].served, 0);
}

TEST_F(SkillMixModelsTest, BadUseIsAnErrorNotACrash) {
  SkillMixModels single(Config(), nullptr);
  EXPECT_EQ(single.Follow().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(single.StopFollowers().ok());  // no-op
  // An EPT the checkpoint does not have names the value.
  auto m = single.Factory()({Model(0), 9, "cpu"});
  EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(m.status().message(), HasSubstr("got 9"));
  // A missing directory names it.
  auto missing = single.Factory()({*root_ + "/nope", 1, "cpu"});
  EXPECT_FALSE(missing.ok());
  EXPECT_THAT(missing.status().message(), HasSubstr("nope"));
}

// The device and the group go through model::SelectDevice: device "cuda"
// without a GPU (CI) fails before any rendezvous or load, naming the
// setting; on the CPU two ranks join over Gloo (threads, a FileStore).
TEST_F(SkillMixModelsTest, DeviceChoiceGoesThroughSelectDevice) {
  if (!torch::cuda::is_available()) {
    SkillMixModels cuda(Config({{"device", "cuda"}}), nullptr);
    auto m = cuda.Factory()({Model(0), 1, "cuda"});
    EXPECT_EQ(m.status().code(), absl::StatusCode::kFailedPrecondition)
        << m.status();
    EXPECT_THAT(m.status().message(),
                HasSubstr("device: cuda but no CUDA device is visible"));
    auto join = JoinSkillMixGroup({0, 2, work_ + "/no-rdv"}, "cuda", 1000);
    EXPECT_EQ(join.status().code(), absl::StatusCode::kFailedPrecondition)
        << join.status();
  }
  fs::create_directories(work_);
  const std::string rdv = work_ + "/join-rdv";
  std::vector<absl::StatusOr<std::unique_ptr<kernels::Communicator>>> joined(
      2);  // Unknown until joined
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&, r] {
      joined[r] = JoinSkillMixGroup({r, 2, rdv}, "cpu", 20000);
    });
  }
  for (std::thread& t : threads) t.join();
  if (!joined[0].ok() &&
      absl::StrContains(joined[0].status().message(), "UNIMPLEMENTED")) {
    GTEST_SKIP() << "built without Gloo: " << joined[0].status();
  }
  for (int r = 0; r < 2; ++r) {
    ASSERT_TRUE(joined[r].ok()) << "rank " << r << ": " << joined[r].status();
    EXPECT_EQ((*joined[r])->name(), "gloo");
    EXPECT_EQ((*joined[r])->rank(), r);
    EXPECT_EQ((*joined[r])->world_size(), 2);
  }
  threads.clear();
  std::vector<absl::Status> barrier(2);
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&, r] { barrier[r] = (*joined[r])->Barrier(); });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_TRUE(barrier[0].ok()) << barrier[0];
  EXPECT_TRUE(barrier[1].ok()) << barrier[1];
}

}  // namespace
}  // namespace smoe::trainer
