// LsnWatchers: one-shot callbacks waiting for a monotonically increasing
// sequence number (an LSN) to reach a value. Used for the store's head LSN
// (long polls) and processors' applied LSNs (read-your-writes).
//
// Thread-safety: all methods are thread-safe. Callbacks run on the thread
// that calls Advance() (or Watch(), when already reached), outside the lock.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

namespace feedd {

class LsnWatchers {
 public:
  explicit LsnWatchers(uint64_t initial = 0) : value_(initial) {}

  uint64_t value() const { return value_.load(std::memory_order_acquire); }

  // Calls `fn` once value() >= target. Returns a token for Cancel().
  uint64_t Watch(uint64_t target, std::function<void()> fn) {
    std::unique_lock<std::mutex> lock(mutex_);
    uint64_t token = next_token_++;
    if (value() >= target) {
      lock.unlock();
      fn();
      return token;
    }
    watchers_.emplace(target, std::make_pair(token, std::move(fn)));
    return token;
  }

  // Forgets a watch that has not fired; harmless after it fired.
  void Cancel(uint64_t token) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto it = watchers_.begin(); it != watchers_.end(); ++it) {
      if (it->second.first == token) {
        watchers_.erase(it);
        return;
      }
    }
  }

  // Moves the value forward (never back) and fires the watches it reaches.
  void Advance(uint64_t value) {
    std::vector<std::function<void()>> ready;
    {
      std::lock_guard<std::mutex> lock(mutex_);  // Watch() cannot miss this
      if (value <= value_.load()) return;
      value_.store(value, std::memory_order_release);
      auto end = watchers_.upper_bound(value);
      for (auto it = watchers_.begin(); it != end; ++it)
        ready.push_back(std::move(it->second.second));
      watchers_.erase(watchers_.begin(), end);
    }
    for (auto& fn : ready) fn();
  }

  // Drops every pending watch without running it.
  void Clear() {
    std::lock_guard<std::mutex> lock(mutex_);
    watchers_.clear();
  }

 private:
  std::atomic<uint64_t> value_;
  std::mutex mutex_;
  uint64_t next_token_ = 1;
  std::multimap<uint64_t, std::pair<uint64_t, std::function<void()>>> watchers_;
};

}  // namespace feedd
