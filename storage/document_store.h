// DocumentStore: feedd's storage engine. JSON items in containers, keyed by
// (partition key, id), with secondary indexes and an LSN-ordered change feed,
// all in one RocksDB database (layout: docs/storage-format.md).
//
// Operation
//   Writes go through Submit(): requests queue up for a single commit thread,
//   which evaluates them in order against the current state, assigns LSNs,
//   and writes each group of requests as ONE RocksDB WriteBatch (items, index
//   entries and change records together) with ONE fsync when sync is on.
//   A request's callback runs only after that write returned, so an
//   acknowledged write is durable (sync=true) and its change records are
//   readable. LSN order is commit order, and readers never see a gap.
//   Reads and queries run on the caller's thread, each query through one
//   RocksDB iterator (storage/query_engine.h).
//
// Concurrency
//   All methods are thread-safe. Submit() never blocks on I/O; Write() is
//   Submit() plus a wait. Callbacks (WriteCallback, OnHeadReached) run on the
//   commit thread and must be short.
//
// Ownership
//   Open() returns the only owner. Close() (or the destructor) stops the
//   commit and retention threads after finishing queued writes, then closes
//   the database.
#pragma once

#include <array>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "storage/change_record.h"
#include "storage/container_spec.h"
#include "storage/query.h"
#include "storage/store_options.h"
#include "storage/write_request.h"
#include "util/status.h"

namespace feedd {

class CommitTailBudget;  // storage/commit_tail_budget.h

struct ConsumerWatermark {
  std::string name;
  Lsn acked = 0;  // every change with LSN <= acked is no longer needed by it
};

// A change a processor could not apply, kept apart from the change feed so
// that retention need not keep the feed for it (docs/processors.md).
struct ParkedRecord {
  ChangeRecord change;  // envelope_json as the processor last had it
  std::string error;    // why it was parked (empty: parked behind an earlier one)
};

struct StoreStats {
  Lsn head_lsn = 0;
  Lsn oldest_retained_lsn = 1;
  uint64_t groups_committed = 0;
  uint64_t requests_committed = 0;  // applied
  uint64_t requests_rejected = 0;   // refused by validation or a precondition
  uint64_t requests_failed = 0;     // RocksDB refused the write, or the store was down
  // Refused before RocksDB: the disk was below storage.min_free_mb.
  uint64_t requests_refused_no_space = 0;
  uint64_t changes_committed = 0;
  uint64_t churn_flushes = 0;  // memtable flushes of containers full of dead entries
  // New write-ahead logs written over a kept old one / started as new files,
  // and old logs kept now (storage.wal_recycle_files).
  uint64_t wal_logs_recycled = 0;
  uint64_t wal_logs_new = 0;
  uint64_t wal_files_kept = 0;
  uint64_t query_cache_hits = 0;
  uint64_t query_cache_misses = 0;  // single-partition queries computed (cache on)
  uint64_t query_cache_bytes = 0;
  uint64_t query_cache_updates = 0;  // changes taken into kept answers instead of dropping them
  uint64_t commit_tail_bytes = 0;    // records queued for in-process readers (CommitTailBudget)
  uint64_t commit_tail_queues_given_up = 0;
  uint64_t queries_too_many_filters = 0;  // refused for query.max_filters
  uint64_t queries_over_budget = 0;       // stopped at query.max_items_read / max_bytes_read
  uint64_t query_pages_cut = 0;           // query pages ended by query.max_page_bytes
  uint64_t feed_pages_cut = 0;            // change-feed pages ended by feed.max_page_bytes
  // Committed changes per container, by op (create, replace, delete).
  std::map<std::string, std::array<uint64_t, 3>> changes_by_container;
};

// RocksDB's view of one container, sampled for metrics.
struct ContainerUsage {
  std::string container;
  uint64_t estimated_items = 0;       // counts memtable entries (overwrites too) until flushed
  uint64_t estimated_live_bytes = 0;  // in SST files; excludes what is still in memtables
};

struct RocksDbHealth {
  uint64_t pending_compaction_bytes = 0;
  uint64_t memtable_bytes = 0;
  uint64_t background_errors = 0;
  bool write_stopped = false;
  uint64_t delayed_write_rate = 0;  // bytes/s while delaying writes, else 0
};

class DocumentStore {
 public:
  // Opens (creating if needed) the database in options.data_dir. Fails when
  // the configuration contradicts what is stored (a container with data that
  // is no longer declared, or a changed partition key path).
  static Result<std::unique_ptr<DocumentStore>> Open(const StoreOptions& options);

  virtual ~DocumentStore() = default;
  DocumentStore(const DocumentStore&) = delete;
  DocumentStore& operator=(const DocumentStore&) = delete;

  virtual const std::vector<ContainerSpec>& containers() const = 0;
  // nullptr when no container has that name.
  virtual const ContainerSpec* FindContainer(std::string_view name) const = 0;
  virtual const StoreOptions& options() const = 0;

  // ---- Items ----
  // Point read. On success *item_json is the stored item (with _etag, _lsn,
  // _ts) and, when item_lsn is given, *item_lsn its _lsn (see storage/etag.h).
  virtual Status Read(std::string_view container, std::string_view partition_key,
                      std::string_view id, std::string* item_json,
                      Lsn* item_lsn = nullptr) const = 0;
  // Runs a query within spec.limits (storage/query_engine.h). *spent, when
  // given, is set to what it cost, also when it fails (query_too_expensive
  // reports the cost so far).
  virtual Result<QueryResult> Query(std::string_view container, const QuerySpec& spec,
                                    QueryCost* spent = nullptr) const = 0;
  // A counter of the logical partition that grows by one with each change
  // made to it, from the moment the change is visible to reads and before
  // it is acknowledged (storage/query_cache.h: partitions may share a
  // counter, so it can also grow by others' changes, never by fewer).
  // nullopt when the store does not keep one (or the container is unknown).
  virtual std::optional<uint64_t> PartitionGeneration(std::string_view /*container*/,
                                                      std::string_view /*partition_key*/) const {
    return std::nullopt;
  }
  // The same for one item: a counter that grows by one with each change made
  // to it, at the same moment (storage/item_generations.h: items may share a
  // counter). nullopt when the store does not keep one.
  virtual std::optional<uint64_t> ItemGeneration(std::string_view /*container*/,
                                                 std::string_view /*partition_key*/,
                                                 std::string_view /*id*/) const {
    return std::nullopt;
  }
  // Queues `request`; `done` runs exactly once with the outcome.
  virtual void Submit(WriteRequest request, WriteCallback done) = 0;
  // Submit() and wait.
  WriteResult Write(WriteRequest request);
  // Queues a processor's effects (see ViewWrite); `done` runs exactly once.
  // The result's failed_index counts ops across all requests.
  virtual void SubmitView(ViewWrite view, WriteCallback done) = 0;
  WriteResult WriteView(ViewWrite view);
  // Queues one batch of a bulk import (see ImportBatch): its requests are
  // applied one by one (a failing one is reported in its result and undoes
  // nothing else) and written as one WriteBatch of their own, in LSN order
  // with every other write. `done` runs exactly once.
  virtual void SubmitImport(ImportBatch batch, ImportCallback done) = 0;
  // SubmitImport() and wait.
  ImportResult WriteImport(ImportBatch batch);

  // ---- Change feed ----
  virtual Lsn HeadLsn() const = 0;
  // The smallest LSN still readable (HeadLsn()+1 when the feed is empty).
  virtual Lsn OldestRetainedLsn() const = 0;
  // Reads committed change records with LSN >= spec.from, in LSN order.
  // lsn_not_retained when spec.from < OldestRetainedLsn().
  virtual Status ReadFeed(const FeedReadSpec& spec, FeedPage* page) const = 0;
  // Calls `fn` once HeadLsn() >= lsn: right away on the caller's thread when
  // it already is, else later on the commit thread. Returns a token for
  // CancelHeadWatch(); cancelling after `fn` ran is harmless. Close()
  // destroys the watches that never fired, without running them.
  virtual uint64_t OnHeadReached(Lsn lsn, std::function<void()> fn) = 0;
  virtual void CancelHeadWatch(uint64_t token) = 0;
  // Hands `listener` the change records of every group committed from now
  // on, in commit order, on the commit thread: after they are durable and
  // before HeadLsn() covers them, so a listener that finds HeadLsn() beyond
  // what it was handed reads the rest with ReadFeed(). Records are built
  // for listeners only while one is registered. Returns a token for
  // RemoveCommitListener(); once that returns, the listener is not called
  // again.
  virtual uint64_t AddCommitListener(CommitListener listener) = 0;
  virtual void RemoveCommitListener(uint64_t token) = 0;
  // The memory the store's CommitTails share for the records they queue
  // (StoreOptions::commit_tail_bytes; storage/commit_tail_budget.h).
  virtual std::shared_ptr<CommitTailBudget> commit_tail_budget() const = 0;

  // ---- Retention low-watermarks ----
  // A registered consumer keeps every change with LSN > its acked LSN from
  // retention. Registration and acks are durable.
  virtual Status RegisterConsumer(const std::string& name, Lsn acked) = 0;
  virtual Status AckConsumer(const std::string& name, Lsn acked) = 0;
  // Also drops the consumer's parked changes.
  virtual Status UnregisterConsumer(const std::string& name) = 0;
  virtual std::vector<ConsumerWatermark> Consumers() const = 0;
  // A consumer's parked changes, by LSN; durable when the call returns, and
  // independent of retention (a parked change keeps its own envelope).
  virtual Status PutParked(const std::string& consumer, const ParkedRecord& parked) = 0;
  virtual Status DeleteParked(const std::string& consumer, Lsn lsn) = 0;
  // In LSN order.
  virtual Result<std::vector<ParkedRecord>> ListParked(const std::string& consumer) const = 0;
  // One retention pass now (it also runs every retention_interval_ms).
  virtual Status EnforceRetention() = 0;

  // ---- Health ----
  // OK while the database is open and writable. Otherwise (reads go on):
  // insufficient_storage while the disk is below its free-space reserve;
  // unavailable while recovering from a failed write, or once closed;
  // storage_error when only a restart can make it writable again.
  virtual Status Health() const = 0;
  virtual StoreStats Stats() const = 0;
  virtual std::vector<ContainerUsage> Usage() const = 0;
  virtual RocksDbHealth RocksHealth() const = 0;
  // Finishes queued writes, stops background threads, closes the database.
  // Later writes fail with `unavailable`. Idempotent.
  virtual void Close() = 0;

 protected:
  DocumentStore() = default;
};

}  // namespace feedd
