// Copyright 2026 SMoE Lab authors.
#include "worker/trainer/mixtral_tools.h"

#include <gtest/gtest.h>
#include <torch/torch.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "worker/model/mixtral/mixtral_model.h"
#include "worker/model/mixtral/mixtral_tokenizer.h"
#include "worker/model/mixtral/safetensors.h"

namespace smoe::trainer {
namespace {

namespace fs = std::filesystem;

int RunTool(int (*fn)(int, char**), std::vector<std::string> args) {
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  return fn(static_cast<int>(argv.size()), argv.data());
}

TEST(MixtralToolsTest, MakeRandomModelThenLogits) {
  torch::set_num_threads(1);
  const fs::path dir = fs::temp_directory_path() /
                       ("smoe_mixtral_tools_" + std::to_string(::getpid()));
  const std::string out = (dir / "m").string();
  ASSERT_EQ(RunTool(RunMakeRandomModel, {"make-random-model",
                                         "--out",
                                         out,
                                         "--shape",
                                         "custom",
                                         "--layers",
                                         "1",
                                         "--hidden",
                                         "32",
                                         "--heads",
                                         "4",
                                         "--kv-heads",
                                         "1",
                                         "--experts",
                                         "4",
                                         "--sliding-window",
                                         "8",
                                         "--dtype",
                                         "bf16",
                                         "--layout",
                                         "packed",
                                         "--max-shard-mb",
                                         "1",
                                         "--seed",
                                         "5"}),
            0);
  std::ifstream in(out + "/config.json");
  const auto config = nlohmann::json::parse(in);
  EXPECT_EQ(config["num_local_experts"], 4);
  EXPECT_EQ(config["sliding_window"], 8);
  EXPECT_EQ(config["torch_dtype"], "bfloat16");
  EXPECT_TRUE(fs::exists(out + "/tokenizer.model"));
  auto tok = model::mixtral::MixtralTokenizer::Load(out + "/tokenizer.model");
  ASSERT_TRUE(tok.ok());
  EXPECT_EQ((*tok)->vocab_size(), 384);

  const std::string logits = (dir / "logits.safetensors").string();
  ASSERT_EQ(
      RunTool(RunMixtralLogits, {"mixtral-logits", "--model", out, "--tokens",
                                 "1,5,9,300", "--ept", "1,4", "--out", logits}),
      0);
  auto f = model::mixtral::SafetensorsFile::Open(logits);
  ASSERT_TRUE(f.ok()) << f.status();
  auto l1 = (*f)->Read("logits_ept1", torch::kFloat32);
  auto l4 = (*f)->Read("logits_ept4", torch::kFloat32);
  ASSERT_TRUE(l1.ok() && l4.ok());
  EXPECT_EQ(l1->sizes().vec(), (std::vector<int64_t>{4, 384}));
  auto m = model::mixtral::MixtralModel::Load(out);
  ASSERT_TRUE(m.ok());
  EXPECT_TRUE(torch::equal(
      *l4, (*(*m)->Forward(torch::tensor({{1, 5, 9, 300}}), 4))[0]));
  EXPECT_FALSE(torch::equal(*l1, *l4));

  // Bad input: exit 64 with the field named on stderr.
  EXPECT_EQ(RunTool(RunMakeRandomModel,
                    {"make-random-model", "--out", out, "--ept", "9"}),
            64);
  EXPECT_EQ(RunTool(RunMakeRandomModel, {"make-random-model", "--bogus", "1"}),
            64);
  EXPECT_EQ(RunTool(RunMixtralLogits, {"mixtral-logits", "--model", out,
                                       "--tokens", "1,x", "--out", logits}),
            64);
  // The device goes through model::SelectDevice: a bad name is a usage
  // error; "cuda" without a GPU (CI) an error naming the flag, captured from
  // stderr.
  EXPECT_EQ(
      RunTool(RunMixtralLogits, {"mixtral-logits", "--model", out, "--tokens",
                                 "1,5", "--out", logits, "--device", "gpu"}),
      64);
  if (!torch::cuda::is_available()) {
    testing::internal::CaptureStderr();
    const int rc =
        RunTool(RunMixtralLogits, {"mixtral-logits", "--model", out, "--tokens",
                                   "1,5", "--out", logits, "--device", "cuda"});
    const std::string err = testing::internal::GetCapturedStderr();
    EXPECT_NE(rc, 0);
    EXPECT_NE(rc, 64) << err;
    EXPECT_NE(err.find("--device: cuda but no CUDA device is visible"),
              std::string::npos)
        << err;
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace smoe::trainer
