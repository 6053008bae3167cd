// PreZeroedWalFileSystem: a rocksdb::FileSystem decorator that gives RocksDB
// each new write-ahead log (a `*.log` file) from a small pool of files whose
// blocks were written with zeros and synced beforehand, instead of an empty
// file that grows.
//
// Why: an fdatasync of a file that grows must write its inode too (its size
// changed), and ext4 converts each newly allocated block's extent; a sync of
// blocks written before writes the data alone. On the reference box that is
// 380 instead of 512 us of wall time and 53 instead of 93 us of CPU per sync
// (bench/wal_sync_bench), and with storage.sync every group commit waits
// for one (docs/benchmarks.md).
//
// Why it is safe: RocksDB writes a log from offset 0 over the zeros. A log
// reader takes a zero header (type 0, length 0) for padding and skips the
// rest of its block, so recovery after a crash reads the records, then
// nothing; a torn last record fails its checksum as it would at the end of
// a growing file. RocksDB truncates a log to what it wrote when it closes
// it. A pool file gets its ready name only once its zeros are synced, so a
// crash never leaves a partly written one to be used, and RocksDB syncs the
// directory before the first sync of a new log, which makes the rename that
// turns a pool file into the log durable.
//
// A background thread keeps `pool_files` files ready in `dir`, named
// `feedd-wal-pool-N` (RocksDB leaves names it did not give alone); they
// survive restarts and are used then. A file is as large as the largest of
// the last few logs grew to, plus a quarter, in whole MiB, at most
// `file_bytes` (and `file_bytes` before any log was closed): logs end
// whenever a memtable is flushed, and zeros RocksDB never writes over are
// disk writes for nothing. It does not fill while the disk has less than
// 4 x `file_bytes` free. When no file is ready (the thread fell behind, the
// disk is nearly full, a write failed: logged), RocksDB gets an empty file
// as before; nothing fails.
//
// Thread-safety: thread-safe. Ownership: shares the wrapped FileSystem;
// owns the filler thread, stopped by the destructor.
// Internal to storage/.
#pragma once

#include <rocksdb/file_system.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace feedd {

class PreZeroedWalFileSystem : public rocksdb::FileSystemWrapper {
 public:
  // Makes one pool file unless `dir` holds one already (RocksDB's first log
  // is pre-zeroed too), then starts the filler thread. `file_bytes` > 0,
  // `pool_files` > 0.
  PreZeroedWalFileSystem(const std::shared_ptr<rocksdb::FileSystem>& target, std::string dir,
                         uint64_t file_bytes, size_t pool_files);
  ~PreZeroedWalFileSystem() override;

  static const char* kClassName() { return "FeeddPreZeroedWalFileSystem"; }
  const char* Name() const override { return kClassName(); }

  // A new `*.log` file is a ready pool file renamed (RocksDB's
  // ReuseWritableFile: opened without truncation) when there is one; its
  // size when closed sizes the next pool files. Other files pass through.
  rocksdb::IOStatus NewWritableFile(const std::string& f, const rocksdb::FileOptions& o,
                                    std::unique_ptr<rocksdb::FSWritableFile>* r,
                                    rocksdb::IODebugContext* d) override;

  // New logs given a pool file, and given an empty file because none was
  // ready; pool files that could not be written.
  uint64_t logs_pre_zeroed() const { return logs_pre_zeroed_.load(); }
  uint64_t logs_empty() const { return logs_empty_.load(); }
  uint64_t fill_failures() const { return fill_failures_.load(); }

  // What the last logs grew to, for the size of the next pool files; shared
  // with the open logs, which report their size when closed.
  class LogSizes;

 private:
  void FillLoop();
  // Writes pool file `number`; its path once ready, or "" on failure
  // (logged) or when stopping.
  std::string FillOne(uint64_t number);
  std::string PoolName(uint64_t n) const;
  // The size of the next pool file.
  uint64_t NextFileBytes() const;

  const std::string dir_;
  const uint64_t file_bytes_;
  const size_t pool_files_;
  const std::shared_ptr<LogSizes> log_sizes_;

  std::mutex mutex_;
  std::condition_variable wake_;
  std::vector<std::string> ready_;  // guarded by mutex_: pool files, oldest first
  uint64_t next_number_ = 1;        // guarded by mutex_
  bool stopping_ = false;           // guarded by mutex_
  std::thread filler_;

  std::atomic<uint64_t> logs_pre_zeroed_{0}, logs_empty_{0}, fill_failures_{0};
};

}  // namespace feedd
