// Copyright 2026 SMoE Lab authors.
//
// File: cli/doctor_cmd.h
//
// `smoe doctor [--trainer PATH] [--quick] [--json] [--report FILE]
// [--only CHECK]... [--inject-fault CHECK]...`: the machine self-check. The
// checks need LibTorch and CUDA, which the CLI does not link, so this runs
// `smoe-trainer doctor` (worker/trainer/doctor.h; default: smoe-trainer next
// to smoe) with the other flags and returns its exit code: 0 no check failed,
// 1 a check failed (or the trainer is missing), 64 usage. The flags are
// checked here first, so a typo fails before the trainer starts.
#ifndef SMOE_CLI_DOCTOR_CMD_H_
#define SMOE_CLI_DOCTOR_CMD_H_

#include <ostream>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"

namespace smoe::cli {

// The flags of `smoe doctor`, forwarded to `smoe-trainer doctor`.
struct DoctorOptions {
  std::string trainer;  // empty: smoe-trainer next to smoe
  bool quick = false;
  bool json = false;
  std::string report;
  std::vector<std::string> only;
  std::vector<std::string> inject_fault;
};

// Adds `doctor` to `app`; its flags write into `*options`.
CLI::App* AddDoctorCommand(CLI::App* app, DoctorOptions* options);

// Runs `smoe-trainer doctor` with the flags and returns its exit code (1
// when the trainer is missing or killed: a FAIL line names why).
int RunDoctor(const DoctorOptions& options, std::ostream& out,
              std::ostream& err);

}  // namespace smoe::cli

#endif  // SMOE_CLI_DOCTOR_CMD_H_
