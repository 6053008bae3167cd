// Unit tests of how DocumentStore (storage/document_store.h) lives through
// file-system trouble, on a real RocksDB database whose FileSystem is
// wrapped by a fault injector: the free-space reserve (storage.min_free_mb,
// storage/space_reserve.h) and recovery from a transient write error (a WAL
// roll failing with EMFILE, storage/commit_pipeline.h).
#include <gtest/gtest.h>
#include <rocksdb/file_system.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "storage/document_store.h"
#include "storage/prepared_item.h"
#include "storage/space_reserve.h"
#include "storage/wal_file_name.h"
#include "tests/blog_scenario.h"
#include "tests/unit/test_util.h"
#include "util/clock.h"

namespace feedd {
namespace {

using testutil::HasCode;
using testutil::IsOk;
using testutil::Obj;
using testutil::TempDir;

constexpr uint64_t kMiB = 1024 * 1024;

// A file whose appends fail with ENOSPC once `*full` is set.
class FillingFile : public rocksdb::FSWritableFileOwnerWrapper {
 public:
  FillingFile(std::unique_ptr<rocksdb::FSWritableFile> file, const std::atomic<bool>* full)
      : rocksdb::FSWritableFileOwnerWrapper(std::move(file)), full_(full) {}

  rocksdb::IOStatus Append(const rocksdb::Slice& data, const rocksdb::IOOptions& o,
                           rocksdb::IODebugContext* d) override {
    if (full_->load()) return rocksdb::IOStatus::NoSpace("While appending to file", "LOG");
    return target()->Append(data, o, d);
  }
  rocksdb::IOStatus Append(const rocksdb::Slice& data, const rocksdb::IOOptions& o,
                           const rocksdb::DataVerificationInfo& v,
                           rocksdb::IODebugContext* d) override {
    if (full_->load()) return rocksdb::IOStatus::NoSpace("While appending to file", "LOG");
    return target()->Append(data, o, v, d);
  }

 private:
  const std::atomic<bool>* full_;
};

// Fails the next N openings of a WAL file as POSIX open() with EMFILE does
// in RocksDB's file system, reports a chosen free space, and can make
// RocksDB's info log (LOG) meet a full disk.
class FaultFileSystem : public rocksdb::FileSystemWrapper {
 public:
  FaultFileSystem() : rocksdb::FileSystemWrapper(rocksdb::FileSystem::Default()) {}
  static const char* kClassName() { return "FeeddTestFaultFileSystem"; }
  const char* Name() const override { return kClassName(); }

  void FailNextWalOpens(int n) { wal_open_failures_ = n; }
  int wal_opens_failed() const { return wal_opens_failed_.load(); }
  void SetFreeSpace(uint64_t bytes) { free_space_ = bytes; }
  void FillInfoLog() { info_log_full_ = true; }

  rocksdb::IOStatus NewWritableFile(const std::string& f, const rocksdb::FileOptions& o,
                                    std::unique_ptr<rocksdb::FSWritableFile>* r,
                                    rocksdb::IODebugContext* d) override {
    if (rocksdb::IOStatus failed = FailIfWalOpenShould(f); !failed.ok()) return failed;
    rocksdb::IOStatus s = target()->NewWritableFile(f, o, r, d);
    if (s.ok() && f.size() >= 4 && f.compare(f.size() - 4, 4, "/LOG") == 0) {
      *r = std::make_unique<FillingFile>(std::move(*r), &info_log_full_);
    }
    return s;
  }

  // How a new WAL is opened over a kept old one (storage.wal_recycle_files):
  // it fails the same way.
  rocksdb::IOStatus ReuseWritableFile(const std::string& f, const std::string& old,
                                      const rocksdb::FileOptions& o,
                                      std::unique_ptr<rocksdb::FSWritableFile>* r,
                                      rocksdb::IODebugContext* d) override {
    if (rocksdb::IOStatus failed = FailIfWalOpenShould(f); !failed.ok()) return failed;
    return target()->ReuseWritableFile(f, old, o, r, d);
  }

  // RocksDB's info log, opened through NewWritableFile() above.
  rocksdb::IOStatus NewLogger(const std::string& f, const rocksdb::IOOptions& o,
                              std::shared_ptr<rocksdb::Logger>* r,
                              rocksdb::IODebugContext* d) override {
    return rocksdb::FileSystem::NewLogger(f, o, r, d);
  }

  rocksdb::IOStatus GetFreeSpace(const std::string& path, const rocksdb::IOOptions& o,
                                 uint64_t* free, rocksdb::IODebugContext* d) override {
    if (uint64_t bytes = free_space_.load(); bytes != 0) {
      *free = bytes;
      return rocksdb::IOStatus::OK();
    }
    return target()->GetFreeSpace(path, o, free, d);
  }

 private:
  // EMFILE while FailNextWalOpens() has failures left and `f` is a WAL.
  rocksdb::IOStatus FailIfWalOpenShould(const std::string& f) {
    if (IsWalFile(f) && wal_open_failures_ > 0) {
      --wal_open_failures_;
      ++wal_opens_failed_;
      return rocksdb::IOStatus::IOError("While open a file for appending: " + f,
                                        std::strerror(EMFILE));
    }
    return rocksdb::IOStatus::OK();
  }

  std::atomic<int> wal_open_failures_{0};
  std::atomic<int> wal_opens_failed_{0};
  std::atomic<uint64_t> free_space_{0};  // 0: the real one
  std::atomic<bool> info_log_full_{false};
};

class StorageFaultsTest : public ::testing::Test {
 protected:
  StoreOptions Options() {
    StoreOptions o;
    o.data_dir = dir_.path();
    o.containers = BlogContainers();
    o.sync = false;
    o.clock = &clock_;
    o.retention_interval_ms = 3600 * 1000;
    o.block_cache_bytes = 8u << 20;
    o.write_buffer_bytes = 64u << 10;  // memtables switch (and the WAL rolls) often
    o.file_system = fs_;
    return o;
  }

  void Open(const StoreOptions& options) {
    Result<std::unique_ptr<DocumentStore>> r = DocumentStore::Open(options);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    store_ = std::move(r.value());
  }

  void TearDown() override {
    if (store_) store_->Close();
  }

  // Upserts user `id` with `pad_bytes` of padding.
  WriteResult Upsert(const std::string& id, size_t pad_bytes = 100) {
    const ContainerSpec* spec = store_->FindContainer("users");
    boost::json::object body = Obj(R"({"type":"user"})");
    body["id"] = id;
    body["userId"] = id;
    body["pad"] = std::string(pad_bytes, 'p');
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
    return store_->Write(std::move(request));
  }

  Status Read(const std::string& id) {
    std::string json;
    return store_->Read("users", id, id, &json);
  }

  std::vector<ChangeRecord> Feed() { return testutil::WholeFeed(*store_); }

  // Exactly the `acknowledged` writes (ids of users), under contiguous
  // LSNs, and none of the `failed` ones.
  void ExpectExactly(const std::set<std::string>& acknowledged,
                     const std::set<std::string>& failed) {
    std::vector<ChangeRecord> feed = Feed();
    ASSERT_EQ(feed.size(), acknowledged.size());
    EXPECT_EQ(store_->HeadLsn(), acknowledged.size());
    std::set<std::string> in_feed;
    for (size_t i = 0; i < feed.size(); ++i) {
      EXPECT_EQ(feed[i].lsn, i + 1);
      in_feed.insert(feed[i].id);
    }
    EXPECT_EQ(in_feed, acknowledged);
    for (const auto& id : acknowledged) EXPECT_TRUE(IsOk(Read(id))) << id;
    for (const auto& id : failed) EXPECT_TRUE(HasCode(Read(id), ErrorCode::kNotFound)) << id;
  }

  // ExpectExactly(), before and after a reopen.
  void ExpectExactlyAcrossAReopen(const std::set<std::string>& acknowledged,
                                  const std::set<std::string>& failed) {
    {
      SCOPED_TRACE("after recovery");
      ExpectExactly(acknowledged, failed);
    }
    store_->Close();
    store_.reset();
    ASSERT_NO_FATAL_FAILURE(Open(Options()));
    SCOPED_TRACE("after reopen");
    ExpectExactly(acknowledged, failed);
  }

  TempDir dir_;
  ManualClock clock_{1'700'000'000'000ull};
  std::shared_ptr<FaultFileSystem> fs_ = std::make_shared<FaultFileSystem>();
  std::unique_ptr<DocumentStore> store_;
};

TEST_F(StorageFaultsTest, WritesStopBelowTheReserveWhileReadsGoOnAndResumeWhenSpaceIsBack) {
  StoreOptions options = Options();
  options.min_free_bytes = 64 * kMiB;
  fs_->SetFreeSpace(1024 * kMiB);
  ASSERT_NO_FATAL_FAILURE(Open(options));
  ASSERT_TRUE(IsOk(Upsert("u1").status));
  const Lsn head = store_->HeadLsn();

  fs_->SetFreeSpace(32 * kMiB);
  clock_.Advance(SpaceReserve::kSampleIntervalMs);
  EXPECT_TRUE(HasCode(Upsert("u2").status, ErrorCode::kInsufficientStorage));
  EXPECT_TRUE(HasCode(store_->Health(), ErrorCode::kInsufficientStorage));
  EXPECT_TRUE(IsOk(Read("u1")));
  EXPECT_TRUE(HasCode(Read("u2"), ErrorCode::kNotFound));
  EXPECT_EQ(store_->HeadLsn(), head);
  EXPECT_EQ(store_->Stats().requests_refused_no_space, 1u);

  // Above the reserve, but not by an eighth of it: still refused.
  fs_->SetFreeSpace(70 * kMiB);
  clock_.Advance(SpaceReserve::kSampleIntervalMs);
  EXPECT_TRUE(HasCode(Upsert("u2").status, ErrorCode::kInsufficientStorage));

  fs_->SetFreeSpace(80 * kMiB);
  clock_.Advance(SpaceReserve::kSampleIntervalMs);
  EXPECT_TRUE(IsOk(store_->Health()));
  WriteResult w = Upsert("u2");
  ASSERT_TRUE(IsOk(w.status));
  EXPECT_EQ(w.last_lsn, head + 1);
  EXPECT_TRUE(IsOk(Read("u2")));
}

TEST_F(StorageFaultsTest, BytesWrittenSinceTheLastSampleCountAgainstTheReserve) {
  StoreOptions options = Options();
  options.min_free_bytes = 4 * kMiB;
  // Half a MiB above the reserve; the clock stands still and less than a
  // quarter of the reserve is written, so free space is not sampled again.
  fs_->SetFreeSpace(4 * kMiB + 512 * 1024);
  ASSERT_NO_FATAL_FAILURE(Open(options));
  int written = 0;
  Status refused;
  while (written < 100) {
    WriteResult w = Upsert("u" + std::to_string(written), 100 * 1024);
    if (!w.status.ok()) {
      refused = w.status;
      break;
    }
    ++written;
  }
  EXPECT_TRUE(HasCode(refused, ErrorCode::kInsufficientStorage));
  // Each write puts over 200 KiB into RocksDB (the item and its change record).
  EXPECT_GE(written, 1);
  EXPECT_LE(written, 4);
}

// RocksDB's info log on a full disk: Debian's RocksDB 7.8 aborted on the
// line after the first that failed (an assertion in WritableFileWriter).
TEST_F(StorageFaultsTest, AnInfoLogThatCannotBeWrittenDoesNotStopTheStore) {
  ASSERT_NO_FATAL_FAILURE(Open(Options()));
  ASSERT_TRUE(IsOk(Upsert("u1").status));
  fs_->FillInfoLog();
  // RocksDB writes its buffered LOG lines to the file every 5 s; memtable
  // switches and flushes log lines, so writing for 7 s makes it write LOG,
  // fail, and log again.
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(7);
  int n = 2;
  for (; std::chrono::steady_clock::now() < until; ++n) {
    ASSERT_TRUE(IsOk(Upsert("u" + std::to_string(n), 4096).status));
  }
  store_->Close();
  store_.reset();
  ASSERT_NO_FATAL_FAILURE(Open(Options()));
  EXPECT_TRUE(IsOk(Read("u" + std::to_string(n - 1))));
}

TEST_F(StorageFaultsTest, AWalRollFailingWithEmfileIsRecoveredFromWithoutRestart) {
  ASSERT_NO_FATAL_FAILURE(Open(Options()));
  std::set<std::string> acknowledged;
  std::set<std::string> failed;
  int n = 0;
  for (; n < 20; ++n) {
    std::string id = "u" + std::to_string(n);
    ASSERT_TRUE(IsOk(Upsert(id, 4096).status));
    acknowledged.insert(id);
  }

  fs_->FailNextWalOpens(3);
  Status failure;
  for (int i = 0; i < 500 && failure.ok(); ++i, ++n) {
    std::string id = "u" + std::to_string(n);
    WriteResult w = Upsert(id, 4096);
    if (w.status.ok()) {
      acknowledged.insert(id);
    } else {
      failure = w.status;
      failed.insert(id);
    }
  }
  ASSERT_FALSE(failure.ok()) << "no WAL roll happened";
  EXPECT_TRUE(HasCode(failure, ErrorCode::kUnavailable)) << failure.ToString();
  EXPECT_GE(fs_->wal_opens_failed(), 1);
  Status health = store_->Health();
  EXPECT_TRUE(HasCode(health, ErrorCode::kUnavailable)) << health.ToString();

  // Writes are refused while RocksDB recovers, then accepted again.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  bool recovered = false;
  while (!recovered && std::chrono::steady_clock::now() < deadline) {
    std::string id = "u" + std::to_string(n++);
    WriteResult w = Upsert(id, 4096);
    if (w.status.ok()) {
      acknowledged.insert(id);
      recovered = true;
    } else {
      ASSERT_TRUE(HasCode(w.status, ErrorCode::kUnavailable)) << w.status.ToString();
      failed.insert(id);
      std::this_thread::sleep_for(std::chrono::milliseconds(20));  // polling, not a wait
    }
  }
  ASSERT_TRUE(recovered) << "writes still refused: " << store_->Health().ToString();
  EXPECT_TRUE(IsOk(store_->Health()));
  for (int i = 0; i < 50; ++i, ++n) {
    std::string id = "u" + std::to_string(n);
    ASSERT_TRUE(IsOk(Upsert(id, 4096).status));
    acknowledged.insert(id);
  }

  ExpectExactlyAcrossAReopen(acknowledged, failed);
}

// As above, with writers on four threads, so that groups of several
// requests meet the failure: every request of the failed group fails, none
// of it is read back, and after the recovery LSNs go on from the last group
// written. Items of 512 bytes: with groups of larger ones failing (1 KiB
// with feedd's memtable skip list, 4 KiB with RocksDB's), Debian's RocksDB
// 7.8 (assertions on) aborts when the database is closed after
// DB::Resume() (`last_ref` in ~ColumnFamilySet), as in the import test
// below.
TEST_F(StorageFaultsTest, AWalRollFailingUnderConcurrentWritersLosesNoLsnAndKeepsNoFailedWrite) {
  ASSERT_NO_FATAL_FAILURE(Open(Options()));
  fs_->FailNextWalOpens(3);
  constexpr int kWritesAfterRecovery = 200;
  std::mutex mutex;
  std::set<std::string> acknowledged;
  std::set<std::string> failed;
  bool saw_failure = false;
  int after_recovery = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  std::vector<std::thread> writers;
  for (int t = 0; t < 4; ++t) {
    writers.emplace_back([&, t] {
      for (int i = 0; std::chrono::steady_clock::now() < deadline; ++i) {
        std::string id = "t" + std::to_string(t) + "-" + std::to_string(i);
        WriteResult w = Upsert(id, 512);
        {
          std::lock_guard<std::mutex> lock(mutex);
          if (w.status.ok()) {
            acknowledged.insert(id);
            if (saw_failure) ++after_recovery;
          } else {
            EXPECT_TRUE(HasCode(w.status, ErrorCode::kUnavailable)) << w.status.ToString();
            failed.insert(id);
            saw_failure = true;
          }
          if (after_recovery >= kWritesAfterRecovery) return;
        }
        if (!w.status.ok()) std::this_thread::sleep_for(std::chrono::milliseconds(5));  // polling
      }
    });
  }
  for (std::thread& w : writers) w.join();
  ASSERT_TRUE(saw_failure) << "no WAL roll happened";
  ASSERT_GE(after_recovery, kWritesAfterRecovery)
      << "writes still refused: " << store_->Health().ToString();
  EXPECT_GE(fs_->wal_opens_failed(), 1);
  EXPECT_GE(store_->Stats().requests_committed, store_->Stats().groups_committed + 1)
      << "no group held two requests: the writers did not overlap";
  ExpectExactlyAcrossAReopen(acknowledged, failed);
}

// Bulk import (ImportBatch): a batch RocksDB refuses leaves none of its
// items, index entries or change records behind, the acknowledged batches
// stay whole, and the re-run with skip-existing completes the import.
TEST_F(StorageFaultsTest, AnImportBatchThatFailsLeavesNothingOfItsItemsAndARerunCompletesIt) {
  ASSERT_NO_FATAL_FAILURE(Open(Options()));
  const ContainerSpec* spec = store_->FindContainer("users");
  // Batches of about 4 KiB: after a failed write of a batch of 20 KiB or
  // more and DB::Resume(), Debian's RocksDB 7.8 (assertions on) aborts when
  // the database is closed (`last_ref` in ~ColumnFamilySet).
  constexpr int kPerBatch = 5;
  auto batch_of = [&](int b) {
    ImportBatch batch;
    for (int i = 0; i < kPerBatch; ++i) {
      std::string id = "b" + std::to_string(b) + "-" + std::to_string(i);
      boost::json::object body = Obj(R"({"type":"user"})");
      body["id"] = id;
      body["userId"] = id;
      body["pad"] = std::string(700, 'p');
      Result<PreparedItem> item =
          PrepareItem(*spec, std::move(body), std::nullopt, std::nullopt, 1 << 20);
      if (!item.ok()) throw std::runtime_error(item.status().ToString());
      WriteOp op;
      op.kind = WriteOpKind::kCreate;
      op.skip_if_exists = true;
      op.imported = true;
      op.id = id;
      op.item = std::move(*item);
      WriteRequest request;
      request.container = "users";
      request.partition_key = id;
      request.ops.push_back(std::move(op));
      batch.requests.push_back(std::move(request));
    }
    return batch;
  };
  auto ids_of = [](int b) {
    std::vector<std::string> ids;
    for (int i = 0; i < kPerBatch; ++i)
      ids.push_back("b" + std::to_string(b) + "-" + std::to_string(i));
    return ids;
  };

  std::set<std::string> acknowledged;
  for (int i = 0; i < 20; ++i) {
    std::string id = "u" + std::to_string(i);
    ASSERT_TRUE(IsOk(Upsert(id, 4096).status));
    acknowledged.insert(id);
  }
  ASSERT_TRUE(IsOk(store_->WriteImport(batch_of(0)).status));
  for (const auto& id : ids_of(0)) acknowledged.insert(id);

  fs_->FailNextWalOpens(3);
  int failed_batch = -1;
  int b = 1;
  for (; b < 200 && failed_batch < 0; ++b) {
    ImportResult r = store_->WriteImport(batch_of(b));
    if (r.status.ok()) {
      for (const auto& id : ids_of(b)) acknowledged.insert(id);
    } else {
      EXPECT_TRUE(HasCode(r.status, ErrorCode::kUnavailable)) << r.status.ToString();
      EXPECT_TRUE(r.results.empty());
      failed_batch = b;
    }
  }
  ASSERT_GE(failed_batch, 0) << "no WAL roll happened";

  auto check = [&](const char* when) {
    SCOPED_TRACE(when);
    ExpectExactly(acknowledged, {});
  };
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!store_->Health().ok() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // polling, not a wait
  }
  ASSERT_TRUE(IsOk(store_->Health()));
  for (const auto& id : ids_of(failed_batch)) {
    EXPECT_TRUE(HasCode(Read(id), ErrorCode::kNotFound)) << id;
  }
  check("after the failure, once RocksDB resumed");

  // The re-run skips what is there and writes the rest.
  ASSERT_TRUE(IsOk(Upsert("after-recovery").status));
  acknowledged.insert("after-recovery");
  for (int rerun = 0; rerun <= failed_batch; ++rerun) {
    ImportResult r = store_->WriteImport(batch_of(rerun));
    ASSERT_TRUE(IsOk(r.status)) << rerun;
    for (const WriteResult& item : r.results) {
      ASSERT_TRUE(IsOk(item.status));
      EXPECT_EQ(item.results.at(0).http_status, rerun == failed_batch ? 201 : 409) << rerun;
    }
  }
  for (const auto& id : ids_of(failed_batch)) acknowledged.insert(id);
  check("after the re-run");
  store_->Close();
  store_.reset();
  ASSERT_NO_FATAL_FAILURE(Open(Options()));
  check("after a reopen");
}

}  // namespace
}  // namespace feedd
