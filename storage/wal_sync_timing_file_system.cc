#include "storage/wal_sync_timing_file_system.h"

#include <chrono>
#include <string_view>

namespace feedd {
namespace {

class SyncTimedFile : public rocksdb::FSWritableFileOwnerWrapper {
 public:
  SyncTimedFile(std::unique_ptr<rocksdb::FSWritableFile> file,
                std::shared_ptr<const WalSyncTimingFileSystem::SyncObserver> on_sync)
      : rocksdb::FSWritableFileOwnerWrapper(std::move(file)), on_sync_(std::move(on_sync)) {}

  rocksdb::IOStatus Sync(const rocksdb::IOOptions& o, rocksdb::IODebugContext* d) override {
    const auto started = std::chrono::steady_clock::now();
    rocksdb::IOStatus s = target()->Sync(o, d);
    Report(started);
    return s;
  }
  rocksdb::IOStatus Fsync(const rocksdb::IOOptions& o, rocksdb::IODebugContext* d) override {
    const auto started = std::chrono::steady_clock::now();
    rocksdb::IOStatus s = target()->Fsync(o, d);
    Report(started);
    return s;
  }

 private:
  void Report(std::chrono::steady_clock::time_point started) const {
    (*on_sync_)(std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
  }

  const std::shared_ptr<const WalSyncTimingFileSystem::SyncObserver> on_sync_;
};

bool IsWal(std::string_view path) {
  constexpr std::string_view kSuffix = ".log";
  return path.size() > kSuffix.size() && path.substr(path.size() - kSuffix.size()) == kSuffix;
}

}  // namespace

void WalSyncTimingFileSystem::TimeIfWal(const std::string& f,
                                        std::unique_ptr<rocksdb::FSWritableFile>* r) const {
  if (IsWal(f)) *r = std::make_unique<SyncTimedFile>(std::move(*r), on_sync_);
}

rocksdb::IOStatus WalSyncTimingFileSystem::NewWritableFile(
    const std::string& f, const rocksdb::FileOptions& o,
    std::unique_ptr<rocksdb::FSWritableFile>* r, rocksdb::IODebugContext* d) {
  rocksdb::IOStatus s = target()->NewWritableFile(f, o, r, d);
  if (s.ok()) TimeIfWal(f, r);
  return s;
}

rocksdb::IOStatus WalSyncTimingFileSystem::ReopenWritableFile(
    const std::string& f, const rocksdb::FileOptions& o,
    std::unique_ptr<rocksdb::FSWritableFile>* r, rocksdb::IODebugContext* d) {
  rocksdb::IOStatus s = target()->ReopenWritableFile(f, o, r, d);
  if (s.ok()) TimeIfWal(f, r);
  return s;
}

rocksdb::IOStatus WalSyncTimingFileSystem::ReuseWritableFile(
    const std::string& f, const std::string& old, const rocksdb::FileOptions& o,
    std::unique_ptr<rocksdb::FSWritableFile>* r, rocksdb::IODebugContext* d) {
  rocksdb::IOStatus s = target()->ReuseWritableFile(f, old, o, r, d);
  if (s.ok()) TimeIfWal(f, r);
  return s;
}

}  // namespace feedd
