// Copyright 2026 SMoE Lab authors.
//
// File: cli/local_coordinator_for_test.h
//
// Test-only: what the CLI's tests against an in-process coordinator share
// (client_test, logs_cmd_test, workers_cmd_test): the coordinator's options
// (real gRPC on 127.0.0.1:0, SQLite in a temp dir, no dashboard) and clients
// of it with the admin token or a new viewer token.
#ifndef SMOE_CLI_LOCAL_COORDINATOR_FOR_TEST_H_
#define SMOE_CLI_LOCAL_COORDINATOR_FOR_TEST_H_

#include <stdlib.h>

#include <fstream>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/clock.h"
#include "cli/client.h"
#include "coordinator/server.h"
#include "coordinator/tokens.h"

namespace smoe::cli::test_support {

// A coordinator on 127.0.0.1:0 with its data in `dir`, no dashboard.
inline coordinator::ServerOptions LocalServer(const std::string& dir) {
  coordinator::ServerOptions so;
  so.data_dir = dir;
  so.listen = "127.0.0.1:0";
  so.http_listen = "";
  so.synchronous = store::SqliteOptions::Synchronous::kNormal;
  return so;
}

// A client of `server` with the admin token of `dir` (dir/token);
// $SMOE_TOKEN is unset so that it cannot win.
inline absl::StatusOr<std::unique_ptr<CoordinatorClient>> AdminClient(
    const coordinator::CoordinatorServer& server, const std::string& dir) {
  ClientOptions co;
  co.address = server.address();
  co.token_file = dir + "/token";
  unsetenv("SMOE_TOKEN");
  return CoordinatorClient::Create(co);
}

// A client of `server` with a new viewer token (written to dir/viewer-token)
// in place of co's.
inline absl::StatusOr<std::unique_ptr<CoordinatorClient>> ViewerClient(
    coordinator::CoordinatorServer& server, ClientOptions co,
    const std::string& dir) {
  auto viewer = coordinator::CreateToken(
      server.tokens_file(), "v", coordinator::Role::kViewer, absl::Now());
  if (!viewer.ok()) return viewer.status();
  { std::ofstream(dir + "/viewer-token") << viewer->token << "\n"; }
  co.token_file = dir + "/viewer-token";
  return CoordinatorClient::Create(co);
}

}  // namespace smoe::cli::test_support

#endif  // SMOE_CLI_LOCAL_COORDINATOR_FOR_TEST_H_
