// Copyright 2026 SMoE Lab authors.
//
// File: common/test_dir.h (tests only)
//
// NewTestDir(prefix): a new, empty directory for one test's files, made by
// mkdtemp under gtest's temp dir, so it is unique across processes and runs.
// Names built from getpid() are not: pids wrap (pid_max is 32768 on our
// machines), and a test whose pid an earlier run had used found that run's
// files left behind — a worker journal replayed an old report, a coordinator
// database already held the sweep. The directories a process made are
// removed with their contents when it exits normally (not by forked
// children, not after a crash: a failed run's files stay for a look).
#ifndef SMOE_COMMON_TEST_DIR_H_
#define SMOE_COMMON_TEST_DIR_H_

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <string>
#include <system_error>
#include <vector>

#include "absl/strings/string_view.h"
#include "gtest/gtest.h"

namespace smoe::testing {
namespace test_dir_internal {

struct Made {
  std::mutex mu;
  pid_t owner = ::getpid();
  std::vector<std::string> dirs;
};

inline Made& MadeDirs() {
  static Made* made = new Made();
  return *made;
}

inline void RemoveMadeDirs() {
  Made& made = MadeDirs();
  std::lock_guard<std::mutex> lock(made.mu);
  if (::getpid() != made.owner) return;  // a forked child's exit()
  for (const std::string& d : made.dirs) {
    std::error_code ec;
    std::filesystem::remove_all(d, ec);
  }
}

}  // namespace test_dir_internal

inline std::string NewTestDir(absl::string_view prefix) {
  std::string tmpl = ::testing::TempDir();
  if (tmpl.empty() || tmpl.back() != '/') tmpl += '/';
  tmpl.append(prefix.data(), prefix.size());
  tmpl += "XXXXXX";
  if (::mkdtemp(tmpl.data()) == nullptr) {
    ADD_FAILURE() << "mkdtemp " << tmpl << ": " << std::strerror(errno);
    return tmpl;
  }
  test_dir_internal::Made& made = test_dir_internal::MadeDirs();
  static const bool registered =
      std::atexit(test_dir_internal::RemoveMadeDirs) == 0;
  (void)registered;
  std::lock_guard<std::mutex> lock(made.mu);
  made.dirs.push_back(tmpl);
  return tmpl;
}

}  // namespace smoe::testing

#endif  // SMOE_COMMON_TEST_DIR_H_
