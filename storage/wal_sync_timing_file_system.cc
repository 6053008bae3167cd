#include "storage/wal_sync_timing_file_system.h"

#include <chrono>

#include "storage/wal_file_name.h"

namespace feedd {
namespace {

class SyncTimedFile : public rocksdb::FSWritableFileOwnerWrapper {
 public:
  SyncTimedFile(std::unique_ptr<rocksdb::FSWritableFile> file,
                std::shared_ptr<const WalSyncTimingFileSystem::SyncObserver> on_sync)
      : rocksdb::FSWritableFileOwnerWrapper(std::move(file)), on_sync_(std::move(on_sync)) {}

  rocksdb::IOStatus Sync(const rocksdb::IOOptions& o, rocksdb::IODebugContext* d) override {
    return Timed([&] { return target()->Sync(o, d); });
  }
  rocksdb::IOStatus Fsync(const rocksdb::IOOptions& o, rocksdb::IODebugContext* d) override {
    return Timed([&] { return target()->Fsync(o, d); });
  }

 private:
  template <typename SyncFn>
  rocksdb::IOStatus Timed(SyncFn sync) const {
    const auto started = std::chrono::steady_clock::now();
    rocksdb::IOStatus s = sync();
    (*on_sync_)(std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
    return s;
  }

  const std::shared_ptr<const WalSyncTimingFileSystem::SyncObserver> on_sync_;
};

}  // namespace

rocksdb::IOStatus WalSyncTimingFileSystem::TimeIfWal(
    const std::string& f, rocksdb::IOStatus opened,
    std::unique_ptr<rocksdb::FSWritableFile>* r) const {
  if (opened.ok() && IsWalFile(f)) *r = std::make_unique<SyncTimedFile>(std::move(*r), on_sync_);
  return opened;
}

rocksdb::IOStatus WalSyncTimingFileSystem::NewWritableFile(
    const std::string& f, const rocksdb::FileOptions& o,
    std::unique_ptr<rocksdb::FSWritableFile>* r, rocksdb::IODebugContext* d) {
  return TimeIfWal(f, target()->NewWritableFile(f, o, r, d), r);
}

rocksdb::IOStatus WalSyncTimingFileSystem::ReopenWritableFile(
    const std::string& f, const rocksdb::FileOptions& o,
    std::unique_ptr<rocksdb::FSWritableFile>* r, rocksdb::IODebugContext* d) {
  return TimeIfWal(f, target()->ReopenWritableFile(f, o, r, d), r);
}

rocksdb::IOStatus WalSyncTimingFileSystem::ReuseWritableFile(
    const std::string& f, const std::string& old, const rocksdb::FileOptions& o,
    std::unique_ptr<rocksdb::FSWritableFile>* r, rocksdb::IODebugContext* d) {
  return TimeIfWal(f, target()->ReuseWritableFile(f, old, o, r, d), r);
}

}  // namespace feedd
