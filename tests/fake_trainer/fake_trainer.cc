// Copyright 2026 SMoE Lab authors.
//
// File: tests/fake_trainer/fake_trainer.cc
//
// smoe-fake-trainer: a stand-in for smoe-trainer that follows the daemon <->
// trial contract (docs/trainer-protocol.md) and does what a test plan says.
//
//   smoe-fake-trainer run --trial TRIAL.json --workdir DIR
//
// Plan: $SMOE_FAKE_TRAINER_PLAN names a JSON file
//
//   {"default": {"mode": "succeed", "steps": 20, "step_ms": 50},
//    "rules": [{"match": {"M": 3}, "mode": "crash"},
//              {"match": {"M": 2, "top_k": 1}, "mode": "hang"}],
//    "fail_attempts": 0}
//
// The first rule whose `match` keys all equal the trial's values applies; a
// key is looked up in `params`, else among TRIAL.json's top-level fields
// (trial_id, sweep_id, attempt, kind, seed). A rule's fields override the
// default's. Without a plan: {"mode":"succeed","steps":20,"step_ms":50}.
//
// Behaviour fields:
//   mode           succeed | crash | abort | hang | sigstop | exit75 | exit64
//                  (exit75 checkpoints and exits 75 only on a fresh start;
//                  the resumed run then succeeds; sigstop stops itself with
//                  SIGSTOP: a hung trainer that no signal but SIGKILL ends)
//   until_attempt  the mode applies on attempts <= N only; later attempts
//                  succeed (default: every attempt)
//   steps          total steps (default 20)
//   step_ms        wall time per step in ms (default 50)
//   at_step        step at which crash/abort/hang/exit75 happens
//                  (default steps/2)
//   exit_code      exit status for crash (default 1)
//   checkpoint_every  write a checkpoint every N steps (default 5)
//   eval_every     also emit eval/ood_acc every N steps before the last, at
//                  ood_acc * s / steps (a rising curve; default 0: only at
//                  the end). Adaptive-sweep tests judge rungs on it.
//                  Like smoe-trainer, the fake also evaluates at the ASHA
//                  rungs params.eval_rungs_from * params.eval_rungs_eta^i
//                  that the coordinator puts in an asha sweep's lease.
//   checkpoint_bytes  pad checkpoint.json to about N bytes (default 0), to
//                  test checkpoint transfer and its size cap
//   ignore_sigterm for hang: ignore SIGTERM too (only SIGKILL ends it)
//   log_every      every N steps also write "smoe-fake-trainer: at step S" to
//                  stderr and "plain stdout line at step S" (not an event) to
//                  stdout (default 0: never); attempt-log tests read them
//   echo_env       at the start, print "smoe-fake-trainer: NAME=VALUE" of this
//                  environment variable to stderr (redaction tests)
//   fail_attempts  crash (exit 1) on attempts <= N, then use `mode`
//                  (also accepted at the plan's top level)
//
// Output (JSONL on stdout, flushed per line), per step s in [start, steps]:
//   {"event":"progress","step":s,"total":steps}
//   {"event":"metric","step":s,"name":"train/loss","value":1/(1+s)}
// every checkpoint_every steps: checkpoint file + {"event":"checkpoint",...};
// at the end: {"event":"metric","step":steps,"name":"eval/ood_acc",...} and
//   {"event":"result","metrics":{"test_acc":T,"ood_acc":O,"start_step":S,
//                                "steps":steps}}
// with, from params M and top_k (default 1 each):
//   ood_acc  = 1 / (1 + |top_k - M|)
//   test_acc = 1 / (1 + 0.5 * |top_k - M|)
//
// Side effects in DIR: appends one line per started attempt to attempts.log
// ({"trial_id":..,"attempt":..,"pid":..,"start_step":..}); checkpoint.json
// ({"step": N}) is written on checkpoints and on SIGTERM and named in the
// checkpoint event ({"event":"checkpoint","step":N,"file":"checkpoint.json"})
// so the worker daemon uploads it; a run starts at the checkpoint's step + 1.
//
// A checkpoint that cannot be written (a full disk) exits 1 with
// "smoe-fake-trainer: cannot write DIR/checkpoint.json: <strerror>".
//
// Exit codes: 0 success; 75 SIGTERM (checkpoint written) or mode exit75; 64
// bad invocation/TRIAL.json or mode exit64; crash: exit_code; abort: SIGABRT;
// 70 for an unreadable plan.
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "trials/events.h"

namespace {

using json = nlohmann::json;

volatile sig_atomic_t g_term = 0;

void OnTerm(int) { g_term = 1; }

void Emit(const std::string& event) {  // one trials/events.h line
  std::string line = event + "\n";
  fwrite(line.data(), 1, line.size(), stdout);
  fflush(stdout);
}

bool ReadJson(const std::string& path, json* out) {
  std::ifstream in(path);
  if (!in) return false;
  std::stringstream ss;
  ss << in.rdbuf();
  *out = json::parse(ss.str(), nullptr, false);
  return !out->is_discarded();
}

bool WriteFileAtomic(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << text;
    out.flush();
    if (!out) {
      const int err = errno;
      unlink(tmp.c_str());
      errno = err;
      return false;
    }
  }
  return rename(tmp.c_str(), path.c_str()) == 0;
}

// Sleeps `ms` milliseconds unless SIGTERM arrives (unless ignored).
void SleepMs(long ms) {
  timespec ts{ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    if (g_term) return;
  }
}

bool ValuesEqual(const json& a, const json& b) {
  if (a.is_number() && b.is_number()) {
    return a.get<double>() == b.get<double>();
  }
  return a == b;
}

double Param(const json& params, const char* key, double def) {
  if (params.contains(key) && params[key].is_number()) {
    return params[key].get<double>();
  }
  return def;
}

int Usage(const std::string& msg) {
  fprintf(stderr, "smoe-fake-trainer: %s\n", msg.c_str());
  fprintf(stderr,
          "usage: smoe-fake-trainer run --trial TRIAL.json --workdir DIR\n");
  return 64;
}

}  // namespace

int main(int argc, char** argv) {
  std::string trial_path, workdir;
  if (argc < 2 || std::string(argv[1]) != "run") return Usage("expected 'run'");
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if ((a == "--trial" || a == "--workdir") && i + 1 < argc) {
      (a == "--trial" ? trial_path : workdir) = argv[++i];
    } else {
      return Usage("unknown argument '" + a + "'");
    }
  }
  if (trial_path.empty() || workdir.empty()) {
    return Usage("--trial and --workdir are required");
  }
  json trial;
  if (!ReadJson(trial_path, &trial) || !trial.is_object()) {
    return Usage("cannot read TRIAL.json '" + trial_path + "'");
  }
  const json params = trial.value("params", json::object());
  if (!params.is_object()) return Usage("params is not an object");
  const int attempt = trial.value("attempt", 1);

  // The plan.
  json behaviour = {{"mode", "succeed"}, {"steps", 20}, {"step_ms", 50}};
  int fail_attempts = 0;
  if (const char* plan_path = getenv("SMOE_FAKE_TRAINER_PLAN");
      plan_path != nullptr && *plan_path != '\0') {
    json plan;
    if (!ReadJson(plan_path, &plan) || !plan.is_object()) {
      fprintf(stderr, "smoe-fake-trainer: cannot read plan '%s'\n", plan_path);
      return 70;
    }
    if (plan.contains("default") && plan["default"].is_object()) {
      behaviour.update(plan["default"]);
    }
    if (plan.contains("fail_attempts") && plan["fail_attempts"].is_number()) {
      fail_attempts = plan["fail_attempts"].get<int>();
    }
    if (plan.contains("rules") && plan["rules"].is_array()) {
      for (const json& rule : plan["rules"]) {
        if (!rule.is_object()) continue;
        bool all = true;
        const json match = rule.value("match", json::object());
        if (!match.is_object()) continue;
        for (const auto& [k, v] : match.items()) {
          const json* actual = nullptr;
          if (params.contains(k)) {
            actual = &params[k];
          } else if (trial.contains(k)) {
            actual = &trial[k];
          }
          if (actual == nullptr || !ValuesEqual(*actual, v)) all = false;
        }
        if (!all) continue;
        json overlay = rule;
        overlay.erase("match");
        behaviour.update(overlay);
        break;
      }
    }
  }
  if (behaviour.contains("fail_attempts") &&
      behaviour["fail_attempts"].is_number()) {
    fail_attempts = behaviour["fail_attempts"].get<int>();
  }
  std::string mode = behaviour.value("mode", "succeed");
  const int steps = behaviour.value("steps", 20);
  const long step_ms = behaviour.value("step_ms", 50L);
  const int at_step = behaviour.value("at_step", steps / 2);
  const int checkpoint_every =
      std::max(1, behaviour.value("checkpoint_every", 5));
  const bool ignore_sigterm = behaviour.value("ignore_sigterm", false);
  const int eval_every = std::max(0, behaviour.value("eval_every", 0));
  const int64_t rungs_from =
      static_cast<int64_t>(Param(params, "eval_rungs_from", 0));
  const int64_t rungs_eta =
      static_cast<int64_t>(Param(params, "eval_rungs_eta", 3));
  auto rung_step = [&](int64_t step) {
    if (rungs_from <= 0 || rungs_eta < 2) return false;
    for (int64_t r = rungs_from; r <= step; r *= rungs_eta) {
      if (r == step) return true;
    }
    return false;
  };
  const long checkpoint_bytes = behaviour.value("checkpoint_bytes", 0L);
  if (behaviour.contains("until_attempt") &&
      behaviour["until_attempt"].is_number() &&
      attempt > behaviour["until_attempt"].get<int>()) {
    mode = "succeed";
  }
  if (attempt <= fail_attempts) mode = "crash";

  // Resume.
  const std::string ckpt_path = workdir + "/checkpoint.json";
  int start = 1;
  json ckpt;
  if (ReadJson(ckpt_path, &ckpt) && ckpt.contains("step") &&
      ckpt["step"].is_number_integer()) {
    start = ckpt["step"].get<int>() + 1;
  }
  {
    std::ofstream log(workdir + "/attempts.log", std::ios::app);
    log << json({{"trial_id", trial.value("trial_id", "")},
                 {"attempt", attempt},
                 {"pid", static_cast<int>(getpid())},
                 {"start_step", start},
                 {"mode", mode}})
               .dump()
        << "\n";
  }
  fprintf(stderr,
          "smoe-fake-trainer: trial %s attempt %d mode %s from step %d\n",
          trial.value("trial_id", "").c_str(), attempt, mode.c_str(), start);
  const int log_every = behaviour.value("log_every", 0);
  if (const std::string name = behaviour.value("echo_env", ""); !name.empty()) {
    const char* v = getenv(name.c_str());
    fprintf(stderr, "smoe-fake-trainer: %s=%s\n", name.c_str(),
            v == nullptr ? "" : v);
  }

  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = (mode == "hang" && ignore_sigterm) ? SIG_IGN : OnTerm;
  sigaction(SIGTERM, &sa, nullptr);

  if (mode == "exit64") {
    fprintf(stderr, "smoe-fake-trainer: bad trial spec (planned exit64)\n");
    return 64;
  }

  auto checkpoint = [&](int step) {
    json c = {{"step", step}};
    if (checkpoint_bytes > 0) {
      c["pad"] = std::string(static_cast<size_t>(checkpoint_bytes), 'p');
    }
    if (!WriteFileAtomic(ckpt_path, c.dump() + "\n")) {
      // As smoe-trainer does: a checkpoint that cannot be written ends the
      // attempt (a full disk).
      fprintf(stderr, "smoe-fake-trainer: cannot write %s: %s\n",
              ckpt_path.c_str(), strerror(errno));
      exit(1);
    }
    Emit(smoe::trials::CheckpointEvent(step, "checkpoint.json"));
  };
  int done = start - 1;  // last completed step
  auto on_term = [&]() {
    fprintf(stderr, "smoe-fake-trainer: SIGTERM; checkpoint at step %d\n",
            done);
    checkpoint(done);
    return 75;
  };

  const double gap =
      std::fabs(Param(params, "top_k", 1) - Param(params, "M", 1));
  const double ood = 1.0 / (1.0 + gap);
  const double test = 1.0 / (1.0 + 0.5 * gap);
  for (int s = start; s <= steps; ++s) {
    if (g_term) return on_term();
    if (s == at_step) {
      if (mode == "crash") {
        const int code = behaviour.value("exit_code", 1);
        fprintf(stderr, "smoe-fake-trainer: planned crash at step %d\n", s);
        return code;
      }
      if (mode == "abort") {
        fprintf(stderr, "smoe-fake-trainer: planned abort at step %d\n", s);
        fflush(stderr);
        abort();
      }
      if (mode == "exit75" && start == 1) {
        fprintf(stderr, "smoe-fake-trainer: planned preemption at step %d\n",
                s);
        checkpoint(done);
        return 75;
      }
      if (mode == "sigstop") {
        fprintf(stderr, "smoe-fake-trainer: SIGSTOP at step %d\n", s);
        fflush(stderr);
        raise(SIGSTOP);
      }
      if (mode == "hang") {
        fprintf(stderr, "smoe-fake-trainer: hanging at step %d\n", s);
        while (true) {
          SleepMs(1000);
          if (g_term) return on_term();
        }
      }
    }
    SleepMs(step_ms);
    if (g_term) return on_term();
    Emit(smoe::trials::ProgressEvent(s, steps));
    Emit(smoe::trials::MetricEvent(s, "train/loss", 1.0 / (1.0 + s)));
    if (s < steps &&
        ((eval_every > 0 && s % eval_every == 0) || rung_step(s))) {
      Emit(smoe::trials::MetricEvent(s, "eval/ood_acc", ood * s / steps));
    }
    done = s;
    if (log_every > 0 && s % log_every == 0) {
      fprintf(stderr, "smoe-fake-trainer: at step %d\n", s);
      fflush(stderr);
      printf("plain stdout line at step %d\n", s);
      fflush(stdout);
    }
    if (s % checkpoint_every == 0) checkpoint(s);
  }

  Emit(smoe::trials::MetricEvent(steps, "eval/ood_acc", ood));
  Emit(smoe::trials::ResultEvent({{"test_acc", test},
                                  {"ood_acc", ood},
                                  {"start_step", start},
                                  {"steps", steps}}));
  return 0;
}
