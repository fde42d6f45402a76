// Copyright 2026 SMoE Lab authors.
//
// Enforces the dependency rule over every source file of the repository, and
// checks that the checker itself flags each kind of violation.
#include "tests/quality/layering.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace smoe::quality {
namespace {

namespace fs = std::filesystem;

TEST(LayeringCheckerTest, ExtractsIncludes) {
  const auto inc = ExtractIncludes(
      "#include <a/b.h>\n  # include \"c.h\"\n// #include <no.h>\nint x;\n");
  ASSERT_EQ(inc.size(), 2u);
  EXPECT_EQ(inc[0].second, "a/b.h");
  EXPECT_EQ(inc[1].first, 2);
  EXPECT_EQ(inc[1].second, "c.h");
}

TEST(LayeringCheckerTest, FlagsEachForbiddenKind) {
  EXPECT_EQ(CheckFile("coordinator/x.cc", "#include <sqlite3.h>\n").size(), 1u);
  EXPECT_TRUE(
      CheckFile("store/sqlite_store.cc", "#include <sqlite3.h>\n").empty());
  EXPECT_EQ(CheckFile("coordinator/x.cc", "#include <torch/torch.h>\n").size(),
            1u);
  EXPECT_TRUE(
      CheckFile("worker/model/m.cc", "#include <torch/torch.h>\n").empty());
  EXPECT_EQ(CheckFile("coordinator/x.cc", "#include <cuda_runtime.h>\n").size(),
            1u);
  EXPECT_EQ(
      CheckFile("worker/model/m.cc", "#include \"proto/smoe.pb.h\"\n").size(),
      1u);
  EXPECT_EQ(CheckFile("kernels/k.cc", "#include \"store/s.h\"\n").size(), 1u);
  EXPECT_EQ(CheckFile("common/c.cc", "#include \"store/s.h\"\n").size(), 1u);
  // trials/ sits just above common/: below the services and the trainer.
  EXPECT_EQ(CheckFile("trials/p.cc", "#include \"worker/model/m.h\"\n").size(),
            1u);
  EXPECT_EQ(CheckFile("trials/p.cc", "#include <torch/torch.h>\n").size(), 1u);
  EXPECT_TRUE(
      CheckFile("trials/p.cc", "#include \"common/api_token.h\"\n").empty());
  // sweeps/ (smoe_sweeps, the sweep files) sits on trials/ and common/,
  // below the coordinator and the CLI, which both include it.
  EXPECT_TRUE(
      CheckFile("sweeps/sweep_spec.cc", "#include \"trials/params.h\"\n")
          .empty());
  EXPECT_TRUE(CheckFile("sweeps/sweep_yaml.cc", "#include \"common/utf8.h\"\n")
                  .empty());
  for (const char* above :
       {"coordinator/scheduler.h", "cli/client.h", "worker/daemon/d.h",
        "store/types.h", "analysis/stats.h", "proto/smoe.pb.h"}) {
    EXPECT_EQ(CheckFile("sweeps/sweep_spec.cc",
                        absl::StrCat("#include \"", above, "\"\n"))
                  .size(),
              1u)
        << above;
  }
  EXPECT_TRUE(
      CheckFile("coordinator/scheduler.h", "#include \"sweeps/sweep_spec.h\"\n")
          .empty());
  EXPECT_TRUE(
      CheckFile("cli/sweep_cmds.cc", "#include \"sweeps/sweep_spec.h\"\n")
          .empty());
  // The CLI parses sweep files without the coordinator.
  EXPECT_EQ(
      CheckFile("cli/sweep_cmds.cc", "#include \"coordinator/scheduler.h\"\n")
          .size(),
      1u);
  EXPECT_EQ(CheckFile("common/c.cc", "#include \"trials/params.h\"\n").size(),
            1u);
  // analysis/ sits above store/ and trials/, below the coordinator and the
  // CLI; the client commands use it instead of the coordinator.
  EXPECT_TRUE(
      CheckFile("analysis/s.cc", "#include \"store/types.h\"\n").empty());
  EXPECT_EQ(CheckFile("analysis/s.cc", "#include \"coordinator/scheduler.h\"\n")
                .size(),
            1u);
  EXPECT_EQ(CheckFile("analysis/s.cc", "#include \"proto/smoe.pb.h\"\n").size(),
            1u);
  EXPECT_TRUE(CheckFile("coordinator/http/http_server.cc",
                        "#include \"analysis/stats.h\"\n")
                  .empty());
  // analysis/search/ (the adaptive-sweep policies) is stricter: pure over
  // common/ and analysis/, no store types.
  EXPECT_TRUE(CheckFile("analysis/search/asha.cc",
                        "#include \"analysis/optimal_k.h\"\n")
                  .empty());
  EXPECT_EQ(CheckFile("analysis/search/asha.cc", "#include \"store/types.h\"\n")
                .size(),
            1u);
  EXPECT_TRUE(CheckFile("coordinator/scheduler.cc",
                        "#include \"analysis/search/asha.h\"\n")
                  .empty());
  EXPECT_TRUE(CheckFile("cli/analyze_cmd.cc", "#include \"analysis/stats.h\"\n")
                  .empty());
  EXPECT_EQ(
      CheckFile("cli/analyze_cmd.cc", "#include \"coordinator/server.h\"\n")
          .size(),
      1u);
  EXPECT_TRUE(
      CheckFile("cli/up.cc", "#include \"coordinator/server.h\"\n").empty());
  EXPECT_EQ(
      CheckFile("coordinator/scheduler.cc", "#include <grpcpp/grpcpp.h>\n")
          .size(),
      1u);
  EXPECT_TRUE(CheckFile("coordinator/grpc/service_impl.cc",
                        "#include <grpcpp/grpcpp.h>\n")
                  .empty());
  EXPECT_TRUE(CheckFile("coordinator/server.cc", "#include <grpcpp/grpcpp.h>\n")
                  .empty());
  // The coordinator's transports (issue 34): http/ and grpc/ never include
  // each other; only http/ includes httplib, only grpc/ (and the
  // composition root) grpcpp; the domain, api/ and views/ include neither
  // transport.
  EXPECT_EQ(CheckFile("coordinator/http/http_server.cc",
                      "#include \"coordinator/grpc/service_impl.h\"\n")
                .size(),
            1u);
  EXPECT_EQ(CheckFile("coordinator/grpc/service_impl.cc",
                      "#include \"coordinator/http/http_reply.h\"\n")
                .size(),
            1u);
  EXPECT_TRUE(CheckFile("coordinator/grpc/service_impl.cc",
                        "#include \"coordinator/views/sweep_detail.h\"\n")
                  .empty());
  EXPECT_TRUE(CheckFile("coordinator/http/http_server.cc",
                        "#include \"coordinator/api/operations.h\"\n")
                  .empty());
  EXPECT_EQ(CheckFile("coordinator/http/http_server.cc",
                      "#include <grpcpp/grpcpp.h>\n")
                .size(),
            1u);
  EXPECT_TRUE(
      CheckFile("coordinator/http/http_server.cc", "#include <httplib.h>\n")
          .empty());
  EXPECT_EQ(
      CheckFile("coordinator/trial_logs.cc", "#include <httplib.h>\n").size(),
      1u);
  EXPECT_EQ(
      CheckFile("coordinator/grpc/service_impl.cc", "#include <httplib.h>\n")
          .size(),
      1u);
  EXPECT_EQ(CheckFile("coordinator/views/sweep_detail.cc",
                      "#include \"coordinator/http/http_reply.h\"\n")
                .size(),
            1u);
  EXPECT_EQ(CheckFile("coordinator/api/access.cc",
                      "#include \"coordinator/views/trial_table.h\"\n")
                .size(),
            1u);
  EXPECT_EQ(CheckFile("coordinator/trial_logs.cc",
                      "#include \"coordinator/http/log_routes.h\"\n")
                .size(),
            1u);
  EXPECT_TRUE(CheckFile("coordinator/server.cc",
                        "#include \"coordinator/http/http_server.h\"\n"
                        "#include \"coordinator/grpc/service_impl.h\"\n")
                  .empty());
  EXPECT_EQ(CheckFile("worker/daemon/d.cc", "#include \"store/s.h\"\n").size(),
            1u);
  // worker/launch/ (smoe_launch) sits just above common/: the daemon, the CLI
  // and bench start ranks with it; it knows nothing of them, of the proto,
  // of LibTorch or of gRPC.
  EXPECT_TRUE(
      CheckFile("worker/launch/rank_group.cc", "#include \"common/clock.h\"\n")
          .empty());
  EXPECT_EQ(CheckFile("worker/launch/rank_group.cc",
                      "#include \"worker/daemon/worker_daemon.h\"\n")
                .size(),
            1u);
  EXPECT_EQ(
      CheckFile("worker/launch/rank_group.cc", "#include \"proto/smoe.pb.h\"\n")
          .size(),
      1u);
  EXPECT_EQ(
      CheckFile("worker/launch/rank_group.cc", "#include <torch/torch.h>\n")
          .size(),
      1u);
  EXPECT_EQ(
      CheckFile("worker/launch/rank_group.cc", "#include <grpcpp/grpcpp.h>\n")
          .size(),
      1u);
  EXPECT_TRUE(CheckFile("worker/daemon/worker_daemon.cc",
                        "#include \"worker/launch/rank_group.h\"\n")
                  .empty());
  EXPECT_TRUE(CheckFile("cli/local_trial.cc",
                        "#include \"worker/launch/rank_group.h\"\n")
                  .empty());
  EXPECT_EQ(CheckFile("worker/model/m.cc",
                      "#include \"worker/launch/rank_group.h\"\n")
                .size(),
            1u);
  EXPECT_EQ(
      CheckFile("worker/eval/skillmix/pipeline.cc", "#include <curl/curl.h>\n")
          .size(),
      1u);
  EXPECT_TRUE(CheckFile("worker/eval/skillmix/openai_grader.cc",
                        "#include <curl/curl.h>\n")
                  .empty());
}

TEST(LayeringTest, RepositoryFollowsTheDependencyRule) {
  const char* root_env = std::getenv("SMOE_SOURCE_DIR");
  ASSERT_NE(root_env, nullptr) << "SMOE_SOURCE_DIR is set by CTest";
  const fs::path root(root_env);
  int files = 0;
  std::vector<Violation> all;
  for (auto it = fs::recursive_directory_iterator(root);
       it != fs::recursive_directory_iterator(); ++it) {
    const std::string name = it->path().filename().string();
    if (it->is_directory() &&
        (name == "node_modules" || absl::StartsWith(name, "build") ||
         absl::StartsWith(name, "."))) {
      it.disable_recursion_pending();
      continue;
    }
    const std::string ext = it->path().extension().string();
    if (ext != ".h" && ext != ".cc" && ext != ".cu" && ext != ".cuh") continue;
    const std::string rel = fs::relative(it->path(), root).generic_string();
    std::ifstream in(it->path());
    std::stringstream ss;
    ss << in.rdbuf();
    ++files;
    for (Violation& v : CheckFile(rel, ss.str())) all.push_back(std::move(v));
  }
  EXPECT_GT(files, 5);
  for (const Violation& v : all) {
    ADD_FAILURE() << v.file << ":" << v.line << ": includes " << v.header
                  << " (" << v.reason << ")";
  }
}

}  // namespace
}  // namespace smoe::quality
