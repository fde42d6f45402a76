// Copyright 2026 SMoE Lab authors.
#include "worker/launch/process_launcher.h"

#include <dirent.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "common/test_dir.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace smoe::launch {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr absl::Duration kWait = absl::Seconds(20);

std::unique_ptr<Process> StartShell(ProcessLauncher& launcher,
                                    const std::string& script,
                                    std::map<std::string, std::string> env = {},
                                    std::string cwd = "") {
  ProcessSpec spec;
  spec.argv = {"/bin/sh", "-c", script};
  spec.env = std::move(env);
  spec.working_dir = std::move(cwd);
  auto p = launcher.Start(spec);
  EXPECT_TRUE(p.ok()) << p.status();
  return p.ok() ? *std::move(p) : nullptr;
}

// True when this process has a child that is a zombie (or any child at all).
bool HasChildren() {
  // waitid with WNOWAIT|WNOHANG on any child: ECHILD when there are none.
  siginfo_t info;
  return waitid(P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT) == 0;
}

// True when `pid` exists and is not a zombie.
bool IsAlive(int pid) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/stat"));
  std::string stat;
  if (!std::getline(in, stat)) return false;
  const size_t paren = stat.rfind(')');
  return paren != std::string::npos && paren + 2 < stat.size() &&
         stat[paren + 2] != 'Z' && stat[paren + 2] != 'X';
}

TEST(PosixProcessLauncherTest, CapturesStdoutLinesAndExitCode) {
  PosixProcessLauncher launcher;
  auto p = StartShell(
      launcher,
      R"(echo '{"event":"result","metrics":{}}'; printf 'a\nb\npartial'; exit 0)");
  ASSERT_NE(p, nullptr);
  auto exit = p->Wait(kWait);
  ASSERT_TRUE(exit.has_value());
  EXPECT_FALSE(exit->signaled);
  EXPECT_EQ(exit->exit_code, 0);
  EXPECT_EQ(exit->ReportedCode(), 0);
  EXPECT_THAT(
      p->TakeStdoutLines(),
      ElementsAre(R"({"event":"result","metrics":{}})", "a", "b", "partial"));
  EXPECT_TRUE(p->TakeStdoutLines().empty());
  p.reset();
  EXPECT_FALSE(HasChildren());
}

TEST(PosixProcessLauncherTest, ExitCodesAndStderrTail) {
  PosixProcessLauncher launcher(/*stderr_tail_lines=*/3);
  auto p = StartShell(launcher,
                      "for i in 1 2 3 4 5; do echo err$i >&2; done; exit 75");
  ASSERT_NE(p, nullptr);
  auto exit = p->Wait(kWait);
  ASSERT_TRUE(exit.has_value());
  EXPECT_EQ(exit->exit_code, 75);
  EXPECT_THAT(p->StderrTail(), ElementsAre("err3", "err4", "err5"));
}

// TakeStderrLines streams stderr (the CLI prints it above its progress
// line): each line once, in order, the unterminated last line at the end,
// independent of the tail; bounded, saying how many lines it dropped.
TEST(PosixProcessLauncherTest, TakeStderrLinesStreamsAndIsBounded) {
  PosixProcessLauncher launcher(/*stderr_tail_lines=*/2);
  auto p = StartShell(launcher, "echo one >&2; echo out; printf two >&2");
  ASSERT_NE(p, nullptr);
  ASSERT_TRUE(p->Wait(kWait).has_value());
  EXPECT_THAT(p->TakeStderrLines(), ElementsAre("one", "two"));
  EXPECT_TRUE(p->TakeStderrLines().empty());
  EXPECT_THAT(p->StderrTail(), ElementsAre("one", "two"));
  EXPECT_THAT(p->TakeStdoutLines(), ElementsAre("out"));

  const size_t n = Process::kMaxPendingStderrLines + 5;
  auto many = StartShell(launcher, absl::StrCat("seq 1 ", n, " >&2"));
  ASSERT_NE(many, nullptr);
  ASSERT_TRUE(many->Wait(kWait).has_value());
  std::vector<std::string> lines = many->TakeStderrLines();
  ASSERT_EQ(lines.size(), Process::kMaxPendingStderrLines + 1);
  EXPECT_EQ(lines.front(), "[5 earlier stderr lines dropped]");
  EXPECT_EQ(lines[1], "6");
  EXPECT_EQ(lines.back(), std::to_string(n));
}

TEST(PosixProcessLauncherTest, EnvAndWorkingDirectory) {
  PosixProcessLauncher launcher;
  auto p = StartShell(launcher,
                      "echo \"[$CUDA_VISIBLE_DEVICES][$SMOE_X]\"; pwd; exit 64",
                      {{"CUDA_VISIBLE_DEVICES", ""}, {"SMOE_X", "y"}}, "/tmp");
  ASSERT_NE(p, nullptr);
  auto exit = p->Wait(kWait);
  ASSERT_TRUE(exit.has_value());
  EXPECT_EQ(exit->exit_code, 64);
  EXPECT_THAT(p->TakeStdoutLines(), ElementsAre("[][y]", "/tmp"));
}

// unset_env removes inherited variables (the daemon's SMOE_TOKEN); a name
// also given in env is set, not removed.
TEST(PosixProcessLauncherTest, UnsetEnvHidesInheritedVariables) {
  ::setenv("SMOE_LAUNCHER_TEST_SECRET", "s3cret", 1);
  ::setenv("SMOE_LAUNCHER_TEST_KEEP", "kept", 1);
  PosixProcessLauncher launcher;
  ProcessSpec spec;
  spec.argv = {"/bin/sh", "-c",
               "echo \"[${SMOE_LAUNCHER_TEST_SECRET-unset}]"
               "[$SMOE_LAUNCHER_TEST_KEEP][$SMOE_X]\""};
  spec.unset_env = {"SMOE_LAUNCHER_TEST_SECRET", "SMOE_X"};
  spec.env = {{"SMOE_X", "set"}};
  auto p = launcher.Start(spec);
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_TRUE((*p)->Wait(kWait).has_value());
  EXPECT_THAT((*p)->TakeStdoutLines(), ElementsAre("[unset][kept][set]"));
  ::unsetenv("SMOE_LAUNCHER_TEST_SECRET");
  ::unsetenv("SMOE_LAUNCHER_TEST_KEEP");
}

TEST(PosixProcessLauncherTest, SignalReachesProcessGroupAndIsReported) {
  PosixProcessLauncher launcher;
  // The shell starts a grandchild; both must die with the group.
  auto p = StartShell(launcher, "sleep 300 & echo $!; wait");
  ASSERT_NE(p, nullptr);
  EXPECT_FALSE(p->Poll().has_value());
  // Wait for the child to be running.
  std::vector<std::string> lines;
  for (int i = 0; i < 200 && lines.empty(); ++i) {
    lines = p->TakeStdoutLines();
    if (lines.empty()) p->Wait(absl::Milliseconds(50));
  }
  ASSERT_EQ(lines.size(), 1u);
  const int grandchild = std::stoi(lines[0]);
  EXPECT_EQ(getpgid(p->pid()), p->pid());
  EXPECT_EQ(getpgid(grandchild), p->pid());
  ASSERT_TRUE(p->Signal(SIGTERM).ok());
  auto exit = p->Wait(kWait);
  ASSERT_TRUE(exit.has_value());
  EXPECT_TRUE(exit->signaled);
  EXPECT_EQ(exit->signal, SIGTERM);
  EXPECT_EQ(exit->ReportedCode(), 128 + SIGTERM);
  // Signalling after the end is a harmless no-op.
  EXPECT_TRUE(p->Signal(SIGKILL).ok());
  // The grandchild died with the group (gone, or a zombie awaiting init).
  // Bounded (5 s): delivery and reaping by init take a moment under load.
  // (p->Wait() returns at once here: the shell has already exited.)
  for (int i = 0; i < 250 && IsAlive(grandchild); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_FALSE(IsAlive(grandchild));
  p.reset();
  EXPECT_FALSE(HasChildren());
}

TEST(PosixProcessLauncherTest, SigtermHandlerCanExit75) {
  PosixProcessLauncher launcher;
  auto p = StartShell(launcher,
                      "trap 'echo checkpoint; exit 75' TERM; echo ready; "
                      "while :; do sleep 0.05; done");
  ASSERT_NE(p, nullptr);
  std::vector<std::string> lines;
  for (int i = 0; i < 200 && lines.empty(); ++i) {
    lines = p->TakeStdoutLines();
    if (lines.empty()) p->Wait(absl::Milliseconds(50));
  }
  ASSERT_THAT(lines, ElementsAre("ready"));
  ASSERT_TRUE(p->Signal(SIGTERM).ok());
  auto exit = p->Wait(kWait);
  ASSERT_TRUE(exit.has_value());
  EXPECT_EQ(exit->exit_code, 75);
  EXPECT_THAT(p->TakeStdoutLines(), ElementsAre("checkpoint"));
}

TEST(PosixProcessLauncherTest, WaitTimesOutWhileRunningAndDestructorKills) {
  PosixProcessLauncher launcher;
  auto p = StartShell(launcher, "exec sleep 300");
  ASSERT_NE(p, nullptr);
  EXPECT_FALSE(p->Wait(absl::Milliseconds(100)).has_value());
  const int pid = p->pid();
  p.reset();  // SIGKILL + reap
  EXPECT_EQ(kill(pid, 0), -1);
  EXPECT_FALSE(HasChildren());
}

// A daemon that dies without draining (kill -9, the OOM killer) must not leave
// its trainers running unsupervised: they would keep their GPUs and the trial
// directory while the restarted daemon (or another attempt) starts over.
// Here a forked "daemon" starts a trainer and is SIGKILLed; the trainer must
// die with it. It used to live on (each child is its own process group, so
// nothing reached it).
TEST(PosixProcessLauncherTest, ChildDiesWhenTheDaemonIsKilled) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const pid_t daemon = fork();
  ASSERT_GE(daemon, 0);
  if (daemon == 0) {
    close(fds[0]);
    PosixProcessLauncher launcher;
    ProcessSpec spec;
    spec.argv = {"/bin/sh", "-c", "exec sleep 300"};
    auto p = launcher.Start(spec);
    const int pid = p.ok() ? (*p)->pid() : -1;
    if (write(fds[1], &pid, sizeof(pid)) != sizeof(pid)) _exit(1);
    kill(getpid(), SIGKILL);  // no destructors, no drain
    _exit(1);
  }
  close(fds[1]);
  int trainer = -1;
  ASSERT_EQ(read(fds[0], &trainer, sizeof(trainer)),
            static_cast<ssize_t>(sizeof(trainer)));
  close(fds[0]);
  int status = 0;
  ASSERT_EQ(waitpid(daemon, &status, 0), daemon);
  ASSERT_TRUE(WIFSIGNALED(status));
  ASSERT_GT(trainer, 0);
  bool alive = true;
  for (int i = 0; i < 100 && alive; ++i) {
    alive = IsAlive(trainer);
    if (alive) absl::SleepFor(absl::Milliseconds(50));
  }
  if (alive) kill(trainer, SIGKILL);  // do not leak it past the test
  EXPECT_FALSE(alive) << "the trainer outlived its daemon";
}

TEST(PosixProcessLauncherTest, MissingProgramIsNotFound) {
  PosixProcessLauncher launcher;
  ProcessSpec spec;
  spec.argv = {"/nonexistent/smoe-trainer", "run"};
  auto p = launcher.Start(spec);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(p.status().message(), HasSubstr("/nonexistent/smoe-trainer"));
  EXPECT_FALSE(HasChildren());
}

TEST(PosixProcessLauncherTest, EmptyArgvIsInvalid) {
  PosixProcessLauncher launcher;
  EXPECT_EQ(launcher.Start(ProcessSpec()).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(PosixProcessLauncherTest, DoesNotLeakDescriptorsToChildren) {
  PosixProcessLauncher launcher;
  // Keep another child's pipes open while starting this one.
  auto other = StartShell(launcher, "exec sleep 300");
  auto p = StartShell(launcher, "ls /proc/self/fd | wc -l");
  ASSERT_NE(p, nullptr);
  ASSERT_TRUE(p->Wait(kWait).has_value());
  auto lines = p->TakeStdoutLines();
  ASSERT_EQ(lines.size(), 1u);
  // 0, 1, 2 and the fd `ls` opens on /proc/self/fd.
  EXPECT_LE(std::stoi(lines[0]), 4);
}

TEST(PosixProcessLauncherTest, ManyLinesAreNotLost) {
  PosixProcessLauncher launcher;
  auto p = StartShell(launcher,
                      "i=0; while [ $i -lt 20000 ]; do echo line$i; "
                      "i=$((i+1)); done");
  ASSERT_NE(p, nullptr);
  ASSERT_TRUE(p->Wait(absl::Seconds(60)).has_value());
  auto lines = p->TakeStdoutLines();
  ASSERT_EQ(lines.size(), 20000u);
  EXPECT_EQ(lines.back(), "line19999");
}

// Output to a file (one log for both streams when they name the same file),
// or not piped at all: nothing reaches TakeStdoutLines / StderrTail then.
TEST(PosixProcessLauncherTest, OutputToFilesOrInherited) {
  const std::string dir = smoe::testing::NewTestDir("launcher_out_");
  PosixProcessLauncher launcher;
  ProcessSpec spec;
  spec.argv = {"/bin/sh", "-c", "echo out; echo err >&2; echo out2"};
  spec.stdout_to = OutputSpec::File(dir + "/log");
  spec.stderr_to = OutputSpec::File(dir + "/log");
  std::ofstream(dir + "/log") << "stale contents of an earlier run\n";
  auto p = launcher.Start(spec);
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_TRUE((*p)->Wait(kWait).has_value());
  EXPECT_TRUE((*p)->TakeStdoutLines().empty());
  EXPECT_TRUE((*p)->StderrTail().empty());
  std::ifstream in(dir + "/log");
  std::string all((std::istreambuf_iterator<char>(in)),
                  std::istreambuf_iterator<char>());
  EXPECT_EQ(all, "out\nerr\nout2\n");

  // Separate files; stderr inherited while stdout is still piped.
  spec.stdout_to = OutputSpec::File(dir + "/out");
  spec.stderr_to = OutputSpec::File(dir + "/err");
  p = launcher.Start(spec);
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_TRUE((*p)->Wait(kWait).has_value());
  std::ifstream out(dir + "/out"), err(dir + "/err");
  std::string o((std::istreambuf_iterator<char>(out)),
                std::istreambuf_iterator<char>());
  std::string e((std::istreambuf_iterator<char>(err)),
                std::istreambuf_iterator<char>());
  EXPECT_EQ(o, "out\nout2\n");
  EXPECT_EQ(e, "err\n");
  spec.argv = {"/bin/sh", "-c", "echo piped; echo to-our-stderr >&2"};
  spec.stdout_to = OutputSpec::Pipe();
  spec.stderr_to = OutputSpec::Inherit();
  p = launcher.Start(spec);
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_TRUE((*p)->Wait(kWait).has_value());
  EXPECT_THAT((*p)->TakeStdoutLines(), ElementsAre("piped"));
  EXPECT_TRUE((*p)->StderrTail().empty());

  // An output file that cannot be opened is an error naming it.
  spec.stdout_to = OutputSpec::File(dir + "/missing/dir/log");
  auto bad = launcher.Start(spec);
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr(dir + "/missing/dir/log"));
  EXPECT_FALSE(HasChildren());
  ASSERT_EQ(system(absl::StrCat("rm -rf '", dir, "'").c_str()), 0);
}

}  // namespace
}  // namespace smoe::launch
