// Copyright 2026 SMoE Lab authors.
#include "coordinator/checkpoint_store.h"

#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/blob_file.h"
#include "coordinator/artifacts.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "store/sqlite_store.h"
#include "store/store_test_util.h"

namespace smoe::coordinator {
namespace {

namespace fs = std::filesystem;
using ::smoe::store::testing::MakeSweep;
using ::smoe::store::testing::MakeTrial;
using ::smoe::store::testing::ScopedTempDir;
using ::testing::HasSubstr;

class CheckpointStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = store::SqliteStore::Open(dir_.File("smoe.db"), {});
    ASSERT_TRUE(s.ok()) << s.status();
    db_ = *std::move(s);
    store::WriteBatch b;
    b.sweeps.push_back(MakeSweep("s"));
    b.trials.push_back(MakeTrial("s", 0));
    b.trials.push_back(MakeTrial("s", 1));
    b.trials[0].state = store::TrialState::kRunning;
    ASSERT_TRUE(db_->Commit(b).ok());
    t0_ = b.trials[0];
    t1_ = b.trials[1];
    Reopen();
  }
  void Reopen(int64_t max_blob = 1 << 20, int64_t max_total = 8 << 20) {
    cs_.reset();
    CheckpointStoreOptions o;
    o.keeps_final = keeps_final_;
    o.dir = dir_.File("checkpoints");
    o.max_blob_bytes = max_blob;
    o.max_total_bytes = max_total;
    o.min_free_bytes = 0;
    o.keep_failed = keep_failed_;
    o.now = [this] { return now_; };
    auto c = CheckpointStore::Open(db_.get(), o);
    ASSERT_TRUE(c.ok()) << c.status();
    cs_ = *std::move(c);
  }
  store::CheckpointRecord Header(const std::string& trial, int64_t step,
                                 const std::string& data) {
    store::CheckpointRecord h;
    h.trial_id = trial;
    h.step = step;
    h.file_name = "checkpoint.smoeckpt";
    h.bytes = static_cast<int64_t>(data.size());
    h.sha256 = Sha256Hex(data);
    h.attempt = 1;
    h.worker_id = "w";
    return h;
  }
  absl::Status Put(const std::string& trial, int64_t step,
                   const std::string& data) {
    auto up = cs_->BeginUpload(Header(trial, step, data));
    if (!up.ok()) return up.status();
    for (size_t i = 0; i < data.size(); i += 7) {
      absl::Status s = (*up)->Append(absl::string_view(data).substr(i, 7));
      if (!s.ok()) return s;
    }
    return (*up)->Finish().status();
  }
  absl::StatusOr<std::string> Get(const store::CheckpointRecord& c) {
    std::string out;
    absl::Status s = cs_->Read(c, [&](absl::string_view d) {
      out.append(d.data(), d.size());
      return true;
    });
    if (!s.ok()) return s;
    return out;
  }
  int FilesIn(const std::string& trial) {
    int n = 0;
    std::error_code ec;
    const std::string d = dir_.File("checkpoints/") + trial.substr(0, 1) + "_" +
                          trial.substr(trial.find('/') + 1);
    for (auto& e : fs::directory_iterator(d, ec)) {
      (void)e;
      ++n;
    }
    return n;
  }

  ScopedTempDir dir_;
  std::unique_ptr<store::SqliteStore> db_;
  std::unique_ptr<CheckpointStore> cs_;
  store::TrialRecord t0_, t1_;
  absl::Duration keep_failed_ = absl::Hours(24);
  std::function<bool(const std::string&)> keeps_final_;
  absl::Time now_ = absl::FromUnixSeconds(1'800'000'000);
};

TEST_F(CheckpointStoreTest, UploadsRoundTripAndTheNewestTwoAreKept) {
  ASSERT_TRUE(Put(t0_.trial_id, 5, "five").ok());
  ASSERT_TRUE(Put(t0_.trial_id, 10, "ten ten").ok());
  ASSERT_TRUE(Put(t0_.trial_id, 15, "fifteen!").ok());
  auto latest = cs_->Latest(t0_.trial_id);
  ASSERT_TRUE(latest.has_value());
  EXPECT_EQ(latest->step, 15);
  EXPECT_EQ(*Get(*latest), "fifteen!");
  auto prev = cs_->Latest(t0_.trial_id, 15);
  ASSERT_TRUE(prev.has_value());
  EXPECT_EQ(prev->step, 10);
  EXPECT_FALSE(cs_->Latest(t0_.trial_id, 10).has_value()) << "step 5 dropped";
  EXPECT_EQ(cs_->List(t0_.trial_id).size(), 2u);
  EXPECT_EQ(FilesIn(t0_.trial_id), 2);
  EXPECT_EQ(db_->ListCheckpoints(t0_.trial_id)->size(), 2u);
  EXPECT_EQ(cs_->total_bytes(), 7 + 8);
  // Survives a restart.
  Reopen();
  EXPECT_EQ(cs_->Latest(t0_.trial_id)->step, 15);
  EXPECT_EQ(cs_->total_bytes(), 7 + 8);
  // Listed as artifacts, with the result.json only once succeeded.
  auto arts = ListArtifacts(db_.get(), cs_.get(), t0_.trial_id);
  ASSERT_TRUE(arts.ok()) << arts.status();
  ASSERT_EQ(arts->size(), 2u);
  EXPECT_EQ((*arts)[1].name, "checkpoint-15-checkpoint.smoeckpt");
  EXPECT_EQ((*arts)[1].sha256, Sha256Hex("fifteen!"));
}

TEST_F(CheckpointStoreTest, OversizedAndMismatchedUploadsAreRefused) {
  const std::string big((1 << 20) + 1, 'x');
  absl::Status s = Put(t0_.trial_id, 1, big);
  EXPECT_TRUE(absl::IsResourceExhausted(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr("1048577 bytes"));
  EXPECT_THAT(s.message(), HasSubstr("--checkpoint-max-bytes of 1048576"));
  // Header says one thing, the bytes another: nothing becomes visible.
  auto up = cs_->BeginUpload(Header(t0_.trial_id, 2, "abcd"));
  ASSERT_TRUE(up.ok());
  ASSERT_TRUE((*up)->Append("abce").ok());
  s = (*up)->Finish().status();
  EXPECT_TRUE(absl::IsDataLoss(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr("SHA-256"));
  up->reset();
  auto shorter = cs_->BeginUpload(Header(t0_.trial_id, 3, "abcd"));
  ASSERT_TRUE((*shorter)->Append("ab").ok());
  EXPECT_TRUE(absl::IsDataLoss((*shorter)->Finish().status()));
  EXPECT_TRUE(absl::IsDataLoss((*shorter)->Append("abcdef")));
  shorter->reset();
  EXPECT_FALSE(cs_->Latest(t0_.trial_id).has_value());
  EXPECT_EQ(FilesIn(t0_.trial_id), 0) << "no .part left behind";
  EXPECT_EQ(cs_->total_bytes(), 0);
  // Bad header fields are named.
  store::CheckpointRecord h = Header(t0_.trial_id, 1, "x");
  h.file_name = "../etc";
  EXPECT_THAT(cs_->BeginUpload(h).status().message(), HasSubstr("file_name"));
  // The total cap.
  Reopen(1 << 20, 10);
  ASSERT_TRUE(Put(t0_.trial_id, 1, "123456").ok());
  s = Put(t1_.trial_id, 1, "123456");
  EXPECT_TRUE(absl::IsResourceExhausted(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr("--checkpoint-store-bytes"));
}

TEST_F(CheckpointStoreTest, CorruptBlobIsSetAsideOnReadAndThePreviousServed) {
  ASSERT_TRUE(Put(t0_.trial_id, 5, "previous").ok());
  ASSERT_TRUE(Put(t0_.trial_id, 10, "latest!!").ok());
  auto latest = cs_->Latest(t0_.trial_id);
  {
    std::fstream f(cs_->BlobPath(*latest),
                   std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(3);
    f.put('X');
  }
  auto got = Get(*latest);
  EXPECT_TRUE(absl::IsDataLoss(got.status())) << got.status();
  EXPECT_THAT(got.status().message(), HasSubstr("set aside"));
  EXPECT_FALSE(fs::exists(cs_->BlobPath(*latest)));
  auto now = cs_->Latest(t0_.trial_id);
  ASSERT_TRUE(now.has_value());
  EXPECT_EQ(now->step, 5);
  EXPECT_EQ(*Get(*now), "previous");
  EXPECT_EQ(db_->ListCheckpoints(t0_.trial_id)->size(), 1u);
}

TEST_F(CheckpointStoreTest, CrashDebrisIsRemovedAtOpen) {
  ASSERT_TRUE(Put(t0_.trial_id, 5, "kept").ok());
  const std::string d = DirName(cs_->BlobPath(*cs_->Latest(t0_.trial_id)));
  std::ofstream(d + "/7.3.part") << "half";
  std::ofstream(d + "/8.blob") << "no row";  // crash before the commit
  Reopen();
  EXPECT_FALSE(fs::exists(d + "/7.3.part"));
  EXPECT_FALSE(fs::exists(d + "/8.blob"));
  EXPECT_EQ(*Get(*cs_->Latest(t0_.trial_id)), "kept");
  // A row whose blob vanished is forgotten.
  fs::remove(cs_->BlobPath(*cs_->Latest(t0_.trial_id)));
  Reopen();
  EXPECT_FALSE(cs_->Latest(t0_.trial_id).has_value());
  EXPECT_TRUE(db_->ListCheckpoints(t0_.trial_id)->empty());
}

TEST_F(CheckpointStoreTest, GarbageCollectionFollowsTheTrialState) {
  EXPECT_TRUE(TrialStateKeepsCheckpoints(store::TrialState::kPending));
  EXPECT_TRUE(TrialStateKeepsCheckpoints(store::TrialState::kRunning));
  EXPECT_FALSE(TrialStateKeepsCheckpoints(store::TrialState::kSucceeded));
  EXPECT_FALSE(TrialStateKeepsCheckpoints(store::TrialState::kFailed));
  EXPECT_FALSE(TrialStateKeepsCheckpoints(store::TrialState::kCancelled));
  ASSERT_TRUE(Put(t0_.trial_id, 5, "a").ok());
  ASSERT_TRUE(Put(t1_.trial_id, 5, "b").ok());
  EXPECT_EQ(*cs_->CollectGarbage(), 0);
  store::TrialRecord done = t0_;
  done.state = store::TrialState::kSucceeded;
  store::WriteBatch b;
  b.trials.push_back(done);
  ASSERT_TRUE(db_->Commit(b).ok());
  EXPECT_EQ(*cs_->CollectGarbage(), 1);
  EXPECT_FALSE(cs_->Latest(t0_.trial_id).has_value());
  EXPECT_TRUE(db_->ListCheckpoints(t0_.trial_id)->empty());
  EXPECT_FALSE(fs::exists(DirName(cs_->BlobPath(Header(t0_.trial_id, 5, "")))));
  EXPECT_TRUE(cs_->Latest(t1_.trial_id).has_value()) << "pending: kept";
  EXPECT_EQ(cs_->total_bytes(), 1);
}

// keep_final_checkpoint (issue 31 item 8): a succeeded trial of such a sweep
// keeps its newest blob (the final checkpoint) and nothing older; other
// sweeps' succeeded trials are collected as before.
TEST_F(CheckpointStoreTest,
       SucceededTrialsOfKeepFinalSweepsKeepTheirNewestBlob) {
  std::vector<std::string> asked;
  keeps_final_ = [&asked](const std::string& sweep_id) {
    asked.push_back(sweep_id);
    return sweep_id == "s";
  };
  Reopen();
  ASSERT_TRUE(Put(t0_.trial_id, 5, "a").ok());
  ASSERT_TRUE(Put(t0_.trial_id, 10, "final").ok());
  store::TrialRecord done = t0_;
  done.state = store::TrialState::kSucceeded;
  store::WriteBatch b;
  b.trials.push_back(done);
  ASSERT_TRUE(db_->Commit(b).ok());
  EXPECT_EQ(*cs_->CollectGarbage(), 0);
  EXPECT_THAT(asked, ::testing::Contains("s"));
  auto kept = db_->ListCheckpoints(t0_.trial_id);
  ASSERT_TRUE(kept.ok());
  ASSERT_EQ(kept->size(), 1u);
  EXPECT_EQ((*kept)[0].step, 10);
  EXPECT_EQ(*Get((*kept)[0]), "final");
  EXPECT_EQ(FilesIn(t0_.trial_id), 1);
  // Again: nothing more goes.
  EXPECT_EQ(*cs_->CollectGarbage(), 0);
  EXPECT_EQ(cs_->Latest(t0_.trial_id)->step, 10);
  // Without the option the same trial's blobs are collected.
  keeps_final_ = [](const std::string&) { return false; };
  Reopen();
  EXPECT_EQ(*cs_->CollectGarbage(), 1);
  EXPECT_FALSE(cs_->Latest(t0_.trial_id).has_value());
}

// A failed trial keeps its blobs for keep_failed after it failed (a retry
// resumes from them), then GC collects them; zero collects at once.
TEST_F(CheckpointStoreTest, FailedTrialsKeepTheirCheckpointsForTheGrace) {
  ASSERT_TRUE(Put(t0_.trial_id, 5, "a").ok());
  store::TrialRecord failed = t0_;
  failed.state = store::TrialState::kFailed;
  failed.updated_at = now_;
  store::WriteBatch b;
  b.trials.push_back(failed);
  ASSERT_TRUE(db_->Commit(b).ok());
  now_ = failed.updated_at + absl::Hours(23);
  EXPECT_EQ(*cs_->CollectGarbage(), 0);
  ASSERT_TRUE(cs_->Latest(t0_.trial_id).has_value()) << "kept for a retry";
  now_ = failed.updated_at + absl::Hours(24);
  EXPECT_EQ(*cs_->CollectGarbage(), 1);
  EXPECT_FALSE(cs_->Latest(t0_.trial_id).has_value());
  EXPECT_TRUE(db_->ListCheckpoints(t0_.trial_id)->empty());
  // --checkpoint-keep-failed 0: collected as soon as it failed.
  keep_failed_ = absl::ZeroDuration();
  Reopen();
  store::TrialRecord other = t1_;
  ASSERT_TRUE(Put(t1_.trial_id, 5, "b").ok());
  other.state = store::TrialState::kFailed;
  other.updated_at = now_;
  store::WriteBatch b2;
  b2.trials.push_back(other);
  ASSERT_TRUE(db_->Commit(b2).ok());
  EXPECT_EQ(*cs_->CollectGarbage(), 1);
  EXPECT_FALSE(cs_->Latest(t1_.trial_id).has_value());
}

// A full store evicts the checkpoints kept only for a failed trial's retry
// (longest-failed first) before it refuses a running trial's upload; it
// never evicts a pending or running trial's.
TEST_F(CheckpointStoreTest, FullStoreEvictsKeptFailedCheckpointsFirst) {
  Reopen(/*max_blob=*/64, /*max_total=*/20);
  store::WriteBatch b;
  b.trials.push_back(MakeTrial("s", 2));
  b.trials.push_back(MakeTrial("s", 3));
  ASSERT_TRUE(db_->Commit(b).ok());
  const std::string t2 = b.trials[0].trial_id, t3 = b.trials[1].trial_id;
  ASSERT_TRUE(Put(t2, 5, "22222").ok());
  ASSERT_TRUE(Put(t3, 5, "33333").ok());
  ASSERT_TRUE(Put(t1_.trial_id, 5, "11111").ok());  // pending: never evicted
  store::TrialRecord f2 = *db_->GetTrial(t2), f3 = *db_->GetTrial(t3);
  f2.state = f3.state = store::TrialState::kFailed;
  f3.updated_at = now_ - absl::Hours(2);  // t3 failed first
  f2.updated_at = now_ - absl::Hours(1);
  store::WriteBatch failed;
  failed.trials = {f2, f3};
  ASSERT_TRUE(db_->Commit(failed).ok());
  EXPECT_EQ(*cs_->CollectGarbage(), 0) << "both within the grace";
  // 15 of 20 bytes used: a 9-byte upload needs one failed trial evicted.
  ASSERT_TRUE(Put(t0_.trial_id, 5, "000000000").ok());
  EXPECT_FALSE(cs_->Latest(t3).has_value()) << "longest-failed evicted";
  EXPECT_TRUE(cs_->Latest(t2).has_value());
  EXPECT_TRUE(cs_->Latest(t1_.trial_id).has_value());
  EXPECT_EQ(cs_->total_bytes(), 5 + 5 + 9);
  // Nothing more to evict but the pending and running trials': refused.
  absl::Status s = Put(t0_.trial_id, 10, "0123456789");
  EXPECT_FALSE(cs_->Latest(t2).has_value()) << "evicted trying";
  EXPECT_TRUE(absl::IsResourceExhausted(s)) << s;
  EXPECT_TRUE(cs_->Latest(t1_.trial_id).has_value());
  EXPECT_EQ(cs_->Latest(t0_.trial_id)->step, 5);
}

// Sweep "s" and a sweep "s_x" whose trial directories share the prefix
// "s_": deleting "s" removes only its own.
TEST_F(CheckpointStoreTest, DeletingASweepRemovesItsBlobsOnly) {
  store::WriteBatch b;
  b.sweeps.push_back(MakeSweep("s_x"));
  b.trials.push_back(MakeTrial("s_x", 0));
  b.trials[0].state = store::TrialState::kRunning;
  ASSERT_TRUE(db_->Commit(b).ok());
  const std::string other = b.trials[0].trial_id;
  ASSERT_TRUE(Put(t0_.trial_id, 5, "aa").ok());
  ASSERT_TRUE(Put(t0_.trial_id, 6, "bbb").ok());
  ASSERT_TRUE(Put(t1_.trial_id, 5, "c").ok());
  ASSERT_TRUE(Put(other, 5, "dddd").ok());
  const std::string d0 = DirName(cs_->BlobPath(*cs_->Latest(t0_.trial_id)));
  const std::string d1 = DirName(cs_->BlobPath(*cs_->Latest(t1_.trial_id)));
  store::WriteBatch del;
  del.deleted_sweeps = {"s"};
  ASSERT_TRUE(db_->Commit(del).ok());
  EXPECT_EQ(cs_->DropSweep("s"), 3);
  EXPECT_FALSE(fs::exists(d0));
  EXPECT_FALSE(fs::exists(d1));
  EXPECT_FALSE(cs_->Latest(t0_.trial_id).has_value());
  EXPECT_TRUE(cs_->List(t1_.trial_id).empty());
  EXPECT_EQ(*Get(*cs_->Latest(other)), "dddd");
  EXPECT_EQ(cs_->total_bytes(), 4);
  EXPECT_EQ(cs_->DropSweep("s"), 0);  // nothing left: a no-op
}

// A crash after the delete committed and before DropSweep: the blobs are
// removed when the coordinator starts again, the directories by the next
// garbage collection; no row is left to serve.
TEST_F(CheckpointStoreTest, BlobsOfASweepDeletedBeforeACrashGoAtStartUp) {
  ASSERT_TRUE(Put(t0_.trial_id, 5, "aa").ok());
  const std::string blob = cs_->BlobPath(*cs_->Latest(t0_.trial_id));
  store::WriteBatch del;
  del.deleted_sweeps = {"s"};
  ASSERT_TRUE(db_->Commit(del).ok());
  Reopen();  // the restart
  EXPECT_FALSE(fs::exists(blob));
  EXPECT_FALSE(cs_->Latest(t0_.trial_id).has_value());
  EXPECT_EQ(cs_->total_bytes(), 0);
  EXPECT_TRUE(fs::exists(DirName(blob)));
  EXPECT_GE(*cs_->CollectGarbage(), 1);
  EXPECT_FALSE(fs::exists(DirName(blob)));
}

}  // namespace
}  // namespace smoe::coordinator
