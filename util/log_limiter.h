// LogLimiter: at most one line per interval from one log statement, so a
// condition that repeats on every request (a store refusing writes, a
// failing checkpoint) cannot flood the journal. The first line after a
// quiet spell says how many similar lines were left out.
//
//   static LogLimiter limiter(std::chrono::seconds(10));
//   if (uint64_t dropped = 0; limiter.Allow(&dropped))
//     FEEDD_LOG(kWarning, "api") << message << LogLimiter::Dropped(dropped);
//
// Thread-safety: Allow() may be called from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>

namespace feedd {

class LogLimiter {
 public:
  explicit LogLimiter(std::chrono::milliseconds interval) : interval_ms_(interval.count()) {}

  // True when a line may be written now; *dropped is then the number of
  // lines refused since the last one allowed.
  bool Allow(uint64_t* dropped) {
    const int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                            std::chrono::steady_clock::now().time_since_epoch())
                            .count();
    int64_t next = next_ms_.load();
    if (now < next || !next_ms_.compare_exchange_strong(next, now + interval_ms_)) {
      ++dropped_;
      return false;
    }
    *dropped = dropped_.exchange(0);
    return true;
  }

  // " (N similar lines left out)" or "".
  static std::string Dropped(uint64_t dropped) {
    if (dropped == 0) return "";
    return " (" + std::to_string(dropped) + " similar lines left out)";
  }

 private:
  const int64_t interval_ms_;
  std::atomic<int64_t> next_ms_{0};
  std::atomic<uint64_t> dropped_{0};
};

}  // namespace feedd
