// Clock: the seam through which feedd reads wall-clock time, so tests can
// drive time (retention, lag) without sleeping.
//
// Thread-safety: implementations must be safe to call from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace feedd {

class Clock {
 public:
  virtual ~Clock() = default;
  // Milliseconds since the Unix epoch.
  virtual uint64_t NowMillis() const = 0;
  // The process-wide real clock.
  static Clock* System();
};

// A clock that only moves when told to. For tests.
class ManualClock : public Clock {
 public:
  explicit ManualClock(uint64_t start_ms) : now_ms_(start_ms) {}
  uint64_t NowMillis() const override { return now_ms_.load(); }
  void Advance(uint64_t ms) { now_ms_ += ms; }

 private:
  std::atomic<uint64_t> now_ms_;
};

}  // namespace feedd
