// Copyright 2026 SMoE Lab authors.
#include "common/flags.h"

#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace smoe {
namespace {

using ::testing::HasSubstr;

struct Outcome {
  std::optional<int> rc;
  std::string out, err;
};

// A two-level command line like smoe's: `smoe sweep ls|show`.
class FlagsTest : public ::testing::Test {
 protected:
  FlagsTest() {
    app_.require_subcommand(1);
    sweep_ = app_.add_subcommand("sweep", "Sweeps");
    sweep_->require_subcommand(1);
    show_ = sweep_->add_subcommand("show", "Show one");
    show_->add_option("--label", label_, "A label")->check(NonEmpty("label"));
    show_->add_option("--n", n_, "A count")->check(IntInRange(1, 8));
    sweep_->add_subcommand("ls", "List");
  }
  Outcome Parse(const std::vector<std::string>& args) {
    std::ostringstream out, err;
    Outcome o;
    o.rc = ParseCommandLine(&app_, args, out, err);
    o.out = out.str();
    o.err = err.str();
    return o;
  }
  CLI::App app_{"test", "smoe"};
  CLI::App* sweep_;
  CLI::App* show_;
  std::string label_ = "unset";
  int n_ = 1;
};

TEST_F(FlagsTest, UnknownOrMissingSubcommandNamesTheCommandAndTheChoices) {
  Outcome o = Parse({"sweep", "shwo"});
  EXPECT_EQ(o.rc, 64);
  EXPECT_THAT(o.err, HasSubstr("smoe sweep: 'shwo' is not a subcommand: one "
                               "of show, ls"));
  o = Parse({"sweep"});
  EXPECT_EQ(o.rc, 64);
  EXPECT_THAT(o.err,
              HasSubstr("smoe sweep: a subcommand is required: one of show"));
  o = Parse({"frobnicate"});
  EXPECT_EQ(o.rc, 64);
  EXPECT_THAT(o.err, HasSubstr("smoe: 'frobnicate' is not a subcommand"));
}

TEST_F(FlagsTest, ChecksNameTheFlagAndTheValue) {
  Outcome o = Parse({"sweep", "show", "--n", "9"});
  EXPECT_EQ(o.rc, 64);
  EXPECT_THAT(o.err, HasSubstr("--n: '9' (must be in 1..8)"));
  o = Parse({"sweep", "show", "--n=x"});
  EXPECT_THAT(o.err, HasSubstr("--n: 'x' (expected an integer)"));
  o = Parse({"sweep", "show", "--n", "3"});
  EXPECT_FALSE(o.rc.has_value()) << o.err;
  EXPECT_EQ(n_, 3);
  EXPECT_TRUE(show_->parsed());
}

TEST(NumberChecksTest, NameTheBoundAndQuoteTheValue) {
  CLI::App app{"test", "smoe"};
  double seconds = 1, keep = 1;
  app.add_option("--seconds", seconds)->check(PositiveNumber());
  app.add_option("--keep", keep)->check(NonNegativeNumber());
  auto parse = [&](const std::vector<std::string>& args) {
    std::ostringstream out, err;
    Outcome o;
    o.rc = ParseCommandLine(&app, args, out, err);
    o.err = err.str();
    return o;
  };
  Outcome o = parse({"--seconds", "0"});
  EXPECT_EQ(o.rc, 64);
  EXPECT_THAT(o.err, HasSubstr("--seconds: '0' (must be > 0)"));
  o = parse({"--keep", "-1"});
  EXPECT_THAT(o.err, HasSubstr("--keep: '-1' (must be >= 0)"));
  o = parse({"--seconds", "soon"});
  EXPECT_THAT(o.err, HasSubstr("--seconds: 'soon' (expected a number)"));
  o = parse({"--seconds", "inf"});
  EXPECT_THAT(o.err, HasSubstr("--seconds: 'inf' (expected a number)"));
  o = parse({"--seconds", "0.25", "--keep", "0"});
  EXPECT_FALSE(o.rc.has_value()) << o.err;
  EXPECT_EQ(seconds, 0.25);
  EXPECT_EQ(keep, 0);
}

// `--label=` is an empty value, not "take the next argument".
TEST_F(FlagsTest, EmptyValueAfterEqualsIsTheValue) {
  Outcome o = Parse({"sweep", "show", "--label=", "--n=2"});
  EXPECT_EQ(o.rc, 64);
  EXPECT_THAT(o.err, HasSubstr("--label: '' (empty label)"));
}

TEST_F(FlagsTest, HelpExitsZeroOnStdout) {
  Outcome o = Parse({"sweep", "show", "--help"});
  EXPECT_EQ(o.rc, 0);
  EXPECT_THAT(o.out, HasSubstr("--label"));
  EXPECT_TRUE(o.err.empty());
}

}  // namespace
}  // namespace smoe
