// AppliedOffsets: the offsets of one partition a consumer has received, and
// which of them are settled (applied, parked, or nothing to apply). The
// position to commit is the first offset not settled: offsets are committed
// only as a contiguous prefix, so whoever resumes from the committed
// position misses nothing that was not applied. With it goes the LSN of the
// last change in that prefix (the partition's starting LSN until one is
// settled), and the highest resolved marker it passed.
//
// Thread-safety: none; the owner locks.
#pragma once

#include <cstdint>
#include <map>
#include <optional>

#include "storage/change_record.h"

namespace feedd {

class AppliedOffsets {
 public:
  // A partition whose changes up to `last_lsn` are applied.
  explicit AppliedOffsets(Lsn last_lsn = 0) : commit_lsn_(last_lsn) {}

  // The message at `offset`: `lsn` is its change's (0: it carries none),
  // `resolved` the LSN a resolved marker vouches for (0: not one).
  void Receive(int64_t offset, Lsn lsn, Lsn resolved);
  // The message at `offset` is settled; an offset not received is ignored.
  void Settle(int64_t offset);
  // Whether a received offset is not settled yet.
  bool Busy() const;

  struct Position {
    int64_t offset = 0;  // the next offset to consume
    Lsn lsn = 0;         // of the last change before it
  };
  // Passes over the settled prefix; the position to commit when it moved
  // since the last call.
  std::optional<Position> TakeCommit();
  // The highest resolved marker in the prefix passed over (0: none).
  Lsn resolved() const { return resolved_; }

 private:
  struct Pending {
    bool settled = false;
    Lsn lsn = 0;
    Lsn resolved = 0;
  };
  std::map<int64_t, Pending> pending_;  // received, in offset order
  int64_t commit_offset_ = -1;
  Lsn commit_lsn_;
  Lsn resolved_ = 0;
};

}  // namespace feedd
