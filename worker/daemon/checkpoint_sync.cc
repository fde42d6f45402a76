// Copyright 2026 SMoE Lab authors.
#include "worker/daemon/checkpoint_sync.h"

#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/blob_file.h"
#include "common/logging.h"

namespace smoe::worker {
namespace {

using json = nlohmann::json;

constexpr char kLocalMeta[] = "checkpoint.step";
constexpr char kUploadDir[] = ".upload";
constexpr char kDownload[] = ".download";
constexpr int64_t kCopyBelowBytes = int64_t{64} << 20;

void WriteLocalMeta(const std::string& trial_dir, int64_t step,
                    const std::string& file) {
  const std::string path = absl::StrCat(trial_dir, "/", kLocalMeta);
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << json{{"step", step}, {"file", file}}.dump() << "\n";
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    SMOE_LOG(WARNING) << "cannot write " << path << ": " << strerror(errno);
  }
}

bool IsTransient(absl::StatusCode code) {
  return code == absl::StatusCode::kUnavailable ||
         code == absl::StatusCode::kDeadlineExceeded ||
         code == absl::StatusCode::kInternal ||
         code == absl::StatusCode::kUnknown ||
         code == absl::StatusCode::kAborted;
}

}  // namespace

std::optional<LocalCheckpoint> ReadLocalCheckpoint(
    const std::string& trial_dir) {
  std::ifstream in(absl::StrCat(trial_dir, "/", kLocalMeta));
  if (!in) return std::nullopt;
  std::stringstream ss;
  ss << in.rdbuf();
  const json j = json::parse(ss.str(), nullptr, false);
  if (!j.is_object() || !j.contains("step") || !j["step"].is_number_integer() ||
      !j.contains("file") || !j["file"].is_string()) {
    return std::nullopt;
  }
  LocalCheckpoint c{j["step"].get<int64_t>(), j["file"].get<std::string>()};
  if (!ValidateBlobFileName(c.file, "file").ok()) return std::nullopt;
  struct stat st;
  if (::stat(absl::StrCat(trial_dir, "/", c.file).c_str(), &st) != 0) {
    return std::nullopt;  // the file is gone: nothing local to resume from
  }
  return c;
}

std::string SharedTrialDir(const std::string& shared_dir,
                           const std::string& trial_id) {
  std::string d = trial_id;
  std::replace(d.begin(), d.end(), '/', '_');
  return absl::StrCat(shared_dir, "/", d);
}

CheckpointUploader::CheckpointUploader(GatewayClient* gateway,
                                       std::string shared_dir,
                                       std::function<bool(uint64_t)> delivered)
    : gateway_(gateway),
      shared_dir_(std::move(shared_dir)),
      delivered_(std::move(delivered)),
      thread_([this] { Loop(); }) {}

absl::Status CheckpointUploader::CopyToShared(const Job& job, int64_t* bytes) {
  const std::string dir = SharedTrialDir(shared_dir_, job.trial_id);
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    return absl::InternalError(
        absl::StrCat("cannot create '", dir, "': ", strerror(errno)));
  }
  const std::string base = absl::StrCat(dir, "/", job.step, "-", job.file);
  absl::StatusOr<FileDigest> d = CopyFileAtomic(job.snapshot, base);
  if (!d.ok()) return d.status();
  *bytes = d->bytes;
  const std::string sidecar = base + ".sha256";
  {
    std::ofstream out(sidecar + ".tmp", std::ios::trunc);
    out << d->sha256 << " " << d->bytes << "\n";
    out.flush();
    if (!out) {
      return absl::InternalError(absl::StrCat("cannot write '", sidecar, "'"));
    }
  }
  if (::rename((sidecar + ".tmp").c_str(), sidecar.c_str()) != 0) {
    return absl::InternalError(
        absl::StrCat("cannot rename into '", sidecar, "': ", strerror(errno)));
  }
  FsyncPath(dir).IgnoreError();
  // Keep the newest two entries.
  std::map<int64_t, std::string> entries;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (!absl::EndsWith(name, ".sha256")) continue;
    int64_t step = 0;
    if (absl::SimpleAtoi(name.substr(0, name.find('-')), &step)) {
      entries[step] = e.path().string();
    }
  }
  while (entries.size() > 2) {
    const std::string side = entries.begin()->second;
    ::unlink(side.c_str());  // the sidecar first: never a blob that looks ok
    ::unlink(side.substr(0, side.size() - 7).c_str());
    entries.erase(entries.begin());
  }
  return absl::OkStatus();
}

CheckpointUploader::~CheckpointUploader() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
    cv_.SignalAll();
  }
  thread_.join();
}

absl::Status CheckpointUploader::Snapshot(const std::string& worker_id,
                                          const v1::TrialLease& lease,
                                          const std::string& trial_dir,
                                          int64_t step, const std::string& file,
                                          uint64_t after_report) {
  if (absl::Status s = ValidateBlobFileName(file, "checkpoint event file");
      !s.ok()) {
    return s;
  }
  const std::string src = absl::StrCat(trial_dir, "/", file);
  struct stat st;
  if (::stat(src.c_str(), &st) != 0) {
    return absl::NotFoundError(
        absl::StrCat("no checkpoint file '", src, "' to upload"));
  }
  WriteLocalMeta(trial_dir, step, file);
  const std::string dir = absl::StrCat(trial_dir, "/", kUploadDir);
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return absl::InternalError(
        absl::StrCat("cannot create '", dir, "': ", strerror(errno)));
  }
  Job job;
  job.worker_id = worker_id;
  job.trial_id = lease.trial_id();
  job.attempt = lease.attempt();
  job.step = step;
  job.file = file;
  job.after_report = after_report;
  job.snapshot = absl::StrCat(dir, "/", step, "-", file);
  ::unlink(job.snapshot.c_str());
  // A large checkpoint is hard-linked (no copy; trainers replace it by
  // rename, which leaves the linked inode alone); a small one, or where
  // linking fails, is copied (safe for a file appended in place, like
  // Skill-Mix's skillmix_checkpoint.jsonl).
  if (st.st_size <= kCopyBelowBytes ||
      ::link(src.c_str(), job.snapshot.c_str()) != 0) {
    absl::StatusOr<FileDigest> copied = CopyFileAtomic(src, job.snapshot);
    if (!copied.ok()) return copied.status();
  }
  absl::MutexLock lock(&mu_);
  auto it = pending_.find(job.trial_id);
  if (it != pending_.end() && it->second.snapshot != job.snapshot) {
    ::unlink(it->second.snapshot.c_str());  // superseded before it went out
  }
  if (in_flight_ == job.trial_id) supersede_.store(true);
  pending_[job.trial_id] = std::move(job);
  cv_.SignalAll();
  return absl::OkStatus();
}

bool CheckpointUploader::WaitIdle(const std::string& trial_id,
                                  absl::Duration timeout) {
  const absl::Time end = absl::Now() + timeout;
  absl::MutexLock lock(&mu_);
  while (pending_.count(trial_id) > 0 || in_flight_ == trial_id) {
    if (absl::Now() >= end) return false;
    cv_.WaitWithDeadline(&mu_, end);
  }
  return true;
}

std::vector<CheckpointNote> CheckpointUploader::TakeNotes() {
  absl::MutexLock lock(&mu_);
  std::vector<CheckpointNote> out;
  out.swap(notes_);
  return out;
}

void CheckpointUploader::Loop() {
  while (true) {
    Job job;
    {
      absl::MutexLock lock(&mu_);
      while (!stop_ && pending_.empty()) cv_.Wait(&mu_);
      if (stop_) return;
      auto it = pending_.begin();
      job = std::move(it->second);
      pending_.erase(it);
      in_flight_ = job.trial_id;
      supersede_.store(false);
      // The metrics reported before the checkpoint go first.
      while (!stop_ && delivered_ && !delivered_(job.after_report) &&
             pending_.count(job.trial_id) == 0) {
        cv_.WaitWithTimeout(&mu_, absl::Milliseconds(50));
      }
      if (stop_) return;
      if (pending_.count(job.trial_id) > 0) {  // superseded while waiting
        ::unlink(job.snapshot.c_str());
        in_flight_.clear();
        cv_.SignalAll();
        continue;
      }
    }
    Upload(job);
    ::unlink(job.snapshot.c_str());
    absl::MutexLock lock(&mu_);
    in_flight_.clear();
    cv_.SignalAll();
  }
}

void CheckpointUploader::Upload(const Job& job) {
  absl::StatusOr<FileDigest> d = DigestFile(job.snapshot);
  if (!d.ok()) {
    SMOE_LOG(WARNING) << "checkpoint upload of trial " << job.trial_id
                      << " step " << job.step << ": " << d.status();
    return;
  }
  v1::CheckpointChunk header;
  header.set_worker_id(job.worker_id);
  header.set_trial_id(job.trial_id);
  header.set_attempt(job.attempt);
  header.set_step(job.step);
  header.set_total_bytes(d->bytes);
  header.set_sha256(d->sha256);
  header.set_file_name(job.file);
  absl::Status status;
  const absl::Time start = absl::Now();
  if (!shared_dir_.empty()) {
    int64_t bytes = 0;
    status = CopyToShared(job, &bytes);
    if (!status.ok()) {
      SMOE_LOG(WARNING) << "checkpoint of trial " << job.trial_id << " step "
                        << job.step
                        << " not copied to the shared dir: " << status;
      return;
    }
  }
  for (int attempt = 0; attempt < 3 && shared_dir_.empty(); ++attempt) {
    if (attempt > 0) {
      absl::MutexLock lock(&mu_);
      // A newer snapshot of the trial supersedes this one; so does stopping.
      cv_.WaitWithTimeout(&mu_, absl::Seconds(attempt));
      if (stop_ || pending_.count(job.trial_id) > 0) return;
    }
    status =
        gateway_->PutCheckpoint(header, job.snapshot, &supersede_).status();
    if (absl::IsCancelled(status) && supersede_.load()) {
      SMOE_LOG(DEBUG) << "checkpoint upload of trial " << job.trial_id
                      << " step " << job.step << " superseded";
      return;
    }
    if (status.ok() || !IsTransient(status.code())) break;
  }
  CheckpointNote note;
  note.trial_id = job.trial_id;
  note.attempt = job.attempt;
  note.step = job.step;
  if (status.ok()) {
    SMOE_LOG(INFO) << "uploaded checkpoint of trial " << job.trial_id
                   << " step " << job.step << " (" << d->bytes << " bytes in "
                   << absl::ToDoubleSeconds(absl::Now() - start) << " s)";
    note.name = "checkpoint/uploaded";
    note.value = static_cast<double>(job.step);
  } else if (absl::IsResourceExhausted(status)) {
    absl::MutexLock lock(&mu_);
    if (!refused_logged_[job.trial_id]) {
      refused_logged_[job.trial_id] = true;
      SMOE_LOG(WARNING) << "coordinator refused the checkpoint of trial "
                        << job.trial_id << " (" << status.message()
                        << "); its checkpoints stay on this worker only";
    }
    note.name = "checkpoint/upload_refused";
    note.value = static_cast<double>(d->bytes);
  } else if (absl::IsUnimplemented(status)) {
    SMOE_LOG(DEBUG) << "coordinator stores no checkpoints: " << status;
    return;
  } else {
    SMOE_LOG(WARNING) << "checkpoint upload of trial " << job.trial_id
                      << " step " << job.step << " failed: " << status;
    return;
  }
  absl::MutexLock lock(&mu_);
  notes_.push_back(std::move(note));
}

std::vector<CheckpointNote> RestoreCheckpoint(GatewayClient* gateway,
                                              const std::string& worker_id,
                                              const v1::TrialLease& lease,
                                              const std::string& trial_dir) {
  std::vector<CheckpointNote> notes;
  if (lease.checkpoint_step() <= 0) return notes;
  const std::optional<LocalCheckpoint> local = ReadLocalCheckpoint(trial_dir);
  if (local.has_value() && local->step >= lease.checkpoint_step()) {
    SMOE_LOG(INFO) << "trial " << lease.trial_id() << ": local checkpoint at "
                   << "step " << local->step << " is as new as the stored one";
    return notes;
  }
  auto note = [&](const std::string& name, int64_t step, double value) {
    notes.push_back({lease.trial_id(), lease.attempt(), step, name, value});
  };
  const std::string download = absl::StrCat(trial_dir, "/", kDownload);
  int64_t before = 0;
  const absl::Time start = absl::Now();
  for (int tries = 0; tries < 4; ++tries) {
    v1::GetCheckpointRequest req;
    req.set_worker_id(worker_id);
    req.set_trial_id(lease.trial_id());
    req.set_attempt(lease.attempt());
    req.set_before_step(before);
    absl::StatusOr<v1::CheckpointChunk> header =
        gateway->GetCheckpoint(req, download);
    if (absl::IsNotFound(header.status())) break;
    if (absl::IsDataLoss(header.status())) {
      // The coordinator found its copy corrupt and set it aside.
      SMOE_LOG(WARNING) << "trial " << lease.trial_id() << ": "
                        << header.status().message();
      ::unlink(download.c_str());
      // Its row is gone: asking again (same `before`) gets the one before.
      const int64_t bad = before > 0 ? before : lease.checkpoint_step();
      note("checkpoint/download_corrupt", bad, static_cast<double>(bad));
      continue;
    }
    if (!header.ok()) {
      SMOE_LOG(WARNING) << "trial " << lease.trial_id()
                        << ": cannot download its checkpoint ("
                        << header.status() << "); starting from "
                        << (local.has_value() ? "the local one" : "scratch");
      ::unlink(download.c_str());
      break;
    }
    absl::StatusOr<FileDigest> d = DigestFile(download);
    const bool valid_name =
        ValidateBlobFileName(header->file_name(), "file_name").ok();
    if (!d.ok() || !valid_name || d->bytes != header->total_bytes() ||
        d->sha256 != header->sha256()) {
      std::string where = download;
      if (auto moved = SetAsideFile(download); moved.ok()) where = *moved;
      SMOE_LOG(WARNING) << "trial " << lease.trial_id()
                        << ": downloaded checkpoint of step " << header->step()
                        << " failed verification ("
                        << (d.ok() ? absl::StrCat(d->bytes, " bytes, sha256 ",
                                                  d->sha256)
                                   : std::string(d.status().message()))
                        << "; expected " << header->total_bytes()
                        << " bytes, sha256 " << header->sha256()
                        << "); set aside as " << where;
      note("checkpoint/download_corrupt", header->step(),
           static_cast<double>(header->step()));
      before = header->step();
      continue;
    }
    const std::string target =
        absl::StrCat(trial_dir, "/", header->file_name());
    struct stat st;
    if (::stat(target.c_str(), &st) == 0) {
      ::rename(target.c_str(), (target + ".prev").c_str());
    }
    if (::rename(download.c_str(), target.c_str()) != 0) {
      SMOE_LOG(WARNING) << "trial " << lease.trial_id() << ": cannot place "
                        << target << ": " << strerror(errno);
      break;
    }
    FsyncPath(trial_dir).IgnoreError();
    WriteLocalMeta(trial_dir, header->step(), header->file_name());
    SMOE_LOG(INFO) << "trial " << lease.trial_id() << " attempt "
                   << lease.attempt() << ": downloaded its checkpoint of step "
                   << header->step() << " (" << d->bytes << " bytes in "
                   << absl::ToDoubleSeconds(absl::Now() - start) << " s)";
    note("checkpoint/downloaded", header->step(),
         static_cast<double>(header->step()));
    return notes;
  }
  if (!notes.empty()) {
    SMOE_LOG(WARNING) << "trial " << lease.trial_id()
                      << ": no verified stored checkpoint; starting from "
                      << (local.has_value() ? "the local checkpoint"
                                            : "scratch");
  }
  return notes;
}

std::vector<CheckpointNote> RestoreSharedCheckpoint(
    const std::string& shared_dir, const v1::TrialLease& lease,
    const std::string& trial_dir) {
  std::vector<CheckpointNote> notes;
  const std::string dir = SharedTrialDir(shared_dir, lease.trial_id());
  // step -> sidecar path, newest first.
  std::map<int64_t, std::string, std::greater<int64_t>> entries;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (!absl::EndsWith(name, ".sha256")) continue;
    int64_t step = 0;
    if (absl::SimpleAtoi(name.substr(0, name.find('-')), &step)) {
      entries[step] = e.path().string();
    }
  }
  if (entries.empty()) return notes;
  const std::optional<LocalCheckpoint> local = ReadLocalCheckpoint(trial_dir);
  const std::string download = absl::StrCat(trial_dir, "/", kDownload);
  for (const auto& [step, sidecar] : entries) {
    if (local.has_value() && local->step >= step) return notes;
    const std::string blob = sidecar.substr(0, sidecar.size() - 7);
    const std::string name = std::filesystem::path(blob).filename().string();
    const std::string file = name.substr(name.find('-') + 1);
    std::ifstream in(sidecar);
    std::string want_sha;
    int64_t want_bytes = -1;
    in >> want_sha >> want_bytes;
    absl::StatusOr<FileDigest> d = CopyFileAtomic(blob, download);
    if (!d.ok() || !ValidateBlobFileName(file, "file").ok() ||
        d->sha256 != want_sha || d->bytes != want_bytes) {
      ::unlink(download.c_str());
      std::string where = blob;
      if (auto moved = SetAsideFile(blob); moved.ok()) where = *moved;
      ::unlink(sidecar.c_str());
      SMOE_LOG(WARNING) << "trial " << lease.trial_id()
                        << ": shared checkpoint of step " << step
                        << " failed verification; set aside as " << where;
      notes.push_back({lease.trial_id(), lease.attempt(), step,
                       "checkpoint/download_corrupt",
                       static_cast<double>(step)});
      continue;
    }
    const std::string target = absl::StrCat(trial_dir, "/", file);
    struct stat st;
    if (::stat(target.c_str(), &st) == 0) {
      ::rename(target.c_str(), (target + ".prev").c_str());
    }
    if (::rename(download.c_str(), target.c_str()) != 0) break;
    FsyncPath(trial_dir).IgnoreError();
    WriteLocalMeta(trial_dir, step, file);
    SMOE_LOG(INFO) << "trial " << lease.trial_id() << " attempt "
                   << lease.attempt() << ": took its checkpoint of step "
                   << step << " from the shared dir";
    notes.push_back({lease.trial_id(), lease.attempt(), step,
                     "checkpoint/downloaded", static_cast<double>(step)});
    return notes;
  }
  return notes;
}

}  // namespace smoe::worker
