#include "processors/view_query_memo.h"

#include <algorithm>

namespace feedd {

ViewQueryMemo::Items ViewQueryMemo::Find(const std::string& key, uint64_t generation) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it =
      std::find_if(entries_.begin(), entries_.end(), [&](const Entry& e) { return e.key == key; });
  if (it == entries_.end() || it->generation != generation) {
    if (it != entries_.end()) entries_.erase(it);  // outdated for good
    ++misses_;
    return nullptr;
  }
  entries_.splice(entries_.begin(), entries_, it);
  ++hits_;
  return it->items;
}

void ViewQueryMemo::Keep(const std::string& key, uint64_t generation, Items items) {
  std::lock_guard<std::mutex> lock(mutex_);
  entries_.remove_if([&](const Entry& e) { return e.key == key; });
  if (items == nullptr || items->size() > kMaxItems) return;
  entries_.push_front(Entry{key, generation, std::move(items)});
  if (entries_.size() > kMaxEntries) entries_.pop_back();
}

void ViewQueryMemo::Erase(const std::string& key) {
  std::lock_guard<std::mutex> lock(mutex_);
  entries_.remove_if([&](const Entry& e) { return e.key == key; });
}

}  // namespace feedd
