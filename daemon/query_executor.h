// QueryExecutor: the threads that run API queries, so that a query never
// holds an HTTP I/O thread. However slow the queries in flight, the I/O
// threads keep answering /healthz, /readyz, point reads and writes.
//
// Operation
//   Submit() queues a task for one of `threads` threads. With `max_queued`
//   tasks already waiting it refuses (returns false): the caller answers
//   429 too_many_requests rather than let queries pile up without bound.
//   Stop() refuses new tasks, runs the queued ones on the calling thread
//   with cancelled = true (they answer at once, without querying), then
//   waits for the running ones and joins the threads.
//
// Thread-safety: Submit() from any thread; Stop() from one thread.
// Ownership: tasks are owned by the executor until they have run.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace feedd {

class QueryExecutor {
 public:
  // A task learns whether it was cancelled by Stop() before it could run.
  using Task = std::function<void(bool cancelled)>;

  QueryExecutor(size_t threads, size_t max_queued);
  ~QueryExecutor();  // Stop()
  QueryExecutor(const QueryExecutor&) = delete;
  QueryExecutor& operator=(const QueryExecutor&) = delete;

  // False, without running `task`, when max_queued tasks are waiting or
  // after Stop().
  bool Submit(Task task);
  // See above. Idempotent.
  void Stop();

 private:
  void Run(size_t index);

  const size_t max_queued_;
  std::mutex mu_;
  std::condition_variable wake_;
  std::deque<Task> queue_;  // GUARDED_BY(mu_)
  bool stopping_ = false;   // GUARDED_BY(mu_)
  std::vector<std::thread> threads_;
};

}  // namespace feedd
