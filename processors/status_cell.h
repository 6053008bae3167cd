// StatusCell: the state (processors/processor_state.h) and last error of a
// processor, as its status reports them. SetError() also logs the error
// (at most one line a second per processor).
//
// Thread-safety: all methods are thread-safe.
#pragma once

#include <mutex>
#include <string>
#include <utility>

#include "processors/processor_state.h"
#include "util/logging.h"

namespace feedd {

class StatusCell {
 public:
  // `component` and `name` prefix the logged errors ("processor", "feed").
  StatusCell(std::string component, std::string name)
      : component_(std::move(component)), name_(std::move(name)) {}

  void SetState(ProcessorState state) {
    std::lock_guard<std::mutex> lock(mutex_);
    state_ = state;
  }
  void SetError(const std::string& error) {
    if (uint64_t suppressed = 0;
        LogEnabled(LogLevel::kWarning) && log_limiter_.Allow(&suppressed)) {
      LogLine(LogLevel::kWarning, component_, suppressed) << name_ << ": " << error;
    }
    std::lock_guard<std::mutex> lock(mutex_);
    last_error_ = error;
  }
  // {state, last error}.
  std::pair<ProcessorState, std::string> Get() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return {state_, last_error_};
  }

 private:
  const std::string component_, name_;
  LogRateLimiter log_limiter_{std::chrono::seconds(1)};  // a failing store fails every attempt
  mutable std::mutex mutex_;
  ProcessorState state_ = ProcessorState::kStarting;
  std::string last_error_;
};

}  // namespace feedd
