// Copyright 2026 SMoE Lab authors.
#include "coordinator/grpc/grpc_auth.h"

#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/slice.h>
#include <grpcpp/security/server_credentials.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "common/api_token.h"
#include "common/logging.h"
#include "coordinator/api/access.h"

namespace smoe::coordinator {
namespace {

absl::string_view View(const grpc_slice& s) {
  return absl::string_view(
      reinterpret_cast<const char*>(GRPC_SLICE_START_PTR(s)),
      GRPC_SLICE_LENGTH(s));
}

// The C core's auth metadata hook: runs on the call's headers, before the
// request message is read. Calls `cb` synchronously.
void ProcessAuthMetadata(void* state, grpc_auth_context* /*context*/,
                         const grpc_metadata* md, size_t num_md,
                         grpc_process_auth_metadata_done_cb cb,
                         void* user_data) {
  auto* checker = static_cast<TokenAuthChecker*>(state);
  absl::string_view path, authorization;
  for (size_t i = 0; i < num_md; ++i) {
    const absl::string_view key = View(md[i].key);
    if (key == ":path") path = View(md[i].value);
    if (key == "authorization") authorization = View(md[i].value);
  }
  const absl::Status s = checker->Check(path, authorization);
  if (s.ok()) {
    cb(user_data, nullptr, 0, nullptr, 0, GRPC_STATUS_OK, nullptr);
  } else {
    const std::string message(s.message());
    cb(user_data, nullptr, 0, nullptr, 0,
       static_cast<grpc_status_code>(s.code()), message.c_str());
  }
}

// grpc::ServerCredentials over core credentials we built ourselves: the C++
// InsecureServerCredentials() cannot take an auth metadata processor.
class CoreServerCredentials final : public grpc::ServerCredentials {
 public:
  explicit CoreServerCredentials(grpc_server_credentials* creds)
      : creds_(creds) {}
  ~CoreServerCredentials() override { grpc_server_credentials_release(creds_); }

  // The processor is set on the core credentials at creation.
  void SetAuthMetadataProcessor(
      const std::shared_ptr<grpc::AuthMetadataProcessor>&) override {}

 private:
  int AddPortToServer(const std::string& addr, grpc_server* server) override {
    return grpc_server_add_http2_port(server, addr.c_str(), creds_);
  }

  grpc_server_credentials* const creds_;
};

}  // namespace

size_t MaxRequestBytes(absl::string_view method) {
  if (absl::EndsWith(method, "ReportMetrics") ||
      absl::EndsWith(method, "SubmitSweep") ||
      absl::EndsWith(method, "ExtendSweep")) {
    return kMaxLargeRequestBytes;
  }
  if (absl::EndsWith(method, "/Heartbeat") ||
      absl::EndsWith(method, "/Complete") || absl::EndsWith(method, "/Fail") ||
      method == "Heartbeat" || method == "Complete" || method == "Fail") {
    return kMaxMediumRequestBytes;
  }
  return kMaxSmallRequestBytes;
}

absl::Status CheckRequestSize(absl::string_view method, size_t request_bytes) {
  const size_t limit = MaxRequestBytes(method);
  if (request_bytes <= limit) return absl::OkStatus();
  return absl::ResourceExhaustedError(
      absl::StrCat(method, ": request is ", request_bytes,
                   " bytes; this method accepts at most ", limit));
}

TokenAuthChecker::TokenAuthChecker(TokenRegistry* tokens) : tokens_(tokens) {}

absl::Status TokenAuthChecker::Check(absl::string_view method,
                                     absl::string_view authorization) {
  const std::optional<Access> required = GrpcAccess(method);
  if (required == Access::kPublic) return absl::OkStatus();
  absl::string_view given = authorization;
  std::optional<Principal> who;
  if (absl::ConsumePrefix(&given, "Bearer ")) {
    who = tokens_->Authenticate(given);
  }
  absl::Status st;
  if (!who.has_value()) {
    st = absl::UnauthenticatedError(
        authorization.empty()
            ? "missing API token (metadata 'authorization: Bearer <token>')"
            : "invalid API token");
  } else if (!required.has_value()) {
    st = absl::PermissionDeniedError(absl::StrCat(
        method.empty() ? "?" : method,
        " has no access rule (coordinator/api/operations.cc); refused"));
  } else {
    st = Authorize(who, *required, method);
  }
  if (st.ok()) return st;
  int64_t suppressed = 0;
  if (log_.Allow(absl::Now(), &suppressed)) {
    SMOE_LOG(WARNING) << (who.has_value() ? "refused a gRPC call to "
                                          : "refused an unauthenticated gRPC "
                                            "call to ")
                      << (method.empty() ? "?" : method) << " ("
                      << (who.has_value()         ? st.message()
                          : authorization.empty() ? "missing API token"
                                                  : "invalid API token")
                      << ")"
                      << (suppressed > 0
                              ? absl::StrCat("; ", suppressed,
                                             " more refused since the last "
                                             "such line")
                              : "");
  }
  return st;
}

absl::Status TokenAuthChecker::CheckMetadata(
    absl::string_view method,
    const std::multimap<grpc::string_ref, grpc::string_ref>& metadata) {
  auto it = metadata.find("authorization");
  absl::string_view authorization;
  if (it != metadata.end()) {
    authorization = absl::string_view(it->second.data(), it->second.size());
  }
  return Check(method, authorization);
}

std::optional<Principal> TokenAuthChecker::Caller(
    const std::multimap<grpc::string_ref, grpc::string_ref>& metadata) {
  auto it = metadata.find("authorization");
  if (it == metadata.end()) return std::nullopt;
  absl::string_view given(it->second.data(), it->second.size());
  if (!absl::ConsumePrefix(&given, "Bearer ")) return std::nullopt;
  return tokens_->Authenticate(given);
}

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> TokenServerCredentials(
    TokenAuthChecker* checker, const std::string& cert_pem,
    const std::string& key_pem) {
  // The core library must be initialised before core objects are created;
  // the wrapper keeps it initialised for its lifetime.
  grpc_init();
  struct Release {
    ~Release() { grpc_shutdown(); }
  } release;
  grpc_server_credentials* creds = nullptr;
  if (!cert_pem.empty() || !key_pem.empty()) {
    if (cert_pem.empty() || key_pem.empty()) {
      return absl::InvalidArgumentError(
          "TLS needs both a certificate (--tls-cert) and a key (--tls-key)");
    }
    grpc_ssl_pem_key_cert_pair pair = {key_pem.c_str(), cert_pem.c_str()};
    creds = grpc_ssl_server_credentials_create_ex(
        nullptr, &pair, 1, GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE, nullptr);
  } else {
    creds = grpc_insecure_server_credentials_create();
  }
  if (creds == nullptr) {
    return absl::InvalidArgumentError(
        "cannot create the gRPC server credentials (bad TLS certificate or "
        "key?)");
  }
  grpc_auth_metadata_processor processor;
  processor.process = &ProcessAuthMetadata;
  processor.destroy = nullptr;
  processor.state = checker;
  grpc_server_credentials_set_auth_metadata_processor(creds, processor);
  return std::shared_ptr<grpc::ServerCredentials>(
      new CoreServerCredentials(creds));
}

}  // namespace smoe::coordinator
