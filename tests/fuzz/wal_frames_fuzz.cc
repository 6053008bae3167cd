// Fuzzes the framed write-ahead log (storage/recycled_wal_file_system.h):
// after a crash a log is read back from whatever bytes the disk holds, an
// older log's frames behind its own included, and its reader must never
// misread them.
//
// Input: a first byte choosing the check, then the bytes it works on.
// - even: the bytes are a log file as found on disk; reading it back fails
//   only as a corruption, and returns at most as many bytes as the file has.
// - odd: the bytes, split at NULs, are the appends of an older log; a new
//   log of all but the last of them is written over it (not closed, as
//   after a crash) and reads back exactly its own appends.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "storage/recycled_wal_file_system.h"
#include "tests/fuzz/fuzz_checks.h"

namespace feedd {
namespace {

// An empty scratch directory, the same for every input.
const std::string& EmptyDir() {
  static const std::string dir = [] {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "feedd-wal-fuzz-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) std::abort();
    return pattern;
  }();
  for (const auto& entry : std::filesystem::directory_iterator(dir))
    std::filesystem::remove(entry.path());
  return dir;
}

std::string ReadBack(rocksdb::FileSystem* fs, const std::string& path, rocksdb::IOStatus* status) {
  std::unique_ptr<rocksdb::FSSequentialFile> file;
  *status = fs->NewSequentialFile(path, rocksdb::FileOptions(), &file, nullptr);
  std::string out;
  std::string scratch(777, '\0');
  while (status->ok()) {
    rocksdb::Slice chunk;
    *status = file->Read(scratch.size(), rocksdb::IOOptions(), &chunk, scratch.data(), nullptr);
    if (!status->ok() || chunk.empty()) break;
    out.append(chunk.data(), chunk.size());
  }
  return out;
}

// Appends each of `appends` to the new log `path`, and leaves it unclosed.
void WriteLog(rocksdb::FileSystem* fs, const std::string& path,
              const std::vector<std::string_view>& appends) {
  std::unique_ptr<rocksdb::FSWritableFile> file;
  FUZZ_CHECK(fs->NewWritableFile(path, rocksdb::FileOptions(), &file, nullptr).ok(), path);
  for (std::string_view data : appends) {
    const rocksdb::Slice slice(data.data(), data.size());
    FUZZ_CHECK(file->Append(slice, rocksdb::IOOptions(), nullptr).ok(), "append");
  }
}

void CheckFoundOnDisk(std::string_view bytes) {
  const std::string& dir = EmptyDir();
  const std::string path = dir + "/000042.log";
  std::ofstream(path, std::ios::binary)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  RecycledWalFileSystem fs(rocksdb::FileSystem::Default(), dir, 1);
  rocksdb::IOStatus status;
  const std::string read = ReadBack(&fs, path, &status);
  FUZZ_CHECK(status.ok() || status.IsCorruption(), status.ToString());
  FUZZ_CHECK(read.size() <= bytes.size(), "read back more than the file holds");
}

void CheckWrittenOverAnOlderLog(std::string_view bytes) {
  std::vector<std::string_view> appends;
  for (size_t start = 0;;) {
    const size_t nul = bytes.find('\0', start);
    appends.push_back(bytes.substr(start, nul == std::string_view::npos ? nul : nul - start));
    if (nul == std::string_view::npos) break;
    start = nul + 1;
  }
  const std::string& dir = EmptyDir();
  RecycledWalFileSystem fs(rocksdb::FileSystem::Default(), dir, 1);
  const std::string old_log = dir + "/000041.log";
  WriteLog(&fs, old_log, appends);
  FUZZ_CHECK(fs.DeleteFile(old_log, rocksdb::IOOptions(), nullptr).ok(), "kept");
  appends.pop_back();
  const std::string path = dir + "/000042.log";
  WriteLog(&fs, path, appends);
  FUZZ_CHECK(fs.logs_recycled() == 1, "the new log is not written over the old one");
  std::string expected;
  for (std::string_view data : appends) expected.append(data);
  rocksdb::IOStatus status;
  const std::string read = ReadBack(&fs, path, &status);
  FUZZ_CHECK(status.ok(), status.ToString());
  FUZZ_CHECK(read == expected, "a log read back other bytes than its appends");
}

}  // namespace
}  // namespace feedd

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (data[0] % 2 == 0) {
    feedd::CheckFoundOnDisk(bytes);
  } else {
    feedd::CheckWrittenOverAnOlderLog(bytes);
  }
  return 0;
}
