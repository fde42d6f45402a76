// Copyright 2026 SMoE Lab authors.
//
// File: store/migrations.cc

#include "store/migrations.h"

namespace smoe::store {
namespace {

// 001: sweeps, trials, attempts, metrics, workers.
constexpr char kInitial[] = R"sql(
CREATE TABLE sweeps (
  sweep_id          TEXT PRIMARY KEY NOT NULL,
  kind              TEXT NOT NULL,
  spec_yaml         TEXT NOT NULL,
  priority          INTEGER NOT NULL,
  max_error_retries INTEGER NOT NULL,
  state             TEXT NOT NULL,
  created_at_us     INTEGER NOT NULL,
  updated_at_us     INTEGER NOT NULL
);

CREATE TABLE trials (
  trial_id            TEXT PRIMARY KEY NOT NULL,
  sweep_id            TEXT NOT NULL REFERENCES sweeps (sweep_id),
  ordinal             INTEGER NOT NULL,
  params_json         TEXT NOT NULL,
  seed                INTEGER NOT NULL,
  state               TEXT NOT NULL,
  attempt             INTEGER NOT NULL,
  error_count         INTEGER NOT NULL,
  preempt_count       INTEGER NOT NULL,
  gpus                INTEGER NOT NULL,
  worker_id           TEXT NOT NULL,
  lease_expires_at_us INTEGER NOT NULL,
  last_error          TEXT NOT NULL,
  created_at_us       INTEGER NOT NULL,
  updated_at_us       INTEGER NOT NULL
);
CREATE INDEX trials_by_sweep_ordinal ON trials (sweep_id, ordinal, trial_id);

CREATE TABLE attempts (
  trial_id      TEXT NOT NULL REFERENCES trials (trial_id),
  attempt       INTEGER NOT NULL,
  worker_id     TEXT NOT NULL,
  outcome       TEXT NOT NULL,
  exit_code     INTEGER NOT NULL,
  message       TEXT NOT NULL,
  started_at_us INTEGER NOT NULL,
  ended_at_us   INTEGER NOT NULL,
  PRIMARY KEY (trial_id, attempt)
) WITHOUT ROWID;

-- Unique per (trial_id, step, name); the key order (trial_id, name, step) is
-- also ListMetrics' order, so the primary key is the metrics-by-trial index.
CREATE TABLE metrics (
  trial_id TEXT NOT NULL REFERENCES trials (trial_id),
  name     TEXT NOT NULL,
  step     INTEGER NOT NULL,
  value    REAL,  -- NULL = NaN
  attempt  INTEGER NOT NULL,
  PRIMARY KEY (trial_id, name, step)
) WITHOUT ROWID;

CREATE TABLE workers (
  worker_id            TEXT PRIMARY KEY NOT NULL,
  hostname             TEXT NOT NULL,
  cpus                 INTEGER NOT NULL,
  gpus                 INTEGER NOT NULL,
  slots                INTEGER NOT NULL,
  labels_json          TEXT NOT NULL,  -- {"key": "value", ...}
  kinds_json           TEXT NOT NULL,  -- ["sraven", ...]
  draining             INTEGER NOT NULL,
  registered_at_us     INTEGER NOT NULL,
  last_heartbeat_at_us INTEGER NOT NULL
);
)sql";

// 002: the per-trial result summary the dashboard reads (ListSummaries never
// touches metrics).
constexpr char kTrialResults[] = R"sql(
ALTER TABLE trials ADD COLUMN duration_s REAL NOT NULL DEFAULT 0;

CREATE TABLE trial_results (
  trial_id TEXT NOT NULL REFERENCES trials (trial_id),
  name     TEXT NOT NULL,
  value    REAL,  -- NULL = NaN
  PRIMARY KEY (trial_id, name)
) WITHOUT ROWID;
)sql";

// 003: adaptive sweeps (docs/adaptive-sweeps.md): the search policy's
// decision log. Trial state 'pruned' and attempt outcome 'pruned' are new
// values of existing TEXT columns and need no schema change.
constexpr char kDecisions[] = R"sql(
CREATE TABLE decisions (
  seq      INTEGER PRIMARY KEY AUTOINCREMENT,
  sweep_id TEXT NOT NULL REFERENCES sweeps (sweep_id),
  trial_id TEXT NOT NULL,  -- '' for a group-level decision
  action   TEXT NOT NULL,
  grp      TEXT NOT NULL,
  rung     INTEGER NOT NULL,
  step     INTEGER NOT NULL,
  value    REAL,  -- NULL = none
  cutoff   REAL,  -- NULL = none
  final    INTEGER NOT NULL,
  reason   TEXT NOT NULL,
  at_us    INTEGER NOT NULL
);
CREATE INDEX decisions_by_sweep ON decisions (sweep_id, seq);
)sql";

// 004: the dashboard's sweep annotations (set by admins).
constexpr char kSweepAnnotations[] = R"sql(
ALTER TABLE sweeps ADD COLUMN notes TEXT NOT NULL DEFAULT '';
ALTER TABLE sweeps ADD COLUMN tags_json TEXT NOT NULL DEFAULT '[]';
ALTER TABLE sweeps ADD COLUMN archived INTEGER NOT NULL DEFAULT 0;
)sql";

// 005: metadata of the checkpoint blobs the coordinator keeps for trials
// (coordinator/checkpoint_store.h); the blobs are files beside smoe.db.
constexpr char kTrialCheckpoints[] = R"sql(
CREATE TABLE trial_checkpoints (
  trial_id      TEXT NOT NULL REFERENCES trials (trial_id),
  step          INTEGER NOT NULL,
  file_name     TEXT NOT NULL,
  bytes         INTEGER NOT NULL,
  sha256        TEXT NOT NULL,
  attempt       INTEGER NOT NULL,
  worker_id     TEXT NOT NULL,
  created_at_us INTEGER NOT NULL,
  PRIMARY KEY (trial_id, step)
) WITHOUT ROWID;
)sql";

// 006: the kept end of each attempt's log (docs/logs-and-system-metrics.md).
constexpr char kTrialLogs[] = R"sql(
CREATE TABLE trial_logs (
  trial_id      TEXT NOT NULL REFERENCES trials (trial_id),
  attempt       INTEGER NOT NULL,
  text          TEXT NOT NULL,
  total_bytes   INTEGER NOT NULL,
  updated_at_us INTEGER NOT NULL,
  PRIMARY KEY (trial_id, attempt)
) WITHOUT ROWID;
)sql";

}  // namespace

const std::vector<Migration>& Migrations() {
  static const std::vector<Migration>* const kMigrations =
      new std::vector<Migration>{
          {1, "initial", kInitial},
          {2, "trial_results", kTrialResults},
          {3, "decisions", kDecisions},
          {4, "sweep_annotations", kSweepAnnotations},
          {5, "trial_checkpoints", kTrialCheckpoints},
          {6, "trial_logs", kTrialLogs},
      };
  return *kMigrations;
}

int LatestSchemaVersion() { return Migrations().back().version; }

}  // namespace smoe::store
