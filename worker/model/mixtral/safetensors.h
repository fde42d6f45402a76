// Copyright 2026 SMoE Lab authors.
//
// File: worker/model/mixtral/safetensors.h
//
// Reader and streaming writer for the safetensors format
// (https://github.com/huggingface/safetensors): an 8-byte little-endian
// header length N, N bytes of JSON
//   {"__metadata__": {str: str}?,
//    "NAME": {"dtype": "BF16"|"F16"|"F32", "shape": [..],
//             "data_offsets": [begin, end]}, ...}
// and then the data buffer; offsets are relative to the buffer start.
//
// SafetensorsFile mmaps the file read-only, validates the whole header once
// at Open (JSON, dtypes, offsets inside the buffer, sizes equal to
// numel * element size, no two tensors overlapping, each tensor's begin a
// multiple of its element size) and hands out tensors as copies converted to
// the caller's dtype/device (torch::from_blob over the mapping, then .to()).
// Dtypes other than BF16/F16/F32 are rejected at Open with the tensor's name.
// Every error names the file, the tensor (when there is one) and the problem.
//
// SafetensorsWriter streams: the header (all names, dtypes and shapes) is
// fixed up front, then tensors are appended one at a time in header order,
// so a checkpoint of any size is written with one tensor in memory.
//
// Thread safety: a SafetensorsFile is immutable after Open; Read may be called
// concurrently. A SafetensorsWriter is not thread-safe.
#ifndef SMOE_WORKER_MODEL_MIXTRAL_SAFETENSORS_H_
#define SMOE_WORKER_MODEL_MIXTRAL_SAFETENSORS_H_

#include <torch/types.h>

#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace smoe::model::mixtral {

// Returns "BF16", "F16" or "F32" for the three supported dtypes; an
// InvalidArgument error for any other dtype.
absl::StatusOr<std::string> SafetensorsDtypeName(torch::Dtype dtype);

// One tensor's header entry.
struct SafetensorsEntry {
  std::string name;
  torch::Dtype dtype = torch::kFloat32;
  std::vector<int64_t> shape;
  uint64_t begin = 0;  // byte offsets into the data buffer
  uint64_t end = 0;
};

class SafetensorsFile {
 public:
  // Maps `path` and validates its header (see the file comment).
  // Returns NotFound when the file does not exist, DataLoss for a corrupt or
  // truncated file, InvalidArgument for an unsupported dtype.
  static absl::StatusOr<std::unique_ptr<SafetensorsFile>> Open(
      const std::string& path);

  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;
  ~SafetensorsFile();

  const std::string& path() const { return path_; }
  // Tensors by name (the header's order is not kept; names are unique).
  const std::map<std::string, SafetensorsEntry>& entries() const {
    return entries_;
  }
  const std::map<std::string, std::string>& metadata() const {
    return metadata_;
  }
  bool Contains(const std::string& name) const {
    return entries_.count(name) != 0;
  }

  // Returns a copy of tensor `name` converted to `options` (dtype, device);
  // the result does not reference the mapping. NotFound names the file and
  // the tensor when it is absent.
  absl::StatusOr<torch::Tensor> Read(const std::string& name,
                                     const torch::TensorOptions& options) const;

  // Like Read, but only rows [first, first + count) of the first dimension
  // (e.g. some experts of a packed [E, ...] tensor); only those bytes of the
  // mapping are touched. InvalidArgument names the tensor when the range is
  // outside the first dimension or the tensor is 0-d.
  absl::StatusOr<torch::Tensor> ReadRows(
      const std::string& name, int64_t first, int64_t count,
      const torch::TensorOptions& options) const;

 private:
  SafetensorsFile() = default;
  // Copies the `shape` tensor of e.dtype starting at data byte `begin`.
  absl::StatusOr<torch::Tensor> ReadBytes(
      const SafetensorsEntry& e, uint64_t begin,
      const std::vector<int64_t>& shape,
      const torch::TensorOptions& options) const;

  std::string path_;
  void* map_ = nullptr;  // owned; munmap in the destructor
  uint64_t map_size_ = 0;
  uint64_t data_start_ = 0;  // 8 + header length
  std::map<std::string, SafetensorsEntry> entries_;
  std::map<std::string, std::string> metadata_;
};

class SafetensorsWriter {
 public:
  // A tensor to be written: name, on-disk dtype and shape.
  struct Spec {
    std::string name;
    torch::Dtype dtype = torch::kFloat32;
    std::vector<int64_t> shape;
  };

  // Creates `path` and writes the header for `specs` (in that order, data
  // packed without gaps). `metadata` goes to "__metadata__" when not empty.
  // REQUIRES: names unique; dtypes BF16/F16/F32.
  static absl::StatusOr<std::unique_ptr<SafetensorsWriter>> Create(
      const std::string& path, std::vector<Spec> specs,
      const std::map<std::string, std::string>& metadata = {});

  SafetensorsWriter(const SafetensorsWriter&) = delete;
  SafetensorsWriter& operator=(const SafetensorsWriter&) = delete;
  ~SafetensorsWriter();

  // Appends the next tensor. `tensor` must match the next spec's name and
  // shape; it is converted to the spec's dtype (and moved to the CPU).
  absl::Status Write(const std::string& name, const torch::Tensor& tensor);

  // Flushes and closes; FailedPrecondition if not every tensor was written.
  absl::Status Close();

  // Bytes of the data buffer for `specs` (sum of numel * element size).
  static uint64_t DataBytes(const std::vector<Spec>& specs);

 private:
  SafetensorsWriter() = default;

  std::string path_;
  std::FILE* file_ = nullptr;
  std::vector<Spec> specs_;
  size_t next_ = 0;
};

// Writes all `tensors` (name -> tensor, each stored in its own dtype, which
// must be BF16/F16/F32) to `path` in one call.
absl::Status WriteSafetensors(
    const std::string& path,
    const std::vector<std::pair<std::string, torch::Tensor>>& tensors,
    const std::map<std::string, std::string>& metadata = {});

}  // namespace smoe::model::mixtral

#endif  // SMOE_WORKER_MODEL_MIXTRAL_SAFETENSORS_H_
