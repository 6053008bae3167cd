// WalSyncTimingFileSystem (storage/wal_sync_timing_file_system.h): a sync
// of a write-ahead log is reported, a sync of any other file is not.
#include "storage/wal_sync_timing_file_system.h"

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <string>

#include "tests/unit/test_util.h"

namespace feedd {
namespace {

using testutil::TempDir;

TEST(WalSyncTimingFileSystemTest, ReportsTheSyncsOfWalsOnly) {
  TempDir dir;
  std::atomic<int> reported{0};
  WalSyncTimingFileSystem fs(rocksdb::FileSystem::Default(), [&](double seconds) {
    EXPECT_GE(seconds, 0);
    ++reported;
  });
  auto write_and_sync = [&](const std::string& name, bool fsync) {
    std::unique_ptr<rocksdb::FSWritableFile> file;
    ASSERT_TRUE(
        fs.NewWritableFile(dir.path() + "/" + name, rocksdb::FileOptions(), &file, nullptr).ok());
    ASSERT_TRUE(file->Append("record", rocksdb::IOOptions(), nullptr).ok());
    ASSERT_TRUE((fsync ? file->Fsync(rocksdb::IOOptions(), nullptr)
                       : file->Sync(rocksdb::IOOptions(), nullptr))
                    .ok());
    ASSERT_TRUE(file->Close(rocksdb::IOOptions(), nullptr).ok());
  };
  ASSERT_NO_FATAL_FAILURE(write_and_sync("000012.log", /*fsync=*/false));
  EXPECT_EQ(reported.load(), 1);
  ASSERT_NO_FATAL_FAILURE(write_and_sync("000013.log", /*fsync=*/true));
  EXPECT_EQ(reported.load(), 2);
  for (const char* other : {"000014.sst", "MANIFEST-000005", "LOG", "x.log.tmp"}) {
    ASSERT_NO_FATAL_FAILURE(write_and_sync(other, /*fsync=*/false));
    EXPECT_EQ(reported.load(), 2) << other;
  }
}

}  // namespace
}  // namespace feedd
