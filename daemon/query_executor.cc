#include "daemon/query_executor.h"

#include "util/thread_name.h"

namespace feedd {

QueryExecutor::QueryExecutor(size_t threads, size_t max_queued) : max_queued_(max_queued) {
  for (size_t i = 0; i < threads; ++i) threads_.emplace_back([this, i] { Run(i); });
}

QueryExecutor::~QueryExecutor() { Stop(); }

bool QueryExecutor::Submit(Task task) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ || queue_.size() >= max_queued_) return false;
    queue_.push_back(std::move(task));
  }
  wake_.notify_one();
  return true;
}

void QueryExecutor::Stop() {
  std::deque<Task> queued;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return;
    stopping_ = true;
    queued.swap(queue_);
  }
  wake_.notify_all();
  for (Task& task : queued) task(/*cancelled=*/true);
  for (std::thread& thread : threads_) thread.join();
  threads_.clear();
}

void QueryExecutor::Run(size_t index) {
  SetThreadName("feedd-query-" + std::to_string(index));
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping: Stop() took what was queued
    Task task = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    task(/*cancelled=*/false);
    lock.lock();
  }
}

}  // namespace feedd
