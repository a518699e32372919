#include "fixtures/hold_policy.h"

#include <gtest/gtest.h>

#include <string>

namespace gapbench {
namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// preprocess's element-wise sumsq launches one kernel per row: 1,000,000 in the quick profile.
// Behind a hold its launches would fill the stream's queue and wait for a GPU that waits for
// them: it is timed unheld, and its label says why.
TEST(HoldPolicy, ALaunchStormIsTimedUnheldAndSaysSo) {
  constexpr std::size_t kRows = 1000000;
  EXPECT_EQ(choose_hold(kRows, true), Hold::too_many);
  const std::string note = kernel_time_note(Hold::too_many, kRows);
  EXPECT_TRUE(contains(note, "unheld: 1000000 launches")) << note;
  EXPECT_TRUE(contains(note, "includes the host's launches")) << note;
  EXPECT_TRUE(contains(overhead_share_note(Hold::too_many, kRows), "no overhead_share"));
}

TEST(HoldPolicy, WorkThatFitsIsHeldWithoutANote) {
  EXPECT_EQ(choose_hold(1, true), Hold::held);
  EXPECT_EQ(choose_hold(kMaxHeldLaunches, true), Hold::held);
  EXPECT_EQ(choose_hold(kMaxHeldLaunches + 1, true), Hold::too_many);
  EXPECT_EQ(kernel_time_note(Hold::held, 1), "");
  EXPECT_EQ(overhead_share_note(Hold::held, 1), "");
  // The limit leaves room for library calls counted low: well under the ~1000 a stream queues.
  EXPECT_LE(kMaxHeldLaunches * 2, 1000u);
}

TEST(HoldPolicy, WhereLaunchesBlockNothingIsHeld) {
  EXPECT_EQ(choose_hold(1, false), Hold::launches_block);
  EXPECT_EQ(choose_hold(1000000, false), Hold::launches_block);
  EXPECT_TRUE(contains(kernel_time_note(Hold::launches_block, 1), "launches block"));
}

TEST(HoldPolicy, NotesJoinAnExistingLabel) {
  EXPECT_EQ(join_label("algo 1", ""), "algo 1");
  EXPECT_EQ(join_label("", "unheld: x"), "unheld: x");
  EXPECT_EQ(join_label("algo 1", "unheld: x"), "algo 1; unheld: x");
}

}  // namespace
}  // namespace gapbench
