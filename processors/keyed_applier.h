// KeyedApplier: the worker threads of a processor, shared by the in-daemon
// ProcessorInstance and the out-of-process ProcessorWorker.
//
// Dispatch() routes a change by the kind's ordering key: changes with equal
// keys are applied one at a time, in dispatch order, by one thread; other
// keys proceed in parallel. A key stays with the thread it was routed to
// while any of its changes is queued there or being applied; a key with
// none goes to the least loaded thread (ties: the lowest), and the changes
// of one Dispatch() call that need a thread go to the same one, MaxBatch()
// at a time. So a run of changes dispatched to an idle applier is taken by
// one thread, with one wake-up, as one batch; the other threads take what
// comes while it is busy; and a slow key holds up its own later changes and
// what was queued behind it, but no key that arrives while another thread is
// idle. A change is applied through the
// ApplyFn (which commits its effects). With an ApplyBatchFn and a kind whose
// MaxBatch() is above 1, the changes queued at the front of a thread's queue
// (up to MaxBatch(), whatever their keys; those of one key in order) are
// applied by one call (one commit); if that fails they go through the
// ApplyFn one by one, so what follows holds per change. A failure is
// retried with exponential backoff, and after `max_attempts` the change is
// parked together with every later change of its key (order kept) until
// ReplayParked(). Other keys keep flowing, and Options::on_parked lets the
// owner record a parked change and count it as done for its watermark.
// Nothing is dropped except by Stop(), whose owner re-reads from its last
// recorded position.
//
// Thread-safety: Dispatch(), Park(), Parked(), ReplayParked() and the
// counters may be called from any thread, but not concurrently with Start()
// or Stop(), which the owner serializes. ApplyFn / DoneFn / ErrorFn run on
// the worker threads.
// Ownership: borrows the kind, which must outlive the applier.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "processors/processor_kind.h"

namespace feedd {

struct ParkedChange {
  std::string key;  // ordering key
  Lsn lsn = 0;
  std::string container, partition_key, id;
  std::string error;  // of the last attempt (empty for changes parked behind it)
};

class KeyedApplier {
 public:
  struct Options {
    std::string name;  // the processor, for logs
    size_t parallelism = 4;
    int max_attempts = 5;
    std::chrono::milliseconds retry_backoff{50};  // doubled per attempt
    // Failures that say nothing about the change (e.g. the daemon is
    // restarting): retried without counting as attempts, the backoff capped
    // at 5 s, until they pass or the applier stops. Never parked for them.
    std::function<bool(const Status&)> transient;
    // Failures that retrying cannot fix (a collision, ViewContext.h): the
    // change is parked after its first attempt.
    std::function<bool(const Status&)> permanent;
    // After a change was parked (by Park(), after its last attempt, or
    // behind an earlier parked change of its key), with its error (empty
    // behind another): on the parking thread, under the applier's park lock
    // (so a replay cannot overtake it; it must not call the applier). Not
    // for Restore(). The owner uses it to keep the change and move past it.
    std::function<void(const Change&, const std::string& error)> on_parked;
  };
  // Applies one change and commits its effects; OK when they are committed.
  using ApplyFn = std::function<Status(const Change&)>;
  // Applies changes in order and commits their effects together.
  using ApplyBatchFn = std::function<Status(const std::vector<Change>&)>;
  // After a change was applied (its effects committed).
  using DoneFn = std::function<void(const Change&)>;
  // After each failed attempt, with a description.
  using ErrorFn = std::function<void(const std::string&)>;

  // `apply_batch` may be empty: every change then goes through `apply`.
  KeyedApplier(const ProcessorKind* kind, Options options, ApplyFn apply, DoneFn done,
               ErrorFn on_error, ApplyBatchFn apply_batch = nullptr);
  ~KeyedApplier();
  KeyedApplier(const KeyedApplier&) = delete;
  KeyedApplier& operator=(const KeyedApplier&) = delete;

  void Start();
  // Finishes the change each thread is applying and drops the queues.
  void Stop();

  // Queues `change` for its key's thread; dropped when stopped.
  void Dispatch(Change change);
  // Dispatch() of each, in order, waking each thread once.
  void Dispatch(std::vector<Change> changes);
  // Parks `change` (and later changes of its key) without applying it.
  void Park(Change change, const std::string& error);
  // Parks again a change that was parked before a restart, in LSN order per
  // key, without Options::on_parked.
  void Restore(Change change, const std::string& error);

  std::vector<ParkedChange> Parked() const;
  // Puts every parked change back in front of its thread's queue, in order
  // per key. Returns how many.
  size_t ReplayParked();
  void ClearParked();

  uint64_t parked() const { return parked_count_.load(); }
  uint64_t parked_total() const { return parked_total_.load(); }
  uint64_t errors() const { return errors_.load(); }
  // Batches of more than one change applied with one commit.
  uint64_t batches() const { return batches_.load(); }

 private:
  // A change with its ordering key, computed once when it is routed.
  struct Routed {
    std::string key;
    Change change;
  };
  struct Worker {
    std::mutex mutex;
    std::condition_variable wake;
    std::deque<Routed> queue;
    std::thread thread;
    size_t load = 0;  // changes routed here and not finished; GUARDED_BY(route_mutex_)
  };
  // Where a key's changes go while any of them is unfinished.
  struct Route {
    size_t worker = 0;
    size_t unfinished = 0;
  };
  struct ParkedEntry {
    Change change;
    std::string error;
  };

  // The thread for changes of keys without a route: the one with the
  // fewest unfinished changes, the lowest of equals. REQUIRES: route_mutex_
  // held.
  size_t ChooseWorkerLocked() const;
  // The thread for `key`, counted as holding one more of its changes:
  // the key's route, else `*fresh` (ChooseWorkerLocked() when it is
  // SIZE_MAX, and again after every MaxBatch() changes given to it).
  // REQUIRES: route_mutex_ held.
  size_t RouteLocked(const std::string& key, size_t* fresh, size_t* fresh_given);
  // Counts the changes of `keys` on thread `worker` as finished.
  void Finished(size_t worker, const std::vector<std::string>& keys);
  void WorkerLoop(size_t index);
  void ApplyOrPark(const std::string& key, Change change);
  // Applies what WorkerLoop() took from a queue, one change or a batch;
  // `keys[i]` is the ordering key of `batch[i]`.
  void ApplyBatchOrEach(const std::vector<std::string>& keys, std::vector<Change> batch);
  bool ApplyWithRetries(const Change& change, std::string* error);
  bool ParkIfKeyParked(const std::string& key, Change& change);
  void ParkWithKey(const std::string& key, Change change, const std::string& error);
  // Options::on_parked; REQUIRES: park_mutex_ held.
  void ReportParked(const Change& change, const std::string& error);

  const ProcessorKind* const kind_;
  const Options options_;
  const ApplyFn apply_;
  const DoneFn done_;
  const ErrorFn on_error_;
  const ApplyBatchFn apply_batch_;
  const size_t max_batch_;

  std::atomic<bool> stopping_{true};
  std::vector<std::unique_ptr<Worker>> workers_;

  std::mutex route_mutex_;                         // taken before a Worker::mutex, never after
  std::unordered_map<std::string, Route> routes_;  // GUARDED_BY(route_mutex_)

  mutable std::mutex park_mutex_;
  std::map<std::string, std::deque<ParkedEntry>> parked_;  // by ordering key
  std::atomic<uint64_t> parked_count_{0};
  std::atomic<uint64_t> parked_total_{0};
  std::atomic<uint64_t> errors_{0};
  std::atomic<uint64_t> batches_{0};
};

}  // namespace feedd
