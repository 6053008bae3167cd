#include "feed/in_flight_window.h"

#include <algorithm>

namespace feedd {
namespace {

bool LsnLess(const InFlightWindow::Entry& e, Lsn lsn) { return e.lsn < lsn; }

}  // namespace

InFlightWindow::Entry& InFlightWindow::Add(Lsn lsn) {
  if (entries_.empty() || entries_.back().lsn < lsn) {
    entries_.push_back(Entry{});
    entries_.back().lsn = lsn;
    return entries_.back();
  }
  auto it = std::lower_bound(entries_.begin(), entries_.end(), lsn, LsnLess);
  if (it == entries_.end() || it->lsn != lsn) it = entries_.insert(it, Entry{});
  *it = Entry{};
  it->lsn = lsn;
  return *it;
}

InFlightWindow::Entry* InFlightWindow::Find(Lsn lsn) {
  if (entries_.empty() || lsn < entries_.front().lsn || lsn > entries_.back().lsn) return nullptr;
  // LSNs without gaps put `lsn` at its distance from the first.
  const Lsn offset = lsn - entries_.front().lsn;
  if (offset < entries_.size() && entries_[offset].lsn == lsn) return &entries_[offset];
  auto it = std::lower_bound(entries_.begin(), entries_.end(), lsn, LsnLess);
  return it != entries_.end() && it->lsn == lsn ? &*it : nullptr;
}

}  // namespace feedd
