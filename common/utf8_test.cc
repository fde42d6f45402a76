// Copyright 2026 SMoE Lab authors.
#include "common/utf8.h"

#include <string>

#include "gtest/gtest.h"

namespace smoe {
namespace {

TEST(Utf8Test, WellFormedTextIsKept) {
  for (const std::string s :
       {"", "plain", "caf\xC3\xA9", "\xE2\x82\xAC 5", "\xF0\x9F\x98\x80"}) {
    EXPECT_TRUE(IsValidUtf8(s)) << s;
    EXPECT_EQ(ToValidUtf8(s), s);
  }
}

TEST(Utf8Test, IllFormedBytesAreReplacedOneByOne) {
  // Latin-1 e-acute (issue 36 item 1: `printf "caf\351"`).
  EXPECT_EQ(InvalidUtf8Offset("caf\xE9\n"), 3);
  EXPECT_EQ(ToValidUtf8("caf\xE9\n"), "caf\xEF\xBF\xBD\n");
  // A cut multibyte character, a lone continuation byte, an overlong form,
  // a surrogate, a value past U+10FFFF.
  EXPECT_EQ(ToValidUtf8("a\xE2\x82"), "a\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_EQ(ToValidUtf8("\x80x"), "\xEF\xBF\xBDx");
  EXPECT_EQ(ToValidUtf8("\xC0\xAF"), "\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_FALSE(IsValidUtf8("\xED\xA0\x80"));
  EXPECT_FALSE(IsValidUtf8("\xF4\x90\x80\x80"));
  for (const std::string s : {"caf\xE9", "\xFF\xFE", "a\xE2\x82", "\xC0\xAF"}) {
    EXPECT_TRUE(IsValidUtf8(ToValidUtf8(s))) << s;
  }
}

TEST(Utf8Test, CutsFallOnCharacterBoundaries) {
  const std::string s =
      "ab\xE2\x82\xAC"
      "c";  // "ab€c"
  EXPECT_EQ(Utf8CutBefore(s, 2), 2u);
  EXPECT_EQ(Utf8CutBefore(s, 3), 2u);
  EXPECT_EQ(Utf8CutBefore(s, 4), 2u);
  EXPECT_EQ(Utf8CutBefore(s, 5), 5u);
  EXPECT_EQ(Utf8CutBefore(s, 100), s.size());
  EXPECT_EQ(Utf8CharStartAtOrAfter(s, 3), 5u);
  EXPECT_EQ(Utf8CharStartAtOrAfter(s, 2), 2u);
  EXPECT_EQ(Utf8CharStartAtOrAfter(s, 6), 6u);
}

}  // namespace
}  // namespace smoe
