// Copyright 2026 SMoE Lab authors.
#include "cli/sweep_cmds.h"

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "cli/search_show.h"
#include "common/logging.h"
#include "common/utf8.h"
#include "nlohmann/json.hpp"
#include "proto/rpc_status.h"
#include "sweeps/sweep_spec.h"

namespace smoe::cli {
namespace {

namespace pb = smoe::v1;
using Stub = pb::Coordinator::Stub;
using nlohmann::json;

int Check(const grpc::Status& s) {
  return s.ok() ? kExitOk : ReportError(proto::FromGrpcStatus(s));
}

const char* StateName(pb::TrialState s) {
  switch (s) {
    case pb::TRIAL_STATE_PENDING:
      return "pending";
    case pb::TRIAL_STATE_RUNNING:
      return "running";
    case pb::TRIAL_STATE_SUCCEEDED:
      return "succeeded";
    case pb::TRIAL_STATE_FAILED:
      return "failed";
    case pb::TRIAL_STATE_CANCELLED:
      return "cancelled";
    case pb::TRIAL_STATE_PRUNED:
      return "pruned";
    default:
      return "?";
  }
}

const char* SweepStateName(pb::SweepState s) {
  switch (s) {
    case pb::SWEEP_STATE_ACTIVE:
      return "active";
    case pb::SWEEP_STATE_COMPLETED:
      return "completed";
    case pb::SWEEP_STATE_CANCELLED:
      return "cancelled";
    default:
      return "?";
  }
}

std::string FormatValue(const google::protobuf::Value& v) {
  switch (v.kind_case()) {
    case google::protobuf::Value::kStringValue:
      return v.string_value();
    case google::protobuf::Value::kBoolValue:
      return v.bool_value() ? "true" : "false";
    case google::protobuf::Value::kNumberValue:
      return absl::StrCat(v.number_value());
    default:
      return "null";
  }
}

std::string CsvEscape(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

json ParseValue(const std::string& s) {
  int64_t i;
  double d;
  if (absl::SimpleAtoi(s, &i)) return i;
  if (absl::SimpleAtod(s, &d)) return d;
  if (s == "true") return true;
  if (s == "false") return false;
  return s;
}

// The sweep's state, with what went wrong: "completed, 3 failed" (a sweep
// whose trials failed is not simply "completed"), "active, unschedulable".
std::string SweepStateText(const pb::Sweep& s) {
  std::string text = SweepStateName(s.state());
  const int bad = s.counts().failed();
  if (bad > 0) absl::StrAppend(&text, ", ", bad, " failed");
  if (!s.unschedulable().empty()) absl::StrAppend(&text, ", unschedulable");
  return text;
}

// Notes, tags and the archived mark, one line each when set.
void PrintAnnotations(const pb::Sweep& s, std::ostream& out) {
  if (s.archived()) out << "  archived\n";
  if (s.tags_size() > 0) {
    out << "  tags: " << absl::StrJoin(s.tags(), ", ") << "\n";
  }
  if (!s.notes().empty()) out << "  notes: " << s.notes() << "\n";
}

void PrintSweepSummary(const pb::Sweep& s, std::ostream& out) {
  out << "sweep " << s.sweep_id() << " (" << s.kind() << ", "
      << SweepStateText(s) << ", priority " << s.priority() << ")\n";
  for (const auto& a : s.spec().grid()) {
    std::vector<std::string> vals;
    for (const auto& v : a.values()) vals.push_back(FormatValue(v));
    out << "  " << a.name() << ": [" << absl::StrJoin(vals, ", ") << "]\n";
  }
  for (const auto& a : s.spec().sample()) {
    std::vector<std::string> range;
    for (const auto& v : a.range()) range.push_back(FormatValue(v));
    std::vector<std::string> vals;
    for (const auto& v : a.values()) vals.push_back(FormatValue(v));
    out << "  " << a.name() << ": " << a.distribution() << " ["
        << absl::StrJoin(range, ", ") << "], drawn ["
        << absl::StrJoin(vals, ", ") << "]\n";
  }
  if (s.spec().sample_size() > 0) {
    out << "  samples: " << s.spec().samples() << " (sample_seed "
        << s.spec().sample_seed() << ")\n";
  }
  out << "  seeds: [" << absl::StrJoin(s.spec().seeds(), ", ") << "]\n";
  out << "  " << ProgressLine(s.counts(), 30) << "\n";
  if (!s.unschedulable().empty()) {
    out << "  unschedulable: " << s.unschedulable() << "\n";
  }
  PrintAnnotations(s, out);
}

}  // namespace

void PrintTable(const std::vector<std::string>& header,
                const std::vector<std::vector<std::string>>& rows,
                std::ostream& out) {
  std::vector<size_t> w(header.size());
  for (size_t i = 0; i < header.size(); ++i) w[i] = header[i].size();
  for (const auto& r : rows) {
    for (size_t i = 0; i < r.size() && i < w.size(); ++i) {
      w[i] = std::max(w[i], r[i].size());
    }
  }
  auto line = [&](const std::vector<std::string>& r) {
    for (size_t i = 0; i < r.size(); ++i) {
      out << std::left << std::setw(static_cast<int>(w[i])) << r[i]
          << (i + 1 < r.size() ? "  " : "\n");
    }
  };
  line(header);
  for (const auto& r : rows) line(r);
}

std::string ProgressLine(const pb::StateCounts& c, int width) {
  const int finished = c.succeeded() + c.failed() + c.cancelled() + c.pruned();
  if (c.total() <= 0) {
    return absl::StrCat("[", std::string(static_cast<size_t>(width), '-'),
                        "] no trials yet");
  }
  const int filled = finished * width / c.total();
  std::string bar(static_cast<size_t>(filled), '#');
  bar.append(static_cast<size_t>(width - filled), '-');
  return absl::StrFormat(
             "[%s] %d/%d  pending %d  running %d  succeeded %d  failed %d  "
             "cancelled "
             "%d",
             bar, finished, c.total(), c.pending(), c.running(), c.succeeded(),
             c.failed(), c.cancelled()) +
         (c.pruned() > 0 ? absl::StrCat("  pruned ", c.pruned()) : "");
}

std::string FormatEta(absl::Duration d) {
  const int64_t s =
      std::max<int64_t>(0, absl::ToInt64Seconds(d + absl::Milliseconds(500)));
  if (s >= 3600) return absl::StrFormat("%dh%02dm", s / 3600, s % 3600 / 60);
  if (s >= 60) return absl::StrFormat("%dm%02ds", s / 60, s % 60);
  return absl::StrFormat("%ds", s);
}

std::string SweepProgress::Line(const pb::StateCounts& c, absl::Time now,
                                absl::string_view waiting) {
  std::string line = LineWithoutWaiting(c, now);
  if (c.pending() > 0 && !waiting.empty()) {
    absl::StrAppend(&line, "  waiting: ", waiting);
  }
  return line;
}

std::string SweepProgress::LineWithoutWaiting(const pb::StateCounts& c,
                                              absl::Time now) {
  const int finished = c.succeeded() + c.failed() + c.cancelled() + c.pruned();
  std::string line = ProgressLine(c, width_);
  if (c.total() <= 0) return line;
  if (start_finished_ < 0 || finished < start_finished_) {
    start_ = now;
    start_finished_ = finished;
  }
  const int remaining = c.total() - finished;
  if (remaining <= 0) return line;
  const int done_here = finished - start_finished_;
  if (done_here <= 0 || now <= start_) {
    absl::StrAppend(&line, "  ETA --");
  } else {
    absl::StrAppend(&line, "  ETA ",
                    FormatEta((now - start_) * remaining / done_here));
  }
  return line;
}

void PrintTrialsTable(const pb::GetSweepResponse& resp, std::ostream& out) {
  std::vector<std::string> header = {"#", "TRIAL", "STATE"};
  const std::vector<std::string> axes = SpecAxisNames(resp.sweep().spec());
  for (const std::string& a : axes) header.push_back(a);
  for (const char* h : {"SEED", "ATTEMPT", "WORKER", "ERROR"}) {
    header.push_back(h);
  }
  std::vector<std::vector<std::string>> rows;
  for (const auto& t : resp.trials()) {
    std::vector<std::string> row = {absl::StrCat(t.ordinal()), t.trial_id(),
                                    StateName(t.state())};
    const json params = json::parse(t.params_json(), nullptr, false);
    for (const std::string& a : axes) {
      if (!params.is_object() || !params.contains(a)) {
        row.push_back("-");
      } else {
        const json& v = params[a];
        row.push_back(v.is_string() ? v.get<std::string>() : v.dump());
      }
    }
    // The first line of the last error (the dashboard's trial page shows
    // all of it).
    std::string error = t.last_error().substr(0, t.last_error().find('\n'));
    row.insert(row.end(), {absl::StrCat(t.seed()), absl::StrCat(t.attempt()),
                           t.worker_id().empty() ? "-" : t.worker_id(), error});
    rows.push_back(std::move(row));
  }
  PrintTable(header, rows, out);
}

namespace {

// The search block's settings in one line, as the coordinator will apply
// them (defaults included), for `smoe sweep validate`.
std::string SearchSettings(const sweeps::SearchSpec& search) {
  std::vector<std::string> parts;
  if (search.strategy == "refine") {
    parts.push_back(absl::StrCat("refine ", search.axis, " in [",
                                 search.bounds_lo, ", ", search.bounds_hi,
                                 "]"));
    if (search.add_seeds > 0) {
      parts.push_back(absl::StrCat("up to ", search.add_seeds,
                                   " added seeds where the argmax is unclear"));
    }
    if (search.tolerance > 0) {
      parts.push_back(
          absl::StrCat("resolved within tolerance ", search.tolerance));
    }
    if (search.budget > 0) {
      parts.push_back(absl::StrCat("at most ", search.budget, " trials"));
    }
  }
  if (search.strategy == "asha" || search.early_stop == "asha") {
    parts.push_back(absl::StrCat("rungs from step ", search.min_steps,
                                 ", reduction ", search.reduction));
    if (search.smooth_evals > 1) {
      parts.push_back(absl::StrCat("rung value = mean of the last ",
                                   search.smooth_evals, " evaluations"));
    }
    if (search.aggregate_seeds) {
      parts.push_back("configurations judged by their seed mean");
    }
    if (!search.keep_neighbors.empty()) {
      parts.push_back(absl::StrCat("the rung best's ", search.keep_neighbors,
                                   " neighbours kept"));
    }
  }
  if (search.strategy == "median") {
    parts.push_back(absl::StrCat("median rule from step ", search.min_steps));
  }
  if (search.budget_gpu_hours > 0) {
    parts.push_back(absl::StrCat("stops at ", search.budget_gpu_hours,
                                 " GPU-hours (slot-hours on CPU)"));
  }
  return absl::StrJoin(parts, "; ");
}

}  // namespace

namespace {

// Reads at most `limit` bytes of `in`.
std::string ReadAtMost(std::istream& in, int64_t limit) {
  std::string text;
  char buf[65536];
  while (static_cast<int64_t>(text.size()) < limit && in) {
    const int64_t want = std::min<int64_t>(
        sizeof(buf), limit - static_cast<int64_t>(text.size()));
    in.read(buf, want);
    text.append(buf, static_cast<size_t>(in.gcount()));
  }
  return text;
}

}  // namespace

int ValidateSweepCmd(const std::string& file, std::ostream& out) {
  std::ifstream in(file);
  if (!in) {
    std::cerr << "smoe: cannot read sweep file '" << file << "'\n";
    return kExitNoInput;
  }
  // At most one byte past the limit is read: the parser refuses the file by
  // its size (a huge file or /dev/zero is not read whole).
  const sweeps::ParseOptions options;
  std::string text = ReadAtMost(in, options.max_bytes + 1);
  if (static_cast<int64_t>(text.size()) > options.max_bytes) {
    return ReportError(absl::InvalidArgumentError(absl::StrCat(
                           "sweep file: more than max ", options.max_bytes,
                           " bytes (the coordinator's --max-sweep-bytes "
                           "default)")),
                       file);
  }
  absl::StatusOr<sweeps::SweepSpec> spec =
      sweeps::ParseSweepYaml(text, options);
  if (!spec.ok()) return ReportError(spec.status(), file);
  std::vector<std::string> axes;
  for (const sweeps::Axis& a : spec->grid) {
    axes.push_back(absl::StrCat(a.name, "[", a.values.size(), "]"));
  }
  const int64_t configs =
      static_cast<int64_t>(sweeps::SampleConfigs(*spec).size());
  if (!spec->sample.empty()) {
    std::vector<std::string> names;
    for (const sweeps::SampledAxis& a : spec->sample) {
      names.push_back(a.name);
    }
    axes.push_back(absl::StrCat("sampled(", absl::StrJoin(names, ", "), ")[",
                                configs, "]"));
  }
  axes.push_back(absl::StrCat("seeds[", spec->seeds.size(), "]"));
  out << file << ": valid: sweep " << spec->name << " (" << spec->kind << "), "
      << absl::StrJoin(axes, " x ") << " = " << sweeps::CountPoints(*spec)
      << " trials\n";
  for (const sweeps::SampledAxis& a : spec->sample) {
    std::vector<std::string> range;
    if (a.distribution == "choice") {
      for (const json& v : a.choices) range.push_back(v.dump());
    } else {
      range = {a.lo.dump(), a.hi.dump()};
    }
    std::vector<std::string> shown;
    for (const json& v : sweeps::SampledValues(*spec, a.name)) {
      shown.push_back(v.dump());
    }
    out << file << ": sampled " << a.name << ": " << a.distribution << " ["
        << absl::StrJoin(range, ", ") << "]" << (a.log() ? " (log axis)" : "")
        << ": " << absl::StrJoin(shown, ", ") << "\n";
  }
  if (!spec->sample.empty()) {
    out << file << ": samples: " << spec->samples << " draws of sample_seed "
        << spec->sample_seed;
    if (configs < spec->samples) {
      out << " (" << spec->samples - configs
          << " repeat an earlier draw: left out)";
    }
    out << "\n";
  }
  if (const sweeps::SearchSpec& search = spec->search;
      search.strategy != "grid") {
    out << file << ": search: " << search.strategy
        << (search.early_stop.empty()
                ? ""
                : absl::StrCat(" + ", search.early_stop, " early stopping"))
        << " on " << search.metric << " (" << search.mode << ")";
    if (!search.group_by.empty()) {
      out << " per " << absl::StrJoin(search.group_by, " x ");
    }
    out << " (docs/adaptive-sweeps.md)\n";
    out << file << ": search settings: " << SearchSettings(search) << "\n";
  }
  if (spec->search.strategy == "asha") {
    absl::StatusOr<sweeps::AshaCostEstimate> cost =
        sweeps::EstimateAshaCost(*spec);
    if (cost.ok() && cost->full_grid_trial_steps > 0) {
      out << file << ": asha cost estimate: "
          << absl::StrFormat("%.0f", cost->trial_steps) << " trial-steps ("
          << cost->groups << " group" << (cost->groups == 1 ? "" : "s")
          << ", rungs at " << absl::StrJoin(cost->rungs, ", ") << "): "
          << absl::StrFormat("%.2f",
                             cost->trial_steps / cost->full_grid_trial_steps)
          << "x the full grid";
      if (!spec->sample.empty() && cost->untuned_grid_trial_steps > 0) {
        out << ", "
            << absl::StrFormat(
                   "%.2f", cost->trial_steps / cost->untuned_grid_trial_steps)
            << "x one untuned grid (one configuration per grid point x seed)";
      }
      out << " (as synchronous successive halving; asynchronous promotion "
             "can spend more)\n";
    }
  }
  return kExitOk;
}

int SubmitSweepCmd(CoordinatorClient& client, const std::string& file,
                   bool watch, bool dry_run, std::ostream& out) {
  std::ifstream in(file);
  if (!in) {
    std::cerr << "smoe: cannot read sweep file '" << file << "'\n";
    return kExitNoInput;
  }
  // The coordinator's own --max-sweep-bytes refuses what it will not parse;
  // the CLI stops reading at the transport's 32 MiB (a huge file or
  // /dev/zero is not read whole).
  constexpr int64_t kMaxSubmitBytes = int64_t{32} << 20;
  std::stringstream ss(ReadAtMost(in, kMaxSubmitBytes + 1));
  if (static_cast<int64_t>(ss.str().size()) > kMaxSubmitBytes) {
    return ReportError(absl::InvalidArgumentError(absl::StrCat(
                           "sweep file: more than ", kMaxSubmitBytes,
                           " bytes (the largest request the coordinator "
                           "reads)")),
                       file);
  }
  // Refused here, naming the byte: sent as it is, the coordinator could not
  // even parse the request (a proto3 string must be UTF-8) and would answer
  // INTERNAL (issue 36 item 1).
  if (const int64_t bad = InvalidUtf8Offset(ss.str()); bad >= 0) {
    return ReportError(absl::InvalidArgumentError(absl::StrCat(
                           "sweep file: not valid UTF-8 at byte ", bad, " (0x",
                           absl::Hex(static_cast<unsigned char>(
                               ss.str()[static_cast<size_t>(bad)])),
                           ")")),
                       file);
  }
  pb::SubmitSweepRequest req;
  req.set_spec_yaml(ss.str());
  req.set_dry_run(dry_run);
  pb::SubmitSweepResponse resp;
  grpc::ClientContext ctx;
  client.Prepare(&ctx);
  grpc::Status st = client.stub()->SubmitSweep(&ctx, req, &resp);
  if (!st.ok()) return ReportError(proto::FromGrpcStatus(st), file);
  out << (dry_run ? "dry run: sweep " : "submitted sweep ")
      << resp.sweep().sweep_id() << ": " << resp.new_trials() << " new trials";
  if (resp.existing_trials() > 0) {
    out << ", " << resp.existing_trials() << " already present";
  }
  out << "\n";
  if (watch && !dry_run)
    return WatchSweepCmd(client, resp.sweep().sweep_id(), out);
  return kExitOk;
}

int ListSweepsCmd(CoordinatorClient& client, std::ostream& out, bool all) {
  pb::ListSweepsResponse resp;
  if (int rc =
          Call(client, &Stub::ListSweeps, pb::ListSweepsRequest(), &resp)) {
    return rc;
  }
  std::vector<std::vector<std::string>> rows;
  int hidden = 0;
  for (const auto& s : resp.sweeps()) {
    if (s.archived() && !all) {
      ++hidden;
      continue;
    }
    const auto& c = s.counts();
    rows.push_back({s.sweep_id(), s.kind(),
                    s.archived()
                        ? absl::StrCat(SweepStateText(s), " (archived)")
                        : SweepStateText(s),
                    absl::StrCat(c.total()), absl::StrCat(c.pending()),
                    absl::StrCat(c.running()), absl::StrCat(c.succeeded()),
                    absl::StrCat(c.failed()), absl::StrCat(c.cancelled()),
                    absl::StrCat(c.pruned())});
  }
  PrintTable({"SWEEP", "KIND", "STATE", "TOTAL", "PENDING", "RUNNING",
              "SUCCEEDED", "FAILED", "CANCELLED", "PRUNED"},
             rows, out);
  if (hidden > 0) {
    out << hidden << " archived sweep(s) not shown (smoe sweep ls --all)\n";
  }
  return kExitOk;
}

int ShowSweepCmd(CoordinatorClient& client, const std::string& sweep_id,
                 bool trials, std::ostream& out) {
  pb::GetSweepRequest req;
  req.set_sweep_id(sweep_id);
  // The trials also label the decisions by their parameters.
  req.set_include_trials(true);
  req.set_decisions_limit(kShownDecisions);
  pb::GetSweepResponse resp;
  if (int rc = Call(client, &Stub::GetSweep, req, &resp)) {
    return rc;
  }
  PrintSweepSummary(resp.sweep(), out);
  PrintSearchSummary(resp, out);
  if (trials) PrintTrialsTable(resp, out);
  return kExitOk;
}

int CancelSweepCmd(CoordinatorClient& client, const std::string& sweep_id,
                   std::ostream& out) {
  pb::CancelSweepRequest req;
  req.set_sweep_id(sweep_id);
  pb::CancelSweepResponse resp;
  if (int rc = Call(client, &Stub::CancelSweep, req, &resp)) {
    return rc;
  }
  out << "cancelled " << resp.cancelled_trials() << " trials of " << sweep_id
      << "\n";
  return kExitOk;
}

int AnnotateSweepCmd(CoordinatorClient& client, const std::string& sweep_id,
                     const SweepAnnotationFlags& flags, std::ostream& out) {
  pb::AnnotateSweepRequest req;
  req.set_sweep_id(sweep_id);
  if (flags.notes.has_value()) req.set_notes(*flags.notes);
  if (flags.archived.has_value()) req.set_archived(*flags.archived);
  std::optional<std::vector<std::string>> tags = flags.tags;
  if (!flags.add_tags.empty() || !flags.remove_tags.empty()) {
    // Edit the current tags (read first; the last writer wins).
    pb::GetSweepRequest get;
    get.set_sweep_id(sweep_id);
    pb::GetSweepResponse got;
    if (int rc = Call(client, &Stub::GetSweep, get, &got)) {
      return rc;
    }
    tags.emplace(got.sweep().tags().begin(), got.sweep().tags().end());
    for (const std::string& t : flags.add_tags) {
      if (std::find(tags->begin(), tags->end(), t) == tags->end()) {
        tags->push_back(t);
      }
    }
    for (const std::string& t : flags.remove_tags) {
      tags->erase(std::remove(tags->begin(), tags->end(), t), tags->end());
    }
  }
  if (tags.has_value()) {
    req.set_set_tags(true);
    for (const std::string& t : *tags) req.add_tags(t);
  }
  pb::AnnotateSweepResponse resp;
  if (int rc = Call(client, &Stub::AnnotateSweep, req, &resp)) return rc;
  const pb::Sweep& s = resp.sweep();
  out << "sweep " << s.sweep_id() << (s.archived() ? " (archived)" : "")
      << "\n  tags: "
      << (s.tags_size() > 0 ? absl::StrJoin(s.tags(), ", ") : "(none)")
      << "\n  notes: " << (s.notes().empty() ? "(none)" : s.notes()) << "\n";
  return kExitOk;
}

int DeleteSweepCmd(CoordinatorClient& client, const std::string& sweep_id,
                   bool yes, bool interactive, std::istream& in,
                   std::ostream& out) {
  if (!yes && interactive) {
    pb::GetSweepRequest get;
    get.set_sweep_id(sweep_id);
    pb::GetSweepResponse sweep;
    if (int rc = Call(client, &Stub::GetSweep, get, &sweep)) {
      return rc;
    }
    const pb::StateCounts& c = sweep.sweep().counts();
    if (c.pending() + c.running() > 0) {
      out << "sweep " << sweep_id << " has " << c.pending() + c.running()
          << " pending or running trials; cancel it first: smoe sweep cancel "
          << sweep_id << "\n";
    }
    out << "Delete sweep " << sweep_id << " and its " << c.total()
        << " trials with all their metrics, results, logs and checkpoints? "
           "This cannot be undone. [y/N] "
        << std::flush;
    std::string answer;
    std::getline(in, answer);
    if (answer != "y" && answer != "Y" && answer != "yes") {
      out << "not deleted\n";
      return kExitFailure;
    }
  }
  pb::DeleteSweepRequest req;
  req.set_sweep_id(sweep_id);
  pb::DeleteSweepResponse resp;
  if (int rc = Call(client, &Stub::DeleteSweep, req, &resp)) {
    return rc;
  }
  out << "deleted sweep " << resp.sweep_id() << " (" << resp.deleted_trials()
      << " trials)\n";
  return kExitOk;
}

int RetrySweepCmd(CoordinatorClient& client, const std::string& sweep_id,
                  bool include_cancelled, std::ostream& out) {
  pb::RetrySweepRequest req;
  req.set_sweep_id(sweep_id);
  req.set_include_cancelled(include_cancelled);
  pb::RetrySweepResponse resp;
  if (int rc = Call(client, &Stub::RetrySweep, req, &resp)) {
    return rc;
  }
  out << "re-queued " << resp.requeued_trials() << " trials of " << sweep_id
      << "\n";
  return kExitOk;
}

int ExtendSweepCmd(CoordinatorClient& client, const std::string& sweep_id,
                   const std::string& axis,
                   const std::vector<std::string>& values, std::ostream& out) {
  pb::ExtendSweepRequest req;
  req.set_sweep_id(sweep_id);
  req.set_axis(axis);
  for (const std::string& v : values) {
    const json j = ParseValue(v);
    auto* pv = req.add_values();
    if (j.is_string()) {
      pv->set_string_value(j.get<std::string>());
    } else if (j.is_boolean()) {
      pv->set_bool_value(j.get<bool>());
    } else {
      pv->set_number_value(j.get<double>());
    }
  }
  pb::ExtendSweepResponse resp;
  if (int rc = Call(client, &Stub::ExtendSweep, req, &resp)) {
    return rc;
  }
  if (axis == "samples" && resp.sweep().spec().sample_size() > 0) {
    out << "extended " << sweep_id << ": " << values.front()
        << " more sampled configurations (now " << resp.sweep().spec().samples()
        << " draws): " << resp.new_trials() << " new trials ("
        << resp.sweep().counts().total() << " in total)\n";
    return kExitOk;
  }
  if (axis == "samples_total" && resp.sweep().spec().sample_size() > 0) {
    out << "extended " << sweep_id << " to " << resp.sweep().spec().samples()
        << " sampled configurations: " << resp.new_trials() << " new trials ("
        << resp.sweep().counts().total() << " in total)\n";
    return kExitOk;
  }
  out << "extended " << sweep_id << "." << axis << ": " << resp.new_trials()
      << " new trials (" << resp.sweep().counts().total() << " in total)\n";
  return kExitOk;
}

int WatchSweepCmd(CoordinatorClient& client, const std::string& sweep_id,
                  std::ostream& out) {
  pb::WatchSweepRequest req;
  req.set_sweep_id(sweep_id);
  // A watch is long but bounded: one day, then the user re-runs watch.
  const absl::Duration limit = absl::Hours(24);
  req.set_max_wait_ms(absl::ToInt64Milliseconds(limit));
  grpc::ClientContext ctx;
  client.Prepare(&ctx, limit + absl::Minutes(1));
  auto reader = client.stub()->WatchSweep(&ctx, req);
  pb::SweepEvent ev;
  pb::Sweep last;
  SweepProgress progress;
  while (reader->Read(&ev)) {
    last = ev.sweep();
    for (const auto& t : ev.changed()) {
      if (t.state() == pb::TRIAL_STATE_FAILED) {
        WriteAboveStatusLine(
            absl::StrCat("trial ", t.trial_id(), " failed: ", t.last_error()));
      }
    }
    SetStatusLine(
        progress.Line(last.counts(), absl::Now(), last.unschedulable()));
  }
  EndStatusLine();
  grpc::Status st = reader->Finish();
  if (!st.ok()) return ReportError(proto::FromGrpcStatus(st));
  out << "sweep " << sweep_id << " " << SweepStateName(last.state()) << ": "
      << last.counts().succeeded() << " succeeded, " << last.counts().failed()
      << " failed, " << last.counts().cancelled() << " cancelled"
      << (last.counts().pruned() > 0
              ? absl::StrCat(", ", last.counts().pruned(), " pruned")
              : "")
      << "\n";
  if (last.state() == pb::SWEEP_STATE_ACTIVE) return kExitUnavailable;
  return last.counts().failed() + last.counts().cancelled() == 0 ? kExitOk
                                                                 : kExitFailure;
}

int ResultsCmd(CoordinatorClient& client, const std::string& sweep_id,
               const std::string& format, std::ostream& out) {
  if (format != "table" && format != "csv" && format != "json") {
    std::cerr << "smoe: --format: '" << format
              << "' is not one of table, csv, json\n";
    return kExitUsage;
  }
  pb::GetSweepRequest req;
  req.set_sweep_id(sweep_id);
  req.set_include_trials(true);
  // The whole decision log: a pruned trial has no final results, but its
  // prune decision holds the rung, step and value it was judged by.
  req.set_decisions_limit(std::numeric_limits<int32_t>::max());
  pb::GetSweepResponse resp;
  grpc::ClientContext ctx;
  client.Prepare(&ctx, absl::Minutes(2));
  if (int rc = Check(client.stub()->GetSweep(&ctx, req, &resp))) return rc;
  const std::vector<std::string> axes = SpecAxisNames(resp.sweep().spec());
  std::set<std::string> metric_names;
  for (const auto& t : resp.trials()) {
    for (const auto& [k, v] : t.results()) metric_names.insert(k);
  }
  const std::map<std::string, pb::Decision> prunes = LastPrunes(resp);
  auto pruned_at = [&](const pb::Trial& t) -> const pb::Decision* {
    if (t.state() != pb::TRIAL_STATE_PRUNED) return nullptr;
    auto it = prunes.find(t.trial_id());
    return it == prunes.end() ? nullptr : &it->second;
  };
  if (format == "json") {
    json arr = json::array();
    for (const auto& t : resp.trials()) {
      json row;
      row["trial_id"] = t.trial_id();
      row["state"] = StateName(t.state());
      row["params"] = json::parse(t.params_json(), nullptr, false);
      row["seed"] = t.seed();
      row["attempts"] = t.attempt();
      row["duration_s"] = t.duration_s();
      row["results"] = json::object();
      for (const auto& [k, v] : t.results()) row["results"][k] = v;
      if (const pb::Decision* d = pruned_at(t)) {
        row["pruned"] = {{"rung", d->rung()}, {"step", d->step()}};
        if (d->has_value()) row["pruned"]["value"] = d->value();
      }
      arr.push_back(std::move(row));
    }
    out << arr.dump(2) << "\n";
    return kExitOk;
  }
  std::vector<std::string> header = {"trial", "state"};
  header.insert(header.end(), axes.begin(), axes.end());
  header.insert(header.end(), {"seed", "attempts", "duration_s"});
  header.insert(header.end(), metric_names.begin(), metric_names.end());
  // Pruned trials: the rung (step) they stopped at and the value they were
  // judged by there (the search metric, smoothed as the search block says).
  const bool any_pruned = !prunes.empty();
  if (any_pruned) header.insert(header.end(), {"pruned_at", "pruned_value"});
  std::vector<std::vector<std::string>> rows;
  for (const auto& t : resp.trials()) {
    const json params = json::parse(t.params_json(), nullptr, false);
    std::vector<std::string> row = {t.trial_id(), StateName(t.state())};
    for (const std::string& a : axes) {
      const json& v =
          params.is_object() && params.contains(a) ? params[a] : json();
      row.push_back(v.is_string() ? v.get<std::string>() : v.dump());
    }
    row.push_back(absl::StrCat(t.seed()));
    row.push_back(absl::StrCat(t.attempt()));
    row.push_back(absl::StrFormat("%.1f", t.duration_s()));
    for (const std::string& m : metric_names) {
      auto it = t.results().find(m);
      row.push_back(
          it == t.results().end() ? "" : absl::StrFormat("%.6g", it->second));
    }
    if (any_pruned) {
      const pb::Decision* d = pruned_at(t);
      row.push_back(d == nullptr ? ""
                                 : absl::StrFormat("rung %d (step %d)",
                                                   d->rung(), d->step()));
      row.push_back(d == nullptr || !d->has_value()
                        ? ""
                        : absl::StrFormat("%.6g", d->value()));
    }
    rows.push_back(std::move(row));
  }
  if (format == "csv") {
    std::vector<std::string> esc;
    for (const auto& h : header) esc.push_back(CsvEscape(h));
    out << absl::StrJoin(esc, ",") << "\n";
    for (const auto& r : rows) {
      esc.clear();
      for (const auto& c : r) esc.push_back(CsvEscape(c));
      out << absl::StrJoin(esc, ",") << "\n";
    }
    return kExitOk;
  }
  PrintTable(header, rows, out);
  return kExitOk;
}

}  // namespace smoe::cli
