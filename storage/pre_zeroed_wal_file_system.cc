#include "storage/pre_zeroed_wal_file_system.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <filesystem>
#include <string_view>
#include <system_error>

#include "util/logging.h"

namespace feedd {
namespace {

constexpr std::string_view kPoolPrefix = "feedd-wal-pool-";
constexpr std::string_view kTmpSuffix = ".tmp";
// Zeros are written and synced this much at a time, so that the device's
// queue never holds more of them than this before a commit's sync.
constexpr uint64_t kChunkBytes = 1u << 20;
// After a failure or while the disk is nearly full, the filler waits this long.
constexpr auto kRetryDelay = std::chrono::seconds(10);

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

bool IsWal(std::string_view path) { return path.size() > 4 && EndsWith(path, ".log"); }

}  // namespace

class PreZeroedWalFileSystem::LogSizes {
 public:
  void Add(uint64_t bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    recent_[next_++ % recent_.size()] = bytes;
  }
  // The largest of the last few; 0 before any.
  uint64_t Largest() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return *std::max_element(recent_.begin(), recent_.end());
  }

 private:
  mutable std::mutex mutex_;
  std::array<uint64_t, 4> recent_{};  // guarded by mutex_
  size_t next_ = 0;                   // guarded by mutex_
};

namespace {

// A log that reports what it grew to when RocksDB closes it.
class SizeReportingLog : public rocksdb::FSWritableFileOwnerWrapper {
 public:
  using LogSizes = PreZeroedWalFileSystem::LogSizes;
  SizeReportingLog(std::unique_ptr<rocksdb::FSWritableFile> file, std::shared_ptr<LogSizes> sizes)
      : rocksdb::FSWritableFileOwnerWrapper(std::move(file)), sizes_(std::move(sizes)) {}

  rocksdb::IOStatus Close(const rocksdb::IOOptions& o, rocksdb::IODebugContext* d) override {
    sizes_->Add(target()->GetFileSize(o, d));
    return target()->Close(o, d);
  }

 private:
  const std::shared_ptr<LogSizes> sizes_;
};

}  // namespace

PreZeroedWalFileSystem::PreZeroedWalFileSystem(const std::shared_ptr<rocksdb::FileSystem>& target,
                                               std::string dir, uint64_t file_bytes,
                                               size_t pool_files)
    : rocksdb::FileSystemWrapper(target),
      dir_(std::move(dir)),
      file_bytes_(file_bytes),
      pool_files_(pool_files),
      log_sizes_(std::make_shared<LogSizes>()) {
  // RocksDB creates the directory when it opens; the filler may come first.
  (void)target->CreateDirIfMissing(dir_, rocksdb::IOOptions(), nullptr);
  // Pool files of an earlier run are used; a .tmp one (its zeros were never
  // all written: a pool file gets its name once they are) or an empty one
  // is removed.
  std::vector<std::string> children;
  if (target->GetChildren(dir_, rocksdb::IOOptions(), &children, nullptr).ok()) {
    std::sort(children.begin(), children.end());
    for (const std::string& name : children) {
      if (name.rfind(kPoolPrefix, 0) != 0) continue;
      const std::string path = dir_ + "/" + name;
      uint64_t size = 0;
      const bool complete = !EndsWith(name, kTmpSuffix) &&
                            target->GetFileSize(path, rocksdb::IOOptions(), &size, nullptr).ok() &&
                            size > 0;
      if (complete) {
        ready_.push_back(path);
        const std::string number = name.substr(kPoolPrefix.size());
        next_number_ =
            std::max<uint64_t>(next_number_, std::strtoull(number.c_str(), nullptr, 10) + 1);
      } else {
        (void)target->DeleteFile(path, rocksdb::IOOptions(), nullptr);
      }
    }
  }
  // The log RocksDB opens first is pre-zeroed too: one file is made now,
  // unless an earlier run left one.
  if (ready_.empty()) {
    std::string first = FillOne(next_number_++);
    if (!first.empty()) ready_.push_back(std::move(first));
  }
  filler_ = std::thread([this] { FillLoop(); });
}

PreZeroedWalFileSystem::~PreZeroedWalFileSystem() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (filler_.joinable()) filler_.join();
}

std::string PreZeroedWalFileSystem::PoolName(uint64_t n) const {
  return dir_ + "/" + std::string(kPoolPrefix) + std::to_string(n);
}

rocksdb::IOStatus PreZeroedWalFileSystem::NewWritableFile(
    const std::string& f, const rocksdb::FileOptions& o,
    std::unique_ptr<rocksdb::FSWritableFile>* r, rocksdb::IODebugContext* d) {
  if (!IsWal(f)) return target()->NewWritableFile(f, o, r, d);
  std::string pool;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!ready_.empty()) {
      pool = std::move(ready_.front());
      ready_.erase(ready_.begin());
    }
  }
  wake_.notify_one();
  if (!pool.empty()) {
    rocksdb::IOStatus s = target()->ReuseWritableFile(f, pool, o, r, d);
    if (s.ok()) {
      ++logs_pre_zeroed_;
      *r = std::make_unique<SizeReportingLog>(std::move(*r), log_sizes_);
      return s;
    }
    FEEDD_LOG(kWarning, "storage") << "cannot use the pre-zeroed " << pool << " for " << f << ": "
                                   << s.ToString() << "; the log starts empty";
    (void)target()->DeleteFile(pool, rocksdb::IOOptions(), nullptr);
  }
  ++logs_empty_;
  rocksdb::IOStatus s = target()->NewWritableFile(f, o, r, d);
  if (s.ok()) *r = std::make_unique<SizeReportingLog>(std::move(*r), log_sizes_);
  return s;
}

uint64_t PreZeroedWalFileSystem::NextFileBytes() const {
  const uint64_t largest = log_sizes_->Largest();
  if (largest == 0) return file_bytes_;
  const uint64_t wanted = (largest + largest / 4 + kChunkBytes - 1) / kChunkBytes * kChunkBytes;
  return std::clamp(wanted, std::min(kChunkBytes, file_bytes_), file_bytes_);
}

void PreZeroedWalFileSystem::FillLoop() {
  std::unique_lock<std::mutex> lock(mutex_);
  auto retry_later = [&] { wake_.wait_for(lock, kRetryDelay, [&] { return stopping_; }); };
  while (!stopping_) {
    if (ready_.size() >= pool_files_) {
      wake_.wait(lock, [&] { return stopping_ || ready_.size() < pool_files_; });
      continue;
    }
    std::error_code ec;
    const std::filesystem::space_info space = std::filesystem::space(dir_, ec);
    if (ec || space.available < 4 * file_bytes_) {
      retry_later();
      continue;
    }
    const uint64_t number = next_number_++;
    lock.unlock();
    std::string name = FillOne(number);
    lock.lock();
    if (name.empty()) {
      retry_later();
      continue;
    }
    ready_.push_back(std::move(name));
  }
}

std::string PreZeroedWalFileSystem::FillOne(uint64_t number) {
  std::string ready = PoolName(number);
  const std::string tmp = ready + std::string(kTmpSuffix);
  const rocksdb::IOOptions io;
  std::unique_ptr<rocksdb::FSWritableFile> file;
  rocksdb::IOStatus s = target()->NewWritableFile(tmp, rocksdb::FileOptions(), &file, nullptr);
  const std::string zeros(kChunkBytes, '\0');
  const uint64_t bytes = NextFileBytes();
  for (uint64_t written = 0; s.ok() && written < bytes;) {
    const uint64_t n = std::min<uint64_t>(kChunkBytes, bytes - written);
    s = file->Append(rocksdb::Slice(zeros.data(), n), io, nullptr);
    if (s.ok()) s = file->Sync(io, nullptr);
    written += n;
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_) s = rocksdb::IOStatus::Aborted("stopping");
  }
  if (s.ok()) s = file->Fsync(io, nullptr);  // the size too
  if (file) {
    rocksdb::IOStatus closed = file->Close(io, nullptr);
    if (s.ok()) s = closed;
  }
  if (s.ok()) s = target()->RenameFile(tmp, ready, io, nullptr);
  if (s.ok()) return ready;
  (void)target()->DeleteFile(tmp, io, nullptr);
  if (!s.IsAborted()) {
    ++fill_failures_;
    FEEDD_LOG_EVERY_N_SEC(kWarning, "storage", 60)
        << "cannot prepare a pre-zeroed write-ahead log file (" << s.ToString()
        << "); new logs start empty until it can";
  }
  return "";
}

}  // namespace feedd
