// Copyright 2026 SMoE Lab authors.
#include "proto/utf8_fields.h"

#include "common/utf8.h"
#include "gtest/gtest.h"
#include "proto/smoe.pb.h"

namespace smoe::proto {
namespace {

constexpr char kLatin1[] = "caf\xE9\n";  // printf "caf\351\n"
constexpr char kFixed[] = "caf\xEF\xBF\xBD\n";

v1::CompleteRequest BadComplete() {
  v1::CompleteRequest req;
  req.set_worker_id("w1");
  req.set_trial_id("s/t1");
  req.set_attempt(1);
  (*req.mutable_results())["loss"] = 0.5;
  req.mutable_log()->set_text(kLatin1);
  req.mutable_log()->set_total_bytes(5);
  return req;
}

// The failure of issue 36 item 1: the receiver refuses the whole message.
TEST(Utf8FieldsTest, ProtobufRefusesIllFormedStringsWhenParsing) {
  const std::string wire = BadComplete().SerializeAsString();
  v1::CompleteRequest back;
  EXPECT_FALSE(back.ParseFromString(wire));
}

TEST(Utf8FieldsTest, EveryStringFieldIsMadeValid) {
  v1::CompleteRequest req = BadComplete();
  EXPECT_EQ(FirstInvalidUtf8Field(req), "log.text");
  EXPECT_EQ(MakeStringFieldsValidUtf8(&req), 1);
  EXPECT_EQ(req.log().text(), kFixed);
  EXPECT_EQ(req.trial_id(), "s/t1");
  EXPECT_EQ(req.results().at("loss"), 0.5);
  EXPECT_EQ(FirstInvalidUtf8Field(req), "");
  v1::CompleteRequest back;
  EXPECT_TRUE(back.ParseFromString(req.SerializeAsString()));
  EXPECT_EQ(MakeStringFieldsValidUtf8(&req), 0);

  // Repeated fields, nested repeated messages and map keys.
  v1::LeaseResponse lease;
  v1::TrialLease* l = lease.add_leases();
  l->mutable_command()->add_args("ok");
  l->mutable_command()->add_args("x\xFF");
  EXPECT_EQ(FirstInvalidUtf8Field(lease), "leases[0].command.args[1]");
  v1::CompleteRequest map_key;
  (*map_key.mutable_results())["bad\xC3"] = 1;
  EXPECT_EQ(MakeStringFieldsValidUtf8(&map_key), 1);
  EXPECT_EQ(map_key.results().count("bad\xEF\xBF\xBD"), 1u);
  EXPECT_EQ(MakeStringFieldsValidUtf8(&lease), 1);
  EXPECT_EQ(lease.leases(0).command().args(1), "x\xEF\xBF\xBD");
}

// Journal entries an older daemon wrote with the raw bytes are read back.
TEST(Utf8FieldsTest, ParseReplacingInvalidUtf8ReadsWhatParseRefuses) {
  const std::string wire = BadComplete().SerializeAsString();
  v1::CompleteRequest back;
  ASSERT_TRUE(ParseReplacingInvalidUtf8(wire, &back));
  EXPECT_EQ(back.log().text(), kFixed);
  EXPECT_EQ(back.log().total_bytes(), 5);
  EXPECT_EQ(back.results().at("loss"), 0.5);
  EXPECT_EQ(back.attempt(), 1);
  EXPECT_FALSE(ParseReplacingInvalidUtf8("\xFF\xFF\xFF", &back));
}

}  // namespace
}  // namespace smoe::proto
