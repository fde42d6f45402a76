// Copyright 2026 SMoE Lab authors.
#include "coordinator/tokens.h"

#include <fcntl.h>
#include <openssl/sha.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/api_token.h"
#include "common/logging.h"

namespace smoe::coordinator {
namespace {

absl::Status ErrnoError(absl::string_view what, const std::string& path) {
  return absl::InternalError(
      absl::StrCat("cannot ", what, " '", path, "': ", std::strerror(errno)));
}

// Holds an exclusive flock on `<path>.lock` while alive.
class FileLock {
 public:
  static absl::StatusOr<FileLock> Acquire(const std::string& path) {
    const std::string lock = path + ".lock";
    int fd = ::open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) return ErrnoError("open", lock);
    while (::flock(fd, LOCK_EX) != 0) {
      if (errno != EINTR) {
        ::close(fd);
        return ErrnoError("lock", lock);
      }
    }
    return FileLock(fd);
  }
  FileLock(FileLock&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  FileLock& operator=(FileLock&&) = delete;
  ~FileLock() {
    if (fd_ >= 0) ::close(fd_);  // releases the lock
  }

 private:
  explicit FileLock(int fd) : fd_(fd) {}
  int fd_;
};

}  // namespace

std::string FormatTokensFile(const std::vector<TokenEntry>& entries) {
  std::string out =
      "# SMoE Lab API tokens (docs/roles.md): name, role, created (unix s), "
      "sha256 of the token.\n# Written by `smoe token`; holds no secrets.\n";
  for (const TokenEntry& e : entries) {
    absl::StrAppend(&out, e.name, "\t", RoleName(e.role), "\t",
                    absl::ToUnixSeconds(e.created), "\t", e.sha256_hex, "\n");
  }
  return out;
}

namespace {

// Replaces `path` with `content` atomically (tmp file, fsync, rename).
absl::Status WriteAtomically(const std::string& path,
                             const std::string& content) {
  const std::string tmp = path + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return ErrnoError("create", tmp);
  const bool ok = ::write(fd, content.data(), content.size()) ==
                      static_cast<ssize_t>(content.size()) &&
                  ::fsync(fd) == 0;
  ::close(fd);
  if (!ok) return ErrnoError("write", tmp);
  if (::rename(tmp.c_str(), path.c_str()) != 0)
    return ErrnoError("rename", tmp);
  return absl::OkStatus();
}

bool IsHex64(absl::string_view s) {
  if (s.size() != 64) return false;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

}  // namespace

const char* RoleName(Role role) {
  switch (role) {
    case Role::kViewer:
      return "viewer";
    case Role::kWorker:
      return "worker";
    case Role::kAdmin:
      return "admin";
  }
  return "?";
}

absl::StatusOr<Role> ParseRole(absl::string_view name) {
  if (name == "viewer") return Role::kViewer;
  if (name == "worker") return Role::kWorker;
  if (name == "admin") return Role::kAdmin;
  return absl::InvalidArgumentError(absl::StrCat(
      "role: '", name, "' is not a role (viewer, worker or admin)"));
}

std::string TokenSha256Hex(absl::string_view token) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(token.data()), token.size(),
         digest);
  return absl::BytesToHexString(
      absl::string_view(reinterpret_cast<const char*>(digest), sizeof(digest)));
}

absl::Status CheckTokenName(absl::string_view name) {
  bool ok = !name.empty() && name.size() <= 64 &&
            absl::ascii_isalnum(static_cast<unsigned char>(name[0]));
  for (char c : name) {
    ok = ok && ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' ||
                c == '_' || c == '-');
  }
  if (!ok) {
    return absl::InvalidArgumentError(absl::StrCat(
        "token name: '", name.substr(0, 80),
        "' must be 1..64 characters of [a-z0-9._-], starting with a letter or "
        "digit"));
  }
  if (name == kAdminTokenName) {
    return absl::InvalidArgumentError(
        "token name: 'admin' is the data directory's token file; choose "
        "another name");
  }
  return absl::OkStatus();
}

std::string TokensFile(const std::string& data_dir) {
  return data_dir + "/tokens";
}

absl::StatusOr<std::vector<TokenEntry>> ReadTokensFile(
    const std::string& path) {
  std::vector<TokenEntry> out;
  struct stat st;
  if (::stat(path.c_str(), &st) != 0 && errno == ENOENT) return out;
  std::ifstream in(path);
  if (!in) return ErrnoError("read", path);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    absl::string_view l = absl::StripAsciiWhitespace(line);
    if (l.empty() || l[0] == '#') continue;
    std::vector<absl::string_view> f = absl::StrSplit(l, '\t');
    auto bad = [&](absl::string_view why) {
      return absl::DataLossError(
          absl::StrCat("tokens file '", path, "' line ", n, ": ", why));
    };
    if (f.size() != 4) return bad("expected 4 tab-separated fields");
    TokenEntry e;
    e.name = std::string(f[0]);
    if (absl::Status s = CheckTokenName(e.name); !s.ok()) {
      return bad(s.message());
    }
    auto role = ParseRole(f[1]);
    if (!role.ok()) return bad(role.status().message());
    e.role = *role;
    int64_t created = 0;
    if (!absl::SimpleAtoi(f[2], &created)) return bad("bad created time");
    e.created = absl::FromUnixSeconds(created);
    if (!IsHex64(f[3])) return bad("the hash is not 64 hex digits");
    e.sha256_hex = std::string(f[3]);
    out.push_back(std::move(e));
  }
  return out;
}

absl::StatusOr<CreatedToken> CreateToken(const std::string& path,
                                         const std::string& name, Role role,
                                         absl::Time now) {
  auto token = GenerateApiToken();
  if (!token.ok()) return token.status();
  CreatedToken created;
  created.token = *token;
  created.name = name.empty()
                     ? absl::StrCat(RoleName(role), "-",
                                    TokenSha256Hex(*token).substr(0, 8))
                     : name;
  if (absl::Status s = CheckTokenName(created.name); !s.ok()) return s;
  auto lock = FileLock::Acquire(path);
  if (!lock.ok()) return lock.status();
  auto entries = ReadTokensFile(path);
  if (!entries.ok()) return entries.status();
  for (const TokenEntry& e : *entries) {
    if (e.name == created.name) {
      return absl::AlreadyExistsError(
          absl::StrCat("a token named '", created.name,
                       "' exists; revoke it first or choose another name"));
    }
  }
  TokenEntry e;
  e.name = created.name;
  e.role = role;
  e.created = absl::FromUnixSeconds(absl::ToUnixSeconds(now));
  e.sha256_hex = TokenSha256Hex(*token);
  entries->push_back(e);
  if (absl::Status s = WriteAtomically(path, FormatTokensFile(*entries));
      !s.ok()) {
    return s;
  }
  return created;
}

absl::Status RevokeToken(const std::string& path, const std::string& name) {
  auto lock = FileLock::Acquire(path);
  if (!lock.ok()) return lock.status();
  auto entries = ReadTokensFile(path);
  if (!entries.ok()) return entries.status();
  std::vector<TokenEntry> kept;
  for (TokenEntry& e : *entries) {
    if (e.name != name) kept.push_back(std::move(e));
  }
  if (kept.size() == entries->size()) {
    return absl::NotFoundError(absl::StrCat(
        "no token named '", name.substr(0, 80), "' in '", path,
        "' (`smoe token list`; the admin token file is not revocable: "
        "replace it and restart the coordinator)"));
  }
  return WriteAtomically(path, FormatTokensFile(kept));
}

absl::StatusOr<std::string> EnsureTokenFile(const std::string& tokens_file,
                                            const std::string& token_path,
                                            const std::string& name,
                                            Role role) {
  {
    std::ifstream in(token_path);
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string token(absl::StripAsciiWhitespace(ss.str()));
    auto entries = ReadTokensFile(tokens_file);
    if (!entries.ok()) return entries.status();
    if (!token.empty()) {
      const std::string hash = TokenSha256Hex(token);
      for (const TokenEntry& e : *entries) {
        if (e.name == name && e.role == role && e.sha256_hex == hash) {
          return token;
        }
      }
    }
    for (const TokenEntry& e : *entries) {
      if (e.name == name) {
        if (absl::Status st = RevokeToken(tokens_file, name); !st.ok()) {
          return st;
        }
        break;
      }
    }
  }
  auto created = CreateToken(tokens_file, name, role, absl::Now());
  if (!created.ok()) return created.status();
  if (absl::Status st = WriteAtomically(token_path, created->token + "\n");
      !st.ok()) {
    return st;
  }
  return created->token;
}

TokenRegistry::TokenRegistry(std::string admin_token, std::string tokens_file)
    : admin_token_(std::move(admin_token)),
      admin_fingerprint_(TokenSha256Hex(admin_token_)),
      tokens_file_(std::move(tokens_file)) {}

void TokenRegistry::RefreshLocked() {
  if (tokens_file_.empty()) return;
  FileId id;
  struct stat st;
  if (::stat(tokens_file_.c_str(), &st) == 0) {
    id.exists = true;
    id.mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 +
                  st.st_mtim.tv_nsec;
    // ctime too: a rename (how the file is written) always changes it.
    id.mtime_ns ^= (static_cast<int64_t>(st.st_ctim.tv_sec) * 1000000000 +
                    st.st_ctim.tv_nsec)
                   << 1;
    id.size = st.st_size;
    id.ino = st.st_ino;
  }
  if (loaded_.has_value() && *loaded_ == id) return;
  auto entries = ReadTokensFile(tokens_file_);
  if (!entries.ok()) {
    // Keep the last good set: a half-edited file must not lock everyone out
    // (nor let revoked tokens back in: they were removed from by_hash_).
    SMOE_LOG(ERROR) << entries.status().message()
                    << "; keeping the tokens read before";
    loaded_ = id;
    return;
  }
  by_hash_.clear();
  for (const TokenEntry& e : *entries) {
    by_hash_[e.sha256_hex] = Principal{e.name, e.role, e.sha256_hex};
  }
  loaded_ = id;
}

std::optional<Principal> TokenRegistry::Authenticate(absl::string_view token) {
  if (token.empty()) return std::nullopt;
  if (TokenEquals(token, admin_token_)) {
    return Principal{kAdminTokenName, Role::kAdmin, admin_fingerprint_};
  }
  // Looked up by hash: the hash reveals nothing about the token, so the map
  // lookup's timing does not either.
  const std::string hash = TokenSha256Hex(token);
  absl::MutexLock lock(&mu_);
  RefreshLocked();
  auto it = by_hash_.find(hash);
  if (it == by_hash_.end()) return std::nullopt;
  return it->second;
}

std::optional<Principal> TokenRegistry::Find(absl::string_view name) {
  if (name == kAdminTokenName) {
    return Principal{kAdminTokenName, Role::kAdmin, admin_fingerprint_};
  }
  absl::MutexLock lock(&mu_);
  RefreshLocked();
  for (const auto& [hash, p] : by_hash_) {
    if (p.name == name) return p;
  }
  return std::nullopt;
}

}  // namespace smoe::coordinator
