#include "processors/view_read_memo.h"

#include "util/json_memory.h"

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
  const size_t bytes =
      items == nullptr || items->size() > limits_.max_items ? 0 : EntryBytes(key, *items);
  std::lock_guard<std::mutex> lock(mutex_);
  if (auto it = index_.find(key); it != index_.end()) EraseLocked(it->second);
  if (bytes == 0 || bytes > limits_.max_bytes) return;
  while (!entries_.empty() && bytes_.load() + bytes > limits_.max_bytes) {
    EraseLocked(std::prev(entries_.end()));
  }
  entries_.push_front(Entry{key, generation, std::move(items), bytes});
  index_.emplace(key, entries_.begin());
  bytes_ += bytes;
}

size_t ViewReadMemo::EntryBytes(const std::string& key,
                                const std::vector<boost::json::object>& items) {
  // The key twice (list and index), the list and hash nodes, the answer.
  size_t bytes =
      2 * key.size() + sizeof(Entry) + 64 + sizeof(std::vector<boost::json::object>) + 32;
  for (const boost::json::object& item : items) bytes += ApproximateJsonBytes(item);
  return bytes;
}

void ViewReadMemo::Erase(const std::string& key) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (auto it = index_.find(key); it != index_.end()) EraseLocked(it->second);
}

void ViewReadMemo::EraseLocked(std::list<Entry>::iterator it) {
  bytes_ -= it->bytes;
  index_.erase(it->key);
  entries_.erase(it);
}

}  // namespace feedd
