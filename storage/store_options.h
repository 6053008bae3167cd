// StoreOptions: everything DocumentStore::Open() needs. Defaults are the
// production defaults; the daemon fills them from its configuration
// (daemon/options.cc declares the matching options).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "storage/container_spec.h"
#include "util/clock.h"

namespace rocksdb {
class FileSystem;
}

namespace feedd {

struct StoreOptions {
  std::string data_dir = "./data";
  // The containers; none by default (the daemon reads them from its
  // configuration, daemon/options.h).
  std::vector<ContainerSpec> containers;

  // true: a write is acknowledged only once its WAL is fsynced (concurrent
  // writes share one fsync); a group of processors' view writes alone is
  // not synced on its own (storage/commit_pipeline.h). false: acknowledged
  // once in the OS page cache.
  bool sync = true;
  size_t max_item_bytes = 2 * 1024 * 1024;
  // Store the previous version of an item in each change record.
  bool before_images = true;
  // Compress the WAL's records with zstd (RocksDB's wal_compression, which
  // its 7.8 headers call work in progress): about half the bytes each sync
  // writes under the scenario's writes (docs/benchmarks.md). A database
  // reads its WALs either way.
  bool wal_compression = false;
  // Old write-ahead logs kept in the data directory for new logs to be
  // written over, so that a commit's fsync does not also write the file's
  // growth (storage/recycled_wal_file_system.h); each at most 64 MiB.
  // 0: every log is a new file.
  size_t wal_recycle_files = 8;

  // Groups written without an fsync of their own (processors' view writes
  // alone, an import's unsynced batches) become durable with the next group
  // that syncs, or, should none come, with the commit thread's own sync once
  // this long has passed since the first of them was written and the thread
  // is idle. A client's write that arrives meanwhile carries them in its
  // fsync instead of waiting behind one more: at one connection, a post
  // and its views' writes cost two fsyncs without the delay. Their change
  // records reach the head, the listeners and Kafka up to this much later on
  // an idle store. 0: synced as soon as the commit thread falls idle.
  std::chrono::microseconds idle_sync_delay{1000};

  // Group commit bounds: one RocksDB WriteBatch (one fsync) takes at most
  // this many requests / bytes from the queue.
  size_t max_group_requests = 512;
  size_t max_group_bytes = 32 * 1024 * 1024;
  // An import group reads the stored versions of its items together before
  // it writes them, holding at most this many bytes of them; the rest are
  // read one by one as they are written.
  size_t import_prefetch_bytes = 64u * 1024 * 1024;

  // Change-feed retention. Changes older than retention_ms, or beyond
  // retention_bytes of feed data, are dropped unless a registered consumer
  // has not acknowledged them yet. 0 disables that limit.
  uint64_t retention_ms = 7ull * 24 * 3600 * 1000;
  uint64_t retention_bytes = 0;
  uint64_t retention_interval_ms = 10000;  // how often retention runs

  size_t block_cache_bytes = 256u * 1024 * 1024;
  size_t write_buffer_bytes = 64u * 1024 * 1024;
  // Once the write-ahead logs hold this much, RocksDB flushes the memtables
  // that keep the oldest one: what a restart after a crash replays, and how
  // often logs become free for reuse (wal_recycle_files), since a family
  // written seldom (the metadata's) keeps every log until it is flushed.
  // Lower, an import's large families are flushed before their memtables
  // fill (128 MiB: 0.92x the items/s of 512 MiB at SF 0.01).
  uint64_t max_total_wal_bytes = 256ull * 1024 * 1024;
  // Answers of single-partition queries kept in memory (storage/query_cache.h);
  // 0 disables the cache.
  size_t query_cache_bytes = 64u * 1024 * 1024;
  // Committed records queued in memory for the readers of the feed inside
  // the process (the processors and the publisher: storage/commit_tail.h),
  // all together, each group counted once; a reader further behind reads
  // the durable feed.
  size_t commit_tail_bytes = 256u * 1024 * 1024;

  // Free space kept on the data directory's file system: below it, writes
  // answer insufficient_storage before they reach RocksDB, and they resume
  // by themselves once space is back (storage/space_reserve.h). It has to
  // hold what RocksDB still writes after writes stop - memtable flushes (up
  // to write_buffer_bytes per column family), compaction output - and the
  // write_buffer_bytes RocksDB wants free before it clears an out-of-space
  // error. 0 disables the reserve.
  uint64_t min_free_bytes = 256ull * 1024 * 1024;

  Clock* clock = Clock::System();  // not owned

  // The file system RocksDB works on; null: the default (POSIX). A seam for
  // tests that inject faults.
  std::shared_ptr<rocksdb::FileSystem> file_system;

  // Called on the commit thread after each group commit with the number of
  // requests in the group and the seconds RocksDB's write (and fsync) took.
  // For metrics; must be cheap.
  std::function<void(size_t requests, double seconds)> on_group_commit;
  // Called on the commit thread as it takes a group, once per write of the
  // group (a client's request or a processor's view write; not an import's
  // batch), with the seconds it waited in the commit queue since it was
  // submitted: the part of a write's latency spent behind earlier groups.
  // For metrics; must be cheap.
  std::function<void(double seconds)> on_queue_wait;
  // Called after each sync of a write-ahead log file with the seconds it
  // took, on the thread that synced it (the commit thread, or RocksDB's
  // when it switches logs). For metrics; must be cheap and thread-safe.
  std::function<void(double seconds)> on_wal_sync;
};

}  // namespace feedd
