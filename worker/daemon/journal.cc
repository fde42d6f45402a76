// Copyright 2026 SMoE Lab authors.
#include "worker/daemon/journal.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "common/status_macros.h"
#include "proto/utf8_fields.h"

namespace smoe::worker {
namespace {

using json = nlohmann::json;

// ENOSPC / EDQUOT (a full disk or quota) are ResourceExhausted, the rest
// Internal; the message names the file and the errno text.
absl::Status Errno(absl::string_view what, const std::string& path) {
  const int err = errno;
  std::string msg = absl::StrCat(what, " '", path, "': ", strerror(err));
  if (err == ENOSPC || err == EDQUOT) {
    return absl::ResourceExhaustedError(std::move(msg));
  }
  return absl::InternalError(std::move(msg));
}

std::string Serialize(const OutboxEntry& e) {
  switch (e.type) {
    case OutboxEntry::Type::kMetrics:
      return e.metrics.SerializeAsString();
    case OutboxEntry::Type::kComplete:
      return e.complete.SerializeAsString();
    case OutboxEntry::Type::kFail:
      return e.fail.SerializeAsString();
  }
  return "";
}

std::string AddLine(const OutboxEntry& e) {
  json j = {{"op", "add"},
            {"id", e.id},
            {"type", e.type_name()},
            {"trial_id", e.trial_id()},
            {"attempt", e.attempt()},
            {"data", absl::Base64Escape(Serialize(e))}};
  return j.dump() + "\n";
}

// Parses an "add" record; false when malformed. Requests an older daemon
// journaled with bytes that are not UTF-8 in a string field (which protobuf
// refuses to parse) are read with those bytes replaced (issue 36 item 1).
bool ParseAdd(const json& j, OutboxEntry* e) {
  if (!j.contains("id") || !j["id"].is_number_unsigned() ||
      !j.contains("type") || !j["type"].is_string() || !j.contains("data") ||
      !j["data"].is_string()) {
    return false;
  }
  e->id = j["id"].get<uint64_t>();
  std::string bytes;
  if (!absl::Base64Unescape(j["data"].get<std::string>(), &bytes)) return false;
  const std::string type = j["type"].get<std::string>();
  if (type == "metrics") {
    e->type = OutboxEntry::Type::kMetrics;
    return proto::ParseReplacingInvalidUtf8(bytes, &e->metrics);
  }
  if (type == "complete") {
    e->type = OutboxEntry::Type::kComplete;
    return proto::ParseReplacingInvalidUtf8(bytes, &e->complete);
  }
  if (type == "fail") {
    e->type = OutboxEntry::Type::kFail;
    return proto::ParseReplacingInvalidUtf8(bytes, &e->fail);
  }
  return false;
}

}  // namespace

const std::string& OutboxEntry::trial_id() const {
  switch (type) {
    case Type::kMetrics:
      return metrics.trial_id();
    case Type::kComplete:
      return complete.trial_id();
    case Type::kFail:
      return fail.trial_id();
  }
  return metrics.trial_id();
}

int OutboxEntry::attempt() const {
  switch (type) {
    case Type::kMetrics:
      return metrics.attempt();
    case Type::kComplete:
      return complete.attempt();
    case Type::kFail:
      return fail.attempt();
  }
  return 0;
}

const char* OutboxEntry::type_name() const {
  switch (type) {
    case Type::kMetrics:
      return "metrics";
    case Type::kComplete:
      return "complete";
    case Type::kFail:
      return "fail";
  }
  return "?";
}

absl::StatusOr<std::unique_ptr<Outbox>> Outbox::Open(const std::string& path) {
  // Load whatever is there.
  std::map<uint64_t, OutboxEntry> pending;
  uint64_t max_id = 0;
  {
    std::ifstream in(path);
    std::string line;
    int line_no = 0;
    while (std::getline(in, line)) {
      ++line_no;
      if (line.empty()) continue;
      json j = json::parse(line, nullptr, false);
      if (j.is_discarded() || !j.is_object() || !j.contains("op") ||
          !j["op"].is_string()) {
        SMOE_LOG(WARNING) << "journal " << path << ":" << line_no
                          << ": skipping unreadable line";
        continue;
      }
      const std::string op = j["op"].get<std::string>();
      if (op == "add") {
        OutboxEntry e;
        if (!ParseAdd(j, &e)) {
          SMOE_LOG(WARNING) << "journal " << path << ":" << line_no
                            << ": skipping malformed entry";
          continue;
        }
        max_id = std::max(max_id, e.id);
        pending[e.id] = std::move(e);
      } else if (op == "ack" && j.contains("id") &&
                 j["id"].is_number_unsigned()) {
        pending.erase(j["id"].get<uint64_t>());
      }
    }
  }
  // Compact: write the pending entries to a new file and rename it over.
  const std::string tmp = path + ".tmp";
  {
    const int fd =
        open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) return Errno("cannot create journal", tmp);
    std::string all;
    for (const auto& [id, e] : pending) all += AddLine(e);
    const char* p = all.data();
    size_t left = all.size();
    while (left > 0) {
      const ssize_t n = write(fd, p, left);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        close(fd);
        return Errno("cannot write journal", tmp);
      }
      p += n;
      left -= static_cast<size_t>(n);
    }
    if (fsync(fd) != 0) {
      close(fd);
      return Errno("cannot fsync journal", tmp);
    }
    close(fd);
  }
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    return Errno("cannot rename journal over", path);
  }
  const int fd = open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  if (fd < 0) return Errno("cannot open journal", path);
  std::unique_ptr<Outbox> box(new Outbox(path, fd));
  box->next_id_ = max_id + 1;
  for (auto& [id, e] : pending) box->entries_.push_back(std::move(e));
  if (!box->entries_.empty()) {
    SMOE_LOG(INFO) << "journal " << path << ": " << box->entries_.size()
                   << " unacknowledged report(s) to replay";
  }
  return box;
}

Outbox::~Outbox() {
  if (fd_ >= 0) close(fd_);
}

absl::Status Outbox::WriteLine(const std::string& line, bool sync) {
  const off_t before = lseek(fd_, 0, SEEK_END);
  auto fail = [&](absl::string_view what) {
    absl::Status s = Errno(what, path_);
    // Cut the torn bytes off again so that the next line starts on a line
    // of its own (shrinking a file needs no space).
    if (before >= 0 && ftruncate(fd_, before) != 0) {
      SMOE_LOG(WARNING) << "journal " << path_
                        << ": cannot cut a failed write off: "
                        << strerror(errno);
    }
    return s;
  };
  const char* p = line.data();
  size_t left = line.size();
  while (left > 0) {
    const ssize_t n = write(fd_, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail("cannot append to journal");
    p += n;
    left -= static_cast<size_t>(n);
  }
  if (sync && fdatasync(fd_) != 0) return fail("cannot fsync journal");
  return absl::OkStatus();
}

// Every string of a report is made UTF-8 before it is journaled: the
// coordinator would refuse it on every retry, and the journal could not be
// read back.
namespace {
void MakeValid(OutboxEntry* e) {
  switch (e->type) {
    case OutboxEntry::Type::kMetrics:
      proto::MakeStringFieldsValidUtf8(&e->metrics);
      break;
    case OutboxEntry::Type::kComplete:
      proto::MakeStringFieldsValidUtf8(&e->complete);
      break;
    case OutboxEntry::Type::kFail:
      proto::MakeStringFieldsValidUtf8(&e->fail);
      break;
  }
}
}  // namespace

absl::Status Outbox::Add(OutboxEntry entry) {
  MakeValid(&entry);
  entry.id = next_id_++;
  // Behind an unjournaled entry, journal nothing newer first: Persist()
  // writes them in order.
  absl::Status s = unjournaled_ids_.empty()
                       ? WriteLine(AddLine(entry), /*sync=*/true)
                       : absl::ResourceExhaustedError(absl::StrCat(
                             "journal '", path_, "': ", unjournaled_ids_.size(),
                             " earlier report(s) not written yet"));
  if (!s.ok()) unjournaled_ids_.insert(entry.id);
  unjournaled_ = unjournaled_ids_.size();
  entries_.push_back(std::move(entry));
  return s;
}

absl::Status Outbox::ReplaceFront(OutboxEntry entry) {
  MakeValid(&entry);
  entry.id = entries_.front().id;
  // The same id again: Open() keeps the last "add" of an id.
  absl::Status s = WriteLine(AddLine(entry), /*sync=*/true);
  if (s.ok()) {
    unjournaled_ids_.erase(entry.id);
  } else {
    unjournaled_ids_.insert(entry.id);
  }
  unjournaled_ = unjournaled_ids_.size();
  entries_.front() = std::move(entry);
  return s;
}

absl::Status Outbox::Persist() {
  if (unjournaled_ids_.empty()) return absl::OkStatus();
  std::string lines;
  for (const OutboxEntry& e : entries_) {
    if (unjournaled_ids_.count(e.id) > 0) lines += AddLine(e);
  }
  SMOE_RETURN_IF_ERROR(WriteLine(lines, /*sync=*/true));
  SMOE_LOG(INFO) << "journal " << path_ << ": " << unjournaled_ids_.size()
                 << " report(s) kept in memory while it could not be written "
                    "are journaled now";
  unjournaled_ids_.clear();
  unjournaled_ = 0;
  return absl::OkStatus();
}

absl::Status Outbox::PopFront() {
  const uint64_t id = entries_.front().id;
  entries_.pop_front();
  unjournaled_ids_.erase(id);
  unjournaled_ = unjournaled_ids_.size();
  if (entries_.empty()) {
    // Nothing pending: start the file afresh (O_APPEND writes go to the end).
    if (ftruncate(fd_, 0) != 0) return Errno("cannot truncate journal", path_);
    return absl::OkStatus();
  }
  return WriteLine(json({{"op", "ack"}, {"id", id}}).dump() + "\n",
                   /*sync=*/false);
}

}  // namespace smoe::worker
