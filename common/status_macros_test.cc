// Copyright 2026 SMoE Lab authors.
#include "common/status_macros.h"

#include <memory>
#include <string>

#include "gtest/gtest.h"

namespace smoe {
namespace {

absl::Status FailIf(bool fail) {
  return fail ? absl::InvalidArgumentError("field 'k': value 9 > 8")
              : absl::OkStatus();
}

absl::StatusOr<int> Half(int x) {
  if (x % 2 != 0) return absl::InvalidArgumentError("odd");
  return x / 2;
}

int g_after_return = 0;

absl::Status Chain(bool fail) {
  SMOE_RETURN_IF_ERROR(FailIf(fail));
  ++g_after_return;
  return absl::OkStatus();
}

absl::StatusOr<int> Quarter(int x) {
  SMOE_ASSIGN_OR_RETURN(int h, Half(x));
  SMOE_ASSIGN_OR_RETURN(int q, Half(h));
  return q;
}

absl::StatusOr<std::unique_ptr<int>> MakeBox(int v) {
  return std::make_unique<int>(v);
}

absl::Status AssignExisting(int* out) {
  std::unique_ptr<int> box;
  SMOE_ASSIGN_OR_RETURN(box, MakeBox(7));  // move-only type into an lvalue
  *out = *box;
  return absl::OkStatus();
}

TEST(StatusMacrosTest, ReturnIfErrorPropagatesAndStops) {
  g_after_return = 0;
  absl::Status s = Chain(true);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "field 'k': value 9 > 8");
  EXPECT_EQ(g_after_return, 0);
  EXPECT_TRUE(Chain(false).ok());
  EXPECT_EQ(g_after_return, 1);
}

TEST(StatusMacrosTest, AssignOrReturn) {
  EXPECT_EQ(*Quarter(8), 2);
  EXPECT_EQ(Quarter(6).status().message(), "odd");  // 6 -> 3 -> odd
  EXPECT_EQ(Quarter(5).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(StatusMacrosTest, AssignOrReturnMoveOnlyIntoExistingVariable) {
  int out = 0;
  ASSERT_TRUE(AssignExisting(&out).ok());
  EXPECT_EQ(out, 7);
}

}  // namespace
}  // namespace smoe
