// Copyright 2026 SMoE Lab authors.
//
// File: coordinator/tokens.h
//
// API tokens with roles (docs/roles.md).
//
// Every token has a role:
//   admin  - everything: submit, cancel, retry, extend, drain, annotate, and
//            all the reads and worker calls
//   viewer - the dashboard and the read API/RPCs only
//   worker - the worker RPCs only (register, lease, heartbeat, report
//            metrics, complete, fail): it cannot submit, cancel or read
//            sweeps
//
// The data directory's token file (`<data_dir>/token`, created on first
// start) is the admin token named "admin", as before roles existed. Further
// tokens live in `<data_dir>/tokens`, one line each:
//
//   name <TAB> role <TAB> created (unix seconds) <TAB> sha256(token), hex
//
// The file (mode 0600) holds only the SHA-256 of each token, never the token:
// tokens are 256 random bits, so a plain hash cannot be inverted, and a copy
// of the data directory or a backup does not leak usable secrets (except the
// admin token file itself, which stays a secret as before). `smoe token
// create` writes the file while the coordinator runs; the coordinator notices
// the change (a stat() per authentication) and a created or revoked token
// takes effect with the next call.
//
// Thread safety: TokenRegistry is safe for concurrent use; the file functions
// serialise writers with an advisory lock (flock) on `<file>.lock`.
#ifndef SMOE_COORDINATOR_TOKENS_H_
#define SMOE_COORDINATOR_TOKENS_H_

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace smoe::coordinator {

enum class Role { kViewer, kWorker, kAdmin };

// "viewer" | "worker" | "admin".
const char* RoleName(Role role);
// InvalidArgument naming the value and the allowed roles.
absl::StatusOr<Role> ParseRole(absl::string_view name);

// Who a token belongs to. `fingerprint` is the token's SHA-256 (hex): it
// binds a dashboard session to the token it signed in with, so a token
// revoked and created again under the same name does not revive sessions.
struct Principal {
  std::string name;
  Role role = Role::kViewer;
  std::string fingerprint;
};

// One line of the tokens file.
struct TokenEntry {
  std::string name;
  Role role = Role::kViewer;
  absl::Time created = absl::UnixEpoch();
  std::string sha256_hex;
};

// SHA-256 of `token`, 64 lower-case hex digits.
std::string TokenSha256Hex(absl::string_view token);

// The name the admin token file's token has; reserved in the tokens file.
inline constexpr char kAdminTokenName[] = "admin";

// A token name: 1..64 of [a-z0-9._-], starting with a letter or digit, not
// kAdminTokenName. InvalidArgument naming the value otherwise.
absl::Status CheckTokenName(absl::string_view name);

// `<data_dir>/tokens`.
std::string TokensFile(const std::string& data_dir);

// Parses the tokens file (missing = no tokens). DataLoss naming the file and
// line for a malformed line.
absl::StatusOr<std::vector<TokenEntry>> ReadTokensFile(const std::string& path);

// The tokens file's text for `entries` (a header comment, then one line
// each).
std::string FormatTokensFile(const std::vector<TokenEntry>& entries);

// Creates a token of `role` named `name` (empty: "<role>-<8 hex digits>")
// in the tokens file and returns it; the file keeps only its hash.
// AlreadyExists when the name is taken.
struct CreatedToken {
  std::string name;
  std::string token;
};
absl::StatusOr<CreatedToken> CreateToken(const std::string& path,
                                         const std::string& name, Role role,
                                         absl::Time now);

// Removes the token named `name`. NotFound naming it when there is none.
absl::Status RevokeToken(const std::string& path, const std::string& name);

// A token file for one local client (`smoe up` gives its workers a worker
// token this way): when `token_path` holds a token that the tokens file
// knows under `name` with `role`, returns it; otherwise revokes any token
// named `name`, creates a new one and writes it to `token_path` (mode 0600,
// atomically).
absl::StatusOr<std::string> EnsureTokenFile(const std::string& tokens_file,
                                            const std::string& token_path,
                                            const std::string& name, Role role);

class TokenRegistry {
 public:
  // `admin_token`: the token file's token (role admin, name "admin").
  // `tokens_file`: the role tokens (may not exist yet; "" = none).
  TokenRegistry(std::string admin_token, std::string tokens_file);

  // The principal `token` belongs to, or nullopt. Re-reads the tokens file
  // when it changed since the last call (a malformed file is logged and
  // leaves the previous tokens in force).
  std::optional<Principal> Authenticate(absl::string_view token);
  // The principal named `name` (after the same re-read), or nullopt.
  std::optional<Principal> Find(absl::string_view name);

  // The key the dashboard's session cookies and CSRF tokens are MACed with:
  // the admin token (a new admin token ends every session).
  const std::string& session_key() const { return admin_token_; }

 private:
  void RefreshLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string admin_token_;
  const std::string admin_fingerprint_;
  const std::string tokens_file_;
  absl::Mutex mu_;
  // By fingerprint, and the file state they were read at.
  std::map<std::string, Principal> by_hash_ ABSL_GUARDED_BY(mu_);
  struct FileId {
    bool exists = false;
    int64_t mtime_ns = 0;
    int64_t size = 0;
    ino_t ino = 0;
    bool operator==(const FileId& o) const {
      return exists == o.exists && mtime_ns == o.mtime_ns && size == o.size &&
             ino == o.ino;
    }
  };
  std::optional<FileId> loaded_ ABSL_GUARDED_BY(mu_);
};

}  // namespace smoe::coordinator

#endif  // SMOE_COORDINATOR_TOKENS_H_
