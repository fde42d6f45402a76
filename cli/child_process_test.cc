// Copyright 2026 SMoE Lab authors.
//
// cli/child_process.h: exit codes, captured stdout, PATH lookup, exec
// failures, the log file and signals.
#include "cli/child_process.h"

#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "gtest/gtest.h"

namespace smoe::cli {
namespace {

TEST(ChildProcessTest, ExitCodeOfAChild) {
  ChildSpec spec;
  spec.argv = {"/bin/sh", "-c", "exit 3"};
  const pid_t pid = StartChild(spec);
  ASSERT_GT(pid, 0);
  EXPECT_EQ(ExitCodeOf(WaitChild(pid)), 3);
}

TEST(ChildProcessTest, KilledChildIs128PlusTheSignal) {
  ChildSpec spec;
  spec.argv = {"/bin/sh", "-c", "kill -TERM $$"};
  const pid_t pid = StartChild(spec);
  ASSERT_GT(pid, 0);
  EXPECT_EQ(ExitCodeOf(WaitChild(pid)), 128 + SIGTERM);
}

TEST(ChildProcessTest, CapturesStdoutWithPathLookup) {
  ChildSpec spec;
  spec.argv = {"sh", "-c", "printf 'a\\nb'; exit 2"};
  spec.search_path = true;
  std::string out;
  EXPECT_EQ(RunAndCapture(spec, &out), 2);
  EXPECT_EQ(out, "a\nb");
}

TEST(ChildProcessTest, MissingProgramExitsWithTheFailureCode) {
  ChildSpec spec;
  spec.argv = {"/nonexistent/smoe-no-such-program"};
  spec.report_exec_error = false;
  std::string out;
  EXPECT_EQ(RunAndCapture(spec, &out), 127);
  spec.exec_failure_code = 9;
  EXPECT_EQ(RunAndCapture(spec, &out), 9);
  EXPECT_EQ(out, "");
}

TEST(ChildProcessTest, LogFileGetsStdoutStderrAndTheExecError) {
  char dir_template[] = "/tmp/smoe_child_process_testXXXXXX";
  ASSERT_NE(::mkdtemp(dir_template), nullptr);
  const std::string log = std::string(dir_template) + "/child.log";
  ChildSpec spec;
  spec.argv = {"/bin/sh", "-c", "echo out; echo err >&2"};
  spec.log_file = log;
  spec.own_process_group = true;
  pid_t pid = StartChild(spec);
  ASSERT_GT(pid, 0);
  EXPECT_EQ(ExitCodeOf(WaitChild(pid)), 0);
  spec.argv = {"/nonexistent/prog"};
  spec.exec_error_after = " failed: ";
  pid = StartChild(spec);
  ASSERT_GT(pid, 0);
  EXPECT_EQ(ExitCodeOf(WaitChild(pid)), 127);
  std::ifstream in(log);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(),
            "out\nerr\nexec /nonexistent/prog failed: No such file or "
            "directory\n");
  std::remove(log.c_str());
  ::rmdir(dir_template);
}

}  // namespace
}  // namespace smoe::cli
