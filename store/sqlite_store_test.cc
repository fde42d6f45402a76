// Copyright 2026 SMoE Lab authors.
//
// File: store/sqlite_store_test.cc
//
// SqliteStore behaviour beyond the shared contract: durability across reopen
// and SIGKILL, pragmas, migrations, corrupt files, concurrency.

#include "store/sqlite_store.h"

#include <signal.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "store/migrations.h"
#include "store/store_test_util.h"

namespace smoe::store {
namespace {

using ::smoe::store::testing::MakeAttempt;
using ::smoe::store::testing::MakeMetric;
using ::smoe::store::testing::MakeSweep;
using ::smoe::store::testing::MakeTrial;
using ::smoe::store::testing::ScopedTempDir;
using ::smoe::store::testing::Snapshot;
using ::smoe::store::testing::TrialId;
using ::smoe::store::testing::Value;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

std::unique_ptr<SqliteStore> MustOpen(const std::string& path,
                                      const SqliteOptions& options = {}) {
  auto store = SqliteStore::Open(path, options);
  EXPECT_TRUE(store.ok()) << store.status();
  return store.ok() ? std::move(*store) : nullptr;
}

// A batch touching every table.
WriteBatch FullBatch() {
  WriteBatch b;
  b.sweeps.push_back(MakeSweep("s"));
  for (int i = 0; i < 4; ++i) b.trials.push_back(MakeTrial("s", i));
  b.attempts.push_back(MakeAttempt(TrialId("s", 0), 1));
  b.metrics.push_back(MakeMetric(TrialId("s", 0), "loss", 1, 0.5));
  b.metrics.push_back(MakeMetric(TrialId("s", 0), "acc", 1, 0.25));
  WorkerRecord w;
  w.worker_id = "w1";
  w.labels = {{"zone", "a"}};
  w.kinds = {"sraven"};
  b.workers.push_back(w);
  b.results.push_back({TrialId("s", 0), 9.5, {{"acc", 0.75}}});
  return b;
}

TEST(SqliteStoreTest, ReopenPreservesEverything) {
  ScopedTempDir dir;
  const std::string path = dir.File("store.db");
  std::string before;
  {
    auto store = MustOpen(path);
    ASSERT_NE(store, nullptr);
    ASSERT_TRUE(store->Commit(FullBatch()).ok());
    before = Snapshot(*store);
  }
  auto store = MustOpen(path);
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(Snapshot(*store), before);
  EXPECT_THAT(before, HasSubstr("acc=0.75"));
}

TEST(SqliteStoreTest, PragmasAreSet) {
  ScopedTempDir dir;
  auto full = MustOpen(dir.File("full.db"));
  ASSERT_NE(full, nullptr);
  EXPECT_THAT(Value(full->DebugQuery("PRAGMA journal_mode")),
              ElementsAre("wal"));
  EXPECT_THAT(Value(full->DebugQuery("PRAGMA foreign_keys")), ElementsAre("1"));
  EXPECT_THAT(Value(full->DebugQuery("PRAGMA synchronous")),
              ElementsAre("2"));  // FULL
  EXPECT_THAT(Value(full->DebugQuery("PRAGMA busy_timeout")),
              ElementsAre("5000"));
  EXPECT_THAT(Value(full->DebugQuery("PRAGMA cache_size")),
              ElementsAre("-65536"));  // KiB

  SqliteOptions options;
  options.synchronous = SqliteOptions::Synchronous::kNormal;
  options.busy_timeout_ms = 250;
  auto normal = MustOpen(dir.File("normal.db"), options);
  ASSERT_NE(normal, nullptr);
  EXPECT_THAT(Value(normal->DebugQuery("PRAGMA synchronous")),
              ElementsAre("1"));  // NORMAL
  EXPECT_THAT(Value(normal->DebugQuery("PRAGMA busy_timeout")),
              ElementsAre("250"));
}

// A batch of more rows than the page cache holds (~1 KiB each) raises the
// cache for its transaction (large_commit_cache_max_kib), then sets it
// back; a failed one too. Nothing else changes: the rows are there.
TEST(SqliteStoreTest, ALargeCommitRaisesTheCacheForItsTransactionOnly) {
  ScopedTempDir dir;
  SqliteOptions options;
  options.cache_size_kib = 100;
  const std::string path = dir.File("large.db");
  auto store = MustOpen(path, options);
  ASSERT_NE(store, nullptr);
  WriteBatch b;
  b.sweeps.push_back(MakeSweep("s"));
  for (int i = 0; i < 2000; ++i) b.trials.push_back(MakeTrial("s", i));
  ASSERT_TRUE(store->Commit(b).ok());
  EXPECT_THAT(Value(store->DebugQuery("PRAGMA cache_size")),
              ElementsAre("-100"));
  EXPECT_EQ(Value(store->ListTrials("s")).size(), 2000u);
  // A failed large commit (a trial of a missing sweep): nothing written,
  // the cache back as well.
  WriteBatch bad;
  for (int i = 0; i < 2000; ++i) bad.trials.push_back(MakeTrial("t", i));
  EXPECT_FALSE(store->Commit(bad).ok());
  EXPECT_THAT(Value(store->DebugQuery("PRAGMA cache_size")),
              ElementsAre("-100"));
  EXPECT_EQ(Value(store->ListTrials("t")).size(), 0u);
  store.reset();
  auto again = MustOpen(path, options);
  ASSERT_NE(again, nullptr);
  EXPECT_EQ(Value(again->ListTrials("s")).size(), 2000u);
}

TEST(SqliteStoreTest, ForeignKeysBackTheExplicitChecks) {
  ScopedTempDir dir;
  auto store = MustOpen(dir.File("store.db"));
  ASSERT_NE(store, nullptr);
  // Bypassing Commit's checks, SQLite itself refuses an orphan.
  auto orphan = store->DebugQuery(
      "INSERT INTO attempts VALUES ('nope', 1, '', 'running', 0, '', 0, 0)");
  EXPECT_EQ(orphan.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(orphan.status().message(), HasSubstr("FOREIGN KEY"));
}

TEST(SqliteStoreTest, MigrationsAreNumberedWithoutGaps) {
  const auto& migrations = Migrations();
  ASSERT_FALSE(migrations.empty());
  for (size_t i = 0; i < migrations.size(); ++i) {
    EXPECT_EQ(migrations[i].version, static_cast<int>(i) + 1);
  }
  EXPECT_EQ(LatestSchemaVersion(), migrations.back().version);
}

TEST(SqliteStoreTest, SchemaVersionIsLatestAndReopenIsIdempotent) {
  ScopedTempDir dir;
  const std::string path = dir.File("store.db");
  for (int i = 0; i < 3; ++i) {
    auto store = MustOpen(path);
    ASSERT_NE(store, nullptr);
    EXPECT_EQ(Value(store->SchemaVersion()), LatestSchemaVersion());
    std::vector<std::string> expected;
    for (const Migration& m : Migrations()) {
      expected.push_back(std::to_string(m.version));
    }
    EXPECT_EQ(Value(store->DebugQuery(
                  "SELECT version FROM schema_version ORDER BY version")),
              expected);
  }
}

TEST(SqliteStoreTest, MigratesAVersion1DatabaseToLatest) {
  ScopedTempDir dir;
  const std::string path = dir.File("store.db");
  {
    SqliteOptions v1;
    v1.TEST_max_schema_version = 1;
    auto store = MustOpen(path, v1);
    ASSERT_NE(store, nullptr);
    EXPECT_EQ(Value(store->SchemaVersion()), 1);
    WriteBatch b;
    b.sweeps.push_back(MakeSweep("old"));
    b.trials.push_back(MakeTrial("old", 0));
    b.metrics.push_back(MakeMetric(TrialId("old", 0), "loss", 3, 0.125));
    ASSERT_TRUE(store->Commit(b).ok());
  }
  auto store = MustOpen(path);
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(Value(store->SchemaVersion()), LatestSchemaVersion());
  EXPECT_EQ(Value(store->ListTrials("old")).size(), 1u);
  EXPECT_EQ(Value(store->ListMetrics(TrialId("old", 0), "loss")).at(0).value,
            0.125);
  // Version 2's summary table and duration column work on the upgraded file.
  WriteBatch results;
  results.results.push_back({TrialId("old", 0), 2.0, {{"acc", 1.0}}});
  ASSERT_TRUE(store->Commit(results).ok());
  auto summaries = Value(store->ListSummaries("old"));
  ASSERT_EQ(summaries.size(), 1u);
  EXPECT_EQ(summaries[0].duration_s, 2.0);
  EXPECT_EQ(summaries[0].results.at("acc"), 1.0);
}

TEST(SqliteStoreTest, MigratesAVersion2DatabaseToDecisionsAndPruned) {
  ScopedTempDir dir;
  const std::string path = dir.File("store.db");
  {
    SqliteOptions v2;
    v2.TEST_max_schema_version = 2;
    auto store = MustOpen(path, v2);
    ASSERT_NE(store, nullptr);
    EXPECT_EQ(Value(store->SchemaVersion()), 2);
    WriteBatch b;
    b.sweeps.push_back(MakeSweep("old"));
    b.trials.push_back(MakeTrial("old", 0));
    b.trials.push_back(MakeTrial("old", 1));
    ASSERT_TRUE(store->Commit(b).ok());
    // Version 2 has no decision log.
    WriteBatch d;
    DecisionRecord r;
    r.sweep_id = "old";
    r.action = "prune";
    d.decisions.push_back(r);
    EXPECT_FALSE(store->Commit(d).ok());
  }
  auto store = MustOpen(path);
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(Value(store->SchemaVersion()), LatestSchemaVersion());
  EXPECT_EQ(Value(store->ListTrials("old")).size(), 2u);
  EXPECT_TRUE(Value(store->ListDecisions("old", 0, 0)).empty());
  WriteBatch b;
  TrialRecord t = MakeTrial("old", 1);
  t.state = TrialState::kPruned;
  b.trials.push_back(t);
  DecisionRecord r;
  r.sweep_id = "old";
  r.trial_id = t.trial_id;
  r.action = "prune";
  r.reason = "after the upgrade";
  b.decisions.push_back(r);
  ASSERT_TRUE(store->Commit(b).ok());
  EXPECT_EQ(Value(store->GetTrial(t.trial_id)).state, TrialState::kPruned);
  auto log = Value(store->ListDecisions("old", 0, 0));
  ASSERT_EQ(log.size(), 1u);
  EXPECT_EQ(log[0].reason, "after the upgrade");
}

TEST(SqliteStoreTest, AVersion2DatabaseGetsSweepAnnotations) {
  ScopedTempDir dir;
  const std::string path = dir.File("store.db");
  {
    SqliteOptions v2;
    v2.TEST_max_schema_version = 2;
    auto store = MustOpen(path, v2);
    ASSERT_NE(store, nullptr);
    WriteBatch b;
    b.sweeps.push_back(MakeSweep("old"));
    ASSERT_TRUE(store->Commit(b).ok());
  }
  auto store = MustOpen(path);
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(Value(store->SchemaVersion()), LatestSchemaVersion());
  SweepRecord old = Value(store->GetSweep("old"));
  EXPECT_EQ(old.notes, "");
  EXPECT_TRUE(old.tags.empty());
  EXPECT_FALSE(old.archived);
  old.notes = "rerun with more seeds";
  old.tags = {"paper"};
  old.archived = true;
  WriteBatch b;
  b.sweeps.push_back(old);
  ASSERT_TRUE(store->Commit(b).ok());
  EXPECT_EQ(testing::Dump(Value(store->GetSweep("old"))), testing::Dump(old));
}

TEST(SqliteStoreTest, RefusesADatabaseWithANewerSchema) {
  ScopedTempDir dir;
  const std::string path = dir.File("store.db");
  {
    auto store = MustOpen(path);
    ASSERT_NE(store, nullptr);
    ASSERT_TRUE(store
                    ->DebugQuery("INSERT INTO schema_version VALUES "
                                 "(99, 'from the future', 0)")
                    .ok());
  }
  auto store = SqliteStore::Open(path, {});
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(store.status().message(), HasSubstr("schema version 99"));
  EXPECT_THAT(store.status().message(),
              HasSubstr("(" + std::to_string(LatestSchemaVersion()) + ")"));
}

void WriteGarbage(const std::string& path, std::streamoff offset,
                  size_t bytes) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  ASSERT_TRUE(f.is_open()) << path;
  f.seekp(offset);
  std::string garbage(bytes, '\0');
  for (size_t i = 0; i < bytes; ++i)
    garbage[i] = static_cast<char>(i * 37 + 11);
  f.write(garbage.data(), static_cast<std::streamsize>(garbage.size()));
}

TEST(SqliteStoreTest, AFileThatIsNotADatabaseIsDataLoss) {
  ScopedTempDir dir;
  const std::string path = dir.File("store.db");
  {
    auto store = MustOpen(path);
    ASSERT_NE(store, nullptr);
    ASSERT_TRUE(store->Commit(FullBatch()).ok());
  }  // the last close checkpoints and removes the WAL
  ASSERT_FALSE(std::filesystem::exists(path + "-wal"));
  WriteGarbage(path, 0, 8192);
  auto store = SqliteStore::Open(path, {});
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), absl::StatusCode::kDataLoss)
      << store.status();
  EXPECT_THAT(store.status().message(), HasSubstr(path));
  EXPECT_THAT(store.status().message(), HasSubstr("not a database"));
}

TEST(SqliteStoreTest, CorruptPagesFailCleanly) {
  ScopedTempDir dir;
  const std::string path = dir.File("store.db");
  {
    auto store = MustOpen(path);
    ASSERT_NE(store, nullptr);
    WriteBatch b = FullBatch();
    for (int i = 4; i < 2000; ++i) b.trials.push_back(MakeTrial("s", i));
    ASSERT_TRUE(store->Commit(b).ok());
  }
  const auto size = std::filesystem::file_size(path);
  ASSERT_GT(size, 16384u);
  // Keep page 1 (the header and sqlite_master), trash the rest.
  WriteGarbage(path, 4096, size - 4096);
  // Issue 16 item 5: refused at open (PRAGMA quick_check), not at the first
  // read or write after serving.
  auto store = SqliteStore::Open(path, {});
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), absl::StatusCode::kDataLoss)
      << store.status();
  EXPECT_THAT(store.status().message(), HasSubstr(path));
  // Without the check the damage shows only when a page is read.
  SqliteOptions unchecked;
  unchecked.quick_check = false;
  auto late = SqliteStore::Open(path, unchecked);
  if (late.ok()) {
    auto trials = (*late)->ListTrials("s");
    ASSERT_FALSE(trials.ok());
    EXPECT_EQ(trials.status().code(), absl::StatusCode::kDataLoss)
        << trials.status();
    EXPECT_THAT(trials.status().message(), HasSubstr("list trials"));
  }
}

// Issue 16 item 5: one damaged page in the middle of a healthy database (the
// header and the schema are fine, so opening and migrating succeed) is found
// by the quick_check at open.
TEST(SqliteStoreTest, OneDamagedPageIsRefusedAtOpen) {
  ScopedTempDir dir;
  const std::string path = dir.File("store.db");
  {
    auto store = MustOpen(path);
    ASSERT_NE(store, nullptr);
    WriteBatch b = FullBatch();
    for (int i = 4; i < 2000; ++i) b.trials.push_back(MakeTrial("s", i));
    ASSERT_TRUE(store->Commit(b).ok());
  }
  const auto size = std::filesystem::file_size(path);
  const auto pages = size / 4096;
  ASSERT_GT(pages, 8u);
  // The b-tree page header of one page in the middle.
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>((pages / 2) * 4096));
    const std::string ff(12, '\xff');
    f.write(ff.data(), static_cast<std::streamsize>(ff.size()));
  }
  auto store = SqliteStore::Open(path, {});
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(store.status().message(), HasSubstr("integrity_check"));
  EXPECT_THAT(store.status().message(), HasSubstr("restore it from a backup"));
}

// Runs `sql` on the database at `path` with a plain connection.
void RawExec(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  sqlite3_db_config(db, SQLITE_DBCONFIG_DEFENSIVE, 0, nullptr);
  char* err = nullptr;
  const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err);
  EXPECT_EQ(rc, SQLITE_OK) << (err ? err : "");
  sqlite3_free(err);
  sqlite3_close(db);
}

// Issue 36: an index that does not match its table passes quick_check (it
// checks pages and records only) but not integrity_check, which Open() now
// runs on files up to 256 MiB.
TEST(SqliteStoreTest, AnIndexThatDoesNotMatchItsTableIsRefusedAtOpen) {
  ScopedTempDir dir;
  const std::string path = dir.File("store.db");
  {
    auto store = MustOpen(path);
    ASSERT_NE(store, nullptr);
    ASSERT_TRUE(store->Commit(FullBatch()).ok());
  }
  // An index built over column x, then declared over column y: its entries
  // no longer match the table's rows.
  RawExec(path,
          "CREATE TABLE extra(x INTEGER, y INTEGER);"
          "CREATE INDEX extra_x ON extra(x);"
          "INSERT INTO extra VALUES (1, 10), (2, 20), (3, 30);"
          "PRAGMA writable_schema = ON;"
          "UPDATE sqlite_master SET sql = 'CREATE INDEX extra_x ON extra(y)'"
          " WHERE name = 'extra_x';"
          "PRAGMA writable_schema = OFF;");
  auto store = SqliteStore::Open(path, {});
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(store.status().message(), HasSubstr("integrity_check"));
  EXPECT_THAT(store.status().message(), HasSubstr("extra_x"));
  // Above the size bound only quick_check runs, and it misses this.
  SqliteOptions large;
  large.integrity_check_max_bytes = 0;
  EXPECT_TRUE(SqliteStore::Open(path, large).ok());
}

// Issue 36: another application's SQLite file named smoe.db was adopted and
// migrated (our tables added to it).
TEST(SqliteStoreTest, AnotherApplicationsDatabaseIsRefused) {
  ScopedTempDir dir;
  const std::string foreign = dir.File("foreign.db");
  RawExec(foreign, "CREATE TABLE users(id INTEGER, name TEXT);");
  auto store = SqliteStore::Open(foreign, {});
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(store.status().message(),
              HasSubstr("is not a SMoE Lab store (no schema_version table; "
                        "its tables: users)"));
  // Untouched: no table of ours was added.
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(foreign.c_str(), &db), SQLITE_OK);
    sqlite3_stmt* st = nullptr;
    ASSERT_EQ(sqlite3_prepare_v2(db, "SELECT count(*) FROM sqlite_master", -1,
                                 &st, nullptr),
              SQLITE_OK);
    ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
    EXPECT_EQ(sqlite3_column_int(st, 0), 1);
    sqlite3_finalize(st);
    sqlite3_close(db);
  }
  const std::string other_id = dir.File("other.db");
  RawExec(other_id, "PRAGMA application_id = 42;");
  auto refused = SqliteStore::Open(other_id, {});
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.status().message(),
              HasSubstr("belongs to another application (PRAGMA "
                        "application_id = 42"));
  // Ours: stamped at creation; a store written before the stamp (id 0, our
  // schema_version table) opens and is stamped.
  const std::string ours = dir.File("ours.db");
  { ASSERT_NE(MustOpen(ours), nullptr); }
  RawExec(ours, "PRAGMA application_id = 0;");
  { ASSERT_NE(MustOpen(ours), nullptr); }
  auto again = MustOpen(ours);
  ASSERT_NE(again, nullptr);
  auto id = again->DebugQuery("PRAGMA application_id");
  ASSERT_TRUE(id.ok());
  EXPECT_THAT(*id, ElementsAre(absl::StrCat(kSmoeApplicationId)));
}

// Issue 36: smoe.db was 0644 (attempt logs readable by every local user).
TEST(SqliteStoreTest, TheDatabaseFilesAreOwnerOnly) {
  ScopedTempDir dir;
  const std::string path = dir.File("store.db");
  {
    std::ofstream(path).close();  // an existing 0644 file (umask 022)
    ::chmod(path.c_str(), 0644);
    SqliteOptions init;
    init.allow_empty_file = true;
    auto store = SqliteStore::Open(path, init);
    ASSERT_TRUE(store.ok()) << store.status();
    ASSERT_TRUE((*store)->Commit(FullBatch()).ok());
    for (const char* suffix : {"", "-wal", "-shm"}) {
      struct stat st;
      ASSERT_EQ(::stat((path + suffix).c_str(), &st), 0) << suffix;
      EXPECT_EQ(st.st_mode & 0777, 0600u) << suffix;
    }
  }
}

// Issue 16 item 5: a zero-length file where the database should be is an
// error (a lost or truncated store must not start as an empty one), unless
// the caller asks for a new store (`--init`).
TEST(SqliteStoreTest, AnEmptyFileIsRefusedUnlessInit) {
  ScopedTempDir dir;
  const std::string path = dir.File("smoe.db");
  { std::ofstream touch(path); }
  ASSERT_EQ(std::filesystem::file_size(path), 0u);
  auto store = SqliteStore::Open(path, {});
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(store.status().message(), HasSubstr("empty file"));
  EXPECT_THAT(store.status().message(), HasSubstr("--init"));
  EXPECT_THAT(store.status().message(), HasSubstr(path));
  SqliteOptions init;
  init.allow_empty_file = true;
  auto created = MustOpen(path, init);
  ASSERT_NE(created, nullptr);
  ASSERT_TRUE(created->Commit(FullBatch()).ok());
  // A missing file is a first start: created without --init.
  EXPECT_NE(MustOpen(dir.File("new.db")), nullptr);
}

// Issue 16 item 5: `smoe admin backup` copies a live database through the
// online backup API (a writer keeps committing meanwhile); the copy is one
// checked file that opens as a store with everything committed before it.
TEST(SqliteStoreTest, OnlineBackupOfALiveStore) {
  ScopedTempDir dir;
  const std::string path = dir.File("smoe.db");
  auto store = MustOpen(path);
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->Commit(FullBatch()).ok());
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    for (int i = 4; !stop.load() && i < 100000; ++i) {
      WriteBatch b;
      b.trials.push_back(MakeTrial("s", i));
      ASSERT_TRUE(store->Commit(b).ok());
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const std::string out = dir.File("backup.db");
  const absl::Status st = SqliteStore::Backup(path, out);
  stop.store(true);
  writer.join();
  ASSERT_TRUE(st.ok()) << st;
  EXPECT_FALSE(std::filesystem::exists(out + "-wal"));
  EXPECT_FALSE(std::filesystem::exists(out + ".tmp"));
  // Never overwrites.
  EXPECT_EQ(SqliteStore::Backup(path, out).code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(SqliteStore::Backup(dir.File("none.db"), dir.File("x.db")).code(),
            absl::StatusCode::kFailedPrecondition);
  // Restore = copy the file into place; it opens and holds the data.
  std::filesystem::copy_file(out, dir.File("restored.db"));
  auto restored = MustOpen(dir.File("restored.db"));
  ASSERT_NE(restored, nullptr);
  auto trials = Value(restored->ListTrials("s"));
  EXPECT_GE(trials.size(), 4u);
  EXPECT_EQ(Value(restored->ListMetrics(TrialId("s", 0), std::nullopt)).size(),
            2u);
  EXPECT_TRUE(store->CheckWritable().ok());
}

TEST(SqliteStoreTest, UnopenablePathIsAnErrorNotACrash) {
  ScopedTempDir dir;
  auto store = SqliteStore::Open(dir.File("no/such/dir/store.db"), {});
  ASSERT_FALSE(store.ok());
  EXPECT_THAT(store.status().message(), HasSubstr("no/such/dir/store.db"));
}

TEST(SqliteStoreTest, InMemoryDatabaseWorks) {
  auto store = MustOpen(":memory:");
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->Commit(FullBatch()).ok());
  EXPECT_EQ(Value(store->ListTrials("s")).size(), 4u);
}

TEST(SqliteStoreTest, AFailedCommitLeavesNoOpenTransaction) {
  ScopedTempDir dir;
  const std::string path = dir.File("store.db");
  {
    auto store = MustOpen(path);
    ASSERT_NE(store, nullptr);
    WriteBatch bad = FullBatch();
    bad.metrics.push_back(MakeMetric("s/missing", "loss", 1, 1));
    EXPECT_EQ(store->Commit(bad).code(), absl::StatusCode::kFailedPrecondition);
    ASSERT_TRUE(store->Commit(FullBatch()).ok());
  }
  auto store = MustOpen(path);
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(Value(store->ListTrials("s")).size(), 4u);
  EXPECT_THAT(Value(store->ListMetrics("s/missing", std::nullopt)), IsEmpty());
}

// The child commits kCommitted small batches, then a large one, and is killed
// with SIGKILL between two statements of that large batch's transaction (a
// tiny page cache makes SQLite spill the uncommitted pages into the WAL first).
// The parent must see exactly the committed batches.
TEST(SqliteStoreTest, ReopenAfterCrashSeesExactlyTheCommittedBatches) {
  constexpr int kCommitted = 5;
  constexpr int kMetricsPerBatch = 100;
  constexpr int kLargeBatch = 20000;
  constexpr int kKillAtRow = 15000;
  ScopedTempDir dir;
  const std::string path = dir.File("store.db");

  const pid_t pid = fork();
  ASSERT_NE(pid, -1);
  if (pid == 0) {
    // Child: no gtest assertions; report failures through the exit code.
    bool armed = false;
    SqliteOptions options;
    options.TEST_after_row_written = [&armed](int64_t rows) {
      if (armed && rows == kKillAtRow) raise(SIGKILL);
    };
    auto store = SqliteStore::Open(path, options);
    if (!store.ok()) _exit(2);
    if (!(*store)->DebugQuery("PRAGMA cache_size = 8").ok()) _exit(3);
    WriteBatch setup;
    setup.sweeps.push_back(MakeSweep("s"));
    setup.trials.push_back(MakeTrial("s", 0));
    if (!(*store)->Commit(setup).ok()) _exit(4);
    for (int b = 1; b < kCommitted; ++b) {
      WriteBatch batch;
      for (int i = 0; i < kMetricsPerBatch; ++i) {
        batch.metrics.push_back(MakeMetric(TrialId("s", 0), "m", b * 1000 + i,
                                           static_cast<double>(i)));
      }
      if (!(*store)->Commit(batch).ok()) _exit(5);
    }
    WriteBatch large;
    SweepRecord cancelled = MakeSweep("s");
    cancelled.state = SweepState::kCancelled;
    large.sweeps.push_back(cancelled);
    for (int i = 1; i < 50; ++i) large.trials.push_back(MakeTrial("s", i));
    for (int i = 0; i < kLargeBatch; ++i) {
      large.metrics.push_back(
          MakeMetric(TrialId("s", 0), "big", i, static_cast<double>(i)));
    }
    large.results.push_back({TrialId("s", 0), 1.0, {{"acc", 1.0}}});
    {
      // Tell the parent how big the WAL was before the large batch.
      std::ofstream size_file(path + ".walsize");
      size_file << std::filesystem::file_size(path + "-wal");
      if (!size_file) _exit(7);
    }
    armed = true;
    (void)(*store)->Commit(large);
    _exit(6);  // not reached: the hook kills the process
  }

  int wstatus = 0;
  ASSERT_EQ(waitpid(pid, &wstatus, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(wstatus))
      << "child exited with code " << WEXITSTATUS(wstatus);
  ASSERT_EQ(WTERMSIG(wstatus), SIGKILL);
  // The crash left the WAL behind, grown by the uncommitted frames.
  ASSERT_TRUE(std::filesystem::exists(path + "-wal"));
  uintmax_t wal_before_large_batch = 0;
  std::ifstream(path + ".walsize") >> wal_before_large_batch;
  ASSERT_GT(wal_before_large_batch, 0u);
  EXPECT_GT(std::filesystem::file_size(path + "-wal"), wal_before_large_batch);

  auto store = MustOpen(path);
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(Value(store->GetSweep("s")).state, SweepState::kActive);
  EXPECT_EQ(Value(store->ListTrials("s")).size(), 1u);
  EXPECT_EQ(Value(store->ListMetrics(TrialId("s", 0), "m")).size(),
            static_cast<size_t>((kCommitted - 1) * kMetricsPerBatch));
  EXPECT_THAT(Value(store->ListMetrics(TrialId("s", 0), "big")), IsEmpty());
  EXPECT_THAT(Value(store->ListSummaries("s")).at(0).results, IsEmpty());
  EXPECT_THAT(Value(store->DebugQuery("PRAGMA integrity_check")),
              ElementsAre("ok"));
  // The store is writable after recovery.
  WriteBatch after;
  after.metrics.push_back(MakeMetric(TrialId("s", 0), "big", 0, 1.0));
  EXPECT_TRUE(store->Commit(after).ok());
}

// Sweep `id` with a row in every table keyed by a sweep or a trial.
WriteBatch SweepInEveryTable(const std::string& id) {
  WriteBatch b;
  b.sweeps.push_back(MakeSweep(id));
  TrialRecord t = MakeTrial(id, 0);
  t.state = TrialState::kSucceeded;
  b.trials.push_back(t);
  b.attempts.push_back(MakeAttempt(t.trial_id, 1));
  b.metrics.push_back(MakeMetric(t.trial_id, "loss", 1, 0.5));
  b.results.push_back({t.trial_id, 1.0, {{"acc", 0.5}}});
  DecisionRecord d;
  d.sweep_id = id;
  d.trial_id = t.trial_id;
  d.action = "prune";
  b.decisions.push_back(d);
  CheckpointRecord c;
  c.trial_id = t.trial_id;
  c.step = 1;
  c.sha256 = std::string(64, 'a');
  b.checkpoints.push_back(c);
  TrialLogRecord l;
  l.trial_id = t.trial_id;
  l.attempt = 1;
  l.text = "log";
  b.trial_logs.push_back(l);
  return b;
}

// Rows of sweep `id` per table of the schema, as "table=N"; every table but
// the few that are not a sweep's must have a sweep_id or a trial_id column.
std::vector<std::string> RowsOfSweep(SqliteStore* store,
                                     const std::string& id) {
  std::vector<std::string> out;
  for (const std::string& table : Value(store->DebugQuery(
           "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY "
           "name"))) {
    if (table == "workers" || table == "schema_version" ||
        table == "sqlite_sequence") {
      continue;
    }
    const std::vector<std::string> columns = Value(store->DebugQuery(
        absl::StrCat("SELECT name FROM pragma_table_info('", table, "')")));
    auto has = [&](const char* c) {
      return std::find(columns.begin(), columns.end(), c) != columns.end();
    };
    std::string where;
    if (has("sweep_id")) {
      where = absl::StrCat("sweep_id = '", id, "'");
    } else if (has("trial_id")) {
      where = absl::StrCat("trial_id LIKE '", id, "/%'");
    } else {
      ADD_FAILURE() << "table " << table
                    << " has neither sweep_id nor trial_id: is it a sweep's "
                       "(then delete it with the sweep) or not (list it "
                       "here)?";
      continue;
    }
    out.push_back(absl::StrCat(
        table, "=",
        Value(store->DebugQuery(absl::StrCat("SELECT count(*) FROM ", table,
                                             " WHERE ", where)))
            .at(0)));
  }
  return out;
}

TEST(SqliteStoreTest, DeletingASweepLeavesNoRowOfItInAnyTable) {
  auto store = MustOpen(":memory:");
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->Commit(SweepInEveryTable("gone")).ok());
  ASSERT_TRUE(store->Commit(SweepInEveryTable("kept")).ok());
  const std::vector<std::string> full = {
      "attempts=1",          "decisions=1",  "metrics=1",       "sweeps=1",
      "trial_checkpoints=1", "trial_logs=1", "trial_results=1", "trials=1"};
  // The fixture fills every table, so each one's deletion is checked.
  ASSERT_EQ(RowsOfSweep(store.get(), "gone"), full);
  WriteBatch del;
  del.deleted_sweeps = {"gone"};
  ASSERT_TRUE(store->Commit(del).ok());
  EXPECT_THAT(RowsOfSweep(store.get(), "gone"),
              ElementsAre("attempts=0", "decisions=0", "metrics=0", "sweeps=0",
                          "trial_checkpoints=0", "trial_logs=0",
                          "trial_results=0", "trials=0"));
  EXPECT_EQ(RowsOfSweep(store.get(), "kept"), full);
  EXPECT_THAT(Value(store->DebugQuery("PRAGMA foreign_key_check")), IsEmpty());
}

TEST(SqliteStoreTest, ACrashMidDeleteLeavesTheSweepWhole) {
  ScopedTempDir dir;
  const std::string path = dir.File("store.db");
  const pid_t pid = fork();
  ASSERT_NE(pid, -1);
  if (pid == 0) {
    bool armed = false;
    SqliteOptions options;
    options.TEST_after_row_written = [&armed](int64_t) {
      if (armed) raise(SIGKILL);
    };
    auto store = SqliteStore::Open(path, options);
    if (!store.ok()) _exit(2);
    if (!(*store)->Commit(SweepInEveryTable("s")).ok()) _exit(3);
    armed = true;
    WriteBatch del;
    del.deleted_sweeps = {"s"};
    (void)(*store)->Commit(del);  // killed after its statements, uncommitted
    _exit(4);
  }
  int wstatus = 0;
  ASSERT_EQ(waitpid(pid, &wstatus, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(wstatus))
      << "child exited with code " << WEXITSTATUS(wstatus);
  auto store = MustOpen(path);
  ASSERT_NE(store, nullptr);
  EXPECT_THAT(RowsOfSweep(store.get(), "s"),
              ElementsAre("attempts=1", "decisions=1", "metrics=1", "sweeps=1",
                          "trial_checkpoints=1", "trial_logs=1",
                          "trial_results=1", "trials=1"));
}

// Threads commit through one store and through a second connection to the
// same file (writers queue on the busy timeout) while a reader lists.
TEST(SqliteStoreTest, ConcurrentCommitsAreSafe) {
  constexpr int kThreadsPerStore = 3;
  constexpr int kCommitsPerThread = 40;
  ScopedTempDir dir;
  const std::string path = dir.File("store.db");
  SqliteOptions options;
  options.busy_timeout_ms = 60000;  // generous: never a timing dependency
  options.synchronous = SqliteOptions::Synchronous::kNormal;
  auto a = MustOpen(path, options);
  auto b = MustOpen(path, options);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  WriteBatch setup;
  setup.sweeps.push_back(MakeSweep("s"));
  ASSERT_TRUE(a->Commit(setup).ok());

  std::atomic<int> failures{0};
  std::atomic<bool> done{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < 2 * kThreadsPerStore; ++t) {
    SqliteStore* store = t % 2 == 0 ? a.get() : b.get();
    threads.emplace_back([store, t, &failures] {
      for (int i = 0; i < kCommitsPerThread; ++i) {
        const int n = t * kCommitsPerThread + i;
        WriteBatch batch;
        TrialRecord trial = MakeTrial("s", n);
        trial.state = TrialState::kRunning;
        trial.attempt = 1;
        batch.trials.push_back(trial);
        batch.attempts.push_back(MakeAttempt(trial.trial_id, 1));
        batch.metrics.push_back(MakeMetric(trial.trial_id, "loss", 1, n));
        absl::Status s = store->Commit(batch);
        if (!s.ok()) {
          ADD_FAILURE() << s;
          ++failures;
        }
      }
    });
  }
  std::thread reader([&] {
    while (!done.load()) {
      if (!a->ListTrials("s").ok()) ++failures;
    }
  });
  for (auto& t : threads) t.join();
  done = true;
  reader.join();
  EXPECT_EQ(failures.load(), 0);

  const size_t total = 2 * kThreadsPerStore * kCommitsPerThread;
  EXPECT_EQ(Value(a->ListTrials("s")).size(), total);
  EXPECT_EQ(Value(b->ListTrials("s")).size(), total);
  for (const auto& trial : Value(b->ListTrials("s"))) {
    EXPECT_EQ(Value(a->ListAttempts(trial.trial_id)).size(), 1u);
    EXPECT_EQ(Value(a->ListMetrics(trial.trial_id, std::nullopt)).size(), 1u);
  }
}

}  // namespace
}  // namespace smoe::store
