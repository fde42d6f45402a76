// Copyright 2026 SMoE Lab authors.
#include "worker/model/mixtral/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace smoe::model::mixtral {
namespace {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "safetensors is little-endian; big-endian hosts need swaps");

// The reference implementation refuses headers above 100 MB.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;

absl::StatusOr<torch::Dtype> ParseDtype(const std::string& s,
                                        const std::string& where) {
  if (s == "BF16") return torch::kBFloat16;
  if (s == "F16") return torch::kFloat16;
  if (s == "F32") return torch::kFloat32;
  return absl::InvalidArgumentError(absl::StrCat(
      where, ": dtype '", s, "' is not supported (BF16, F16, F32 only)"));
}

uint64_t Numel(const std::vector<int64_t>& shape) {
  uint64_t n = 1;
  for (int64_t d : shape) n *= static_cast<uint64_t>(d);
  return n;
}

std::string ShapeString(const std::vector<int64_t>& shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ", "), "]");
}

}  // namespace

absl::StatusOr<std::string> SafetensorsDtypeName(torch::Dtype dtype) {
  if (dtype == torch::kBFloat16) return std::string("BF16");
  if (dtype == torch::kFloat16) return std::string("F16");
  if (dtype == torch::kFloat32) return std::string("F32");
  return absl::InvalidArgumentError(
      absl::StrCat("dtype ", c10::toString(dtype),
                   " cannot be stored (BF16, F16, F32 only)"));
}

// ---- reader
// --------------------------------------------------------------------

absl::StatusOr<std::unique_ptr<SafetensorsFile>> SafetensorsFile::Open(
    const std::string& path) {
  std::unique_ptr<SafetensorsFile> f(new SafetensorsFile());
  f->path_ = path;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    if (err == ENOENT) {
      return absl::NotFoundError(absl::StrCat(path, ": no such file"));
    }
    return absl::UnavailableError(
        absl::StrCat(path, ": cannot open: ", std::strerror(err)));
  }
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return absl::UnavailableError(
        absl::StrCat(path, ": fstat: ", std::strerror(err)));
  }
  f->map_size_ = static_cast<uint64_t>(st.st_size);
  if (f->map_size_ < 8) {
    ::close(fd);
    return absl::DataLossError(
        absl::StrCat(path, ": truncated: ", f->map_size_,
                     " bytes, shorter than the 8-byte header length"));
  }
  void* map = ::mmap(nullptr, f->map_size_, PROT_READ, MAP_PRIVATE, fd, 0);
  const int map_err = errno;
  ::close(fd);
  if (map == MAP_FAILED) {
    return absl::UnavailableError(
        absl::StrCat(path, ": mmap: ", std::strerror(map_err)));
  }
  f->map_ = map;
  const auto* bytes = static_cast<const unsigned char*>(map);

  uint64_t header_len = 0;
  std::memcpy(&header_len, bytes, 8);
  if (header_len > kMaxHeaderBytes || header_len > f->map_size_ - 8) {
    return absl::DataLossError(
        absl::StrCat(path, ": bad header length ", header_len, " (file has ",
                     f->map_size_, " bytes; limit ", kMaxHeaderBytes, ")"));
  }
  f->data_start_ = 8 + header_len;
  const uint64_t data_size = f->map_size_ - f->data_start_;

  const auto header = nlohmann::json::parse(
      reinterpret_cast<const char*>(bytes + 8),
      reinterpret_cast<const char*>(bytes + 8 + header_len), nullptr,
      /*allow_exceptions=*/false);
  if (header.is_discarded() || !header.is_object()) {
    return absl::DataLossError(
        absl::StrCat(path, ": header is not a JSON object"));
  }
  for (const auto& [key, value] : header.items()) {
    if (key == "__metadata__") {
      if (!value.is_object()) {
        return absl::DataLossError(
            absl::StrCat(path, ": __metadata__ is not an object"));
      }
      for (const auto& [mk, mv] : value.items()) {
        if (!mv.is_string()) {
          return absl::DataLossError(absl::StrCat(
              path, ": __metadata__ value for '", mk, "' is not a string"));
        }
        f->metadata_[mk] = mv.get<std::string>();
      }
      continue;
    }
    const std::string where = absl::StrCat(path, ": tensor '", key, "'");
    if (!value.is_object() || !value.contains("dtype") ||
        !value["dtype"].is_string() || !value.contains("shape") ||
        !value["shape"].is_array() || !value.contains("data_offsets") ||
        !value["data_offsets"].is_array() ||
        value["data_offsets"].size() != 2) {
      return absl::DataLossError(absl::StrCat(
          where, ": header entry needs dtype, shape and data_offsets [b, e]"));
    }
    SafetensorsEntry e;
    e.name = key;
    auto dtype = ParseDtype(value["dtype"].get<std::string>(), where);
    if (!dtype.ok()) return dtype.status();
    e.dtype = *dtype;
    for (const auto& d : value["shape"]) {
      if (!d.is_number_unsigned()) {
        return absl::DataLossError(
            absl::StrCat(where, ": shape entry ", d.dump(),
                         " is not a non-negative integer"));
      }
      e.shape.push_back(d.get<int64_t>());
    }
    for (int i = 0; i < 2; ++i) {
      if (!value["data_offsets"][i].is_number_unsigned()) {
        return absl::DataLossError(
            absl::StrCat(where, ": data_offsets ", value["data_offsets"].dump(),
                         " are not non-negative integers"));
      }
    }
    e.begin = value["data_offsets"][0].get<uint64_t>();
    e.end = value["data_offsets"][1].get<uint64_t>();
    const uint64_t elem = c10::elementSize(e.dtype);
    if (e.begin > e.end || e.end > data_size) {
      return absl::DataLossError(
          absl::StrCat(where, ": data_offsets [", e.begin, ", ", e.end,
                       "] out of range (data buffer has ", data_size,
                       " bytes; truncated file?)"));
    }
    if (e.end - e.begin != Numel(e.shape) * elem) {
      return absl::DataLossError(absl::StrCat(
          where, ": data_offsets [", e.begin, ", ", e.end, "] hold ",
          e.end - e.begin, " bytes but shape ", ShapeString(e.shape), " ",
          value["dtype"].get<std::string>(), " needs ", Numel(e.shape) * elem));
    }
    if (e.begin % elem != 0) {
      return absl::DataLossError(
          absl::StrCat(where, ": misaligned data: offset ", e.begin,
                       " is not a multiple of the element size ", elem));
    }
    f->entries_.emplace(key, std::move(e));
  }
  // NOTE: overlap check over entries sorted by begin (empty tensors skip).
  std::vector<const SafetensorsEntry*> by_begin;
  for (const auto& [name, e] : f->entries_) {
    if (e.end > e.begin) by_begin.push_back(&e);
  }
  std::sort(by_begin.begin(), by_begin.end(),
            [](const SafetensorsEntry* a, const SafetensorsEntry* b) {
              return a->begin < b->begin;
            });
  for (size_t i = 1; i < by_begin.size(); ++i) {
    if (by_begin[i]->begin < by_begin[i - 1]->end) {
      return absl::DataLossError(
          absl::StrCat(path, ": tensors '", by_begin[i - 1]->name, "' [",
                       by_begin[i - 1]->begin, ", ", by_begin[i - 1]->end,
                       ") and '", by_begin[i]->name, "' [", by_begin[i]->begin,
                       ", ", by_begin[i]->end, ") overlap"));
    }
  }
  return f;
}

SafetensorsFile::~SafetensorsFile() {
  if (map_ != nullptr) ::munmap(map_, map_size_);
}

absl::StatusOr<torch::Tensor> SafetensorsFile::Read(
    const std::string& name, const torch::TensorOptions& options) const {
  auto it = entries_.find(name);
  if (it == entries_.end()) {
    return absl::NotFoundError(
        absl::StrCat(path_, ": missing tensor '", name, "'"));
  }
  const SafetensorsEntry& e = it->second;
  return ReadBytes(e, e.begin, e.shape, options);
}

absl::StatusOr<torch::Tensor> SafetensorsFile::ReadRows(
    const std::string& name, int64_t first, int64_t count,
    const torch::TensorOptions& options) const {
  auto it = entries_.find(name);
  if (it == entries_.end()) {
    return absl::NotFoundError(
        absl::StrCat(path_, ": missing tensor '", name, "'"));
  }
  const SafetensorsEntry& e = it->second;
  if (e.shape.empty() || first < 0 || count < 0 || first + count > e.shape[0]) {
    return absl::InvalidArgumentError(
        absl::StrCat(path_, ": tensor '", name, "': rows [", first, ", ",
                     first + count, ") outside its first dimension (",
                     e.shape.empty() ? int64_t{0} : e.shape[0], ")"));
  }
  std::vector<int64_t> shape = e.shape;
  shape[0] = count;
  const uint64_t row_bytes =
      e.shape[0] == 0 ? 0 : (e.end - e.begin) / e.shape[0];
  return ReadBytes(e, e.begin + static_cast<uint64_t>(first) * row_bytes, shape,
                   options);
}

absl::StatusOr<torch::Tensor> SafetensorsFile::ReadBytes(
    const SafetensorsEntry& e, uint64_t begin,
    const std::vector<int64_t>& shape,
    const torch::TensorOptions& options) const {
  const char* src = static_cast<const char*>(map_) + data_start_ + begin;
  const uint64_t elem = c10::elementSize(e.dtype);
  torch::Tensor out;
  if (reinterpret_cast<uintptr_t>(src) % elem == 0) {
    // NOTE: from_blob aliases the read-only mapping; the copy=true .to()
    // below never writes through it and detaches the result from it.
    torch::Tensor view = torch::from_blob(const_cast<char*>(src), shape,
                                          torch::TensorOptions(e.dtype));
    out = view.to(options, /*non_blocking=*/false, /*copy=*/true);
  } else {
    // The header length is not a multiple of 8: copy into aligned storage.
    torch::Tensor aligned = torch::empty(shape, torch::TensorOptions(e.dtype));
    std::memcpy(aligned.data_ptr(), src, aligned.numel() * elem);
    out = aligned.to(options, /*non_blocking=*/false, /*copy=*/false);
  }
  return out;
}

// ---- writer
// --------------------------------------------------------------------

uint64_t SafetensorsWriter::DataBytes(const std::vector<Spec>& specs) {
  uint64_t total = 0;
  for (const Spec& s : specs)
    total += Numel(s.shape) * c10::elementSize(s.dtype);
  return total;
}

absl::StatusOr<std::unique_ptr<SafetensorsWriter>> SafetensorsWriter::Create(
    const std::string& path, std::vector<Spec> specs,
    const std::map<std::string, std::string>& metadata) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::set<std::string> seen;
  uint64_t offset = 0;
  for (const Spec& s : specs) {
    if (!seen.insert(s.name).second || s.name == "__metadata__") {
      return absl::InvalidArgumentError(absl::StrCat(
          path, ": duplicate or reserved tensor name '", s.name, "'"));
    }
    auto dtype_name = SafetensorsDtypeName(s.dtype);
    if (!dtype_name.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, ": tensor '", s.name, "': ", dtype_name.status().message()));
    }
    for (int64_t d : s.shape) {
      if (d < 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            path, ": tensor '", s.name, "': negative dimension in shape ",
            ShapeString(s.shape)));
      }
    }
    const uint64_t bytes = Numel(s.shape) * c10::elementSize(s.dtype);
    header[s.name] = {{"dtype", *dtype_name},
                      {"shape", s.shape},
                      {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string text = header.dump();
  // Pad with spaces so the data buffer starts 8-byte aligned (as the
  // reference writer does).
  while (text.size() % 8 != 0) text.push_back(' ');

  std::unique_ptr<SafetensorsWriter> w(new SafetensorsWriter());
  w->path_ = path;
  w->specs_ = std::move(specs);
  w->file_ = std::fopen(path.c_str(), "wb");
  if (w->file_ == nullptr) {
    return absl::UnavailableError(
        absl::StrCat(path, ": cannot create: ", std::strerror(errno)));
  }
  const uint64_t len = text.size();
  if (std::fwrite(&len, 8, 1, w->file_) != 1 ||
      std::fwrite(text.data(), 1, text.size(), w->file_) != text.size()) {
    return absl::UnavailableError(
        absl::StrCat(path, ": write failed: ", std::strerror(errno)));
  }
  return w;
}

SafetensorsWriter::~SafetensorsWriter() {
  if (file_ != nullptr) std::fclose(file_);
}

absl::Status SafetensorsWriter::Write(const std::string& name,
                                      const torch::Tensor& tensor) {
  if (file_ == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat(path_, ": writer is closed"));
  }
  if (next_ >= specs_.size() || specs_[next_].name != name) {
    return absl::InvalidArgumentError(absl::StrCat(
        path_, ": tensor '", name, "' written out of order (expected '",
        next_ < specs_.size() ? specs_[next_].name : "<none>", "')"));
  }
  const Spec& s = specs_[next_];
  if (tensor.sizes().vec() != s.shape) {
    return absl::InvalidArgumentError(
        absl::StrCat(path_, ": tensor '", name, "' has shape ",
                     ShapeString(tensor.sizes().vec()), ", header says ",
                     ShapeString(s.shape)));
  }
  torch::Tensor cpu = tensor.to(torch::kCPU, s.dtype).contiguous();
  const size_t bytes = static_cast<size_t>(cpu.numel()) * cpu.element_size();
  if (bytes > 0 && std::fwrite(cpu.data_ptr(), 1, bytes, file_) != bytes) {
    return absl::UnavailableError(absl::StrCat(
        path_, ": write of '", name, "' failed: ", std::strerror(errno)));
  }
  ++next_;
  return absl::OkStatus();
}

absl::Status SafetensorsWriter::Close() {
  if (file_ == nullptr) return absl::OkStatus();
  const bool complete = next_ == specs_.size();
  const bool ok = std::fclose(file_) == 0;
  file_ = nullptr;
  if (!ok) {
    return absl::UnavailableError(
        absl::StrCat(path_, ": close failed: ", std::strerror(errno)));
  }
  if (!complete) {
    return absl::FailedPreconditionError(
        absl::StrCat(path_, ": closed after ", next_, " of ", specs_.size(),
                     " tensors; the file is incomplete"));
  }
  return absl::OkStatus();
}

absl::Status WriteSafetensors(
    const std::string& path,
    const std::vector<std::pair<std::string, torch::Tensor>>& tensors,
    const std::map<std::string, std::string>& metadata) {
  std::vector<SafetensorsWriter::Spec> specs;
  for (const auto& [name, t] : tensors) {
    specs.push_back({name, t.scalar_type(), t.sizes().vec()});
  }
  auto w = SafetensorsWriter::Create(path, std::move(specs), metadata);
  if (!w.ok()) return w.status();
  for (const auto& [name, t] : tensors) {
    absl::Status s = (*w)->Write(name, t);
    if (!s.ok()) return s;
  }
  return (*w)->Close();
}

}  // namespace smoe::model::mixtral
