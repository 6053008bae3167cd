// FaultInjectionFileSystem: a rocksdb::FileSystem for tests that injects
// the faults a disk and an OS can cause under the store, in the spirit of
// leveldb's fault-injection Env (Debian's librocksdb-dev ships no
// FaultInjectionTestFS).
//
// - FailWalAppends(n) / FailWalSyncs(n): the next n appends to / syncs of a
//   write-ahead log (a file named *.log) fail with an I/O error.
// - It records, for every file opened for writing, how many bytes were
//   appended and how many of them a Sync()/Fsync() has made durable;
//   UnsyncedWalBytes() is what the WALs hold that no sync covered yet.
// - HoldWalSyncs() makes every later sync of a write-ahead log wait, before
//   it syncs (or fails), until ReleaseWalSyncs(); WaitForHeldWalSync()
//   returns once one waits: a write stopped in its fsync.
// - PowerCut() makes every later write, sync, open for writing, rename and
//   delete fail, as if the machine had stopped: nothing more reaches the
//   disk. DropUnsyncedData() then truncates every file to what was synced
//   (what an OS crash keeps), and Restore() makes the file system work
//   again for a reopen.
//
// - A file written over (ReuseWritableFile: a write-ahead log over an old
//   one, storage/recycled_wal_file_system.h) keeps, after
//   DropUnsyncedData(), what was synced of the new writes and the old bytes
//   beyond them: what a crash leaves of an overwrite.
//
// Directory entries are not modelled: a file created and never synced
// keeps its (empty) entry.
//
// Thread-safety: all methods are thread-safe.
// Ownership: wraps the default (POSIX) file system; tests share it with
// the store through StoreOptions::file_system.
#pragma once

#include <rocksdb/file_system.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <system_error>

#include "storage/wal_file_name.h"

namespace feedd::testutil {

class FaultInjectionFileSystem : public rocksdb::FileSystemWrapper {
 public:
  FaultInjectionFileSystem() : rocksdb::FileSystemWrapper(rocksdb::FileSystem::Default()) {}
  static const char* kClassName() { return "FeeddTestFaultInjectionFileSystem"; }
  const char* Name() const override { return kClassName(); }

  void FailWalAppends(int n) { wal_append_failures_ = n; }
  void FailWalSyncs(int n) { wal_sync_failures_ = n; }
  int wal_appends_failed() const { return wal_appends_failed_.load(); }
  int wal_syncs_failed() const { return wal_syncs_failed_.load(); }

  void HoldWalSyncs() {
    std::lock_guard<std::mutex> lock(hold_mutex_);
    holding_ = true;
  }
  void ReleaseWalSyncs() {
    {
      std::lock_guard<std::mutex> lock(hold_mutex_);
      holding_ = false;
    }
    hold_changed_.notify_all();
  }
  void WaitForHeldWalSync() {
    std::unique_lock<std::mutex> lock(hold_mutex_);
    hold_changed_.wait(lock, [this] { return held_ > 0; });
  }

  void PowerCut() { powered_ = false; }
  void Restore() { powered_ = true; }

  // Truncates every file written through this file system to its synced
  // length. Call with the database closed.
  void DropUnsyncedData() {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& [path, file] : files_) {
      std::error_code ec;
      if (!std::filesystem::exists(path, ec)) continue;
      if (file.synced < file.previous.size()) {
        std::fstream out(path, std::ios::in | std::ios::out | std::ios::binary);
        out.seekp(static_cast<std::streamoff>(file.synced));
        out.write(file.previous.data() + file.synced,
                  static_cast<std::streamsize>(file.previous.size() - file.synced));
      }
      file.size = std::max<uint64_t>(file.synced, file.previous.size());
      std::filesystem::resize_file(path, file.size, ec);
      file.synced = file.size;
      file.previous.clear();
    }
  }

  uint64_t UnsyncedWalBytes() const {
    std::lock_guard<std::mutex> lock(mutex_);
    uint64_t bytes = 0;
    for (const auto& [path, file] : files_) {
      if (IsWalFile(path)) bytes += file.size - file.synced;
    }
    return bytes;
  }

  rocksdb::IOStatus NewWritableFile(const std::string& f, const rocksdb::FileOptions& o,
                                    std::unique_ptr<rocksdb::FSWritableFile>* r,
                                    rocksdb::IODebugContext* d) override {
    if (!powered_) return PoweredOff(f);
    rocksdb::IOStatus s = target()->NewWritableFile(f, o, r, d);
    if (s.ok()) {
      Track(f, 0);
      *r = std::make_unique<File>(std::move(*r), this, f);
    }
    return s;
  }

  rocksdb::IOStatus ReopenWritableFile(const std::string& f, const rocksdb::FileOptions& o,
                                       std::unique_ptr<rocksdb::FSWritableFile>* r,
                                       rocksdb::IODebugContext* d) override {
    if (!powered_) return PoweredOff(f);
    rocksdb::IOStatus s = target()->ReopenWritableFile(f, o, r, d);
    if (s.ok()) {
      std::error_code ec;
      uint64_t size = std::filesystem::file_size(f, ec);
      Track(f, ec ? 0 : size);  // what was there before is taken as durable
      *r = std::make_unique<File>(std::move(*r), this, f);
    }
    return s;
  }

  rocksdb::IOStatus ReuseWritableFile(const std::string& f, const std::string& old,
                                      const rocksdb::FileOptions& o,
                                      std::unique_ptr<rocksdb::FSWritableFile>* r,
                                      rocksdb::IODebugContext* d) override {
    if (!powered_) return PoweredOff(f);
    std::ifstream in(old, std::ios::binary);
    std::string previous((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    rocksdb::IOStatus s = target()->ReuseWritableFile(f, old, o, r, d);
    if (s.ok()) {
      {
        std::lock_guard<std::mutex> lock(mutex_);
        files_.erase(old);
        files_[f] = FileState{0, 0, std::move(previous)};
      }
      *r = std::make_unique<File>(std::move(*r), this, f);
    }
    return s;
  }

  rocksdb::IOStatus RenameFile(const std::string& from, const std::string& to,
                               const rocksdb::IOOptions& o, rocksdb::IODebugContext* d) override {
    if (!powered_) return PoweredOff(from);
    rocksdb::IOStatus s = target()->RenameFile(from, to, o, d);
    if (s.ok()) {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = files_.find(from);
      if (it != files_.end()) {
        files_[to] = it->second;
        files_.erase(it);
      } else {
        files_.erase(to);
      }
    }
    return s;
  }

  rocksdb::IOStatus DeleteFile(const std::string& f, const rocksdb::IOOptions& o,
                               rocksdb::IODebugContext* d) override {
    if (!powered_) return PoweredOff(f);
    rocksdb::IOStatus s = target()->DeleteFile(f, o, d);
    if (s.ok()) {
      std::lock_guard<std::mutex> lock(mutex_);
      files_.erase(f);
    }
    return s;
  }

  // RocksDB's info log, opened through NewWritableFile() above.
  rocksdb::IOStatus NewLogger(const std::string& f, const rocksdb::IOOptions& o,
                              std::shared_ptr<rocksdb::Logger>* r,
                              rocksdb::IODebugContext* d) override {
    return rocksdb::FileSystem::NewLogger(f, o, r, d);
  }

 private:
  struct FileState {
    uint64_t size = 0;     // bytes appended
    uint64_t synced = 0;   // of which a sync made durable
    std::string previous;  // a file written over: its old bytes
  };

  static rocksdb::IOStatus PoweredOff(const std::string& f) {
    return rocksdb::IOStatus::IOError("FaultInjectionFileSystem: power cut", f);
  }

  void Track(const std::string& path, uint64_t size) {
    std::lock_guard<std::mutex> lock(mutex_);
    files_[path] = FileState{size, size, {}};
  }

  // Consumes one of `*failures` when `path` is a WAL.
  static bool Take(const std::string& path, std::atomic<int>* failures, std::atomic<int>* taken) {
    if (!IsWalFile(path)) return false;
    int n = failures->load();
    while (n > 0) {
      if (failures->compare_exchange_weak(n, n - 1)) {
        ++*taken;
        return true;
      }
    }
    return false;
  }

  rocksdb::IOStatus BeforeAppend(const std::string& path) {
    if (!powered_) return PoweredOff(path);
    if (Take(path, &wal_append_failures_, &wal_appends_failed_)) {
      return rocksdb::IOStatus::IOError("FaultInjectionFileSystem: injected append failure", path);
    }
    return rocksdb::IOStatus::OK();
  }

  void Appended(const std::string& path, uint64_t bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    files_[path].size += bytes;
  }

  void Truncated(const std::string& path, uint64_t size) {
    std::lock_guard<std::mutex> lock(mutex_);
    FileState& file = files_[path];
    file.size = size;
    if (file.synced > size) file.synced = size;
  }

  // Runs `sync` (a Sync() or Fsync() of `path`); on success what was
  // appended before it is durable.
  template <typename SyncFn>
  rocksdb::IOStatus Synced(const std::string& path, SyncFn sync) {
    if (IsWalFile(path)) {
      std::unique_lock<std::mutex> lock(hold_mutex_);
      if (holding_) {
        ++held_;
        hold_changed_.notify_all();
        hold_changed_.wait(lock, [this] { return !holding_; });
        --held_;
      }
    }
    if (!powered_) return PoweredOff(path);
    if (Take(path, &wal_sync_failures_, &wal_syncs_failed_)) {
      return rocksdb::IOStatus::IOError("FaultInjectionFileSystem: injected sync failure", path);
    }
    uint64_t covered;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      covered = files_[path].size;
    }
    rocksdb::IOStatus s = sync();
    if (s.ok()) {
      std::lock_guard<std::mutex> lock(mutex_);
      FileState& file = files_[path];
      if (file.synced < covered) file.synced = covered;
    }
    return s;
  }

  class File : public rocksdb::FSWritableFileOwnerWrapper {
   public:
    File(std::unique_ptr<rocksdb::FSWritableFile> file, FaultInjectionFileSystem* fs,
         std::string path)
        : rocksdb::FSWritableFileOwnerWrapper(std::move(file)), fs_(fs), path_(std::move(path)) {}

    rocksdb::IOStatus Append(const rocksdb::Slice& data, const rocksdb::IOOptions& o,
                             rocksdb::IODebugContext* d) override {
      rocksdb::IOStatus s = fs_->BeforeAppend(path_);
      if (s.ok()) s = target()->Append(data, o, d);
      if (s.ok()) fs_->Appended(path_, data.size());
      return s;
    }
    rocksdb::IOStatus Append(const rocksdb::Slice& data, const rocksdb::IOOptions& o,
                             const rocksdb::DataVerificationInfo& v,
                             rocksdb::IODebugContext* d) override {
      rocksdb::IOStatus s = fs_->BeforeAppend(path_);
      if (s.ok()) s = target()->Append(data, o, v, d);
      if (s.ok()) fs_->Appended(path_, data.size());
      return s;
    }
    rocksdb::IOStatus PositionedAppend(const rocksdb::Slice& data, uint64_t offset,
                                       const rocksdb::IOOptions& o,
                                       rocksdb::IODebugContext* d) override {
      return rocksdb::IOStatus::NotSupported("FaultInjectionFileSystem: no positioned appends");
    }
    rocksdb::IOStatus PositionedAppend(const rocksdb::Slice& data, uint64_t offset,
                                       const rocksdb::IOOptions& o,
                                       const rocksdb::DataVerificationInfo& v,
                                       rocksdb::IODebugContext* d) override {
      return rocksdb::IOStatus::NotSupported("FaultInjectionFileSystem: no positioned appends");
    }
    rocksdb::IOStatus Truncate(uint64_t size, const rocksdb::IOOptions& o,
                               rocksdb::IODebugContext* d) override {
      if (!fs_->powered_) return PoweredOff(path_);
      rocksdb::IOStatus s = target()->Truncate(size, o, d);
      if (s.ok()) fs_->Truncated(path_, size);
      return s;
    }
    rocksdb::IOStatus Flush(const rocksdb::IOOptions& o, rocksdb::IODebugContext* d) override {
      if (!fs_->powered_) return PoweredOff(path_);
      return target()->Flush(o, d);
    }
    rocksdb::IOStatus Sync(const rocksdb::IOOptions& o, rocksdb::IODebugContext* d) override {
      return fs_->Synced(path_, [&] { return target()->Sync(o, d); });
    }
    rocksdb::IOStatus Fsync(const rocksdb::IOOptions& o, rocksdb::IODebugContext* d) override {
      return fs_->Synced(path_, [&] { return target()->Fsync(o, d); });
    }
    // A range sync promises nothing durable: it neither fails nor counts.
    rocksdb::IOStatus RangeSync(uint64_t offset, uint64_t nbytes, const rocksdb::IOOptions& o,
                                rocksdb::IODebugContext* d) override {
      if (!fs_->powered_) return PoweredOff(path_);
      return target()->RangeSync(offset, nbytes, o, d);
    }

   private:
    FaultInjectionFileSystem* const fs_;
    const std::string path_;
  };

  std::atomic<bool> powered_{true};
  std::atomic<int> wal_append_failures_{0};
  std::atomic<int> wal_appends_failed_{0};
  std::atomic<int> wal_sync_failures_{0};
  std::atomic<int> wal_syncs_failed_{0};
  mutable std::mutex mutex_;
  std::map<std::string, FileState> files_;  // GUARDED_BY(mutex_)
  std::mutex hold_mutex_;
  std::condition_variable hold_changed_;
  bool holding_ = false;  // GUARDED_BY(hold_mutex_)
  int held_ = 0;          // GUARDED_BY(hold_mutex_): syncs waiting
};

}  // namespace feedd::testutil
