// Copyright 2026 SMoE Lab authors.
#include "common/api_token.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace smoe {
namespace {

absl::Status ErrnoError(absl::string_view what, const std::string& path) {
  return absl::InternalError(
      absl::StrCat(what, " '", path, "': ", std::strerror(errno)));
}

}  // namespace

absl::StatusOr<std::string> GenerateApiToken() {
  int fd = ::open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoError("open", "/dev/urandom");
  unsigned char bytes[32];
  size_t got = 0;
  while (got < sizeof(bytes)) {
    ssize_t n = ::read(fd, bytes + got, sizeof(bytes) - got);
    if (n <= 0) {
      if (n < 0 && errno == EINTR) continue;
      ::close(fd);
      return ErrnoError("read", "/dev/urandom");
    }
    got += static_cast<size_t>(n);
  }
  ::close(fd);
  return absl::StrCat(
      "smoe_", absl::BytesToHexString(absl::string_view(
                   reinterpret_cast<const char*>(bytes), sizeof(bytes))));
}

absl::Status CheckTokenStrength(absl::string_view token,
                                absl::string_view source) {
  bool seen[256] = {};
  size_t distinct = 0;
  for (unsigned char c : token) {
    if (!seen[c]) ++distinct;
    seen[c] = true;
  }
  if (token.size() >= kMinTokenLength && distinct >= kMinTokenDistinctChars) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "token file '", source, "' holds a weak API token (", token.size(),
      " characters, ", distinct, " distinct): a token needs at least ",
      kMinTokenLength, " characters with ", kMinTokenDistinctChars,
      " distinct ones; delete the file to have a strong one generated, or "
      "write one with `openssl rand -hex 32`"));
}

absl::StatusOr<std::string> LoadOrCreateTokenFile(const std::string& path,
                                                  bool* created) {
  *created = false;
  struct stat st;
  if (::stat(path.c_str(), &st) == 0) {
    if ((st.st_mode & 077) != 0) {
      return absl::PermissionDeniedError(absl::StrCat(
          "token file '", path, "' is readable by group/others (mode ",
          absl::StrCat(absl::Hex(st.st_mode & 0777)), "); chmod 600 it"));
    }
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    std::string token(absl::StripAsciiWhitespace(ss.str()));
    if (token.empty()) {
      return absl::FailedPreconditionError(
          absl::StrCat("token file '", path, "' is empty"));
    }
    if (absl::Status st = CheckTokenStrength(token, path); !st.ok()) return st;
    return token;
  }
  auto token = GenerateApiToken();
  if (!token.ok()) return token.status();
  const std::string tmp = path + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return ErrnoError("create", tmp);
  const std::string line = *token + "\n";
  if (::write(fd, line.data(), line.size()) !=
          static_cast<ssize_t>(line.size()) ||
      ::fsync(fd) != 0) {
    ::close(fd);
    return ErrnoError("write", tmp);
  }
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0)
    return ErrnoError("rename", tmp);
  *created = true;
  return *token;
}

namespace {

bool IsRegularFile(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

}  // namespace

std::string DefaultTokenFile(const std::string& start_dir, const char* home) {
  std::string dir = start_dir;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  while (!dir.empty()) {
    const std::string base = dir == "/" ? "" : dir;
    if (IsRegularFile(base + "/smoe-data/token")) {
      return base + "/smoe-data/token";
    }
    if (IsRegularFile(base + "/token") && IsRegularFile(base + "/smoe.db")) {
      return base + "/token";
    }
    if (dir == "/") break;
    const size_t slash = dir.rfind('/');
    if (slash == std::string::npos) break;
    dir = slash == 0 ? "/" : dir.substr(0, slash);
  }
  return absl::StrCat(home != nullptr ? home : ".", "/.smoe/token");
}

std::string DefaultTokenFile() {
  char cwd[4096];
  const std::string start = ::getcwd(cwd, sizeof(cwd)) != nullptr ? cwd : "";
  return DefaultTokenFile(start, std::getenv("HOME"));
}

namespace {
// The trimmed contents of `path`, or "" when it cannot be read.
std::string ReadTrimmed(const std::string& path) {
  std::ifstream in(path);
  if (!in) return "";
  std::stringstream ss;
  ss << in.rdbuf();
  return std::string(absl::StripAsciiWhitespace(ss.str()));
}
}  // namespace

absl::StatusOr<ClientToken> ResolveClientToken(
    const std::string& explicit_token_file) {
  if (!explicit_token_file.empty()) {
    std::string token = ReadTrimmed(explicit_token_file);
    if (token.empty()) {
      return absl::NotFoundError(
          absl::StrCat("no API token in --token-file '", explicit_token_file,
                       "' (missing, unreadable or empty; an explicit "
                       "--token-file wins over $SMOE_TOKEN)"));
    }
    return ClientToken{std::move(token),
                       absl::StrCat("token file '", explicit_token_file, "'")};
  }
  const char* env = std::getenv("SMOE_TOKEN");
  if (env != nullptr && *env != '\0') {
    return ClientToken{std::string(absl::StripAsciiWhitespace(env)),
                       "$SMOE_TOKEN"};
  }
  const std::string file = DefaultTokenFile();
  std::string token = ReadTrimmed(file);
  if (!token.empty()) {
    return ClientToken{std::move(token),
                       absl::StrCat("token file '", file, "'")};
  }
  return absl::NotFoundError(absl::StrCat(
      "no API token: set SMOE_TOKEN, pass --token-file or create the token "
      "file '",
      file, "' (the coordinator prints the token on first start)"));
}

bool TokenEquals(absl::string_view a, absl::string_view b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  const size_t n = a.size() < b.size() ? a.size() : b.size();
  for (size_t i = 0; i < n; ++i) {
    diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  }
  return diff == 0;
}

absl::Status CheckApiKeyEnvName(absl::string_view name) {
  static constexpr absl::string_view kSuffix = "_API_KEY";
  bool ok = name.size() > kSuffix.size() && absl::EndsWith(name, kSuffix) &&
            name[0] >= 'A' && name[0] <= 'Z';
  for (char c : name) {
    ok = ok && ((c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_');
  }
  if (ok) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "grader_api_key_env: '", name,
      "' is not an API-key variable name (upper-case letters, digits and '_', "
      "ending in _API_KEY, e.g. OPENAI_API_KEY): a sweep may only send such "
      "a variable to its grader"));
}

}  // namespace smoe
