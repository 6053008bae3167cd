// ProcessorState: what a processor is doing, as its status reports it (the
// HTTP API's and feedctl's `state`, docs/processors.md). An instance in the
// daemon is starting, running, rebuilding, paused, degraded (changes are
// parked) or stopped; a `feedd worker`'s is starting, running, catching_up
// (reading the durable feed behind Kafka's retention), degraded or stopped.
//
// Thread-safety: plain values and a pure function.
#pragma once

#include <string_view>

namespace feedd {

enum class ProcessorState {
  kStarting,
  kRunning,
  kCatchingUp,
  kRebuilding,
  kPaused,
  kDegraded,
  kStopped,
};

// "starting", "running", "catching_up", "rebuilding", "paused", "degraded",
// "stopped".
std::string_view ProcessorStateName(ProcessorState state);

}  // namespace feedd
