// Copyright 2026 SMoE Lab authors.
#include "common/suggest.h"

#include "gtest/gtest.h"

namespace smoe {
namespace {

const std::vector<std::string> kParams = {"M",     "top_k", "attention",
                                          "lr",    "width", "weight_decay",
                                          "steps", "warmup"};

// Issue 31 item 8: a near-miss parameter or axis name gets a suggestion.
TEST(SuggestTest, NearMissesSuggestTheParameter) {
  for (const char* miss : {"topk", "top-k", "TopK", "top_kk", "tpo_k"}) {
    EXPECT_EQ(ClosestName(miss, kParams), "top_k") << miss;
  }
  EXPECT_EQ(ClosestName("atention", kParams), "attention");
  EXPECT_EQ(ClosestName("weight-decay", kParams), "weight_decay");
  EXPECT_EQ(ClosestName("LR", kParams), "lr");
  EXPECT_EQ(DidYouMean("topk", kParams), " (did you mean 'top_k'?)");
}

TEST(SuggestTest, FarNamesAndExactNamesSuggestNothing) {
  EXPECT_EQ(ClosestName("batch_size", kParams), "");
  EXPECT_EQ(ClosestName("dropout", kParams), "");
  EXPECT_EQ(ClosestName("", kParams), "");
  EXPECT_EQ(ClosestName("top_k", kParams), "");
  EXPECT_EQ(DidYouMean("seed_count", kParams), "");
  // Short names allow one edit only: "x" is not "M".
  EXPECT_EQ(ClosestName("xy", kParams), "");
}

}  // namespace
}  // namespace smoe
