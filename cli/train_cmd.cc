// Copyright 2026 SMoE Lab authors.
#include "cli/train_cmd.h"

#include <cmath>
#include <iostream>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "cli/local_trial.h"
#include "cli/sweep_cmds.h"
#include "trials/events.h"
#include "trials/params.h"

namespace smoe::cli {

void TrainProgress::Step(int64_t step, int64_t total, absl::Time now) {
  phase_.clear();
  if (first_step_ < 0 || step < first_step_) {
    first_step_ = step;
    first_time_ = now;
  }
  step_ = step;
  total_ = total;
  eta_.clear();
  if (step > first_step_ && step < total && now > first_time_) {
    eta_ = "  ETA " + FormatEta((now - first_time_) * (total - step) /
                                (step - first_step_));
  }
}

void TrainProgress::Phase(const std::string& phase, int64_t done,
                          int64_t total) {
  phase_ = phase;
  phase_done_ = done;
  phase_total_ = total;
}

std::string TrainProgress::Line(const std::string& suffix) const {
  if (total_ <= 0 && phase_.empty()) return "starting the trainer...";
  std::string line =
      total_ > 0
          ? absl::StrFormat("[%s] step %d/%d", ProgressBar(step_, total_, 30),
                            step_, total_)
          : std::string("step 0");
  if (!phase_.empty()) {
    absl::StrAppend(&line, "  evaluating ", phase_.substr(phase_.find('/') + 1),
                    " ", phase_done_, "/", phase_total_);
  } else {
    absl::StrAppend(&line, eta_);
  }
  return line + suffix;
}

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
  const nlohmann::json& p = options.params;
  // Refused before the trainer starts, naming both flags (issue 31 item 1;
  // the trainer refuses it too). Without --warmup the trainer warms up for
  // min(1000, steps / 10) steps.
  const int64_t steps =
      p.value("steps",
              trials::SravenKind().Find("steps")->default_value.get<int64_t>());
  if (p.contains("warmup") && p["warmup"].is_number_integer() &&
      p["warmup"].get<int64_t>() >= steps) {
    std::cerr << "smoe train: --warmup " << p["warmup"].get<int64_t>()
              << " must be smaller than --steps " << steps
              << " (the learning rate would never reach --lr); leave --warmup "
                 "out for a tenth of the run, at most 1000\n";
    return 64;
  }
  if (p.value("device", "cpu") == "cpu" && p.value("width", 1.0) >= 1.0 &&
      p.value("steps", 0) >= 1000) {
    // The README's one-off example is this case: it finishes, but slowly.
    std::cerr << "smoe train: a width-" << p.value("width", 1.0)
              << " model on the CPU trains at ~1-2 steps/s per core "
                 "(bench/results/sraven-train-cpu-2026-11-22.md), so "
              << p.value("steps", 0)
              << " steps take tens of minutes; the ETA shows after the first "
                 "steps. A quick look: --width 0.25 --steps 500; a GPU: "
                 "--device cuda\n";
  }
  std::map<std::string, double> last_eval;
  nlohmann::json result;
  int64_t step = 0, total = 0;
  TrainProgress progress;
  const int rc = RunLocalTrial(trial, [&](const nlohmann::json& line) {
    using Type = trials::TrialEvent::Type;
    const absl::StatusOr<trials::TrialEvent> ev = trials::EventFromJson(line);
    if (!ev.ok()) {
      // Not an event, or a malformed one: nothing to show.
    } else if (ev->type == Type::kProgress && !ev->phase.empty()) {
      progress.Phase(ev->phase, ev->step.value_or(0), ev->total.value_or(0));
    } else if (ev->type == Type::kProgress) {
      step = ev->step.value_or(0);
      total = ev->total.value_or(0);
      progress.Step(step, total, absl::Now());
    } else if (ev->type == Type::kMetric) {
      if (ev->name.rfind("eval/", 0) == 0 && !std::isnan(ev->value)) {
        last_eval[ev->name] = ev->value;
      }
    } else if (ev->type == Type::kResult) {
      result = ev->metrics;
    }
    auto acc = last_eval.find("eval/ood_acc");
    return progress.Line(acc == last_eval.end()
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
