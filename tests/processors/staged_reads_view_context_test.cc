// Unit tests of StagedReadsViewContext (processors/staged_reads_view_context.h)
// over a FakeViewContext: reads and queries see the writes staged through
// it, nothing is committed until the inner context commits, and what the
// inner context finally stores equals what the reads showed.
#include "processors/staged_reads_view_context.h"

#include <gtest/gtest.h>

#include <set>

#include "fake_view_context.h"
#include "processors/processor_instance.h"
#include "processors/view_read_memo.h"

namespace feedd {
namespace {

constexpr size_t kMemoBytes = 128u << 20;  // a processor's default read_memo_mb

using boost::json::object;
using proctest::FakeViewContext;
using proctest::Obj;
using proctest::Ptr;
using proctest::S;
using proctest::WithoutStoreFields;

// Items of `feed` (partition key /type) ranked by "rank".
object FeedItem(const std::string& id, int rank, const std::string& type = "post") {
  return object{{"id", id}, {"type", type}, {"rank", rank}, {"_sourceLsn", rank}};
}

std::vector<std::string> Ids(const std::vector<object>& items) {
  std::vector<std::string> ids;
  for (const auto& i : items) ids.push_back(S(i, "id"));
  return ids;
}

std::vector<std::string> Ids(const std::vector<ViewReadMemo::Item>& items) {
  std::vector<std::string> ids;
  for (const auto& i : items) ids.push_back(S(*i, "id"));
  return ids;
}

// An answer for a ViewReadMemo: `n` copies of `item`.
ViewReadMemo::Items Answer(size_t n, const object& item) {
  auto items = std::make_shared<std::vector<ViewReadMemo::Item>>();
  for (size_t i = 0; i < n; ++i) items->push_back(std::make_shared<const object>(item));
  return items;
}

QuerySpec Ranked(std::optional<std::string> pk, bool descending = true) {
  QuerySpec q;
  q.partition_key = std::move(pk);
  q.order_by = Ptr("/rank");
  q.descending = descending;
  return q;
}

class StagedReadsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int i = 1; i <= 5; ++i) inner_.Poke("feed", FeedItem("f" + std::to_string(i), i * 10));
    inner_.Poke("feed", FeedItem("d1", 35, "draft"));
  }
  std::vector<std::string> Query(const QuerySpec& q) {
    auto all = QueryAll(staged_, "feed", q);
    EXPECT_TRUE(all.ok()) << all.status().ToString();
    return all.ok() ? Ids(*all) : std::vector<std::string>{};
  }

  FakeViewContext inner_;
  StagedReadsViewContext staged_{&inner_};
};

TEST_F(StagedReadsTest, WithNothingStagedReadsAndQueriesAreTheInnerOnes) {
  EXPECT_EQ(Query(Ranked("post")), (std::vector<std::string>{"f5", "f4", "f3", "f2", "f1"}));
  auto f3 = staged_.Read("feed", "post", "f3");
  ASSERT_TRUE(f3.ok() && *f3);
  EXPECT_EQ(S(**f3, "id"), "f3");
}

TEST_F(StagedReadsTest, ReadsSeeStagedUpsertsAndDeletesBeforeAnyCommit) {
  ASSERT_TRUE(staged_.Upsert("feed", FeedItem("n1", 99)).ok());
  ASSERT_TRUE(staged_.Delete("feed", "post", "f2").ok());
  auto n1 = staged_.Read("feed", "post", "n1");
  ASSERT_TRUE(n1.ok() && *n1);
  EXPECT_EQ(**n1, FeedItem("n1", 99));
  auto f2 = staged_.Read("feed", "post", "f2");
  ASSERT_TRUE(f2.ok());
  EXPECT_FALSE(*f2);
  // Not committed yet: the inner store is unchanged.
  EXPECT_FALSE(inner_.Get("feed", "post", "n1"));
  EXPECT_TRUE(inner_.Get("feed", "post", "f2"));
}

TEST_F(StagedReadsTest, QueriesMergeStagedWritesInTheQueryEnginesOrder) {
  ASSERT_TRUE(staged_.Upsert("feed", FeedItem("n1", 45)).ok());           // new, between f4, f5
  ASSERT_TRUE(staged_.Upsert("feed", FeedItem("f1", 60)).ok());           // moves to the top
  ASSERT_TRUE(staged_.Delete("feed", "post", "f3").ok());                 // removed
  ASSERT_TRUE(staged_.Upsert("feed", FeedItem("n2", 20, "draft")).ok());  // other partition
  ASSERT_TRUE(staged_.Upsert("feed", FeedItem("n3", 40)).ok());           // ties f4 on rank
  EXPECT_EQ(Query(Ranked("post")), (std::vector<std::string>{"f1", "f5", "n1", "n3", "f4", "f2"}));
  EXPECT_EQ(Query(Ranked("post", false)),
            (std::vector<std::string>{"f2", "f4", "n3", "n1", "f5", "f1"}));
  EXPECT_EQ(Query(Ranked("draft")), (std::vector<std::string>{"d1", "n2"}));
  // Cross-partition, ties by row key (storage/query_semantics.h): the
  // shorter partition key first, post < draft.
  EXPECT_EQ(Query(Ranked(std::nullopt, false)),
            (std::vector<std::string>{"f2", "n2", "d1", "f4", "n3", "n1", "f5", "f1"}));
  QuerySpec filtered = Ranked(std::nullopt);
  filtered.filters.push_back(FieldFilter{Ptr("/rank"), 45});
  EXPECT_EQ(Query(filtered), (std::vector<std::string>{"n1"}));
  // One page, whatever the limit: the caller gets the whole view.
  QuerySpec small = Ranked("post");
  small.limit = 2;
  auto page = staged_.Query("feed", small);
  ASSERT_TRUE(page.ok());
  EXPECT_EQ(page->items.size(), 6u);
  EXPECT_FALSE(page->continuation);
}

// A staged item is filtered as the query engine filters stored ones:
// numbers by value, so 1.0 matches a filter on 1 (and the reverse).
TEST_F(StagedReadsTest, AFilterMatchesAStagedNumberByValue) {
  object whole = FeedItem("n1", 0);
  whole["rank"] = 1.0;
  ASSERT_TRUE(staged_.Upsert("feed", whole).ok());
  ASSERT_TRUE(staged_.Upsert("feed", FeedItem("n2", 2)).ok());
  QuerySpec one = Ranked("post");
  one.filters.push_back(FieldFilter{Ptr("/rank"), 1});
  EXPECT_EQ(Query(one), (std::vector<std::string>{"n1"}));
  QuerySpec two = Ranked("post");
  two.filters.push_back(FieldFilter{Ptr("/rank"), 2.0});
  EXPECT_EQ(Query(two), (std::vector<std::string>{"n2"}));
}

TEST_F(StagedReadsTest, ARunOfQueriesReadsTheInnerViewOnceUntilAFlush) {
  ASSERT_TRUE(staged_.Upsert("feed", FeedItem("n1", 45)).ok());
  const size_t before = inner_.reads();
  EXPECT_EQ(Query(Ranked("post")).size(), 6u);
  const size_t one_query = inner_.reads() - before;
  EXPECT_GE(one_query, 1u);
  ASSERT_TRUE(staged_.Upsert("feed", FeedItem("n2", 46)).ok());
  EXPECT_EQ(Query(Ranked("post")).size(), 7u);    // the staged write shows...
  EXPECT_EQ(inner_.reads() - before, one_query);  // ...without reading the store again
  ASSERT_TRUE(staged_.Flush().ok());
  ASSERT_TRUE(staged_.Upsert("feed", FeedItem("n3", 47)).ok());
  EXPECT_EQ(Query(Ranked("post")).size(), 8u);
  EXPECT_EQ(inner_.reads() - before, 2 * one_query);  // after a flush the store is read
}

TEST_F(StagedReadsTest, SetFieldShowsInReadsAndIsANoOpOnAMissingItem) {
  ASSERT_TRUE(staged_.SetField("feed", "post", "f2", Ptr("/title"), "hello").ok());
  ASSERT_TRUE(staged_.SetField("feed", "post", "nope", Ptr("/title"), "x").ok());
  auto f2 = staged_.Read("feed", "post", "f2");
  ASSERT_TRUE(f2.ok() && *f2);
  EXPECT_EQ(S(**f2, "title"), "hello");
  auto nope = staged_.Read("feed", "post", "nope");
  ASSERT_TRUE(nope.ok());
  EXPECT_FALSE(*nope);
  ASSERT_TRUE(inner_.Commit().ok());
  EXPECT_EQ(S(*inner_.Get("feed", "post", "f2"), "title"), "hello");
  EXPECT_FALSE(inner_.Get("feed", "post", "nope"));
}

TEST_F(StagedReadsTest, WhatTheInnerContextCommitsIsWhatTheReadsShowed) {
  ASSERT_TRUE(staged_.Upsert("feed", FeedItem("n1", 45)).ok());
  ASSERT_TRUE(staged_.Upsert("feed", FeedItem("n1", 47)).ok());
  ASSERT_TRUE(staged_.Delete("feed", "post", "f3").ok());
  ASSERT_TRUE(staged_.Upsert("feed", FeedItem("f3", 1)).ok());
  ASSERT_TRUE(staged_.Delete("feed", "post", "f5").ok());
  std::vector<std::string> seen = Query(Ranked("post"));
  std::vector<object> seen_items = *QueryAll(staged_, "feed", Ranked("post"));
  ASSERT_TRUE(inner_.Commit().ok());
  auto committed = QueryAll(inner_, "feed", Ranked("post"));
  ASSERT_TRUE(committed.ok());
  EXPECT_EQ(Ids(*committed), seen);
  ASSERT_EQ(committed->size(), seen_items.size());
  for (size_t i = 0; i < seen_items.size(); ++i) {
    EXPECT_EQ(WithoutStoreFields((*committed)[i]), WithoutStoreFields(seen_items[i]));
  }
}

TEST_F(StagedReadsTest, AWriteTheInnerContextRefusesIsNotStaged) {
  inner_.FailWritesTo("feed");
  EXPECT_FALSE(staged_.Upsert("feed", FeedItem("n1", 45)).ok());
  EXPECT_FALSE(staged_.Delete("feed", "post", "f1").ok());
  auto n1 = staged_.Read("feed", "post", "n1");
  ASSERT_TRUE(n1.ok());
  EXPECT_FALSE(*n1);
  auto f1 = staged_.Read("feed", "post", "f1");
  ASSERT_TRUE(f1.ok());
  EXPECT_TRUE(*f1);
}

// With a ViewReadMemo: batches of one processor, each a StagedReadsViewContext
// over the same inner context. `generation_` plays the store's partition
// generation (DocumentStore::PartitionGeneration): a commit adds one per
// change, as the store does.
class MemoTest : public StagedReadsTest {
 protected:
  std::vector<std::string> QueryIn(StagedReadsViewContext& batch, const QuerySpec& q) {
    auto all = QueryAll(batch, "feed", q);
    EXPECT_TRUE(all.ok()) << all.status().ToString();
    return all.ok() ? Ids(*all) : std::vector<std::string>{};
  }
  // Commits what `batch` staged, `changes` of them in partition "post";
  // `took_effect`: the store changed something for every staged write.
  void Commit(StagedReadsViewContext& batch, uint64_t changes, bool took_effect = true) {
    ASSERT_TRUE(inner_.Commit().ok());
    generation_ += changes;
    batch.Committed(took_effect);
  }
  std::vector<std::string> Stored() {
    auto all = QueryAll(inner_, "feed", Ranked("post"));
    EXPECT_TRUE(all.ok());
    return all.ok() ? Ids(*all) : std::vector<std::string>{};
  }

  ViewReadMemo::GenerationFn Generations() {
    return [this](const std::string&, const std::string& pk,
                  const std::string&) -> std::optional<uint64_t> {
      if (pk != "post") return std::nullopt;  // a store that keeps no counter for it
      return generation_;
    };
  }

  uint64_t generation_ = 7;
  ViewReadMemo memo_{Generations(), ViewReadMemo::QueryLimits(kMemoBytes)};
};

TEST_F(MemoTest, ACommittedBatchCarriesThePartitionToTheNextOne) {
  {
    StagedReadsViewContext batch(&inner_, &memo_);
    EXPECT_EQ(QueryIn(batch, Ranked("post")).size(), 5u);
    ASSERT_TRUE(batch.Upsert("feed", FeedItem("n1", 45)).ok());
    ASSERT_TRUE(batch.Upsert("feed", FeedItem("f1", 60)).ok());
    ASSERT_TRUE(batch.Delete("feed", "post", "f3").ok());
    Commit(batch, 3);
  }
  StagedReadsViewContext next(&inner_, &memo_);
  const size_t reads = inner_.reads();
  EXPECT_EQ(QueryIn(next, Ranked("post")), Stored());
  EXPECT_EQ(inner_.reads() - reads, 1u) << "only Stored() read the inner context";
  EXPECT_EQ(memo_.hits(), 1u);
  // The kept items are the committed ones (store fields aside).
  auto kept = QueryAll(next, "feed", Ranked("post"));
  auto stored = QueryAll(inner_, "feed", Ranked("post"));
  ASSERT_TRUE(kept.ok() && stored.ok());
  ASSERT_EQ(kept->size(), stored->size());
  for (size_t i = 0; i < kept->size(); ++i) {
    EXPECT_EQ(WithoutStoreFields((*kept)[i]), WithoutStoreFields((*stored)[i]));
  }
}

TEST_F(MemoTest, AChangeByAnyoneElseMakesTheNextBatchReadTheStore) {
  {
    StagedReadsViewContext batch(&inner_, &memo_);
    EXPECT_EQ(QueryIn(batch, Ranked("post")).size(), 5u);
    ASSERT_TRUE(batch.Upsert("feed", FeedItem("n1", 45)).ok());
    // Another writer's change to the partition lands in between.
    inner_.Poke("feed", FeedItem("x1", 99));
    Commit(batch, 1 + 1);
  }
  StagedReadsViewContext next(&inner_, &memo_);
  EXPECT_EQ(QueryIn(next, Ranked("post")),
            (std::vector<std::string>{"x1", "f5", "n1", "f4", "f3", "f2", "f1"}));
  EXPECT_EQ(memo_.hits(), 0u);
  // A change that turned out to be a no-op (the store counted none) is
  // indistinguishable from it: a miss too, never a stale answer.
  {
    StagedReadsViewContext batch(&inner_, &memo_);
    ASSERT_TRUE(batch.Delete("feed", "post", "never-there").ok());
    EXPECT_EQ(QueryIn(batch, Ranked("post")).size(), 7u);
    Commit(batch, 0);
  }
  StagedReadsViewContext last(&inner_, &memo_);
  EXPECT_EQ(QueryIn(last, Ranked("post")).size(), 7u);
  EXPECT_EQ(memo_.hits(), 0u);
}

// A write the store skipped (a delete of an item another writer removed)
// while someone else changed the partition: the counter grew by the count of
// staged writes, but the answer is not the store's.
TEST_F(MemoTest, AWriteTheStoreSkippedKeepsNoAnswer) {
  {
    StagedReadsViewContext batch(&inner_, &memo_);
    QueryIn(batch, Ranked("post"));
    Commit(batch, 0);
  }
  {
    StagedReadsViewContext batch(&inner_, &memo_);
    ASSERT_TRUE(batch.Upsert("feed", FeedItem("n1", 45)).ok());
    EXPECT_EQ(QueryIn(batch, Ranked("post")).size(), 6u);
    inner_.DiscardStaged();                   // the store skips the write...
    inner_.Poke("feed", FeedItem("x1", 99));  // ...and another writer's change lands
    Commit(batch, 1, /*took_effect=*/false);
  }
  StagedReadsViewContext next(&inner_, &memo_);
  EXPECT_EQ(QueryIn(next, Ranked("post")), Stored());
  EXPECT_EQ(QueryIn(next, Ranked("post")),
            (std::vector<std::string>{"x1", "f5", "f4", "f3", "f2", "f1"}));
}

TEST_F(MemoTest, AFailedCommitLeavesTheMemoAtTheCommittedState) {
  {
    StagedReadsViewContext batch(&inner_, &memo_);
    QueryIn(batch, Ranked("post"));
    Commit(batch, 0);  // nothing written: the answer is kept as read
  }
  {
    StagedReadsViewContext batch(&inner_, &memo_);
    EXPECT_EQ(QueryIn(batch, Ranked("post")).size(), 5u);  // from the memo
    ASSERT_TRUE(batch.Upsert("feed", FeedItem("n1", 45)).ok());
    EXPECT_EQ(QueryIn(batch, Ranked("post")).size(), 6u);
    inner_.FailNextCommits(1);
    EXPECT_FALSE(inner_.Commit().ok());  // the runtime then never calls Committed()
  }
  StagedReadsViewContext next(&inner_, &memo_);
  EXPECT_EQ(QueryIn(next, Ranked("post")), Stored());
  EXPECT_EQ(QueryIn(next, Ranked("post")).size(), 5u);
  EXPECT_EQ(memo_.hits(), 2u);
}

TEST_F(MemoTest, QueriesWithoutAPartitionOrItsCounterGoToTheInnerContext) {
  {
    StagedReadsViewContext batch(&inner_, &memo_);
    QueryIn(batch, Ranked(std::nullopt));  // cross-partition
    QueryIn(batch, Ranked("draft"));       // no counter kept for it
    Commit(batch, 0);
  }
  StagedReadsViewContext next(&inner_, &memo_);
  const size_t reads = inner_.reads();
  EXPECT_EQ(QueryIn(next, Ranked(std::nullopt)).size(), 6u);
  EXPECT_EQ(QueryIn(next, Ranked("draft")), (std::vector<std::string>{"d1"}));
  EXPECT_GE(inner_.reads() - reads, 2u);
  EXPECT_EQ(memo_.hits(), 0u);
}

TEST_F(MemoTest, AnItemIsReadOnceWhileItsPartitionIsUnchanged) {
  ViewReadMemo items(Generations(), ViewReadMemo::ItemLimits(kMemoBytes));
  auto read = [&](const std::string& pk, const std::string& id) {
    StagedReadsViewContext batch(&inner_, nullptr, &items);
    auto item = batch.Read("feed", pk, id);
    EXPECT_TRUE(item.ok());
    if (!item.ok() || !*item) return std::string("none");
    return S(**item, "id") + "@" + std::to_string((**item).at("rank").as_int64());
  };
  const size_t reads = inner_.reads();
  EXPECT_EQ(read("post", "f2"), "f2@20");
  EXPECT_EQ(read("post", "f2"), "f2@20");
  EXPECT_EQ(read("post", "nope"), "none");
  EXPECT_EQ(read("post", "nope"), "none");  // not found is kept too
  EXPECT_EQ(inner_.reads() - reads, 2u);
  EXPECT_EQ(items.hits(), 2u);
  // A change to the partition: read again, and the new version shows.
  inner_.Poke("feed", FeedItem("f2", 21));
  ++generation_;
  EXPECT_EQ(read("post", "f2"), "f2@21");
  EXPECT_EQ(inner_.reads() - reads, 3u);
  // A partition without a counter is always read.
  EXPECT_EQ(read("draft", "d1"), "d1@35");
  EXPECT_EQ(read("draft", "d1"), "d1@35");
  EXPECT_EQ(inner_.reads() - reads, 5u);
  // What a batch staged wins over what is kept.
  StagedReadsViewContext batch(&inner_, nullptr, &items);
  ASSERT_TRUE(batch.Upsert("feed", FeedItem("f2", 22)).ok());
  auto f2 = batch.Read("feed", "post", "f2");
  ASSERT_TRUE(f2.ok() && *f2);
  EXPECT_EQ((**f2).at("rank").as_int64(), 22);
}

// The shared answers are what the batch keeps, handed out without a copy,
// and each stays the snapshot it was when a later write changes the batch's
// answer.
TEST_F(MemoTest, SharedAnswersAreTheKeptOnesAndStaySnapshots) {
  StagedReadsViewContext batch(&inner_, &memo_);
  auto first = batch.QueryAllShared("feed", Ranked("post"));
  auto again = batch.QueryAllShared("feed", Ranked("post"));
  ASSERT_TRUE(first.ok() && again.ok());
  EXPECT_EQ(first->get(), again->get()) << "the second answer is a copy";
  EXPECT_EQ(Ids(**first), (std::vector<std::string>{"f5", "f4", "f3", "f2", "f1"}));
  ASSERT_TRUE(batch.Upsert("feed", FeedItem("n1", 45)).ok());
  ASSERT_TRUE(batch.Delete("feed", "post", "f3").ok());
  EXPECT_EQ(Ids(**first), (std::vector<std::string>{"f5", "f4", "f3", "f2", "f1"}));
  auto after = batch.QueryAllShared("feed", Ranked("post"));
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(Ids(**after), (std::vector<std::string>{"f5", "n1", "f4", "f2", "f1"}));
  EXPECT_EQ(QueryIn(batch, Ranked("post")), Ids(**after));
  // Not held by anyone, the answer takes the next write in place.
  const auto* held = after->get();
  after->reset();
  ASSERT_TRUE(batch.Upsert("feed", FeedItem("n2", 46)).ok());
  auto last = batch.QueryAllShared("feed", Ranked("post"));
  ASSERT_TRUE(last.ok());
  EXPECT_EQ(last->get(), held);
  EXPECT_EQ(Ids(**last), (std::vector<std::string>{"f5", "n2", "n1", "f4", "f2", "f1"}));
  // Committed, it is the next batch's answer: the snapshot taken before the
  // writes did not keep the memo from taking it.
  Commit(batch, 3);
  first->reset();
  StagedReadsViewContext next(&inner_, &memo_);
  EXPECT_EQ(QueryIn(next, Ranked("post")), Stored());
  EXPECT_EQ(memo_.hits(), 1u);
}

TEST_F(MemoTest, ASharedReadIsTheKeptItemAndAStagedWriteWins) {
  ViewReadMemo items(Generations(), ViewReadMemo::ItemLimits(kMemoBytes));
  ViewContext::SharedItem kept;
  {
    StagedReadsViewContext batch(&inner_, nullptr, &items);
    auto f2 = batch.ReadShared("feed", "post", "f2");
    ASSERT_TRUE(f2.ok() && *f2);
    kept = *f2;
  }
  StagedReadsViewContext batch(&inner_, nullptr, &items);
  const size_t reads = inner_.reads();
  auto f2 = batch.ReadShared("feed", "post", "f2");
  ASSERT_TRUE(f2.ok() && *f2);
  EXPECT_EQ(f2->get(), kept.get()) << "a kept item is handed out as a copy";
  EXPECT_EQ(inner_.reads(), reads);
  auto none = batch.ReadShared("feed", "post", "nope");
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(*none, nullptr);
  ASSERT_TRUE(batch.Upsert("feed", FeedItem("f2", 22)).ok());
  auto staged = batch.ReadShared("feed", "post", "f2");
  ASSERT_TRUE(staged.ok() && *staged);
  EXPECT_EQ((**staged).at("rank").as_int64(), 22);
  EXPECT_EQ(kept->at("rank").as_int64(), 20);  // the snapshot is unchanged
  ASSERT_TRUE(batch.Delete("feed", "post", "f2").ok());
  auto deleted = batch.ReadShared("feed", "post", "f2");
  ASSERT_TRUE(deleted.ok());
  EXPECT_EQ(*deleted, nullptr);
}

// A change from the commit path carries its item's generation right after
// it. While the item's generation is still that one, its after-image is the
// current version, and a read of the item is answered with it, without
// reading the store; once the item changed again, the store is read. (The
// store's f2 differs from the images here only to tell the two apart.)
TEST_F(MemoTest, TheChangedItemIsReadFromItsChangeWhileNothingChangedItSince) {
  ViewReadMemo items(Generations(), ViewReadMemo::ItemLimits(kMemoBytes));
  Change change;
  change.container = "feed";
  change.partition_key = "post";
  change.id = "f2";
  change.after = std::make_shared<const object>(FeedItem("f2", 99));
  change.item_generation = generation_;
  const size_t reads = inner_.reads();
  {
    StagedReadsViewContext batch(&inner_, nullptr, &items);
    batch.Applying(change);
    auto read = batch.Read("feed", "post", "f2");
    ASSERT_TRUE(read.ok());
    ASSERT_TRUE(*read);
    EXPECT_EQ((**read).at("rank").as_int64(), 99);
    auto shared = batch.ReadShared("feed", "post", "f2");
    ASSERT_TRUE(shared.ok());
    EXPECT_EQ(shared->get(), change.after.get()) << "the change's image itself";
    EXPECT_EQ(inner_.reads(), reads);

    Change deleted = change;
    deleted.after = nullptr;
    batch.Applying(deleted);
    auto gone = batch.Read("feed", "post", "f2");
    ASSERT_TRUE(gone.ok());
    EXPECT_FALSE(*gone);
    EXPECT_EQ(inner_.reads(), reads);
  }
  for (uint64_t stale : {generation_ - 1, uint64_t{0}}) {  // changed since; not known
    change.item_generation = stale;
    StagedReadsViewContext batch(&inner_, nullptr, &items);
    batch.Applying(change);
    auto read = batch.Read("feed", "post", "f2");
    ASSERT_TRUE(read.ok());
    ASSERT_TRUE(*read);
    EXPECT_EQ((**read).at("rank").as_int64(), 20) << stale;
  }
  EXPECT_EQ(inner_.reads(), reads + 2);
}

// Reads that would only miss again are not kept: of the item whose change is
// applied (it changed just now) and of the processor's own targets.
TEST_F(MemoTest, TheChangedItemAndTheTargetsAreNotKept) {
  ViewReadMemo items(Generations(), ViewReadMemo::ItemLimits(kMemoBytes));
  const std::set<std::string> targets = {"feed"};
  {
    StagedReadsViewContext batch(&inner_, nullptr, &items, &targets);
    ASSERT_TRUE(batch.Read("feed", "post", "f1").ok());
  }
  Change change;
  change.container = "feed";
  change.partition_key = "post";
  change.id = "f2";
  {
    StagedReadsViewContext batch(&inner_, nullptr, &items);
    batch.Applying(change);
    ASSERT_TRUE(batch.Read("feed", "post", "f2").ok());
    ASSERT_TRUE(batch.Read("feed", "post", "f3").ok());  // another item: kept
  }
  EXPECT_EQ(items.hits() + items.misses(), 1u) << "only f3 went through the memo";
  StagedReadsViewContext next(&inner_, nullptr, &items);
  ASSERT_TRUE(next.Read("feed", "post", "f3").ok());
  EXPECT_EQ(items.hits(), 1u);
}

// `usernames` looks up the author of every comment and like, in no order:
// with the default read_memo_mb, a processor's item memo holds the 100,000
// users of an SF 1 data set, as the store returns them (system properties
// included). With 4,096 entries an SF 0.1 import read most of its 10,000
// users from the store again and fell behind (docs/benchmarks.md).
TEST(ViewReadMemoTest, AProcessorsItemMemoHoldsTheUsersOfAnSf1DataSet) {
  ViewReadMemo memo(
      [](const std::string&, const std::string&, const std::string&) { return uint64_t{1}; },
      ViewReadMemo::ItemLimits(ProcessorConfig{}.read_memo_bytes));
  constexpr int kUsers = 100000;
  auto key = [](int u) {
    return "users" + std::string(1, '\0') + "u" + std::to_string(u) + '\0' + "u" +
           std::to_string(u);
  };
  for (int u = 0; u < kUsers; ++u) {
    const std::string id = "u" + std::to_string(u);
    object user{{"id", id},
                {"userId", id},
                {"type", "user"},
                {"username", "brave_otter" + std::to_string(u)},
                {"_lsn", 17500492 + u},
                {"_ts", 1764200000000},
                {"_etag", "\"0000000001a0f3c9\""}};
    memo.Keep(key(u), 1, Answer(1, user));
  }
  int kept = 0;
  for (int u = 0; u < kUsers; ++u) kept += memo.Find(key(u), 1) != nullptr;
  EXPECT_EQ(kept, kUsers);
  EXPECT_LE(memo.bytes(), ProcessorConfig{}.read_memo_bytes);
}

TEST(ViewReadMemoTest, KeepsTheRecentAnswersWithinItsBytes) {
  auto items = [](size_t n, size_t text = 1) {
    return Answer(n, object{{"id", std::string(text, 'x')}});
  };
  const size_t one = ViewReadMemo::EntryBytes("q0", *items(1));
  const ViewReadMemo::Limits limits{4 * one, 3};
  ViewReadMemo memo(
      [](const std::string&, const std::string&, const std::string&) { return uint64_t{1}; },
      limits);
  for (int i = 0; i <= 4; ++i) memo.Keep("q" + std::to_string(i), 1, items(1));
  EXPECT_EQ(memo.bytes(), 4 * one);
  EXPECT_EQ(memo.Find("q0", 1), nullptr) << "the least recently used went first";
  ASSERT_NE(memo.Find("q1", 1), nullptr);
  EXPECT_EQ(memo.Find("q1", 2), nullptr) << "another generation is a miss";
  EXPECT_EQ(memo.Find("q1", 1), nullptr) << "and drops the outdated answer";
  EXPECT_EQ(memo.bytes(), 3 * one);

  memo.Keep("many", 1, items(limits.max_items + 1));
  EXPECT_EQ(memo.Find("many", 1), nullptr) << "more items than an answer may have";
  memo.Keep("large", 1, items(1, 8 * one));
  EXPECT_EQ(memo.Find("large", 1), nullptr) << "more bytes than the memo holds";
  EXPECT_NE(memo.Find("q4", 1), nullptr) << "and neither pushed anything out";

  // With room for one more small answer, a larger one first drops the
  // least recently used (q2), and no more than it needs to.
  const auto wide = items(1, one / 2);
  ASSERT_GT(ViewReadMemo::EntryBytes("wide", *wide), one);
  ASSERT_LE(ViewReadMemo::EntryBytes("wide", *wide), 2 * one);
  memo.Keep("wide", 1, wide);
  EXPECT_NE(memo.Find("wide", 1), nullptr);
  EXPECT_EQ(memo.Find("q2", 1), nullptr);
  EXPECT_NE(memo.Find("q3", 1), nullptr);
  EXPECT_NE(memo.Find("q4", 1), nullptr);
  EXPECT_LE(memo.bytes(), limits.max_bytes);
  for (const char* key : {"wide", "q3", "q4"}) memo.Erase(key);
  EXPECT_EQ(memo.bytes(), 0u);
}

// A query's new answer shares most of its items with the one it replaces:
// they are not measured again, and the memo counts what measuring the new
// answer afresh would.
TEST(ViewReadMemoTest, AnAnswerSharingItemsWithTheLastIsCountedAsIfMeasuredAfresh) {
  ViewReadMemo memo(
      [](const std::string&, const std::string&, const std::string&) { return uint64_t{1}; },
      ViewReadMemo::QueryLimits(1u << 20));
  auto first = Answer(3, object{{"id", "kept"}});
  memo.Keep("q", 1, first);
  auto next = std::make_shared<std::vector<ViewReadMemo::Item>>(first->begin() + 1, first->end());
  next->push_back(std::make_shared<const object>(object{{"id", std::string(300, 'n')}}));
  next->push_back(std::make_shared<const object>(object{{"id", "new"}, {"tags", {1, 2, 3}}}));
  memo.Keep("q", 2, next);
  EXPECT_EQ(memo.bytes(), ViewReadMemo::EntryBytes("q", *next));
  // ... and an answer that shares nothing, or has fewer items.
  auto fewer = std::make_shared<std::vector<ViewReadMemo::Item>>(next->begin(), next->begin() + 2);
  memo.Keep("q", 3, fewer);
  EXPECT_EQ(memo.bytes(), ViewReadMemo::EntryBytes("q", *fewer));
  auto other = Answer(2, object{{"id", "other"}});
  memo.Keep("q", 4, other);
  EXPECT_EQ(memo.bytes(), ViewReadMemo::EntryBytes("q", *other));
  EXPECT_EQ(memo.Find("q", 4), other);
}

TEST(ViewReadMemoTest, NoBytesKeepsNothing) {
  ViewReadMemo memo(
      [](const std::string&, const std::string&, const std::string&) { return uint64_t{1}; },
      ViewReadMemo::ItemLimits(0));
  memo.Keep("u", 1, Answer(1, object{{"id", "u"}}));
  EXPECT_EQ(memo.Find("u", 1), nullptr);
  EXPECT_EQ(memo.bytes(), 0u);
}

}  // namespace
}  // namespace feedd
