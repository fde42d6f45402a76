// Copyright 2026 SMoE Lab authors.
#include "trials/events.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace smoe::trials {
namespace {

using json = nlohmann::json;
using Type = TrialEvent::Type;

TEST(TrialEventsTest, WritersProduceTheProtocolLines) {
  EXPECT_EQ(ProgressEvent(1000, 20000),
            R"({"event":"progress","step":1000,"total":20000})");
  EXPECT_EQ(
      MetricEvent(1000, "train/loss", 0.5),
      R"({"event":"metric","name":"train/loss","step":1000,"value":0.5})");
  EXPECT_EQ(CheckpointEvent(7), R"({"event":"checkpoint","step":7})");
  EXPECT_EQ(ResultEvent({{"ood_acc", 0.25}}),
            R"({"event":"result","metrics":{"ood_acc":0.25}})");
  // JSON has no NaN: a diverged loss is written as null.
  EXPECT_EQ(MetricEvent(3, "train/loss", std::nan("")),
            R"({"event":"metric","name":"train/loss","step":3,"value":null})");
  // Invalid UTF-8 is replaced, not thrown on.
  EXPECT_NE(MetricEvent(3, "bad\xff", 1).find("bad"), std::string::npos);
}

TEST(TrialEventsTest, ReadsWhatTheWritersWrite) {
  auto p = ParseEvent(ProgressEvent(5, 9));
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->type, Type::kProgress);
  EXPECT_EQ(p->step, 5);
  EXPECT_EQ(p->total, 9);
  EXPECT_TRUE(p->phase.empty());
  auto e = ParseEvent(PhaseProgressEvent("eval/test", 256, 4096));
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->type, Type::kProgress);
  EXPECT_EQ(e->phase, "eval/test");
  EXPECT_EQ(e->step, 256);
  EXPECT_EQ(e->total, 4096);
  EXPECT_EQ(PhaseProgressEvent("eval/ood", 1, 2),
            R"({"event":"progress","phase":"eval/ood","step":1,"total":2})");
  auto m = ParseEvent(MetricEvent(4, "eval/ood_acc", 0.75));
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->type, Type::kMetric);
  EXPECT_EQ(m->step, 4);
  EXPECT_EQ(m->name, "eval/ood_acc");
  EXPECT_EQ(m->value, 0.75);
  auto nan = ParseEvent(MetricEvent(4, "train/loss", std::nan("")));
  ASSERT_TRUE(nan.ok()) << nan.status();
  EXPECT_TRUE(std::isnan(nan->value));
  auto c = ParseEvent(CheckpointEvent(8));
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->type, Type::kCheckpoint);
  EXPECT_EQ(c->step, 8);
  EXPECT_TRUE(c->file.empty());
  auto cf = ParseEvent(CheckpointEvent(9, "checkpoint.json"));
  ASSERT_TRUE(cf.ok());
  EXPECT_EQ(cf->file, "checkpoint.json");
  EXPECT_EQ(cf->step, 9);
  auto r = ParseEvent(ResultEvent({{"test_acc", 0.5}, {"note", "x"}}));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->type, Type::kResult);
  EXPECT_EQ(r->metrics, (json{{"test_acc", 0.5}, {"note", "x"}}));
}

TEST(TrialEventsTest, OtherLinesAreNotEvents) {
  for (const char* line :
       {"", "  ", "loading model", "[1, 2]", "{\"a\": 1}", "{\"event\": 3}"}) {
    EXPECT_TRUE(absl::IsNotFound(ParseEvent(line).status())) << line;
  }
}

TEST(TrialEventsTest, LenientWhereTheDaemonWasStrictWhereTheCoordinatorIs) {
  // progress and checkpoint without numbers leave them unset.
  auto p = ParseEvent(R"({"event":"progress"})");
  ASSERT_TRUE(p.ok());
  EXPECT_FALSE(p->step.has_value());
  EXPECT_FALSE(p->total.has_value());
  EXPECT_EQ(ParseEvent(R"({"event":"progress","step":2.9})")->step, 2);
  // A result without metrics has none.
  auto r = ParseEvent(R"({"event":"result","metrics":[1]})");
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->metrics.empty());
  // Metrics the coordinator would refuse, and unknown events.
  for (const char* line :
       {R"({"event":"metric","name":"x","value":1})",
        R"({"event":"metric","step":-1,"name":"x","value":1})",
        R"({"event":"metric","step":1,"name":"","value":1})",
        R"({"event":"metric","step":1,"value":1})",
        R"({"event":"metric","step":1,"name":"x","value":"1"})",
        R"({"event":"metric","step":1,"name":"x"})",
        R"({"event":"finished"})"}) {
    EXPECT_TRUE(absl::IsInvalidArgument(ParseEvent(line).status())) << line;
  }
}

}  // namespace
}  // namespace smoe::trials
