// Copyright 2026 SMoE Lab authors.
//
// File: cli/client.h
//
// A small client for the Coordinator service: resolves the address and token,
// attaches both plus a deadline to every call, and converts statuses.
#ifndef SMOE_CLI_CLIENT_H_
#define SMOE_CLI_CLIENT_H_

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "proto/rpc_status.h"
#include "proto/smoe.grpc.pb.h"

namespace smoe::cli {

struct ClientOptions {
  // --coordinator / $SMOE_COORDINATOR; a host without a port gets :50051.
  std::string address = "127.0.0.1:50051";
  // --token-file: wins over $SMOE_TOKEN; empty = $SMOE_TOKEN, else
  // smoe::DefaultTokenFile() (common/api_token.h, ResolveClientToken).
  std::string token_file;
  std::string tls_ca;  // PEM roots; empty = plaintext
  absl::Duration timeout = absl::Seconds(30);
};

// The largest reply the client accepts (a 100,000-trial sweep with long
// params and error messages; gRPC's default is 4 MB).
inline constexpr int kMaxReplyBytes = 1 << 30;

// Returns the directory holding the running executable.
std::string SelfDir();

class CoordinatorClient {
 public:
  // Resolves the token ($SMOE_TOKEN or the token file) and creates a channel.
  static absl::StatusOr<std::unique_ptr<CoordinatorClient>> Create(
      const ClientOptions& options);

  smoe::v1::Coordinator::Stub* stub() { return stub_.get(); }
  // Prepares a context with the token and the default (or given) deadline.
  void Prepare(grpc::ClientContext* ctx) const;
  void Prepare(grpc::ClientContext* ctx, absl::Duration timeout) const;
  const ClientOptions& options() const { return options_; }

 private:
  ClientOptions options_;
  std::string token_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<smoe::v1::Coordinator::Stub> stub_;
};

// Exit codes a shell user can rely on (sysexits.h).
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;       // e.g. the sweep had failed trials
inline constexpr int kExitUsage = 64;        // bad command line
inline constexpr int kExitDataErr = 65;      // invalid sweep file / input
inline constexpr int kExitNoInput = 66;      // file or sweep not found
inline constexpr int kExitUnavailable = 69;  // coordinator unreachable
inline constexpr int kExitSoftware = 70;     // internal error
inline constexpr int kExitNoPerm = 77;       // missing/invalid token

// Maps a status to an exit code and prints "smoe: <message>" (with a
// context, "smoe: <context>: <message>", e.g. the file) to stderr. A refused
// token (Unauthenticated, PermissionDenied) names its source when
// CoordinatorClient::Create recorded one.
int ReportError(const absl::Status& status, absl::string_view context = "");

// One unary call with the client's token and default deadline: kExitOk, or
// the error reported (ReportError) and its exit code. E.g.
//   if (int rc = Call(client, &Stub::GetSweep, req, &resp)) return rc;
template <typename Request, typename Response>
int Call(CoordinatorClient& client,
         grpc::Status (smoe::v1::Coordinator::Stub::*method)(
             grpc::ClientContext*, const Request&, Response*),
         const Request& request, Response* response) {
  grpc::ClientContext ctx;
  client.Prepare(&ctx);
  const grpc::Status s = (client.stub()->*method)(&ctx, request, response);
  return s.ok() ? kExitOk : ReportError(proto::FromGrpcStatus(s));
}

// Where this process's client token came from ("$SMOE_TOKEN",
// "token file '<path>'"; empty before any client was created).
void SetTokenSource(absl::string_view source);
std::string TokenSource();

}  // namespace smoe::cli

#endif  // SMOE_CLI_CLIENT_H_
