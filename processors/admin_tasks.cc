#include "processors/admin_tasks.h"

#include <utility>

#include "util/thread_name.h"

namespace feedd {

AdminTasks::AdminTasks(size_t max_running) : max_running_(max_running) {}

AdminTasks::~AdminTasks() { Shutdown(); }

void AdminTasks::JoinFinishedLocked() {
  // Their answers have run: join() only waits for the threads to exit.
  for (uint64_t id : finished_) {
    auto it = threads_.find(id);
    if (it != threads_.end()) {
      it->second.join();
      threads_.erase(it);
    }
  }
  finished_.clear();
}

Status AdminTasks::Submit(const std::string& key, Task task) {
  std::lock_guard<std::mutex> lock(mu_);
  JoinFinishedLocked();
  if (shut_down_) return Status(ErrorCode::kUnavailable, "the daemon is shutting down");
  if (running_keys_.count(key) != 0) {
    ++refused_in_progress_;
    return Status(ErrorCode::kOperationInProgress,
                  "an operation on " + key + " is already running; retry when it has finished");
  }
  if (running_keys_.size() >= max_running_) {
    ++refused_too_many_;
    return Status(ErrorCode::kTooManyRequests,
                  std::to_string(max_running_) +
                      " administrative operations are running (processors.max_admin_tasks); "
                      "retry later");
  }
  const uint64_t id = next_thread_++;
  running_keys_.insert(key);
  threads_.emplace(id, std::jthread([this, id, key, task = std::move(task)](std::stop_token stop) {
                     SetThreadName("admin");
                     Answer answer = task(std::move(stop));
                     {
                       std::lock_guard<std::mutex> l(mu_);
                       running_keys_.erase(key);
                     }
                     if (answer) answer();
                     std::lock_guard<std::mutex> l(mu_);
                     if (!shut_down_) finished_.push_back(id);
                   }));
  return Status::Ok();
}

void AdminTasks::Shutdown() {
  std::map<uint64_t, std::jthread> threads;
  {
    std::lock_guard<std::mutex> lock(mu_);
    shut_down_ = true;
    threads = std::move(threads_);
    threads_.clear();
    finished_.clear();
  }
  for (auto& [id, thread] : threads) thread.request_stop();
  threads.clear();  // ~jthread joins
}

size_t AdminTasks::running() const {
  std::lock_guard<std::mutex> lock(mu_);
  return running_keys_.size();
}

uint64_t AdminTasks::refused_in_progress() const {
  std::lock_guard<std::mutex> lock(mu_);
  return refused_in_progress_;
}

uint64_t AdminTasks::refused_too_many() const {
  std::lock_guard<std::mutex> lock(mu_);
  return refused_too_many_;
}

}  // namespace feedd
