// ProcessorInstance: one configured processor ([processor.<name>]) running a
// ProcessorKind inside the daemon (docs/processors.md).
//
// Operation
//   On its turns on a SourcePump (in the daemon, a thread of its own), the
//   instance takes changes from a ChangeSource - in the daemon a
//   CommitChangeSource: in-process from the commit path, and from the
//   durable feed for start-up and catch-up - and dispatches those of the
//   kind's source containers to worker threads by the kind's ordering key
//   (same key: same worker, in order); other containers' changes count as
//   applied at once. A worker applies a change through a StoreViewContext
//   and commits the staged view writes in one WriteBatch with the
//   instance's applied watermark W (every change <= W is applied). W is the
//   instance's retention low-watermark too, so the feed keeps what it has
//   not applied, and it is acknowledged to the source as it moves. Apply is
//   level-triggered and idempotent, so after a crash the changes above the
//   recorded W are simply applied again.
//
//   A change whose apply fails is retried with exponential backoff; after
//   `max_attempts` it is parked with every later change of its ordering key
//   (other keys keep flowing) until ReplayParked(). A parked change is kept
//   in the store with its envelope (DocumentStore::PutParked) and then
//   counts as done for W, so it holds neither W nor retention; it stays
//   parked across restarts, and is forgotten once a replay applies it.
//
// Concurrency
//   All public methods are thread-safe. OnApplied() callbacks run on a
//   worker thread or the pump's and must be short.
//
// Ownership
//   Borrows the DocumentStore and the SourcePump, which must outlive the
//   instance; owns the source.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "processors/change_source.h"
#include "processors/keyed_applier.h"
#include "processors/processor_kind.h"
#include "processors/processor_state.h"
#include "processors/progress_view_context.h"
#include "processors/source_pump.h"
#include "storage/document_store.h"
#include "util/clock.h"

namespace feedd {

// Where an instance runs: in the daemon (ProcessorInstance) or in `feedd
// worker` processes (ProcessorWorker).
enum class ProcessorHost { kDaemon, kWorker };

struct ProcessorConfig {
  std::string name;
  std::string kind;
  ProcessorHost host = ProcessorHost::kDaemon;
  size_t parallelism = 4;                       // worker threads
  int max_attempts = 5;                         // before a change is parked
  std::chrono::milliseconds retry_backoff{50};  // doubled per attempt
  // Back-pressure: the source takes no more changes while max_in_flight
  // are handed to the appliers and not applied, or while max_tracked LSNs
  // above W are remembered (applied ones wait there for an earlier change:
  // those a kind passes over no longer count as in flight).
  size_t max_in_flight = 20000;
  size_t max_tracked = 200000;
  // Each of the two view read memos (processors/view_read_memo.h) keeps at
  // most this many bytes: the setting read_memo_mb.
  size_t read_memo_bytes = 128u << 20;
  ProcessorSettings settings;  // the kind's settings
  // Where lag and commit-to-view latency are measured from (the store's
  // clock stamps the changes); not owned.
  Clock* clock = Clock::System();
  // Called after a change's view writes commit, with the seconds since the
  // change itself was committed (for the commit-to-view histogram).
  std::function<void(double seconds)> on_view_committed;
};

// Reports a change's commit-to-view latency to config.on_view_committed,
// when it wrote something.
void ObserveViewCommitted(const ProcessorConfig& config, const Change& change, size_t writes);

struct ProcessorStatus {
  std::string name, kind;
  std::string source;  // "local": changes come in-process (CommitChangeSource)
  // starting, running, rebuilding, degraded (parked), paused, stopped
  ProcessorState state = ProcessorState::kStarting;
  Lsn applied_lsn = 0;
  uint64_t lag_changes = 0;  // head LSN - applied LSN
  uint64_t pending = 0;      // changes received and not yet applied
  double lag_seconds = 0;    // age of the oldest unapplied change
  uint64_t applied = 0;      // changes applied (including no-ops)
  uint64_t view_writes = 0;  // derived items written
  // Of `applied`, counted without an applier: outside the kind's concern
  // (ConcernFilters()), or already applied (AppliedAlready()).
  uint64_t passed_over_outside_concern = 0, passed_over_applied_already = 0;
  uint64_t batches = 0;       // runs of changes applied with one commit
  uint64_t errors = 0;        // failed attempts
  uint64_t parked = 0;        // parked now
  uint64_t parked_total = 0;  // ever parked
  uint64_t rebuilds = 0;      // rebuilds finished
  // Changes handed over in-process by the commit path / read from the
  // durable feed (start-up, catch-up). A worker reports neither.
  uint64_t from_commit_path = 0;
  bool paused = false;  // by Pause(), whatever the state
  uint64_t from_durable_feed = 0;
  uint64_t collisions = 0;  // copies refused: their target is not derived from the same source
  // Reads answered from / missed by the ViewReadMemos: single-partition
  // queries, point reads.
  struct MemoCounts {
    uint64_t hits = 0, misses = 0;
    uint64_t bytes = 0;  // held now
  };
  MemoCounts view_query_memo, view_item_memo;
  std::string last_error;
};

class ProcessorInstance {
 public:
  static constexpr const char* kConsumerPrefix = "processor.";
  // The store consumer (retention watermark) of the processor `name`.
  static std::string ConsumerName(const std::string& name) { return kConsumerPrefix + name; }

  ProcessorInstance(DocumentStore* store, SourcePump* pump, ProcessorConfig config,
                    std::unique_ptr<ProcessorKind> kind, std::unique_ptr<ChangeSource> source);
  ~ProcessorInstance();

  // Registers the watermark; a new instance first derives its view from the
  // existing data (Rebuild). Then starts the source and workers.
  Status Start();
  void Stop();

  const std::string& name() const;
  const ProcessorKind& kind() const;
  ProcessorStatus GetStatus() const;
  Lsn applied() const;

  // Calls `fn` once every change <= lsn is applied. Returns a token.
  uint64_t OnApplied(Lsn lsn, std::function<void()> fn);
  void CancelApplied(uint64_t token);

  // The parked changes in LSN order. A replayed change is listed until it
  // is applied (or parked again).
  std::vector<ParkedChange> Parked() const;
  // The parked change with the smallest LSN, when that LSN is <= at_or_below.
  std::optional<ParkedChange> OldestParked(Lsn at_or_below) const;
  // Stops (or resumes) taking changes from the source: no change committed
  // after Pause() returns is taken until Resume(); those taken before are
  // still applied. Views, W and read-your-writes waits stand still
  // meanwhile, and the feed keeps what the instance has not applied. A
  // restart resumes.
  void Pause();
  void Resume();

  // Applies every change after `lsn` again, as Kafka Connect's offset reset
  // does: the instance's position and its recorded watermark move back to
  // `lsn` and the changes after it are applied once more (idempotently).
  // The applied LSN that read-your-writes waits for does not move back: the
  // view already shows those changes. Parked changes stay parked. Refuses
  // an `lsn` above the applied LSN (invalid_request: skipping changes would
  // leave the view wrong; rebuild instead) and one whose successor the feed
  // no longer retains (lsn_not_retained); operation_in_progress while a
  // rebuild runs (it does not wait for one).
  Status ResetTo(Lsn lsn);

  // Retries every parked change, in order per key. Returns how many.
  size_t ReplayParked();
  // Derives the view from scratch and continues from the head at its start.
  // `run` (progress_view_context.h) counts the source items read and may
  // cancel it: kCancelled, and nothing more is committed (what earlier
  // steps of a large difference committed stays; the watermark and the
  // parked changes stay as they were).
  Status Rebuild(const AdminRun& run = {});
  // Waits (up to `wait`: lsn_wait_timeout, or until `run.stop` is
  // requested: kCancelled) until the changes up to the current head are
  // applied, then recomputes the view and lists every difference, counting
  // the source items read to `run`.
  Result<std::vector<std::string>> Verify(std::chrono::milliseconds wait, const AdminRun& run = {});
  // RocksDB's estimate of the items of the kind's source containers (what a
  // rebuild or verify reads, roughly): a job's progress total.
  uint64_t EstimatedSourceItems() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace feedd
