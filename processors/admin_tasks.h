// AdminTasks: the bounded executor of the processors' long administrative
// operations (POST /v1/processors/{name}/rebuild and /verify).
//
// Operation
//   Submit() runs a task on a thread of its own, keyed by what it works on
//   (the processor's name). It refuses, without running anything:
//     kOperationInProgress (409)  a task with the same key is running;
//     kTooManyRequests (429)      max_running tasks are running;
//     kUnavailable (503)          Shutdown() has begun.
//   A task returns its answer (a callable, may be empty), which runs after
//   the task's key and slot are released: a client answered by it may ask
//   again at once. A thread lives only until its answer has run, and is
//   joined by the next Submit() or by Shutdown(), so threads stay bounded
//   (max_running working, plus those still answering) however many
//   operations are asked for.
//   Shutdown() requests stop on every task's std::stop_token (a task checks
//   it in its waits and returns early), then joins them all.
//
// Thread-safety: all methods may be called from any thread, including from
// an answer; Shutdown() not from a task or an answer (it would join itself).
// Ownership: owns the task threads. Whatever a task references must outlive
// Shutdown() (or the destructor, which calls it): the ProcessorManager
// shuts it down before it stops its instances, and the daemon before it
// stops the HTTP server and the manager.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "util/status.h"

namespace feedd {

class AdminTasks {
 public:
  using Answer = std::function<void()>;
  using Task = std::function<Answer(std::stop_token)>;

  // REQUIRES: max_running > 0.
  explicit AdminTasks(size_t max_running);
  ~AdminTasks();

  AdminTasks(const AdminTasks&) = delete;
  AdminTasks& operator=(const AdminTasks&) = delete;

  // Starts `task` under `key`, or refuses it (see above).
  Status Submit(const std::string& key, Task task);

  // Refuses new tasks, asks the running ones to stop, and joins them.
  // Idempotent.
  void Shutdown();

  size_t max_running() const { return max_running_; }
  size_t running() const;
  uint64_t refused_in_progress() const;
  uint64_t refused_too_many() const;

 private:
  void JoinFinishedLocked();

  const size_t max_running_;
  mutable std::mutex mu_;
  bool shut_down_ = false;                    // GUARDED_BY(mu_)
  uint64_t next_thread_ = 0;                  // GUARDED_BY(mu_)
  std::map<uint64_t, std::jthread> threads_;  // GUARDED_BY(mu_)
  std::vector<uint64_t> finished_;            // GUARDED_BY(mu_): threads whose answer has run
  std::set<std::string> running_keys_;        // GUARDED_BY(mu_): keys of tasks not yet returned
  uint64_t refused_in_progress_ = 0;          // GUARDED_BY(mu_)
  uint64_t refused_too_many_ = 0;             // GUARDED_BY(mu_)
};

}  // namespace feedd
