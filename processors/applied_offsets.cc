#include "processors/applied_offsets.h"

#include <algorithm>

namespace feedd {

void AppliedOffsets::Receive(int64_t offset, Lsn lsn, Lsn resolved) {
  Pending& pending = pending_[offset];
  pending.lsn = lsn;
  pending.resolved = resolved;
}

void AppliedOffsets::Settle(int64_t offset) {
  auto it = pending_.find(offset);
  if (it != pending_.end()) it->second.settled = true;
}

bool AppliedOffsets::Busy() const {
  return std::any_of(pending_.begin(), pending_.end(),
                     [](const auto& entry) { return !entry.second.settled; });
}

std::optional<AppliedOffsets::Position> AppliedOffsets::TakeCommit() {
  bool moved = false;
  while (!pending_.empty() && pending_.begin()->second.settled) {
    const auto& [offset, pending] = *pending_.begin();
    commit_offset_ = offset + 1;
    if (pending.lsn != 0) commit_lsn_ = pending.lsn;
    resolved_ = std::max(resolved_, pending.resolved);
    pending_.erase(pending_.begin());
    moved = true;
  }
  if (!moved) return std::nullopt;
  return Position{commit_offset_, commit_lsn_};
}

}  // namespace feedd
