// ChangeSource: where a processor instance takes the change feed from.
//
// Contract
//   Seek(from) positions the source. NextBatch() then returns the records
//   that follow, in LSN order and contiguous: every LSN from the position
//   on, once, of every container (the instance passes over the changes of
//   containers it does not read, so that its applied watermark moves past
//   them). Acknowledge(through) tells the source that every change <=
//   `through` is applied; the source keeps that as the restart position,
//   and Sync() makes the last acknowledgement durable now.
//
// Thread-safety
//   Interrupt() may be called from any thread; the other methods from one
//   thread at a time (the instance's source thread).
#pragma once

#include <chrono>
#include <vector>

#include "storage/change_record.h"
#include "util/status.h"

namespace feedd {

// What a source has handed out, by where it came from.
struct ChangeSourceCounts {
  uint64_t in_process = 0;  // from the commit path, in memory
  uint64_t from_feed = 0;   // read from the durable feed (start-up, catch-up)
};

class ChangeSource {
 public:
  virtual ~ChangeSource() = default;

  // The next NextBatch() starts at `from`.
  virtual void Seek(Lsn from) = 0;
  // Replaces *out with the records after the position (at most `max`, at
  // least one when any is committed), waiting up to `wait` for one to be
  // committed. Empty after the wait, or at once after Interrupt().
  virtual Status NextBatch(size_t max, std::chrono::milliseconds wait,
                           std::vector<ChangeRecord>* out) = 0;
  // Every change <= through is applied. Cheap: the source may record it
  // later (at the latest on Sync()). Not OK when recording failed; a later
  // call tries again.
  virtual Status Acknowledge(Lsn through) = 0;
  virtual Status Sync() = 0;
  // Makes a waiting NextBatch() return now, and every later one until the
  // next Seek().
  virtual void Interrupt() = 0;

  virtual ChangeSourceCounts counts() const = 0;
};

}  // namespace feedd
