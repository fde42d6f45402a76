// Copyright 2026 SMoE Lab authors.
//
// CoordinatorClient against an in-process coordinator (real gRPC on
// 127.0.0.1, SQLite in a temp dir).
#include "cli/client.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "cli/local_coordinator_for_test.h"
#include "cli/sweep_cmds.h"
#include "common/blob_file.h"
#include "common/test_dir.h"
#include "coordinator/server.h"
#include "coordinator/tokens.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace smoe::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

using test_support::LocalServer;
using test_support::ViewerClient;

// A sweep whose trial list is bigger than gRPC's default 4 MB message (here
// about 30k trials with long params; a few hundred failed trials with their
// stderr tails get there too): `sweep show --trials`, `results` and
// `sweep watch` (whose first event carries every trial) used to fail at the
// client with RESOURCE_EXHAUSTED ("received message larger than max").
TEST(CoordinatorClientTest, SweepLargerThanDefaultGrpcMessageLimit) {
  const std::string dir = smoe::testing::NewTestDir("client_test_");
  coordinator::ServerOptions so = LocalServer(dir);
  auto server = coordinator::CoordinatorServer::Start(so);
  ASSERT_TRUE(server.ok()) << server.status();
  constexpr int kSeeds = 1000, kTrials = 8 * 4 * kSeeds;
  std::string seeds = "0";
  for (int i = 1; i < kSeeds; ++i) absl::StrAppend(&seeds, ", ", i);
  auto sub = (*server)->scheduler()->SubmitSweep(
      absl::StrCat(
          "name: big\nkind: sraven\ngrid:\n  M: [1, 2, 3, 4, 5, 6, 7, 8]\n"
          "  top_k: [1, 2, 4, 8]\nfixed: {attention: "
          "hyla_mlp_linear_no_rms_head, gating: topk_then_softmax, dispatch: "
          "gather, router: topk, device: cpu, steps: 10}\nseeds: [",
          seeds, "]\n"),
      false);
  ASSERT_TRUE(sub.ok()) << sub.status();
  ASSERT_EQ(sub->new_trials, kTrials);
  ASSERT_TRUE((*server)->scheduler()->CancelSweep("big").ok());

  ClientOptions co;
  co.address = (*server)->address();
  co.token_file = dir + "/token";
  unsetenv("SMOE_TOKEN");
  auto client = CoordinatorClient::Create(co);
  ASSERT_TRUE(client.ok()) << client.status();

  v1::GetSweepRequest req;
  req.set_sweep_id("big");
  req.set_include_trials(true);
  v1::GetSweepResponse resp;
  grpc::ClientContext ctx;
  (*client)->Prepare(&ctx);
  const grpc::Status st = (*client)->stub()->GetSweep(&ctx, req, &resp);
  ASSERT_TRUE(st.ok()) << st.error_message();
  EXPECT_EQ(resp.trials_size(), kTrials);
  EXPECT_GT(resp.ByteSizeLong(), size_t{5} << 20) << "the test needs > 4 MB";

  std::ostringstream watch;
  EXPECT_EQ(WatchSweepCmd(**client, "big", watch), kExitFailure);
  EXPECT_THAT(watch.str(), HasSubstr(absl::StrCat(kTrials, " cancelled")));

  std::ostringstream csv;
  EXPECT_EQ(ResultsCmd(**client, "big", "csv", csv), kExitOk);
  const std::string text = csv.str();
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), kTrials + 1);
  (*server)->Shutdown();
}

// Issue 20: gRPC's default SO_REUSEPORT let a second coordinator bind the
// first one's port and take a share of its connections; the dashboard's
// cpp-httplib server did the same. Both are refused now.
// `smoe sweep note|tag|archive` (admin) and `smoe sweep ls [--all]`: what
// they print, and their exit codes for a bad tag (65), an unknown sweep (66)
// and a viewer token (77).
TEST(CoordinatorClientTest, SweepAnnotationCommands) {
  const std::string dir = smoe::testing::NewTestDir("client_annotate_");
  coordinator::ServerOptions so = LocalServer(dir);
  auto server = coordinator::CoordinatorServer::Start(so);
  ASSERT_TRUE(server.ok()) << server.status();
  for (const char* name : {"keep", "old"}) {
    auto sub = (*server)->scheduler()->SubmitSweep(
        absl::StrCat("name: ", name,
                     "\nkind: sraven\ngrid:\n  top_k: [1, 2]\n"
                     "fixed: {steps: 10}\nseeds: [0]\n"),
        false);
    ASSERT_TRUE(sub.ok()) << sub.status();
  }
  ClientOptions co;
  co.address = (*server)->address();
  co.token_file = dir + "/token";
  unsetenv("SMOE_TOKEN");
  auto client = CoordinatorClient::Create(co);
  ASSERT_TRUE(client.ok()) << client.status();

  SweepAnnotationFlags note;
  note.notes = "k=2 looks best";
  std::ostringstream out;
  ASSERT_EQ(AnnotateSweepCmd(**client, "old", note, out), kExitOk);
  EXPECT_THAT(out.str(), HasSubstr("notes: k=2 looks best"));
  EXPECT_THAT(out.str(), HasSubstr("tags: (none)"));

  SweepAnnotationFlags set;
  set.tags = std::vector<std::string>{"paper", "draft"};
  out.str("");
  ASSERT_EQ(AnnotateSweepCmd(**client, "old", set, out), kExitOk);
  EXPECT_THAT(out.str(), HasSubstr("tags: paper, draft"));
  // Notes are kept when only the tags change.
  EXPECT_THAT(out.str(), HasSubstr("notes: k=2 looks best"));

  SweepAnnotationFlags edit;
  edit.add_tags = {"final", "paper"};
  edit.remove_tags = {"draft"};
  out.str("");
  ASSERT_EQ(AnnotateSweepCmd(**client, "old", edit, out), kExitOk);
  EXPECT_THAT(out.str(), HasSubstr("tags: paper, final\n"));

  SweepAnnotationFlags archive;
  archive.archived = true;
  out.str("");
  ASSERT_EQ(AnnotateSweepCmd(**client, "old", archive, out), kExitOk);
  EXPECT_THAT(out.str(), HasSubstr("sweep old (archived)"));

  // `sweep ls` hides it and says so; --all lists it, marked.
  out.str("");
  ASSERT_EQ(ListSweepsCmd(**client, out), kExitOk);
  EXPECT_THAT(out.str(), HasSubstr("keep"));
  EXPECT_THAT(out.str(), Not(HasSubstr("old ")));
  EXPECT_THAT(out.str(),
              HasSubstr("1 archived sweep(s) not shown (smoe sweep ls --all)"));
  out.str("");
  ASSERT_EQ(ListSweepsCmd(**client, out, /*all=*/true), kExitOk);
  EXPECT_THAT(out.str(), HasSubstr("(archived)"));
  // `sweep show` prints the annotations.
  out.str("");
  ASSERT_EQ(ShowSweepCmd(**client, "old", false, out), kExitOk);
  EXPECT_THAT(out.str(), HasSubstr("  archived\n  tags: paper, final\n"
                                   "  notes: k=2 looks best"));

  // Errors: a bad tag names the field and value (65); an unknown sweep 66.
  SweepAnnotationFlags bad;
  bad.tags = std::vector<std::string>{"no spaces"};
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(AnnotateSweepCmd(**client, "old", bad, out), kExitDataErr);
  EXPECT_EQ(AnnotateSweepCmd(**client, "nope", note, out), kExitNoInput);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_THAT(err, HasSubstr("no spaces"));
  EXPECT_THAT(err, HasSubstr("nope"));

  // A viewer may list but not annotate: 77 naming the role needed.
  auto vclient = ViewerClient(**server, co, dir);
  ASSERT_TRUE(vclient.ok()) << vclient.status();
  out.str("");
  EXPECT_EQ(ListSweepsCmd(**vclient, out), kExitOk);
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(AnnotateSweepCmd(**vclient, "keep", archive, out), kExitNoPerm);
  EXPECT_THAT(::testing::internal::GetCapturedStderr(),
              HasSubstr("needs role 'admin'"));
  (*server)->Shutdown();
}

// `smoe sweep delete SWEEP [--yes]` against a real coordinator: refused
// while trials are live (65, naming the count and `smoe sweep cancel`),
// asks on a terminal (anything but y keeps the sweep, exit 1), deletes with
// the trials' checkpoint files, then 66 for the unknown sweep; a viewer 77.
TEST(CoordinatorClientTest, SweepDeleteCommand) {
  const std::string dir = smoe::testing::NewTestDir("client_delete_");
  coordinator::ServerOptions so = LocalServer(dir);
  so.checkpoint_gc_period = absl::Hours(1);  // only the delete removes blobs
  auto server = coordinator::CoordinatorServer::Start(so);
  ASSERT_TRUE(server.ok()) << server.status();
  coordinator::Scheduler* sched = (*server)->scheduler();
  for (const char* name : {"gone", "kept"}) {
    ASSERT_TRUE(sched
                    ->SubmitSweep(
                        absl::StrCat("name: ", name,
                                     "\nkind: sraven\ngrid:\n  top_k: [1, 2]\n"
                                     "fixed: {steps: 10}\nseeds: [0]\n"),
                        false)
                    .ok());
  }
  // A checkpoint blob of a running trial of each sweep.
  coordinator::WorkerInfo w;
  w.hostname = "h";
  w.slots = 4;
  auto reg = sched->Register(w);
  ASSERT_TRUE(reg.ok());
  auto leases = sched->Lease(reg->worker_id, 4, 0);
  ASSERT_TRUE(leases.ok());
  std::map<std::string, std::string> blob_of;  // sweep -> blob path
  for (const coordinator::LeaseGrant& g : *leases) {
    if (blob_of.count(g.sweep_id)) continue;
    store::CheckpointRecord h;
    h.trial_id = g.trial_id;
    h.step = 5;
    h.file_name = "checkpoint.smoeckpt";
    h.bytes = 4;
    h.sha256 = Sha256Hex("ckpt");
    h.attempt = g.attempt;
    h.worker_id = reg->worker_id;
    auto up = (*server)->checkpoints()->BeginUpload(h);
    ASSERT_TRUE(up.ok()) << up.status();
    ASSERT_TRUE((*up)->Append("ckpt").ok());
    auto rec = (*up)->Finish();
    ASSERT_TRUE(rec.ok()) << rec.status();
    blob_of[g.sweep_id] = (*server)->checkpoints()->BlobPath(*rec);
  }
  ASSERT_EQ(blob_of.size(), 2u);
  ASSERT_TRUE(std::filesystem::exists(blob_of["gone"]));

  ClientOptions co;
  co.address = (*server)->address();
  co.token_file = dir + "/token";
  unsetenv("SMOE_TOKEN");
  auto client = CoordinatorClient::Create(co);
  ASSERT_TRUE(client.ok()) << client.status();
  std::ostringstream out;
  std::istringstream no_input;

  // Live trials: refused, 65, nothing deleted.
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(DeleteSweepCmd(**client, "gone", true, false, no_input, out),
            kExitDataErr);
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_THAT(err, HasSubstr("sweep 'gone' has 2 live trials"));
  EXPECT_THAT(err, HasSubstr("smoe sweep cancel gone"));
  ASSERT_TRUE(sched->CancelSweep("gone").ok());

  // On a terminal it asks; "n" (or nothing) keeps the sweep.
  std::istringstream answer_no("n\n");
  EXPECT_EQ(DeleteSweepCmd(**client, "gone", false, true, answer_no, out),
            kExitFailure);
  EXPECT_THAT(out.str(), HasSubstr("Delete sweep gone and its 2 trials"));
  EXPECT_THAT(out.str(), HasSubstr("[y/N] not deleted"));
  EXPECT_TRUE(sched->GetSweep("gone").ok());
  EXPECT_TRUE(std::filesystem::exists(blob_of["gone"]));

  // A viewer may not delete: 77 naming the role.
  auto vclient = ViewerClient(**server, co, dir);
  ASSERT_TRUE(vclient.ok()) << vclient.status();
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(DeleteSweepCmd(**vclient, "gone", true, false, no_input, out),
            kExitNoPerm);
  EXPECT_THAT(::testing::internal::GetCapturedStderr(),
              HasSubstr("needs role 'admin'"));

  // "y" deletes: rows, listing and the checkpoint file.
  std::istringstream answer_yes("y\n");
  out.str("");
  ASSERT_EQ(DeleteSweepCmd(**client, "gone", false, true, answer_yes, out),
            kExitOk);
  EXPECT_THAT(out.str(), HasSubstr("deleted sweep gone (2 trials)"));
  EXPECT_FALSE(std::filesystem::exists(blob_of["gone"]));
  EXPECT_FALSE(std::filesystem::exists(
      std::filesystem::path(blob_of["gone"]).parent_path()));
  EXPECT_TRUE(std::filesystem::exists(blob_of["kept"]));
  EXPECT_TRUE(absl::IsNotFound((*server)->store()->GetSweep("gone").status()));
  out.str("");
  ASSERT_EQ(ListSweepsCmd(**client, out), kExitOk);
  EXPECT_THAT(out.str(), HasSubstr("kept"));
  EXPECT_THAT(out.str(), Not(HasSubstr("gone")));

  // Gone: 66 naming it, with or without --yes.
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(DeleteSweepCmd(**client, "gone", true, false, no_input, out),
            kExitNoInput);
  EXPECT_EQ(DeleteSweepCmd(**client, "gone", false, true, no_input, out),
            kExitNoInput);
  err = ::testing::internal::GetCapturedStderr();
  EXPECT_THAT(err, HasSubstr("'gone'"));
  (*server)->Shutdown();
}

// Issue 36 item 3: a second coordinator on one data dir (a second `smoe
// up`, two pods on one volume) leased every trial again. The data dir is
// locked for the server's life; the second start names the holder's pid.
TEST(CoordinatorServerTest, SecondCoordinatorOnOneDataDirIsRefused) {
  const std::string dir = smoe::testing::NewTestDir("data_dir_lock_test_");
  coordinator::ServerOptions so;
  so.data_dir = dir + "/data";
  so.listen = "127.0.0.1:0";
  so.http_listen = "";
  auto first = coordinator::CoordinatorServer::Start(so);
  ASSERT_TRUE(first.ok()) << first.status();
  auto second = coordinator::CoordinatorServer::Start(so);
  ASSERT_TRUE(absl::IsFailedPrecondition(second.status())) << second.status();
  EXPECT_THAT(second.status().message(),
              HasSubstr(absl::StrCat("in use by another coordinator (pid ",
                                     ::getpid(), ",")));
  EXPECT_THAT(second.status().message(), HasSubstr(so.data_dir));
  // Released when the first one is gone.
  first->reset();
  auto third = coordinator::CoordinatorServer::Start(so);
  EXPECT_TRUE(third.ok()) << third.status();
}

TEST(CoordinatorServerTest, BusyPortsAreRefusedNotShared) {
  const std::string dir = smoe::testing::NewTestDir("busy_port_test_");
  coordinator::ServerOptions so;
  so.data_dir = dir + "/a";
  so.listen = "127.0.0.1:0";
  so.http_listen = "127.0.0.1:0";
  so.http_required = true;
  auto first = coordinator::CoordinatorServer::Start(so);
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_GT((*first)->port(), 0);
  ASSERT_GT((*first)->http_port(), 0);

  coordinator::ServerOptions grpc_clash = so;
  grpc_clash.data_dir = dir + "/b";
  grpc_clash.listen = absl::StrCat("127.0.0.1:", (*first)->port());
  auto second = coordinator::CoordinatorServer::Start(grpc_clash);
  EXPECT_TRUE(absl::IsUnavailable(second.status())) << second.status();

  coordinator::ServerOptions http_clash = so;
  http_clash.data_dir = dir + "/c";
  http_clash.http_listen = absl::StrCat("127.0.0.1:", (*first)->http_port());
  auto third = coordinator::CoordinatorServer::Start(http_clash);
  EXPECT_TRUE(absl::IsUnavailable(third.status())) << third.status();
  (*first)->Shutdown();
}

}  // namespace
}  // namespace smoe::cli
