// Copyright 2026 SMoE Lab authors.
#include "worker/daemon/journal.h"

#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "common/test_dir.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace smoe::worker {
namespace {

std::string NewPath() {
  return smoe::testing::NewTestDir("journal_test_") + "/journal.jsonl";
}

OutboxEntry Complete(const std::string& trial, double acc) {
  OutboxEntry e;
  e.type = OutboxEntry::Type::kComplete;
  e.complete.set_worker_id("w");
  e.complete.set_trial_id(trial);
  e.complete.set_attempt(1);
  (*e.complete.mutable_results())["acc"] = acc;
  return e;
}

TEST(OutboxTest, PersistsUnacknowledgedEntriesInOrder) {
  const std::string path = NewPath();
  {
    auto box = Outbox::Open(path);
    ASSERT_TRUE(box.ok()) << box.status();
    EXPECT_TRUE((*box)->empty());
    ASSERT_TRUE((*box)->Add(Complete("a", 1)).ok());
    OutboxEntry m;
    m.type = OutboxEntry::Type::kMetrics;
    m.metrics.set_trial_id("b");
    m.metrics.add_metrics()->set_name("train/loss");
    ASSERT_TRUE((*box)->Add(m).ok());
    OutboxEntry f;
    f.type = OutboxEntry::Type::kFail;
    f.fail.set_trial_id("c");
    f.fail.set_reason(v1::FailRequest::REASON_PREEMPTED);
    ASSERT_TRUE((*box)->Add(f).ok());
    ASSERT_TRUE((*box)->PopFront().ok());  // "a" acknowledged
  }
  auto box = Outbox::Open(path);
  ASSERT_TRUE(box.ok());
  ASSERT_EQ((*box)->size(), 2u);
  EXPECT_EQ((*box)->front().type, OutboxEntry::Type::kMetrics);
  EXPECT_EQ((*box)->front().trial_id(), "b");
  EXPECT_EQ((*box)->front().metrics.metrics(0).name(), "train/loss");
  EXPECT_EQ((*box)->entries()[1].fail.reason(),
            v1::FailRequest::REASON_PREEMPTED);
  // New ids continue after the loaded ones.
  ASSERT_TRUE((*box)->Add(Complete("d", 2)).ok());
  EXPECT_GT((*box)->entries()[2].id, (*box)->entries()[1].id);
}

TEST(OutboxTest, EmptyQueueTruncatesTheFile) {
  const std::string path = NewPath();
  auto box = Outbox::Open(path);
  ASSERT_TRUE(box.ok());
  ASSERT_TRUE((*box)->Add(Complete("a", 1)).ok());
  ASSERT_TRUE((*box)->PopFront().ok());
  std::ifstream in(path);
  std::string content((std::istreambuf_iterator<char>(in)),
                      std::istreambuf_iterator<char>());
  EXPECT_TRUE(content.empty());
}

TEST(OutboxTest, SkipsTornAndGarbageLines) {
  const std::string path = NewPath();
  {
    auto box = Outbox::Open(path);
    ASSERT_TRUE(box.ok());
    ASSERT_TRUE((*box)->Add(Complete("a", 0.5)).ok());
  }
  {
    std::ofstream out(path, std::ios::app);
    out << "not json\n{\"op\":\"add\",\"id\":9,\"type\":\"complete\",\"da";
  }
  auto box = Outbox::Open(path);
  ASSERT_TRUE(box.ok()) << box.status();
  ASSERT_EQ((*box)->size(), 1u);
  EXPECT_DOUBLE_EQ((*box)->front().complete.results().at("acc"), 0.5);
}

// Issue 36 item 1: a report with bytes that are not UTF-8 in a string field
// is journaled with them replaced, and one an older daemon journaled raw
// (protobuf refuses to parse it: "skipping malformed entry", the result
// lost) is read back with them replaced.
TEST(OutboxTest, NonUtf8StringsAreReplacedNotLost) {
  const std::string path = NewPath();
  OutboxEntry e = Complete("a", 0.5);
  e.complete.mutable_log()->set_text("caf\xE9\n");
  {
    std::ofstream out(path);
    out << R"({"op":"add","id":4,"type":"complete","trial_id":"a",)"
        << R"("attempt":1,"data":")"
        << absl::Base64Escape(e.complete.SerializeAsString()) << "\"}\n";
  }
  {
    auto box = Outbox::Open(path);
    ASSERT_TRUE(box.ok()) << box.status();
    ASSERT_EQ((*box)->size(), 1u);
    EXPECT_EQ((*box)->front().complete.log().text(), "caf\xEF\xBF\xBD\n");
    EXPECT_DOUBLE_EQ((*box)->front().complete.results().at("acc"), 0.5);
    ASSERT_TRUE((*box)->Add(e).ok());
    EXPECT_EQ((*box)->entries().back().complete.log().text(),
              "caf\xEF\xBF\xBD\n");
    // Replacing the front keeps its id and place, also after a restart.
    OutboxEntry smaller = (*box)->front();
    smaller.complete.clear_log();
    ASSERT_TRUE((*box)->ReplaceFront(smaller).ok());
  }
  auto box = Outbox::Open(path);
  ASSERT_TRUE(box.ok()) << box.status();
  ASSERT_EQ((*box)->size(), 2u);
  EXPECT_EQ((*box)->front().id, 4u);
  EXPECT_FALSE((*box)->front().complete.has_log());
  EXPECT_TRUE((*box)->entries().back().complete.has_log());
}

// Issue 36: a write the disk refuses (here EFBIG past RLIMIT_FSIZE, as
// ENOSPC would be) leaves no torn bytes, keeps the report queued in memory,
// and Persist() journals it once writes succeed again.
TEST(OutboxTest, AFailedWriteIsCutOffAndTheEntryKeptInMemory) {
  const std::string path = NewPath();
  auto box = Outbox::Open(path);
  ASSERT_TRUE(box.ok()) << box.status();
  ASSERT_TRUE((*box)->Add(Complete("a", 1)).ok());
  const auto size = std::filesystem::file_size(path);
  rlimit old{};
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &old), 0);
  const sighandler_t old_handler = signal(SIGXFSZ, SIG_IGN);
  rlimit small = old;
  small.rlim_cur = size + 16;  // part of the next line fits
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &small), 0);
  const absl::Status failed = (*box)->Add(Complete("b", 2));
  const absl::Status behind = (*box)->Add(Complete("c", 3));
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &old), 0);
  signal(SIGXFSZ, old_handler);
  EXPECT_FALSE(failed.ok());
  EXPECT_THAT(std::string(failed.message()),
              ::testing::HasSubstr("cannot append to journal"));
  EXPECT_FALSE(behind.ok()) << "nothing newer is journaled first";
  EXPECT_EQ(std::filesystem::file_size(path), size) << "torn bytes cut off";
  EXPECT_EQ((*box)->size(), 3u);
  EXPECT_EQ((*box)->unjournaled(), 2u);
  // Delivered from memory: "a" acknowledged, then the disk takes writes.
  ASSERT_TRUE((*box)->PopFront().ok());
  ASSERT_TRUE((*box)->Persist().ok());
  EXPECT_EQ((*box)->unjournaled(), 0u);
  box->reset();
  auto reopened = Outbox::Open(path);
  ASSERT_TRUE(reopened.ok()) << reopened.status();
  ASSERT_EQ((*reopened)->size(), 2u);
  EXPECT_EQ((*reopened)->front().trial_id(), "b");
  EXPECT_EQ((*reopened)->entries()[1].trial_id(), "c");
}

TEST(OutboxTest, UnwritableDirectoryIsAnError) {
  EXPECT_FALSE(Outbox::Open("/nonexistent-dir/journal.jsonl").ok());
}

}  // namespace
}  // namespace smoe::worker
