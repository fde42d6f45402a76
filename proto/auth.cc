// Copyright 2026 SMoE Lab authors.
#include "proto/auth.h"

#include <chrono>

#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "common/api_token.h"

namespace smoe::proto {

void PrepareClientContext(grpc::ClientContext* ctx, const std::string& token,
                          absl::Duration timeout) {
  ctx->AddMetadata(kAuthMetadataKey, "Bearer " + token);
  ctx->set_deadline(std::chrono::system_clock::now() +
                    absl::ToChronoMilliseconds(timeout));
}

absl::Status CheckBearerToken(
    const std::multimap<grpc::string_ref, grpc::string_ref>& metadata,
    const std::string& token) {
  auto it = metadata.find(kAuthMetadataKey);
  if (it == metadata.end()) {
    return absl::UnauthenticatedError(
        "missing API token (metadata 'authorization: Bearer <token>')");
  }
  absl::string_view value(it->second.data(), it->second.size());
  if (!absl::ConsumePrefix(&value, "Bearer ") || !TokenEquals(value, token)) {
    return absl::UnauthenticatedError("invalid API token");
  }
  return absl::OkStatus();
}

}  // namespace smoe::proto
