// Unit tests of StagedReadsViewContext (processors/staged_reads_view_context.h)
// over a FakeViewContext: reads and queries see the writes staged through
// it, nothing is committed until the inner context commits, and what the
// inner context finally stores equals what the reads showed.
#include "processors/staged_reads_view_context.h"

#include <gtest/gtest.h>

#include "fake_view_context.h"

namespace feedd {
namespace {

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

}  // namespace
}  // namespace feedd
