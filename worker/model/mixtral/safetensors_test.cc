// Copyright 2026 SMoE Lab authors.
#include "worker/model/mixtral/safetensors.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

namespace smoe::model::mixtral {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

class SafetensorsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("smoe_st_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Writes 8-byte length + `header` + `data` verbatim.
  std::string WriteRaw(const std::string& header, const std::string& data,
                       uint64_t len_override = 0) {
    const std::string path = (dir_ / "raw.safetensors").string();
    std::ofstream out(path, std::ios::binary);
    const uint64_t len = len_override ? len_override : header.size();
    out.write(reinterpret_cast<const char*>(&len), 8);
    out << header << data;
    return path;
  }

  absl::Status OpenError(const std::string& path) {
    auto f = SafetensorsFile::Open(path);
    return f.ok() ? absl::OkStatus() : f.status();
  }

  fs::path dir_;
};

TEST_F(SafetensorsTest, RoundTripAllDtypes) {
  torch::manual_seed(3);
  // Values exactly representable in bf16 and f16 (small integers / 8).
  const torch::Tensor base =
      torch::randint(-64, 64, {3, 5}).to(torch::kFloat32) / 8;
  const std::vector<std::pair<std::string, torch::Tensor>> tensors = {
      {"a.f32", torch::randn({4, 7})},
      {"b.bf16", base.to(torch::kBFloat16)},
      {"c.f16", base.to(torch::kFloat16)},
      {"d.empty", torch::zeros({0, 3})},
      {"e.scalar", torch::full({}, 2.5)},
      {"f.odd", torch::randn({3}).to(torch::kFloat16)},
  };
  const std::string path = (dir_ / "m.safetensors").string();
  ASSERT_TRUE(WriteSafetensors(path, tensors, {{"format", "pt"}}).ok());
  auto f = SafetensorsFile::Open(path);
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ((*f)->metadata().at("format"), "pt");
  EXPECT_EQ((*f)->entries().size(), tensors.size());
  EXPECT_EQ((*f)->entries().at("b.bf16").dtype, torch::kBFloat16);
  for (const auto& [name, t] : tensors) {
    auto same = (*f)->Read(name, torch::TensorOptions(t.scalar_type()));
    ASSERT_TRUE(same.ok()) << same.status();
    EXPECT_TRUE(torch::equal(*same, t)) << name;
    auto f32 = (*f)->Read(name, torch::kFloat32);
    ASSERT_TRUE(f32.ok());
    EXPECT_EQ(f32->scalar_type(), torch::kFloat32);
    EXPECT_TRUE(torch::equal(*f32, t.to(torch::kFloat32))) << name;
  }
  // The data buffer starts 8-byte aligned (header padded with spaces).
  uint64_t len = 0;
  std::ifstream in(path, std::ios::binary);
  in.read(reinterpret_cast<char*>(&len), 8);
  EXPECT_EQ(len % 8, 0u);
}

TEST_F(SafetensorsTest, UnalignedHeaderIsStillReadable) {
  // 4-byte float data behind a 2-byte-misaligned buffer start.
  const float v[2] = {1.5f, -2.0f};
  std::string header =
      R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  while ((8 + header.size()) % 4 != 2) header += " ";  // misalign the data
  ASSERT_NE((8 + header.size()) % 4, 0u);
  const std::string path =
      WriteRaw(header, std::string(reinterpret_cast<const char*>(v), 8));
  auto f = SafetensorsFile::Open(path);
  ASSERT_TRUE(f.ok()) << f.status();
  auto t = (*f)->Read("x", torch::kFloat32);
  ASSERT_TRUE(t.ok());
  EXPECT_TRUE(torch::equal(*t, torch::tensor({1.5f, -2.0f})));
}

TEST_F(SafetensorsTest, StreamingWriterChecksOrderShapeAndCompleteness) {
  const std::string path = (dir_ / "s.safetensors").string();
  auto w = SafetensorsWriter::Create(
      path, {{"x", torch::kBFloat16, {2, 2}}, {"y", torch::kFloat32, {3}}});
  ASSERT_TRUE(w.ok());
  EXPECT_THAT((*w)->Write("y", torch::zeros({3})).message(),
              HasSubstr("out of order"));
  EXPECT_THAT((*w)->Write("x", torch::zeros({3})).message(),
              HasSubstr("shape [3]"));
  ASSERT_TRUE((*w)->Write("x", torch::ones({2, 2})).ok());
  EXPECT_EQ((*w)->Close().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(SafetensorsWriter::Create(path, {{"z", torch::kInt64, {1}}})
                  .status()
                  .message(),
              HasSubstr("'z'"));
}

TEST_F(SafetensorsTest, CorruptFilesGiveClearErrors) {
  const std::string ok_entry =
      R"("x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})";
  const std::string data(8, '\0');
  struct Case {
    std::string name;
    std::string path;
    absl::StatusCode code;
    std::string want;
  };
  std::vector<Case> cases;
  // Each case writes its own file, then checks it immediately below.
  auto check = [&](const std::string& path, absl::StatusCode code,
                   const std::string& want) {
    const absl::Status s = OpenError(path);
    EXPECT_EQ(s.code(), code) << s;
    EXPECT_THAT(s.message(), HasSubstr(want));
    EXPECT_THAT(s.message(), HasSubstr(path));
  };
  check(WriteRaw("{" + ok_entry + "}", data, 1u << 20),
        absl::StatusCode::kDataLoss, "bad header length 1048576");
  {
    const std::string path = (dir_ / "short.safetensors").string();
    std::ofstream(path) << "abc";
    check(path, absl::StatusCode::kDataLoss, "truncated");
  }
  check(WriteRaw("{" + ok_entry, data), absl::StatusCode::kDataLoss,
        "not a JSON object");
  check(WriteRaw("{" + ok_entry + "}", data.substr(0, 5)),
        absl::StatusCode::kDataLoss, "out of range");
  check(WriteRaw(R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,12]}})",
                 std::string(12, '\0')),
        absl::StatusCode::kDataLoss, "needs 8");
  check(WriteRaw(R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                 R"("y":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                 data),
        absl::StatusCode::kDataLoss, "overlap");
  check(WriteRaw(R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[2,6]}})",
                 data),
        absl::StatusCode::kDataLoss, "misaligned");
  check(WriteRaw(R"({"x":{"dtype":"I64","shape":[1],"data_offsets":[0,8]}})",
                 data),
        absl::StatusCode::kInvalidArgument, "tensor 'x': dtype 'I64'");
  check(WriteRaw(R"({"x":{"dtype":"F32","shape":[2]}})", data),
        absl::StatusCode::kDataLoss, "data_offsets");
  check((dir_ / "absent.safetensors").string(), absl::StatusCode::kNotFound,
        "no such file");

  auto f = SafetensorsFile::Open(WriteRaw("{" + ok_entry + "}", data));
  ASSERT_TRUE(f.ok());
  const auto missing = (*f)->Read("nope", torch::kFloat32);
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr("missing tensor 'nope'"));
}

}  // namespace
}  // namespace smoe::model::mixtral
