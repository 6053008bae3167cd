// RecycledWalFileSystem (storage/recycled_wal_file_system.h) on real files:
// a log reads back what was appended to it, a new log is written over a
// kept one without growing it and reads back only its own frames, a torn
// frame reads as a corruption, logs without frames pass through, and the
// kept files are bounded and found again.
#include "storage/recycled_wal_file_system.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "tests/unit/test_util.h"

namespace feedd {
namespace {

using testutil::TempDir;

class RecycledWalFileSystemTest : public ::testing::Test {
 protected:
  std::unique_ptr<RecycledWalFileSystem> Fs(size_t max_files) {
    return std::make_unique<RecycledWalFileSystem>(rocksdb::FileSystem::Default(), dir_.path(),
                                                   max_files);
  }

  std::string Path(const std::string& name) const { return dir_.path() + "/" + name; }

  // Appends each of `appends` to a new log `name` and syncs; closes the file
  // unless `close` is false (as after a crash: nothing cuts the file to what
  // was written, which only a Close() after preallocating does).
  void Write(rocksdb::FileSystem* fs, const std::string& name,
             const std::vector<std::string>& appends, bool close = true) {
    std::unique_ptr<rocksdb::FSWritableFile> file;
    ASSERT_TRUE(fs->NewWritableFile(Path(name), rocksdb::FileOptions(), &file, nullptr).ok());
    uint64_t size = 0;
    for (const std::string& data : appends) {
      ASSERT_TRUE(file->Append(data, rocksdb::IOOptions(), nullptr).ok());
      size += data.size();
    }
    ASSERT_TRUE(file->Sync(rocksdb::IOOptions(), nullptr).ok());
    EXPECT_EQ(file->GetFileSize(rocksdb::IOOptions(), nullptr), size);
    if (close) {
      ASSERT_TRUE(file->Close(rocksdb::IOOptions(), nullptr).ok());
    }
  }

  // What a sequential reader of `name` returns, and the status it ended with.
  rocksdb::IOStatus Read(rocksdb::FileSystem* fs, const std::string& name, std::string* out) {
    out->clear();
    std::unique_ptr<rocksdb::FSSequentialFile> file;
    rocksdb::IOStatus s = fs->NewSequentialFile(Path(name), rocksdb::FileOptions(), &file, nullptr);
    if (!s.ok()) return s;
    std::string scratch(1000, '\0');  // smaller than a frame: reads cross frames
    for (;;) {
      rocksdb::Slice chunk;
      s = file->Read(scratch.size(), rocksdb::IOOptions(), &chunk, scratch.data(), nullptr);
      if (!s.ok() || chunk.empty()) return s;
      out->append(chunk.data(), chunk.size());
    }
  }

  std::string Raw(const std::string& name) const {
    std::ifstream in(Path(name), std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  }

  TempDir dir_;
};

TEST_F(RecycledWalFileSystemTest, ALogReadsBackWhatWasAppendedToIt) {
  auto fs = Fs(2);
  const std::vector<std::string> appends = {"first record", std::string(3000, 'a'),
                                            std::string(200 * 1024, 'b'), "last"};
  ASSERT_NO_FATAL_FAILURE(Write(fs.get(), "000007.log", appends));
  std::string read;
  ASSERT_TRUE(Read(fs.get(), "000007.log", &read).ok());
  EXPECT_EQ(read, appends[0] + appends[1] + appends[2] + appends[3]);
  EXPECT_NE(Raw("000007.log"), read) << "written without frames";
  EXPECT_EQ(fs->logs_new(), 1u);
  EXPECT_EQ(fs->logs_recycled(), 0u);
  std::unique_ptr<rocksdb::FSRandomAccessFile> random;
  EXPECT_TRUE(fs->NewRandomAccessFile(Path("000007.log"), rocksdb::FileOptions(), &random, nullptr)
                  .IsNotSupported());
}

TEST_F(RecycledWalFileSystemTest, ANewLogIsWrittenOverAKeptOneAndReadsOnlyItsOwnFrames) {
  auto fs = Fs(2);
  ASSERT_NO_FATAL_FAILURE(
      Write(fs.get(), "000010.log", {std::string(5000, 'o'), std::string(5000, 'p')}));
  const uintmax_t old_size = std::filesystem::file_size(Path("000010.log"));
  ASSERT_TRUE(fs->DeleteFile(Path("000010.log"), rocksdb::IOOptions(), nullptr).ok());
  EXPECT_FALSE(std::filesystem::exists(Path("000010.log")));
  EXPECT_TRUE(std::filesystem::exists(Path("feedd-recycled-10")));
  EXPECT_EQ(fs->files_kept(), 1u);

  // Shorter than the old log, and not closed: the old frames stay behind it.
  ASSERT_NO_FATAL_FAILURE(Write(fs.get(), "000011.log", {"new one", "new two"}, /*close=*/false));
  EXPECT_EQ(fs->logs_recycled(), 1u);
  EXPECT_EQ(fs->files_kept(), 0u);
  EXPECT_FALSE(std::filesystem::exists(Path("feedd-recycled-10")));
  EXPECT_EQ(std::filesystem::file_size(Path("000011.log")), old_size) << "the file grew";
  std::string read;
  ASSERT_TRUE(Read(fs.get(), "000011.log", &read).ok());
  EXPECT_EQ(read, "new onenew two");
}

TEST_F(RecycledWalFileSystemTest, AKeptLogWhoseFirstFrameWasNeverWrittenReadsEmpty) {
  auto fs = Fs(1);
  ASSERT_NO_FATAL_FAILURE(Write(fs.get(), "000020.log", {"old record"}));
  ASSERT_TRUE(fs->DeleteFile(Path("000020.log"), rocksdb::IOOptions(), nullptr).ok());
  std::unique_ptr<rocksdb::FSWritableFile> file;
  ASSERT_TRUE(fs->NewWritableFile(Path("000021.log"), rocksdb::FileOptions(), &file, nullptr).ok());
  file.reset();  // a crash before the first append
  std::string read;
  ASSERT_TRUE(Read(fs.get(), "000021.log", &read).ok());
  EXPECT_EQ(read, "");
}

TEST_F(RecycledWalFileSystemTest, AFrameTornByACrashReadsAsACorruptionAfterTheFramesBeforeIt) {
  auto fs = Fs(1);
  ASSERT_NO_FATAL_FAILURE(
      Write(fs.get(), "000030.log", {"whole", std::string(2000, 'x'), "after"}));
  std::string raw = Raw("000030.log");
  const size_t in_second_payload = raw.find('x') + 1000;
  raw[in_second_payload] = 'y';
  std::ofstream(Path("000030.log"), std::ios::binary | std::ios::trunc) << raw;
  std::string read;
  rocksdb::IOStatus s = Read(fs.get(), "000030.log", &read);
  EXPECT_TRUE(s.IsCorruption()) << s.ToString();
  EXPECT_EQ(read, "whole");
}

TEST_F(RecycledWalFileSystemTest, ALogWithoutFramesPassesThroughAndIsNotKept) {
  {
    auto plain = Fs(0);  // max_files 0: logs as RocksDB writes them
    ASSERT_NO_FATAL_FAILURE(Write(plain.get(), "000040.log", {"plain ", "bytes"}));
    EXPECT_EQ(plain->logs_new(), 0u);
  }
  EXPECT_EQ(Raw("000040.log"), "plain bytes");
  auto fs = Fs(2);
  std::string read;
  ASSERT_TRUE(Read(fs.get(), "000040.log", &read).ok());
  EXPECT_EQ(read, "plain bytes");
  ASSERT_TRUE(fs->DeleteFile(Path("000040.log"), rocksdb::IOOptions(), nullptr).ok());
  EXPECT_EQ(fs->files_kept(), 0u);
  EXPECT_TRUE(std::filesystem::is_empty(dir_.path()));
}

TEST_F(RecycledWalFileSystemTest, WritePlainLogsLeavesWhatRocksDbWroteWithoutFrames) {
  auto fs = Fs(2);
  const std::string big(300 * 1024, 'z');
  ASSERT_NO_FATAL_FAILURE(Write(fs.get(), "000050.log", {"one", big, "three"}));
  ASSERT_NO_FATAL_FAILURE(Write(fs.get(), "000051.log", {}));
  ASSERT_TRUE(fs->WritePlainLogs().ok());
  EXPECT_EQ(Raw("000050.log"), "one" + big + "three");
  EXPECT_EQ(Raw("000051.log"), "");
  std::string read;
  ASSERT_TRUE(Read(fs.get(), "000050.log", &read).ok());
  EXPECT_EQ(read, "one" + big + "three");
}

TEST_F(RecycledWalFileSystemTest, KeptFilesAreBoundedAndFoundAgainByTheNextRun) {
  {
    auto fs = Fs(2);
    const std::vector<std::string> logs = {"000060.log", "000061.log", "000062.log"};
    for (const std::string& name : logs) ASSERT_NO_FATAL_FAILURE(Write(fs.get(), name, {"record"}));
    for (const std::string& name : logs) {
      ASSERT_TRUE(fs->DeleteFile(Path(name), rocksdb::IOOptions(), nullptr).ok());
    }
    EXPECT_EQ(fs->files_kept(), 2u);
    EXPECT_FALSE(std::filesystem::exists(Path("feedd-recycled-62")));
  }
  // A run keeping fewer finds the oldest again and deletes the rest, with
  // any rewrite a crash interrupted.
  std::ofstream(Path("000063.log.plain")) << "half";
  auto fs = Fs(1);
  EXPECT_EQ(fs->files_kept(), 1u);
  EXPECT_TRUE(std::filesystem::exists(Path("feedd-recycled-60")));
  EXPECT_FALSE(std::filesystem::exists(Path("feedd-recycled-61")));
  EXPECT_FALSE(std::filesystem::exists(Path("000063.log.plain")));
  ASSERT_NO_FATAL_FAILURE(Write(fs.get(), "000070.log", {"reused"}));
  EXPECT_EQ(fs->logs_recycled(), 1u);
  EXPECT_FALSE(std::filesystem::exists(Path("feedd-recycled-60")));
}

TEST_F(RecycledWalFileSystemTest, AKeptFileIsCutToTheLargestKeptSize) {
  auto fs = Fs(1);
  std::unique_ptr<rocksdb::FSWritableFile> file;
  ASSERT_TRUE(fs->NewWritableFile(Path("000080.log"), rocksdb::FileOptions(), &file, nullptr).ok());
  const std::string chunk(8u << 20, 'c');
  for (uint64_t written = 0; written <= RecycledWalFileSystem::kMaxRecycledBytes;
       written += chunk.size()) {
    ASSERT_TRUE(file->Append(chunk, rocksdb::IOOptions(), nullptr).ok());
  }
  ASSERT_TRUE(file->Close(rocksdb::IOOptions(), nullptr).ok());
  ASSERT_GT(std::filesystem::file_size(Path("000080.log")),
            RecycledWalFileSystem::kMaxRecycledBytes);
  ASSERT_TRUE(fs->DeleteFile(Path("000080.log"), rocksdb::IOOptions(), nullptr).ok());
  EXPECT_EQ(std::filesystem::file_size(Path("feedd-recycled-80")),
            RecycledWalFileSystem::kMaxRecycledBytes);
}

}  // namespace
}  // namespace feedd
