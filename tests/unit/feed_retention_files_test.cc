// Retention gives the dropped changes' disk space back without making the
// feed's files overlap, and reads no more of the feed than it may drop
// (storage/change_feed.h). The range tombstone it wrote
// hid the records but left their SST files on the disk until a compaction
// read them, and the feed's files, moved down to the last level without a
// rewrite, seldom see one: with feed.retention_mb set, the feed kept growing
// on the disk; and each file flushed with a tombstone spanned the dropped
// range, so compaction merged the feed's files instead of moving them.
#include <gtest/gtest.h>
#include <rocksdb/db.h>
#include <rocksdb/metadata.h>
#include <rocksdb/perf_context.h>
#include <rocksdb/write_batch.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "storage/change_feed.h"
#include "storage/key_format.h"
#include "storage/rocks_database.h"
#include "tests/blog_scenario.h"
#include "tests/unit/test_util.h"
#include "util/clock.h"

namespace feedd {
namespace {

namespace kf = key_format;
using testutil::TempDir;

constexpr uint64_t kRetentionMs = 60 * 1000;
constexpr Lsn kHead = 150;

class FeedRetentionFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    options_.data_dir = dir_.path();
    options_.containers = BlogContainers();
    options_.sync = false;
    options_.retention_ms = kRetentionMs;
    options_.retention_bytes = 0;
    options_.clock = &clock_;
    Result<std::unique_ptr<RocksDatabase>> opened = RocksDatabase::Open(options_);
    ASSERT_TRUE(opened.ok()) << opened.status().ToString();
    db_ = std::move(*opened);
  }

  // Change records first..last into the memtable, written long ago up to
  // young_from and now from there.
  void Write(Lsn first, Lsn last, Lsn young_from) const {
    rocksdb::WriteBatch batch;
    for (Lsn lsn = first; lsn <= last; ++lsn) {
      const uint64_t ts_ms =
          lsn < young_from ? clock_.NowMillis() - 2 * kRetentionMs : clock_.NowMillis();
      const std::string envelope = R"({"lsn":)" + std::to_string(lsn) + R"(,"after":{}})";
      ASSERT_TRUE(batch
                      .Put(db_->feed(), kf::FeedKey(lsn),
                           kf::FeedValue(ts_ms, ChangeOp::kCreate, "users", "u1", "u1", envelope))
                      .ok());
    }
    ASSERT_TRUE(db_->db()->Write(rocksdb::WriteOptions(), &batch).ok());
  }

  // The feed's memtable into a level 0 file.
  void Flush() const {
    rocksdb::FlushOptions flush;
    flush.wait = true;
    ASSERT_TRUE(db_->db()->Flush(flush, db_->feed()).ok());
  }

  // Write()'s records in a file of their own below level 0 (retention
  // leaves level 0's files to their compaction).
  void WriteFile(Lsn first, Lsn last, Lsn young_from) const {
    ASSERT_NO_FATAL_FAILURE(Write(first, last, young_from));
    ASSERT_NO_FATAL_FAILURE(Flush());
    const std::string begin = kf::FeedKey(first), end = kf::FeedKey(last);
    const rocksdb::Slice begin_slice(begin), end_slice(end);
    ASSERT_TRUE(
        db_->db()
            ->CompactRange(rocksdb::CompactRangeOptions(), db_->feed(), &begin_slice, &end_slice)
            .ok());
  }

  // The LSN ranges of the feed's files, all of which must be below level 0
  // unless `level0`, which lists level 0's alone.
  std::vector<std::pair<Lsn, Lsn>> FeedFiles(bool level0 = false) const {
    rocksdb::ColumnFamilyMetaData meta;
    db_->db()->GetColumnFamilyMetaData(db_->feed(), &meta);
    std::vector<std::pair<Lsn, Lsn>> ranges;
    for (const auto& level : meta.levels) {
      if (level0 && level.level != 0) continue;
      for (const auto& file : level.files) {
        if (!level0) {
          EXPECT_GT(level.level, 0) << file.name;
        }
        Lsn smallest = 0, largest = 0;
        EXPECT_TRUE(kf::DecodeFeedKey(file.smallestkey, &smallest));
        EXPECT_TRUE(kf::DecodeFeedKey(file.largestkey, &largest));
        ranges.emplace_back(smallest, largest);
      }
    }
    std::sort(ranges.begin(), ranges.end());
    return ranges;
  }

  // The LSNs a feed read from `from` returns.
  static std::vector<Lsn> ReadLsns(const ChangeFeed& feed, Lsn from) {
    FeedReadSpec spec;
    spec.from = from;
    spec.limit = 1000;
    FeedPage page;
    const Status s = feed.Read(spec, &page);
    EXPECT_TRUE(s.ok()) << s.ToString();
    std::vector<Lsn> lsns;
    for (const ChangeRecord& record : page.records) lsns.push_back(record.lsn);
    return lsns;
  }

  static std::vector<Lsn> Range(Lsn first, Lsn last) {
    std::vector<Lsn> lsns;
    for (Lsn lsn = first; lsn <= last; ++lsn) lsns.push_back(lsn);
    return lsns;
  }

  std::unique_ptr<ChangeFeed> NewFeed() {
    auto feed = std::make_unique<ChangeFeed>(
        db_.get(), options_, [] { return kHead; }, [] { return uint64_t{0}; });
    EXPECT_TRUE(feed->Load().ok());
    return feed;
  }

  ManualClock clock_{10 * kRetentionMs};
  TempDir dir_;
  StoreOptions options_;
  std::unique_ptr<RocksDatabase> db_;
};

TEST_F(FeedRetentionFilesTest, FilesOfDroppedChangesAreDeleted) {
  ASSERT_NO_FATAL_FAILURE(WriteFile(1, 50, /*young_from=*/101));
  ASSERT_NO_FATAL_FAILURE(WriteFile(51, 100, /*young_from=*/101));
  ASSERT_NO_FATAL_FAILURE(WriteFile(101, kHead, /*young_from=*/101));
  ASSERT_EQ(FeedFiles(), (std::vector<std::pair<Lsn, Lsn>>{{1, 50}, {51, 100}, {101, kHead}}));

  std::unique_ptr<ChangeFeed> feed = NewFeed();
  ASSERT_TRUE(feed->EnforceRetention().ok());
  EXPECT_EQ(feed->oldest_retained(), 101u);
  EXPECT_EQ(FeedFiles(), (std::vector<std::pair<Lsn, Lsn>>{{101, kHead}}));
  EXPECT_EQ(ReadLsns(*feed, 101), Range(101, kHead));
}

// Retention writes no range tombstone. One would go into the next file
// flushed, which would then span the dropped range and overlap the feed's
// older files: compaction would merge them all instead of moving the new
// file down (at SF 1, 2 GB compactions of the feed and write stalls).
TEST_F(FeedRetentionFilesTest, TheNextFlushedFileHoldsOnlyItsOwnChanges) {
  ASSERT_NO_FATAL_FAILURE(WriteFile(1, 100, /*young_from=*/101));
  ASSERT_NO_FATAL_FAILURE(WriteFile(101, kHead, /*young_from=*/101));
  std::unique_ptr<ChangeFeed> feed = NewFeed();
  ASSERT_TRUE(feed->EnforceRetention().ok());
  ASSERT_EQ(feed->oldest_retained(), 101u);

  ASSERT_NO_FATAL_FAILURE(Write(kHead + 1, kHead + 1, /*young_from=*/kHead + 1));
  ASSERT_NO_FATAL_FAILURE(Flush());
  EXPECT_EQ(FeedFiles(/*level0=*/true), (std::vector<std::pair<Lsn, Lsn>>{{kHead + 1, kHead + 1}}));
}

// A file that holds retained changes too stays whole; the dropped part of it
// is never read again, and it goes once a later pass drops the rest.
TEST_F(FeedRetentionFilesTest, AFileWithRetainedChangesStaysUntilTheyAreDropped) {
  ASSERT_NO_FATAL_FAILURE(WriteFile(1, 50, /*young_from=*/76));
  ASSERT_NO_FATAL_FAILURE(WriteFile(51, kHead, /*young_from=*/76));
  ASSERT_EQ(FeedFiles(), (std::vector<std::pair<Lsn, Lsn>>{{1, 50}, {51, kHead}}));

  std::unique_ptr<ChangeFeed> feed = NewFeed();
  ASSERT_TRUE(feed->EnforceRetention().ok());
  EXPECT_EQ(feed->oldest_retained(), 76u);
  EXPECT_EQ(FeedFiles(), (std::vector<std::pair<Lsn, Lsn>>{{51, kHead}}));
  EXPECT_EQ(ReadLsns(*feed, 76), Range(76, kHead));

  // Everything old now: the last file goes too.
  clock_.Advance(2 * kRetentionMs);
  ASSERT_TRUE(feed->EnforceRetention().ok());
  EXPECT_EQ(feed->oldest_retained(), kHead + 1);
  EXPECT_EQ(FeedFiles(), (std::vector<std::pair<Lsn, Lsn>>{}));
}

// Behind a consumer, a pass reads the feed only up to what it may drop, and
// once: it read as far as age and size alone would drop (at SF 1, behind a
// slow view, most of the feed every 10 s: 156 s of CPU in 18 minutes), and
// then the dropped records again to count their bytes.
TEST_F(FeedRetentionFilesTest, APassReadsNoFurtherThanAConsumerLetsItDrop) {
  // In the memtable, where each record read is counted; all of them old.
  ASSERT_NO_FATAL_FAILURE(Write(1, kHead, /*young_from=*/kHead + 1));
  std::unique_ptr<ChangeFeed> feed = NewFeed();
  ASSERT_TRUE(feed->RegisterConsumer("slow", 10).ok());

  rocksdb::SetPerfLevel(rocksdb::PerfLevel::kEnableCount);
  rocksdb::get_perf_context()->Reset();
  ASSERT_TRUE(feed->EnforceRetention().ok());
  const uint64_t read = rocksdb::get_perf_context()->next_on_memtable_count;
  rocksdb::SetPerfLevel(rocksdb::PerfLevel::kDisable);
  EXPECT_EQ(feed->oldest_retained(), 11u);
  EXPECT_LE(read, 15u) << "records read to drop 10 of " << kHead;
}

}  // namespace
}  // namespace feedd
