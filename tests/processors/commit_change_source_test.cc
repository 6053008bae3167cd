// CommitChangeSource, and the CommitTail under it, on a real DocumentStore:
// the records they hand out are the durable feed's, in order and without
// gaps, whether they came from the commit path or had to be read back
// (start-up, overflow, a seek back).
#include "processors/commit_change_source.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <boost/json.hpp>
#include <filesystem>
#include <future>
#include <mutex>
#include <thread>

#include "storage/commit_tail.h"
#include "storage/document_store.h"
#include "storage/prepared_item.h"
#include "tests/blog_scenario.h"
#include "tests/feed/forwarding_store.h"

namespace feedd {
namespace {

using namespace std::chrono_literals;

// A store that holds its view writes until Release(), and from then on
// passes them on.
class HeldViewsStore : public testutil::ForwardingStore {
 public:
  using ForwardingStore::ForwardingStore;

  void SubmitView(ViewWrite view, WriteCallback done) override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (holding_) {
        held_.emplace_back(std::move(view), std::move(done));
        return;
      }
    }
    ForwardingStore::SubmitView(std::move(view), std::move(done));
  }

  size_t held() {
    std::lock_guard<std::mutex> lock(mutex_);
    return held_.size();
  }

  void Release() {
    std::vector<std::pair<ViewWrite, WriteCallback>> held;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      holding_ = false;
      held.swap(held_);
    }
    for (auto& [view, done] : held) ForwardingStore::SubmitView(std::move(view), std::move(done));
  }

 private:
  std::mutex mutex_;
  bool holding_ = true;
  std::vector<std::pair<ViewWrite, WriteCallback>> held_;
};

class CommitChangeSourceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/feedd-ccs-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
    Open(0);
  }

  // retention_bytes: 0 keeps the whole feed.
  void Open(uint64_t retention_bytes) {
    if (store_) store_->Close();
    store_.reset();
    StoreOptions options;
    options.data_dir = dir_;
    options.sync = false;
    options.retention_bytes = retention_bytes;
    options.containers = BlogContainers();
    auto store = DocumentStore::Open(options);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(*store);
  }

  void TearDown() override {
    if (store_) store_->Close();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  WriteRequest PostRequest(const std::string& id, const std::string& user) {
    boost::json::object post{{"id", id}, {"type", "post"}, {"postId", id}, {"userId", user}};
    auto prepared =
        PrepareItem(*store_->FindContainer("posts"), post, std::nullopt, std::nullopt, 1 << 20);
    EXPECT_TRUE(prepared.ok());
    WriteOp op;
    op.kind = WriteOpKind::kCreate;
    std::string pk = prepared->partition_key;
    op.item = std::move(*prepared);
    return WriteRequest{"posts", pk, {op}};
  }

  Lsn Post(const std::string& id) {
    WriteResult r = store_->Write(PostRequest(id, "u1"));
    EXPECT_TRUE(r.status.ok()) << r.status.ToString();
    return r.last_lsn;
  }

  // Everything `source` hands out up to the head.
  std::vector<ChangeRecord> Drain(ChangeSource& source, size_t max = 1000) {
    std::vector<ChangeRecord> all;
    std::vector<SharedChangeRecord> batch;
    while (all.empty() || all.back().lsn < store_->HeadLsn()) {
      EXPECT_TRUE(source.NextBatch(max, &batch).ok());
      if (batch.empty()) break;
      for (const SharedChangeRecord& r : batch) all.push_back(*r);
    }
    return all;
  }

  std::vector<ChangeRecord> Feed(Lsn from) {
    FeedPage page;
    FeedReadSpec spec;
    spec.from = from;
    spec.limit = 100000;
    spec.max_scanned = 100000;
    EXPECT_TRUE(store_->ReadFeed(spec, &page).ok());
    return page.records;
  }

  static void ExpectSame(const std::vector<ChangeRecord>& got,
                         const std::vector<ChangeRecord>& want) {
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i].lsn, want[i].lsn);
      EXPECT_EQ(got[i].ts_ms, want[i].ts_ms);
      EXPECT_EQ(got[i].op, want[i].op);
      EXPECT_EQ(got[i].container, want[i].container);
      EXPECT_EQ(got[i].partition_key, want[i].partition_key);
      EXPECT_EQ(got[i].id, want[i].id);
      EXPECT_EQ(got[i].envelope_json, want[i].envelope_json) << "LSN " << got[i].lsn;
    }
  }

  Lsn Acked(const std::string& consumer) {
    for (const auto& c : store_->Consumers()) {
      if (c.name == consumer) return c.acked;
    }
    return 0;
  }

  std::string dir_;
  std::unique_ptr<DocumentStore> store_;
};

TEST_F(CommitChangeSourceTest, HandsOverCommittedRecordsInProcessAsTheFeedHasThem) {
  CommitChangeSource source(store_.get(), {"processor.test"});
  source.Seek(1);
  for (int i = 0; i < 50; ++i) Post("p" + std::to_string(i));
  std::vector<ChangeRecord> got = Drain(source, 7);
  ExpectSame(got, Feed(1));
  EXPECT_EQ(source.counts().in_process, 50u);
  EXPECT_EQ(source.counts().from_feed, 0u);
}

// Every in-daemon instance is handed the committed records themselves,
// shared, not a copy each.
TEST_F(CommitChangeSourceTest, SourcesShareTheCommittedRecordsInsteadOfCopyingThem) {
  CommitChangeSource a(store_.get(), {"processor.a"}), b(store_.get(), {"processor.b"});
  a.Seek(1);
  b.Seek(1);
  Post("p1");
  std::vector<SharedChangeRecord> from_a, from_b;
  ASSERT_TRUE(a.NextBatch(10, &from_a).ok());
  ASSERT_TRUE(b.NextBatch(10, &from_b).ok());
  ASSERT_EQ(from_a.size(), 1u);
  ASSERT_EQ(from_b.size(), 1u);
  EXPECT_EQ(from_a[0].get(), from_b[0].get());
  EXPECT_EQ(from_a[0]->id, "p1");
}

// Requests of one group that fail are rolled back: their records are not
// handed over, and the LSNs stay contiguous.
TEST_F(CommitChangeSourceTest, RecordsOfRolledBackRequestsAreNotHandedOver) {
  CommitChangeSource source(store_.get(), {"processor.test"});
  source.Seek(1);
  Post("dup");
  std::vector<std::future<WriteResult>> results;
  for (int i = 0; i < 40; ++i) {
    auto done = std::make_shared<std::promise<WriteResult>>();
    results.push_back(done->get_future());
    // Every other request creates "dup" again, which exists: it fails.
    store_->Submit(PostRequest(i % 2 ? "dup" : "q" + std::to_string(i), "u1"),
                   [done](WriteResult r) { done->set_value(std::move(r)); });
  }
  size_t failed = 0;
  for (auto& r : results) failed += r.get().status.ok() ? 0 : 1;
  EXPECT_EQ(failed, 20u);
  ExpectSame(Drain(source), Feed(1));
  EXPECT_EQ(store_->HeadLsn(), 21u);
}

// Started behind the head (a restart, a rebuild): the missing part comes
// from the durable feed, then the commit path takes over.
TEST_F(CommitChangeSourceTest, ReadsWhatItWasNotHandedFromTheDurableFeed) {
  for (int i = 0; i < 30; ++i) Post("old" + std::to_string(i));
  CommitChangeSource source(store_.get(), {"processor.test"});
  source.Seek(11);
  std::vector<ChangeRecord> got = Drain(source, 8);
  EXPECT_EQ(source.counts().from_feed, 20u);
  for (int i = 0; i < 5; ++i) Post("new" + std::to_string(i));
  std::vector<ChangeRecord> more = Drain(source);
  got.insert(got.end(), more.begin(), more.end());
  ExpectSame(got, Feed(11));
  EXPECT_EQ(source.counts().in_process, 5u);
}

// A reader that falls behind a full queue misses groups there, and reads
// them from the feed: memory stays bounded and nothing is skipped.
TEST_F(CommitChangeSourceTest, AFullQueueSendsTheReaderToTheDurableFeed) {
  CommitChangeSource source(store_.get(),
                            {"processor.test", std::make_shared<CommitTailBudget>(2000)});
  source.Seek(1);
  for (int i = 0; i < 60; ++i) Post("p" + std::to_string(i));
  EXPECT_GT(source.groups_overflowed(), 0u);
  ExpectSame(Drain(source, 5), Feed(1));
  EXPECT_GT(source.counts().from_feed, 0u);
  EXPECT_GT(source.counts().in_process, 0u);
  // Once caught up, the commit path serves again.
  const uint64_t before = source.counts().in_process;
  Post("after");
  std::vector<SharedChangeRecord> batch;
  ASSERT_TRUE(source.NextBatch(10, &batch).ok());
  ASSERT_EQ(batch.size(), 1u);
  EXPECT_EQ(batch[0]->id, "after");
  EXPECT_EQ(source.counts().in_process, before + 1);
}

// The in-process readers share one budget: a group they all queue counts
// once.
TEST_F(CommitChangeSourceTest, SourcesOfOneStoreCountTheGroupsTheyShareOnce) {
  CommitChangeSource a(store_.get(), {"processor.a"});
  a.Seek(1);
  Post("p1");
  const size_t one_reader = store_->commit_tail_budget()->used_bytes();
  ASSERT_GT(one_reader, 0u);
  std::vector<ChangeRecord> drained = Drain(a);  // a drops it
  ASSERT_EQ(store_->commit_tail_budget()->used_bytes(), 0u);
  CommitChangeSource b(store_.get(), {"processor.b"}), c(store_.get(), {"processor.c"});
  b.Seek(2);
  c.Seek(2);
  Post("p2");
  EXPECT_EQ(store_->commit_tail_budget()->used_bytes(), one_reader);
  EXPECT_EQ(store_->Stats().commit_tail_bytes, one_reader);
}

// A reader that stays behind (a stopped processor, a publisher while Kafka
// is down) gives its queue up to the readers that keep up, and then reads
// the durable feed: the others stay in memory and nobody misses a record.
TEST_F(CommitChangeSourceTest, AReaderStuckBehindGivesItsQueueUpToTheReadersThatKeepUp) {
  auto budget = std::make_shared<CommitTailBudget>(8000);
  CommitChangeSource stuck(store_.get(), {"processor.stuck", budget});
  CommitChangeSource live(store_.get(), {"processor.live", budget});
  stuck.Seek(1);
  live.Seek(1);
  std::vector<ChangeRecord> live_got;
  std::vector<SharedChangeRecord> batch;
  for (int i = 0; i < 120; ++i) {
    Post("p" + std::to_string(i));
    // One group at most passes the budget, per reader.
    EXPECT_LE(budget->used_bytes(), 8000u + 2 * 500u);
    if (i % 10 != 9) continue;  // `live` reads ten groups at a time
    ASSERT_TRUE(live.NextBatch(100, &batch).ok());
    for (const SharedChangeRecord& r : batch) live_got.push_back(*r);
  }
  ExpectSame(live_got, Feed(1));
  EXPECT_EQ(live.counts().from_feed, 0u);
  EXPECT_EQ(live.groups_overflowed(), 0u);
  EXPECT_GT(budget->queues_given_up(), 0u);
  ExpectSame(Drain(stuck, 7), Feed(1));
  EXPECT_GT(stuck.counts().from_feed, 0u);
}

// The publisher's rewind: a tail sought back reads what it had already
// handed out again, from the durable feed, then goes on from the queue.
TEST_F(CommitChangeSourceTest, ATailSoughtBackReadsTheFeedAgainThenTheQueue) {
  CommitTail tail(store_.get());
  tail.Seek(1);
  for (int i = 0; i < 20; ++i) Post("p" + std::to_string(i));
  std::vector<SharedChangeRecord> batch;
  ASSERT_TRUE(tail.Next(1000, &batch).ok());
  ASSERT_EQ(batch.size(), 20u);
  EXPECT_EQ(tail.from_feed(), 0u);
  tail.Seek(6);
  Post("after");
  std::vector<ChangeRecord> got;
  while (got.empty() || got.back().lsn < store_->HeadLsn()) {
    ASSERT_TRUE(tail.Next(4, &batch).ok());
    ASSERT_FALSE(batch.empty());
    for (const SharedChangeRecord& r : batch) got.push_back(*r);
  }
  ExpectSame(got, Feed(6));
  EXPECT_EQ(tail.from_feed(), 15u);  // LSNs 6..20 again; 21 from the queue
}

// A position the feed no longer holds is an error, not an empty batch that
// the caller would ask for again at once.
TEST_F(CommitChangeSourceTest, APositionBelowRetentionIsAnError) {
  Open(/*retention_bytes=*/1);
  for (int i = 0; i < 30; ++i) Post("p" + std::to_string(i));
  ASSERT_TRUE(store_->EnforceRetention().ok());
  ASSERT_GT(store_->OldestRetainedLsn(), 1u);
  CommitChangeSource source(store_.get(), {"processor.test"});
  source.Seek(1);
  std::vector<SharedChangeRecord> batch;
  Status s = source.NextBatch(10, &batch);
  EXPECT_EQ(s.code(), ErrorCode::kLsnNotRetained) << s.ToString();
  EXPECT_TRUE(batch.empty());
}

// NextBatch() never waits: the ready callback says when to ask again, for
// every committed group, queued or not (an overflowed one is read from the
// feed).
TEST_F(CommitChangeSourceTest, ReturnsEmptyAtOnceAndCallsTheReadyCallbackForEveryCommit) {
  CommitChangeSource source(store_.get(),
                            {"processor.test", std::make_shared<CommitTailBudget>(2000)});
  std::atomic<int> ready{0};
  source.SetReadyCallback([&] { ++ready; });
  source.Seek(1);
  std::vector<SharedChangeRecord> batch;
  ASSERT_TRUE(source.NextBatch(10, &batch).ok());
  EXPECT_TRUE(batch.empty());
  EXPECT_EQ(ready.load(), 0);
  for (int i = 0; i < 20; ++i) Post("p" + std::to_string(i));
  EXPECT_EQ(ready.load(), 20);
  EXPECT_GT(source.groups_overflowed(), 0u);
  ExpectSame(Drain(source), Feed(1));
}

TEST_F(CommitChangeSourceTest, SyncRecordsTheAcknowledgedPositionAsTheConsumersWatermark) {
  ASSERT_TRUE(store_->RegisterConsumer("processor.test", 0).ok());
  for (int i = 0; i < 3; ++i) Post("p" + std::to_string(i));
  CommitChangeSource source(store_.get(), {"processor.test"});
  source.Seek(1);
  ASSERT_TRUE(source.Acknowledge(2).ok());
  ASSERT_TRUE(source.Sync().ok());
  EXPECT_EQ(Acked("processor.test"), 2u);
}

// Acknowledge() does not wait for its watermark write, which may queue
// behind a bulk import's groups for hundreds of milliseconds: the reader
// goes on, with one such write in flight at a time. Regression: it waited,
// and during an SF 1 import `usernames`' reader slept in it most of the time.
TEST_F(CommitChangeSourceTest, AcknowledgeDoesNotWaitForTheWatermarkWrite) {
  ASSERT_TRUE(store_->RegisterConsumer("processor.test", 0).ok());
  for (int i = 0; i < 3; ++i) Post("p" + std::to_string(i));
  HeldViewsStore held(store_.get());
  CommitChangeSource source(&held, {"processor.test"});
  source.Seek(1);
  ASSERT_TRUE(source.Acknowledge(2).ok());
  EXPECT_EQ(held.held(), 1u);
  ASSERT_TRUE(source.Acknowledge(3).ok());
  EXPECT_EQ(held.held(), 1u) << "a second watermark write while one is in flight";
  EXPECT_EQ(Acked("processor.test"), 0u);
  held.Release();
  ASSERT_TRUE(source.Sync().ok());
  EXPECT_EQ(Acked("processor.test"), 3u);
}

TEST_F(CommitChangeSourceTest, AFailedWatermarkWriteIsReportedByTheNextAcknowledge) {
  Post("p0");
  Post("p1");
  CommitChangeSource source(store_.get(), {"processor.unregistered"});
  source.Seek(1);
  ASSERT_TRUE(source.Acknowledge(1).ok());
  Status reported = source.Acknowledge(2);
  EXPECT_EQ(reported.code(), ErrorCode::kInvalidRequest) << reported.ToString();
  EXPECT_FALSE(source.Sync().ok());
}

}  // namespace
}  // namespace feedd
