// Copyright 2026 SMoE Lab authors.
#include "worker/trainer/checkpoint.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace smoe::trainer {
namespace {

constexpr char kMagic[8] = {'S', 'M', 'O', 'E', 'C', 'K', 'P', 'T'};
constexpr uint32_t kVersion = 1;

uint64_t Fnv1a(const std::string& a, const std::string& b) {
  uint64_t h = 1469598103934665603ULL;
  for (const std::string* s : {&a, &b}) {
    for (unsigned char c : *s) {
      h ^= c;
      h *= 1099511628211ULL;
    }
  }
  return h;
}

template <typename T>
void Append(std::string* out, T v) {
  char buf[sizeof(T)];
  std::memcpy(buf, &v, sizeof(T));
  out->append(buf, sizeof(T));
}

template <typename T>
bool Take(const std::string& in, size_t* pos, T* v) {
  if (in.size() - *pos < sizeof(T)) return false;
  std::memcpy(v, in.data() + *pos, sizeof(T));
  *pos += sizeof(T);
  return true;
}

// fsync of the directory holding `path`, so renames in it are durable.
absl::Status SyncDirectoryOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "."
                          : slash == 0               ? "/"
                                                     : path.substr(0, slash);
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    return absl::InternalError(
        absl::StrCat("open ", dir, ": ", std::strerror(errno)));
  }
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  if (rc != 0) {
    return absl::InternalError(
        absl::StrCat("fsync ", dir, ": ", std::strerror(err)));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status WriteCheckpoint(const std::string& path, const Checkpoint& ckpt) {
  std::string payload;
  std::string names;
  try {
    torch::serialize::OutputArchive archive;
    for (size_t i = 0; i < ckpt.tensors.size(); ++i) {
      // Archive keys must be plain identifiers; names go in their own section.
      archive.write(absl::StrCat("t", i),
                    ckpt.tensors[i].second.detach().to(at::kCPU));
      names += ckpt.tensors[i].first;
      names += '\n';
    }
    std::ostringstream os;
    archive.save_to(os);
    payload = os.str();
  } catch (const std::exception& e) {
    return absl::InternalError(
        absl::StrCat("serialising checkpoint failed: ", e.what()));
  }
  std::string bytes(kMagic, sizeof(kMagic));
  Append<uint32_t>(&bytes, kVersion);
  Append<uint64_t>(&bytes, ckpt.meta_json.size());
  bytes += ckpt.meta_json;
  Append<uint64_t>(&bytes, names.size());
  bytes += names;
  Append<uint64_t>(&bytes, payload.size());
  bytes += payload;
  Append<uint64_t>(&bytes, Fnv1a(ckpt.meta_json + names, payload));

  const std::string tmp = path + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    return absl::InternalError(
        absl::StrCat("open ", tmp, ": ", std::strerror(errno)));
  }
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd);
      return absl::InternalError(
          absl::StrCat("write ", tmp, ": ", std::strerror(err)));
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    return absl::InternalError(
        absl::StrCat("fsync/close ", tmp, ": ", std::strerror(errno)));
  }
  // The new file is durable: only now does the old one step back.
  const std::string prev = PreviousCheckpointPath(path);
  if (::rename(path.c_str(), prev.c_str()) != 0 && errno != ENOENT) {
    return absl::InternalError(absl::StrCat("rename ", path, " -> ", prev, ": ",
                                            std::strerror(errno)));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    return absl::InternalError(
        absl::StrCat("rename ", tmp, " -> ", path, ": ", std::strerror(errno)));
  }
  return SyncDirectoryOf(path);
}

std::string PreviousCheckpointPath(const std::string& path) {
  return path + ".prev";
}

absl::StatusOr<std::string> SetAsideCheckpoint(const std::string& path) {
  const std::string base =
      absl::StrCat(path, ".corrupt-", static_cast<int64_t>(std::time(nullptr)));
  std::string name = base;
  struct stat st;
  for (int i = 1; ::stat(name.c_str(), &st) == 0; ++i) {
    name = absl::StrCat(base, "-", i);
  }
  if (::rename(path.c_str(), name.c_str()) != 0) {
    return absl::InternalError(absl::StrCat("rename ", path, " -> ", name, ": ",
                                            std::strerror(errno)));
  }
  SyncDirectoryOf(path).IgnoreError();
  return name;
}

absl::StatusOr<Checkpoint> ReadCheckpoint(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("no checkpoint at ", path));
  std::string bytes((std::istreambuf_iterator<char>(in)),
                    std::istreambuf_iterator<char>());
  auto corrupt = [&](absl::string_view why) {
    return absl::DataLossError(
        absl::StrCat("checkpoint ", path, " is corrupt (", why, ")"));
  };
  size_t pos = 0;
  if (bytes.size() < sizeof(kMagic) ||
      std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) != 0) {
    return corrupt("bad magic");
  }
  pos = sizeof(kMagic);
  uint32_t version = 0;
  uint64_t meta_len = 0, payload_len = 0, hash = 0;
  if (!Take(bytes, &pos, &version)) return corrupt("truncated header");
  if (version != kVersion) {  // intact, from another trainer version
    return absl::FailedPreconditionError(
        absl::StrCat("checkpoint ", path, " has format version ", version,
                     "; this trainer reads version ", kVersion));
  }
  if (!Take(bytes, &pos, &meta_len) || bytes.size() - pos < meta_len) {
    return corrupt("truncated metadata");
  }
  Checkpoint ckpt;
  ckpt.meta_json = bytes.substr(pos, meta_len);
  pos += meta_len;
  uint64_t names_len = 0;
  if (!Take(bytes, &pos, &names_len) || bytes.size() - pos < names_len) {
    return corrupt("truncated names");
  }
  const std::string names = bytes.substr(pos, names_len);
  pos += names_len;
  if (!Take(bytes, &pos, &payload_len) || bytes.size() - pos < payload_len) {
    return corrupt("truncated tensors");
  }
  std::string payload = bytes.substr(pos, payload_len);
  pos += payload_len;
  if (!Take(bytes, &pos, &hash)) return corrupt("truncated checksum");
  if (pos != bytes.size()) return corrupt("trailing bytes");
  if (hash != Fnv1a(ckpt.meta_json + names, payload))
    return corrupt("checksum mismatch");
  try {
    torch::serialize::InputArchive archive;
    std::istringstream is(payload);
    archive.load_from(is, at::Device(at::kCPU));
    size_t i = 0;
    for (absl::string_view name :
         absl::StrSplit(names, '\n', absl::SkipEmpty())) {
      at::Tensor t;
      archive.read(absl::StrCat("t", i++), t);
      ckpt.tensors.emplace_back(std::string(name), t);
    }
  } catch (const std::exception& e) {
    return corrupt(e.what());
  }
  return ckpt;
}

}  // namespace smoe::trainer
