// Copyright 2026 SMoE Lab authors.
#include "common/blob_file.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace smoe {
namespace {

absl::Status Errno(absl::string_view what, const std::string& path) {
  return absl::InternalError(
      absl::StrCat("cannot ", what, " '", path, "': ", std::strerror(errno)));
}

std::string Hex(const unsigned char* d, unsigned int n) {
  static const char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * n);
  for (unsigned int i = 0; i < n; ++i) {
    out.push_back(kDigits[d[i] >> 4]);
    out.push_back(kDigits[d[i] & 15]);
  }
  return out;
}

}  // namespace

struct Sha256::Impl {
  EVP_MD_CTX* ctx = nullptr;
};

Sha256::Sha256() : impl_(std::make_unique<Impl>()) {
  impl_->ctx = EVP_MD_CTX_new();
  EVP_DigestInit_ex(impl_->ctx, EVP_sha256(), nullptr);
}

Sha256::~Sha256() { EVP_MD_CTX_free(impl_->ctx); }

void Sha256::Update(absl::string_view data) {
  EVP_DigestUpdate(impl_->ctx, data.data(), data.size());
}

std::string Sha256::HexDigest() {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_DigestFinal_ex(impl_->ctx, digest, &len);
  return Hex(digest, len);
}

std::string Sha256Hex(absl::string_view data) {
  Sha256 h;
  h.Update(data);
  return h.HexDigest();
}

absl::StatusOr<FileDigest> DigestFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) {
      return absl::NotFoundError(absl::StrCat("no file '", path, "'"));
    }
    return Errno("open", path);
  }
  Sha256 h;
  FileDigest out;
  std::vector<char> buf(kBlobChunkBytes);
  while (true) {
    const ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      absl::Status st = Errno("read", path);
      ::close(fd);
      return st;
    }
    if (n == 0) break;
    h.Update(absl::string_view(buf.data(), static_cast<size_t>(n)));
    out.bytes += n;
  }
  ::close(fd);
  out.sha256 = h.HexDigest();
  return out;
}

absl::Status FsyncPath(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Errno("open", path);
  const int rc = ::fsync(fd);
  absl::Status st = rc == 0 ? absl::OkStatus() : Errno("fsync", path);
  ::close(fd);
  return st;
}

std::string DirName(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

absl::StatusOr<FileDigest> CopyFileAtomic(const std::string& from,
                                          const std::string& to) {
  const int in = ::open(from.c_str(), O_RDONLY | O_CLOEXEC);
  if (in < 0) {
    if (errno == ENOENT) {
      return absl::NotFoundError(absl::StrCat("no file '", from, "'"));
    }
    return Errno("open", from);
  }
  const std::string tmp = to + ".tmp";
  const int out =
      ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (out < 0) {
    absl::Status st = Errno("create", tmp);
    ::close(in);
    return st;
  }
  Sha256 h;
  FileDigest d;
  std::vector<char> buf(kBlobChunkBytes);
  absl::Status st;
  while (st.ok()) {
    const ssize_t n = ::read(in, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      st = Errno("read", from);
      break;
    }
    if (n == 0) break;
    h.Update(absl::string_view(buf.data(), static_cast<size_t>(n)));
    d.bytes += n;
    ssize_t off = 0;
    while (off < n) {
      const ssize_t w = ::write(out, buf.data() + off, n - off);
      if (w < 0 && errno == EINTR) continue;
      if (w < 0) {
        st = Errno("write", tmp);
        break;
      }
      off += w;
    }
  }
  ::close(in);
  if (st.ok() && ::fsync(out) != 0) st = Errno("fsync", tmp);
  ::close(out);
  if (st.ok() && ::rename(tmp.c_str(), to.c_str()) != 0) {
    st = Errno("rename into place", to);
  }
  if (!st.ok()) {
    ::unlink(tmp.c_str());
    return st;
  }
  if (absl::Status s = FsyncPath(DirName(to)); !s.ok()) return s;
  d.sha256 = h.HexDigest();
  return d;
}

absl::StatusOr<std::string> SetAsideFile(const std::string& path) {
  const std::string base =
      absl::StrCat(path, ".corrupt-", absl::ToUnixSeconds(absl::Now()));
  std::string target = base;
  struct stat st;
  for (int i = 1; ::lstat(target.c_str(), &st) == 0; ++i) {
    target = absl::StrCat(base, "-", i);
  }
  if (::rename(path.c_str(), target.c_str()) != 0) {
    return Errno("set aside", path);
  }
  return target;
}

absl::Status ValidateBlobFileName(absl::string_view name,
                                  absl::string_view field) {
  bool ok = !name.empty() && name.size() <= 128 && name.front() != '.';
  for (char c : name) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '.' &&
        c != '_' && c != '-') {
      ok = false;
    }
  }
  if (ok) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      field, ": '", name.substr(0, 64), name.size() > 64 ? "..." : "",
      "' is not a checkpoint file name (1..128 characters of [A-Za-z0-9._-], "
      "not starting with '.')"));
}

bool IsSha256Hex(absl::string_view s) {
  if (s.size() != 64) return false;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

}  // namespace smoe
