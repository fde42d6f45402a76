// Copyright 2026 SMoE Lab authors.
#include "cli/train_cmd.h"

#include <iostream>
#include <map>

#include "absl/strings/str_format.h"
#include "cli/local_trial.h"

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
  const int rc = RunLocalTrial(trial, [&](const nlohmann::json& ev) {
    const std::string kind = ev.value("event", "");
    if (kind == "progress") {
      step = ev.value("step", int64_t{0});
      total = ev.value("total", int64_t{0});
    } else if (kind == "metric") {
      const std::string name = ev.value("name", "");
      if (name.rfind("eval/", 0) == 0 && ev.contains("value") &&
          ev["value"].is_number()) {
        last_eval[name] = ev["value"].get<double>();
      }
    } else if (kind == "result") {
      result = ev.value("metrics", nlohmann::json::object());
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
