// Copyright 2026 SMoE Lab authors.
#include "worker/daemon/worker_daemon.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/strip.h"
#include "common/logging.h"
#include "common/status_macros.h"
#include "common/utf8.h"
#include "trials/events.h"
#include "trials/json_limits.h"
#include "worker/daemon/command_launch.h"

extern char** environ;

namespace smoe::worker {
namespace {

using json = nlohmann::json;

constexpr size_t kMaxFailMessage = 8192;

// Metric recording a checkpoint recovery: checkpoint/restored_previous or
// checkpoint/restored_scratch, value = the step the attempt resumed from.
constexpr char kCheckpointRestoredMetric[] = "checkpoint/restored_";

// A failed write under the work dir: ResourceExhausted for ENOSPC/EDQUOT (a
// full disk or quota), Internal for the rest (EIO, EROFS, ...), naming the
// path and errno.
absl::Status WriteError(absl::string_view what, const std::string& path,
                        int err) {
  std::string msg = absl::StrCat(what, " '", path, "': ", strerror(err));
  if (err == ENOSPC || err == EDQUOT) {
    return absl::ResourceExhaustedError(std::move(msg));
  }
  return absl::InternalError(std::move(msg));
}

// Writes all of `text` to `fd`; errno is set on failure.
bool WriteAll(int fd, absl::string_view text) {
  const char* p = text.data();
  size_t left = text.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    p += n;
    left -= static_cast<size_t>(n);
  }
  return true;
}

absl::Status MakeDirs(const std::string& path) {
  std::string cur;
  for (size_t i = 0; i <= path.size(); ++i) {
    if (i == path.size() || path[i] == '/') {
      // Owner only: attempt logs and checkpoints are the user's (issue 36).
      if (!cur.empty() && mkdir(cur.c_str(), 0700) != 0 && errno != EEXIST) {
        return WriteError("cannot create directory", cur, errno);
      }
    }
    if (i < path.size()) cur.push_back(path[i]);
  }
  return absl::OkStatus();
}

// Writes `text` to `path` atomically (temp file + rename).
// The trial dir's record of every metric this host flushed for the trial, in
// order (JSON Lines {"step","name","value"}). A later attempt on this host
// resumes from the trial's checkpoint and does not re-emit the steps before it;
// re-sending this history under the new attempt keeps the trial's series
// complete even when the earlier attempt's own reports were refused as stale.
constexpr char kMetricHistory[] = "metrics.jsonl";

std::vector<v1::Metric> ReadMetricHistory(const std::string& dir) {
  std::map<std::pair<int64_t, std::string>, double> last;  // (step, name)
  std::ifstream in(dir + "/" + kMetricHistory);
  std::string line;
  int dropped = 0;
  while (std::getline(in, line)) {
    // Each line is checked as the metric event it came from: a line the
    // coordinator would refuse (a torn last line after a crash, a corrupt
    // one) is dropped alone; sent, it would get the whole batch refused.
    json m = trials::ParseJsonLine(line);
    if (!m.is_object()) {
      ++dropped;
      continue;
    }
    m["event"] = "metric";
    absl::StatusOr<trials::TrialEvent> ev = trials::EventFromJson(m);
    if (!ev.ok()) {
      ++dropped;
      continue;
    }
    // null: NaN (nlohmann writes NaN as null).
    last[{*ev->step, ev->name}] = ev->value;
  }
  if (dropped > 0) {
    SMOE_LOG(WARNING) << dir << "/" << kMetricHistory << ": dropped " << dropped
                      << " unreadable line(s)";
  }
  std::vector<v1::Metric> out;
  out.reserve(last.size());
  for (const auto& [key, value] : last) {
    v1::Metric m;
    m.set_step(key.first);
    m.set_name(key.second);
    m.set_value(value);
    out.push_back(std::move(m));
  }
  return out;
}

// Appends the metrics to the trial's history. A failed write (a full disk)
// is cut off again, so no torn line is left for the next line to join.
absl::Status AppendMetricHistory(const std::string& dir,
                                 const std::vector<v1::Metric>& metrics) {
  const std::string path = dir + "/" + kMetricHistory;
  std::string text;
  for (const v1::Metric& m : metrics) {
    absl::StrAppend(
        &text,
        json{{"step", m.step()}, {"name", m.name()}, {"value", m.value()}}
            .dump(),
        "\n");
  }
  const int fd =
      ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) return WriteError("cannot open", path, errno);
  const off_t before = ::lseek(fd, 0, SEEK_END);
  absl::Status s;
  if (!WriteAll(fd, text)) {
    s = WriteError("cannot append to", path, errno);
    if (before >= 0 && ::ftruncate(fd, before) != 0) {
      SMOE_LOG(WARNING) << "cannot cut a failed write off '" << path
                        << "': " << strerror(errno);
    }
  }
  ::close(fd);
  return s;
}

// Writes `text` to `path` atomically (temp file + rename). On failure the
// temp file is removed (on a full disk it would hold the space it got).
absl::Status WriteFileAtomic(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  const int fd =
      ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return WriteError("cannot create", tmp, errno);
  if (!WriteAll(fd, text)) {
    const int err = errno;
    ::close(fd);
    ::unlink(tmp.c_str());
    return WriteError("cannot write", tmp, err);
  }
  if (::close(fd) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    return WriteError("cannot write", tmp, err);
  }
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    return WriteError(absl::StrCat("cannot rename '", tmp, "' to"), path, err);
  }
  return absl::OkStatus();
}

// Writes, syncs and removes a file of `bytes` bytes at `path`: OK when the
// work dir can take writes again.
absl::Status ProbeWrite(const std::string& path, int64_t bytes) {
  const int fd =
      ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return WriteError("cannot create", path, errno);
  const std::string block(64 << 10, '\0');
  bool ok = true;
  for (int64_t left = bytes; ok && left > 0;) {
    const size_t n = static_cast<size_t>(
        std::min<int64_t>(left, static_cast<int64_t>(block.size())));
    ok = WriteAll(fd, absl::string_view(block.data(), n));
    left -= static_cast<int64_t>(n);
  }
  if (ok) ok = ::fsync(fd) == 0;
  const int err = errno;
  ::close(fd);
  ::unlink(path.c_str());
  if (!ok) return WriteError("cannot write", path, err);
  return absl::OkStatus();
}

bool IsTransient(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kDeadlineExceeded:
    case absl::StatusCode::kResourceExhausted:
    case absl::StatusCode::kAborted:
    case absl::StatusCode::kInternal:
    case absl::StatusCode::kUnknown:
    case absl::StatusCode::kCancelled:
    case absl::StatusCode::kUnauthenticated:  // token rotated: keep trying
    case absl::StatusCode::kPermissionDenied:
    case absl::StatusCode::kUnimplemented:
      return true;
    default:
      return false;
  }
}

// The line of a failed trainer's stderr tail that says why, for the first
// line of the failure message (the trials table, `sweep show --trials`): the
// last error logged through common/logging.h ("E... file.cc:12] NOT_FOUND:
// ..." without its prefix), else the last non-blank line (a Python
// traceback's "ValueError: ..."); at most 300 bytes; "" for an empty tail.
std::string FirstErrorLine(const std::vector<std::string>& stderr_tail) {
  std::string last_error, last_line;
  for (const std::string& raw : stderr_tail) {
    const std::string line(absl::StripAsciiWhitespace(raw));
    if (line.empty()) continue;
    last_line = line;
    const size_t bracket = line.find("] ");
    if ((line[0] == 'E' || line[0] == 'F') && line.size() > 1 &&
        absl::ascii_isdigit(static_cast<unsigned char>(line[1])) &&
        bracket != std::string::npos) {
      last_error = line.substr(bracket + 2);
    }
  }
  std::string out = last_error.empty() ? last_line : last_error;
  if (out.size() > 300) out = absl::StrCat(out.substr(0, 297), "...");
  return out;
}

std::string FailMessage(const std::string& head,
                        const std::vector<std::string>& stderr_tail) {
  std::string msg = head;
  if (!stderr_tail.empty()) {
    absl::StrAppend(&msg, "\n", absl::StrJoin(stderr_tail, "\n"));
  }
  // The trainer's stderr is bytes: what is not UTF-8 becomes U+FFFD (the
  // message is a proto3 string; issue 36 item 1).
  msg = ToValidUtf8(msg);
  if (msg.size() > kMaxFailMessage) {
    // Keep the end: the last lines usually say what went wrong.
    msg = absl::StrCat(head, "\n...",
                       msg.substr(Utf8CharStartAtOrAfter(
                           msg, msg.size() - (kMaxFailMessage - head.size()))));
  }
  return msg;
}

}  // namespace

absl::StatusOr<std::unique_ptr<WorkerDaemon>> WorkerDaemon::Create(
    GatewayClient* gateway, launch::ProcessLauncher* launcher, Clock* clock,
    WorkerDaemonOptions options) {
  if (gateway == nullptr || launcher == nullptr || clock == nullptr) {
    return absl::InvalidArgumentError("WorkerDaemon: null dependency");
  }
  if (options.work_dir.empty()) {
    return absl::InvalidArgumentError("WorkerDaemon: work_dir is empty");
  }
  if (options.trainer_path.empty() &&
      std::any_of(options.kinds.begin(), options.kinds.end(),
                  [](const std::string& k) { return k != kCommandKind; })) {
    return absl::InvalidArgumentError(
        "WorkerDaemon: trainer_path is empty (only a worker of kind command "
        "alone runs without smoe-trainer)");
  }
  if (options.slots < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("WorkerDaemon: slots must be >= 1, got ", options.slots));
  }
  SMOE_RETURN_IF_ERROR(MakeDirs(options.work_dir + "/trials"));
  if (options.worker_id.empty()) {
    std::ifstream in(options.work_dir + "/worker_id");
    std::string id;
    if (in && std::getline(in, id)) {
      options.worker_id = std::string(absl::StripAsciiWhitespace(id));
    }
  }
  SMOE_ASSIGN_OR_RETURN(std::unique_ptr<Outbox> outbox,
                        Outbox::Open(options.work_dir + "/journal.jsonl"));
  return std::unique_ptr<WorkerDaemon>(new WorkerDaemon(
      gateway, launcher, clock, std::move(options), std::move(outbox)));
}

WorkerDaemon::WorkerDaemon(GatewayClient* gateway,
                           launch::ProcessLauncher* launcher, Clock* clock,
                           WorkerDaemonOptions options,
                           std::unique_ptr<Outbox> outbox)
    : gateway_(gateway),
      launcher_(launcher),
      clock_(clock),
      options_(std::move(options)),
      outbox_(std::move(outbox)),
      rng_(options_.jitter_seed != 0 ? options_.jitter_seed
                                     : std::random_device{}()),
      worker_id_(options_.worker_id),
      redactor_(SecretRedactor::FromEnvironment(environ)) {
  for (int g : options_.gpu_indices) gpu_busy_[g] = false;
  if (options_.checkpoint_sync) {
    uploader_ = std::make_unique<CheckpointUploader>(
        gateway_, options_.checkpoint_dir,
        [this](uint64_t id) { return delivered_id_.load() >= id; });
  }
}

WorkerDaemon::~WorkerDaemon() {
  // Processes are killed and reaped by their destructors.
}

std::string WorkerDaemon::TrialDir(const std::string& trial_id) const {
  return absl::StrCat(options_.work_dir, "/trials/",
                      absl::StrReplaceAll(trial_id, {{"/", "_"}}));
}

absl::Status WorkerDaemon::Run() {
  while (!done_) {
    SMOE_RETURN_IF_ERROR(RunOnce());
    if (!done_) clock_->SleepFor(options_.tick);
  }
  return absl::OkStatus();
}

absl::Status WorkerDaemon::RunOnce() {
  if (done_) return absl::OkStatus();
  if (drain_requested_.load() && !draining_) BeginDrain("SIGTERM");

  if (!registered_ && RpcAllowed()) TryRegister();
  if (!fatal_.ok()) return fatal_;

  // Attempts whose checkpoint has landed start now.
  SMOE_RETURN_IF_ERROR(PollRestores());

  // Trainer output and exits.
  const absl::Time now = clock_->Now();
  std::vector<std::string> finished;
  for (auto& [id, t] : trials_) {
    ConsumeOutput(&t);
    if (t.ranks->Poll()) {
      ConsumeOutput(&t);  // the last lines may have arrived with the exit
      finished.push_back(id);
      continue;
    }
    CheckProgress(&t, now);
    if (static_cast<int>(t.metrics.size()) >= options_.metrics_flush_count ||
        (!t.metrics.empty() &&
         now - t.last_flush >= options_.metrics_flush_interval)) {
      SMOE_RETURN_IF_ERROR(FlushMetrics(&t));
    }
  }
  TakeCheckpointNotes(nullptr);
  for (const std::string& id : finished) {
    auto it = trials_.find(id);
    SMOE_RETURN_IF_ERROR(FinishTrial(&it->second));
    trials_.erase(it);
  }

  if (registered_ && RpcAllowed() && clock_->Now() >= next_heartbeat_) {
    Heartbeat();
  }
  if (drain_requested_.load() && !draining_) BeginDrain("SIGTERM");
  if (registered_ && RpcAllowed()) SMOE_RETURN_IF_ERROR(DeliverOutbox());
  CheckDisk();
  if (registered_ && RpcAllowed() && !draining_ && disk_error_.ok() &&
      clock_->Now() >= next_lease_ && FreeSlots() > 0) {
    LeaseMore();
    // Leases refused locally (bad spec, no resources) are reported at once.
    if (registered_ && RpcAllowed()) SMOE_RETURN_IF_ERROR(DeliverOutbox());
  }

  if (draining_ && trials_.empty() && restoring_.empty()) {
    if (drain_flush_deadline_ == absl::InfiniteFuture()) {
      drain_flush_deadline_ = clock_->Now() + options_.drain_flush_timeout;
    }
    if (outbox_->empty()) {
      SMOE_LOG(INFO) << "drain complete; every report acknowledged";
      done_ = true;
    } else if (clock_->Now() >= drain_flush_deadline_) {
      SMOE_LOG(WARNING) << "drain: " << outbox_->size()
                        << " report(s) not acknowledged; kept in the journal "
                           "for the next start";
      done_ = true;
    }
  }
  return absl::OkStatus();
}

// ---- coordinator calls ----------------------------------------------------

bool WorkerDaemon::RpcAllowed() const { return clock_->Now() >= next_rpc_; }

void WorkerDaemon::OnRpcOk() {
  backoff_ = absl::ZeroDuration();
  next_rpc_ = absl::InfinitePast();
}

WorkerDaemon::RpcOutcome WorkerDaemon::OnRpcError(const absl::Status& status,
                                                  absl::string_view what) {
  const absl::StatusCode code = status.code();
  if (code == absl::StatusCode::kNotFound) {
    SMOE_LOG(WARNING) << what << ": coordinator does not know worker "
                      << worker_id_ << " (" << status.message()
                      << "); re-registering";
    registered_ = false;
    return RpcOutcome::kRetry;
  }
  if (code == absl::StatusCode::kFailedPrecondition ||
      code == absl::StatusCode::kInvalidArgument ||
      code == absl::StatusCode::kOutOfRange ||
      code == absl::StatusCode::kAlreadyExists) {
    return RpcOutcome::kDrop;
  }
  if (!IsTransient(code)) return RpcOutcome::kDrop;
  backoff_ = backoff_ == absl::ZeroDuration()
                 ? options_.backoff_initial
                 : std::min(backoff_ * 2, options_.backoff_max);
  std::uniform_real_distribution<double> jitter(0.5, 1.0);
  const absl::Duration wait = backoff_ * jitter(rng_);
  next_rpc_ = clock_->Now() + wait;
  SMOE_LOG(WARNING) << what << " failed (" << status << "); retrying in "
                    << wait;
  return RpcOutcome::kRetry;
}

void WorkerDaemon::SaveWorkerId() {
  absl::Status s =
      WriteFileAtomic(options_.work_dir + "/worker_id", worker_id_ + "\n");
  if (!s.ok()) SMOE_LOG(WARNING) << "cannot save worker id: " << s;
}

void WorkerDaemon::OnDiskError(const absl::Status& s, absl::string_view what) {
  ++disk_errors_;
  next_disk_probe_ = clock_->Now() + options_.disk_probe_interval;
  if (!disk_error_.ok()) return;  // logged at the start of the episode
  disk_error_ = s;
  disk_error_since_ = clock_->Now();
  SMOE_LOG(ERROR) << "work dir " << options_.work_dir << " cannot be written ("
                  << what << ": " << s.message()
                  << "); leasing paused until it can (probed every "
                  << options_.disk_probe_interval
                  << "); running trials go on, reports are kept in memory";
}

void WorkerDaemon::Journaled(const absl::Status& s) {
  if (!s.ok()) OnDiskError(s, "journal");
}

void WorkerDaemon::CheckDisk() {
  const absl::Time now = clock_->Now();
  if (disk_error_.ok()) {
    // Before leasing: a trial needs room for its TRIAL.json, logs and
    // checkpoints.
    if (draining_ || !registered_ || now < next_lease_ || FreeSlots() == 0) {
      return;
    }
    struct statvfs vfs;
    if (::statvfs(options_.work_dir.c_str(), &vfs) == 0) {
      const int64_t free_bytes = static_cast<int64_t>(vfs.f_bavail) *
                                 static_cast<int64_t>(vfs.f_frsize);
      if (free_bytes < options_.min_free_bytes) {
        OnDiskError(absl::ResourceExhaustedError(absl::StrCat(
                        free_bytes, " bytes free, less than ",
                        options_.min_free_bytes, " (min_free_bytes)")),
                    "before a lease");
      }
    }
    return;
  }
  if (now < next_disk_probe_) return;
  next_disk_probe_ = now + options_.disk_probe_interval;
  absl::Status s =
      ProbeWrite(options_.work_dir + "/.disk-probe", options_.min_free_bytes);
  if (s.ok()) s = outbox_->Persist();
  if (!s.ok()) return;
  SMOE_LOG(INFO) << "work dir " << options_.work_dir
                 << " is writable again after "
                 << absl::Trunc(now - disk_error_since_, absl::Seconds(1))
                 << " (" << disk_errors_ << " write error(s)); leasing resumes";
  disk_error_ = absl::OkStatus();
  disk_errors_ = 0;
  next_lease_ = absl::InfinitePast();
}

void WorkerDaemon::TryRegister() {
  v1::RegisterRequest req;
  req.set_worker_id(worker_id_);
  req.set_hostname(options_.hostname);
  req.set_cpus(options_.cpus);
  req.set_gpus(static_cast<int>(options_.gpu_indices.size()));
  req.set_slots(options_.slots);
  for (const auto& [k, v] : options_.labels) (*req.mutable_labels())[k] = v;
  for (const std::string& k : options_.kinds) req.add_kinds(k);
  absl::StatusOr<v1::RegisterResponse> resp = gateway_->Register(req);
  if (absl::IsUnauthenticated(resp.status()) ||
      absl::IsPermissionDenied(resp.status())) {
    // A wrong token never becomes right by retrying: stop with a clear
    // message instead of retrying forever (issue 16 item 10).
    fatal_ = absl::UnauthenticatedError(absl::StrCat(
        "the coordinator refused this worker's API token (",
        resp.status().message(),
        "); check --token-file or $SMOE_TOKEN against the coordinator's "
        "token file"));
    return;
  }
  if (!resp.ok()) {
    // NotFound cannot mean "unknown worker" here; treat every error as one to
    // retry after a backoff.
    backoff_ = backoff_ == absl::ZeroDuration()
                   ? options_.backoff_initial
                   : std::min(backoff_ * 2, options_.backoff_max);
    std::uniform_real_distribution<double> jitter(0.5, 1.0);
    const absl::Duration wait = backoff_ * jitter(rng_);
    next_rpc_ = clock_->Now() + wait;
    SMOE_LOG(WARNING) << "register with the coordinator failed ("
                      << resp.status() << "); retrying in " << wait;
    return;
  }
  OnRpcOk();
  const bool changed = resp->worker_id() != worker_id_;
  if (!resp->worker_id().empty()) worker_id_ = resp->worker_id();
  if (changed) SaveWorkerId();
  heartbeat_interval_ = resp->heartbeat_interval_ms() > 0
                            ? absl::Milliseconds(resp->heartbeat_interval_ms())
                            : absl::Seconds(5);
  registered_ = true;
  next_heartbeat_ = absl::InfinitePast();  // heartbeat right away
  next_lease_ = absl::InfinitePast();
  SMOE_LOG(INFO) << "registered as worker " << worker_id_ << " (slots "
                 << options_.slots << ", gpus " << options_.gpu_indices.size()
                 << ", heartbeat " << heartbeat_interval_ << ")";
}

void WorkerDaemon::Heartbeat() {
  v1::HeartbeatRequest req;
  req.set_worker_id(worker_id_);
  req.set_draining(draining_);
  if (!disk_error_.ok()) {
    // Shown by `smoe workers` and the dashboard (state "paused").
    const std::string why = ToValidUtf8(absl::StrCat(
        "work dir not writable, leasing paused: ", disk_error_.message()));
    req.set_paused(why.substr(0, Utf8CutBefore(why, 512)));
  }
  std::set<std::string> log_sent;
  for (auto& [id, t] : trials_) {
    v1::RunningAttempt* r = req.add_running();
    r->set_trial_id(id);
    r->set_attempt(t.lease.attempt());
    if (options_.system_metrics) SampleSystem(&t, r->mutable_system());
    // At most 8 tails (64 KiB each) per heartbeat; the rest wait for the
    // next one.
    if (t.log_requested && t.log != nullptr && log_sent.size() < 8) {
      const LogTailText tail = t.log->Tail();
      r->mutable_log()->set_text(tail.text);
      r->mutable_log()->set_total_bytes(tail.total_bytes);
      log_sent.insert(id);
      t.log_requested = false;
    }
  }
  // Attempts still fetching their checkpoint are alive too (no processes to
  // sample yet).
  for (auto& [id, r] : restoring_) {
    v1::RunningAttempt* a = req.add_running();
    a->set_trial_id(id);
    a->set_attempt(r.t.lease.attempt());
  }
  absl::StatusOr<v1::HeartbeatResponse> resp = gateway_->Heartbeat(req);
  if (!resp.ok()) {
    OnRpcError(resp.status(), "heartbeat");
    if (resp.status().code() != absl::StatusCode::kNotFound &&
        !IsTransient(resp.status().code())) {
      next_heartbeat_ = clock_->Now() + heartbeat_interval_;
    }
    return;
  }
  OnRpcOk();
  ++heartbeats_ok_;
  next_heartbeat_ = clock_->Now() + heartbeat_interval_;
  for (const v1::WorkerCommand& cmd : resp->commands()) {
    if (cmd.type() == v1::WorkerCommand::TYPE_SEND_LOG) {
      auto it = trials_.find(cmd.trial_id());
      if (it == trials_.end() || it->second.lease.attempt() != cmd.attempt()) {
        continue;
      }
      it->second.log_requested = true;
      // A first request is answered at once; while the reader keeps asking,
      // every heartbeat carries the tail.
      if (log_sent.count(cmd.trial_id()) == 0) {
        next_heartbeat_ = absl::InfinitePast();
      }
      continue;
    }
    if (cmd.type() != v1::WorkerCommand::TYPE_CANCEL) continue;
    if (auto r = restoring_.find(cmd.trial_id());
        r != restoring_.end() && r->second.t.lease.attempt() == cmd.attempt()) {
      // Not started: it never will be (PollRestores reports it cancelled
      // once the download thread returns).
      r->second.cancel_requested = true;
      continue;
    }
    auto it = trials_.find(cmd.trial_id());
    if (it == trials_.end() || it->second.lease.attempt() != cmd.attempt()) {
      continue;  // already ended; its report will be refused as stale
    }
    Trial& t = it->second;
    if (t.cancel_requested) continue;
    SMOE_LOG(INFO) << "coordinator cancelled trial " << cmd.trial_id()
                   << " attempt " << cmd.attempt();
    t.cancel_requested = true;
    t.ranks->Stop(options_.cancel_grace);
  }
  if (resp->drain() && !draining_) BeginDrain("coordinator asked to drain");
}

void WorkerDaemon::LeaseMore() {
  v1::LeaseRequest req;
  req.set_worker_id(worker_id_);
  req.set_free_slots(FreeSlots());
  req.set_free_gpus(static_cast<int>(FreeGpus().size()));
  absl::StatusOr<v1::LeaseResponse> resp = gateway_->Lease(req);
  next_lease_ = clock_->Now() + options_.lease_interval;
  if (!resp.ok()) {
    OnRpcError(resp.status(), "lease");
    return;
  }
  OnRpcOk();
  for (const v1::TrialLease& lease : resp->leases()) {
    absl::Status s = Launch(lease);
    if (!s.ok()) SMOE_LOG(ERROR) << "trial " << lease.trial_id() << ": " << s;
  }
}

absl::Status WorkerDaemon::DeliverOutbox() {
  int budget = 64;  // keep the loop responsive
  while (!outbox_->empty() && registered_ && RpcAllowed() && budget-- > 0) {
    const OutboxEntry& e = outbox_->front();
    absl::Status s;
    switch (e.type) {
      case OutboxEntry::Type::kMetrics:
        s = gateway_->ReportMetrics(e.metrics).status();
        break;
      case OutboxEntry::Type::kComplete:
        s = gateway_->Complete(e.complete).status();
        break;
      case OutboxEntry::Type::kFail:
        s = gateway_->Fail(e.fail).status();
        break;
    }
    const std::string what = absl::StrCat(e.type_name(), " for ", e.trial_id(),
                                          " attempt ", e.attempt());
    if (s.ok()) {
      OnRpcOk();
      SMOE_LOG(DEBUG) << what << " acknowledged";
      const uint64_t id = e.id;
      Journaled(outbox_->PopFront());
      delivered_id_.store(id);
      continue;
    }
    // A report the coordinator refuses for what it holds is rewritten
    // (RewriteRefused) rather than retried forever or dropped in silence:
    // nothing else waits behind it, and its attempt ends with a reason.
    const bool invalid = s.code() == absl::StatusCode::kInvalidArgument;
    const bool refused = s.code() == absl::StatusCode::kInternal ||
                         s.code() == absl::StatusCode::kUnknown ||
                         s.code() == absl::StatusCode::kResourceExhausted;
    if (refused) {
      if (refused_entry_ != e.id) {
        refused_entry_ = e.id;
        refused_count_ = 0;
        refused_heartbeats_ok_ = heartbeats_ok_;
      }
      ++refused_count_;
    }
    // Refused again and again while the coordinator answers heartbeats:
    // the report itself is the problem.
    const bool poisoned = refused && refused_count_ >= kMaxReportRefusals &&
                          heartbeats_ok_ > refused_heartbeats_ok_;
    if (invalid || poisoned) {
      SMOE_ASSIGN_OR_RETURN(const bool rewritten, RewriteRefused(e, s));
      refused_entry_ = 0;
      if (rewritten) continue;  // send the rewritten report now
      SMOE_LOG(WARNING) << what << " refused (" << s << "); dropping it";
      const uint64_t id = e.id;
      Journaled(outbox_->PopFront());
      delivered_id_.store(id);
      continue;
    }
    RpcOutcome outcome = OnRpcError(s, what);
    if (s.code() == absl::StatusCode::kNotFound) {
      // A second NotFound for the same report after re-registering: the
      // coordinator does not know the trial; nothing to deliver it to.
      if (not_found_entry_ == e.id) {
        outcome = RpcOutcome::kDrop;
        registered_ = true;
      } else {
        not_found_entry_ = e.id;
      }
    }
    if (outcome == RpcOutcome::kDrop) {
      SMOE_LOG(WARNING) << what << " refused (" << s
                        << "); treating as acknowledged";
      const uint64_t id = e.id;
      Journaled(outbox_->PopFront());
      delivered_id_.store(id);
      continue;
    }
    break;  // retry later, in order
  }
  return absl::OkStatus();
}

absl::StatusOr<bool> WorkerDaemon::RewriteRefused(const OutboxEntry& e,
                                                  const absl::Status& why) {
  const std::string reason(absl::StrCat(absl::StatusCodeToString(why.code()),
                                        ": ", why.message().substr(0, 512)));
  OutboxEntry next;
  next.type = e.type;
  switch (e.type) {
    case OutboxEntry::Type::kMetrics:
      return false;  // the batch alone is lost
    case OutboxEntry::Type::kComplete:
      if (e.complete.has_log()) {
        // First without the log tail, the largest free-form part.
        next.complete = e.complete;
        next.complete.clear_log();
        SMOE_LOG(WARNING) << "complete for " << e.trial_id() << " attempt "
                          << e.attempt() << " refused (" << reason
                          << "); sending it again without its log tail";
        break;
      }
      // The result itself is refused: the attempt fails, saying why.
      next.type = OutboxEntry::Type::kFail;
      next.fail.set_worker_id(e.complete.worker_id());
      next.fail.set_trial_id(e.complete.trial_id());
      next.fail.set_attempt(e.complete.attempt());
      next.fail.set_reason(v1::FailRequest::REASON_ERROR);
      next.fail.set_exit_code(0);
      next.fail.set_message(absl::StrCat(
          "the coordinator refused this attempt's result (", reason,
          "); the trainer's result is in the attempt "
          "log on worker ",
          worker_id_));
      SMOE_LOG(WARNING) << "complete for " << e.trial_id() << " attempt "
                        << e.attempt() << " refused (" << reason
                        << "); reporting the attempt failed instead";
      break;
    case OutboxEntry::Type::kFail:
      if (!e.fail.has_log() && e.fail.message().size() <= 1024) return false;
      next.fail = e.fail;
      next.fail.clear_log();
      if (next.fail.message().size() > 1024) {
        next.fail.set_message(
            absl::StrCat(next.fail.message().substr(
                             0, Utf8CutBefore(next.fail.message(), 1000)),
                         " [cut]"));
      }
      SMOE_LOG(WARNING) << "fail for " << e.trial_id() << " attempt "
                        << e.attempt() << " refused (" << reason
                        << "); sending it again without its log tail";
      break;
  }
  Journaled(outbox_->ReplaceFront(std::move(next)));
  return true;
}

// ---- trials ---------------------------------------------------------------

int WorkerDaemon::FreeSlots() const {
  int used = 0;
  for (const auto& [id, t] : trials_) used += std::max(1, t.lease.slots());
  for (const auto& [id, r] : restoring_) {
    used += std::max(1, r.t.lease.slots());
  }
  return std::max(0, options_.slots - used);
}

std::vector<int> WorkerDaemon::FreeGpus() const {
  std::vector<int> out;
  for (const auto& [g, busy] : gpu_busy_) {
    if (!busy) out.push_back(g);
  }
  return out;
}

absl::Status WorkerDaemon::FailLease(const v1::TrialLease& lease,
                                     v1::FailRequest::Reason reason,
                                     int exit_code, const std::string& message,
                                     const AttemptLog* log) {
  OutboxEntry e;
  e.type = OutboxEntry::Type::kFail;
  e.fail.set_worker_id(worker_id_);
  e.fail.set_trial_id(lease.trial_id());
  e.fail.set_attempt(lease.attempt());
  e.fail.set_reason(reason);
  e.fail.set_exit_code(exit_code);
  e.fail.set_message(redactor_.Redact(message));
  if (log != nullptr) {
    const LogTailText tail = log->Tail();
    e.fail.mutable_log()->set_text(tail.text);
    e.fail.mutable_log()->set_total_bytes(tail.total_bytes);
  }
  Journaled(outbox_->Add(std::move(e)));
  return absl::OkStatus();
}

absl::Status WorkerDaemon::Launch(const v1::TrialLease& lease) {
  if (auto it = restoring_.find(lease.trial_id()); it != restoring_.end()) {
    const int fetching = it->second.t.lease.attempt();
    if (fetching == lease.attempt()) {
      return absl::AlreadyExistsError(
          "attempt already fetching its checkpoint on this worker");
    }
    // The older attempt's download still writes into the trial directory.
    SMOE_LOG(WARNING) << "trial " << lease.trial_id() << ": attempt "
                      << lease.attempt() << " leased while attempt " << fetching
                      << " is still fetching its checkpoint here; returning it";
    return FailLease(lease, v1::FailRequest::REASON_PREEMPTED, 0,
                     absl::StrCat("attempt ", fetching,
                                  " of this trial is still fetching its "
                                  "checkpoint on this worker; leased again "
                                  "too early"));
  }
  if (auto it = trials_.find(lease.trial_id()); it != trials_.end()) {
    const int running = it->second.lease.attempt();
    if (running == lease.attempt()) {
      return absl::AlreadyExistsError("attempt already running on this worker");
    }
    // An older attempt is still stopping in the trial's directory (cancel
    // grace): hand the new one back now rather than leave it unreported
    // until its lease expires.
    SMOE_LOG(WARNING) << "trial " << lease.trial_id() << ": attempt "
                      << lease.attempt() << " leased while attempt " << running
                      << " is still stopping here; returning it";
    return FailLease(lease, v1::FailRequest::REASON_PREEMPTED, 0,
                     absl::StrCat("attempt ", running,
                                  " of this trial is still stopping on this "
                                  "worker; leased again too early"));
  }
  const std::vector<int> free_gpus = FreeGpus();
  if (FreeSlots() < std::max(1, lease.slots()) ||
      static_cast<int>(free_gpus.size()) < lease.gpus()) {
    SMOE_LOG(WARNING) << "trial " << lease.trial_id()
                      << ": leased beyond capacity; returning it";
    return FailLease(lease, v1::FailRequest::REASON_PREEMPTED, 0,
                     "worker has no free slot or GPU for this trial");
  }
  json params = trials::CheckJsonDepth(lease.params_json(), "params_json").ok()
                    ? json::parse(lease.params_json(), nullptr, false)
                    : json(json::value_t::discarded);
  if (params.is_discarded() || !params.is_object()) {
    return FailLease(lease, v1::FailRequest::REASON_BAD_SPEC, 64,
                     "params_json is not a JSON object");
  }
  const std::string dir = TrialDir(lease.trial_id());
  absl::Status s = MakeDirs(dir);
  const std::string trial_json = dir + "/TRIAL.json";
  // kind command: the user's program instead of the trainer (its checks
  // fail the attempt as a bad spec, before anything runs).
  std::optional<CommandLaunch> command;
  if (lease.kind() == kCommandKind) {
    absl::StatusOr<CommandLaunch> c =
        ResolveCommand(lease, params, dir, options_.allowed_command_dirs);
    if (!c.ok()) {
      SMOE_LOG(WARNING) << "trial " << lease.trial_id() << ": " << c.status();
      return FailLease(lease, v1::FailRequest::REASON_BAD_SPEC, 64,
                       std::string(c.status().message()));
    }
    params = c->params;
    command = *std::move(c);
  } else if (options_.trainer_path.empty()) {
    return FailLease(lease, v1::FailRequest::REASON_BAD_SPEC, 64,
                     absl::StrCat("this worker runs only kind command (no "
                                  "smoe-trainer); leased kind '",
                                  lease.kind(), "'"));
  }
  if (s.ok()) {
    json trial = {
        {"sweep_id", lease.sweep_id()}, {"trial_id", lease.trial_id()},
        {"attempt", lease.attempt()},   {"kind", lease.kind()},
        {"seed", lease.seed()},         {"params", params}};
    if (command) {
      trial["command"] = {
          {"program", command->program},
          {"args", json(std::vector<std::string>(command->argv.begin() + 1,
                                                 command->argv.end()))}};
    }
    s = WriteFileAtomic(trial_json, trial.dump(2) + "\n");
  }
  if (s.ok() && command) {
    s = WriteFileAtomic(command->params_path, params.dump(2) + "\n");
  }
  if (!s.ok()) {
    // The worker's disk, not the trial: hand it back (no error budget) and
    // lease nothing more until the work dir takes writes again.
    OnDiskError(s, absl::StrCat("trial ", lease.trial_id()));
    return FailLease(
        lease, v1::FailRequest::REASON_PREEMPTED, 0,
        absl::StrCat("worker's work dir cannot be written (", s.message(),
                     "): the trial could not be prepared; handed back to run "
                     "elsewhere"));
  }

  Trial t;
  t.lease = lease;
  t.dir = dir;
  // A re-leased attempt on this host: re-send what earlier attempts reported.
  t.metrics = ReadMetricHistory(dir);
  {
    absl::StatusOr<std::unique_ptr<AttemptLog>> log = AttemptLog::Open(
        dir, lease.attempt(), options_.log_max_bytes, &redactor_);
    if (log.ok()) {
      t.log = *std::move(log);
    } else {
      SMOE_LOG(WARNING) << "trial " << lease.trial_id()
                        << ": no attempt log: " << log.status();
    }
  }
  t.gpus.assign(free_gpus.begin(), free_gpus.begin() + lease.gpus());
  t.progress_timeout = lease.progress_timeout_s() > 0
                           ? absl::Seconds(lease.progress_timeout_s())
                           : options_.default_progress_timeout;
  const int world = std::max(1, lease.ep_size());
  launch::RankGroupSpec spec;
  spec.argv = {options_.trainer_path, "run", "--trial", trial_json,
               "--workdir",           dir};
  if (command) {
    spec.argv = command->argv;
    spec.env = command->env;
  }
  spec.working_dir = dir;
  spec.world_size = world;
  spec.rendezvous_dir = dir;
  // A trial without GPUs sees none; with GPUs, the group splits them.
  spec.env["CUDA_VISIBLE_DEVICES"] = "";
  spec.gpu_ids = t.gpus;
  // The trainer never talks to the coordinator: it gets no API token.
  spec.unset_env = {"SMOE_TOKEN"};
  spec.grace = options_.grace;
  spec.note = [id = lease.trial_id(),
               attempt = lease.attempt()](absl::string_view line) {
    SMOE_LOG(WARNING) << "trial " << id << " attempt " << attempt << ": "
                      << line;
  };

  // A newer checkpoint stored by an attempt on another worker (the lease
  // names its step) or in the shared directory: fetched on its own thread,
  // so a large download delays only this attempt, never the heartbeats of
  // the others (docs/reliability-checkpoints.md).
  const bool fetch =
      options_.checkpoint_sync &&
      (!options_.checkpoint_dir.empty() || lease.checkpoint_step() > 0);
  if (!fetch) return StartRanks(std::move(t), std::move(spec), {});
  Restoring r;
  r.notes = std::async(
      std::launch::async, [gateway = gateway_, worker_id = worker_id_, lease,
                           shared = options_.checkpoint_dir, dir] {
        return shared.empty()
                   ? RestoreCheckpoint(gateway, worker_id, lease, dir)
                   : RestoreSharedCheckpoint(shared, lease, dir);
      });
  for (int g : t.gpus) gpu_busy_[g] = true;
  r.t = std::move(t);
  r.spec = std::move(spec);
  SMOE_LOG(INFO) << "trial " << lease.trial_id() << " attempt "
                 << lease.attempt() << ": fetching its checkpoint"
                 << (lease.checkpoint_step() > 0
                         ? absl::StrCat(" of step ", lease.checkpoint_step())
                         : std::string())
                 << " before the trainer starts";
  restoring_.emplace(lease.trial_id(), std::move(r));
  return absl::OkStatus();
}

absl::Status WorkerDaemon::StartRanks(
    Trial t, launch::RankGroupSpec spec,
    const std::vector<CheckpointNote>& notes) {
  const v1::TrialLease& lease = t.lease;
  for (const CheckpointNote& n : notes) {
    v1::Metric m;
    m.set_step(n.step);
    m.set_name(n.name);
    m.set_value(n.value);
    t.metrics.push_back(std::move(m));
  }
  if (!t.metrics.empty()) {
    SMOE_LOG(INFO) << "trial " << lease.trial_id() << " attempt "
                   << lease.attempt() << ": re-sending " << t.metrics.size()
                   << " metrics recorded by earlier attempts";
  }
  for (const v1::Metric& m : t.metrics) {
    t.last_step = std::max<int64_t>(t.last_step, m.step());
  }
  // The progress deadline counts from the trainer's start, not from the
  // lease (a checkpoint download may lie between them).
  t.started = clock_->Now();
  t.last_flush = t.started;
  t.last_event = t.started;
  const int world = spec.world_size;
  absl::StatusOr<std::unique_ptr<launch::RankGroup>> group =
      launch::RankGroup::Start(launcher_, clock_, std::move(spec));
  if (!group.ok()) {
    return FailLease(lease, v1::FailRequest::REASON_ERROR, 0,
                     absl::StrCat("worker cannot start the trainer: ",
                                  group.status().message()));
  }
  t.ranks = *std::move(group);
  for (int g : t.gpus) gpu_busy_[g] = true;
  SMOE_LOG(INFO) << "started trial " << lease.trial_id() << " attempt "
                 << lease.attempt() << " (pid " << t.ranks->rank(0).pid()
                 << (world > 1 ? absl::StrCat(", ", world, " ranks") : "")
                 << ", gpus [" << absl::StrJoin(t.gpus, ",") << "])";
  const std::string id = lease.trial_id();
  trials_.emplace(id, std::move(t));
  return absl::OkStatus();
}

absl::Status WorkerDaemon::PollRestores() {
  for (auto it = restoring_.begin(); it != restoring_.end();) {
    if (it->second.notes.wait_for(std::chrono::seconds(0)) !=
        std::future_status::ready) {
      ++it;
      continue;
    }
    Restoring r = std::move(it->second);
    it = restoring_.erase(it);
    const std::vector<CheckpointNote> notes = r.notes.get();
    for (int g : r.t.gpus) gpu_busy_[g] = false;
    const v1::TrialLease lease = r.t.lease;
    if (r.cancel_requested) {
      SMOE_LOG(INFO) << "trial " << lease.trial_id() << " attempt "
                     << lease.attempt()
                     << ": cancelled while its checkpoint downloaded; not "
                        "started";
      SMOE_RETURN_IF_ERROR(FailLease(
          lease, v1::FailRequest::REASON_CANCELLED, 0,
          "cancelled by the coordinator before the trainer started (its "
          "checkpoint was downloading)"));
      continue;
    }
    if (draining_) {
      SMOE_RETURN_IF_ERROR(FailLease(
          lease, v1::FailRequest::REASON_PREEMPTED, 0,
          "worker draining; the trainer had not started (its checkpoint "
          "was downloading)"));
      continue;
    }
    if (!disk_error_.ok()) {
      // Its checkpoint may not have landed, and the trainer could not write
      // one: run it elsewhere.
      SMOE_RETURN_IF_ERROR(FailLease(
          lease, v1::FailRequest::REASON_PREEMPTED, 0,
          absl::StrCat("worker's work dir is full (", disk_error_.message(),
                       "); the trainer had not started; handed back to run "
                       "elsewhere")));
      continue;
    }
    absl::Status s = StartRanks(std::move(r.t), std::move(r.spec), notes);
    if (!s.ok()) SMOE_LOG(ERROR) << "trial " << lease.trial_id() << ": " << s;
  }
  return absl::OkStatus();
}

void WorkerDaemon::BeginDrain(absl::string_view why) {
  SMOE_LOG(INFO) << "draining (" << why << "): " << trials_.size()
                 << " trial(s) get SIGTERM, grace " << options_.grace
                 << (restoring_.empty()
                         ? std::string()
                         : absl::StrCat("; ", restoring_.size(),
                                        " not started (checkpoint "
                                        "downloading) are handed back"));
  draining_ = true;
  drain_requested_.store(true);
  for (auto& [id, t] : trials_) t.ranks->Stop(options_.grace);
  next_heartbeat_ = absl::InfinitePast();  // tell the coordinator now
}

void WorkerDaemon::ConsumeOutput(Trial* t) {
  for (int r = 0; r < t->ranks->world_size(); ++r) {
    launch::Process& p = t->ranks->rank(r);
    const std::string prefix = r == 0 ? "" : absl::StrCat("[rank ", r, "] ");
    for (const std::string& line : p.TakeStdoutLines()) {
      // Only rank 0 reports; other ranks' stdout is log only.
      const bool event = r == 0 && HandleEvent(t, line);
      if (!event && t->log != nullptr &&
          !absl::StripAsciiWhitespace(line).empty()) {
        t->log->Append(absl::StrCat(prefix, line));
      }
    }
    for (const std::string& line : p.TakeStderrLines()) {
      if (t->log != nullptr) t->log->Append(absl::StrCat(prefix, line));
    }
  }
}

void WorkerDaemon::SampleSystem(Trial* t, v1::SystemSample* out) {
  out->set_step(t->last_step);
  std::vector<int> groups;
  for (int r = 0; r < t->ranks->world_size(); ++r) {
    groups.push_back(t->ranks->rank(r).pid());
  }
  absl::StatusOr<ProcessGroupUsage> u =
      ReadProcessGroups(groups, options_.proc_root);
  if (!u.ok() || u->pids.empty()) return;  // absent: nothing measured
  out->set_rss_bytes(static_cast<double>(u->rss_bytes));
  if (std::optional<double> cpu =
          t->cpu.Update(u->cpu_seconds, clock_->Now())) {
    out->set_cpu_percent(*cpu);
  }
  if (t->gpus.empty()) return;
  if (!gpu_tried_) {
    gpu_tried_ = true;
    if (options_.open_gpu_monitor) gpu_ = options_.open_gpu_monitor();
  }
  if (gpu_ == nullptr) return;
  const GpuUsage g = gpu_->Sample(t->gpus, u->pids);
  if (g.utilization_percent) out->set_gpu_util_percent(*g.utilization_percent);
  if (g.memory_bytes) out->set_gpu_memory_bytes(*g.memory_bytes);
}

void WorkerDaemon::CheckProgress(Trial* t, absl::Time now) {
  if (t->hung || t->cancel_requested || t->ranks->term_sent() ||
      t->ranks->kill_sent()) {
    return;  // already stopping: the stop's own grace applies
  }
  if (now - t->last_event < t->progress_timeout) return;
  t->hung = true;
  SMOE_LOG(WARNING) << "trial " << t->lease.trial_id() << " attempt "
                    << t->lease.attempt() << ": no trainer event for "
                    << (now - t->last_event) << " (progress deadline "
                    << t->progress_timeout << "); killing it as hung";
  t->ranks->Kill();
}

bool WorkerDaemon::HandleEvent(Trial* t, const std::string& line) {
  if (absl::StripAsciiWhitespace(line).empty()) return true;
  absl::StatusOr<trials::TrialEvent> ev = trials::ParseEvent(line);
  if (absl::IsNotFound(ev.status())) return false;  // a log line
  // Any event, even one refused below, shows the trainer is alive.
  t->last_event = clock_->Now();
  if (!ev.ok()) {
    // A metric the coordinator would refuse (empty name, negative step) is
    // dropped here, alone: it would make the coordinator refuse its whole
    // batch.
    SMOE_LOG(WARNING) << "trial " << t->lease.trial_id()
                      << ": malformed event ignored: " << ev.status().message();
    return false;  // kept in the log, where its author can see it
  }
  switch (ev->type) {
    case trials::TrialEvent::Type::kProgress:
      break;
    case trials::TrialEvent::Type::kMetric: {
      // A null value (how trainers write NaN) is forwarded as NaN so a
      // diverging run shows.
      v1::Metric m;
      m.set_step(*ev->step);
      m.set_name(ev->name);
      m.set_value(ev->value);
      t->last_step = std::max<int64_t>(t->last_step, m.step());
      t->metrics.push_back(std::move(m));
      break;
    }
    case trials::TrialEvent::Type::kResult: {
      std::map<std::string, double> results;
      for (const auto& [k, v] : ev->metrics.items()) {
        if (!v.is_number()) continue;  // null (NaN) and non-numbers: absent
        results[k] = v.get<double>();
        if (std::isinf(results[k])) {
          // Written beyond the double range (1e999): kept as +/-inf.
          SMOE_LOG(WARNING)
              << "trial " << t->lease.trial_id() << ": result " << k << " is "
              << results[k] << " (not finite); recorded as such";
        }
      }
      t->result = std::move(results);
      break;
    }
    case trials::TrialEvent::Type::kCheckpoint:
      SMOE_LOG(DEBUG) << "trial " << t->lease.trial_id()
                      << " checkpoint at step " << ev->step.value_or(0);
      if (uploader_ != nullptr && ev->restored.empty() &&
          ev->step.has_value()) {
        const std::string file =
            ev->file.empty() ? kDefaultCheckpointFile : ev->file;
        // Queue the metrics up to here first: the upload waits for them.
        absl::Status s = FlushMetrics(t);
        if (s.ok()) {
          s = uploader_->Snapshot(worker_id_, t->lease, t->dir, *ev->step, file,
                                  outbox_->last_id());
        }
        if (absl::IsNotFound(s)) {
          SMOE_LOG(DEBUG) << "trial " << t->lease.trial_id() << ": " << s;
        } else if (!s.ok()) {
          SMOE_LOG(WARNING) << "trial " << t->lease.trial_id()
                            << ": checkpoint not uploaded: " << s.message();
        }
      }
      if (!ev->restored.empty()) {
        // The latest checkpoint failed verification: the trainer set it
        // aside and resumed from the previous one or from scratch. Recorded
        // as a metric so the trial's page shows it.
        SMOE_LOG(WARNING) << "trial " << t->lease.trial_id() << " attempt "
                          << t->lease.attempt() << ": resumed from "
                          << ev->restored << " at step " << ev->step.value_or(0)
                          << ": " << ev->detail;
        v1::Metric m;
        m.set_step(std::max<int64_t>(0, ev->step.value_or(0)));
        m.set_name(std::string(kCheckpointRestoredMetric) + ev->restored);
        m.set_value(static_cast<double>(m.step()));
        t->metrics.push_back(std::move(m));
      }
      break;
  }
  return true;
}

absl::Status WorkerDaemon::FlushMetrics(Trial* t) {
  t->last_flush = clock_->Now();
  if (t->metrics.empty()) return absl::OkStatus();
  OutboxEntry e;
  e.type = OutboxEntry::Type::kMetrics;
  e.metrics.set_worker_id(worker_id_);
  e.metrics.set_trial_id(t->lease.trial_id());
  e.metrics.set_attempt(t->lease.attempt());
  if (!t->dir.empty()) {
    // The history only serves a later attempt here; the metrics go out
    // either way.
    if (absl::Status h = AppendMetricHistory(t->dir, t->metrics); !h.ok()) {
      OnDiskError(h, "metric history");
    }
  }
  for (v1::Metric& m : t->metrics) *e.metrics.add_metrics() = std::move(m);
  t->metrics.clear();
  Journaled(outbox_->Add(std::move(e)));
  return absl::OkStatus();
}

void WorkerDaemon::TakeCheckpointNotes(Trial* finishing) {
  if (uploader_ == nullptr) return;
  for (CheckpointNote& n : uploader_->TakeNotes()) {
    Trial* t = nullptr;
    if (finishing != nullptr && finishing->lease.trial_id() == n.trial_id) {
      t = finishing;
    } else if (auto it = trials_.find(n.trial_id); it != trials_.end()) {
      t = &it->second;
    }
    if (t == nullptr || t->lease.attempt() != n.attempt) continue;
    v1::Metric m;
    m.set_step(n.step);
    m.set_name(n.name);
    m.set_value(n.value);
    t->metrics.push_back(std::move(m));
  }
}

absl::Status WorkerDaemon::FinishTrial(Trial* t) {
  if (uploader_ != nullptr) {
    const launch::ExitInfo e = t->ranks->DecisiveExit();
    const bool resumable =
        !t->cancel_requested && ((!e.signaled && e.exit_code == 75) ||
                                 (draining_ && t->ranks->term_sent()));
    // The next attempt, on any worker, resumes from the checkpoint written
    // at SIGTERM: report the preemption once it is stored (or after grace).
    // Its upload waits for the metrics before it: deliver them now.
    if (resumable && registered_ && RpcAllowed()) {
      SMOE_RETURN_IF_ERROR(DeliverOutbox());
    }
    if (resumable &&
        !uploader_->WaitIdle(t->lease.trial_id(), options_.grace)) {
      SMOE_LOG(WARNING) << "trial " << t->lease.trial_id()
                        << ": checkpoint upload still running after "
                        << options_.grace << "; reporting the preemption";
    }
    TakeCheckpointNotes(t);
  }
  SMOE_RETURN_IF_ERROR(FlushMetrics(t));
  for (int g : t->gpus) gpu_busy_[g] = false;
  next_lease_ = absl::InfinitePast();  // a slot is free: ask for work now

  // The exit that decides: rank 0's, unless it succeeded and another rank
  // did not (rank_group.h).
  const int decisive = t->ranks->DecisiveRank();
  const launch::ExitInfo exit = t->ranks->DecisiveExit();
  const int code = exit.ReportedCode();
  const std::vector<std::string> tail = t->ranks->rank(decisive).StderrTail();
  if (t->log != nullptr) t->log->Flush();
  const std::string& id = t->lease.trial_id();
  const double duration_s = absl::ToDoubleSeconds(clock_->Now() - t->started);

  const bool success = !exit.signaled && exit.exit_code == 0;
  // keep_final_checkpoint: the coordinator keeps the final checkpoint of a
  // succeeded trial, and takes uploads only while the attempt is leased:
  // let the upload the trainer's last checkpoint started land first.
  if (success && t->result.has_value() && uploader_ != nullptr &&
      t->lease.keep_final_checkpoint()) {
    if (registered_ && RpcAllowed()) {
      SMOE_RETURN_IF_ERROR(DeliverOutbox());
    }
    if (!uploader_->WaitIdle(t->lease.trial_id(), options_.grace)) {
      SMOE_LOG(WARNING) << "trial " << t->lease.trial_id()
                        << ": final checkpoint upload still running after "
                        << options_.grace
                        << "; reporting the result without it";
    }
  }
  if (success && t->result.has_value()) {
    OutboxEntry e;
    e.type = OutboxEntry::Type::kComplete;
    e.complete.set_worker_id(worker_id_);
    e.complete.set_trial_id(id);
    e.complete.set_attempt(t->lease.attempt());
    for (const auto& [k, v] : *t->result)
      (*e.complete.mutable_results())[k] = v;
    e.complete.set_duration_s(duration_s);
    if (t->log != nullptr) {
      const LogTailText log = t->log->Tail();
      e.complete.mutable_log()->set_text(log.text);
      e.complete.mutable_log()->set_total_bytes(log.total_bytes);
    }
    SMOE_LOG(INFO) << "trial " << id << " attempt " << t->lease.attempt()
                   << " succeeded in " << duration_s << " s";
    Journaled(outbox_->Add(std::move(e)));
    return absl::OkStatus();
  }

  v1::FailRequest::Reason reason;
  std::string head;
  const std::string how = exit.signaled
                              ? absl::StrCat("killed by signal ", exit.signal)
                              : absl::StrCat("exit code ", exit.exit_code);
  if (t->cancel_requested) {
    reason = v1::FailRequest::REASON_CANCELLED;
    head = absl::StrCat("cancelled by the coordinator; trainer ", how);
  } else if (t->hung) {
    reason = v1::FailRequest::REASON_HUNG;
    head = absl::StrCat("hung: no trainer event for ",
                        absl::ToInt64Seconds(t->progress_timeout),
                        " s (resources.progress_timeout_s); killed (", how,
                        "); the next attempt resumes from the last checkpoint");
  } else if (!exit.signaled && exit.exit_code == 75) {
    reason = v1::FailRequest::REASON_PREEMPTED;
    head = "trainer interrupted (exit 75); checkpoint saved";
  } else if (!exit.signaled && exit.exit_code == 64) {
    reason = v1::FailRequest::REASON_BAD_SPEC;
    head = "bad trial spec (exit 64; not retried: permanent)";
  } else if (!exit.signaled && exit.exit_code == 66) {
    // EX_NOINPUT: a model or file the trial names does not exist; another
    // attempt would find it missing too.
    reason = v1::FailRequest::REASON_BAD_SPEC;
    head = "missing input (exit 66; not retried: permanent)";
  } else if (draining_ && t->ranks->term_sent()) {
    reason = v1::FailRequest::REASON_PREEMPTED;
    head = absl::StrCat("worker draining; trainer ", how);
  } else if (success) {
    reason = v1::FailRequest::REASON_ERROR;
    head = "trainer exited 0 without a result event (no result event)";
  } else {
    reason = v1::FailRequest::REASON_ERROR;
    head = absl::StrCat("trainer failed: ", how);
  }
  if (reason == v1::FailRequest::REASON_ERROR && !success) {
    // A trainer that fails while the work dir is full most likely failed
    // for it (a checkpoint it could not write): hand the attempt back, with
    // the disk's error and the trainer's own line, to run elsewhere.
    absl::Status disk = disk_error_;
    if (disk.ok()) {
      disk = ProbeWrite(options_.work_dir + "/.disk-probe",
                        options_.min_free_bytes);
      if (!disk.ok()) OnDiskError(disk, "probe after a trainer failure");
    }
    if (!disk.ok()) {
      reason = v1::FailRequest::REASON_PREEMPTED;
      head = absl::StrCat("worker's work dir is full (", disk.message(),
                          "); handed back to run elsewhere; trainer ", how);
      if (const std::string why = FirstErrorLine(tail); !why.empty()) {
        absl::StrAppend(&head, ": ", why);
      }
    }
  }
  // The first line says why (issue 31 item 3): not only "exit code 1".
  if (const std::string why = FirstErrorLine(tail);
      !why.empty() && reason != v1::FailRequest::REASON_PREEMPTED &&
      reason != v1::FailRequest::REASON_CANCELLED) {
    absl::StrAppend(&head, ": ", why);
  }
  SMOE_LOG(INFO) << "trial " << id << " attempt " << t->lease.attempt()
                 << " ended: " << head;
  return FailLease(t->lease, reason, code, FailMessage(head, tail),
                   t->log.get());
}

}  // namespace smoe::worker
