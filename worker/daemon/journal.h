// Copyright 2026 SMoE Lab authors.
//
// File: worker/daemon/journal.h
//
// The daemon's outbox: reports (metric batches, Complete, Fail) waiting for
// the coordinator's acknowledgement, kept in order in memory and in an
// append-only JSON Lines file so that nothing finished is lost when the
// coordinator is unreachable or the daemon restarts.
//
// File format, one object per line:
//   {"op":"add","id":7,"type":"complete","trial_id":"s/t1","attempt":2,
//    "data":"<base64 of the serialized request>"}
//   {"op":"ack","id":7}
// Adds are fsync'd before Add() returns; acks are not (a lost ack only causes a
// harmless resend: metrics overwrite, a stale Complete/Fail is refused and
// dropped). A later "add" with the same id replaces the entry (ReplaceFront).
// Lines that do not parse (a torn last write) are skipped. A write that
// fails (ENOSPC, EIO) is cut off again (the file is truncated back to its
// length before the write), so a full disk never leaves a torn line in the
// middle of the file; the entry stays queued in memory, unjournaled, until
// Persist() writes it (issue 36: a full work dir). String fields
// are made valid UTF-8 when an entry is added and when an older journal is
// read (proto/utf8_fields.h). Open()
// compacts the file to the unacknowledged entries.
#ifndef SMOE_WORKER_DAEMON_JOURNAL_H_
#define SMOE_WORKER_DAEMON_JOURNAL_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <set>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "proto/smoe.pb.h"

namespace smoe::worker {

// One report to deliver. Exactly one of the requests is meaningful, chosen by
// `type`.
struct OutboxEntry {
  enum class Type { kMetrics, kComplete, kFail };
  uint64_t id = 0;  // assigned by Outbox::Add
  Type type = Type::kMetrics;
  v1::ReportMetricsRequest metrics;
  v1::CompleteRequest complete;
  v1::FailRequest fail;

  const std::string& trial_id() const;
  int attempt() const;
  // "metrics" | "complete" | "fail".
  const char* type_name() const;
};

// FIFO of unacknowledged reports backed by the journal file. Not thread-safe.
class Outbox {
 public:
  // Opens (creating if needed) the journal at `path` and loads its
  // unacknowledged entries, oldest first. Errors: the file cannot be read,
  // written or fsync'd.
  static absl::StatusOr<std::unique_ptr<Outbox>> Open(const std::string& path);
  ~Outbox();

  // Queues `entry` (its id is assigned) and appends it to the journal
  // durably. On a write error (ResourceExhausted for ENOSPC/EDQUOT, Internal
  // for others, naming the file and errno) the entry is queued all the same,
  // in memory only: it is delivered like any other, and written by the next
  // successful Persist(); a crash before that loses it.
  absl::Status Add(OutboxEntry entry);
  // Writes the entries Add or ReplaceFront could not journal, in order, with
  // one fsync. OK when there are none. On error they stay unjournaled.
  absl::Status Persist();
  // Entries queued in memory only (their journal write failed).
  size_t unjournaled() const { return unjournaled_; }
  // The oldest unacknowledged entry. REQUIRES: !empty().
  const OutboxEntry& front() const { return entries_.front(); }
  // Replaces the oldest entry (same id, same place in the queue) durably:
  // a report the coordinator refused, rewritten (worker_daemon.cc). On a
  // write error the replacement is kept in memory, as Add does.
  // REQUIRES: !empty().
  absl::Status ReplaceFront(OutboxEntry entry);
  // Acknowledges (removes) the oldest entry. When the queue becomes empty the
  // file is truncated. The entry is removed even when the ack cannot be
  // written (the error is returned; a lost ack only makes the next start
  // resend it). REQUIRES: !empty().
  absl::Status PopFront();

  bool empty() const { return entries_.empty(); }
  // The id of the newest entry added (0 before any).
  uint64_t last_id() const { return next_id_ - 1; }
  size_t size() const { return entries_.size(); }
  const std::deque<OutboxEntry>& entries() const { return entries_; }

 private:
  Outbox(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  // Appends `line`; on failure truncates the file back to its length before
  // the write.
  absl::Status WriteLine(const std::string& line, bool sync);

  std::string path_;
  int fd_ = -1;
  uint64_t next_id_ = 1;
  std::deque<OutboxEntry> entries_;
  // Ids (and count) of queued entries whose last version is not journaled.
  std::set<uint64_t> unjournaled_ids_;
  size_t unjournaled_ = 0;
};

}  // namespace smoe::worker

#endif  // SMOE_WORKER_DAEMON_JOURNAL_H_
