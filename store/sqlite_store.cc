// Copyright 2026 SMoE Lab authors.
//
// File: store/sqlite_store.cc
//
// The only file that includes sqlite3.h (tests/quality/layering_test).

#include "store/sqlite_store.h"

#include <sqlite3.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <set>
#include <tuple>
#include <unordered_set>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/memory/memory.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "nlohmann/json.hpp"
#include "store/migrations.h"
#include "store/store_util.h"

namespace smoe::store {
namespace {

using internal::MicrosToTime;
using internal::TimeToMicros;

// ---- SQL
// ----------------------------------------------------------------------
// Statements are cached by the address of these arrays.

#define SMOE_SWEEP_COLUMNS                                          \
  "sweep_id, kind, spec_yaml, priority, max_error_retries, state, " \
  "created_at_us, updated_at_us"
// Schema 3's annotation columns, read after SMOE_SWEEP_COLUMNS.
#define SMOE_SWEEP_ANNOTATION_COLUMNS ", notes, tags_json, archived"
#define SMOE_TRIAL_COLUMNS                                             \
  "trial_id, sweep_id, ordinal, params_json, seed, state, attempt, "   \
  "error_count, preempt_count, gpus, worker_id, lease_expires_at_us, " \
  "last_error, created_at_us, updated_at_us"
#define SMOE_ATTEMPT_COLUMNS                                                   \
  "trial_id, attempt, worker_id, outcome, exit_code, message, started_at_us, " \
  "ended_at_us"
#define SMOE_WORKER_COLUMNS                                           \
  "worker_id, hostname, cpus, gpus, slots, labels_json, kinds_json, " \
  "draining, registered_at_us, last_heartbeat_at_us"
// A finished trial's worker is its latest attempt's (trials.worker_id is the
// lease holder and is cleared when the attempt ends).
#define SMOE_SUMMARY_COLUMNS                                              \
  "t.trial_id, t.sweep_id, t.params_json, t.seed, t.state, t.attempt, "   \
  "CASE WHEN t.worker_id != '' THEN t.worker_id ELSE COALESCE((SELECT "   \
  "a.worker_id FROM attempts AS a WHERE a.trial_id = t.trial_id AND "     \
  "a.attempt = t.attempt), '') END, t.duration_s, t.last_error, "         \
  "(SELECT a.exit_code FROM attempts AS a WHERE a.trial_id = t.trial_id " \
  "AND a.outcome != 'running' ORDER BY a.attempt DESC LIMIT 1)"

constexpr char kUpsertSweep[] =
    "INSERT INTO sweeps (" SMOE_SWEEP_COLUMNS
    ") VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (sweep_id) DO UPDATE SET "
    "kind = excluded.kind, spec_yaml = excluded.spec_yaml, "
    "priority = excluded.priority, "
    "max_error_retries = excluded.max_error_retries, state = excluded.state, "
    "created_at_us = excluded.created_at_us, "
    "updated_at_us = excluded.updated_at_us";
// A separate statement so an old-schema database (upgrade tests build one)
// still takes the base row.
constexpr char kUpdateSweepAnnotations[] =
    "UPDATE sweeps SET notes = ?, tags_json = ?, archived = ? "
    "WHERE sweep_id = ?";
constexpr char kUpsertTrial[] =
    "INSERT INTO trials (" SMOE_TRIAL_COLUMNS
    ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
    "ON CONFLICT (trial_id) DO UPDATE SET "
    "sweep_id = excluded.sweep_id, ordinal = excluded.ordinal, "
    "params_json = excluded.params_json, seed = excluded.seed, "
    "state = excluded.state, attempt = excluded.attempt, "
    "error_count = excluded.error_count, "
    "preempt_count = excluded.preempt_count, gpus = excluded.gpus, "
    "worker_id = excluded.worker_id, "
    "lease_expires_at_us = excluded.lease_expires_at_us, "
    "last_error = excluded.last_error, created_at_us = excluded.created_at_us, "
    "updated_at_us = excluded.updated_at_us";
constexpr char kUpsertAttempt[] =
    "INSERT INTO attempts (" SMOE_ATTEMPT_COLUMNS
    ") VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
    "ON CONFLICT (trial_id, attempt) DO UPDATE SET "
    "worker_id = excluded.worker_id, outcome = excluded.outcome, "
    "exit_code = excluded.exit_code, message = excluded.message, "
    "started_at_us = excluded.started_at_us, "
    "ended_at_us = excluded.ended_at_us";
constexpr char kUpsertMetric[] =
    "INSERT INTO metrics (trial_id, name, step, value, attempt) "
    "VALUES (?, ?, ?, ?, ?) ON CONFLICT (trial_id, name, step) DO UPDATE SET "
    "value = excluded.value, attempt = excluded.attempt";
constexpr char kUpsertWorker[] =
    "INSERT INTO workers (" SMOE_WORKER_COLUMNS
    ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
    "ON CONFLICT (worker_id) DO UPDATE SET "
    "hostname = excluded.hostname, cpus = excluded.cpus, "
    "gpus = excluded.gpus, slots = excluded.slots, "
    "labels_json = excluded.labels_json, kinds_json = excluded.kinds_json, "
    "draining = excluded.draining, "
    "registered_at_us = excluded.registered_at_us, "
    "last_heartbeat_at_us = excluded.last_heartbeat_at_us";
constexpr char kDeleteResults[] =
    "DELETE FROM trial_results WHERE trial_id = ?";
constexpr char kInsertResult[] =
    "INSERT INTO trial_results (trial_id, name, value) VALUES (?, ?, ?)";
constexpr char kInsertDecision[] =
    "INSERT INTO decisions (sweep_id, trial_id, action, grp, rung, step, "
    "value, cutoff, final, reason, at_us) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)";
constexpr char kListDecisions[] =
    "SELECT seq, sweep_id, trial_id, action, grp, rung, step, value, cutoff, "
    "final, reason, at_us FROM decisions WHERE sweep_id = ? AND seq > ? "
    "ORDER BY seq LIMIT ?";
constexpr char kListDecisionsBefore[] =
    "SELECT seq, sweep_id, trial_id, action, grp, rung, step, value, cutoff, "
    "final, reason, at_us FROM decisions WHERE sweep_id = ? AND seq < ? "
    "ORDER BY seq DESC LIMIT ?";
// From the decisions_by_sweep index: one probe each (a MIN and a MAX in
// one statement would scan the sweep's range instead).
constexpr char kFirstDecisionSeq[] =
    "SELECT seq FROM decisions WHERE sweep_id = ? ORDER BY seq LIMIT 1";
constexpr char kLastDecisionSeq[] =
    "SELECT seq FROM decisions WHERE sweep_id = ? ORDER BY seq DESC LIMIT 1";
constexpr char kCountDecisionsAfter[] =
    "SELECT COUNT(*) FROM decisions WHERE sweep_id = ? AND seq > ?";
constexpr char kSetDuration[] =
    "UPDATE trials SET duration_s = ? WHERE trial_id = ?";

constexpr char kUpsertCheckpoint[] =
    "INSERT INTO trial_checkpoints (trial_id, step, file_name, bytes, sha256, "
    "attempt, worker_id, created_at_us) VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
    "ON CONFLICT (trial_id, step) DO UPDATE SET "
    "file_name = excluded.file_name, bytes = excluded.bytes, "
    "sha256 = excluded.sha256, attempt = excluded.attempt, "
    "worker_id = excluded.worker_id, created_at_us = excluded.created_at_us";
constexpr char kDeleteCheckpoint[] =
    "DELETE FROM trial_checkpoints WHERE trial_id = ? AND step = ?";
constexpr char kListCheckpointsOfTrial[] =
    "SELECT trial_id, step, file_name, bytes, sha256, attempt, worker_id, "
    "created_at_us FROM trial_checkpoints WHERE trial_id = ? ORDER BY step";
constexpr char kListAllCheckpoints[] =
    "SELECT trial_id, step, file_name, bytes, sha256, attempt, worker_id, "
    "created_at_us FROM trial_checkpoints ORDER BY trial_id, step";

constexpr char kUpsertTrialLog[] =
    "INSERT INTO trial_logs (trial_id, attempt, text, total_bytes, "
    "updated_at_us) VALUES (?, ?, ?, ?, ?) "
    "ON CONFLICT (trial_id, attempt) DO UPDATE SET text = excluded.text, "
    "total_bytes = excluded.total_bytes, "
    "updated_at_us = excluded.updated_at_us";
constexpr char kListTrialLogs[] =
    "SELECT trial_id, attempt, text, total_bytes, updated_at_us "
    "FROM trial_logs WHERE trial_id = ? ORDER BY attempt";

// Deleting a sweep (WriteBatch::deleted_sweeps): children first, so the
// foreign keys hold at every statement. Every table of store/migrations.cc
// keyed by a trial or a sweep is here (SqliteStoreTest checks that no other
// table refers to them).
#define SMOE_OF_SWEEP \
  " WHERE trial_id IN (SELECT trial_id FROM trials WHERE sweep_id = ?)"
constexpr char kDeleteSweepTrialLogs[] = "DELETE FROM trial_logs" SMOE_OF_SWEEP;
constexpr char kDeleteSweepCheckpoints[] =
    "DELETE FROM trial_checkpoints" SMOE_OF_SWEEP;
constexpr char kDeleteSweepResults[] =
    "DELETE FROM trial_results" SMOE_OF_SWEEP;
constexpr char kDeleteSweepMetrics[] = "DELETE FROM metrics" SMOE_OF_SWEEP;
constexpr char kDeleteSweepAttempts[] = "DELETE FROM attempts" SMOE_OF_SWEEP;
#undef SMOE_OF_SWEEP
constexpr char kDeleteSweepDecisions[] =
    "DELETE FROM decisions WHERE sweep_id = ?";
constexpr char kDeleteSweepTrials[] = "DELETE FROM trials WHERE sweep_id = ?";
constexpr char kDeleteSweep[] = "DELETE FROM sweeps WHERE sweep_id = ?";

constexpr char kBegin[] = "BEGIN IMMEDIATE";
constexpr char kCommit[] = "COMMIT";
constexpr char kRollback[] = "ROLLBACK";

constexpr char kSweepExists[] = "SELECT 1 FROM sweeps WHERE sweep_id = ?";
constexpr char kTrialExists[] = "SELECT 1 FROM trials WHERE trial_id = ?";

constexpr char kGetSweep[] =
    "SELECT " SMOE_SWEEP_COLUMNS SMOE_SWEEP_ANNOTATION_COLUMNS
    " FROM sweeps WHERE sweep_id = ?";
constexpr char kListSweeps[] =
    "SELECT " SMOE_SWEEP_COLUMNS SMOE_SWEEP_ANNOTATION_COLUMNS
    " FROM sweeps ORDER BY created_at_us, rowid";
constexpr char kGetTrial[] =
    "SELECT " SMOE_TRIAL_COLUMNS " FROM trials WHERE trial_id = ?";
constexpr char kListTrialsOfSweep[] =
    "SELECT " SMOE_TRIAL_COLUMNS
    " FROM trials WHERE sweep_id = ? ORDER BY ordinal, trial_id";
constexpr char kListAllTrials[] =
    "SELECT " SMOE_TRIAL_COLUMNS
    " FROM trials ORDER BY sweep_id, ordinal, trial_id";
constexpr char kListAttempts[] =
    "SELECT " SMOE_ATTEMPT_COLUMNS
    " FROM attempts WHERE trial_id = ? ORDER BY attempt";
// One read for a sweep's attempts (the primary key (trial_id, attempt) gives
// the order).
constexpr char kListSweepAttempts[] =
    "SELECT " SMOE_ATTEMPT_COLUMNS
    " FROM attempts WHERE trial_id IN (SELECT trial_id FROM trials WHERE "
    "sweep_id = ?) ORDER BY trial_id, attempt";
// The same rows for the trials in a key range [?1, ?2) of the attempts'
// primary key (a trial id prefix), each checked against the sweep: O(the
// range's attempts), not one probe per trial of the sweep.
constexpr char kListSweepAttemptsInRange[] =
    "SELECT " SMOE_ATTEMPT_COLUMNS
    " FROM attempts WHERE attempts.trial_id >= ?1 AND attempts.trial_id < ?2"
    " AND EXISTS (SELECT 1 FROM trials AS t WHERE t.trial_id ="
    " attempts.trial_id AND t.sweep_id = ?3) ORDER BY trial_id, attempt";
constexpr char kListWorkers[] =
    "SELECT " SMOE_WORKER_COLUMNS " FROM workers ORDER BY worker_id";
constexpr char kListMetrics[] =
    "SELECT trial_id, name, step, value, attempt FROM metrics "
    "WHERE trial_id = ? ORDER BY name, step";
constexpr char kListMetricsNamed[] =
    "SELECT trial_id, name, step, value, attempt FROM metrics "
    "WHERE trial_id = ? AND name = ? ORDER BY step";
constexpr char kListSummariesOfSweep[] =
    "SELECT " SMOE_SUMMARY_COLUMNS
    " FROM trials AS t WHERE t.sweep_id = ? ORDER BY t.ordinal, t.trial_id";
constexpr char kListAllSummaries[] =
    "SELECT " SMOE_SUMMARY_COLUMNS
    " FROM trials AS t ORDER BY t.sweep_id, t.ordinal, t.trial_id";
constexpr char kGetSummary[] = "SELECT " SMOE_SUMMARY_COLUMNS
                               ", t.ordinal FROM trials AS t WHERE "
                               "t.trial_id = ? AND t.sweep_id = ?";
constexpr char kListResultsOfTrial[] =
    "SELECT name, value FROM trial_results WHERE trial_id = ?";
constexpr char kListResultsOfSweep[] =
    "SELECT r.trial_id, r.name, r.value FROM trial_results AS r "
    "JOIN trials AS t ON t.trial_id = r.trial_id WHERE t.sweep_id = ?";
constexpr char kListAllResults[] =
    "SELECT trial_id, name, value FROM trial_results";
// A sweep whose trial ids all start with "<sweep>/" (the scheduler's names):
// its rows without the per-row attempt probes, then its attempts and results
// from the key range [?1, ?2) of their primary keys (trial_id first), each a
// forward walk, matched to the rows in C++ (ListSummaries). At 10^6 trials
// the probes and the results' join back to trials were random B-tree reads
// (the dashboard's cold first page: ~20 s).
constexpr char kListSummaryRowsOfSweep[] =
    "SELECT t.trial_id, t.sweep_id, t.params_json, t.seed, t.state, "
    "t.attempt, t.worker_id, t.duration_s, t.last_error, NULL FROM trials AS "
    "t WHERE t.sweep_id = ? ORDER BY t.ordinal, t.trial_id";
constexpr char kListAttemptEndsInRange[] =
    "SELECT trial_id, attempt, worker_id, outcome, exit_code FROM attempts "
    "WHERE trial_id >= ?1 AND trial_id < ?2 ORDER BY trial_id, attempt";
constexpr char kListResultsInRange[] =
    "SELECT trial_id, name, value FROM trial_results "
    "WHERE trial_id >= ?1 AND trial_id < ?2 ORDER BY trial_id, name";

constexpr char kSchemaVersionTable[] =
    "CREATE TABLE IF NOT EXISTS schema_version ("
    "version INTEGER PRIMARY KEY NOT NULL, name TEXT NOT NULL, "
    "applied_at_us INTEGER NOT NULL)";
constexpr char kHasSchemaVersionTable[] =
    "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND "
    "name = 'schema_version'";
constexpr char kReadSchemaVersion[] =
    "SELECT COALESCE(MAX(version), 0) FROM schema_version";
constexpr char kRecordMigration[] =
    "INSERT INTO schema_version (version, name, applied_at_us) VALUES (?, ?, "
    "?)";

// ---- Errors
// -------------------------------------------------------------------

absl::StatusCode CodeFor(int rc) {
  switch (rc & 0xff) {
    case SQLITE_NOTADB:
    case SQLITE_CORRUPT:
      return absl::StatusCode::kDataLoss;
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return absl::StatusCode::kUnavailable;
    case SQLITE_FULL:
    case SQLITE_NOMEM:
      return absl::StatusCode::kResourceExhausted;
    case SQLITE_CONSTRAINT:
    case SQLITE_CANTOPEN:
      return absl::StatusCode::kFailedPrecondition;
    case SQLITE_PERM:
    case SQLITE_READONLY:
    case SQLITE_AUTH:
      return absl::StatusCode::kPermissionDenied;
    default:
      return absl::StatusCode::kInternal;
  }
}

absl::Status SqliteError(sqlite3* db, int rc, absl::string_view op,
                         absl::string_view path) {
  // sqlite3_errmsg describes the most recent failure on `db`, which is the one
  // that produced `rc` (every call is made under the store's mutex).
  const char* msg = db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  return absl::Status(CodeFor(rc),
                      absl::StrCat("sqlite ", op, " on '", path, "': ", msg,
                                   " (code ", rc, ")"));
}

absl::Status Corrupt(absl::string_view what, absl::string_view detail) {
  return absl::DataLossError(
      absl::StrCat("store row ", what, " is corrupt: ", detail));
}

}  // namespace

// ---- Statement
// ----------------------------------------------------------------

// One use of a cached prepared statement: binds parameters in order, steps,
// reads columns, and resets the statement when it goes out of scope.
class SqliteStore::Statement {
 public:
  Statement(const SqliteStore* store, sqlite3_stmt* stmt, const char* op)
      : store_(store), stmt_(stmt), op_(op) {}
  ~Statement() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  Statement& Text(absl::string_view v) {
    // A null data pointer would bind SQL NULL; bind "" instead.
    const char* data = v.data() != nullptr ? v.data() : "";
    return Check(sqlite3_bind_text(
        stmt_, ++index_, data, static_cast<int>(v.size()), SQLITE_TRANSIENT));
  }
  Statement& Int(int64_t v) {
    return Check(sqlite3_bind_int64(stmt_, ++index_, v));
  }
  // NaN is stored as NULL (SQLite turns NaN into NULL anyway).
  Statement& Real(double v) {
    if (std::isnan(v)) return Check(sqlite3_bind_null(stmt_, ++index_));
    return Check(sqlite3_bind_double(stmt_, ++index_, v));
  }
  Statement& Time(absl::Time t) { return Int(TimeToMicros(t)); }

  // Steps once: true when a row is available, false when done.
  absl::StatusOr<bool> Step() {
    if (bind_rc_ != SQLITE_OK) return Error(bind_rc_);
    const int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    return Error(rc);
  }
  // Steps a statement that returns no rows.
  absl::Status Run() {
    SMOE_ASSIGN_OR_RETURN(bool row, Step());
    (void)row;
    return absl::OkStatus();
  }

  // The column's bytes, valid until the next Step (or reset).
  absl::string_view ColView(int i) const {
    const unsigned char* p = sqlite3_column_text(stmt_, i);
    const int n = sqlite3_column_bytes(stmt_, i);
    if (p == nullptr) return absl::string_view();
    return absl::string_view(reinterpret_cast<const char*>(p), n);
  }
  std::string ColText(int i) const {
    const unsigned char* p = sqlite3_column_text(stmt_, i);
    const int n = sqlite3_column_bytes(stmt_, i);
    if (p == nullptr) return std::string();
    return std::string(reinterpret_cast<const char*>(p), n);
  }
  int64_t ColInt(int i) const { return sqlite3_column_int64(stmt_, i); }
  bool ColIsNull(int i) const {
    return sqlite3_column_type(stmt_, i) == SQLITE_NULL;
  }
  double ColReal(int i) const {
    if (sqlite3_column_type(stmt_, i) == SQLITE_NULL) {
      return std::numeric_limits<double>::quiet_NaN();
    }
    return sqlite3_column_double(stmt_, i);
  }
  absl::Time ColTime(int i) const { return MicrosToTime(ColInt(i)); }

 private:
  Statement& Check(int rc) {
    if (rc != SQLITE_OK && bind_rc_ == SQLITE_OK) bind_rc_ = rc;
    return *this;
  }
  absl::Status Error(int rc) const ABSL_NO_THREAD_SAFETY_ANALYSIS {
    return SqliteError(store_->db_, rc, op_, store_->path_);
  }

  const SqliteStore* store_;
  sqlite3_stmt* stmt_;
  const char* op_;
  int index_ = 0;
  int bind_rc_ = SQLITE_OK;
};

namespace {

// Row readers; column orders follow the SMOE_*_COLUMNS lists.
template <typename Stmt>
absl::StatusOr<DecisionRecord> ReadDecision(const Stmt& s) {
  DecisionRecord d;
  d.seq = s.ColInt(0);
  d.sweep_id = s.ColText(1);
  d.trial_id = s.ColText(2);
  d.action = s.ColText(3);
  d.group = s.ColText(4);
  d.rung = static_cast<int>(s.ColInt(5));
  d.step = s.ColInt(6);
  d.value = s.ColReal(7);
  d.cutoff = s.ColReal(8);
  d.final = s.ColInt(9) != 0;
  d.reason = s.ColText(10);
  d.at = s.ColTime(11);
  return d;
}

template <typename Stmt>
absl::StatusOr<SweepRecord> ReadSweep(const Stmt& s) {
  SweepRecord r;
  r.sweep_id = s.ColText(0);
  r.kind = s.ColText(1);
  r.spec_yaml = s.ColText(2);
  r.priority = static_cast<int>(s.ColInt(3));
  r.max_error_retries = static_cast<int>(s.ColInt(4));
  auto state = ParseSweepState(s.ColText(5));
  if (!state.ok())
    return Corrupt("sweep " + r.sweep_id, state.status().message());
  r.state = *state;
  r.created_at = s.ColTime(6);
  r.updated_at = s.ColTime(7);
  r.notes = s.ColText(8);
  const nlohmann::json tags =
      nlohmann::json::parse(s.ColText(9), nullptr, /*allow_exceptions=*/false);
  if (!tags.is_array()) return Corrupt("sweep " + r.sweep_id, "bad tags_json");
  for (const nlohmann::json& t : tags) {
    if (t.is_string()) r.tags.push_back(t.get<std::string>());
  }
  r.archived = s.ColInt(10) != 0;
  return r;
}

template <typename Stmt>
absl::StatusOr<TrialSummary> ReadSummary(const Stmt& s) {
  TrialSummary t;
  t.trial_id = s.ColText(0);
  t.sweep_id = s.ColText(1);
  t.params_json = s.ColText(2);
  t.seed = s.ColInt(3);
  auto state = ParseTrialState(s.ColText(4));
  if (!state.ok()) {
    return Corrupt("trial " + t.trial_id, state.status().message());
  }
  t.state = *state;
  t.attempt = static_cast<int>(s.ColInt(5));
  t.worker_id = s.ColText(6);
  t.duration_s = s.ColReal(7);
  t.last_error = s.ColText(8);
  if (!s.ColIsNull(9)) t.last_exit_code = static_cast<int>(s.ColInt(9));
  return t;
}

template <typename Stmt>
absl::StatusOr<TrialRecord> ReadTrial(const Stmt& s) {
  TrialRecord r;
  r.trial_id = s.ColText(0);
  r.sweep_id = s.ColText(1);
  r.ordinal = s.ColInt(2);
  r.params_json = s.ColText(3);
  r.seed = s.ColInt(4);
  auto state = ParseTrialState(s.ColText(5));
  if (!state.ok())
    return Corrupt("trial " + r.trial_id, state.status().message());
  r.state = *state;
  r.attempt = static_cast<int>(s.ColInt(6));
  r.error_count = static_cast<int>(s.ColInt(7));
  r.preempt_count = static_cast<int>(s.ColInt(8));
  r.gpus = static_cast<int>(s.ColInt(9));
  r.worker_id = s.ColText(10);
  r.lease_expires_at = s.ColTime(11);
  r.last_error = s.ColText(12);
  r.created_at = s.ColTime(13);
  r.updated_at = s.ColTime(14);
  return r;
}

template <typename Stmt>
absl::StatusOr<AttemptRecord> ReadAttempt(const Stmt& s) {
  AttemptRecord r;
  r.trial_id = s.ColText(0);
  r.attempt = static_cast<int>(s.ColInt(1));
  r.worker_id = s.ColText(2);
  auto outcome = ParseAttemptOutcome(s.ColText(3));
  if (!outcome.ok()) {
    return Corrupt(absl::StrCat("attempt ", r.attempt, " of ", r.trial_id),
                   outcome.status().message());
  }
  r.outcome = *outcome;
  r.exit_code = static_cast<int>(s.ColInt(4));
  r.message = s.ColText(5);
  r.started_at = s.ColTime(6);
  r.ended_at = s.ColTime(7);
  return r;
}

template <typename Stmt>
absl::StatusOr<WorkerRecord> ReadWorker(const Stmt& s) {
  WorkerRecord r;
  r.worker_id = s.ColText(0);
  r.hostname = s.ColText(1);
  r.cpus = static_cast<int>(s.ColInt(2));
  r.gpus = static_cast<int>(s.ColInt(3));
  r.slots = static_cast<int>(s.ColInt(4));
  const std::string what = "worker " + r.worker_id;
  nlohmann::json labels = nlohmann::json::parse(s.ColText(5), nullptr,
                                                /*allow_exceptions=*/false);
  if (labels.is_discarded() || !labels.is_object()) {
    return Corrupt(what, "labels_json is not a JSON object");
  }
  for (const auto& item : labels.items()) {
    if (!item.value().is_string()) {
      return Corrupt(what, "a label value is not a string");
    }
    r.labels[item.key()] = item.value().get<std::string>();
  }
  nlohmann::json kinds = nlohmann::json::parse(s.ColText(6), nullptr,
                                               /*allow_exceptions=*/false);
  if (kinds.is_discarded() || !kinds.is_array()) {
    return Corrupt(what, "kinds_json is not a JSON array");
  }
  for (const auto& kind : kinds) {
    if (!kind.is_string()) return Corrupt(what, "a kind is not a string");
    r.kinds.push_back(kind.get<std::string>());
  }
  r.draining = s.ColInt(7) != 0;
  r.registered_at = s.ColTime(8);
  r.last_heartbeat_at = s.ColTime(9);
  return r;
}

// Steps `s` to the end, appending read(s) for every row to `out`.
template <typename Stmt, typename Read, typename Record>
absl::Status ReadAll(Stmt& s, Read read, std::vector<Record>* out) {
  while (true) {
    SMOE_ASSIGN_OR_RETURN(bool row, s.Step());
    if (!row) return absl::OkStatus();
    SMOE_ASSIGN_OR_RETURN(Record record, read(s));
    out->push_back(std::move(record));
  }
}

// Serialises without throwing: invalid UTF-8 is replaced by U+FFFD.
std::string DumpJson(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

// ---- SqliteStore
// ----------------------------------------------------------------

SqliteStore::SqliteStore(std::string path, SqliteOptions options, sqlite3* db)
    : path_(std::move(path)), options_(std::move(options)), db_(db) {}

SqliteStore::~SqliteStore() {
  absl::MutexLock lock(&mu_);
  for (auto& [sql, stmt] : statements_) sqlite3_finalize(stmt);
  statements_.clear();
  sqlite3_close_v2(db_);
  db_ = nullptr;
}

absl::StatusOr<std::unique_ptr<SqliteStore>> SqliteStore::Open(
    const std::string& path, const SqliteOptions& options) {
  if (path != ":memory:" && !options.allow_empty_file) {
    struct stat st;
    if (::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
        st.st_size == 0) {
      return absl::DataLossError(absl::StrCat(
          "database '", path,
          "' is an empty file (0 bytes) where a database was expected; "
          "restore it from a backup (docs/reliability.md), or start with "
          "--init to create a new, empty store in its place"));
    }
  }
  sqlite3* db = nullptr;
  const int rc = sqlite3_open_v2(
      path.c_str(), &db,
      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
      nullptr);
  if (rc != SQLITE_OK) {
    absl::Status status = SqliteError(db, rc, "open", path);
    sqlite3_close_v2(db);  // harmless on nullptr
    return status;
  }
  // The store holds attempt logs, parameters and token names: owner only
  // (SQLite gives its -wal and -shm files the database file's mode).
  if (path != ":memory:") {
    for (const char* suffix : {"", "-wal", "-shm"}) {
      const std::string f = path + suffix;
      struct stat st;
      if (::stat(f.c_str(), &st) == 0 && (st.st_mode & 0077) != 0) {
        ::chmod(f.c_str(), 0600);
      }
    }
  }
  auto store = absl::WrapUnique(new SqliteStore(path, options, db));
  {
    absl::MutexLock lock(&store->mu_);
    SMOE_RETURN_IF_ERROR(store->Initialize());
  }
  return store;
}

absl::Status SqliteStore::Error(int rc, absl::string_view op) const {
  return SqliteError(db_, rc, op, path_);
}

absl::Status SqliteStore::Exec(const char* sql, const char* op) {
  char* errmsg = nullptr;
  const int rc = sqlite3_exec(db_, sql, nullptr, nullptr, &errmsg);
  sqlite3_free(errmsg);  // sqlite3_errmsg(db_) carries the same text
  if (rc != SQLITE_OK) return Error(rc, op);
  return absl::OkStatus();
}

absl::StatusOr<sqlite3_stmt*> SqliteStore::Prepare(const char* sql,
                                                   const char* op) {
  auto it = statements_.find(sql);
  if (it != statements_.end()) return it->second;
  sqlite3_stmt* stmt = nullptr;
  const int rc = sqlite3_prepare_v3(db_, sql, -1, SQLITE_PREPARE_PERSISTENT,
                                    &stmt, nullptr);
  if (rc != SQLITE_OK) {
    sqlite3_finalize(stmt);
    return Error(rc, absl::StrCat(op, " (prepare)"));
  }
  statements_.emplace(sql, stmt);
  return stmt;
}

// Declares `var`, a Statement over the cached statement for `sql`.
#define SMOE_STATEMENT(var, sql, op)                                 \
  SMOE_ASSIGN_OR_RETURN(sqlite3_stmt* var##_raw_, Prepare(sql, op)); \
  Statement var(this, var##_raw_, op)

absl::Status SqliteStore::Initialize() {
  sqlite3_extended_result_codes(db_, 1);
  if (int rc = sqlite3_busy_timeout(db_, options_.busy_timeout_ms);
      rc != SQLITE_OK) {
    return Error(rc, "set busy timeout");
  }
  // The first statement reads the file header: a file that is not a database
  // fails here with DataLoss.
  SMOE_ASSIGN_OR_RETURN(
      std::vector<std::string> mode,
      DebugQueryLocked("PRAGMA journal_mode = WAL", "set journal_mode=WAL"));
  const std::string expected = path_ == ":memory:" ? "memory" : "wal";
  if (mode.size() != 1 || mode[0] != expected) {
    return absl::FailedPreconditionError(
        absl::StrCat("sqlite on '", path_, "': could not enable WAL; ",
                     "journal_mode is '", mode.empty() ? "" : mode[0], "'"));
  }
  SMOE_RETURN_IF_ERROR(
      Exec(options_.synchronous == SqliteOptions::Synchronous::kFull
               ? "PRAGMA synchronous = FULL"
               : "PRAGMA synchronous = NORMAL",
           "set synchronous"));
  SMOE_RETURN_IF_ERROR(Exec(
      absl::StrCat("PRAGMA cache_size = ", -options_.cache_size_kib).c_str(),
      "set cache_size"));
  SMOE_RETURN_IF_ERROR(Exec("PRAGMA foreign_keys = ON", "enable foreign_keys"));
  SMOE_ASSIGN_OR_RETURN(
      std::vector<std::string> fk,
      DebugQueryLocked("PRAGMA foreign_keys", "read foreign_keys"));
  if (fk.size() != 1 || fk[0] != "1") {
    return absl::FailedPreconditionError(absl::StrCat(
        "sqlite on '", path_, "': foreign keys could not be enabled"));
  }
  if (options_.quick_check) SMOE_RETURN_IF_ERROR(QuickCheck());
  SMOE_RETURN_IF_ERROR(CheckApplicationId());
  return Migrate();
}

absl::Status SqliteStore::CheckApplicationId() {
  SMOE_ASSIGN_OR_RETURN(
      std::vector<std::string> id,
      DebugQueryLocked("PRAGMA application_id", "read application_id"));
  int64_t app = 0;
  if (id.size() == 1) app = std::strtoll(id[0].c_str(), nullptr, 10);
  if (app == kSmoeApplicationId) return absl::OkStatus();
  if (app != 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "database '", path_,
        "' belongs to another application (PRAGMA "
        "application_id = ",
        app, ", ours is ", kSmoeApplicationId,
        "); refusing to open or migrate it: point --data-dir elsewhere"));
  }
  // No id: a new file, or one of ours written before the id was stamped
  // (it has our schema_version table).
  SMOE_ASSIGN_OR_RETURN(
      std::vector<std::string> tables,
      DebugQueryLocked("SELECT name FROM sqlite_master WHERE type = 'table' "
                       "AND name NOT LIKE 'sqlite_%' ORDER BY name LIMIT 6",
                       "list tables"));
  const bool ours =
      std::find(tables.begin(), tables.end(), "schema_version") != tables.end();
  if (!tables.empty() && !ours) {
    if (tables.size() > 5) tables.back() = "...";
    return absl::FailedPreconditionError(absl::StrCat(
        "database '", path_,
        "' is not a SMoE Lab store (no schema_version "
        "table; its tables: ",
        absl::StrJoin(tables, ", "),
        "); refusing to migrate another application's database: point "
        "--data-dir elsewhere"));
  }
  return Exec(
      absl::StrCat("PRAGMA application_id = ", kSmoeApplicationId).c_str(),
      "set application_id");
}

absl::Status SqliteStore::QuickCheck() {
  // integrity_check also compares every index with its table (an index
  // that lost or gained rows); quick_check does not, but costs O(size).
  const char* check = "quick_check";
  struct stat st;
  if (path_ != ":memory:" && ::stat(path_.c_str(), &st) == 0 &&
      st.st_size <= options_.integrity_check_max_bytes) {
    check = "integrity_check";
  }
  absl::StatusOr<std::vector<std::string>> rows =
      DebugQueryLocked(absl::StrCat("PRAGMA ", check, "(5)"), check);
  if (!rows.ok()) {
    return absl::DataLossError(
        absl::StrCat("database '", path_, "' failed PRAGMA ", check, " (",
                     rows.status().message(),
                     "); restore it from a backup (docs/reliability.md)"));
  }
  if (rows->size() == 1 && (*rows)[0] == "ok") return absl::OkStatus();
  return absl::DataLossError(
      absl::StrCat("database '", path_, "' is damaged (PRAGMA ", check, ": ",
                   absl::StrJoin(*rows, "; "),
                   "); refusing to serve it: restore it from a backup "
                   "(docs/reliability.md)"));
}

absl::Status SqliteStore::CheckWritable() {
  absl::MutexLock lock(&mu_);
  SMOE_ASSIGN_OR_RETURN(
      std::vector<std::string> v,
      DebugQueryLocked("PRAGMA user_version", "read user_version"));
  int64_t version = 0;
  if (!v.empty()) version = std::strtoll(v[0].c_str(), nullptr, 10);
  const std::string sql =
      absl::StrCat("PRAGMA user_version = ", (version + 1) % 1000000);
  return Exec(sql.c_str(), "write probe");
}

absl::Status SqliteStore::Backup(const std::string& db_path,
                                 const std::string& dest_path) {
  struct stat st;
  if (::stat(db_path.c_str(), &st) != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("no database at '", db_path, "'"));
  }
  if (::stat(dest_path.c_str(), &st) == 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "'", dest_path, "' exists; a backup never overwrites a file"));
  }
  sqlite3* src = nullptr;
  int rc =
      sqlite3_open_v2(db_path.c_str(), &src,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    absl::Status status = SqliteError(src, rc, "backup: open", db_path);
    sqlite3_close_v2(src);
    return status;
  }
  sqlite3_busy_timeout(src, 5000);
  const std::string tmp = dest_path + ".tmp";
  std::remove(tmp.c_str());
  sqlite3* dst = nullptr;
  rc = sqlite3_open_v2(
      tmp.c_str(), &dst,
      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
      nullptr);
  absl::Status status;
  if (rc != SQLITE_OK) {
    status = SqliteError(dst, rc, "backup: create", tmp);
  } else {
    sqlite3_backup* b = sqlite3_backup_init(dst, "main", src, "main");
    if (b == nullptr) {
      status = SqliteError(dst, sqlite3_errcode(dst), "backup: init", tmp);
    } else {
      // Copies in steps so a running coordinator's writers are not held up
      // for the whole copy; a write in between restarts the copy (SQLite).
      do {
        rc = sqlite3_backup_step(b, 256);
        if (rc == SQLITE_BUSY || rc == SQLITE_LOCKED) sqlite3_sleep(20);
      } while (rc == SQLITE_OK || rc == SQLITE_BUSY || rc == SQLITE_LOCKED);
      sqlite3_backup_finish(b);
      if (rc != SQLITE_DONE) {
        status = SqliteError(dst, rc, "backup: copy", db_path);
      }
    }
  }
  if (status.ok()) {
    char* err = nullptr;
    rc = sqlite3_exec(dst, "PRAGMA journal_mode = DELETE", nullptr, nullptr,
                      &err);
    sqlite3_free(err);
    if (rc != SQLITE_OK) status = SqliteError(dst, rc, "backup: finish", tmp);
  }
  sqlite3_close_v2(dst);
  sqlite3_close_v2(src);
  if (status.ok()) {
    // Check the copy the way Open() checks a store.
    SqliteOptions check;
    check.busy_timeout_ms = 1000;
    auto copy = SqliteStore::Open(tmp, check);
    if (!copy.ok()) {
      status = copy.status();
    } else {
      copy->reset();
      // Open() put the copy back in WAL mode: make it one file again.
      sqlite3* db = nullptr;
      rc =
          sqlite3_open_v2(tmp.c_str(), &db,
                          SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nullptr);
      if (rc == SQLITE_OK) {
        rc = sqlite3_exec(db, "PRAGMA journal_mode = DELETE", nullptr, nullptr,
                          nullptr);
      }
      if (rc != SQLITE_OK) status = SqliteError(db, rc, "backup: finish", tmp);
      sqlite3_close_v2(db);
    }
  }
  if (status.ok() && std::rename(tmp.c_str(), dest_path.c_str()) != 0) {
    status = absl::InternalError(absl::StrCat("backup: cannot rename '", tmp,
                                              "' to '", dest_path,
                                              "': ", std::strerror(errno)));
  }
  if (!status.ok()) {
    std::remove(tmp.c_str());
    std::remove((tmp + "-wal").c_str());
    std::remove((tmp + "-shm").c_str());
  }
  return status;
}

absl::StatusOr<int> SqliteStore::SchemaVersionLocked() {
  {
    SMOE_STATEMENT(has_table, kHasSchemaVersionTable, "read schema_version");
    SMOE_ASSIGN_OR_RETURN(bool row, has_table.Step());
    if (!row || has_table.ColInt(0) == 0) return 0;
  }
  SMOE_STATEMENT(version, kReadSchemaVersion, "read schema_version");
  SMOE_ASSIGN_OR_RETURN(bool row, version.Step());
  if (!row) return 0;
  return static_cast<int>(version.ColInt(0));
}

absl::Status SqliteStore::SchemaTooNew(int version) const {
  return absl::FailedPreconditionError(absl::StrCat(
      "database '", path_, "' has schema version ", version,
      ", newer than the latest this build knows (", LatestSchemaVersion(),
      "); open it with a newer smoe build"));
}

absl::Status SqliteStore::Migrate() {
  const int latest = LatestSchemaVersion();
  const int target = options_.TEST_max_schema_version > 0
                         ? std::min(options_.TEST_max_schema_version, latest)
                         : latest;
  // Fast path without the write lock: already up to date.
  SMOE_ASSIGN_OR_RETURN(int version, SchemaVersionLocked());
  if (version > latest) return SchemaTooNew(version);
  if (version >= target) return absl::OkStatus();

  SMOE_RETURN_IF_ERROR(Exec("BEGIN IMMEDIATE", "migrate: begin"));
  absl::Status status = ApplyMigrations(target);
  if (status.ok()) status = Exec("COMMIT", "migrate: commit");
  if (!status.ok() && sqlite3_get_autocommit(db_) == 0) {
    Exec("ROLLBACK", "migrate: rollback").IgnoreError();
  }
  return status;
}

absl::Status SqliteStore::ApplyMigrations(int target) {
  SMOE_RETURN_IF_ERROR(Exec(kSchemaVersionTable, "create schema_version"));
  // Another process may have migrated while we waited for the lock.
  SMOE_ASSIGN_OR_RETURN(int current, SchemaVersionLocked());
  if (current > LatestSchemaVersion()) return SchemaTooNew(current);
  for (const Migration& m : Migrations()) {
    if (m.version <= current || m.version > target) continue;
    SMOE_RETURN_IF_ERROR(
        Exec(m.sql,
             absl::StrCat("migration ", m.version, " (", m.name, ")").c_str()));
    SMOE_STATEMENT(record, kRecordMigration, "record migration");
    record.Int(m.version).Text(m.name).Time(absl::Now());
    SMOE_RETURN_IF_ERROR(record.Run());
  }
  return absl::OkStatus();
}

absl::StatusOr<int> SqliteStore::SchemaVersion() {
  absl::MutexLock lock(&mu_);
  return SchemaVersionLocked();
}

absl::StatusOr<std::vector<std::string>> SqliteStore::DebugQuery(
    const std::string& sql) {
  absl::MutexLock lock(&mu_);
  return DebugQueryLocked(sql, "debug query");
}

absl::StatusOr<std::vector<std::string>> SqliteStore::DebugQueryLocked(
    const std::string& sql, const char* op) {
  sqlite3_stmt* stmt = nullptr;
  int rc = sqlite3_prepare_v2(db_, sql.c_str(), -1, &stmt, nullptr);
  if (rc != SQLITE_OK) {
    sqlite3_finalize(stmt);
    return Error(rc, op);
  }
  if (stmt == nullptr) return std::vector<std::string>();  // empty SQL
  std::vector<std::string> out;
  absl::Status status;
  {
    Statement s(this, stmt, op);
    while (true) {
      absl::StatusOr<bool> row = s.Step();
      if (!row.ok()) {
        status = row.status();
        break;
      }
      if (!*row) break;
      out.push_back(s.ColText(0));
    }
  }
  sqlite3_finalize(stmt);
  if (!status.ok()) return status;
  return out;
}

absl::Status SqliteStore::RunCached(const char* sql, const char* op) {
  SMOE_STATEMENT(s, sql, op);
  return s.Run();
}

absl::StatusOr<bool> SqliteStore::Exists(const char* sql, const std::string& id,
                                         const char* op) {
  SMOE_STATEMENT(s, sql, op);
  s.Text(id);
  return s.Step();
}

absl::StatusOr<bool> SqliteStore::TrialExists(
    const std::string& id, std::unordered_set<std::string>* known) {
  if (known->count(id) > 0) return true;
  SMOE_ASSIGN_OR_RETURN(bool found,
                        Exists(kTrialExists, id, "commit: find trial"));
  if (found) known->insert(id);
  return found;
}

absl::Status SqliteStore::WriteAll(const WriteBatch& batch) {
  int64_t rows = 0;
  auto row_written = [&] {
    ++rows;
    if (options_.TEST_after_row_written) options_.TEST_after_row_written(rows);
  };
  // Parents known to exist inside this transaction.
  std::unordered_set<std::string> sweeps;
  std::unordered_set<std::string> trials;
  const bool track_trials = !batch.attempts.empty() || !batch.metrics.empty() ||
                            !batch.results.empty() ||
                            !batch.checkpoints.empty() ||
                            !batch.trial_logs.empty();

  for (const SweepRecord& r : batch.sweeps) {
    SMOE_RETURN_IF_ERROR(internal::CheckNonEmptyId("sweep", r.sweep_id));
    SMOE_STATEMENT(s, kUpsertSweep, "commit: upsert sweep");
    s.Text(r.sweep_id)
        .Text(r.kind)
        .Text(r.spec_yaml)
        .Int(r.priority)
        .Int(r.max_error_retries)
        .Text(SweepStateName(r.state))
        .Time(r.created_at)
        .Time(r.updated_at);
    SMOE_RETURN_IF_ERROR(s.Run());
    if (options_.TEST_max_schema_version == 0 ||
        options_.TEST_max_schema_version >= 3) {
      SMOE_STATEMENT(a, kUpdateSweepAnnotations, "commit: sweep annotations");
      a.Text(r.notes)
          .Text(nlohmann::json(r.tags).dump())
          .Int(r.archived ? 1 : 0)
          .Text(r.sweep_id);
      SMOE_RETURN_IF_ERROR(a.Run());
    }
    sweeps.insert(r.sweep_id);
    row_written();
  }
  for (const TrialRecord& r : batch.trials) {
    SMOE_RETURN_IF_ERROR(internal::CheckNonEmptyId("trial", r.trial_id));
    if (sweeps.count(r.sweep_id) == 0) {
      SMOE_ASSIGN_OR_RETURN(
          bool found, Exists(kSweepExists, r.sweep_id, "commit: find sweep"));
      if (!found) return internal::MissingSweep(r);
      sweeps.insert(r.sweep_id);
    }
    SMOE_STATEMENT(s, kUpsertTrial, "commit: upsert trial");
    s.Text(r.trial_id)
        .Text(r.sweep_id)
        .Int(r.ordinal)
        .Text(r.params_json)
        .Int(r.seed)
        .Text(TrialStateName(r.state))
        .Int(r.attempt)
        .Int(r.error_count)
        .Int(r.preempt_count)
        .Int(r.gpus)
        .Text(r.worker_id)
        .Time(r.lease_expires_at)
        .Text(r.last_error)
        .Time(r.created_at)
        .Time(r.updated_at);
    SMOE_RETURN_IF_ERROR(s.Run());
    if (track_trials) trials.insert(r.trial_id);
    row_written();
  }
  for (const AttemptRecord& r : batch.attempts) {
    SMOE_ASSIGN_OR_RETURN(bool found, TrialExists(r.trial_id, &trials));
    if (!found) return internal::MissingTrial(r);
    SMOE_STATEMENT(s, kUpsertAttempt, "commit: upsert attempt");
    s.Text(r.trial_id)
        .Int(r.attempt)
        .Text(r.worker_id)
        .Text(AttemptOutcomeName(r.outcome))
        .Int(r.exit_code)
        .Text(r.message)
        .Time(r.started_at)
        .Time(r.ended_at);
    SMOE_RETURN_IF_ERROR(s.Run());
    row_written();
  }
  for (const MetricRecord& r : batch.metrics) {
    SMOE_ASSIGN_OR_RETURN(bool found, TrialExists(r.trial_id, &trials));
    if (!found) return internal::MissingTrial(r);
    SMOE_STATEMENT(s, kUpsertMetric, "commit: upsert metric");
    s.Text(r.trial_id).Text(r.name).Int(r.step).Real(r.value).Int(r.attempt);
    SMOE_RETURN_IF_ERROR(s.Run());
    row_written();
  }
  for (const WorkerRecord& r : batch.workers) {
    SMOE_RETURN_IF_ERROR(internal::CheckNonEmptyId("worker", r.worker_id));
    nlohmann::json labels = nlohmann::json::object();
    for (const auto& [key, value] : r.labels) labels[key] = value;
    nlohmann::json kinds = nlohmann::json::array();
    for (const std::string& kind : r.kinds) kinds.push_back(kind);
    SMOE_STATEMENT(s, kUpsertWorker, "commit: upsert worker");
    s.Text(r.worker_id)
        .Text(r.hostname)
        .Int(r.cpus)
        .Int(r.gpus)
        .Int(r.slots)
        .Text(DumpJson(labels))
        .Text(DumpJson(kinds))
        .Int(r.draining ? 1 : 0)
        .Time(r.registered_at)
        .Time(r.last_heartbeat_at);
    SMOE_RETURN_IF_ERROR(s.Run());
    row_written();
  }
  for (const WriteBatch::Result& r : batch.results) {
    SMOE_ASSIGN_OR_RETURN(bool found, TrialExists(r.trial_id, &trials));
    if (!found) return internal::MissingTrial(r);
    {
      SMOE_STATEMENT(s, kDeleteResults, "commit: delete results");
      s.Text(r.trial_id);
      SMOE_RETURN_IF_ERROR(s.Run());
    }
    for (const auto& [name, value] : r.values) {
      SMOE_STATEMENT(s, kInsertResult, "commit: insert result");
      s.Text(r.trial_id).Text(name).Real(value);
      SMOE_RETURN_IF_ERROR(s.Run());
    }
    {
      SMOE_STATEMENT(s, kSetDuration, "commit: set duration");
      s.Real(r.duration_s).Text(r.trial_id);
      SMOE_RETURN_IF_ERROR(s.Run());
    }
    row_written();
  }
  for (const DecisionRecord& r : batch.decisions) {
    if (sweeps.count(r.sweep_id) == 0) {
      SMOE_ASSIGN_OR_RETURN(
          bool found, Exists(kSweepExists, r.sweep_id, "commit: find sweep"));
      if (!found) return internal::MissingSweep(r);
      sweeps.insert(r.sweep_id);
    }
    SMOE_STATEMENT(s, kInsertDecision, "commit: insert decision");
    s.Text(r.sweep_id)
        .Text(r.trial_id)
        .Text(r.action)
        .Text(r.group)
        .Int(r.rung)
        .Int(r.step)
        .Real(r.value)
        .Real(r.cutoff)
        .Int(r.final ? 1 : 0)
        .Text(r.reason)
        .Time(r.at);
    SMOE_RETURN_IF_ERROR(s.Run());
    row_written();
  }
  for (const CheckpointRecord& r : batch.checkpoints) {
    SMOE_ASSIGN_OR_RETURN(bool found, TrialExists(r.trial_id, &trials));
    if (!found) return internal::MissingTrial(r);
    SMOE_STATEMENT(s, kUpsertCheckpoint, "commit: upsert checkpoint");
    s.Text(r.trial_id)
        .Int(r.step)
        .Text(r.file_name)
        .Int(r.bytes)
        .Text(r.sha256)
        .Int(r.attempt)
        .Text(r.worker_id)
        .Time(r.created_at);
    SMOE_RETURN_IF_ERROR(s.Run());
    row_written();
  }
  for (const auto& [trial_id, step] : batch.deleted_checkpoints) {
    SMOE_STATEMENT(s, kDeleteCheckpoint, "commit: delete checkpoint");
    s.Text(trial_id).Int(step);
    SMOE_RETURN_IF_ERROR(s.Run());
    row_written();
  }
  for (const TrialLogRecord& r : batch.trial_logs) {
    SMOE_ASSIGN_OR_RETURN(bool found, TrialExists(r.trial_id, &trials));
    if (!found) return internal::MissingTrial(r);
    SMOE_STATEMENT(s, kUpsertTrialLog, "commit: upsert trial log");
    s.Text(r.trial_id)
        .Int(r.attempt)
        .Text(r.text)
        .Int(r.total_bytes)
        .Time(r.updated_at);
    SMOE_RETURN_IF_ERROR(s.Run());
    row_written();
  }
  for (const std::string& id : batch.deleted_sweeps) {
    if (sweeps.count(id) == 0) {
      SMOE_ASSIGN_OR_RETURN(bool found,
                            Exists(kSweepExists, id, "delete sweep: find"));
      if (!found) return internal::MissingDeletedSweep(id);
    }
    // (table's first migration, statement): tables a test-only old schema
    // lacks are skipped.
    const std::pair<int, const char*> statements[] = {
        {6, kDeleteSweepTrialLogs}, {5, kDeleteSweepCheckpoints},
        {2, kDeleteSweepResults},   {1, kDeleteSweepMetrics},
        {1, kDeleteSweepAttempts},  {3, kDeleteSweepDecisions},
        {1, kDeleteSweepTrials},    {1, kDeleteSweep},
    };
    for (const auto& [version, sql] : statements) {
      if (options_.TEST_max_schema_version > 0 &&
          options_.TEST_max_schema_version < version) {
        continue;
      }
      SMOE_STATEMENT(s, sql, "commit: delete sweep");
      s.Text(id);
      SMOE_RETURN_IF_ERROR(s.Run());
    }
    sweeps.erase(id);
    trials.clear();  // the deleted sweep's trials may be cached there
    row_written();
  }
  return absl::OkStatus();
}

namespace {
// Rows a batch writes (each about 1 KiB of pages with its index entries, at
// most).
int64_t BatchRows(const WriteBatch& b) {
  int64_t rows = static_cast<int64_t>(
      b.sweeps.size() + b.trials.size() + b.attempts.size() + b.metrics.size() +
      b.workers.size() + b.decisions.size() + b.checkpoints.size() +
      b.deleted_checkpoints.size() + b.trial_logs.size());
  for (const WriteBatch::Result& r : b.results) {
    rows += 1 + static_cast<int64_t>(r.values.size());
  }
  return rows;
}
}  // namespace

absl::Status SqliteStore::Commit(const WriteBatch& batch) {
  if (batch.empty()) return absl::OkStatus();
  absl::MutexLock lock(&mu_);
  // A large batch gets a cache that holds its pages for the transaction
  // (SqliteOptions::large_commit_cache_max_kib), so that SQLite does not
  // spill dirty pages to the WAL and read them back mid-transaction; the
  // usual size is set back after it (the extra pages are freed then).
  const int64_t want_kib =
      std::min<int64_t>(BatchRows(batch), options_.large_commit_cache_max_kib);
  const bool raise = want_kib > options_.cache_size_kib;
  if (raise) {
    SMOE_RETURN_IF_ERROR(
        Exec(absl::StrCat("PRAGMA cache_size = ", -want_kib).c_str(),
             "commit: raise cache_size"));
  }
  SMOE_RETURN_IF_ERROR(RunCached(kBegin, "commit: begin"));
  absl::Status status = WriteAll(batch);
  if (status.ok()) status = RunCached(kCommit, "commit");
  // Some errors (SQLITE_FULL, IOERR, ...) roll back on their own.
  if (!status.ok() && sqlite3_get_autocommit(db_) == 0) {
    RunCached(kRollback, "commit: rollback").IgnoreError();
  }
  if (raise) {
    // Not the commit's outcome: a cache left larger only costs memory.
    Exec(absl::StrCat("PRAGMA cache_size = ", -options_.cache_size_kib).c_str(),
         "commit: reset cache_size")
        .IgnoreError();
  }
  return status;
}

absl::StatusOr<SweepRecord> SqliteStore::GetSweep(absl::string_view sweep_id) {
  absl::MutexLock lock(&mu_);
  SMOE_STATEMENT(s, kGetSweep, "get sweep");
  s.Text(sweep_id);
  SMOE_ASSIGN_OR_RETURN(bool row, s.Step());
  if (!row) {
    return absl::NotFoundError(absl::StrCat("no sweep '", sweep_id, "'"));
  }
  return ReadSweep(s);
}

absl::StatusOr<TrialRecord> SqliteStore::GetTrial(absl::string_view trial_id) {
  absl::MutexLock lock(&mu_);
  SMOE_STATEMENT(s, kGetTrial, "get trial");
  s.Text(trial_id);
  SMOE_ASSIGN_OR_RETURN(bool row, s.Step());
  if (!row) {
    return absl::NotFoundError(absl::StrCat("no trial '", trial_id, "'"));
  }
  return ReadTrial(s);
}

absl::StatusOr<std::vector<SweepRecord>> SqliteStore::ListSweeps() {
  absl::MutexLock lock(&mu_);
  SMOE_STATEMENT(s, kListSweeps, "list sweeps");
  std::vector<SweepRecord> out;
  SMOE_RETURN_IF_ERROR(ReadAll(s, ReadSweep<Statement>, &out));
  return out;
}

absl::StatusOr<std::vector<TrialRecord>> SqliteStore::ListTrials(
    absl::string_view sweep_id) {
  absl::MutexLock lock(&mu_);
  SMOE_STATEMENT(s, sweep_id.empty() ? kListAllTrials : kListTrialsOfSweep,
                 "list trials");
  if (!sweep_id.empty()) s.Text(sweep_id);
  std::vector<TrialRecord> out;
  SMOE_RETURN_IF_ERROR(ReadAll(s, ReadTrial<Statement>, &out));
  return out;
}

absl::StatusOr<std::vector<AttemptRecord>> SqliteStore::ListAttempts(
    absl::string_view trial_id) {
  absl::MutexLock lock(&mu_);
  SMOE_STATEMENT(s, kListAttempts, "list attempts");
  s.Text(trial_id);
  std::vector<AttemptRecord> out;
  SMOE_RETURN_IF_ERROR(ReadAll(s, ReadAttempt<Statement>, &out));
  return out;
}

absl::StatusOr<std::vector<AttemptRecord>> SqliteStore::ListSweepAttempts(
    absl::string_view sweep_id) {
  absl::MutexLock lock(&mu_);
  SMOE_STATEMENT(s, kListSweepAttempts, "list sweep attempts");
  s.Text(sweep_id);
  std::vector<AttemptRecord> out;
  SMOE_RETURN_IF_ERROR(ReadAll(s, ReadAttempt<Statement>, &out));
  return out;
}

absl::StatusOr<std::vector<AttemptRecord>>
SqliteStore::ListSweepAttemptsWithPrefix(absl::string_view sweep_id,
                                         absl::string_view trial_id_prefix) {
  // The range's end: the prefix with its last byte incremented (none when
  // it is empty or ends in 0xff: the default's filter then).
  if (trial_id_prefix.empty() ||
      static_cast<unsigned char>(trial_id_prefix.back()) == 0xff) {
    return ExperimentStore::ListSweepAttemptsWithPrefix(sweep_id,
                                                        trial_id_prefix);
  }
  std::string end(trial_id_prefix);
  end.back() = static_cast<char>(static_cast<unsigned char>(end.back()) + 1);
  absl::MutexLock lock(&mu_);
  SMOE_STATEMENT(s, kListSweepAttemptsInRange, "list sweep attempts");
  s.Text(trial_id_prefix);
  s.Text(end);
  s.Text(sweep_id);
  std::vector<AttemptRecord> out;
  SMOE_RETURN_IF_ERROR(ReadAll(s, ReadAttempt<Statement>, &out));
  return out;
}

absl::StatusOr<std::vector<WorkerRecord>> SqliteStore::ListWorkers() {
  absl::MutexLock lock(&mu_);
  SMOE_STATEMENT(s, kListWorkers, "list workers");
  std::vector<WorkerRecord> out;
  SMOE_RETURN_IF_ERROR(ReadAll(s, ReadWorker<Statement>, &out));
  return out;
}

absl::StatusOr<std::vector<MetricRecord>> SqliteStore::ListMetrics(
    absl::string_view trial_id, std::optional<std::string> name) {
  absl::MutexLock lock(&mu_);
  SMOE_STATEMENT(s, name.has_value() ? kListMetricsNamed : kListMetrics,
                 "list metrics");
  s.Text(trial_id);
  if (name.has_value()) s.Text(*name);
  std::vector<MetricRecord> out;
  while (true) {
    SMOE_ASSIGN_OR_RETURN(bool row, s.Step());
    if (!row) break;
    MetricRecord m;
    m.trial_id = s.ColText(0);
    m.name = s.ColText(1);
    m.step = s.ColInt(2);
    m.value = s.ColReal(3);
    m.attempt = static_cast<int>(s.ColInt(4));
    out.push_back(std::move(m));
  }
  return out;
}

absl::StatusOr<std::vector<TrialSummary>> SqliteStore::ListSummaries(
    absl::string_view sweep_id) {
  absl::MutexLock lock(&mu_);
  if (!sweep_id.empty()) {
    std::optional<std::vector<TrialSummary>> ranged;
    SMOE_ASSIGN_OR_RETURN(ranged, ListPrefixedSummariesLocked(sweep_id));
    if (ranged.has_value()) return *std::move(ranged);
  }
  std::vector<TrialSummary> out;
  std::unordered_map<std::string, size_t> index;
  {
    SMOE_STATEMENT(s,
                   sweep_id.empty() ? kListAllSummaries : kListSummariesOfSweep,
                   "list summaries");
    if (!sweep_id.empty()) s.Text(sweep_id);
    while (true) {
      SMOE_ASSIGN_OR_RETURN(bool row, s.Step());
      if (!row) break;
      SMOE_ASSIGN_OR_RETURN(TrialSummary t, ReadSummary(s));
      index.emplace(t.trial_id, out.size());
      out.push_back(std::move(t));
    }
  }
  if (out.empty()) return out;
  SMOE_STATEMENT(s, sweep_id.empty() ? kListAllResults : kListResultsOfSweep,
                 "list results");
  if (!sweep_id.empty()) s.Text(sweep_id);
  while (true) {
    SMOE_ASSIGN_OR_RETURN(bool row, s.Step());
    if (!row) break;
    auto it = index.find(s.ColText(0));
    if (it == index.end()) continue;
    out[it->second].results[s.ColText(1)] = s.ColReal(2);
  }
  return out;
}

absl::StatusOr<std::optional<std::vector<TrialSummary>>>
SqliteStore::ListPrefixedSummariesLocked(absl::string_view sweep_id) {
  const std::string begin = absl::StrCat(sweep_id, "/");
  std::string end = begin;
  end.back() = '/' + 1;
  std::vector<TrialSummary> out;
  {
    SMOE_STATEMENT(s, kListSummaryRowsOfSweep, "list summaries");
    s.Text(sweep_id);
    while (true) {
      SMOE_ASSIGN_OR_RETURN(bool row, s.Step());
      if (!row) break;
      if (!absl::StartsWith(s.ColView(0), begin)) {
        return std::optional<std::vector<TrialSummary>>();  // other names
      }
      SMOE_ASSIGN_OR_RETURN(TrialSummary t, ReadSummary(s));
      out.push_back(std::move(t));
    }
  }
  if (out.empty()) return std::optional<std::vector<TrialSummary>>(out);
  // Views of the rows' own ids (`out` no longer grows): no second copy of
  // 10^6 ids; dropped before the results go into the rows' maps.
  absl::flat_hash_map<absl::string_view, size_t> index;
  index.reserve(out.size());
  for (size_t i = 0; i < out.size(); ++i) index.emplace(out[i].trial_id, i);
  {
    // As SMOE_SUMMARY_COLUMNS: the worker of the current attempt when the
    // trial row has none, and the exit code of the latest attempt that is
    // not running (attempts come in ascending order: the last one wins).
    // Ids in the range that are not this sweep's rows (another sweep's
    // "<sweep>/..." cannot be: ids are unique) are skipped.
    SMOE_STATEMENT(s, kListAttemptEndsInRange, "list summaries' attempts");
    s.Text(begin).Text(end);
    while (true) {
      SMOE_ASSIGN_OR_RETURN(bool row, s.Step());
      if (!row) break;
      auto it = index.find(s.ColView(0));
      if (it == index.end()) continue;
      TrialSummary& t = out[it->second];
      const int attempt = static_cast<int>(s.ColInt(1));
      if (attempt == t.attempt && t.worker_id.empty()) {
        t.worker_id = s.ColText(2);
      }
      if (s.ColView(3) != "running") {
        t.last_exit_code = static_cast<int>(s.ColInt(4));
      }
    }
  }
  // The results come in key order (trial_id, name), not the rows' order:
  // gathered first (a span per row, names interned), then put in the rows'
  // maps row by row, so that each map is allocated in the rows' order. (The
  // read model frees each summary where it builds the next row; maps filled
  // in key order left those rows scattered over the heap, and the first
  // aggregator over them ran 2x slower at 10^6.)
  std::vector<std::pair<uint32_t, uint32_t>> spans(out.size(), {0, 0});
  std::vector<uint32_t> name_of;
  std::vector<double> value_of;
  std::vector<std::string> names;
  absl::flat_hash_map<std::string, uint32_t> name_ids;
  {
    SMOE_STATEMENT(s, kListResultsInRange, "list results");
    s.Text(begin).Text(end);
    while (true) {
      SMOE_ASSIGN_OR_RETURN(bool row, s.Step());
      if (!row) break;
      auto it = index.find(s.ColView(0));
      if (it == index.end()) continue;
      std::pair<uint32_t, uint32_t>& span = spans[it->second];
      // A row's results are adjacent in key order.
      if (span.second == 0) span.first = static_cast<uint32_t>(name_of.size());
      ++span.second;
      const absl::string_view name = s.ColView(1);
      auto id = name_ids.find(name);
      if (id == name_ids.end()) {
        id = name_ids.emplace(std::string(name), names.size()).first;
        names.emplace_back(name);
      }
      name_of.push_back(id->second);
      value_of.push_back(s.ColReal(2));
    }
  }
  index = {};
  for (size_t i = 0; i < out.size(); ++i) {
    for (uint32_t j = spans[i].first; j < spans[i].first + spans[i].second;
         ++j) {
      out[i].results[names[name_of[j]]] = value_of[j];
    }
  }
  return std::optional<std::vector<TrialSummary>>(std::move(out));
}

absl::StatusOr<std::vector<DecisionRecord>> SqliteStore::ListDecisions(
    absl::string_view sweep_id, int64_t after_seq, int64_t limit) {
  absl::MutexLock lock(&mu_);
  SMOE_STATEMENT(s, kListDecisions, "list decisions");
  s.Text(sweep_id).Int(after_seq).Int(limit > 0 ? limit : -1);
  std::vector<DecisionRecord> out;
  SMOE_RETURN_IF_ERROR(ReadAll(s, ReadDecision<Statement>, &out));
  return out;
}

absl::StatusOr<std::vector<DecisionRecord>> SqliteStore::ListLastDecisions(
    absl::string_view sweep_id, int64_t limit) {
  return ListDecisionsBefore(sweep_id, std::numeric_limits<int64_t>::max(),
                             limit);
}

absl::StatusOr<std::vector<DecisionRecord>> SqliteStore::ListDecisionsBefore(
    absl::string_view sweep_id, int64_t before_seq, int64_t limit) {
  std::vector<DecisionRecord> out;
  if (limit <= 0) return out;
  absl::MutexLock lock(&mu_);
  SMOE_STATEMENT(s, kListDecisionsBefore, "list decisions before");
  s.Text(sweep_id).Int(before_seq).Int(limit);
  SMOE_RETURN_IF_ERROR(ReadAll(s, ReadDecision<Statement>, &out));
  std::reverse(out.begin(), out.end());
  return out;
}

absl::StatusOr<int64_t> SqliteStore::CountDecisions(
    absl::string_view sweep_id) {
  absl::MutexLock lock(&mu_);
  int64_t first = 0, last = 0;
  {
    SMOE_STATEMENT(s, kFirstDecisionSeq, "count decisions: first seq");
    s.Text(sweep_id);
    SMOE_ASSIGN_OR_RETURN(bool row, s.Step());
    if (!row) {
      decision_counts_.erase(std::string(sweep_id));
      return 0;
    }
    first = s.ColInt(0);
  }
  {
    SMOE_STATEMENT(s, kLastDecisionSeq, "count decisions: last seq");
    s.Text(sweep_id);
    SMOE_ASSIGN_OR_RETURN(bool row, s.Step());
    last = row ? s.ColInt(0) : first;
  }
  auto it = decision_counts_.find(std::string(sweep_id));
  if (it != decision_counts_.end() && it->second.first_seq == first &&
      it->second.last_seq == last) {
    return it->second.count;
  }
  // Counted from the cached last seq when the log still starts where it did
  // (only appended since), else from the start.
  const bool top_up = it != decision_counts_.end() &&
                      it->second.first_seq == first &&
                      it->second.last_seq < last;
  const int64_t after = top_up ? it->second.last_seq : 0;
  SMOE_STATEMENT(s, kCountDecisionsAfter, "count decisions");
  s.Text(sweep_id).Int(after);
  SMOE_ASSIGN_OR_RETURN(bool row, s.Step());
  const int64_t more = row ? s.ColInt(0) : 0;
  DecisionCount& c = decision_counts_[std::string(sweep_id)];
  c.count = (top_up ? c.count : 0) + more;
  c.first_seq = first;
  c.last_seq = last;
  return c.count;
}

absl::StatusOr<std::vector<TrialSummary>> SqliteStore::ListSummariesOf(
    absl::string_view sweep_id, const std::vector<std::string>& trial_ids) {
  absl::MutexLock lock(&mu_);
  std::vector<std::pair<int64_t, TrialSummary>> rows;
  std::set<std::string> seen;
  for (const std::string& id : trial_ids) {
    if (!seen.insert(id).second) continue;
    SMOE_STATEMENT(s, kGetSummary, "get summary");
    s.Text(id);
    s.Text(sweep_id);
    SMOE_ASSIGN_OR_RETURN(bool row, s.Step());
    if (!row) continue;
    SMOE_ASSIGN_OR_RETURN(TrialSummary t, ReadSummary(s));
    const int64_t ordinal = s.ColInt(10);  // after SMOE_SUMMARY_COLUMNS
    SMOE_STATEMENT(r, kListResultsOfTrial, "list trial results");
    r.Text(id);
    while (true) {
      SMOE_ASSIGN_OR_RETURN(bool more, r.Step());
      if (!more) break;
      t.results[r.ColText(0)] = r.ColReal(1);
    }
    rows.emplace_back(ordinal, std::move(t));
  }
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
    return std::tie(a.first, a.second.trial_id) <
           std::tie(b.first, b.second.trial_id);
  });
  std::vector<TrialSummary> out;
  out.reserve(rows.size());
  for (auto& [ordinal, t] : rows) out.push_back(std::move(t));
  return out;
}

absl::StatusOr<std::vector<CheckpointRecord>> SqliteStore::ListCheckpoints(
    absl::string_view trial_id) {
  absl::MutexLock lock(&mu_);
  SMOE_STATEMENT(
      s, trial_id.empty() ? kListAllCheckpoints : kListCheckpointsOfTrial,
      "list checkpoints");
  if (!trial_id.empty()) s.Text(trial_id);
  std::vector<CheckpointRecord> out;
  while (true) {
    SMOE_ASSIGN_OR_RETURN(bool row, s.Step());
    if (!row) break;
    CheckpointRecord c;
    c.trial_id = s.ColText(0);
    c.step = s.ColInt(1);
    c.file_name = s.ColText(2);
    c.bytes = s.ColInt(3);
    c.sha256 = s.ColText(4);
    c.attempt = static_cast<int>(s.ColInt(5));
    c.worker_id = s.ColText(6);
    c.created_at = s.ColTime(7);
    out.push_back(std::move(c));
  }
  return out;
}

absl::StatusOr<std::vector<TrialLogRecord>> SqliteStore::ListTrialLogs(
    absl::string_view trial_id) {
  absl::MutexLock lock(&mu_);
  SMOE_STATEMENT(s, kListTrialLogs, "list trial logs");
  s.Text(trial_id);
  std::vector<TrialLogRecord> out;
  while (true) {
    SMOE_ASSIGN_OR_RETURN(bool row, s.Step());
    if (!row) break;
    TrialLogRecord l;
    l.trial_id = s.ColText(0);
    l.attempt = static_cast<int>(s.ColInt(1));
    l.text = s.ColText(2);
    l.total_bytes = s.ColInt(3);
    l.updated_at = s.ColTime(4);
    out.push_back(std::move(l));
  }
  return out;
}

}  // namespace smoe::store
