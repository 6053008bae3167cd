// ParsedChanges: change records parsed once for all the in-daemon processor
// instances. Their sources take the same records at about the same time (the
// commit path hands every group to each of them), so the first instance to
// ask for a record parses it and the others get the same Change, whose
// images are shared and immutable (processors/change.h), instead of parsing
// the envelope again.
//
// Bounded: the last parse of each LSN modulo kSlots is kept; an older record
// (an instance far behind the others) is parsed again. Within a daemon's
// lifetime an LSN names one record, so an LSN is the key.
//
// Thread-safety: thread-safe. Parsing happens outside the lock.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <vector>

#include "processors/change.h"
#include "storage/change_record.h"

namespace feedd {

class ParsedChanges {
 public:
  static constexpr size_t kSlots = 8192;

  ParsedChanges() : slots_(kSlots) {}

  // ParseChange(record.envelope_json), or the change parsed for this LSN
  // before.
  Result<Change> Parse(const ChangeRecord& record);

  uint64_t parsed() const { return parsed_.load(); }  // records parsed here
  uint64_t reused() const { return reused_.load(); }  // parses saved

 private:
  struct Slot {
    Lsn lsn = 0;  // 0: empty
    Change change;
  };

  std::mutex mutex_;
  std::vector<Slot> slots_;
  std::atomic<uint64_t> parsed_{0};
  std::atomic<uint64_t> reused_{0};
};

}  // namespace feedd
