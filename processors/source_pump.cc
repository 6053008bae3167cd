#include "processors/source_pump.h"

#include <algorithm>

#include "util/thread_name.h"

namespace feedd {

SourcePump::SourcePump(const std::string& thread_name) {
  thread_ = std::thread([this, thread_name] {
    SetThreadName(thread_name);
    Run();
  });
}

SourcePump::~SourcePump() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_one();
  thread_.join();
}

void SourcePump::Add(Member* member) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    members_.push_back(member);
  }
  Wake();
}

void SourcePump::Remove(Member* member) {
  std::unique_lock<std::mutex> lock(mutex_);
  members_.erase(std::remove(members_.begin(), members_.end(), member), members_.end());
  turn_over_.wait(lock, [&] { return in_turn_ != member; });
}

void SourcePump::Wake() {
  // Already set: the round that clears it has not begun, and it will see
  // whatever made this call.
  if (woken_.exchange(true)) return;
  // Under the lock: the pump checks woken_ and starts to wait atomically.
  std::lock_guard<std::mutex> lock(mutex_);
  wake_.notify_one();
}

void SourcePump::Run() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stopping_) {
    // Cleared before the turns: a Wake() during them means another round.
    woken_.store(false);
    Clock::time_point next = Clock::time_point::max();
    const std::vector<Member*> round = members_;
    for (Member* member : round) {
      // Removed during an earlier turn of this round.
      if (std::find(members_.begin(), members_.end(), member) == members_.end()) continue;
      in_turn_ = member;
      lock.unlock();
      const Clock::time_point due = member->Turn();
      lock.lock();
      in_turn_ = nullptr;
      turn_over_.notify_all();
      next = std::min(next, due);
    }
    auto woken = [this] { return woken_.load() || stopping_; };
    if (next == Clock::time_point::max()) {
      wake_.wait(lock, woken);
    } else {
      wake_.wait_until(lock, next, woken);
    }
  }
}

}  // namespace feedd
