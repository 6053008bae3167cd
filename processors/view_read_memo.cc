#include "processors/view_read_memo.h"

namespace feedd {

ViewReadMemo::Items ViewReadMemo::Find(const std::string& key, uint64_t generation) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = index_.find(key);
  if (it == index_.end() || it->second->generation != generation) {
    if (it != index_.end()) EraseLocked(it->second);  // outdated for good
    ++misses_;
    return nullptr;
  }
  entries_.splice(entries_.begin(), entries_, it->second);
  ++hits_;
  return it->second->items;
}

void ViewReadMemo::Keep(const std::string& key, uint64_t generation, Items items) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (auto it = index_.find(key); it != index_.end()) EraseLocked(it->second);
  if (items == nullptr || items->size() > limits_.max_items) return;
  entries_.push_front(Entry{key, generation, std::move(items)});
  index_.emplace(key, entries_.begin());
  if (entries_.size() > limits_.max_entries) EraseLocked(std::prev(entries_.end()));
}

void ViewReadMemo::Erase(const std::string& key) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (auto it = index_.find(key); it != index_.end()) EraseLocked(it->second);
}

void ViewReadMemo::EraseLocked(std::list<Entry>::iterator it) {
  index_.erase(it->key);
  entries_.erase(it);
}

}  // namespace feedd
