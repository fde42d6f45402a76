// Copyright 2026 SMoE Lab authors.
//
// File: store/migrations.h
//
// The SQLite schema as numbered migrations. SqliteStore::Open applies, in one
// transaction, every migration whose version is above the database's
// `schema_version` and records each in that table. Migrations are append-only:
// never edit a released one; add version N+1 instead.
//
// Conventions: times are INTEGER microseconds since the Unix epoch (INT64_MAX
// = absl::InfiniteFuture); enums are stored by their stable names
// (TrialStateName, ...); a NULL REAL value stands for NaN (SQLite cannot store
// NaN).
#ifndef SMOE_STORE_MIGRATIONS_H_
#define SMOE_STORE_MIGRATIONS_H_

#include <vector>

namespace smoe::store {

struct Migration {
  int version;       // 1, 2, ... consecutive
  const char* name;  // short description, recorded in schema_version
  const char* sql;   // one or more statements
};

// Returns every migration in version order; versions are 1..N without gaps.
const std::vector<Migration>& Migrations();

// Returns the schema version this build creates: Migrations().back().version.
int LatestSchemaVersion();

}  // namespace smoe::store

#endif  // SMOE_STORE_MIGRATIONS_H_
