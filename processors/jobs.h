// JobRegistry: the long operations (the processors' rebuild and verify, a
// bulk import) as jobs a client starts, follows and cancels (docs/api.md,
// "Jobs").
//
// A job has an id (decimal, never reused while the jobs file lasts), a type,
// what it works on (a processor, or a container), a state (running, then
// succeeded, failed or cancelled), its created/started/ended times (epoch
// ms; a job starts when it is created: the executor refuses what it cannot
// start at once), its progress (items done, an estimated total or none, the
// mean rate since it started and the ETA that follows from them; for a job
// that reads bytes, those done and their total too) and its outcome: the
// result (JSON) of a job that succeeded, the error (util/status.h) of one
// that failed or was cancelled, with the partial result of a job that has
// one (an import's report of what it committed).
//
// Life of a job
//   Create() -> the task is submitted -> Admit() (or Withdraw() when the
//   executor refused it) ... Finish(). The task reports through its
//   JobControl: items done, the total, and a stop_token that Cancel()
//   requests (and the task's owner may request for a shutdown). A job is
//   listed and persisted only once admitted.
//
// Persistence
//   Every admitted job is kept in one JSON file (the data directory's
//   jobs.json), rewritten atomically (util/atomic_file.h) when a job is
//   admitted or finishes; progress is kept in memory only until then. Open()
//   reports a job the file still shows running as failed (`unavailable`,
//   "the daemon restarted while the job was running"). A file that cannot
//   be read as jobs is set aside (renamed to <path>.unreadable, logged) and
//   the registry starts empty. At most kMaxFinished finished jobs are kept:
//   the oldest go first. Running jobs are bounded by the executor.
//
// Thread-safety: all methods are thread-safe. A failed write of the file is
// logged (at most once a minute); the jobs stay in memory.
// Ownership: owns the jobs; the clock is borrowed and must outlive it.
#pragma once

#include <atomic>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <utility>
#include <vector>

#include "util/clock.h"
#include "util/logging.h"
#include "util/status.h"

namespace feedd {

enum class JobState { kRunning, kSucceeded, kFailed, kCancelled };
// "running", "succeeded", "failed", "cancelled".
std::string_view JobStateName(JobState state);

struct Job {
  uint64_t id = 0;
  std::string type;       // "rebuild", "verify", "import"
  std::string processor;  // the processor it works on; "" for an import
  std::string container;  // the container it works on; "" for a processor's job
  JobState state = JobState::kRunning;
  uint64_t created_ms = 0, started_ms = 0;
  uint64_t ended_ms = 0;          // 0 while running
  uint64_t done = 0;              // items done
  std::optional<uint64_t> total;  // estimated items; exact (= done) once succeeded
  uint64_t bytes_done = 0;
  std::optional<uint64_t> bytes_total;  // of a job that reads bytes (an import), else none
  bool cancel_requested = false;
  boost::json::value result;  // of a job that succeeded (or a partial one), else null
  Status error;               // of a job that failed or was cancelled, else OK
};

// The mean rate since the job started (items per second, 0 before any
// time has passed) and the seconds left at that rate: nullopt when the
// total is unknown, nothing is done yet, the estimate is already reached,
// or the job has ended.
struct JobRate {
  double per_second = 0;
  std::optional<double> eta_seconds;
};
JobRate RateOf(const Job& job, uint64_t now_ms);

// The job object of docs/api.md ("Jobs"), its rate and ETA at `now_ms`.
boost::json::object JobJson(const Job& job, uint64_t now_ms);

// The live side of a running job, shared by the registry and its task.
class JobControl {
 public:
  uint64_t id() const { return id_; }
  // Requested by Cancel(), or by RequestStop() (the daemon shutting down).
  std::stop_token stop_token() const { return stop_.get_token(); }
  void RequestStop() { stop_.request_stop(); }
  bool cancel_requested() const { return cancel_requested_.load(); }
  void AddDone(uint64_t items) { done_ += items; }
  void SetTotal(std::optional<uint64_t> total) {
    total_ = total ? static_cast<int64_t>(*total) : -1;
  }
  void AddBytesDone(uint64_t bytes) { bytes_done_ += bytes; }
  void SetBytesTotal(uint64_t bytes) { bytes_total_ = static_cast<int64_t>(bytes); }

 private:
  friend class JobRegistry;
  explicit JobControl(uint64_t id) : id_(id) {}

  const uint64_t id_;
  std::stop_source stop_;
  std::atomic<bool> cancel_requested_{false};
  std::atomic<uint64_t> done_{0};
  std::atomic<int64_t> total_{-1};  // -1: unknown
  std::atomic<uint64_t> bytes_done_{0};
  std::atomic<int64_t> bytes_total_{-1};  // -1: not a job that reads bytes
};

class JobRegistry {
 public:
  // Finished jobs kept (in memory and in the file), the newest.
  static constexpr size_t kMaxFinished = 100;

  // Loads the jobs kept in `path` (none when it does not exist), reports
  // those still running as failed and rewrites the file. Fails only when
  // the file exists and cannot be read (permissions, I/O) or rewritten.
  static Result<std::unique_ptr<JobRegistry>> Open(std::string path, Clock* clock);

  // A new running job on a processor (or, with `container`, on a
  // container), neither listed nor persisted until Admit().
  std::shared_ptr<JobControl> Create(std::string type, std::string processor,
                                     std::string container = "");
  // Lists and persists it.
  void Admit(uint64_t id);
  // Forgets a job that was never admitted (its task did not start).
  void Withdraw(uint64_t id);
  // Ends a job: succeeded with `outcome`'s value; cancelled when its error
  // is kCancelled; failed otherwise. Its total becomes its items done when
  // it succeeded. Then drops the oldest finished jobs past kMaxFinished.
  void Finish(uint64_t id, Result<boost::json::value> outcome);
  // Ends a job that did not succeed (`error` not OK) with the partial
  // result it has (e.g. what an import committed before it was cancelled).
  void Finish(uint64_t id, Status error, boost::json::value partial_result);

  // An admitted job, as it is now; nullopt when unknown.
  std::optional<Job> Get(uint64_t id) const;
  // The admitted jobs, newest first.
  std::vector<Job> List() const;
  // Asks a running job to stop (it ends `cancelled` once its task sees it):
  // the job as it is now; not_found for an unknown id, conflict when it has
  // already finished.
  Result<Job> Cancel(uint64_t id);

  Clock* clock() const { return clock_; }
  size_t running() const;
  // Jobs finished since Open() (reloaded running jobs included), by
  // (type, state name).
  std::map<std::pair<std::string, std::string>, uint64_t> finished_counts() const;

 private:
  struct Entry {
    Job job;
    std::shared_ptr<JobControl> control;  // while running
    bool admitted = false;
  };

  JobRegistry(std::string path, Clock* clock) : path_(std::move(path)), clock_(clock) {}
  void FinishWith(uint64_t id, Result<boost::json::value> outcome,
                  boost::json::value partial_result);
  Status Load(const std::string& text);
  Job SnapshotLocked(const Entry& entry) const;
  void PruneLocked();
  // Rewrites the file with the admitted jobs.
  Status Persist();

  const std::string path_;
  Clock* const clock_;
  std::mutex file_mu_;  // serializes Persist(); taken before mu_
  mutable std::mutex mu_;
  uint64_t next_id_ = 1;                                              // GUARDED_BY(mu_)
  std::map<uint64_t, Entry> jobs_;                                    // GUARDED_BY(mu_), by id
  std::map<std::pair<std::string, std::string>, uint64_t> finished_;  // GUARDED_BY(mu_)
  LogRateLimiter persist_errors_{std::chrono::minutes(1)};
};

}  // namespace feedd
