// Copyright 2026 SMoE Lab authors.
#include "cli/train_cmd.h"

#include <cmath>
#include <iostream>
#include <map>

#include "absl/strings/str_format.h"
#include "cli/local_trial.h"
#include "trials/events.h"

namespace smoe::cli {

int RunTrainCommand(const TrainOptions& options, std::ostream& out) {
  LocalTrial trial;
  trial.command = "smoe train";
  trial.kind = "sraven";
  trial.seed = options.seed;
  trial.params = options.params;
  trial.workdir = options.workdir;
  trial.trainer = options.trainer;
  trial.ep_size = options.ep_size;
  trial.gpu_ids = options.gpu_ids;
  std::map<std::string, double> last_eval;
  nlohmann::json result;
  int64_t step = 0, total = 0;
  const int rc = RunLocalTrial(trial, [&](const nlohmann::json& line) {
    using Type = trials::TrialEvent::Type;
    const absl::StatusOr<trials::TrialEvent> ev = trials::EventFromJson(line);
    if (!ev.ok()) {
      // Not an event, or a malformed one: nothing to show.
    } else if (ev->type == Type::kProgress) {
      step = ev->step.value_or(0);
      total = ev->total.value_or(0);
    } else if (ev->type == Type::kMetric) {
      if (ev->name.rfind("eval/", 0) == 0 && !std::isnan(ev->value)) {
        last_eval[ev->name] = ev->value;
      }
    } else if (ev->type == Type::kResult) {
      result = ev->metrics;
    }
    auto acc = last_eval.find("eval/ood_acc");
    return absl::StrFormat(
        "[%s] step %d/%d%s", ProgressBar(step, total, 30), step, total,
        acc == last_eval.end()
            ? ""
            : absl::StrFormat("  ood_acc %.3f", acc->second));
  });
  const std::string& workdir = trial.workdir;
  if (rc == 0 && result.is_object()) {
    out << "SRAVEN run finished (work dir " << workdir
        << (options.ep_size > 1
                ? absl::StrFormat(", %d expert-parallel ranks", options.ep_size)
                : "")
        << ")\n";
    for (const auto& [k, v] : result.items()) {
      if (v.is_number()) {
        out << absl::StrFormat("  %-22s %.6g\n", k, v.get<double>());
      }
    }
  } else if (rc == 64) {
    std::cerr
        << "smoe train: the trainer rejected the parameters (see above)\n";
  } else if (rc == 75) {
    std::cerr << "smoe train: interrupted; checkpoint in " << workdir
              << " (re-run with --workdir " << workdir << " to resume)\n";
  } else {
    std::cerr << "smoe train: trainer exited with " << rc << "\n";
  }
  return rc;
}

}  // namespace smoe::cli
