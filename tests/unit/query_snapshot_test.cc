// No query takes a RocksDB snapshot (storage/query_engine.h). Releasing a
// snapshot makes RocksDB 7.8 rewrite every bottommost file whose sequence
// numbers are not zeroed yet; the change feed's files reach the last level
// by trivial moves, so a snapshot per query (the processors query their
// views on every batch) rewrote the whole feed once more.
#include <gtest/gtest.h>
#include <rocksdb/db.h>
#include <rocksdb/metadata.h>
#include <rocksdb/write_batch.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "storage/json_pointer.h"
#include "storage/key_format.h"
#include "storage/query_engine.h"
#include "storage/rocks_database.h"
#include "tests/blog_scenario.h"
#include "tests/unit/test_util.h"

namespace feedd {
namespace {

namespace kf = key_format;
using testutil::TempDir;

class QuerySnapshotTest : public ::testing::Test {
 protected:
  void SetUp() override {
    StoreOptions options;
    options.data_dir = dir_.path();
    options.containers = BlogContainers();
    options.sync = false;
    Result<std::unique_ptr<RocksDatabase>> opened = RocksDatabase::Open(options);
    ASSERT_TRUE(opened.ok()) << opened.status().ToString();
    db_ = std::move(*opened);

    // One flushed feed file: bottommost, its sequence numbers not zeroed.
    rocksdb::WriteBatch batch;
    for (uint64_t lsn = 1; lsn <= 50; ++lsn) {
      const std::string envelope = R"({"lsn":)" + std::to_string(lsn) + R"(,"after":{}})";
      batch.Put(db_->feed(), kf::FeedKey(lsn),
                kf::FeedValue(1, ChangeOp::kCreate, "users", "u1", "u1", envelope));
    }
    ASSERT_TRUE(db_->db()->Write(rocksdb::WriteOptions(), &batch).ok());
    rocksdb::FlushOptions flush;
    flush.wait = true;
    ASSERT_TRUE(db_->db()->Flush(flush, db_->feed()).ok());
    // A later write, so that the oldest snapshot a release leaves is past the file.
    ASSERT_TRUE(db_->db()->Put(rocksdb::WriteOptions(), db_->meta(), "later", "").ok());
    WaitForCompactions();
    feed_files_ = FeedFiles();
    ASSERT_EQ(feed_files_.size(), 1u);
  }

  std::vector<std::string> FeedFiles() const {
    rocksdb::ColumnFamilyMetaData meta;
    db_->db()->GetColumnFamilyMetaData(db_->feed(), &meta);
    std::vector<std::string> names;
    for (const auto& level : meta.levels) {
      for (const auto& file : level.files) names.push_back(file.name);
    }
    return names;
  }

  void WaitForCompactions() const {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    uint64_t pending = 1, running = 1;
    while (std::chrono::steady_clock::now() < deadline) {
      ASSERT_TRUE(db_->db()->GetIntProperty(db_->feed(), "rocksdb.compaction-pending", &pending));
      ASSERT_TRUE(db_->db()->GetIntProperty("rocksdb.num-running-compactions", &running));
      if (pending == 0 && running == 0) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    FAIL() << "compactions still pending after 60 s";
  }

  void Query(std::string_view container, const QuerySpec& spec) const {
    const ContainerHandle* handle = db_->Find(container);
    ASSERT_NE(handle, nullptr);
    Result<QueryResult> answer = QueryEngine(db_.get()).Run(*handle, spec);
    ASSERT_TRUE(answer.ok()) << answer.status().ToString();
  }

  TempDir dir_;
  std::unique_ptr<RocksDatabase> db_;
  std::vector<std::string> feed_files_;
};

TEST_F(QuerySnapshotTest, QueriesLeaveTheFeedsFilesAlone) {
  QuerySpec partition;
  partition.partition_key = "u1";
  QuerySpec whole_container;
  QuerySpec by_index;
  by_index.filters = {FieldFilter{*JsonPointer::Parse("/userId"), boost::json::value("u1")}};
  for (int i = 0; i < 3; ++i) {
    ASSERT_NO_FATAL_FAILURE(Query("users", partition));
    ASSERT_NO_FATAL_FAILURE(Query("users", whole_container));
    ASSERT_NO_FATAL_FAILURE(Query("posts", by_index));
  }
  ASSERT_NO_FATAL_FAILURE(WaitForCompactions());
  EXPECT_EQ(FeedFiles(), feed_files_);
}

// The control: what this test would see of a snapshot's release.
TEST_F(QuerySnapshotTest, ASnapshotsReleaseHasTheFeedsFileRewritten) {
  db_->db()->ReleaseSnapshot(db_->db()->GetSnapshot());
  ASSERT_NO_FATAL_FAILURE(WaitForCompactions());
  EXPECT_NE(FeedFiles(), feed_files_);
}

}  // namespace
}  // namespace feedd
