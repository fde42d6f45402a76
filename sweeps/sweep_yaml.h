// Copyright 2026 SMoE Lab authors.
//
// File: sweeps/sweep_yaml.h
//
// Internal to smoe_sweeps: what the sweep-file parsers share
// (sweep_spec.cc, search_spec.cc): YAML scalars as JSON values, bounded
// integer fields, values echoed in messages, and the list of problems a
// file has. Not for other libraries (cli/ includes sweep_spec.h only).
#ifndef SMOE_SWEEPS_SWEEP_YAML_H_
#define SMOE_SWEEPS_SWEEP_YAML_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"
#include "yaml-cpp/yaml.h"

namespace smoe::sweeps::internal {

// `text` cut to at most 200 bytes on a UTF-8 character boundary, with
// "... (N bytes)" when cut.
std::string Cut(std::string text);

// A value as messages echo it: its JSON, cut on a UTF-8 character boundary
// after 200 bytes with "... (N bytes)".
std::string Show(const nlohmann::json& v);

// Converts a YAML scalar to JSON: ints, floats, bools, then strings (a
// quoted scalar is always a string). InvalidArgument naming `field` for a
// list, a map or invalid UTF-8.
absl::StatusOr<nlohmann::json> ScalarToJson(const YAML::Node& node,
                                            absl::string_view field);

// An integer scalar in [lo, hi]; InvalidArgument naming `field` and the
// value otherwise.
absl::StatusOr<int64_t> IntField(const YAML::Node& node,
                                 absl::string_view field, int64_t lo,
                                 int64_t hi);

// Every problem found in a sweep file, in file order. A field with a problem
// is left out of the spec, so later checks do not repeat it. At most
// `max_listed` messages are kept (each cut at kMaxProblemBytes); the others
// are counted, so a file with a million bad values costs a counter, not a
// million strings; the listed ones stay within 4 KiB in all, so the error
// fits in gRPC's metadata (issue 36 item 8).
class Problems {
 public:
  explicit Problems(int64_t max_listed) : max_listed_(max_listed) {}
  void Add(std::string message) {
    if (static_cast<int64_t>(list_.size()) >= max_listed_) {
      ++unlisted_;
      return;
    }
    if (message.size() > kMaxProblemBytes) {
      size_t n = kMaxProblemBytes;
      while (n > 0 && (static_cast<unsigned char>(message[n]) & 0xC0) == 0x80) {
        --n;
      }
      const size_t total = message.size();
      message.resize(n);
      absl::StrAppend(&message, "... (", total, " bytes)");
    }
    // The listed messages stay within kMaxListedBytes in all (the first is
    // always listed).
    if (!list_.empty() && listed_bytes_ + message.size() > kMaxListedBytes) {
      ++unlisted_;
      return;
    }
    listed_bytes_ += message.size();
    list_.push_back(std::move(message));
  }
  // Adds a non-OK status's message; returns whether `s` was OK.
  bool Ok(const absl::Status& s) {
    if (s.ok()) return true;
    Add(std::string(s.message()));
    return false;
  }
  bool empty() const { return list_.empty() && unlisted_ == 0; }
  // OK when there is none; one problem: its message; more: "N problems:"
  // and one per line, then "... and M more problems" for those not listed.
  absl::Status ToStatus() const {
    if (empty()) return absl::OkStatus();
    if (list_.size() == 1 && unlisted_ == 0) {
      return absl::InvalidArgumentError(list_[0]);
    }
    std::string out =
        absl::StrCat(static_cast<int64_t>(list_.size()) + unlisted_,
                     " problems:\n  ", absl::StrJoin(list_, "\n  "));
    if (unlisted_ > 0) {
      absl::StrAppend(&out, "\n  ... and ", unlisted_, " more problem",
                      unlisted_ == 1 ? "" : "s");
    }
    return absl::InvalidArgumentError(out);
  }

 private:
  static constexpr size_t kMaxProblemBytes = 1024;
  // gRPC carries the message in its status metadata (8 KiB by default,
  // percent-encoded).
  static constexpr size_t kMaxListedBytes = 4096;
  int64_t max_listed_;
  size_t listed_bytes_ = 0;
  std::vector<std::string> list_;
  int64_t unlisted_ = 0;
};

}  // namespace smoe::sweeps::internal

#endif  // SMOE_SWEEPS_SWEEP_YAML_H_
