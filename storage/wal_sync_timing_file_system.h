// WalSyncTimingFileSystem: a rocksdb::FileSystem decorator that reports how
// long each sync of a write-ahead log file (a `*.log` file: fdatasync, or
// fsync with use_fsync) took, for the feedd_storage_wal_sync_duration_seconds
// histogram (docs/metrics.md).
//
// Why: with storage.sync a write is acknowledged after its group's WAL
// sync, and on a shared or busy disk that sync is what the write path's
// tail is made of (docs/benchmarks.md: every group commit over 20 ms in a
// write-mix run spent its time in the WAL). The commit histogram
// (feedd_storage_commit_duration_seconds) cannot tell the disk from the
// rest of a write; this one is the disk alone.
//
// Thread-safety: as the wrapped FileSystem; `on_sync` may be called from
// any thread that syncs a WAL (the commit thread, RocksDB's flush threads)
// and must be thread-safe.
// Ownership: shares the wrapped FileSystem, and `on_sync` with the files it
// opens.
// Internal to storage/.
#pragma once

#include <rocksdb/file_system.h>

#include <functional>
#include <memory>
#include <string>

namespace feedd {

class WalSyncTimingFileSystem : public rocksdb::FileSystemWrapper {
 public:
  using SyncObserver = std::function<void(double seconds)>;

  WalSyncTimingFileSystem(const std::shared_ptr<rocksdb::FileSystem>& target, SyncObserver on_sync)
      : rocksdb::FileSystemWrapper(target),
        on_sync_(std::make_shared<const SyncObserver>(std::move(on_sync))) {}

  static const char* kClassName() { return "FeeddWalSyncTimingFileSystem"; }
  const char* Name() const override { return kClassName(); }

  // The ways RocksDB opens a WAL for writing; other files pass through.
  rocksdb::IOStatus NewWritableFile(const std::string& f, const rocksdb::FileOptions& o,
                                    std::unique_ptr<rocksdb::FSWritableFile>* r,
                                    rocksdb::IODebugContext* d) override;
  rocksdb::IOStatus ReopenWritableFile(const std::string& f, const rocksdb::FileOptions& o,
                                       std::unique_ptr<rocksdb::FSWritableFile>* r,
                                       rocksdb::IODebugContext* d) override;
  rocksdb::IOStatus ReuseWritableFile(const std::string& f, const std::string& old,
                                      const rocksdb::FileOptions& o,
                                      std::unique_ptr<rocksdb::FSWritableFile>* r,
                                      rocksdb::IODebugContext* d) override;

 private:
  // Returns `opened`, the status of opening `f` into *r, after wrapping *r
  // when it opened and `f` names a WAL.
  rocksdb::IOStatus TimeIfWal(const std::string& f, rocksdb::IOStatus opened,
                              std::unique_ptr<rocksdb::FSWritableFile>* r) const;

  const std::shared_ptr<const SyncObserver> on_sync_;
};

}  // namespace feedd
