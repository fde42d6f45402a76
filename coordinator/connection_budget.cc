// Copyright 2026 SMoE Lab authors.
#include "coordinator/connection_budget.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace smoe::coordinator {
namespace {

// An IPv4 client on a dual-stack socket ("::ffff:127.0.0.1") is the same
// address as over IPv4.
absl::string_view Normalize(absl::string_view address) {
  absl::string_view v4 = address;
  if (absl::ConsumePrefix(&v4, "::ffff:") && absl::StrContains(v4, '.')) {
    return v4;
  }
  return address;
}

}  // namespace

absl::Status ConnectionBudget::Acquire(absl::string_view address,
                                       absl::string_view transport) {
  address = Normalize(address);
  absl::MutexLock lock(&mu_);
  auto it = held_.find(address);
  const Held h = it == held_.end() ? Held{} : it->second;
  const int mine = h.http + h.grpc;
  if (limits_.per_address > 0 && mine >= limits_.per_address) {
    ++refused_;
    return absl::ResourceExhaustedError(
        absl::StrCat("connection budget of ", address, " spent: ", h.http,
                     " HTTP connection(s) and ", h.grpc,
                     " gRPC call(s) open, at most ", limits_.per_address,
                     " per address (shared by HTTP and gRPC); retry "
                     "later"));
  }
  if (limits_.total > 0 && total_ >= limits_.total) {
    ++refused_;
    return absl::ResourceExhaustedError(
        absl::StrCat("the coordinator's connection budget is spent: ", total_,
                     " HTTP connections and gRPC calls open, at most ",
                     limits_.total, " (shared by HTTP and gRPC); retry later"));
  }
  if (it == held_.end()) it = held_.emplace(std::string(address), Held{}).first;
  if (transport == "grpc") {
    ++it->second.grpc;
  } else {
    ++it->second.http;
  }
  ++total_;
  return absl::OkStatus();
}

void ConnectionBudget::Release(absl::string_view address,
                               absl::string_view transport) {
  address = Normalize(address);
  absl::MutexLock lock(&mu_);
  auto it = held_.find(address);
  if (it == held_.end()) return;
  int& n = transport == "grpc" ? it->second.grpc : it->second.http;
  if (n <= 0) return;
  --n;
  --total_;
  if (it->second.http == 0 && it->second.grpc == 0) held_.erase(it);
}

int ConnectionBudget::held(absl::string_view address) const {
  address = Normalize(address);
  absl::MutexLock lock(&mu_);
  auto it = held_.find(address);
  return it == held_.end() ? 0 : it->second.http + it->second.grpc;
}

int ConnectionBudget::total() const {
  absl::MutexLock lock(&mu_);
  return total_;
}

int64_t ConnectionBudget::refused() const {
  absl::MutexLock lock(&mu_);
  return refused_;
}

std::string GrpcPeerAddress(absl::string_view peer) {
  absl::string_view rest = peer;
  if (absl::ConsumePrefix(&rest, "ipv4:")) {
    const size_t colon = rest.rfind(':');
    return std::string(
        colon == absl::string_view::npos ? rest : rest.substr(0, colon));
  }
  if (absl::ConsumePrefix(&rest, "ipv6:")) {
    const size_t colon = rest.rfind(':');
    absl::string_view host =
        colon == absl::string_view::npos ? rest : rest.substr(0, colon);
    if (absl::ConsumePrefix(&host, "%5B")) absl::ConsumeSuffix(&host, "%5D");
    if (absl::ConsumePrefix(&host, "[")) absl::ConsumeSuffix(&host, "]");
    return std::string(host);
  }
  return std::string(peer);
}

}  // namespace smoe::coordinator
