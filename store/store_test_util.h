// Copyright 2026 SMoE Lab authors.
//
// File: store/store_test_util.h
//
// Test-only helpers for the store tests: record builders, a full textual dump
// of each record (so EXPECT_EQ shows every field on mismatch), and a scoped
// temporary directory.
#ifndef SMOE_STORE_STORE_TEST_UTIL_H_
#define SMOE_STORE_STORE_TEST_UTIL_H_

#include <stdlib.h>

#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "store/experiment_store.h"
#include "store/types.h"

namespace smoe::store::testing {

// A directory under the test temp dir, removed with its contents on scope exit.
class ScopedTempDir {
 public:
  ScopedTempDir() {
    std::string tmpl = ::testing::TempDir() + "smoe_store_XXXXXX";
    if (mkdtemp(tmpl.data()) == nullptr) {
      ADD_FAILURE() << "mkdtemp failed for " << tmpl;
    }
    path_ = tmpl;
  }
  ~ScopedTempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  std::string File(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// A fixed base time with a non-zero microsecond part.
inline absl::Time T0() { return absl::FromUnixMicros(1767225600123456); }

inline std::string Num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.17g", v);
  return buf;
}
inline std::string Time(absl::Time t) {
  return absl::StrCat(
      absl::FormatTime("%Y-%m-%dT%H:%M:%E6S", t, absl::UTCTimeZone()), "(",
      absl::ToUnixNanos(t), "ns)");
}

inline std::string Dump(const SweepRecord& r) {
  return absl::StrCat(
      "sweep{", r.sweep_id, " kind=", r.kind, " spec=", r.spec_yaml,
      " prio=", r.priority, " retries=", r.max_error_retries,
      " state=", SweepStateName(r.state), " created=", Time(r.created_at),
      " updated=", Time(r.updated_at), " notes=", r.notes,
      " tags=", absl::StrJoin(r.tags, ","), " archived=", r.archived, "}");
}
inline std::string Dump(const TrialRecord& r) {
  return absl::StrCat(
      "trial{", r.trial_id, " sweep=", r.sweep_id, " ord=", r.ordinal,
      " params=", r.params_json, " seed=", r.seed,
      " state=", TrialStateName(r.state), " attempt=", r.attempt,
      " errors=", r.error_count, " preempts=", r.preempt_count,
      " gpus=", r.gpus, " worker=", r.worker_id,
      " lease=", Time(r.lease_expires_at), " last_error=", r.last_error,
      " created=", Time(r.created_at), " updated=", Time(r.updated_at), "}");
}
inline std::string Dump(const AttemptRecord& r) {
  return absl::StrCat(
      "attempt{", r.trial_id, "#", r.attempt, " worker=", r.worker_id,
      " outcome=", AttemptOutcomeName(r.outcome), " exit=", r.exit_code,
      " msg=", r.message, " started=", Time(r.started_at),
      " ended=", Time(r.ended_at), "}");
}
inline std::string Dump(const MetricRecord& r) {
  return absl::StrCat("metric{", r.trial_id, " ", r.name, "@", r.step, "=",
                      Num(r.value), " attempt=", r.attempt, "}");
}
inline std::string Dump(const WorkerRecord& r) {
  std::vector<std::string> labels;
  for (const auto& [k, v] : r.labels) labels.push_back(absl::StrCat(k, "=", v));
  return absl::StrCat("worker{", r.worker_id, " host=", r.hostname,
                      " cpus=", r.cpus, " gpus=", r.gpus, " slots=", r.slots,
                      " labels=[", absl::StrJoin(labels, ","), "] kinds=[",
                      absl::StrJoin(r.kinds, ","), "] draining=", r.draining,
                      " registered=", Time(r.registered_at),
                      " heartbeat=", Time(r.last_heartbeat_at), "}");
}
inline std::string Dump(const TrialSummary& r) {
  std::vector<std::string> results;
  for (const auto& [k, v] : r.results) {
    results.push_back(absl::StrCat(k, "=", Num(v)));
  }
  return absl::StrCat(
      "summary{", r.trial_id, " sweep=", r.sweep_id, " params=", r.params_json,
      " seed=", r.seed, " state=", TrialStateName(r.state),
      " attempt=", r.attempt, " worker=", r.worker_id,
      " duration=", Num(r.duration_s), " results=[",
      absl::StrJoin(results, ","), "] last_error=", r.last_error, " exit=",
      r.last_exit_code ? absl::StrCat(*r.last_exit_code) : std::string("none"),
      "}");
}
template <typename T>
std::vector<std::string> DumpAll(const std::vector<T>& records) {
  std::vector<std::string> out;
  for (const T& r : records) out.push_back(Dump(r));
  return out;
}

// Returns the value of `v`, or T{} after failing the test.
template <typename T>
T Value(absl::StatusOr<T> v) {
  EXPECT_TRUE(v.ok()) << v.status();
  return v.ok() ? *std::move(v) : T{};
}

// Everything visible through the ExperimentStore interface, as text.
inline std::string Snapshot(ExperimentStore& store) {
  std::string out;
  for (const auto& s : Value(store.ListSweeps())) out += Dump(s) + "\n";
  for (const auto& t : Value(store.ListTrials(""))) {
    out += Dump(t) + "\n";
    for (const auto& a : Value(store.ListAttempts(t.trial_id))) {
      out += Dump(a) + "\n";
    }
    for (const auto& m : Value(store.ListMetrics(t.trial_id, std::nullopt))) {
      out += Dump(m) + "\n";
    }
  }
  for (const auto& s : Value(store.ListSummaries(""))) out += Dump(s) + "\n";
  for (const auto& w : Value(store.ListWorkers())) out += Dump(w) + "\n";
  for (const auto& s : Value(store.ListSweeps())) {
    for (const auto& d : Value(store.ListDecisions(s.sweep_id, 0, 0))) {
      out += absl::StrCat("decision ", d.seq, " ", d.trial_id, " ", d.action,
                          " ", d.reason, "\n");
    }
  }
  return out;
}

inline SweepRecord MakeSweep(const std::string& id, absl::Time created = T0()) {
  SweepRecord r;
  r.sweep_id = id;
  r.kind = "sraven";
  r.spec_yaml = absl::StrCat("name: ", id, "\nkind: sraven\n");
  r.priority = 3;
  r.max_error_retries = 2;
  r.state = SweepState::kActive;
  r.created_at = created;
  r.updated_at = created + absl::Seconds(1);
  return r;
}

inline std::string TrialId(const std::string& sweep, int n) {
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016x", n);
  return absl::StrCat(sweep, "/", hex);
}

inline TrialRecord MakeTrial(const std::string& sweep, int n) {
  TrialRecord r;
  r.trial_id = TrialId(sweep, n);
  r.sweep_id = sweep;
  r.ordinal = n;
  r.params_json = absl::StrCat(R"({"k":)", n % 8 + 1, R"(,"M":2})");
  r.seed = 1000 + n;
  r.state = TrialState::kPending;
  r.gpus = 1;
  r.created_at = T0();
  r.updated_at = T0();
  return r;
}

inline AttemptRecord MakeAttempt(const std::string& trial_id, int attempt) {
  AttemptRecord r;
  r.trial_id = trial_id;
  r.attempt = attempt;
  r.worker_id = "w1";
  r.outcome = AttemptOutcome::kRunning;
  r.started_at = T0() + absl::Seconds(attempt);
  return r;
}

inline MetricRecord MakeMetric(const std::string& trial_id,
                               const std::string& name, int64_t step,
                               double value) {
  MetricRecord r;
  r.trial_id = trial_id;
  r.name = name;
  r.step = step;
  r.value = value;
  r.attempt = 1;
  return r;
}

}  // namespace smoe::store::testing

#endif  // SMOE_STORE_STORE_TEST_UTIL_H_
