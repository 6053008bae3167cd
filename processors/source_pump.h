// SourcePump: a thread that takes in-daemon processor instances' changes
// from their ChangeSources and hands them to their appliers. The daemon
// gives each instance a pump of its own (ProcessorManager): one pump for
// the three scenario processors fell behind during an import.
//
// Operation
//   Each member (a ProcessorInstance) gets turns. A turn takes what the
//   member's source holds now, without waiting, and hands it on; it returns
//   when the member wants its next turn at the latest. The pump gives every
//   member a turn whenever it is woken (Wake(): a commit queued records for
//   a source, an applier moved a watermark, an instance was resumed) and
//   whenever a member's time comes, and sleeps in between. So one wake-up
//   per committed group serves every member; a member that is behind reads
//   one batch of the durable feed per turn, and the others get theirs in
//   between.
//
// Thread-safety
//   All methods are thread-safe. Wake() is cheap and may be called from
//   the commit thread. Add() and Remove() must not be called from a turn.
//
// Ownership
//   Borrows the members; each must be removed before it is destroyed, and
//   all before the pump is.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace feedd {

class SourcePump {
 public:
  using Clock = std::chrono::steady_clock;

  class Member {
   public:
    virtual ~Member() = default;
    // One turn, on the pump's thread. Returns when the member wants its
    // next turn at the latest: now (or earlier) for at once,
    // Clock::time_point::max() for only after a Wake().
    virtual Clock::time_point Turn() = 0;
  };

  // Starts the thread, named `thread_name`.
  explicit SourcePump(const std::string& thread_name);
  ~SourcePump();

  SourcePump(const SourcePump&) = delete;
  SourcePump& operator=(const SourcePump&) = delete;

  // `member` gets its first turn at once.
  void Add(Member* member);
  // Returns once `member` is not in a turn; it gets none after.
  void Remove(Member* member);
  // Every member gets a turn soon, and at least one that starts after this
  // call.
  void Wake();

 private:
  void Run();

  std::mutex mutex_;
  std::condition_variable wake_;       // the pump waits here
  std::condition_variable turn_over_;  // Remove() waits here
  std::vector<Member*> members_;       // GUARDED_BY(mutex_)
  Member* in_turn_ = nullptr;          // GUARDED_BY(mutex_)
  // Set by Wake(), cleared as a round begins. Only the Wake() that sets it
  // takes mutex_ to notify: the others of a round (a committed group calls
  // one per instance) cost an atomic exchange.
  std::atomic<bool> woken_{false};
  bool stopping_ = false;  // GUARDED_BY(mutex_)
  std::thread thread_;
};

}  // namespace feedd
