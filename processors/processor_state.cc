#include "processors/processor_state.h"

namespace feedd {

std::string_view ProcessorStateName(ProcessorState state) {
  switch (state) {
    case ProcessorState::kStarting:
      return "starting";
    case ProcessorState::kRunning:
      return "running";
    case ProcessorState::kCatchingUp:
      return "catching_up";
    case ProcessorState::kRebuilding:
      return "rebuilding";
    case ProcessorState::kPaused:
      return "paused";
    case ProcessorState::kDegraded:
      return "degraded";
    case ProcessorState::kStopped:
      return "stopped";
  }
  return "unknown";
}

}  // namespace feedd
