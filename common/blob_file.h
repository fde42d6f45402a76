// Copyright 2026 SMoE Lab authors.
//
// File: common/blob_file.h
//
// Helpers for moving checkpoint blobs between the worker daemon and the
// coordinator (docs/reliability-checkpoints.md): an incremental SHA-256, a
// file's SHA-256, fsync of a file or directory, atomic copy (temp + fsync +
// rename + directory fsync), setting a bad file aside, and the rule for the
// file names a trainer may give its checkpoint.
//
// Thread safety: Sha256 is thread-compatible; the functions are thread-safe.
#ifndef SMOE_COMMON_BLOB_FILE_H_
#define SMOE_COMMON_BLOB_FILE_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace smoe {

// Payload bytes per streamed message (gRPC chunk, copy buffer).
inline constexpr size_t kBlobChunkBytes = 1 << 20;

class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  void Update(absl::string_view data);
  // Lowercase hex of the digest of everything passed to Update. Call once.
  std::string HexDigest();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Lowercase hex SHA-256 of `data`.
std::string Sha256Hex(absl::string_view data);

// SHA-256 (lowercase hex) and size of the file at `path`. NotFound when it
// does not exist; Internal naming the path for a read error.
struct FileDigest {
  std::string sha256;
  int64_t bytes = 0;
};
absl::StatusOr<FileDigest> DigestFile(const std::string& path);

// fsyncs the file or directory at `path`.
absl::Status FsyncPath(const std::string& path);

// The directory part of `path` ("." when none).
std::string DirName(const std::string& path);

// Copies `from` to `to` atomically: writes `to`.tmp, fsyncs it, renames it
// to `to` and fsyncs the directory. Returns the copy's digest.
absl::StatusOr<FileDigest> CopyFileAtomic(const std::string& from,
                                          const std::string& to);

// Renames `path` to `path`.corrupt-<unix seconds> (-N appended when that
// exists) and returns the new name.
absl::StatusOr<std::string> SetAsideFile(const std::string& path);

// OK for a checkpoint file name a trainer may name in its checkpoint event:
// 1..128 characters of [A-Za-z0-9._-], not starting with '.'; else
// InvalidArgument naming `field` and the value.
absl::Status ValidateBlobFileName(absl::string_view name,
                                  absl::string_view field);

// True for a lowercase hex SHA-256 (64 characters).
bool IsSha256Hex(absl::string_view s);

}  // namespace smoe

#endif  // SMOE_COMMON_BLOB_FILE_H_
