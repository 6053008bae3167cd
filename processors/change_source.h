// ChangeSource: where a processor instance takes the change feed from.
//
// Contract
//   Seek(from) positions the source. NextBatch() then returns the records
//   that follow, in LSN order and contiguous: every LSN from the position
//   on, once, of every container (the instance passes over the changes of
//   containers it does not read, so that its applied watermark moves past
//   them). Acknowledge(through) tells the source that every change <=
//   `through` is applied; the source keeps that as the restart position,
//   and Sync() makes the last acknowledgement durable now. NextBatch()
//   never waits: the source calls its ready callback when one that came
//   back empty may now find records.
//
// Thread-safety
//   The ready callback may be called from any thread (the commit thread);
//   the methods from one thread at a time (the SourcePump's, while the
//   instance runs).
#pragma once

#include <functional>
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

  // `ready` is called whenever records may have come that a NextBatch()
  // would find: short, and from any thread. Set before the first Seek().
  virtual void SetReadyCallback(std::function<void()> ready) = 0;
  // The next NextBatch() starts at `from`.
  virtual void Seek(Lsn from) = 0;
  // Replaces *out with the records after the position that are committed
  // now: `max` of them, or fewer only when that is all there is (empty
  // when there is none).
  virtual Status NextBatch(size_t max, std::vector<SharedChangeRecord>* out) = 0;
  // Every change <= through is applied. Cheap: the source may record it
  // later (at the latest on Sync()). Not OK when recording failed; a later
  // call tries again.
  virtual Status Acknowledge(Lsn through) = 0;
  virtual Status Sync() = 0;

  virtual ChangeSourceCounts counts() const = 0;
};

}  // namespace feedd
