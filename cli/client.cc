// Copyright 2026 SMoE Lab authors.
#include "cli/client.h"

#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/address.h"
#include "common/api_token.h"
#include "proto/auth.h"

namespace smoe::cli {

absl::StatusOr<std::unique_ptr<CoordinatorClient>> CoordinatorClient::Create(
    const ClientOptions& options) {
  auto c = std::unique_ptr<CoordinatorClient>(new CoordinatorClient());
  c->options_ = options;
  c->options_.address = WithDefaultPort(options.address, kDefaultGrpcPort);
  auto token = ResolveClientToken(c->options_.token_file);
  if (!token.ok()) {
    return absl::UnauthenticatedError(token.status().message());
  }
  c->token_ = token->token;
  SetTokenSource(token->source);
  std::shared_ptr<grpc::ChannelCredentials> creds;
  if (!options.tls_ca.empty()) {
    std::ifstream in(options.tls_ca);
    if (!in) {
      return absl::NotFoundError(
          absl::StrCat("--tls-ca: cannot read '", options.tls_ca, "'"));
    }
    std::stringstream ss;
    ss << in.rdbuf();
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = ss.str();
    creds = grpc::SslCredentials(ssl);
  } else {
    creds = grpc::InsecureChannelCredentials();
  }
  grpc::ChannelArguments args;
  // A large sweep's trial list (GetSweep with trials, the first WatchSweep
  // event) easily passes gRPC's default 4 MB receive limit.
  args.SetMaxReceiveMessageSize(kMaxReplyBytes);
  // A long `sweep watch` stream can sit idle for hours: ping every 30 s and
  // give up after 10 s without an answer, so a silent network partition
  // ends the call (UNAVAILABLE) instead of hanging until its 24 h deadline.
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 30'000);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 10'000);
  args.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  c->channel_ = grpc::CreateCustomChannel(c->options_.address, creds, args);
  c->stub_ = smoe::v1::Coordinator::NewStub(c->channel_);
  return c;
}

void CoordinatorClient::Prepare(grpc::ClientContext* ctx) const {
  Prepare(ctx, options_.timeout);
}

void CoordinatorClient::Prepare(grpc::ClientContext* ctx,
                                absl::Duration timeout) const {
  proto::PrepareClientContext(ctx, token_, timeout);
}

namespace {
absl::Mutex token_source_mu(absl::kConstInit);
std::string* token_source ABSL_GUARDED_BY(token_source_mu) = nullptr;
}  // namespace

void SetTokenSource(absl::string_view source) {
  absl::MutexLock lock(&token_source_mu);
  if (token_source == nullptr) token_source = new std::string;
  *token_source = std::string(source);
}

std::string TokenSource() {
  absl::MutexLock lock(&token_source_mu);
  return token_source != nullptr ? *token_source : "";
}

int ReportError(const absl::Status& status, absl::string_view context) {
  std::cerr << "smoe: ";
  if (!context.empty()) std::cerr << context << ": ";
  std::cerr << status.message();
  // A refused token names where it came from (issue 31 item 8).
  if ((absl::IsUnauthenticated(status) || absl::IsPermissionDenied(status)) &&
      !TokenSource().empty()) {
    std::cerr << " (the token came from " << TokenSource() << ")";
  }
  std::cerr << "\n";
  switch (status.code()) {
    case absl::StatusCode::kOk:
      return kExitOk;
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kAlreadyExists:
    case absl::StatusCode::kOutOfRange:
      return kExitDataErr;
    case absl::StatusCode::kNotFound:
      return kExitNoInput;
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kDeadlineExceeded:
      std::cerr << "smoe: is the coordinator running? (--coordinator, "
                   "$SMOE_COORDINATOR)\n";
      return kExitUnavailable;
    case absl::StatusCode::kUnauthenticated:
    case absl::StatusCode::kPermissionDenied:
      return kExitNoPerm;
    default:
      return kExitSoftware;
  }
}

std::string SelfDir() {
  char buf[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return ".";
  buf[n] = '\0';
  return std::filesystem::path(buf).parent_path().string();
}

}  // namespace smoe::cli
