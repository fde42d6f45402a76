// Copyright 2026 SMoE Lab authors.
#include "coordinator/checkpoint_store.h"

#include <fcntl.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <set>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/blob_file.h"
#include "common/logging.h"
#include "common/status_macros.h"

namespace smoe::coordinator {
namespace {

namespace fs = std::filesystem;

constexpr char kBlobSuffix[] = ".blob";
constexpr char kPartSuffix[] = ".part";

std::string Mib(int64_t bytes) {
  return absl::StrCat(bytes, " bytes (", bytes >> 20, " MiB)");
}

}  // namespace

bool TrialStateKeepsCheckpoints(store::TrialState s) {
  switch (s) {
    case store::TrialState::kPending:
    case store::TrialState::kRunning:
    case store::TrialState::kPruned:  // may be promoted and resume from it
      return true;
    case store::TrialState::kSucceeded:
    case store::TrialState::kFailed:
    case store::TrialState::kCancelled:
      return false;
  }
  return true;  // unknown: keep (never delete what may be needed)
}

struct CheckpointStore::Upload::State {
  CheckpointStore* owner = nullptr;
  store::CheckpointRecord header;
  std::string part;
  int fd = -1;
  Sha256 sha;
  int64_t written = 0;
  int64_t reserved = 0;
  bool finished = false;
};

CheckpointStore::CheckpointStore(store::ExperimentStore* store,
                                 CheckpointStoreOptions options)
    : store_(store), options_(std::move(options)) {}

CheckpointStore::~CheckpointStore() = default;

absl::StatusOr<std::unique_ptr<CheckpointStore>> CheckpointStore::Open(
    store::ExperimentStore* store, CheckpointStoreOptions options) {
  if (store == nullptr || options.dir.empty()) {
    return absl::InvalidArgumentError("CheckpointStore: no store or dir");
  }
  if (options.max_blob_bytes < 1 || options.max_total_bytes < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "checkpoint caps must be >= 1 byte (max blob ", options.max_blob_bytes,
        ", total ", options.max_total_bytes, ")"));
  }
  options.keep_per_trial = std::max(1, options.keep_per_trial);
  std::error_code ec;
  fs::create_directories(options.dir, ec);
  if (ec) {
    return absl::InternalError(absl::StrCat("cannot create checkpoint dir '",
                                            options.dir, "': ", ec.message()));
  }
  std::unique_ptr<CheckpointStore> s(
      new CheckpointStore(store, std::move(options)));
  SMOE_RETURN_IF_ERROR(s->Load());
  return s;
}

std::string CheckpointStore::TrialDir(const std::string& trial_id) const {
  return absl::StrCat(options_.dir, "/",
                      absl::StrReplaceAll(trial_id, {{"/", "_"}}));
}

std::string CheckpointStore::BlobPath(const store::CheckpointRecord& c) const {
  return absl::StrCat(TrialDir(c.trial_id), "/", c.step, kBlobSuffix);
}

absl::Status CheckpointStore::Load() {
  SMOE_ASSIGN_OR_RETURN(std::vector<store::CheckpointRecord> rows,
                        store_->ListCheckpoints(""));
  std::set<std::string> wanted;
  std::vector<store::CheckpointRecord> missing;
  absl::MutexLock lock(&mu_);
  for (store::CheckpointRecord& c : rows) {
    const std::string path = BlobPath(c);
    std::error_code ec;
    const auto size = fs::file_size(path, ec);
    if (ec || static_cast<int64_t>(size) != c.bytes) {
      missing.push_back(c);
      continue;
    }
    wanted.insert(path);
    total_bytes_ += c.bytes;
    index_[c.trial_id][c.step] = std::move(c);
  }
  if (!missing.empty()) {
    SMOE_LOG(WARNING) << "checkpoint store: " << missing.size()
                      << " row(s) without a complete blob; forgetting them";
    store::WriteBatch b;
    for (const auto& c : missing)
      b.deleted_checkpoints.push_back({c.trial_id, c.step});
    SMOE_RETURN_IF_ERROR(store_->Commit(b));
  }
  // Debris of interrupted uploads: .part files, blobs with no row (a crash
  // between the rename and the commit). Set-aside files stay until GC.
  int removed = 0;
  std::error_code ec;
  for (const auto& d : fs::directory_iterator(options_.dir, ec)) {
    if (!d.is_directory()) continue;
    for (const auto& f : fs::directory_iterator(d.path(), ec)) {
      const std::string p = f.path().string();
      const bool part = absl::EndsWith(p, kPartSuffix);
      const bool orphan = absl::EndsWith(p, kBlobSuffix) && !wanted.count(p);
      if (part || orphan) {
        fs::remove(f.path(), ec);
        ++removed;
      }
    }
  }
  if (removed > 0) {
    SMOE_LOG(INFO) << "checkpoint store: removed " << removed
                   << " unfinished upload(s)";
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<CheckpointStore::Upload>>
CheckpointStore::BeginUpload(store::CheckpointRecord header) {
  if (header.trial_id.empty()) {
    return absl::InvalidArgumentError("checkpoint: trial_id is empty");
  }
  if (header.step < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("checkpoint: step must be >= 0, got ", header.step));
  }
  SMOE_RETURN_IF_ERROR(ValidateBlobFileName(header.file_name, "file_name"));
  if (!IsSha256Hex(header.sha256)) {
    return absl::InvalidArgumentError(
        "checkpoint: sha256 must be 64 lowercase hex digits");
  }
  if (header.bytes < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "checkpoint: total_bytes must be >= 0, got ", header.bytes));
  }
  if (header.bytes > options_.max_blob_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "checkpoint of trial ", header.trial_id, " step ", header.step, " is ",
        Mib(header.bytes),
        ", over the coordinator's --checkpoint-max-bytes of ",
        Mib(options_.max_blob_bytes),
        "; not stored (use a shared checkpoint dir for large checkpoints)"));
  }
  struct statvfs vfs;
  if (::statvfs(options_.dir.c_str(), &vfs) == 0) {
    const int64_t free_bytes =
        static_cast<int64_t>(vfs.f_bavail) * static_cast<int64_t>(vfs.f_frsize);
    if (free_bytes < header.bytes + options_.min_free_bytes) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "checkpoint of ", Mib(header.bytes), " refused: the data dir has ",
          Mib(free_bytes), " free and keeps ", Mib(options_.min_free_bytes),
          " for the store"));
    }
  }
  auto up = std::unique_ptr<Upload>(new Upload());
  up->state_ = std::make_unique<Upload::State>();
  Upload::State& st = *up->state_;
  st.owner = this;
  int64_t seq = 0;
  bool over = false;
  {
    absl::MutexLock lock(&mu_);
    over = total_bytes_ + reserved_bytes_ + header.bytes >
           options_.max_total_bytes;
  }
  // Full: the checkpoints kept only for a retry of a failed trial go first.
  if (over) SMOE_RETURN_IF_ERROR(EvictFailed(header.bytes).status());
  {
    absl::MutexLock lock(&mu_);
    if (total_bytes_ + reserved_bytes_ + header.bytes >
        options_.max_total_bytes) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "checkpoint of ", Mib(header.bytes), " refused: the store holds ",
          Mib(total_bytes_ + reserved_bytes_),
          " of its --checkpoint-store-bytes ", Mib(options_.max_total_bytes)));
    }
    reserved_bytes_ += header.bytes;
    seq = ++upload_seq_;
  }
  st.reserved = header.bytes;
  const std::string dir = TrialDir(header.trial_id);
  std::error_code ec;
  fs::create_directories(dir, ec);
  st.part = absl::StrCat(dir, "/", header.step, ".", seq, kPartSuffix);
  st.header = std::move(header);
  st.fd =
      ::open(st.part.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (st.fd < 0) {
    return absl::InternalError(
        absl::StrCat("cannot create '", st.part, "': ", std::strerror(errno)));
  }
  return up;
}

CheckpointStore::Upload::~Upload() {
  if (!state_) return;
  if (state_->fd >= 0) ::close(state_->fd);
  if (!state_->finished) ::unlink(state_->part.c_str());
  state_->owner->Release(state_->reserved);
}

void CheckpointStore::Release(int64_t reserved) {
  absl::MutexLock lock(&mu_);
  reserved_bytes_ -= reserved;
}

absl::Status CheckpointStore::Upload::Append(absl::string_view data) {
  State& st = *state_;
  if (st.written + static_cast<int64_t>(data.size()) > st.header.bytes) {
    return absl::DataLossError(absl::StrCat(
        "checkpoint upload is longer than its header's total_bytes ",
        st.header.bytes));
  }
  st.sha.Update(data);
  size_t off = 0;
  while (off < data.size()) {
    const ssize_t n = ::write(st.fd, data.data() + off, data.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      return absl::ResourceExhaustedError(
          absl::StrCat("cannot write '", st.part, "': ", std::strerror(errno)));
    }
    off += static_cast<size_t>(n);
  }
  st.written += static_cast<int64_t>(data.size());
  return absl::OkStatus();
}

absl::StatusOr<store::CheckpointRecord> CheckpointStore::Upload::Finish() {
  State& st = *state_;
  if (st.written != st.header.bytes) {
    return absl::DataLossError(absl::StrCat("checkpoint upload ended after ",
                                            st.written, " of ", st.header.bytes,
                                            " bytes"));
  }
  const std::string sha = st.sha.HexDigest();
  if (sha != st.header.sha256) {
    return absl::DataLossError(absl::StrCat(
        "checkpoint upload's SHA-256 ", sha, " does not match its header's ",
        st.header.sha256, " (corrupted in transit)"));
  }
  if (::fsync(st.fd) != 0) {
    return absl::InternalError(
        absl::StrCat("cannot fsync '", st.part, "': ", std::strerror(errno)));
  }
  ::close(st.fd);
  st.fd = -1;
  store::CheckpointRecord c = st.header;
  c.created_at = absl::Now();
  const std::string blob = st.owner->BlobPath(c);
  if (::rename(st.part.c_str(), blob.c_str()) != 0) {
    return absl::InternalError(absl::StrCat("cannot rename '", st.part,
                                            "' to '", blob,
                                            "': ", std::strerror(errno)));
  }
  st.finished = true;
  if (absl::Status s = FsyncPath(DirName(blob)); !s.ok()) {
    ::unlink(blob.c_str());
    return s;
  }
  if (absl::Status s = st.owner->Record(c); !s.ok()) {
    ::unlink(blob.c_str());
    return s;
  }
  return c;
}

absl::Status CheckpointStore::Record(const store::CheckpointRecord& c) {
  store::WriteBatch b;
  b.checkpoints.push_back(c);
  SMOE_RETURN_IF_ERROR(store_->Commit(b));
  std::vector<store::CheckpointRecord> old;
  {
    absl::MutexLock lock(&mu_);
    auto& steps = index_[c.trial_id];
    auto prev = steps.find(c.step);
    if (prev != steps.end()) total_bytes_ -= prev->second.bytes;
    steps[c.step] = c;
    total_bytes_ += c.bytes;
    while (static_cast<int>(steps.size()) > options_.keep_per_trial) {
      old.push_back(steps.begin()->second);
      total_bytes_ -= steps.begin()->second.bytes;
      steps.erase(steps.begin());
    }
  }
  if (!old.empty()) {
    absl::Status s = Delete(old);
    if (!s.ok()) SMOE_LOG(WARNING) << "checkpoint store: " << s;
  }
  return absl::OkStatus();
}

absl::Status CheckpointStore::Delete(
    const std::vector<store::CheckpointRecord>& records) {
  store::WriteBatch b;
  for (const auto& c : records)
    b.deleted_checkpoints.push_back({c.trial_id, c.step});
  SMOE_RETURN_IF_ERROR(store_->Commit(b));
  for (const auto& c : records) ::unlink(BlobPath(c).c_str());
  return absl::OkStatus();
}

std::optional<store::CheckpointRecord> CheckpointStore::Latest(
    const std::string& trial_id, int64_t before_step) {
  absl::MutexLock lock(&mu_);
  auto it = index_.find(trial_id);
  if (it == index_.end()) return std::nullopt;
  for (auto s = it->second.rbegin(); s != it->second.rend(); ++s) {
    if (before_step <= 0 || s->first < before_step) return s->second;
  }
  return std::nullopt;
}

std::vector<store::CheckpointRecord> CheckpointStore::List(
    const std::string& trial_id) {
  absl::MutexLock lock(&mu_);
  std::vector<store::CheckpointRecord> out;
  auto it = index_.find(trial_id);
  if (it == index_.end()) return out;
  for (const auto& [step, c] : it->second) out.push_back(c);
  return out;
}

absl::Status CheckpointStore::Read(
    const store::CheckpointRecord& c,
    const std::function<bool(absl::string_view)>& sink) {
  const std::string path = BlobPath(c);
  auto set_aside = [&](const std::string& why) -> absl::Status {
    std::string where = "(missing)";
    if (auto moved = SetAsideFile(path); moved.ok()) where = *moved;
    {
      absl::MutexLock lock(&mu_);
      auto it = index_.find(c.trial_id);
      if (it != index_.end() && it->second.erase(c.step) > 0) {
        total_bytes_ -= c.bytes;
      }
    }
    store::WriteBatch b;
    b.deleted_checkpoints.push_back({c.trial_id, c.step});
    absl::Status st = store_->Commit(b);
    if (!st.ok()) SMOE_LOG(WARNING) << "checkpoint store: " << st;
    SMOE_LOG(WARNING) << "checkpoint of trial " << c.trial_id << " step "
                      << c.step << " failed verification (" << why
                      << "); set aside as " << where;
    return absl::DataLossError(absl::StrCat(
        "stored checkpoint of trial ", c.trial_id, " step ", c.step,
        " is corrupt (", why, "); set aside on the coordinator as ", where));
  };
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return set_aside(std::strerror(errno));
  Sha256 sha;
  int64_t n_total = 0;
  std::string buf(kBlobChunkBytes, '\0');
  absl::Status st;
  while (true) {
    const ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      st = absl::InternalError(
          absl::StrCat("cannot read '", path, "': ", std::strerror(errno)));
      break;
    }
    if (n == 0) break;
    const absl::string_view chunk(buf.data(), static_cast<size_t>(n));
    sha.Update(chunk);
    n_total += n;
    if (!sink(chunk)) {
      st = absl::CancelledError("checkpoint download cancelled");
      break;
    }
  }
  ::close(fd);
  if (!st.ok()) return st;
  if (n_total != c.bytes) {
    return set_aside(
        absl::StrCat("size ", n_total, " bytes, recorded ", c.bytes));
  }
  const std::string got = sha.HexDigest();
  if (got != c.sha256) {
    return set_aside(absl::StrCat("SHA-256 ", got, ", recorded ", c.sha256));
  }
  return absl::OkStatus();
}

bool CheckpointStore::KeepsFinal(const store::TrialRecord& t) const {
  return t.state == store::TrialState::kSucceeded && options_.keeps_final &&
         options_.keeps_final(t.sweep_id);
}

bool CheckpointStore::Keeps(const store::TrialRecord& t, absl::Time now) const {
  if (TrialStateKeepsCheckpoints(t.state)) return true;
  if (KeepsFinal(t)) return true;
  return t.state == store::TrialState::kFailed &&
         now - t.updated_at < options_.keep_failed;
}

absl::Status CheckpointStore::CollectTrial(const std::string& trial_id) {
  std::vector<store::CheckpointRecord> records;
  {
    absl::MutexLock lock(&mu_);
    auto it = index_.find(trial_id);
    if (it != index_.end()) {
      for (const auto& [step, c] : it->second) {
        records.push_back(c);
        total_bytes_ -= c.bytes;
      }
      index_.erase(it);
    }
  }
  if (!records.empty()) SMOE_RETURN_IF_ERROR(Delete(records));
  std::error_code ec;
  fs::remove_all(TrialDir(trial_id), ec);
  return absl::OkStatus();
}

absl::StatusOr<int> CheckpointStore::EvictFailed(int64_t bytes) {
  std::vector<std::pair<absl::Time, std::string>> failed;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [id, steps] : index_) failed.push_back({{}, id});
  }
  for (auto& [when, id] : failed) {
    absl::StatusOr<store::TrialRecord> t = store_->GetTrial(id);
    // Only failed trials kept for a retry; never a pending/running/pruned
    // one's (their next attempt needs them).
    when = t.ok() && t->state == store::TrialState::kFailed
               ? t->updated_at
               : absl::InfiniteFuture();
  }
  std::sort(failed.begin(), failed.end());
  int evicted = 0;
  for (const auto& [when, id] : failed) {
    if (when == absl::InfiniteFuture()) break;
    {
      absl::MutexLock lock(&mu_);
      if (total_bytes_ + reserved_bytes_ + bytes <= options_.max_total_bytes) {
        break;
      }
    }
    SMOE_RETURN_IF_ERROR(CollectTrial(id));
    ++evicted;
    SMOE_LOG(INFO) << "checkpoint store full: evicted the kept checkpoints "
                      "of failed trial "
                   << id << " (failed " << absl::FormatTime(when) << ")";
  }
  return evicted;
}

absl::StatusOr<int> CheckpointStore::CollectGarbage() {
  const absl::Time now = Now();
  std::vector<std::string> trials;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [id, steps] : index_) trials.push_back(id);
  }
  // Directories left by set-aside blobs of trials with no row left.
  std::error_code ec;
  std::set<std::string> dirs;
  for (const auto& d : fs::directory_iterator(options_.dir, ec)) {
    if (d.is_directory()) dirs.insert(d.path().filename().string());
  }
  int collected = 0;
  for (const std::string& id : trials) {
    dirs.erase(absl::StrReplaceAll(id, {{"/", "_"}}));
    absl::StatusOr<store::TrialRecord> t = store_->GetTrial(id);
    if (!t.ok() && !absl::IsNotFound(t.status())) return t.status();
    if (t.ok() && KeepsFinal(*t)) {
      // Only the final checkpoint stays: the newest blob.
      std::vector<store::CheckpointRecord> older;
      {
        absl::MutexLock lock(&mu_);
        auto it = index_.find(id);
        if (it != index_.end() && it->second.size() > 1) {
          for (auto s = it->second.begin(); std::next(s) != it->second.end();
               ++s) {
            older.push_back(s->second);
          }
        }
      }
      if (!older.empty()) SMOE_RETURN_IF_ERROR(Delete(older));
      continue;
    }
    if (t.ok() && Keeps(*t, now)) continue;
    SMOE_RETURN_IF_ERROR(CollectTrial(id));
    ++collected;
  }
  // A directory without rows: its trial's blobs were all set aside (or the
  // rows were lost); remove it once the trial no longer keeps checkpoints.
  for (const std::string& d : dirs) {
    const size_t us = d.rfind('_');
    if (us == std::string::npos) continue;
    const std::string id = d.substr(0, us) + "/" + d.substr(us + 1);
    absl::StatusOr<store::TrialRecord> t = store_->GetTrial(id);
    if (t.ok() && Keeps(*t, now)) continue;
    if (!t.ok() && !absl::IsNotFound(t.status())) continue;
    fs::remove_all(absl::StrCat(options_.dir, "/", d), ec);
    ++collected;
  }
  if (!options_.shared_dir.empty()) {
    for (const auto& d : fs::directory_iterator(options_.shared_dir, ec)) {
      if (!d.is_directory()) continue;
      const std::string name = d.path().filename().string();
      const size_t us = name.rfind('_');
      if (us == std::string::npos) continue;
      const std::string id = name.substr(0, us) + "/" + name.substr(us + 1);
      absl::StatusOr<store::TrialRecord> t = store_->GetTrial(id);
      if (t.ok() && Keeps(*t, now)) continue;
      if (!t.ok() && !absl::IsNotFound(t.status())) continue;
      fs::remove_all(d.path(), ec);
      ++collected;
    }
  }
  return collected;
}

int CheckpointStore::DropSweep(const std::string& sweep_id) {
  const std::string prefix = sweep_id + "/";
  {
    absl::MutexLock lock(&mu_);
    for (auto it = index_.lower_bound(prefix);
         it != index_.end() && absl::StartsWith(it->first, prefix);) {
      for (const auto& [step, c] : it->second) total_bytes_ -= c.bytes;
      it = index_.erase(it);
    }
  }
  // A trial directory is "<sweep>_<16 hex digits>"; a sweep name may itself
  // contain '_', so the name before the last '_' must equal the sweep's.
  int removed = 0;
  auto drop_dirs = [&](const std::string& root, bool count) {
    std::error_code ec;
    std::vector<fs::path> dirs;
    for (const auto& d : fs::directory_iterator(root, ec)) {
      if (!d.is_directory(ec)) continue;
      const std::string name = d.path().filename().string();
      const size_t us = name.rfind('_');
      if (us != std::string::npos && name.compare(0, us, sweep_id) == 0 &&
          us == sweep_id.size()) {
        dirs.push_back(d.path());
      }
    }
    for (const fs::path& dir : dirs) {
      if (count) {
        for (const auto& f : fs::directory_iterator(dir, ec)) {
          removed += absl::EndsWith(f.path().string(), kBlobSuffix) ? 1 : 0;
        }
      }
      fs::remove_all(dir, ec);
      if (ec) {
        SMOE_LOG(WARNING) << "checkpoint store: cannot remove " << dir << ": "
                          << ec.message() << " (garbage collection retries)";
      }
    }
  };
  drop_dirs(options_.dir, true);
  if (!options_.shared_dir.empty()) drop_dirs(options_.shared_dir, false);
  SMOE_LOG(INFO) << "checkpoint store: sweep " << sweep_id << " deleted, "
                 << removed << " blob file(s) removed";
  return removed;
}

int64_t CheckpointStore::total_bytes() {
  absl::MutexLock lock(&mu_);
  return total_bytes_ + reserved_bytes_;
}

}  // namespace smoe::coordinator
