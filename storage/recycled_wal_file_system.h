// RecycledWalFileSystem: a rocksdb::FileSystem decorator that writes each
// new write-ahead log over the blocks of an old one, so that a commit's
// fdatasync writes its data alone.
//
// Why: an fdatasync of a file that grows also writes the file's inode (its
// new size) and the extents of its new blocks, one more synchronous write
// before the data is durable; a sync of blocks written before does not
// (bench/wal_sync_bench: about twice the wall time on this project's
// benchmark box, docs/benchmarks.md). RocksDB 7.8 reuses old logs only when
// it also skips corrupted records anywhere (its SanitizeOptions turns
// recycle_log_file_num off under point-in-time recovery), so the reuse is
// done here, below RocksDB.
//
// How:
//  - When RocksDB deletes an obsolete log this layer wrote, the file is
//    renamed `feedd-recycled-<number>` in its directory (cut to
//    kMaxRecycledBytes), while fewer than `max_files` are kept; otherwise it
//    is deleted. Files kept from an earlier run are found again at start.
//  - A new log takes the oldest kept file (renamed to the log's name,
//    opened without truncation, RocksDB's ReuseWritableFile), or starts
//    empty when there is none.
//  - Each append RocksDB makes to a log goes to the file as one frame:
//        magic u32 | payload length u32 | log number u64 | crc32c u32 | payload
//    (little-endian; the CRC covers the first 16 bytes and the payload). A
//    reader of a log returns the payloads of consecutive frames of that
//    log's number, from offset 0, and stops at the first frame that is not
//    one: the old log's bytes, or the zeros or end of a new file. A frame of
//    the log's number whose CRC fails (a write torn by a crash) reads as a
//    corruption, as a torn record of RocksDB's own format does, and
//    point-in-time recovery stops there.
//  - A log whose first bytes are not a frame (written before this layer, or
//    with max_files 0) passes through unchanged, and is deleted, not kept,
//    once obsolete.
//  - Once RocksDB has closed cleanly, WritePlainLogs() rewrites the logs
//    left without frames, so that RocksDB's own tools and earlier feedd
//    versions read a cleanly stopped data directory. After a crash only
//    feedd reads the logs, until it has opened and closed the directory.
//
// What RocksDB sees is the file it wrote: the log's size (the writable
// file's GetFileSize) counts payload bytes, and reads return payloads.
// FileSystem::GetFileSize of a closed log returns its size on disk,
// frames included, which RocksDB uses only to log and to cut preallocated
// space. A log cannot be opened for random access.
//
// Durability: a kept file's rename into a log's name is made durable by the
// sync of the WAL's directory RocksDB makes with the first sync of every new
// log, before any write in it is acknowledged.
//
// Thread-safety: as the wrapped FileSystem; the pool of kept files and the
// counters are safe to use from any thread.
// Ownership: shares the wrapped FileSystem; the files it opens share nothing
// with it.
// Internal to storage/.
#pragma once

#include <rocksdb/file_system.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>

namespace feedd {

class RecycledWalFileSystem : public rocksdb::FileSystemWrapper {
 public:
  // A kept file larger than this is cut to it: the disk it holds is bounded
  // by max_files * kMaxRecycledBytes.
  static constexpr uint64_t kMaxRecycledBytes = 64ull << 20;

  // Keeps at most `max_files` old logs of `wal_dir` for reuse, taking back
  // those an earlier run kept there (beyond `max_files`, deleted). 0: new
  // logs are plain files, as RocksDB writes them; framed ones still read.
  RecycledWalFileSystem(const std::shared_ptr<rocksdb::FileSystem>& target, std::string wal_dir,
                        size_t max_files);

  static const char* kClassName() { return "FeeddRecycledWalFileSystem"; }
  const char* Name() const override { return kClassName(); }

  // New logs: over a kept file when there is one, framed either way (plain
  // when max_files is 0).
  rocksdb::IOStatus NewWritableFile(const std::string& f, const rocksdb::FileOptions& o,
                                    std::unique_ptr<rocksdb::FSWritableFile>* r,
                                    rocksdb::IODebugContext* d) override;
  // Reading a log back: its frames' payloads, or the file as it is when it
  // was written before this layer.
  rocksdb::IOStatus NewSequentialFile(const std::string& f, const rocksdb::FileOptions& o,
                                      std::unique_ptr<rocksdb::FSSequentialFile>* r,
                                      rocksdb::IODebugContext* d) override;
  // NotSupported for a framed log.
  rocksdb::IOStatus NewRandomAccessFile(const std::string& f, const rocksdb::FileOptions& o,
                                        std::unique_ptr<rocksdb::FSRandomAccessFile>* r,
                                        rocksdb::IODebugContext* d) override;
  // An obsolete log this layer wrote is kept for reuse while there is room.
  rocksdb::IOStatus DeleteFile(const std::string& f, const rocksdb::IOOptions& o,
                               rocksdb::IODebugContext* d) override;

  // Rewrites every framed log of the WAL directory without frames (each
  // through a temporary file renamed over it). Call it only once RocksDB
  // has closed the database cleanly: a log being written would be cut.
  rocksdb::IOStatus WritePlainLogs();

  // New logs written over a kept file / started empty, since construction.
  uint64_t logs_recycled() const { return logs_recycled_.load(std::memory_order_relaxed); }
  uint64_t logs_new() const { return logs_new_.load(std::memory_order_relaxed); }
  // Files kept for reuse now.
  size_t files_kept() const;

 private:
  // Opens `f` for writing as a framed log: over `old` when not empty.
  rocksdb::IOStatus OpenFramed(const std::string& f, const std::string& old,
                               const rocksdb::FileOptions& o,
                               std::unique_ptr<rocksdb::FSWritableFile>* r,
                               rocksdb::IODebugContext* d);
  // True when `f` starts with a frame (of any log).
  bool IsFramed(const std::string& f, rocksdb::IODebugContext* d);

  const std::string wal_dir_;
  const size_t max_files_;
  mutable std::mutex mutex_;
  std::deque<std::string> kept_;  // paths, oldest first
  std::atomic<uint64_t> logs_recycled_{0};
  std::atomic<uint64_t> logs_new_{0};
};

}  // namespace feedd
