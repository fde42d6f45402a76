// Copyright 2026 SMoE Lab authors.
//
// Keeps the device-conditional code of kernels/, worker/model/ and
// worker/trainer/ listed in docs/gpu-only-lines.md (issue 13: a new GPU-only
// branch cannot appear silently; the reviewer sees it in the doc's diff), and
// checks that the scanner finds each kind of site.
#include "tests/quality/gpu_branches.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace smoe::quality {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> Formatted(const std::vector<DeviceSite>& sites) {
  std::vector<std::string> out;
  for (const DeviceSite& s : sites) out.push_back(FormatSite(s));
  return out;
}

TEST(GpuBranchesCheckerTest, StripsCommentsButNotStrings) {
  EXPECT_EQ(StripComments("a // is_cuda()\nb"), "a             \nb");
  EXPECT_EQ(StripComments("a /* x\ny */ b"), "a     \n     b");
  EXPECT_EQ(StripComments("s = \"// no\"; // yes"), "s = \"// no\";       ");
  EXPECT_EQ(StripComments("c = '\"'; // q"), "c = '\"';     ");
  EXPECT_EQ(StripComments("n = 1'000; // q"), "n = 1'000;     ");
  EXPECT_EQ(StripComments("r = R\"x(// )\" )x\"; // q"),
            "r = R\"x(// )\" )x\";     ");
}

TEST(GpuBranchesCheckerTest, FindsEachKind) {
  const std::string src =
      "#include <torch/torch.h>\n"                 // 1
      "#ifndef SMOE_X_H_\n"                        // 2: a header guard
      "#if defined(SMOE_WITH_CUDA) && \\\n"        // 3: device #if
      "    defined(SMOE_WITH_NCCL)\n"              // 4
      "  if (t.is_cuda()) x();\n"                  // 5: inside: no site
      "#elif SMOE_OPS_CUDA\n"                      // 6: inside: no site
      "#else\n"                                    // 7
      "#include <cuda_runtime_api.h>\n"            // 8: guarded include
      "#endif\n"                                   // 9
      "  if (t.is_cuda()) {  // comment\n"         // 10: branch
      "  // if (t.is_cuda())\n"                    // 11: comment
      "  t = t.to(torch::kCUDA);\n"                // 12: branch
      "  bool k = kCUDAx;\n"                       // 13: not a word
      "  if (c.device == \"cuda\") {}\n"           // 14: branch
      "  if (torch::cuda::is_available()) {}\n"    // 15: branch
      "  if (m == MemorySpace::kCudaDevice) {}\n"  // 16: branch
      "  s = \"cuda\";\n"                          // 17: no comparison
      "#ifdef __CUDACC__\n"                        // 18: device #if
      "#endif\n"
      "#endif\n";
  const std::vector<DeviceSite> sites = ScanFile("worker/model/x.cc", src, {});
  std::vector<int> lines;
  for (const DeviceSite& s : sites) lines.push_back(s.line);
  EXPECT_EQ(lines, (std::vector<int>{3, 10, 12, 14, 15, 16, 18}));
  ASSERT_EQ(sites.size(), 7u);
  EXPECT_EQ(FormatSite(sites[0]),
            "worker/model/x.cc | #if | #if defined(SMOE_WITH_CUDA) && "
            "defined(SMOE_WITH_NCCL)");
  EXPECT_EQ(FormatSite(sites[1]),
            "worker/model/x.cc | branch | if (t.is_cuda()) {");
  EXPECT_EQ(sites[6].kind, "#if");
}

TEST(GpuBranchesCheckerTest, ElifOnADeviceMacroIsASite) {
  const auto sites = ScanFile("kernels/a.cc",
                              "#if FOO\n#elif defined(SMOE_WITH_CUDA)\n"
                              "if (x.is_cuda()) {}\n#endif\n",
                              {});
  ASSERT_EQ(sites.size(), 1u);
  EXPECT_EQ(sites[0].line, 2);
}

TEST(GpuBranchesCheckerTest, CudaOnlyFilesAreTransitive) {
  const std::map<std::string, std::string> files = {
      {"kernels/k/k.cu", "__global__ void f() {}\n"},
      {"kernels/k/launch.h", "#include <cuda_runtime_api.h>\n"},
      {"kernels/k/k.cc", "#include \"kernels/k/launch.h\"\n"},
      {"kernels/k/k.h",
       "#if defined(SMOE_WITH_CUDA)\n#include <cuda_runtime_api.h>\n#endif\n"},
      {"kernels/k/uses_k.cc", "#include \"kernels/k/k.h\"\n"},
  };
  EXPECT_EQ(Formatted(ScanFiles(files)),
            (std::vector<std::string>{
                "kernels/k/k.cc | file | #include \"kernels/k/launch.h\"",
                "kernels/k/k.cu | file | CUDA source",
                "kernels/k/k.h | #if | #if defined(SMOE_WITH_CUDA)",
                "kernels/k/launch.h | file | #include <cuda_runtime_api.h>",
            }));
}

TEST(GpuBranchesCheckerTest, Scope) {
  EXPECT_TRUE(InGpuInventoryScope("kernels/permute/permute.cu"));
  EXPECT_TRUE(InGpuInventoryScope("worker/model/ops/launch.cc"));
  EXPECT_TRUE(InGpuInventoryScope("worker/trainer/trainer.h"));
  EXPECT_FALSE(InGpuInventoryScope("worker/model/model_test.cc"));
  EXPECT_FALSE(InGpuInventoryScope("kernels/permute/permute_bench.cu"));
  EXPECT_FALSE(InGpuInventoryScope("kernels/common/bench.h"));
  EXPECT_FALSE(InGpuInventoryScope("worker/model/README.md"));
  EXPECT_FALSE(InGpuInventoryScope("worker/daemon/daemon.cc"));
  EXPECT_FALSE(InGpuInventoryScope("tests/fakes/fake_nccl_cuda.cc"));
}

TEST(GpuBranchesCheckerTest, BlockRoundTrips) {
  const std::vector<DeviceSite> sites = {
      {"kernels/a.cc", 3, "#if", "#if SMOE_WITH_CUDA"},
      {"kernels/a.cc", 9, "branch", "if (x.is_cuda()) {"}};
  const std::string doc = absl::StrCat("# Title\n\ntext\n\n",
                                       RenderInventoryBlock(sites), "tail\n");
  EXPECT_EQ(ParseInventoryBlock(doc), Formatted(sites));
  EXPECT_TRUE(ParseInventoryBlock("no markers").empty());
}

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(GpuBranchesTest, DocListsEveryDeviceConditionalSite) {
  const char* root_env = std::getenv("SMOE_SOURCE_DIR");
  ASSERT_NE(root_env, nullptr) << "SMOE_SOURCE_DIR is set by CTest";
  const fs::path root(root_env);
  std::map<std::string, std::string> files;
  for (const char* dir : {"kernels", "worker/model", "worker/trainer"}) {
    for (const auto& e : fs::recursive_directory_iterator(root / dir)) {
      if (!e.is_regular_file()) continue;
      const std::string rel = fs::relative(e.path(), root).generic_string();
      if (InGpuInventoryScope(rel)) files[rel] = ReadFile(e.path());
    }
  }
  ASSERT_GT(files.size(), 20u);
  const std::vector<DeviceSite> sites = ScanFiles(files);
  const std::string doc_path = "docs/gpu-only-lines.md";
  const std::vector<std::string> listed =
      ParseInventoryBlock(ReadFile(root / doc_path));

  std::multiset<std::string> want, have(listed.begin(), listed.end());
  for (const DeviceSite& s : sites) want.insert(FormatSite(s));
  if (want == have) return;

  std::string added, removed;
  for (const DeviceSite& s : sites) {
    const std::string f = FormatSite(s);
    if (have.count(f) < want.count(f)) {
      absl::StrAppend(&added, "  + ", s.file, ":", s.line, ": ", f, "\n");
    }
  }
  for (const std::string& f : std::set<std::string>(have.begin(), have.end())) {
    if (want.count(f) < have.count(f))
      absl::StrAppend(&removed, "  - ", f, "\n");
  }
  ADD_FAILURE()
      << "The device-conditional code of kernels/, worker/model/ and "
         "worker/trainer/ differs from the list in "
      << doc_path
      << ".\nA new CPU/GPU branch must be a kernel launch, a cuBLAS or NCCL "
         "call (issue 13); say in the doc why it cannot run on the CPU, and "
         "re-run scripts/gpu-only-lines for the line list.\n"
      << (added.empty() ? "" : "New sites (file:line):\n") << added
      << (removed.empty() ? "" : "Sites gone or changed:\n") << removed
      << "\nReplace the block in " << doc_path << " with:\n\n"
      << RenderInventoryBlock(sites);
}

}  // namespace
}  // namespace smoe::quality
