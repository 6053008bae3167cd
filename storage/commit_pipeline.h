// CommitPipeline: the single commit thread of the storage engine.
//
// Operation
//   Submit() queues a WriteRequest. The commit thread takes every queued
//   request (up to the group bounds), evaluates them in order against the
//   current state (RocksDB plus the effects of the earlier requests of the
//   same group), assigns consecutive LSNs to their mutations, and writes the
//   whole group - items, index entries, change records and the head LSN - as
//   one RocksDB WriteBatch, synced when StoreOptions::sync is set, unless
//   the group holds processors' view writes alone: those are derived from
//   durable changes, and wait for the next sync (a later synced group's, or
//   the commit thread's once it is idle, StoreOptions::idle_sync_delay after
//   the first of them) to be published, like an unsynced import batch; a
//   crash before it takes their consumer watermarks too. A request
//   that fails is rolled back to a WriteBatch save point and takes no LSN.
//   Only after the write returns are the group's change records handed to
//   the commit listeners, does the head LSN advance, head watchers fire and
//   callbacks run: acknowledged means durable, and readers of the feed up to
//   the head never see a gap.
//
//   Writes are refused with `insufficient_storage` before they reach RocksDB
//   while the SpaceReserve says the disk is below its reserve.
//
//   If RocksDB refuses a write, every request of that group fails (nothing
//   of it is visible: RocksDB applies a batch only after its WAL write) and
//   later writes answer `unavailable` while the store recovers: every
//   kResumeIntervalMs the commit thread asks RocksDB to resume
//   (DB::Resume(): it flushes the memtables and starts a new WAL; `Busy`
//   while RocksDB recovers by itself). Once it has, and the head LSN read
//   back from the database is still the pipeline's (so no LSN is handed out
//   twice), writes are accepted again. An error RocksDB cannot resume from
//   (severity fatal or worse) keeps the pipeline failed until restart. Each
//   change of state is logged once.
//
// Concurrency
//   Submit(), head(), OnHeadReached(), CancelHeadWatch(), the listener
//   methods and Stats() are thread-safe. Callbacks and listeners run on the
//   commit thread.
//
// Ownership
//   Borrows the RocksDatabase and the SpaceReserve, which must outlive it.
//   Internal to storage/.
#pragma once

#include <rocksdb/write_batch.h>

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>
#include <vector>

#include "storage/change_record.h"
#include "storage/churn_flush.h"
#include "storage/item_generations.h"
#include "storage/query_cache.h"
#include "storage/reused_write_batch.h"
#include "storage/rocks_database.h"
#include "storage/space_reserve.h"
#include "storage/store_options.h"
#include "storage/write_request.h"
#include "util/lsn_watchers.h"

namespace feedd {

class CommitPipeline {
 public:
  static constexpr uint64_t kResumeIntervalMs = 1000;

  // `cache` and `item_generations` (may be null, not owned) are told of
  // every partition and item a group wrote, after the write is visible and
  // before it is acknowledged. `space` (may be null: no reserve) admits
  // writes.
  CommitPipeline(RocksDatabase* db, const StoreOptions& options, Lsn head_lsn,
                 QueryCache* cache = nullptr, ItemGenerations* item_generations = nullptr,
                 SpaceReserve* space = nullptr);
  ~CommitPipeline();

  void Start();
  // Commits everything queued, then stops the thread. Later Submit()s fail
  // with `unavailable`. Idempotent.
  void Stop();

  void Submit(WriteRequest request, WriteCallback done);
  // Applies every request of `view` and its consumer watermark atomically.
  void SubmitView(ViewWrite view, WriteCallback done);
  // Commits `batch` as a group of its own; see ImportBatch.
  void SubmitImport(ImportBatch batch, ImportCallback done);

  Lsn head() const { return head_.value(); }
  uint64_t OnHeadReached(Lsn lsn, std::function<void()> fn);
  void CancelHeadWatch(uint64_t token);

  // See DocumentStore::AddCommitListener().
  uint64_t AddCommitListener(CommitListener listener);
  void RemoveCommitListener(uint64_t token);

  // OK; `unavailable` while recovering from a failed RocksDB write;
  // `storage_error` once the failure cannot be recovered from without a
  // restart.
  Status health() const;
  uint64_t groups_committed() const { return groups_committed_.load(); }
  uint64_t requests_committed() const { return requests_committed_.load(); }
  uint64_t changes_committed() const { return changes_committed_.load(); }
  uint64_t requests_rejected() const { return requests_rejected_.load(); }
  uint64_t requests_failed() const { return requests_failed_.load(); }
  // Committed changes of container i (RocksDatabase::containers() order) by
  // op: [create, replace, delete].
  std::array<uint64_t, 3> changes_of(size_t container_index) const;
  // Bytes (key + value) of change records committed since Start().
  uint64_t feed_bytes_appended() const { return feed_bytes_appended_.load(); }
  // Memtable flushes of containers with many dead entries (ChurnFlush).
  uint64_t churn_flushes() const { return churn_.flushes(); }

 private:
  // One unit of the queue: a client request (one part, no watermark) or a
  // processor's view write.
  struct Pending {
    ViewWrite parts;
    bool is_view = false;
    WriteCallback done;  // unless is_import
    // A bulk import's batch: a group of its own, each request applied on
    // its own, answered through import_done.
    bool is_import = false;
    // Whether it needs an fsync (when StoreOptions::sync): a client's
    // request does; a view write does not (it is derived from durable
    // changes, and the next sync covers it); an import's batch as
    // ImportBatch::sync says. A group is synced when one of them needs it.
    bool sync = true;
    ImportCallback import_done;
    // When Enqueue() took it (only with StoreOptions::on_queue_wait).
    std::chrono::steady_clock::time_point queued;
  };
  // Answers every request of `pending` with `status`.
  static void Fail(Pending& pending, const Status& status);
  void Enqueue(Pending pending);
  // True unless every operation of `pending` only reads.
  static bool Writes(const Pending& pending);
  class GroupBuilder;

  void Run();
  // Commit thread: reports how long the writes of `group` waited in the
  // queue (StoreOptions::on_queue_wait).
  void ReportQueueWaits(const std::vector<Pending>& group);
  void CommitGroup(std::vector<Pending>& group);
  // Commit thread: hands the change records of the groups written without
  // an fsync to the listeners and advances the head over them, once the
  // WAL that holds them is synced.
  void PublishUnsynced();
  // Commit thread, once per change of a written group: hands the item's new
  // version (the after-image of its change record, records[record]) to the
  // query cache, or has the partition's answers dropped when it is not at
  // hand (records not collected).
  void UpdateQueryCache(size_t container_index, const std::string& partition_key,
                        const std::string& id,
                        const std::shared_ptr<std::vector<ChangeRecord>>& records, size_t record);
  // Commit thread, with unsynced groups: syncs the WAL, then publishes; on
  // failure the pipeline is failed (as after a failed write).
  Status SyncUnsynced();
  // Commit thread: adds to `sorted` the records of `batch` (Puts and
  // Deletes) in (column family, key) order, records of one key in their
  // order; false when `batch` holds anything else.
  bool SortedByKey(const rocksdb::WriteBatch& batch, rocksdb::WriteBatch* sorted);
  // Commit thread, while failed: asks RocksDB to resume; on success
  // re-reads the head LSN and accepts writes again.
  void TryRecover();

  RocksDatabase* const db_;
  const StoreOptions options_;
  QueryCache* const cache_;
  ItemGenerations* const item_generations_;
  SpaceReserve* const space_;

  mutable std::mutex mutex_;  // health() locks it too
  std::condition_variable wake_;
  std::deque<Pending> queue_;
  bool stopping_ = false;
  std::thread thread_;

  // The commit listeners; the commit thread collects change records only
  // while there is one.
  std::mutex listeners_mutex_;
  std::map<uint64_t, CommitListener> listeners_;  // GUARDED_BY(listeners_mutex_)
  uint64_t next_listener_ = 1;                    // GUARDED_BY(listeners_mutex_)
  std::atomic<bool> has_listeners_{false};

  ChurnFlush churn_;  // commit thread only, but for flushes()
  LsnWatchers head_;  // the committed (published) head LSN and its watches
  // Commit thread only: the last LSN written to RocksDB (>= head_ while
  // groups written without an fsync wait to be published), and their
  // change records (null entries when no listener collected them).
  Lsn written_head_ = 0;
  std::vector<CommittedChanges> unsynced_;
  bool has_unsynced_ = false;
  // Commit thread only: when the oldest of unsynced_ was written.
  std::chrono::steady_clock::time_point unsynced_since_;
  uint64_t last_ts_ms_ = 0;  // commit thread only
  // Commit thread only: column family handles by id (SortedByKey).
  std::unordered_map<uint32_t, rocksdb::ColumnFamilyHandle*> cf_handles_;
  // Commit thread only: an import group's batch of items and index entries,
  // and the batch written: its change records, then the other batch sorted
  // (together about twice import.batch_mb). Kept from one import group to the next,
  // so their memory is not taken fresh from the kernel, page fault by page
  // fault, for every group.
  ReusedWriteBatch import_batch_, import_sorted_;
  Status failure_;          // guarded by mutex_: the failed write's error
  bool permanent_ = false;  // guarded by mutex_: RocksDB cannot resume

  std::atomic<uint64_t> groups_committed_{0};
  std::atomic<uint64_t> requests_committed_{0};
  std::atomic<uint64_t> changes_committed_{0};
  std::atomic<uint64_t> feed_bytes_appended_{0};
  std::atomic<uint64_t> requests_rejected_{0};
  std::atomic<uint64_t> requests_failed_{0};
  // [container index][op - 1]
  std::unique_ptr<std::array<std::atomic<uint64_t>, 3>[]> changes_by_container_;
};

}  // namespace feedd
