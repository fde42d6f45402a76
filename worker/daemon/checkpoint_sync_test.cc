// Copyright 2026 SMoE Lab authors.
#include "worker/daemon/checkpoint_sync.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include "absl/synchronization/mutex.h"
#include "common/blob_file.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace smoe::worker {
namespace {

namespace fs = std::filesystem;

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A coordinator that keeps checkpoints in memory; `corrupt_steps` are served
// with bytes that do not match their header (corruption in transit).
class BlobGateway : public GatewayClient {
 public:
  absl::StatusOr<v1::RegisterResponse> Register(
      const v1::RegisterRequest&) override {
    return v1::RegisterResponse();
  }
  absl::StatusOr<v1::LeaseResponse> Lease(const v1::LeaseRequest&) override {
    return v1::LeaseResponse();
  }
  absl::StatusOr<v1::HeartbeatResponse> Heartbeat(
      const v1::HeartbeatRequest&) override {
    return v1::HeartbeatResponse();
  }
  absl::StatusOr<v1::ReportMetricsResponse> ReportMetrics(
      const v1::ReportMetricsRequest&) override {
    return v1::ReportMetricsResponse();
  }
  absl::StatusOr<v1::CompleteResponse> Complete(
      const v1::CompleteRequest&) override {
    return v1::CompleteResponse();
  }
  absl::StatusOr<v1::FailResponse> Fail(const v1::FailRequest&) override {
    return v1::FailResponse();
  }
  absl::StatusOr<v1::PutCheckpointResponse> PutCheckpoint(
      const v1::CheckpointChunk& header, const std::string& path,
      const std::atomic<bool>*) override {
    absl::MutexLock lock(&mu);
    const std::string data = ReadAll(path);
    if (static_cast<int64_t>(data.size()) > cap) {
      return absl::ResourceExhaustedError("over the cap");
    }
    if (Sha256Hex(data) != header.sha256()) {
      return absl::DataLossError("sha mismatch");
    }
    blobs[header.step()] = {header, data};
    return v1::PutCheckpointResponse();
  }
  absl::StatusOr<v1::CheckpointChunk> GetCheckpoint(
      const v1::GetCheckpointRequest& req, const std::string& dest) override {
    absl::MutexLock lock(&mu);
    for (auto it = blobs.rbegin(); it != blobs.rend(); ++it) {
      if (req.before_step() > 0 && it->first >= req.before_step()) continue;
      std::string data = it->second.second;
      if (corrupt_steps.count(it->first)) data[0] ^= 1;
      std::ofstream(dest, std::ios::binary | std::ios::trunc) << data;
      return it->second.first;
    }
    return absl::NotFoundError("none");
  }

  absl::Mutex mu;
  std::map<int64_t, std::pair<v1::CheckpointChunk, std::string>> blobs;
  std::set<int64_t> corrupt_steps;
  int64_t cap = 1 << 20;
};

class CheckpointSyncTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("smoe-ckpt-sync-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_ / "a");
    fs::create_directories(root_ / "b");
    fs::create_directories(root_ / "shared");
    lease_.set_trial_id("s/0123456789abcdef");
    lease_.set_attempt(1);
  }
  void TearDown() override { fs::remove_all(root_); }
  std::string A() const { return (root_ / "a").string(); }
  std::string B() const { return (root_ / "b").string(); }
  void Write(const std::string& dir, const std::string& text) {
    std::ofstream(dir + "/checkpoint.json", std::ios::trunc) << text;
  }

  fs::path root_;
  v1::TrialLease lease_;
  BlobGateway gw_;
};

TEST_F(CheckpointSyncTest, UploadsTheNewestAndRestoresItElsewhere) {
  {
    CheckpointUploader up(&gw_);
    Write(A(), "step 5");
    ASSERT_TRUE(up.Snapshot("w", lease_, A(), 5, "checkpoint.json").ok());
    ASSERT_TRUE(up.WaitIdle(lease_.trial_id(), absl::Seconds(10)));
    Write(A(), "step 10");
    ASSERT_TRUE(up.Snapshot("w", lease_, A(), 10, "checkpoint.json").ok());
    ASSERT_TRUE(up.WaitIdle(lease_.trial_id(), absl::Seconds(10)));
    auto notes = up.TakeNotes();
    ASSERT_EQ(notes.size(), 2u);
    EXPECT_EQ(notes[1].name, "checkpoint/uploaded");
    EXPECT_EQ(notes[1].step, 10);
    EXPECT_TRUE(
        absl::IsNotFound(up.Snapshot("w", lease_, A(), 11, "missing.bin")));
    EXPECT_TRUE(
        absl::IsInvalidArgument(up.Snapshot("w", lease_, A(), 11, "../x")));
  }
  EXPECT_EQ(gw_.blobs.at(10).second, "step 10");
  EXPECT_EQ(gw_.blobs.at(10).first.file_name(), "checkpoint.json");
  EXPECT_FALSE(fs::exists(A() + "/.upload/10-checkpoint.json"))
      << "snapshots are removed once sent";
  EXPECT_EQ(ReadLocalCheckpoint(A())->step, 10);

  lease_.set_attempt(2);
  lease_.set_checkpoint_step(10);
  auto notes = RestoreCheckpoint(&gw_, "w2", lease_, B());
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0].name, "checkpoint/downloaded");
  EXPECT_EQ(notes[0].step, 10);
  EXPECT_EQ(ReadAll(B() + "/checkpoint.json"), "step 10");
  EXPECT_EQ(ReadLocalCheckpoint(B())->step, 10);
  // Already as new here: nothing is downloaded.
  EXPECT_TRUE(RestoreCheckpoint(&gw_, "w2", lease_, B()).empty());
}

TEST_F(CheckpointSyncTest, CorruptDownloadIsSetAsideAndThePreviousUsed) {
  CheckpointUploader up(&gw_);
  for (int step : {5, 10}) {
    Write(A(), "step " + std::to_string(step));
    ASSERT_TRUE(up.Snapshot("w", lease_, A(), step, "checkpoint.json").ok());
    ASSERT_TRUE(up.WaitIdle(lease_.trial_id(), absl::Seconds(10)));
  }
  gw_.corrupt_steps = {10};
  lease_.set_checkpoint_step(10);
  auto notes = RestoreCheckpoint(&gw_, "w2", lease_, B());
  ASSERT_EQ(notes.size(), 2u);
  EXPECT_EQ(notes[0].name, "checkpoint/download_corrupt");
  EXPECT_EQ(notes[0].step, 10);
  EXPECT_EQ(notes[1].name, "checkpoint/downloaded");
  EXPECT_EQ(notes[1].step, 5);
  EXPECT_EQ(ReadAll(B() + "/checkpoint.json"), "step 5");
  int aside = 0;
  for (const auto& e : fs::directory_iterator(B())) {
    aside += e.path().filename().string().find(".download.corrupt-") == 0;
  }
  EXPECT_EQ(aside, 1) << "the bad download is kept aside";
  // Both bad: nothing placed, both reported.
  fs::remove_all(root_ / "b");
  fs::create_directories(root_ / "b");
  gw_.corrupt_steps = {5, 10};
  notes = RestoreCheckpoint(&gw_, "w2", lease_, B());
  ASSERT_EQ(notes.size(), 2u);
  EXPECT_EQ(notes[1].name, "checkpoint/download_corrupt");
  EXPECT_EQ(notes[1].step, 5);
  EXPECT_FALSE(fs::exists(B() + "/checkpoint.json"));
}

TEST_F(CheckpointSyncTest, RefusalOverTheCapIsNotedWithTheSize) {
  gw_.cap = 4;
  CheckpointUploader up(&gw_);
  Write(A(), "0123456789");
  ASSERT_TRUE(up.Snapshot("w", lease_, A(), 5, "checkpoint.json").ok());
  ASSERT_TRUE(up.WaitIdle(lease_.trial_id(), absl::Seconds(10)));
  auto notes = up.TakeNotes();
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0].name, "checkpoint/upload_refused");
  EXPECT_EQ(notes[0].value, 10);
  EXPECT_TRUE(gw_.blobs.empty());
}

TEST_F(CheckpointSyncTest, SharedDirectoryModeCopiesAndVerifies) {
  const std::string shared = (root_ / "shared").string();
  {
    CheckpointUploader up(&gw_, shared);
    for (int step : {5, 10, 15}) {
      Write(A(), "step " + std::to_string(step));
      ASSERT_TRUE(up.Snapshot("w", lease_, A(), step, "checkpoint.json").ok());
      ASSERT_TRUE(up.WaitIdle(lease_.trial_id(), absl::Seconds(10)));
    }
  }
  EXPECT_TRUE(gw_.blobs.empty()) << "nothing through the coordinator";
  const std::string d = SharedTrialDir(shared, lease_.trial_id());
  EXPECT_TRUE(fs::exists(d + "/15-checkpoint.json.sha256"));
  EXPECT_TRUE(fs::exists(d + "/10-checkpoint.json"));
  EXPECT_FALSE(fs::exists(d + "/5-checkpoint.json")) << "newest two kept";
  // The newest is damaged on the volume: set aside, the previous one used.
  std::ofstream(d + "/15-checkpoint.json", std::ios::trunc) << "step 99";
  auto notes = RestoreSharedCheckpoint(shared, lease_, B());
  ASSERT_EQ(notes.size(), 2u);
  EXPECT_EQ(notes[0].name, "checkpoint/download_corrupt");
  EXPECT_EQ(notes[1].name, "checkpoint/downloaded");
  EXPECT_EQ(notes[1].step, 10);
  EXPECT_EQ(ReadAll(B() + "/checkpoint.json"), "step 10");
}

}  // namespace
}  // namespace smoe::worker
