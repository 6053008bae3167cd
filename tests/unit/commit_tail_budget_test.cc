// CommitTailBudget with holders that stand in for CommitTails: a group
// shared by several tails counts once, a full budget refuses a tail with a
// queue but never one without, and makes room by asking the tails further
// behind, oldest first, to give up their queues.
#include "storage/commit_tail_budget.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

namespace feedd {
namespace {

// A queue of charged groups, as a CommitTail keeps one, and the position of
// its reader.
class FakeTail : public CommitTailBudget::Holder {
 public:
  FakeTail(CommitTailBudget* budget, Lsn position) : budget_(budget), position_(position) {
    budget_->Register(this);
  }
  ~FakeTail() override { budget_->Unregister(this); }

  // Queues `group` if the budget admits it.
  bool Offer(const CommittedChanges& group) {
    CommitTailBudget::Charge charge = budget_->Admit(this, position_, HasQueue(), group);
    if (!charge) return false;
    queue_.emplace_back(group, std::move(charge));
    return true;
  }
  // The reader takes the first queued group.
  void PopFront() {
    position_ = queue_.front().first->back().lsn + 1;
    queue_.erase(queue_.begin());
  }
  size_t queued() const { return queue_.size(); }
  int gave_up() const { return gave_up_; }

  Lsn ReaderPosition() const override { return position_; }
  bool HasQueue() const override { return !queue_.empty(); }
  void GiveUpQueue() override {
    queue_.clear();
    ++gave_up_;
  }

 private:
  CommitTailBudget* const budget_;
  Lsn position_;
  std::vector<std::pair<CommittedChanges, CommitTailBudget::Charge>> queue_;
  int gave_up_ = 0;
};

// One record of `envelope_bytes`, at `lsn`.
CommittedChanges Group(Lsn lsn, size_t envelope_bytes = 1000) {
  ChangeRecord r;
  r.lsn = lsn;
  r.container = "posts";
  r.partition_key = "p";
  r.id = "i" + std::to_string(lsn);
  r.envelope_json.assign(envelope_bytes, 'x');
  return std::make_shared<const std::vector<ChangeRecord>>(std::vector<ChangeRecord>{r});
}

// What one Group() counts for.
size_t GroupBytes() {
  CommitTailBudget probe(1 << 20);
  FakeTail tail(&probe, 1);
  EXPECT_TRUE(tail.Offer(Group(1)));
  return probe.used_bytes();
}

TEST(CommitTailBudgetTest, AGroupQueuedByEveryTailCountsOnceUntilTheLastDropsIt) {
  const size_t bytes = GroupBytes();
  ASSERT_GT(bytes, 1000u);
  CommitTailBudget budget(10 * bytes);
  FakeTail a(&budget, 1), b(&budget, 1), c(&budget, 1);
  CommittedChanges group = Group(1);
  ASSERT_TRUE(a.Offer(group));
  ASSERT_TRUE(b.Offer(group));
  ASSERT_TRUE(c.Offer(group));
  EXPECT_EQ(budget.used_bytes(), bytes);
  a.PopFront();
  b.PopFront();
  EXPECT_EQ(budget.used_bytes(), bytes);
  c.PopFront();
  EXPECT_EQ(budget.used_bytes(), 0u);
}

// Free for the others even once the budget is spent: the memory is.
TEST(CommitTailBudgetTest, AGroupAnotherTailHoldsIsAdmittedEvenWithTheBudgetSpent) {
  const size_t bytes = GroupBytes();
  CommitTailBudget budget(2 * bytes);
  FakeTail a(&budget, 2), b(&budget, 1);
  ASSERT_TRUE(b.Offer(Group(1)));
  CommittedChanges shared = Group(2);
  ASSERT_TRUE(a.Offer(shared));  // an empty queue: admitted
  ASSERT_EQ(budget.used_bytes(), 2 * bytes);
  EXPECT_TRUE(b.Offer(shared));
  EXPECT_EQ(b.queued(), 2u);
  EXPECT_EQ(budget.used_bytes(), 2 * bytes);
  EXPECT_EQ(a.gave_up() + b.gave_up(), 0);
}

// Tails with empty queues that take the same group past the budget share
// it too: it is held once.
TEST(CommitTailBudgetTest, AGroupTakenPastTheBudgetByEmptyQueuesCountsOnce) {
  const size_t bytes = GroupBytes();
  CommitTailBudget budget(bytes);
  FakeTail full(&budget, 1), a(&budget, 2), b(&budget, 2);
  ASSERT_TRUE(full.Offer(Group(1)));
  CommittedChanges group = Group(2);
  ASSERT_TRUE(a.Offer(group));
  ASSERT_TRUE(b.Offer(group));
  EXPECT_EQ(budget.used_bytes(), 2 * bytes);
}

// A group that a tail keeping up queued past the budget is not free for a
// tail behind: once the first drops it, it would cost on, and a reader that
// never catches up would grow its queue without bound.
TEST(CommitTailBudgetTest, AGroupQueuedPastTheBudgetIsNotFreeForATailBehind) {
  const size_t bytes = GroupBytes();
  CommitTailBudget budget(2 * bytes);
  FakeTail behind(&budget, 1), keeping_up(&budget, 3);
  ASSERT_TRUE(behind.Offer(Group(1)));
  ASSERT_TRUE(behind.Offer(Group(2)));
  for (Lsn lsn = 3; lsn <= 10; ++lsn) {
    CommittedChanges group = Group(lsn);
    ASSERT_TRUE(keeping_up.Offer(group));  // an empty queue: always
    EXPECT_FALSE(behind.Offer(group));
    keeping_up.PopFront();
    EXPECT_EQ(budget.used_bytes(), 2 * bytes);
  }
  EXPECT_EQ(behind.queued(), 2u);
}

TEST(CommitTailBudgetTest, AFullBudgetRefusesATailWithAQueueButNeverOneWithout) {
  const size_t bytes = GroupBytes();
  CommitTailBudget budget(2 * bytes);
  FakeTail tail(&budget, 1);
  EXPECT_TRUE(tail.Offer(Group(1)));
  EXPECT_TRUE(tail.Offer(Group(2)));
  EXPECT_FALSE(tail.Offer(Group(3)));
  EXPECT_EQ(budget.used_bytes(), 2 * bytes);
  FakeTail empty(&budget, 3);
  EXPECT_TRUE(empty.Offer(Group(3)));  // passes the budget by one group
  EXPECT_EQ(budget.used_bytes(), 3 * bytes);
  EXPECT_EQ(tail.gave_up(), 0);  // an empty queue asks nobody
}

TEST(CommitTailBudgetTest, TheTailsFurthestBehindGiveUpTheirQueuesOldestFirst) {
  const size_t bytes = GroupBytes();
  CommitTailBudget budget(4 * bytes);
  FakeTail oldest(&budget, 1), older(&budget, 3), ahead(&budget, 4);
  ASSERT_TRUE(oldest.Offer(Group(1)));
  ASSERT_TRUE(oldest.Offer(Group(2)));
  ASSERT_TRUE(older.Offer(Group(3)));
  ASSERT_TRUE(ahead.Offer(Group(4)));
  ASSERT_EQ(budget.used_bytes(), 4 * bytes);
  // `ahead` needs one group's room: `oldest` frees two, `older` keeps its own.
  EXPECT_TRUE(ahead.Offer(Group(5)));
  EXPECT_EQ(oldest.gave_up(), 1);
  EXPECT_EQ(oldest.queued(), 0u);
  EXPECT_EQ(older.gave_up(), 0);
  EXPECT_EQ(older.queued(), 1u);
  EXPECT_EQ(ahead.queued(), 2u);
  EXPECT_EQ(budget.queues_given_up(), 1u);
  EXPECT_EQ(budget.used_bytes(), 3 * bytes);
}

// Behind is where the reader is, not where its queue starts: a reader that
// skipped to the newest group (its queue given up, or refused while it held
// one) has a queue that starts ahead of the others', and it is still the
// one furthest behind.
TEST(CommitTailBudgetTest, TheTailBehindIsTheOneWhoseReaderIsBehindWhereverItsQueueStarts) {
  const size_t bytes = GroupBytes();
  CommitTailBudget budget(3 * bytes);
  FakeTail stuck(&budget, 1), live(&budget, 4);
  ASSERT_TRUE(live.Offer(Group(4)));
  CommittedChanges large = Group(5, 4 * bytes);
  ASSERT_FALSE(live.Offer(large));  // larger than the budget, and `live` holds a group
  ASSERT_TRUE(stuck.Offer(large));  // an empty queue; LSNs 1-4 come from the feed
  EXPECT_TRUE(live.Offer(Group(6)));
  EXPECT_EQ(stuck.gave_up(), 1);
  EXPECT_EQ(live.gave_up(), 0);
  EXPECT_EQ(live.queued(), 2u);
}

// A tail whose reader is at LSN 1 and one whose reader is at LSN 2, each
// holding its own group, under a budget of `groups` Group()s.
struct BehindAndAhead {
  explicit BehindAndAhead(size_t groups)
      : bytes(GroupBytes()), budget(groups * bytes), behind(&budget, 1), ahead(&budget, 2) {
    EXPECT_TRUE(behind.Offer(Group(1)));
    EXPECT_TRUE(ahead.Offer(Group(2)));
  }
  const size_t bytes;
  CommitTailBudget budget;
  FakeTail behind, ahead;
};

// The tail furthest behind is refused rather than taking the memory of
// the tails ahead of it.
TEST(CommitTailBudgetTest, TheTailFurthestBehindIsRefusedAndNobodyGivesUp) {
  BehindAndAhead tails(2);
  EXPECT_FALSE(tails.behind.Offer(Group(3)));
  EXPECT_EQ(tails.ahead.gave_up(), 0);
  EXPECT_EQ(tails.ahead.queued(), 1u);
  EXPECT_EQ(tails.budget.queues_given_up(), 0u);
}

// A group that no room could hold costs nobody a queue.
TEST(CommitTailBudgetTest, AGroupLargerThanTheBudgetMakesNobodyGiveUp) {
  BehindAndAhead tails(3);
  EXPECT_FALSE(tails.ahead.Offer(Group(3, 4 * tails.bytes)));
  EXPECT_EQ(tails.behind.gave_up(), 0);
  EXPECT_EQ(tails.behind.queued(), 1u);
}

// A tail out of the budget is not asked, though its queue would make room.
TEST(CommitTailBudgetTest, AnUnregisteredTailIsNeverAskedToGiveUp) {
  BehindAndAhead tails(2);
  tails.budget.Unregister(&tails.behind);
  EXPECT_FALSE(tails.ahead.Offer(Group(3)));
  EXPECT_EQ(tails.behind.gave_up(), 0);
  EXPECT_EQ(tails.behind.queued(), 1u);
}

}  // namespace
}  // namespace feedd
