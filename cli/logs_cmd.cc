// Copyright 2026 SMoE Lab authors.
#include "cli/logs_cmd.h"

#include <iostream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "proto/rpc_status.h"

namespace smoe::cli {
namespace {

namespace pb = smoe::v1;

absl::StatusOr<pb::GetTrialLogsResponse> Fetch(CoordinatorClient& client,
                                               const std::string& trial_id,
                                               int attempt) {
  grpc::ClientContext ctx;
  client.Prepare(&ctx);
  pb::GetTrialLogsRequest req;
  req.set_trial_id(trial_id);
  req.set_attempt(attempt);
  pb::GetTrialLogsResponse resp;
  grpc::Status s = client.stub()->GetTrialLogs(&ctx, req, &resp);
  if (!s.ok()) return proto::FromGrpcStatus(s);
  return resp;
}

// Prints the part of `log` past offset `*printed` of the attempt's log and
// moves `*printed` to its end.
void PrintNew(const pb::LogTail& log, int64_t* printed, std::ostream& out) {
  const int64_t total = log.total_bytes();
  const int64_t len = static_cast<int64_t>(log.text().size());
  const int64_t start = total - len;  // offset of text[0]
  if (total <= *printed) return;
  if (*printed < start) {
    if (*printed > 0 || start > 0) {
      std::cerr << "smoe: [" << (start - *printed)
                << " earlier bytes not kept by the coordinator]\n";
    }
    out << log.text();
  } else {
    out << log.text().substr(static_cast<size_t>(*printed - start));
  }
  out.flush();
  *printed = total;
}

}  // namespace

int LogsCmd(CoordinatorClient& client, const std::string& trial_id,
            const LogsFlags& flags, std::ostream& out) {
  if (flags.attempt < 0) {
    std::cerr << "smoe: --attempt must be >= 1 (or 0 for the latest), got "
              << flags.attempt << "\n";
    return kExitUsage;
  }
  const int64_t asked_ms = absl::ToUnixMillis(absl::Now());
  absl::StatusOr<pb::GetTrialLogsResponse> r =
      Fetch(client, trial_id, flags.attempt);
  if (!r.ok()) return ReportError(r.status());
  if (r->attempt() == 0) {
    std::cerr << "smoe: trial " << trial_id
              << " has not run yet; no log to show\n";
    return kExitOk;
  }
  const int attempt = r->attempt();
  // A running attempt: wait for a tail sent after this request.
  const absl::Time wait_end = absl::Now() + flags.fresh_wait;
  while (r->running() && r->as_of_ms() < asked_ms && absl::Now() < wait_end) {
    absl::SleepFor(absl::Milliseconds(250));
    r = Fetch(client, trial_id, attempt);
    if (!r.ok()) return ReportError(r.status());
  }
  std::cerr << "smoe: trial " << trial_id << " attempt " << attempt << " of ["
            << absl::StrJoin(r->attempts(), ", ") << "]"
            << (r->running() ? " (running: live tail)" : "") << "\n";
  if (r->running() && r->as_of_ms() < asked_ms) {
    std::cerr << "smoe: no fresh tail from the worker yet"
              << (r->as_of_ms() > 0 ? "; showing an older one" : "") << "\n";
  }
  int64_t printed = 0;
  PrintNew(r->log(), &printed, out);
  if (!flags.follow) return kExitOk;
  while (r->running()) {
    absl::SleepFor(flags.poll);
    r = Fetch(client, trial_id, attempt);
    if (!r.ok()) return ReportError(r.status());
    PrintNew(r->log(), &printed, out);
  }
  std::cerr << "smoe: attempt " << attempt << " ended\n";
  return kExitOk;
}

}  // namespace smoe::cli
