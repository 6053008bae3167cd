// SpaceReserve: refuses writes before the data directory's file system runs
// out of space, so RocksDB does not meet ENOSPC (once it has, it refuses
// writes until it finds a memtable's worth of space free again).
//
// Operation
//   Admit() answers `insufficient_storage` while the free space is below
//   StoreOptions::min_free_bytes. Free space is the file system's (through
//   RocksDB's FileSystem, as RocksDB sees it) at the last sample minus the
//   bytes written since. It is sampled again when the sample is older than
//   kSampleIntervalMs or a quarter of the reserve was written since, so no
//   write pays for a statvfs. Once refusing, writes resume when a sample
//   finds the reserve plus an eighth of it free (hysteresis: a store at the
//   edge does not flap). min_free_bytes = 0 disables the reserve.
//   Each change of state is logged once.
//
// Concurrency
//   All methods are thread-safe.
//
// Ownership
//   Borrows the FileSystem and the Clock. Internal to storage/.
#pragma once

#include <rocksdb/file_system.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>

#include "util/clock.h"
#include "util/status.h"

namespace feedd {

class SpaceReserve {
 public:
  static constexpr uint64_t kSampleIntervalMs = 1000;

  SpaceReserve(rocksdb::FileSystem* fs, std::string path, uint64_t min_free_bytes, Clock* clock);

  // OK, or insufficient_storage while below the reserve.
  Status Check();
  // Check() for a write: a refusal is counted in refused().
  Status Admit();
  // After a write of `bytes` reached RocksDB.
  void NoteWritten(uint64_t bytes) { written_since_sample_ += bytes; }

  bool refusing() const { return refusing_.load(); }
  // Free bytes at the last successful sample (0 before the first).
  uint64_t free_bytes() const { return free_bytes_.load(); }
  uint64_t min_free_bytes() const { return min_free_bytes_; }
  // Writes refused since start.
  uint64_t refused() const { return refused_.load(); }

 private:
  // REQUIRES: mutex_ held.
  void Sample(uint64_t now_ms);

  rocksdb::FileSystem* const fs_;
  const std::string path_;
  const uint64_t min_free_bytes_;
  const uint64_t resume_free_bytes_;
  Clock* const clock_;

  std::mutex mutex_;                // one sample at a time
  uint64_t sampled_ms_ = 0;         // guarded by mutex_
  bool sampled_ = false;            // guarded by mutex_
  std::atomic<bool> known_{false};  // a sample succeeded
  std::atomic<uint64_t> free_bytes_{0};
  std::atomic<uint64_t> written_since_sample_{0};
  std::atomic<bool> refusing_{false};
  std::atomic<uint64_t> refused_{0};
};

}  // namespace feedd
