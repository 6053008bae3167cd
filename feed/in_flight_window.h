// InFlightWindow: the publisher's changes that were produced and that the
// checkpoint has not moved over yet, in LSN order, with what their
// delivery reports said so far.
//
// Contract
//   The publisher produces changes in LSN order, so Add() appends and
//   Find() of a delivery report's LSN is an index into a contiguous run:
//   no tree node per change, and no allocation once the window has grown
//   to its working size. An LSN added out of order is still placed in
//   order (found by binary search): the window is correct for any order,
//   fast for the publisher's.
//
// Thread-safety: none; the publisher thread owns it.
// Ownership: owns its entries; a pointer or reference to an entry is valid
// until the next Add(), PopFront() or Clear().
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>

#include "storage/write_request.h"

namespace feedd {

class InFlightWindow {
 public:
  struct Entry {
    Lsn lsn = 0;
    // Messages produced (1, or 2 with a tombstone) and not yet reported
    // on: all must be delivered before the checkpoint may pass the change.
    int remaining = 0;
    bool failed = false;  // a message of it was not delivered
    uint64_t ts_ms = 0;   // the change's commit time
  };

  // The entry of `lsn`, new (a fresh one if `lsn` was held already).
  Entry& Add(Lsn lsn);
  // The entry of `lsn`, or null when it is not held.
  Entry* Find(Lsn lsn);

  bool empty() const { return entries_.empty(); }
  size_t size() const { return entries_.size(); }
  // REQUIRES: !empty(). The lowest LSN's entry.
  const Entry& front() const { return entries_.front(); }
  void PopFront() { entries_.pop_front(); }
  void Clear() { entries_.clear(); }

  // Entries in LSN order.
  std::deque<Entry>::const_iterator begin() const { return entries_.begin(); }
  std::deque<Entry>::const_iterator end() const { return entries_.end(); }

 private:
  std::deque<Entry> entries_;  // by increasing LSN
};

}  // namespace feedd
