// Copyright 2026 SMoE Lab authors.
//
// File: store/sqlite_store.h
//
// SqliteStore: the production ExperimentStore, one SQLite database file.
//
//   * WAL journal, a busy timeout, `PRAGMA foreign_keys=ON`, synchronous FULL
//     by default (a committed batch survives power loss; NORMAL survives a
//     process crash but may lose the last commits on power loss).
//   * Schema: numbered migrations (store/migrations.h) recorded in the
//     `schema_version` table; Open() brings an older database up to date and
//     refuses one written by a newer build (FailedPrecondition naming both
//     versions).
//   * Commit() runs one `BEGIN IMMEDIATE` transaction of cached prepared
//     statements: all of the batch or none of it, also across a crash or
//     SIGKILL at any point. Missing parents are checked explicitly (the error
//     names the missing id) with foreign keys as the backstop.
//   * Every SQLite error becomes an absl::Status naming the operation, the
//     file and SQLite's message: DataLoss for a corrupt or non-database file,
//     Unavailable for a lock not obtained within the busy timeout,
//     ResourceExhausted for a full disk or no memory, FailedPrecondition for
//     constraint violations and files that cannot be opened,
//     PermissionDenied for read-only files, Internal otherwise. Nothing
//     throws.
//
// Several SqliteStores (and processes) may open the same file; writers queue
// on the busy timeout.
//
// Thread safety: safe for concurrent use; one mutex serialises every call on
// the connection.
#ifndef SMOE_STORE_SQLITE_STORE_H_
#define SMOE_STORE_SQLITE_STORE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "store/experiment_store.h"

struct sqlite3;
struct sqlite3_stmt;

namespace smoe::store {

struct SqliteOptions {
  // How long a call waits for another connection's write lock before failing
  // with Unavailable.
  int busy_timeout_ms = 5000;

  enum class Synchronous { kNormal, kFull };
  // kFull: fsync on every commit (durable across power loss). kNormal: WAL
  // syncs at checkpoints only (durable across process crashes).
  Synchronous synchronous = Synchronous::kFull;

  // Page cache per connection, in KiB. SQLite allocates it as pages are
  // used; a large cache keeps a big Commit (a 100,000-trial sweep) from
  // spilling to the WAL mid-transaction (about 1.5x faster at 100k trials).
  int cache_size_kib = 64 * 1024;
  // A Commit of more rows than the cache holds (about 1 KiB per row: a
  // trial's row and index entries are ~0.5 KiB) raises the cache for that
  // transaction to fit it, up to this, then sets it back, so that SQLite
  // need not spill dirty pages mid-transaction (the commit was 13 s of a
  // million-trial submit's 23 s; issue 35, bench/results/scale-2026-11-29c.md).
  // 0: never raise.
  int large_commit_cache_max_kib = 1024 * 1024;

  // Open() refuses an existing zero-length file (a database was expected
  // there: a truncated or lost file must not silently become an empty store)
  // unless this is set (`smoe coordinator --init`). A missing file is always
  // created.
  bool allow_empty_file = false;

  // Open() checks the database and refuses (DataLoss) a damaged one: `PRAGMA
  // integrity_check` (which also finds an index that does not match its
  // table) for files up to `integrity_check_max_bytes`, `PRAGMA quick_check`
  // (about 1 s per GB; pages and records only) for larger ones.
  bool quick_check = true;
  int64_t integrity_check_max_bytes = int64_t{256} << 20;

  // Test hooks; leave unset in production.
  //
  // Called inside Commit()'s transaction after each row is written, with the
  // number of rows written so far by this Commit (1, 2, ...). A test may kill
  // the process from here to simulate a crash mid-transaction.
  std::function<void(int64_t rows_written)> TEST_after_row_written;
  // When > 0, Open() applies migrations only up to this version (to build an
  // old-schema database for upgrade tests).
  int TEST_max_schema_version = 0;
};

// `PRAGMA application_id` of SMoE Lab stores ("SMOE"). Open() refuses a
// database with another id, or with none (0) that has tables but not ours
// (another application's file named smoe.db is never migrated), and stamps
// it on new and older stores of ours.
inline constexpr int32_t kSmoeApplicationId = 0x534D4F45;

class SqliteStore final : public ExperimentStore {
 public:
  // Opens (creating when absent) the database at `path` and migrates it to
  // LatestSchemaVersion(). ":memory:" gives a private in-memory database
  // (journal mode "memory"; for tests).
  // Errors: FailedPrecondition when the file's schema is newer than this
  // build's (the message names both versions); DataLoss when the file is not
  // a database or is corrupt; other codes as in the file comment.
  static absl::StatusOr<std::unique_ptr<SqliteStore>> Open(
      const std::string& path, const SqliteOptions& options = {});

  ~SqliteStore() override;
  SqliteStore(const SqliteStore&) = delete;
  SqliteStore& operator=(const SqliteStore&) = delete;

  absl::Status Commit(const WriteBatch& batch) override;
  absl::StatusOr<SweepRecord> GetSweep(absl::string_view sweep_id) override;
  absl::StatusOr<TrialRecord> GetTrial(absl::string_view trial_id) override;
  absl::StatusOr<std::vector<SweepRecord>> ListSweeps() override;
  absl::StatusOr<std::vector<TrialRecord>> ListTrials(
      absl::string_view sweep_id) override;
  absl::StatusOr<std::vector<AttemptRecord>> ListAttempts(
      absl::string_view trial_id) override;
  absl::StatusOr<std::vector<AttemptRecord>> ListSweepAttempts(
      absl::string_view sweep_id) override;
  absl::StatusOr<std::vector<AttemptRecord>> ListSweepAttemptsWithPrefix(
      absl::string_view sweep_id, absl::string_view trial_id_prefix) override;
  absl::StatusOr<std::vector<WorkerRecord>> ListWorkers() override;
  absl::StatusOr<std::vector<MetricRecord>> ListMetrics(
      absl::string_view trial_id, std::optional<std::string> name) override;
  absl::StatusOr<std::vector<DecisionRecord>> ListDecisions(
      absl::string_view sweep_id, int64_t after_seq, int64_t limit) override;
  absl::StatusOr<int64_t> CountDecisions(absl::string_view sweep_id) override;
  absl::StatusOr<std::vector<DecisionRecord>> ListLastDecisions(
      absl::string_view sweep_id, int64_t limit) override;
  absl::StatusOr<std::vector<DecisionRecord>> ListDecisionsBefore(
      absl::string_view sweep_id, int64_t before_seq, int64_t limit) override;
  absl::StatusOr<std::vector<TrialSummary>> ListSummaries(
      absl::string_view sweep_id) override;
  absl::StatusOr<std::vector<TrialSummary>> ListSummariesOf(
      absl::string_view sweep_id,
      const std::vector<std::string>& trial_ids) override;
  absl::StatusOr<std::vector<CheckpointRecord>> ListCheckpoints(
      absl::string_view trial_id) override;
  absl::StatusOr<std::vector<TrialLogRecord>> ListTrialLogs(
      absl::string_view trial_id) override;

  // Copies the database at `db_path` (which a running coordinator may be
  // writing: SQLite's online backup API takes a consistent snapshot) to
  // `dest_path`, a single self-contained file (journal mode DELETE, no WAL),
  // then runs `PRAGMA quick_check` on the copy. The copy is written to
  // `dest_path`.tmp and renamed into place only once checked.
  // FailedPrecondition when `dest_path` exists (never overwritten) or
  // `db_path` does not; DataLoss when the source or the copy is damaged.
  static absl::Status Backup(const std::string& db_path,
                             const std::string& dest_path);

  // Writes one small transaction (bumps PRAGMA user_version) to check that
  // commits succeed again after a failure (a full disk).
  absl::Status CheckWritable();

  // Returns the database's schema version (the highest applied migration).
  absl::StatusOr<int> SchemaVersion();

  // Diagnostics for tests and tools: runs the single statement `sql` and
  // returns the first column of every result row as text ("" for NULL).
  // Bypasses every invariant of the store; never use it to write records.
  absl::StatusOr<std::vector<std::string>> DebugQuery(const std::string& sql);

  const std::string& path() const { return path_; }

 private:
  class Statement;

  SqliteStore(std::string path, SqliteOptions options, sqlite3* db);

  // Sets the pragmas and applies pending migrations.
  absl::Status Initialize() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status Migrate() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Migrate's body inside its transaction: applies migrations up to `target`.
  absl::Status ApplyMigrations(int target) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status SchemaTooNew(int version) const;
  // Runs `sql` (any number of statements, no parameters).
  absl::Status Exec(const char* sql, const char* op)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Returns the cached prepared statement for `sql` (a string literal: the
  // cache is keyed by its address).
  absl::StatusOr<sqlite3_stmt*> Prepare(const char* sql, const char* op)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Runs the cached statement `sql` (no parameters, no rows).
  absl::Status RunCached(const char* sql, const char* op)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Converts SQLite result code `rc` to a Status naming `op`.
  absl::Status Error(int rc,
                     absl::string_view op) const ABSL_NO_THREAD_SAFETY_ANALYSIS;
  // DebugQuery's body; also reads pragmas.
  absl::StatusOr<std::vector<std::string>> DebugQueryLocked(
      const std::string& sql, const char* op)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Writes every row of `batch`; called inside the transaction.
  absl::Status WriteAll(const WriteBatch& batch)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<bool> Exists(const char* sql, const std::string& id,
                              const char* op)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // True when trial `id` is in `known` or in the database (then added to
  // `known`).
  absl::StatusOr<bool> TrialExists(const std::string& id,
                                   std::unordered_set<std::string>* known)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<int> SchemaVersionLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // ListSummaries of a sweep whose trial ids all start with "<sweep>/": its
  // attempts and results read as key ranges (forward walks) instead of a
  // probe per row; nullopt when some id does not (the per-row query then).
  absl::StatusOr<std::optional<std::vector<TrialSummary>>>
  ListPrefixedSummariesLocked(absl::string_view sweep_id)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // PRAGMA quick_check; DataLoss quoting its first problems.
  absl::Status QuickCheck() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // kSmoeApplicationId: refuses another application's database, stamps
  // ours.
  absl::Status CheckApplicationId() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string path_;
  const SqliteOptions options_;
  absl::Mutex mu_;
  sqlite3* db_ ABSL_GUARDED_BY(mu_);
  std::unordered_map<const char*, sqlite3_stmt*> statements_
      ABSL_GUARDED_BY(mu_);
  // CountDecisions' counts per sweep, each valid while the sweep's log has
  // the same first seq (seq only grows, AUTOINCREMENT; a sweep's decisions
  // are deleted only with the sweep) and topped up from its last seq.
  struct DecisionCount {
    int64_t first_seq = 0;
    int64_t last_seq = 0;
    int64_t count = 0;
  };
  std::unordered_map<std::string, DecisionCount> decision_counts_
      ABSL_GUARDED_BY(mu_);
};

}  // namespace smoe::store

#endif  // SMOE_STORE_SQLITE_STORE_H_
