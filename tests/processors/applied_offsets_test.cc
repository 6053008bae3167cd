// Unit tests of AppliedOffsets (processors/applied_offsets.h): the position
// to commit is the first offset not settled, whatever order offsets are
// settled in, with the LSN of the last change before it.
#include "processors/applied_offsets.h"

#include <gtest/gtest.h>

namespace feedd {
namespace {

TEST(AppliedOffsetsTest, NothingToCommitUntilTheFirstOffsetIsSettled) {
  AppliedOffsets offsets;
  EXPECT_FALSE(offsets.TakeCommit().has_value());
  offsets.Receive(0, 10, 0);
  offsets.Receive(1, 11, 0);
  offsets.Settle(1);
  EXPECT_TRUE(offsets.Busy());
  EXPECT_FALSE(offsets.TakeCommit().has_value());
}

TEST(AppliedOffsetsTest, CommitsTheContiguousSettledPrefixOnly) {
  AppliedOffsets offsets;
  for (int64_t offset = 5; offset < 10; ++offset) offsets.Receive(offset, 100 + offset, 0);
  offsets.Settle(5);
  offsets.Settle(7);
  offsets.Settle(8);
  auto position = offsets.TakeCommit();
  ASSERT_TRUE(position.has_value());
  EXPECT_EQ(position->offset, 6);
  EXPECT_EQ(position->lsn, 105u);
  EXPECT_FALSE(offsets.TakeCommit().has_value()) << "it has not moved since";

  offsets.Settle(6);
  position = offsets.TakeCommit();
  ASSERT_TRUE(position.has_value());
  EXPECT_EQ(position->offset, 9);
  EXPECT_EQ(position->lsn, 108u);
  EXPECT_TRUE(offsets.Busy());
  offsets.Settle(9);
  EXPECT_FALSE(offsets.Busy());
  EXPECT_EQ(offsets.TakeCommit()->offset, 10);
}

TEST(AppliedOffsetsTest, MessagesWithoutAChangeKeepTheLastLsn) {
  AppliedOffsets offsets(42);  // the partition's LSN from its committed metadata
  offsets.Receive(3, 0, 40);   // a resolved marker
  offsets.Settle(3);
  auto position = offsets.TakeCommit();
  ASSERT_TRUE(position.has_value());
  EXPECT_EQ(position->offset, 4);
  EXPECT_EQ(position->lsn, 42u);
  EXPECT_EQ(offsets.resolved(), 40u);
}

TEST(AppliedOffsetsTest, AResolvedMarkerCountsOnlyOnceEverythingBeforeItIsSettled) {
  AppliedOffsets offsets;
  offsets.Receive(0, 7, 0);
  offsets.Receive(1, 0, 7);  // vouches for LSN 7
  offsets.Settle(1);
  offsets.TakeCommit();
  EXPECT_EQ(offsets.resolved(), 0u);
  offsets.Settle(0);
  offsets.TakeCommit();
  EXPECT_EQ(offsets.resolved(), 7u);
}

TEST(AppliedOffsetsTest, SettlingAnOffsetNotReceivedChangesNothing) {
  AppliedOffsets offsets;
  offsets.Receive(0, 1, 0);
  offsets.Settle(3);
  EXPECT_TRUE(offsets.Busy());
  EXPECT_FALSE(offsets.TakeCommit().has_value());
}

}  // namespace
}  // namespace feedd
