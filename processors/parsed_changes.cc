#include "processors/parsed_changes.h"

namespace feedd {

Result<Change> ParsedChanges::Parse(const ChangeRecord& record) {
  Slot& slot = slots_[record.lsn % slots_.size()];
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (slot.lsn == record.lsn && record.lsn != 0) {
      ++reused_;
      return slot.change;
    }
  }
  Result<Change> change = ParseChange(record.envelope_json);
  ++parsed_;
  if (change.ok() && record.lsn != 0) {
    std::lock_guard<std::mutex> lock(mutex_);
    slot.lsn = record.lsn;
    slot.change = *change;
  }
  return change;
}

}  // namespace feedd
