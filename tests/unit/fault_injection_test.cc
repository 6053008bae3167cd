// What DocumentStore (storage/document_store.h, storage/commit_pipeline.h)
// promises when the disk or the machine fails under it, shown on a real
// RocksDB database over FaultInjectionFileSystem
// (tests/unit/fault_injection_file_system.h):
// - a failed WAL append or WAL sync fails its group, and later writes are
//   refused until the store is writable again; nothing of the failed group
//   is ever read back;
// - with storage.sync on, no write is acknowledged before the WAL holding
//   it is synced;
// - a write waiting behind a group in its fsync reports its wait;
// - after a power cut, a restart on what was synced loses no acknowledged
//   write, and the feed stays contiguous with every item's change record.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "storage/document_store.h"
#include "storage/prepared_item.h"
#include "tests/blog_scenario.h"
#include "tests/unit/fault_injection_file_system.h"
#include "tests/unit/test_util.h"
#include "util/clock.h"

namespace feedd {
namespace {

using testutil::FaultInjectionFileSystem;
using testutil::HasCode;
using testutil::IsOk;
using testutil::Obj;
using testutil::TempDir;

// Writers on several threads, so that groups of several requests share one
// fsync: each acknowledgement looks at the WALs as it is made.
class Acknowledgements {
 public:
  using MakeRequest = std::function<WriteRequest(const std::string& id)>;
  Acknowledgements(DocumentStore* store, FaultInjectionFileSystem* fs, MakeRequest make)
      : store_(store), fs_(fs), make_(std::move(make)) {}

  // Writes from `threads` threads until `stop` or `per_thread` writes each.
  void Run(int threads, int per_thread, const std::atomic<bool>* stop) {
    std::vector<std::thread> writers;
    for (int t = 0; t < threads; ++t) {
      writers.emplace_back([this, t, per_thread, stop] {
        for (int i = 0; i < per_thread && !stop->load(); ++i) {
          std::string id = "t" + std::to_string(t) + "-" + std::to_string(i);
          std::promise<void> done;
          store_->Submit(make_(id), [&](const WriteResult& r) {
            // On the commit thread, as the write is acknowledged.
            if (r.status.ok()) {
              std::lock_guard<std::mutex> lock(mutex_);
              acknowledged_.insert(id);
              if (fs_->UnsyncedWalBytes() > 0) ++unsynced_at_ack_;
            }
            done.set_value();
          });
          done.get_future().wait();
        }
      });
    }
    for (auto& w : writers) w.join();
  }

  std::set<std::string> acknowledged() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return acknowledged_;
  }
  int unsynced_at_ack() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return unsynced_at_ack_;
  }

 private:
  DocumentStore* const store_;
  FaultInjectionFileSystem* const fs_;
  const MakeRequest make_;
  mutable std::mutex mutex_;
  std::set<std::string> acknowledged_;
  int unsynced_at_ack_ = 0;
};

class FaultInjectionTest : public ::testing::Test {
 protected:
  StoreOptions Options(bool sync = true, bool wal_compression = false) {
    StoreOptions o;
    o.data_dir = dir_.path();
    o.containers = BlogContainers();
    o.sync = sync;
    o.wal_compression = wal_compression;
    o.clock = &clock_;
    o.retention_interval_ms = 3600 * 1000;
    o.block_cache_bytes = 8u << 20;
    o.file_system = fs_;
    return o;
  }

  void Open(const StoreOptions& options) {
    Result<std::unique_ptr<DocumentStore>> r = DocumentStore::Open(options);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    store_ = std::move(r.value());
  }

  void Close() {
    if (store_) store_->Close();
    store_.reset();
  }

  void TearDown() override {
    fs_->Restore();
    Close();
  }

  static WriteRequest UpsertRequest(DocumentStore* store, const std::string& id) {
    const ContainerSpec* spec = store->FindContainer("users");
    boost::json::object body = Obj(R"({"type":"user"})");
    body["id"] = id;
    body["userId"] = id;
    Result<PreparedItem> item =
        PrepareItem(*spec, std::move(body), std::nullopt, std::nullopt, 1 << 20);
    if (!item.ok()) throw std::runtime_error(item.status().ToString());
    WriteOp op;
    op.kind = WriteOpKind::kUpsert;
    op.id = id;
    op.item = std::move(item.value());
    WriteRequest request;
    request.container = "users";
    request.partition_key = id;
    request.ops.push_back(std::move(op));
    return request;
  }

  Acknowledgements::MakeRequest Requests() {
    return [this](const std::string& id) { return UpsertRequest(store_.get(), id); };
  }

  WriteResult Upsert(const std::string& id) {
    return store_->Write(UpsertRequest(store_.get(), id));
  }

  Status Read(const std::string& id) {
    std::string json;
    return store_->Read("users", id, id, &json);
  }

  // A processor's view write: the post `post` in u1's partition of users,
  // with the consumer processor.v's watermark at `acked`.
  ViewWrite ViewOf(const std::string& post, Lsn acked) {
    Result<PreparedItem> item =
        PrepareItem(*store_->FindContainer("users"),
                    Obj(R"({"id":")" + post + R"(","userId":"u1","type":"post"})"), std::nullopt,
                    std::nullopt, 1 << 20);
    EXPECT_TRUE(item.ok()) << item.status().ToString();
    WriteOp op;
    op.kind = WriteOpKind::kUpsert;
    op.item = std::move(*item);
    op.origin = WriteOrigin::kProcessor;
    ViewWrite view;
    view.requests.push_back(WriteRequest{"users", "u1", {std::move(op)}});
    view.consumer = "processor.v";
    view.consumer_acked = acked;
    return view;
  }

  std::vector<ChangeRecord> Feed() { return testutil::WholeFeed(*store_); }

  // The store holds exactly `written` (ids of users), each under one change
  // record, with LSNs 1..head.
  void ExpectExactly(const std::set<std::string>& written) {
    std::vector<ChangeRecord> feed = Feed();
    EXPECT_EQ(store_->HeadLsn(), feed.size());
    std::set<std::string> in_feed;
    for (size_t i = 0; i < feed.size(); ++i) {
      EXPECT_EQ(feed[i].lsn, i + 1);
      in_feed.insert(feed[i].id);
    }
    EXPECT_EQ(in_feed, written);
    for (const auto& id : written) EXPECT_TRUE(IsOk(Read(id))) << id;
  }

  // After a failed WAL write: the failing write and the next ones are
  // refused and nothing of them is readable; RocksDB cannot resume from a
  // failed WAL write, so the store stays failed until it is reopened. After
  // a restart on a working disk the acknowledged writes are there, LSNs
  // are contiguous and writes go on. The failed write itself is there too
  // when `may_survive` (its record reached the file, only the sync failed):
  // like any failed request, its outcome is unknown to the client.
  void ExpectWritesRefusedAfterAFailedWalWrite(const std::set<std::string>& acknowledged,
                                               bool may_survive) {
    WriteResult failed = Upsert("failed");
    ASSERT_FALSE(failed.status.ok()) << "the injected fault did not fail the write";
    EXPECT_TRUE(HasCode(Read("failed"), ErrorCode::kNotFound));
    EXPECT_FALSE(store_->Health().ok());
    // Refused, not queued behind the failure: the store says it is down.
    WriteResult later = Upsert("later");
    EXPECT_TRUE(HasCode(later.status, ErrorCode::kUnavailable)) << later.status.ToString();
    EXPECT_TRUE(HasCode(Read("later"), ErrorCode::kNotFound));
    EXPECT_EQ(store_->HeadLsn(), acknowledged.size());
    EXPECT_EQ(store_->Stats().requests_failed, 2u);
    // The commit thread asks RocksDB to resume every second; it refuses.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (store_->Health().code() == ErrorCode::kUnavailable &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));  // polling, not a wait
    }
    EXPECT_TRUE(HasCode(store_->Health(), ErrorCode::kStorageError));
    EXPECT_TRUE(HasCode(Upsert("later").status, ErrorCode::kUnavailable));

    Close();
    ASSERT_NO_FATAL_FAILURE(Open(Options()));
    std::set<std::string> expected = acknowledged;
    if (may_survive && IsOk(Read("failed"))) expected.insert("failed");
    ExpectExactly(expected);
    EXPECT_TRUE(HasCode(Read("later"), ErrorCode::kNotFound));
    ASSERT_TRUE(IsOk(Upsert("after-restart").status));
    EXPECT_EQ(store_->HeadLsn(), expected.size() + 1);
  }

  TempDir dir_;
  ManualClock clock_{1'700'000'000'000ull};
  std::shared_ptr<FaultInjectionFileSystem> fs_ = std::make_shared<FaultInjectionFileSystem>();
  std::unique_ptr<DocumentStore> store_;
};

TEST_F(FaultInjectionTest, AFailedWalAppendFailsTheWriteAndRefusesLaterOnes) {
  ASSERT_NO_FATAL_FAILURE(Open(Options()));
  std::set<std::string> acknowledged;
  for (int i = 0; i < 10; ++i) {
    std::string id = "u" + std::to_string(i);
    ASSERT_TRUE(IsOk(Upsert(id).status));
    acknowledged.insert(id);
  }
  fs_->FailWalAppends(1);
  ExpectWritesRefusedAfterAFailedWalWrite(acknowledged, /*may_survive=*/false);
  EXPECT_EQ(fs_->wal_appends_failed(), 1);
}

TEST_F(FaultInjectionTest, AFailedWalSyncFailsTheWriteAndRefusesLaterOnes) {
  ASSERT_NO_FATAL_FAILURE(Open(Options()));
  std::set<std::string> acknowledged;
  for (int i = 0; i < 10; ++i) {
    std::string id = "u" + std::to_string(i);
    ASSERT_TRUE(IsOk(Upsert(id).status));
    acknowledged.insert(id);
  }
  fs_->FailWalSyncs(1);
  ExpectWritesRefusedAfterAFailedWalWrite(acknowledged, /*may_survive=*/true);
  EXPECT_EQ(fs_->wal_syncs_failed(), 1);
}

TEST_F(FaultInjectionTest, NoWriteIsAcknowledgedBeforeItsWalIsSynced) {
  ASSERT_NO_FATAL_FAILURE(Open(Options(/*sync=*/true)));
  Acknowledgements acks(store_.get(), fs_.get(), Requests());
  std::atomic<bool> stop{false};
  acks.Run(4, 100, &stop);
  EXPECT_EQ(acks.acknowledged().size(), 400u);
  EXPECT_EQ(acks.unsynced_at_ack(), 0);
  EXPECT_GT(store_->Stats().requests_committed, store_->Stats().groups_committed)
      << "no group shared an fsync";
}

// The check above can fail: without storage.sync writes are acknowledged
// from the page cache.
TEST_F(FaultInjectionTest, WithoutSyncWritesAreAcknowledgedBeforeTheirWalIsSynced) {
  ASSERT_NO_FATAL_FAILURE(Open(Options(/*sync=*/false)));
  Acknowledgements acks(store_.get(), fs_.get(), Requests());
  std::atomic<bool> stop{false};
  acks.Run(1, 20, &stop);
  EXPECT_EQ(acks.unsynced_at_ack(), 20);
}

// A write queued while the group before it is in its fsync reports, as its
// wait in the commit queue (StoreOptions::on_queue_wait), at least the time
// it spent there: from its Submit() to the end of that fsync.
TEST_F(FaultInjectionTest, AWriteQueuedBehindAnFsyncReportsItsWait) {
  std::mutex mutex;
  std::vector<double> waits;  // GUARDED_BY(mutex)
  StoreOptions options = Options();
  options.on_queue_wait = [&](double seconds) {
    std::lock_guard<std::mutex> lock(mutex);
    waits.push_back(seconds);
  };
  ASSERT_NO_FATAL_FAILURE(Open(options));
  fs_->HoldWalSyncs();
  std::promise<WriteResult> first, second;
  store_->Submit(UpsertRequest(store_.get(), "a"),
                 [&](const WriteResult& r) { first.set_value(r); });
  fs_->WaitForHeldWalSync();  // "a" is in its fsync
  store_->Submit(UpsertRequest(store_.get(), "b"),
                 [&](const WriteResult& r) { second.set_value(r); });
  const auto queued_by = std::chrono::steady_clock::now();
  fs_->ReleaseWalSyncs();
  const auto released = std::chrono::steady_clock::now();
  EXPECT_TRUE(IsOk(first.get_future().get().status));
  EXPECT_TRUE(IsOk(second.get_future().get().status));
  std::lock_guard<std::mutex> lock(mutex);
  ASSERT_EQ(waits.size(), 2u);
  EXPECT_GE(waits[1], std::chrono::duration<double>(released - queued_by).count());
}

// Writes from four threads; the power goes while they run. Every write
// acknowledged (before or after the cut: an acknowledgement after it was
// synced before it) is there after a restart on what the disk kept, and
// the feed has no gap; with the WAL's records compressed (storage.
// wal_compression) or not.
class PowerCutTest : public FaultInjectionTest, public ::testing::WithParamInterface<bool> {
 protected:
  // Writers on four threads until `cut_when` holds (checked after each
  // acknowledged write, from 300 on), then a power cut, a restart on what
  // was synced, and the checks.
  void ExpectAPowerCutLosesNoAcknowledgedWrite(const StoreOptions& options,
                                               const std::function<bool()>& cut_when);
};

TEST_P(PowerCutTest, ARestartAfterAPowerCutLosesNoAcknowledgedWrite) {
  ExpectAPowerCutLosesNoAcknowledgedWrite(Options(/*sync=*/true, /*wal_compression=*/GetParam()),
                                          [] { return true; });
}

// As above, with write-ahead logs written over old ones
// (storage/recycled_wal_file_system.h): the cut leaves the old logs' bytes
// behind what was synced, and recovery reads none of them.
TEST_P(PowerCutTest, ARestartAfterAPowerCutOnRecycledLogsLosesNoAcknowledgedWrite) {
  StoreOptions options = Options(/*sync=*/true, /*wal_compression=*/GetParam());
  options.write_buffer_bytes = 64u << 10;    // memtables switch (and logs roll) often
  options.max_total_wal_bytes = 256u << 10;  // and old logs are freed soon
  ExpectAPowerCutLosesNoAcknowledgedWrite(options,
                                          [&] { return store_->Stats().wal_logs_recycled >= 3; });
}

void PowerCutTest::ExpectAPowerCutLosesNoAcknowledgedWrite(const StoreOptions& options,
                                                           const std::function<bool()>& cut_when) {
  ASSERT_NO_FATAL_FAILURE(Open(options));
  Acknowledgements acks(store_.get(), fs_.get(), Requests());
  std::atomic<bool> stop{false};
  std::thread writers([&] { acks.Run(4, 1000000, &stop); });
  const size_t before_cut = 300;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  bool ready = false;
  while (!ready && std::chrono::steady_clock::now() < deadline) {
    ready = acks.acknowledged().size() >= before_cut && cut_when();
    if (!ready) std::this_thread::yield();
  }
  if (!ready) {
    stop = true;
    writers.join();
    FAIL() << "the writers never reached the point to cut at";
  }
  fs_->PowerCut();
  // Writes fail from now on; let the writers see it.
  while (store_->Health().ok()) std::this_thread::yield();
  stop = true;
  writers.join();
  const std::set<std::string> acknowledged = acks.acknowledged();
  Close();

  fs_->DropUnsyncedData();
  fs_->Restore();
  ASSERT_NO_FATAL_FAILURE(Open(options));
  std::vector<ChangeRecord> feed = Feed();
  std::set<std::string> in_feed;
  for (size_t i = 0; i < feed.size(); ++i) {
    ASSERT_EQ(feed[i].lsn, i + 1);
    in_feed.insert(feed[i].id);
  }
  EXPECT_EQ(store_->HeadLsn(), feed.size());
  for (const auto& id : acknowledged) {
    EXPECT_EQ(in_feed.count(id), 1u) << id << " was acknowledged but its change is lost";
    EXPECT_TRUE(IsOk(Read(id))) << id << " was acknowledged but is lost";
  }
  // Whatever else survived (synced, not yet acknowledged) is whole: an item
  // exactly when its change record.
  QuerySpec all;
  all.limit = kMaxQueryLimit;
  size_t items = 0;
  for (;;) {
    Result<QueryResult> page = store_->Query("users", all);
    ASSERT_TRUE(page.ok()) << page.status().ToString();
    items += page->items.size();
    if (!page->continuation) break;
    all.continuation = *page->continuation;
  }
  EXPECT_EQ(items, in_feed.size());
}

INSTANTIATE_TEST_SUITE_P(WalCompression, PowerCutTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& param) {
                           return param.param ? "Zstd" : "None";
                         });

// storage.wal_compression: the same writes take fewer bytes of WAL.
TEST_F(FaultInjectionTest, ACompressedWalHoldsTheSameWritesInFewerBytes) {
  uint64_t wal_bytes[2] = {0, 0};
  for (bool compressed : {false, true}) {
    TempDir dir;
    StoreOptions options = Options(/*sync=*/false, compressed);
    options.data_dir = dir.path();
    options.file_system = nullptr;
    Result<std::unique_ptr<DocumentStore>> store = DocumentStore::Open(options);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    for (int i = 0; i < 500; ++i) {
      WriteResult r = (*store)->Write(UpsertRequest(store->get(), "user-" + std::to_string(i)));
      ASSERT_TRUE(IsOk(r.status)) << r.status.ToString();
    }
    for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
      if (entry.path().extension() == ".log") wal_bytes[compressed] += entry.file_size();
    }
    (*store)->Close();
  }
  EXPECT_GT(wal_bytes[0], 0u);
  // About half here; uncompressed they would be equal.
  EXPECT_LT(wal_bytes[1], wal_bytes[0] * 3 / 4) << wal_bytes[1] << " of " << wal_bytes[0];
}

// A processor's view write (SubmitView) is derived from changes already
// durable: it is answered once written, before its WAL is synced, and its
// change records reach the feed's head only once a sync covers them (here
// the commit thread's, as it falls idle). A power cut before that sync
// takes the view's items and its consumer watermark together, so the
// processor applies the same changes again after the restart.
TEST_F(FaultInjectionTest, AViewWriteIsAnsweredBeforeItsSyncAndAPowerCutTakesItsWatermarkToo) {
  ASSERT_NO_FATAL_FAILURE(Open(Options(/*sync=*/true)));
  ASSERT_TRUE(IsOk(store_->RegisterConsumer("processor.v", 0)));
  ASSERT_TRUE(IsOk(Upsert("u1").status));  // LSN 1, synced
  struct Answer {
    Status status;
    uint64_t unsynced_bytes = 0;
    Lsn head = 0;
  };
  // Answered on the commit thread right after its write; `cut` cuts the
  // power there, before any sync.
  auto submit = [&](ViewWrite view, bool cut) {
    std::promise<Answer> answered;
    store_->SubmitView(std::move(view), [&](const WriteResult& r) {
      Answer a{r.status, fs_->UnsyncedWalBytes(), store_->HeadLsn()};
      if (cut) fs_->PowerCut();
      answered.set_value(a);
    });
    return answered.get_future().get();
  };

  Answer first = submit(ViewOf("p1", 1), /*cut=*/false);  // LSN 2
  ASSERT_TRUE(IsOk(first.status));
  EXPECT_GT(first.unsynced_bytes, 0u) << "answered only after a sync";
  EXPECT_EQ(first.head, 1u) << "published before a sync";
  std::promise<void> published;
  store_->OnHeadReached(2, [&] { published.set_value(); });
  ASSERT_EQ(published.get_future().wait_for(std::chrono::seconds(30)), std::future_status::ready);

  Answer second = submit(ViewOf("p2", 5), /*cut=*/true);  // LSN 3, never synced
  ASSERT_TRUE(IsOk(second.status));
  EXPECT_GT(second.unsynced_bytes, 0u);
  Close();
  fs_->DropUnsyncedData();
  fs_->Restore();
  ASSERT_NO_FATAL_FAILURE(Open(Options()));
  EXPECT_EQ(store_->HeadLsn(), 2u);
  std::string json;
  EXPECT_TRUE(IsOk(store_->Read("users", "u1", "p1", &json)));
  EXPECT_TRUE(HasCode(store_->Read("users", "u1", "p2", &json), ErrorCode::kNotFound));
  Lsn acked = 0;
  for (const auto& consumer : store_->Consumers()) {
    if (consumer.name == "processor.v") acked = consumer.acked;
  }
  EXPECT_EQ(acked, 1u) << "the watermark of the lost view write survived it";
}

// An idle store syncs a view write only StoreOptions::idle_sync_delay after
// it was written, so that a client's write arriving meanwhile carries it in
// its own fsync: at one connection, a write and its views' writes then cost
// one fsync, not two (docs/benchmarks.md).
TEST_F(FaultInjectionTest, AnIdleStoreSyncsAViewWriteOnlyAfterTheIdleSyncDelay) {
  StoreOptions options = Options(/*sync=*/true);
  options.idle_sync_delay = std::chrono::milliseconds(200);
  ASSERT_NO_FATAL_FAILURE(Open(options));
  ASSERT_TRUE(IsOk(store_->RegisterConsumer("processor.v", 0)));
  ASSERT_TRUE(IsOk(Upsert("u1").status));  // LSN 1, synced
  std::promise<std::chrono::steady_clock::time_point> answered;
  store_->SubmitView(ViewOf("p1", 1), [&](const WriteResult& r) {  // LSN 2
    EXPECT_TRUE(IsOk(r.status));
    answered.set_value(std::chrono::steady_clock::now());
  });
  const auto answered_at = answered.get_future().get();
  std::promise<std::chrono::steady_clock::time_point> published;
  store_->OnHeadReached(2, [&] { published.set_value(std::chrono::steady_clock::now()); });
  auto published_at = published.get_future();
  ASSERT_EQ(published_at.wait_for(std::chrono::seconds(30)), std::future_status::ready);
  // The delay runs from the view write's commit, a moment before its answer.
  EXPECT_GE(published_at.get() - answered_at, std::chrono::milliseconds(100))
      << "synced as soon as the commit thread fell idle";
}

TEST_F(FaultInjectionTest, AClientWriteWithinTheIdleSyncDelayCarriesTheViewWriteInItsFsync) {
  StoreOptions options = Options(/*sync=*/true);
  options.idle_sync_delay = std::chrono::hours(1);
  std::atomic<int> wal_syncs{0};
  options.on_wal_sync = [&](double) { ++wal_syncs; };
  ASSERT_NO_FATAL_FAILURE(Open(options));
  ASSERT_TRUE(IsOk(store_->RegisterConsumer("processor.v", 0)));
  ASSERT_TRUE(IsOk(Upsert("u1").status));  // LSN 1, synced
  const int syncs_before = wal_syncs.load();
  std::promise<Status> answered;
  store_->SubmitView(ViewOf("p1", 1), [&](const WriteResult& r) { answered.set_value(r.status); });
  ASSERT_TRUE(IsOk(answered.get_future().get()));  // LSN 2
  EXPECT_EQ(store_->HeadLsn(), 1u);
  WriteResult client = Upsert("u2");  // LSN 3
  ASSERT_TRUE(IsOk(client.status));
  EXPECT_EQ(store_->HeadLsn(), 3u);
  EXPECT_EQ(wal_syncs.load() - syncs_before, 1) << "the view write was synced on its own";

  // A view write still waiting at shutdown is synced before the store closes.
  std::promise<Status> last;
  store_->SubmitView(ViewOf("p2", 3), [&](const WriteResult& r) { last.set_value(r.status); });
  ASSERT_TRUE(IsOk(last.get_future().get()));  // LSN 4
  Close();
  fs_->DropUnsyncedData();
  ASSERT_NO_FATAL_FAILURE(Open(Options()));
  EXPECT_EQ(store_->HeadLsn(), 4u);
}

// The power cut above bites: without storage.sync, acknowledged writes that
// no sync covered are gone after it.
TEST_F(FaultInjectionTest, WithoutSyncAPowerCutLosesAcknowledgedWrites) {
  ASSERT_NO_FATAL_FAILURE(Open(Options(/*sync=*/false)));
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(IsOk(Upsert("u" + std::to_string(i)).status));
  fs_->PowerCut();
  Close();
  fs_->DropUnsyncedData();
  fs_->Restore();
  ASSERT_NO_FATAL_FAILURE(Open(Options()));
  EXPECT_LT(store_->HeadLsn(), 20u);
  EXPECT_TRUE(HasCode(Read("u19"), ErrorCode::kNotFound));
}

}  // namespace
}  // namespace feedd
