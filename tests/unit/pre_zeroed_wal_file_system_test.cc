// PreZeroedWalFileSystem (storage/pre_zeroed_wal_file_system.h): a new
// write-ahead log is a ready zero-filled file written from its start, other
// files pass through, an earlier run's pool files are used or removed, a log
// starts empty when no file could be prepared, and RocksDB recovers every
// synced write from a log with a zero tail after the process dies.
#include "storage/pre_zeroed_wal_file_system.h"

#include <gtest/gtest.h>
#include <rocksdb/db.h>
#include <rocksdb/env.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "tests/unit/test_util.h"

namespace feedd {
namespace {

using testutil::TempDir;
namespace fs = std::filesystem;

constexpr uint64_t kFileBytes = 256 * 1024;

// Polls `done` until it holds or 30 s pass (the filler thread's work).
bool Eventually(const std::function<bool()>& done) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

bool Exists(const std::string& path) { return fs::exists(path); }

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::unique_ptr<rocksdb::FSWritableFile> Open(rocksdb::FileSystem& fs, const std::string& path) {
  std::unique_ptr<rocksdb::FSWritableFile> file;
  rocksdb::IOStatus s = fs.NewWritableFile(path, rocksdb::FileOptions(), &file, nullptr);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return file;
}

TEST(PreZeroedWalFileSystemTest, ANewLogIsAReadyPoolFileWrittenFromItsStart) {
  TempDir dir;
  PreZeroedWalFileSystem wal_fs(rocksdb::FileSystem::Default(), dir.path(), kFileBytes, 1);
  const std::string first_pool = dir.path() + "/feedd-wal-pool-1";
  ASSERT_TRUE(Eventually([&] { return Exists(first_pool); }));

  const std::string log = dir.path() + "/000005.log";
  auto file = Open(wal_fs, log);
  ASSERT_TRUE(file);
  ASSERT_TRUE(file->Append("record", rocksdb::IOOptions(), nullptr).ok());
  ASSERT_TRUE(file->Sync(rocksdb::IOOptions(), nullptr).ok());
  EXPECT_FALSE(Exists(first_pool));
  const std::string content = ReadAll(log);
  ASSERT_EQ(content.size(), kFileBytes);
  EXPECT_EQ(content.substr(0, 6), "record");
  EXPECT_EQ(content.find_first_not_of('\0', 6), std::string::npos);
  ASSERT_TRUE(file->Close(rocksdb::IOOptions(), nullptr).ok());
  EXPECT_EQ(wal_fs.logs_pre_zeroed(), 1u);
  EXPECT_EQ(wal_fs.logs_empty(), 0u);
  // The pool is refilled.
  EXPECT_TRUE(Eventually([&] { return Exists(dir.path() + "/feedd-wal-pool-2"); }));
}

TEST(PreZeroedWalFileSystemTest, OtherFilesPassThrough) {
  TempDir dir;
  PreZeroedWalFileSystem wal_fs(rocksdb::FileSystem::Default(), dir.path(), kFileBytes, 1);
  ASSERT_TRUE(Eventually([&] { return Exists(dir.path() + "/feedd-wal-pool-1"); }));
  for (const char* name : {"000007.sst", "MANIFEST-000003", "LOG", "x.log.tmp"}) {
    const std::string path = dir.path() + "/" + name;
    auto file = Open(wal_fs, path);
    ASSERT_TRUE(file);
    ASSERT_TRUE(file->Append("abc", rocksdb::IOOptions(), nullptr).ok());
    ASSERT_TRUE(file->Close(rocksdb::IOOptions(), nullptr).ok());
    EXPECT_EQ(ReadAll(path), "abc") << name;
  }
  EXPECT_TRUE(Exists(dir.path() + "/feedd-wal-pool-1"));
  EXPECT_EQ(wal_fs.logs_pre_zeroed() + wal_fs.logs_empty(), 0u);
}

TEST(PreZeroedWalFileSystemTest, AnEarlierRunsCompletePoolFilesAreUsedAndTheRestRemoved) {
  TempDir dir;
  auto make = [&](const std::string& name, uint64_t bytes) {
    std::ofstream(dir.path() + "/" + name, std::ios::binary) << std::string(bytes, '\0');
  };
  make("feedd-wal-pool-7", kFileBytes);
  make("feedd-wal-pool-8.tmp", kFileBytes / 2);
  make("feedd-wal-pool-9", 0);
  PreZeroedWalFileSystem wal_fs(rocksdb::FileSystem::Default(), dir.path(), kFileBytes, 1);
  EXPECT_FALSE(Exists(dir.path() + "/feedd-wal-pool-8.tmp"));
  EXPECT_FALSE(Exists(dir.path() + "/feedd-wal-pool-9"));

  auto file = Open(wal_fs, dir.path() + "/000010.log");
  ASSERT_TRUE(file);
  EXPECT_FALSE(Exists(dir.path() + "/feedd-wal-pool-7"));
  EXPECT_EQ(wal_fs.logs_pre_zeroed(), 1u);
  // The next one is numbered after the largest kept.
  EXPECT_TRUE(Eventually([&] { return Exists(dir.path() + "/feedd-wal-pool-8"); }));
}

TEST(PreZeroedWalFileSystemTest, PoolFilesAreSizedByWhatTheLastLogsGrewTo) {
  TempDir dir;
  constexpr uint64_t kMiB = 1024 * 1024;
  PreZeroedWalFileSystem wal_fs(rocksdb::FileSystem::Default(), dir.path(), 4 * kMiB, 1);
  auto log = Open(wal_fs, dir.path() + "/000001.log");  // pool file 1, made at start
  ASSERT_TRUE(log);
  ASSERT_TRUE(log->Append(std::string(2 * kMiB, 'r'), rocksdb::IOOptions(), nullptr).ok());
  ASSERT_TRUE(log->Close(rocksdb::IOOptions(), nullptr).ok());
  // Pool file 2 may have been made before the log was closed: full size.
  ASSERT_TRUE(Eventually([&] { return Exists(dir.path() + "/feedd-wal-pool-2"); }));
  EXPECT_EQ(fs::file_size(dir.path() + "/feedd-wal-pool-2"), 4 * kMiB);
  auto next = Open(wal_fs, dir.path() + "/000002.log");
  ASSERT_TRUE(next);
  // The one after: 2 MiB and a quarter, in whole MiB.
  const std::string third = dir.path() + "/feedd-wal-pool-3";
  ASSERT_TRUE(Eventually([&] { return Exists(third); }));
  EXPECT_EQ(fs::file_size(third), 3 * kMiB);
  EXPECT_EQ(wal_fs.logs_pre_zeroed(), 2u);
}

// Fails every new file whose name ends in ".tmp": no pool file can be made.
class NoTmpFiles : public rocksdb::FileSystemWrapper {
 public:
  using rocksdb::FileSystemWrapper::FileSystemWrapper;
  const char* Name() const override { return "NoTmpFiles"; }
  rocksdb::IOStatus NewWritableFile(const std::string& f, const rocksdb::FileOptions& o,
                                    std::unique_ptr<rocksdb::FSWritableFile>* r,
                                    rocksdb::IODebugContext* d) override {
    if (f.size() > 4 && f.substr(f.size() - 4) == ".tmp") return rocksdb::IOStatus::IOError("full");
    return target()->NewWritableFile(f, o, r, d);
  }
};

TEST(PreZeroedWalFileSystemTest, ALogStartsEmptyWhenNoPoolFileCouldBeMade) {
  TempDir dir;
  PreZeroedWalFileSystem wal_fs(std::make_shared<NoTmpFiles>(rocksdb::FileSystem::Default()),
                                dir.path(), kFileBytes, 1);
  ASSERT_TRUE(Eventually([&] { return wal_fs.fill_failures() >= 1; }));
  const std::string log = dir.path() + "/000003.log";
  auto file = Open(wal_fs, log);
  ASSERT_TRUE(file);
  ASSERT_TRUE(file->Append("record", rocksdb::IOOptions(), nullptr).ok());
  ASSERT_TRUE(file->Close(rocksdb::IOOptions(), nullptr).ok());
  EXPECT_EQ(ReadAll(log), "record");
  EXPECT_EQ(wal_fs.logs_empty(), 1u);
  EXPECT_EQ(wal_fs.logs_pre_zeroed(), 0u);
}

rocksdb::Status OpenDb(const std::string& path, rocksdb::Env* env,
                       std::unique_ptr<rocksdb::DB>* db) {
  rocksdb::Options options;
  options.create_if_missing = true;
  options.env = env;
  rocksdb::DB* raw = nullptr;
  rocksdb::Status s = rocksdb::DB::Open(options, path, &raw);
  db->reset(raw);
  return s;
}

// The process dies after synced writes, with the log's zero tail in place;
// RocksDB, opened again, has every one of them.
TEST(PreZeroedWalFileSystemTest, RocksDbRecoversEverySyncedWriteFromALogWithAZeroTail) {
  TempDir dir;
  const std::string db_path = dir.path() + "/db";
  constexpr int kWrites = 500;
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto wal_fs = std::make_shared<PreZeroedWalFileSystem>(rocksdb::FileSystem::Default(), db_path,
                                                           1024 * 1024, 1);
    // The pool file first, so that the log RocksDB opens is pre-zeroed.
    if (!Eventually([&] { return Exists(db_path + "/feedd-wal-pool-1"); })) _exit(2);
    std::unique_ptr<rocksdb::Env> env = rocksdb::NewCompositeEnv(wal_fs);
    std::unique_ptr<rocksdb::DB> db;
    if (!OpenDb(db_path, env.get(), &db).ok()) _exit(3);
    if (wal_fs->logs_pre_zeroed() != 1) _exit(4);
    rocksdb::WriteOptions synced;
    synced.sync = true;
    for (int i = 0; i < kWrites; ++i) {
      if (!db->Put(synced, "key" + std::to_string(i), std::string(100, 'v')).ok()) _exit(5);
    }
    _exit(0);  // no Close(): as if killed
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 0);

  // The log the child wrote still ends in zeros.
  bool zero_tail = false;
  for (const auto& entry : fs::directory_iterator(db_path)) {
    if (entry.path().extension() == ".log" && fs::file_size(entry.path()) == 1024 * 1024) {
      const std::string content = ReadAll(entry.path().string());
      zero_tail = content.back() == '\0' && content.front() != '\0';
    }
  }
  EXPECT_TRUE(zero_tail);

  std::unique_ptr<rocksdb::DB> db;
  rocksdb::Status s = OpenDb(db_path, rocksdb::Env::Default(), &db);
  ASSERT_TRUE(s.ok()) << s.ToString();
  for (int i = 0; i < kWrites; ++i) {
    std::string value;
    ASSERT_TRUE(db->Get(rocksdb::ReadOptions(), "key" + std::to_string(i), &value).ok()) << i;
    EXPECT_EQ(value, std::string(100, 'v'));
  }
}

}  // namespace
}  // namespace feedd
